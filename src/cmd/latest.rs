//! `results/<experiment>/latest`: the last run of an experiment that completed.
//!
//! On Unix it is a relative symbolic link to the run's directory, so that
//! `results/quickstart/latest/points.parquet` opens in any tool; elsewhere a one-line
//! file holding the directory's name. It is replaced atomically (a new link renamed
//! over the old), and only for a run whose directory sits in a folder named after its
//! experiment (`results/<experiment>/<run id>`, the default), so that an `--out`
//! somewhere else never scatters `latest` entries around.

use std::path::{Path, PathBuf};

/// The name of the pointer, beside the run directories of an experiment.
pub const LATEST: &str = "latest";

/// Point `latest` beside `dir` at it, if `dir`'s parent is named `experiment`.
/// Returns where the pointer is, or `None` when the layout does not call for one.
/// A `latest` that is a real directory (not ours) is left alone, with an error.
pub fn mark(dir: &Path, experiment: &str) -> std::io::Result<Option<PathBuf>> {
    let (Some(parent), Some(name)) = (dir.parent(), dir.file_name()) else {
        return Ok(None);
    };
    if parent.file_name().and_then(|n| n.to_str()) != Some(experiment) || name == LATEST {
        return Ok(None);
    }
    let latest = parent.join(LATEST);
    if latest.is_dir() && !latest.is_symlink() {
        return Err(std::io::Error::other(format!(
            "{} is a directory, not the pointer to the last run; left as it is",
            latest.display()
        )));
    }
    let tmp = parent.join(format!(".{LATEST}.{}", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    #[cfg(unix)]
    std::os::unix::fs::symlink(name, &tmp)?;
    #[cfg(not(unix))]
    std::fs::write(&tmp, format!("{}\n", name.to_string_lossy()))?;
    std::fs::rename(&tmp, &latest)?;
    Ok(Some(latest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latest_points_at_the_last_run_of_the_experiment_only() {
        let tmp = tempfile::tempdir().unwrap();
        let exp = tmp.path().join("quickstart");
        for run in ["r1", "r2"] {
            std::fs::create_dir_all(exp.join(run)).unwrap();
            let at = mark(&exp.join(run), "quickstart").unwrap();
            assert_eq!(at, Some(exp.join(LATEST)));
            assert_eq!(
                std::fs::canonicalize(exp.join(LATEST)).unwrap(),
                std::fs::canonicalize(exp.join(run)).unwrap()
            );
        }
        // A directory elsewhere gets no pointer beside it.
        let other = tmp.path().join("elsewhere").join("run");
        std::fs::create_dir_all(&other).unwrap();
        assert_eq!(mark(&other, "quickstart").unwrap(), None);
        assert!(!tmp.path().join("elsewhere").join(LATEST).exists());
    }
}
