//! `locklab report DIR`: rebuild the claims, plots and report from stored results.
//!
//! Only a run whose records are all there is reported: an interrupted run would
//! show every claim it has not reached as skipped, and a shard holds a part of the
//! sweep its claims are not about.

use crate::exit::{self, Accept, Failure, Result, WithCode};
use anyhow::anyhow;
use locklab_analysis::store::{self, ResultsWriter};
use std::path::Path;

pub fn run(dir: &Path, accept: Accept) -> Result<i32> {
    // Held until the process ends: no other locklab writes there meanwhile.
    let _lock = super::run::open_results(dir)?;
    let m = store::read_manifest(dir).code(exit::INVALID_INPUT)?;
    super::run::refuse_an_interrupted_merge(dir, &m)?;
    if let Some((i, n)) = m.shard {
        return Err(Failure::new(
            exit::INVALID_INPUT,
            anyhow!(
                "{} is shard {i}/{n} of a sweep; merge the shards (`locklab merge`) and report the merged directory",
                dir.display()
            ),
        ));
    }
    let expected = super::run::jobs_for(&m.plan, &m.modes, m.shard);
    let finished = store::finished_records(dir).code(exit::RUN_FAILED)?;
    let have = expected
        .iter()
        .filter(|j| finished.contains(&(j.point as u32, j.mode, j.rep)))
        .count();
    let expected = expected.len();
    if have < expected {
        // As `compare` and `reproduce` refuse one: the input is not a run to report.
        return Err(Failure::new(
            exit::INVALID_INPUT,
            anyhow!(
                "{} is an incomplete run ({have} of {expected} records, status `{}`); finish it with `locklab run --resume {}`",
                dir.display(),
                m.status,
                dir.display()
            ),
        ));
    }
    // Watched before anything is written: an interruption cleans up what it cuts
    // short, the tables included.
    let _interrupt = super::interrupt::watch(dir);
    if !dir.join(store::POINTS_FILE).is_file() {
        // Every record is there but the run stopped before its tables.
        super::interrupt::uninterrupted(|| -> Result<()> {
            let (writer, _, _) = ResultsWriter::resume(dir).code(exit::RUN_FAILED)?;
            writer.write_tables(&m).code(exit::RUN_FAILED)
        })?;
    }
    super::run::finish(dir, true, accept)
}
