//! `locklab merge SHARD_DIR... --out DIR`: one results directory from the shards of a
//! sweep, then its claims and report.

use crate::exit::{self, Accept, Result, WithCode};
use std::path::{Path, PathBuf};

pub fn run(dirs: &[PathBuf], out: &Path, accept: Accept) -> Result<i32> {
    locklab_analysis::store::merge(dirs, out).code(exit::INVALID_INPUT)?;
    eprintln!(
        "merged {} shard{} into {}",
        dirs.len(),
        if dirs.len() == 1 { "" } else { "s" },
        out.display()
    );
    super::run::check_and_report(out, true, accept)
}
