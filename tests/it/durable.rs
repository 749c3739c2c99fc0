//! Runs that meet faults: a full disk, an unwritable results directory, an
//! interrupted run reported or resumed with other settings. Nothing is lost or
//! claimed: a failed write is exit 3 with its cause first, and `complete` is the
//! last thing a run writes.

use super::*;
use std::process::Output;

/// A small simulated experiment: four points, quick in a second.
pub const TINY: &str = "topology box { sockets = 1, cores = 2, transfer { llc = 40ns } }
workload hot = single { critical = 100ns, outside = 200ns }
experiment tiny {
  topology = box
  workload = hot
  sweep { lock = [ticket, mcs], threads = 1..2 }
  run { modes = [sim], duration = 2ms, repetitions = 2, quick { duration = 1ms, repetitions = 1 } }
  expect bypass_max[lock = ticket, threads = 2] <= 1
  plot throughput_ops_s vs threads by lock
}
";

pub fn tiny(dir: &Path) -> PathBuf {
    let f = dir.join("tiny.lab");
    std::fs::write(&f, TINY).unwrap();
    f
}

/// The manifest's `status`.
pub fn status(dir: &Path) -> String {
    let m = std::fs::read_to_string(dir.join("manifest.yaml")).unwrap_or_default();
    m.lines()
        .find_map(|l| l.strip_prefix("status: "))
        .unwrap_or("")
        .trim_matches(['\'', '"'])
        .to_string()
}

/// Exit 3, the first line of stderr says what failed and why, once.
fn failed_with(out: &Output, cause: &str) {
    let e = stderr(out);
    assert_eq!(out.status.code(), Some(3), "{e}");
    let first = e.lines().find(|l| l.starts_with("error:")).unwrap_or("");
    assert!(first.contains(cause), "cause not first: {e}");
    assert_eq!(e.matches(cause).count(), 1, "cause said twice: {e}");
    assert!(!e.contains("report:"), "a report was announced: {e}");
    assert!(!e.contains("Invalid thrift"), "{e}");
}

/// A tmpfs of `size` mounted at a fresh directory, unmounted on drop.
struct Tmpfs {
    at: PathBuf,
    _parent: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(size: &str) -> Result<Tmpfs, String> {
        let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
        let at = tmp.path().join("fs");
        std::fs::create_dir(&at).map_err(|e| e.to_string())?;
        let out = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&at)
            .output()
            .map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
        }
        Ok(Tmpfs { at, _parent: tmp })
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.at).status();
    }
}

#[test]
fn a_full_disk_is_exit_3_with_its_cause_and_the_run_is_not_complete() {
    let src = tempfile::tempdir().unwrap();
    let file = tiny(src.path());
    // Sizes that run out in the journal, the tables and the report.
    let mut mounted = 0;
    for size in ["16k", "40k", "120k"] {
        let fs = match Tmpfs::mount(size) {
            Ok(fs) => fs,
            Err(why) => {
                eprintln!("NOT TESTED: a real full disk needs `mount -t tmpfs` (as root): {why}");
                break;
            }
        };
        mounted += 1;
        let dir = fs.at.join("r");
        let out = locklab()
            .args(["run", "--quick", "--out"])
            .arg(&dir)
            .arg(&file)
            .output()
            .unwrap();
        failed_with(&out, "No space left on device");
        assert_ne!(status(&dir), "complete", "{size}");
    }
    if mounted > 0 {
        assert_eq!(mounted, 3);
    }
}

/// Without a mount: a file-size limit (RLIMIT_FSIZE) makes every write past it fail
/// as a full disk would, at whatever file the run reaches.
#[test]
fn a_write_that_fails_is_exit_3_with_its_cause() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tiny(tmp.path());
    for limit in [2_000u64, 20_000] {
        let dir = tmp.path().join(format!("r{limit}"));
        let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("locklab"));
        cmd.args(["run", "--quick", "--out"]).arg(&dir).arg(&file);
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            use std::os::unix::process::CommandExt;
            cmd.pre_exec(move || {
                libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
                let lim = libc::rlimit {
                    rlim_cur: limit,
                    rlim_max: limit,
                };
                if libc::setrlimit(libc::RLIMIT_FSIZE, &lim) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let out = cmd.output().unwrap();
        failed_with(&out, "File too large");
        assert_ne!(status(&dir), "complete", "{limit}");
    }
}

#[test]
fn an_unwritable_results_directory_says_why_once() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tiny(tmp.path());
    let blocker = tmp.path().join("a-file");
    std::fs::write(&blocker, "").unwrap();
    let out = locklab()
        .args(["run", "--quick", "--out"])
        .arg(blocker.join("results"))
        .arg(&file)
        .output()
        .unwrap();
    failed_with(&out, "Not a directory");
}

#[test]
fn an_interrupted_run_is_not_reported_and_resumes_only_as_itself() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tiny(tmp.path());
    let dir = tmp.path().join("r");
    let out = locklab()
        .args(["run", "--quick", "--no-report", "--out"])
        .arg(&dir)
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(status(&dir), "complete");
    // Interrupted: half the records gone, the tables never written.
    let mut parts: Vec<_> = std::fs::read_dir(dir.join("parts"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    parts.sort();
    for p in &parts[2..] {
        std::fs::remove_file(p).unwrap();
    }
    for f in [
        "points.parquet",
        "threads.parquet",
        "handoffs.parquet",
        "claims.json",
    ] {
        std::fs::remove_file(dir.join(f)).unwrap();
    }
    let out = locklab().arg("report").arg(&dir).output().unwrap();
    // Refused as `compare` and `reproduce` refuse it: not a run to report (2).
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("incomplete run (2 of 4 records"),
        "{}",
        stderr(&out)
    );
    assert!(!dir.join("claims.json").exists());

    let resume = |extra: &[&str]| {
        locklab()
            .args(["run", "--no-report", "--resume"])
            .arg(&dir)
            .args(extra)
            .output()
            .unwrap()
    };
    let other = tmp.path().join("other.lab");
    std::fs::write(&other, TINY.replace("tiny", "other")).unwrap();
    for (args, why) in [
        (
            vec!["--set", "threads=1"],
            "--set threads=1, but the run had none",
        ),
        (
            vec!["--mode", "native"],
            "--mode native, but the run's modes are sim",
        ),
        (vec![other.to_str().unwrap()], "the file is"),
    ] {
        let out = resume(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(why), "{args:?}: {}", stderr(&out));
    }
    std::fs::write(&file, TINY.replace("200ns", "300ns")).unwrap();
    let out = resume(&[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("tiny.lab was edited since the run"),
        "{}",
        stderr(&out)
    );

    // As it was: the run completes, and then its report can be built.
    std::fs::write(&file, TINY).unwrap();
    let out = resume(&["--quick", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(status(&dir), "complete");
    let out = locklab().arg("report").arg(&dir).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(dir.join("report/index.html").is_file());
}
