//! The directory a new run writes to: never one that already holds something,
//! unless `--force` says so.

use crate::exit::{self, Failure, Result};
use anyhow::anyhow;
use locklab_analysis::store::{HANDOFFS_FILE, MANIFEST_FILE, PARTS_DIR, POINTS_FILE, THREADS_FILE};
use std::path::Path;

/// What a run writes into its directory; `--force` removes these, and only these.
const RUN_ENTRIES: &[&str] = &[
    MANIFEST_FILE,
    PARTS_DIR,
    POINTS_FILE,
    THREADS_FILE,
    HANDOFFS_FILE,
    "claims.json",
    "report",
    "notebooks",
];

/// Make sure a new run may write to `dir`: it does not exist yet or is empty. An
/// existing, non-empty `dir` is refused (exit 2) with what to do instead; with
/// `force`, the entries a run writes are removed first and anything else is kept.
pub fn claim(dir: &Path, force: bool) -> Result<()> {
    let refuse = |why: String| Err(Failure::new(exit::INVALID_INPUT, anyhow!(why)));
    if !dir.exists() {
        return Ok(());
    }
    if !dir.is_dir() {
        return refuse(format!("{} exists and is not a directory", dir.display()));
    }
    let empty = std::fs::read_dir(dir)
        .map(|mut d| d.next().is_none())
        .unwrap_or(false);
    if empty {
        return Ok(());
    }
    if !force {
        let hint = if dir.join(MANIFEST_FILE).is_file() {
            format!(
                "it holds a locklab run: `locklab run --resume {0}` completes it if it was interrupted, `locklab report {0}` rebuilds its report, --force replaces it",
                dir.display()
            )
        } else {
            "choose a new directory, or --force to write into it anyway (replacing only what a run writes)".to_string()
        };
        return refuse(format!(
            "refusing to overwrite {}: it exists and is not empty; {hint}",
            dir.display()
        ));
    }
    for entry in RUN_ENTRIES {
        let path = dir.join(entry);
        let removed = if path.is_dir() {
            std::fs::remove_dir_all(&path)
        } else if path.exists() {
            std::fs::remove_file(&path)
        } else {
            Ok(())
        };
        removed.map_err(|e| {
            Failure::new(
                exit::RUN_FAILED,
                anyhow!("remove {} to overwrite it: {e}", path.display()),
            )
        })?;
    }
    Ok(())
}
