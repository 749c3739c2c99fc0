//! Ctrl-C (SIGINT) or SIGTERM (a batch system's time limit) while locklab writes a
//! results directory: the record being written is finished, the temporary files of
//! writes cut short are removed, and the manifest says `interrupted` (unless the run
//! had just completed); then the process exits 130 (SIGINT) or 143 (SIGTERM).
//! `run --resume DIR` completes the run from the records it kept.
//!
//! The signals are blocked in every thread from the start of a command that writes
//! ([`install`], before any thread exists) and taken by one thread that waits for
//! them (`sigwait`), so that the clean-up runs as ordinary code, not in a handler.

use locklab_analysis::store;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The results directory being written, once a command has claimed one.
static TARGET: Mutex<Option<PathBuf>> = Mutex::new(None);
/// Held while a record is written: an interruption waits for it, then holds it
/// until the process ends, so no record is written after the clean-up.
static GATE: Mutex<()> = Mutex::new(());

/// Block SIGINT and SIGTERM in this thread (and so in every thread it starts) and
/// start the thread that takes them. Call before any other thread exists.
pub fn install() {
    // SAFETY: plain libc calls on a signal set this function owns.
    let set = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        if libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) != 0 {
            return;
        }
        set
    };
    let spawned = std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || loop {
            let mut sig: libc::c_int = 0;
            // SAFETY: `set` is an initialised signal set; `sig` is written by sigwait.
            if unsafe { libc::sigwait(&set, &mut sig) } == 0 {
                interrupted(sig);
            }
        });
    if spawned.is_err() {
        // Without the thread, the signals must keep their default effect.
        // SAFETY: as above.
        unsafe {
            libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        }
    }
}

/// From now on an interruption cleans up `dir`; dropping the guard stops that.
pub fn watch(dir: &Path) -> Watch {
    *TARGET.lock().unwrap_or_else(|e| e.into_inner()) = Some(dir.to_path_buf());
    Watch
}

/// While it lives, an interruption cleans up the watched directory.
#[must_use]
pub struct Watch;

impl Drop for Watch {
    fn drop(&mut self) {
        *TARGET.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
}

/// Run `write` (one record's write) without an interruption cutting it short.
pub fn uninterrupted<T>(write: impl FnOnce() -> T) -> T {
    let _g = GATE.lock().unwrap_or_else(|e| e.into_inner());
    write()
}

fn interrupted(sig: libc::c_int) -> ! {
    let _g = GATE.lock().unwrap_or_else(|e| e.into_inner());
    let target = TARGET.lock().unwrap_or_else(|e| e.into_inner()).clone();
    if let Some(dir) = target {
        clean(&dir);
        let done = store::finished_records(&dir).map_or(0, |d| d.len());
        match store::read_manifest(&dir) {
            Ok(m) if m.status == "complete" => {}
            Ok(m) if m.status == store::MERGING => {
                eprintln!(
                    "\ninterrupted: the merge into {} did not finish; merge again with --force",
                    dir.display()
                );
            }
            Ok(m) => {
                let _ = store::set_status(&dir, "interrupted");
                // A merged directory has every record and its tables: only the claims
                // and the report are left to write.
                let how = if m.shards.is_empty() {
                    format!("`locklab run --resume {}` completes it", dir.display())
                } else {
                    format!("`locklab report {}` completes it", dir.display())
                };
                eprintln!(
                    "\ninterrupted: {} keeps {done} finished record{}; {how}",
                    dir.display(),
                    if done == 1 { "" } else { "s" },
                );
            }
            Err(_) => {}
        }
    }
    std::process::exit(128 + sig);
}

/// Remove the temporary files (`.NAME.tmp`) of writes cut short in the places a
/// run writes: the directory, `parts/` and `report/`.
fn clean(dir: &Path) {
    for d in [
        dir.to_path_buf(),
        dir.join(store::PARTS_DIR),
        dir.join(locklab_analysis::report::REPORT_DIR),
    ] {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') && name.ends_with(".tmp") {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
}
