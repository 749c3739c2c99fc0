//! Ctrl-C (SIGINT) or SIGTERM (a batch system's time limit) while locklab writes a
//! results directory: the write under way is finished, the temporary files of writes
//! cut short are removed, and the manifest says `interrupted` (unless the run had
//! just completed); then the process ends by the signal, as if it had not been
//! caught (a shell sees 130 or 143, and a script's loop stops).
//! `run --resume DIR` completes the run from the records it kept.
//!
//! The signals are blocked in every thread from the start of a command that writes
//! ([`install`], before any thread exists) and taken by one thread that waits for
//! them (`sigwait`), so that the clean-up runs as ordinary code, not in a handler.
//! A signal the parent set to be ignored (`cmd &` in a script, `nohup`) stays
//! ignored.
//!
//! Every write into a results directory (a record, the tables, the claims, the
//! report, each change of the manifest) goes through [`uninterrupted`], and so does
//! the process's exit: the clean-up takes the same gate, so it never runs beside a
//! write (it would remove the temporary file that write is about to rename into
//! place), and no write starts once a signal is taken (nor does the process exit on
//! its own). A long write (the report) delays an interruption until it is done; a
//! second signal meanwhile ends the process at once.

use locklab_analysis::store;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, TryLockError};
use std::time::{Duration, Instant};

/// The results directory being written, once a command has claimed one.
static TARGET: Mutex<Option<PathBuf>> = Mutex::new(None);
/// Held while a results directory is written: an interruption waits for it, then
/// holds it until the process ends, so nothing is written after the clean-up.
static GATE: Mutex<()> = Mutex::new(());
/// A signal was taken: no write starts any more (nor does the process exit on its
/// own); the clean-up takes the gate once the write under way is done.
static PENDING: AtomicBool = AtomicBool::new(false);

/// The signals this module takes.
const SIGNALS: [libc::c_int; 2] = [libc::SIGINT, libc::SIGTERM];

/// Block SIGINT and SIGTERM in this thread (and so in every thread it starts) and
/// start the thread that takes them. Call before any other thread exists. A signal
/// whose disposition is already "ignore" (set so by the parent) is left alone.
pub fn install() {
    let Some(set) = taken_signals() else {
        return;
    };
    // SAFETY: `set` is an initialised signal set.
    if unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) } != 0 {
        return;
    }
    let spawned = std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || loop {
            let mut sig: libc::c_int = 0;
            // SAFETY: `set` is an initialised signal set; `sig` is written by sigwait.
            if unsafe { libc::sigwait(&set, &mut sig) } == 0 {
                interrupted(sig, &set);
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

/// The set of [`SIGNALS`] that are not ignored; `None` when every one is.
fn taken_signals() -> Option<libc::sigset_t> {
    // SAFETY: plain libc calls on a signal set and a sigaction this function owns;
    // `sigaction` with a null new action only reads the current one.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        let mut any = false;
        for sig in SIGNALS {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, std::ptr::null(), &mut old) == 0
                && old.sa_sigaction == libc::SIG_IGN
            {
                continue;
            }
            libc::sigaddset(&mut set, sig);
            any = true;
        }
        any.then_some(set)
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

/// Run `write` (a write into the results directory: a record, the tables, the
/// claims and report, a change of the manifest) without an interruption cutting
/// it short or acting beside it. After an interruption this never returns: the
/// process ends first.
pub fn uninterrupted<T>(write: impl FnOnce() -> T) -> T {
    let _g = gate();
    write()
}

/// End the process with `code`, unless an interruption is being handled: then the
/// process ends by its signal once the clean-up is done.
pub fn exit(code: i32) -> ! {
    let _g = gate();
    std::process::exit(code)
}

fn gate() -> MutexGuard<'static, ()> {
    let g = GATE.lock().unwrap_or_else(|e| e.into_inner());
    if PENDING.load(Ordering::SeqCst) {
        // Interrupted: leave the gate to the clean-up, which ends the process.
        drop(g);
        loop {
            std::thread::park();
        }
    }
    g
}

fn interrupted(sig: libc::c_int, set: &libc::sigset_t) -> ! {
    PENDING.store(true, Ordering::SeqCst);
    let _g = wait_for_the_gate(set);
    let target = TARGET.lock().unwrap_or_else(|e| e.into_inner()).clone();
    if let Some(dir) = target {
        clean(&dir);
        let done = store::finished_records(&dir).map_or(0, |d| d.len());
        match store::read_manifest(&dir) {
            Ok(m) if m.status == "complete" => {
                eprintln!("\ninterrupted: {} had just completed", dir.display());
            }
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
    die(sig)
}

/// Take the gate once the write under way is done. A write that takes long (the
/// report) is said to be finished first; a second signal meanwhile ends the process
/// at once, leaving the directory as that write has it.
fn wait_for_the_gate(set: &libc::sigset_t) -> MutexGuard<'static, ()> {
    let since = Instant::now();
    let mut said = false;
    loop {
        match GATE.try_lock() {
            Ok(g) => return g,
            Err(TryLockError::Poisoned(e)) => return e.into_inner(),
            Err(TryLockError::WouldBlock) => {}
        }
        if !said && since.elapsed() > Duration::from_millis(300) {
            said = true;
            eprintln!("\ninterrupted: finishing the write under way first (interrupt again to stop at once)");
        }
        let wait = libc::timespec {
            tv_sec: 0,
            tv_nsec: 20_000_000,
        };
        // SAFETY: `set` is an initialised signal set; a null siginfo is allowed.
        let again = unsafe { libc::sigtimedwait(set, std::ptr::null_mut(), &wait) };
        if again > 0 {
            let dir = TARGET.lock().unwrap_or_else(|e| e.into_inner()).clone();
            if let Some(dir) = dir {
                eprintln!(
                    "\ninterrupted again: stopped at once; {0} is left as the write under way had it (`locklab run --resume {0}` completes it)",
                    dir.display()
                );
            }
            die(again);
        }
    }
}

/// End the process by `sig`, as its default action does: a parent (a shell) sees
/// the process killed by it. Exits `128 + sig` if that fails.
fn die(sig: libc::c_int) -> ! {
    // SAFETY: SIG_DFL is a valid disposition; the signal set is this function's own;
    // raise directs the signal to this thread, where it is blocked until unblocked
    // here, and then ends the process.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        let mut one: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut one);
        libc::sigaddset(&mut one, sig);
        libc::raise(sig);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &one, std::ptr::null_mut());
    }
    std::process::exit(128 + sig)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A signal ignored when the process starts is not taken (and so stays ignored).
    #[test]
    fn an_ignored_signal_is_left_out() {
        let has_term = || {
            taken_signals().is_some_and(|s| {
                // SAFETY: `s` is an initialised signal set.
                unsafe { libc::sigismember(&s, libc::SIGTERM) == 1 }
            })
        };
        // SAFETY: sets and restores this process's SIGTERM disposition; no test
        // relies on SIGTERM.
        let old = unsafe { libc::signal(libc::SIGTERM, libc::SIG_DFL) };
        let default = has_term();
        // SAFETY: as above.
        unsafe { libc::signal(libc::SIGTERM, libc::SIG_IGN) };
        let ignored = has_term();
        // SAFETY: as above.
        unsafe { libc::signal(libc::SIGTERM, old) };
        assert!(default);
        assert!(!ignored);
    }
}
