//! The directory a command writes results to: never one that already holds
//! something, unless `--force` says so; never one of the command's own inputs; and
//! never one another locklab is writing to at the same time.

use crate::exit::{self, Failure, Result};
use anyhow::anyhow;
use locklab_analysis::store::{HANDOFFS_FILE, MANIFEST_FILE, PARTS_DIR, POINTS_FILE, THREADS_FILE};
use std::path::{Component, Path, PathBuf};

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
    created: bool,
}

impl DirLock {
    /// The directory did not exist before this command made it.
    pub fn created(&self) -> bool {
        self.created
    }
}

/// Take the exclusive lock on the existing directory `dir`. Another locklab writing
/// there is exit 2, at once (it does not wait).
pub fn lock(dir: &Path) -> Result<DirLock> {
    try_lock(dir)?.ok_or_else(|| {
        Failure::new(
            exit::INVALID_INPUT,
            anyhow!(
                "another locklab is writing to {} (a run, a resumption, a merge or a report); wait for it to finish, then try again",
                dir.display()
            ),
        )
    })
}

/// [`lock`], with `None` when another process holds the lock.
fn try_lock(dir: &Path) -> Result<Option<DirLock>> {
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
            return Ok(None);
        }
        // A file system without locks (some network mounts): go on unlocked.
        if !matches!(e.raw_os_error(), Some(libc::ENOLCK | libc::EOPNOTSUPP)) {
            return Err(Failure::new(
                exit::RUN_FAILED,
                anyhow!("lock {}: {e}", dir.display()),
            ));
        }
    }
    Ok(Some(DirLock {
        _dir: f,
        created: false,
    }))
}

/// Make sure a new run may write to `dir`, and lock it: it does not exist yet (it is
/// created) or is empty. An existing, non-empty `dir` is refused (exit 2) with what
/// to do instead; with `force`, the entries a run writes are removed first and
/// anything else is kept. Once `dir` exists it is checked again against `inputs`
/// (the command's own inputs, [`refuse_inputs`]), by its real path, before anything
/// is removed.
pub fn claim<'a>(
    dir: &Path,
    force: bool,
    inputs: impl IntoIterator<Item = &'a Path>,
) -> Result<DirLock> {
    let refuse = |why: String| Err(Failure::new(exit::INVALID_INPUT, anyhow!(why)));
    let real = resolve(dir);
    if real.exists() && !real.is_dir() {
        return refuse(format!("{} exists and is not a directory", dir.display()));
    }
    let created = !real.exists();
    std::fs::create_dir_all(dir).map_err(|e| {
        Failure::new(
            exit::RUN_FAILED,
            anyhow!("create directory {}: {e}", dir.display()),
        )
    })?;
    let mut lock = lock(dir)?;
    lock.created = created;
    // What was made is what the output is: never one of the inputs.
    let made = dir.canonicalize().map_err(|e| {
        Failure::new(
            exit::RUN_FAILED,
            anyhow!("resolve directory {}: {e}", dir.display()),
        )
    })?;
    refuse_inputs(&made, inputs).map_err(|f| {
        Failure::new(
            f.code,
            anyhow!("{} is {}: {}", dir.display(), made.display(), f.error),
        )
    })?;
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
/// is taken with one `mkdir`, so two processes never get the same directory. One
/// that another locklab locks before this one does is left to it: the next name
/// is tried.
pub fn create_unique(parent: &Path, name: &str) -> Result<(PathBuf, DirLock)> {
    create_unique_with(parent, name, |_| {})
}

/// [`create_unique`], calling `after_mkdir` between making a directory and locking
/// it (where another process may lock it first).
fn create_unique_with(
    parent: &Path,
    name: &str,
    after_mkdir: impl Fn(&Path),
) -> Result<(PathBuf, DirLock)> {
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
                after_mkdir(&dir);
                match try_lock(&dir) {
                    Ok(Some(mut lock)) => {
                        lock.created = true;
                        return Ok((dir, lock));
                    }
                    // Another locklab took it between the mkdir and the lock
                    // (`run --out` on an empty directory): it is theirs now.
                    Ok(None) => continue,
                    Err(f) => {
                        // Giving up: the directory made here goes again (if
                        // nothing was written into it meanwhile).
                        let _ = std::fs::remove_dir(&dir);
                        return Err(f);
                    }
                }
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

/// `p` absolute, as the directory it names will be once `create_dir_all` has made
/// it: component by component, with symbolic links resolved as far as it exists, `.`
/// dropped, and `..` taking back the component before it (a missing one, which
/// `create_dir_all` makes, included: `nx/../a` is `a`).
fn resolve(p: &Path) -> PathBuf {
    let abs = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let mut cur = PathBuf::new();
    for c in abs.components() {
        match c {
            Component::CurDir => continue,
            Component::ParentDir => {
                cur.pop();
            }
            other => cur.push(other.as_os_str()),
        }
        // While it exists, `cur` is a real path: a `..` after a link leaves the
        // link's target, as the system does.
        if let Ok(real) = cur.canonicalize() {
            cur = real;
        }
    }
    cur
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
        // `..` after a folder that does not exist yet: `create_dir_all` makes it,
        // and the path is then `a` itself.
        let nx = tmp.path().join("nx/../a");
        assert!(refuse_inputs(&nx, [a.as_path()]).is_err());
        assert!(refuse_inputs(&tmp.path().join("nx/y/../../a/parts"), [a.as_path()]).is_err());
        assert!(refuse_inputs(&tmp.path().join("nx/../b"), [a.as_path()]).is_ok());
        // `..` after a link leaves the link's target.
        let deep = tmp.path().join("d/e");
        std::fs::create_dir_all(&deep).unwrap();
        std::os::unix::fs::symlink(&deep, tmp.path().join("l")).unwrap();
        std::fs::create_dir(tmp.path().join("d/a")).unwrap();
        let via_link = tmp.path().join("l/../a");
        assert!(refuse_inputs(&via_link, [a.as_path()]).is_ok());
        assert!(refuse_inputs(&via_link, [tmp.path().join("d/a").as_path()]).is_err());
    }

    #[test]
    fn claim_checks_the_directory_it_made_against_the_inputs() {
        let tmp = tempfile::tempdir().unwrap();
        let a = tmp.path().join("a");
        std::fs::create_dir(&a).unwrap();
        std::fs::write(a.join(MANIFEST_FILE), "x").unwrap();
        let f = claim(&tmp.path().join("nx/../a"), true, [a.as_path()]).unwrap_err();
        assert_eq!(f.code, exit::INVALID_INPUT);
        assert!(a.join(MANIFEST_FILE).is_file(), "the input was emptied");
        let out = claim(&tmp.path().join("nx2/../b"), false, [a.as_path()]).unwrap();
        assert!(out.created());
        assert!(tmp.path().join("b").is_dir());
        let again = claim(&a, true, []).unwrap();
        assert!(!again.created());
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

    /// A directory made here but locked first by another process is left to it; the
    /// next name is taken.
    #[test]
    fn a_directory_locked_by_another_before_this_one_is_skipped() {
        let tmp = tempfile::tempdir().unwrap();
        let theirs = std::cell::RefCell::new(Vec::new());
        let (dir, lock) = create_unique_with(tmp.path(), "run", |d| {
            if theirs.borrow().is_empty() {
                theirs.borrow_mut().push(lock(d).unwrap());
            }
        })
        .unwrap();
        assert_eq!(dir, tmp.path().join("run-2"));
        assert!(lock.created());
        assert_eq!(theirs.borrow().len(), 1);
        assert!(tmp.path().join("run").is_dir());
    }
}
