//! `cargo run -p locklab-runner --release --example topo`: what `locklab topo
//! --measure` prints, without building the CLI.

fn main() {
    let host = locklab_runner::host::detect();
    print!(
        "{}",
        locklab_runner::calibrate::measure_report(&host, None, 5)
    );
}
