//! Time the analysis pipeline on a synthetic results directory:
//! `cargo run --release -p locklab-analysis --example bench -- 10000000`
//! (the CLI's `locklab bench analysis --rows N` runs the same code).

fn main() {
    let rows: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let tmp = std::env::temp_dir().join(format!("locklab-bench-{}", std::process::id()));
    let r = locklab_analysis::bench::bench_pipeline(rows, &tmp);
    let _ = std::fs::remove_dir_all(&tmp);
    match r {
        Ok(r) => println!("{r}"),
        Err(e) => {
            eprintln!("bench failed: {e}");
            std::process::exit(1);
        }
    }
}
