//! `locklab merge SHARD_DIR... --out DIR`: one results directory from the shards of a
//! sweep, then its claims and report. Only the complete shards of one run are
//! merged: a mixed set (another plan, shard count or mode) is invalid input, a
//! missing or unfinished shard a run that did not complete.

use crate::exit::{self, Accept, Failure, Result, WithCode};
use anyhow::anyhow;
use locklab_analysis::store::{self, ShardProblem};
use std::path::{Path, PathBuf};

pub fn run(dirs: &[PathBuf], out: &Path, accept: Accept) -> Result<i32> {
    match store::check_shards(dirs).code(exit::INVALID_INPUT)? {
        Ok(_) => {}
        Err(ShardProblem::Mixed(why)) => {
            return Err(Failure::new(
                exit::INVALID_INPUT,
                anyhow!("cannot merge: {why}"),
            ))
        }
        Err(ShardProblem::Incomplete(why)) => {
            return Err(Failure::new(
                exit::RUN_FAILED,
                anyhow!("cannot merge: {why}"),
            ))
        }
    }
    locklab_analysis::store::merge(dirs, out).code(exit::RUN_FAILED)?;
    eprintln!(
        "merged {} shard{} into {}",
        dirs.len(),
        if dirs.len() == 1 { "" } else { "s" },
        out.display()
    );
    super::run::finish(out, true, accept)
}
