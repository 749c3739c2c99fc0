//! `cargo run -p locklab-runner --release --example bench_native [ITERS]`: the same
//! report as `locklab bench native`, without building the CLI.

fn main() {
    let iters = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(2_000_000);
    print!("{}", locklab_runner::native::bench::report(iters));
}
