//! `locklab merge SHARD_DIR... --out DIR`: one results directory from the shards of a
//! sweep, then its claims and report. Only the complete shards of one run are
//! merged: a mixed set (another plan, shard count or mode) is invalid input, a
//! missing or unfinished shard a run that did not complete. `--out` follows `run`'s
//! rule (new or empty, or `--force`) and is never one of the shards.

use crate::exit::{self, Accept, Failure, Result, WithCode};
use anyhow::anyhow;
use locklab_analysis::store::{self, ShardProblem};
use std::path::{Path, PathBuf};

pub fn run(dirs: &[PathBuf], out: &Path, force: bool, accept: Accept) -> Result<i32> {
    super::out_dir::refuse_inputs(out, dirs.iter().map(PathBuf::as_path))?;
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
    // Held until the process ends: no other locklab writes there meanwhile.
    // Claimed only if it is still none of the shards once it exists.
    let _lock = super::out_dir::claim(out, force, dirs.iter().map(PathBuf::as_path))?;
    let _interrupt = super::interrupt::watch(out);
    // Its writes are not cut short: an interruption waits for the merge (records,
    // tables, manifest), then says it is to be merged again if it did not finish.
    super::interrupt::uninterrupted(|| locklab_analysis::store::merge(dirs, out))
        .code(exit::RUN_FAILED)?;
    eprintln!(
        "merged {} shard{} into {}",
        dirs.len(),
        if dirs.len() == 1 { "" } else { "s" },
        out.display()
    );
    super::run::finish(out, true, accept)
}
