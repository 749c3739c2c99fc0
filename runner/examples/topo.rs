//! `cargo run -p locklab-runner --release --example topo`: what `locklab topo
//! --measure` prints, without building the CLI.

fn main() {
    let host = locklab_runner::host::detect();
    print!("{}", locklab_runner::host::topology_as_lab(&host));
    print!("{}", locklab_runner::host::measure_report(&host));
}
