//! The directory a command writes results to: never one that already holds
//! something, unless `--force` says so; never one of the command's own inputs; and
//! never one another locklab is writing to at the same time.

use crate::exit::{self, Failure, Result};
use anyhow::anyhow;
use locklab_analysis::store::{HANDOFFS_FILE, MANIFEST_FILE, PARTS_DIR, POINTS_FILE, THREADS_FILE};
use std::path::{Path, PathBuf};

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

/// An exclusive lock on a results directory, held while this process writes into
/// it (`run`, `run --resume`, `merge`, `report`, `reproduce`). It is a `flock` on
/// the directory itself, so no lock file is left behind; the kernel releases it
/// when the process ends, however it ends.
#[derive(Debug)]
pub struct DirLock {
    _dir: std::fs::File,
}

/// Take the exclusive lock on the existing directory `dir`. Another locklab writing
/// there is exit 2, at once (it does not wait).
pub fn lock(dir: &Path) -> Result<DirLock> {
    use std::os::fd::AsRawFd;
    let f = std::fs::File::open(dir).map_err(|e| {
        Failure::new(
            exit::RUN_FAILED,
            anyhow!("open {} to lock it: {e}", dir.display()),
        )
    })?;
    // SAFETY: flock on a file descriptor this function owns; no memory is shared.
    let rc = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc != 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
            return Err(Failure::new(
                exit::INVALID_INPUT,
                anyhow!(
                    "another locklab is writing to {} (a run, a resumption, a merge or a report); wait for it to finish, then try again",
                    dir.display()
                ),
            ));
        }
        // A file system without locks (some network mounts): go on unlocked.
        if !matches!(e.raw_os_error(), Some(libc::ENOLCK | libc::EOPNOTSUPP)) {
            return Err(Failure::new(
                exit::RUN_FAILED,
                anyhow!("lock {}: {e}", dir.display()),
            ));
        }
    }
    Ok(DirLock { _dir: f })
}

/// Make sure a new run may write to `dir`, and lock it: it does not exist yet (it is
/// created) or is empty. An existing, non-empty `dir` is refused (exit 2) with what
/// to do instead; with `force`, the entries a run writes are removed first and
/// anything else is kept.
pub fn claim(dir: &Path, force: bool) -> Result<DirLock> {
    let refuse = |why: String| Err(Failure::new(exit::INVALID_INPUT, anyhow!(why)));
    if dir.exists() && !dir.is_dir() {
        return refuse(format!("{} exists and is not a directory", dir.display()));
    }
    std::fs::create_dir_all(dir).map_err(|e| {
        Failure::new(
            exit::RUN_FAILED,
            anyhow!("create directory {}: {e}", dir.display()),
        )
    })?;
    let lock = lock(dir)?;
    let empty = std::fs::read_dir(dir)
        .map(|mut d| d.next().is_none())
        .unwrap_or(false);
    if empty {
        return Ok(lock);
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
    Ok(lock)
}

/// Create a new directory under `parent` named `name`, or `name-2`, `name-3`, ...
/// when that exists (two runs started in the same second), and lock it. Each name
/// is taken with one `mkdir`, so two processes never get the same directory.
pub fn create_unique(parent: &Path, name: &str) -> Result<(PathBuf, DirLock)> {
    std::fs::create_dir_all(parent).map_err(|e| {
        Failure::new(
            exit::RUN_FAILED,
            anyhow!("create directory {}: {e}", parent.display()),
        )
    })?;
    for n in 1..10_000u32 {
        let dir = if n == 1 {
            parent.join(name)
        } else {
            parent.join(format!("{name}-{n}"))
        };
        match std::fs::create_dir(&dir) {
            Ok(()) => {
                let lock = lock(&dir)?;
                return Ok((dir, lock));
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(Failure::new(
                    exit::RUN_FAILED,
                    anyhow!("create directory {}: {e}", dir.display()),
                ))
            }
        }
    }
    Err(Failure::new(
        exit::RUN_FAILED,
        anyhow!(
            "no free directory name for {} in {}",
            name,
            parent.display()
        ),
    ))
}

/// Refuse (exit 2, whatever `--force` says) an output directory that is one of the
/// command's inputs, lies inside what a run writes in one (`IN/parts/...`), or
/// holds one where `--force` would remove it (`OUT/report/IN`).
pub fn refuse_inputs<'a>(out: &Path, inputs: impl IntoIterator<Item = &'a Path>) -> Result<()> {
    let o = resolve(out);
    for input in inputs {
        let i = resolve(input);
        let clash = o == i
            || RUN_ENTRIES
                .iter()
                .any(|e| o.starts_with(i.join(e)) || i.starts_with(o.join(e)));
        if clash {
            return Err(Failure::new(
                exit::INVALID_INPUT,
                anyhow!(
                    "--out {} would overwrite the input {}; choose another directory (--force does not change this)",
                    out.display(),
                    input.display()
                ),
            ));
        }
    }
    Ok(())
}

/// `p` absolute, with symbolic links resolved as far as it exists.
fn resolve(p: &Path) -> PathBuf {
    let abs = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let mut rest = Vec::new();
    let mut cur = abs.as_path();
    loop {
        if let Ok(mut c) = cur.canonicalize() {
            c.extend(rest.iter().rev());
            return c;
        }
        match (cur.parent(), cur.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                cur = parent;
            }
            _ => return abs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_output_may_not_be_an_input_nor_inside_what_a_run_writes_in_one() {
        let tmp = tempfile::tempdir().unwrap();
        let a = tmp.path().join("a");
        std::fs::create_dir(&a).unwrap();
        assert!(refuse_inputs(&a, [a.as_path()]).is_err());
        assert!(refuse_inputs(&a.join("."), [a.as_path()]).is_err());
        assert!(refuse_inputs(&a.join("parts/new"), [a.as_path()]).is_err());
        assert!(refuse_inputs(tmp.path(), [tmp.path().join("report/a").as_path()]).is_err());
        assert!(refuse_inputs(&a.join("reproduce-1"), [a.as_path()]).is_ok());
        assert!(refuse_inputs(&tmp.path().join("b"), [a.as_path()]).is_ok());
    }

    #[test]
    fn a_second_lock_on_a_directory_is_refused_until_the_first_is_dropped() {
        let tmp = tempfile::tempdir().unwrap();
        let first = lock(tmp.path()).unwrap();
        let second = lock(tmp.path()).unwrap_err();
        assert_eq!(second.code, exit::INVALID_INPUT);
        assert!(second.error.to_string().contains("another locklab"));
        drop(first);
        assert!(lock(tmp.path()).is_ok());
        assert!(std::fs::read_dir(tmp.path()).unwrap().next().is_none());
    }

    #[test]
    fn unique_directories_get_a_counter() {
        let tmp = tempfile::tempdir().unwrap();
        let (a, _la) = create_unique(tmp.path(), "run").unwrap();
        let (b, _lb) = create_unique(tmp.path(), "run").unwrap();
        assert_eq!(a, tmp.path().join("run"));
        assert_eq!(b, tmp.path().join("run-2"));
    }
}
