//! Simulator speed without building the CLI:
//! `cargo run -p locklab-runner --release --example bench_sim [virtual_ms]`.

fn main() {
    match std::env::args().nth(1) {
        None => print!("{}", locklab_runner::sim::bench::report()),
        Some(ms) => {
            let ms: u64 = ms.parse().expect("virtual time in ms");
            for s in locklab_runner::sim::bench::speed(ms * 1_000_000) {
                println!(
                    "{:<10} acq {:>9} events/acq {:>5.1} cpu {:.3}s  {:.2} M acq/cpu-s  {:.1} ns/event",
                    s.label,
                    s.acquisitions,
                    s.events_per_acquisition(),
                    s.cpu_s,
                    s.acquisitions_per_cpu_s() / 1e6,
                    s.cpu_s * 1e9 / s.events as f64
                );
            }
        }
    }
}
