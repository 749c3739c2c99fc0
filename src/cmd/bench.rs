//! `locklab bench native|sim|analysis`: the speed numbers we report, measured here.

use crate::cli::BenchWhat;
use crate::exit::{self, Result, WithCode};

pub fn run(what: BenchWhat, rows: usize, iters: u64) -> Result<i32> {
    if cfg!(debug_assertions) {
        eprintln!("note: this is a debug build; build with --release for numbers worth reporting");
    }
    match what {
        BenchWhat::Native => print!("{}", locklab_runner::native::bench::report(iters)),
        BenchWhat::Sim => print!("{}", locklab_runner::sim::bench::report()),
        BenchWhat::Analysis => {
            let tmp = std::env::temp_dir().join(format!("locklab-bench-{}", std::process::id()));
            let r = locklab_analysis::bench::bench_pipeline(rows, &tmp).code(exit::RUN_FAILED);
            let _ = std::fs::remove_dir_all(&tmp);
            println!("{}", r?);
        }
    }
    Ok(exit::OK)
}
