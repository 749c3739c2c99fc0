//! Results directories are never overwritten or left looking like something they
//! are not: `merge` and `reproduce` follow `run`'s `--out` rule and never write
//! over their inputs; `complete` is written last; an interrupted merge or run says
//! so; one writer at a time; default run directories never collide.

use super::durable::{status as manifest_status, tiny};
use super::*;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

fn resume(dir: &Path) -> Output {
    locklab()
        .args(["run", "--no-report", "--resume"])
        .arg(dir)
        .output()
        .unwrap()
}

fn run_tiny(file: &Path, out: &Path, extra: &[&str]) -> Output {
    locklab()
        .args(["run", "--quick", "--no-report"])
        .args(extra)
        .arg("--out")
        .arg(out)
        .arg(file)
        .output()
        .unwrap()
}

/// Every file below `dir`, as paths relative to it, sorted.
fn tree(dir: &Path) -> Vec<String> {
    fn walk(root: &Path, d: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                out.push(p.strip_prefix(root).unwrap().display().to_string());
            }
        }
    }
    let mut v = Vec::new();
    walk(dir, dir, &mut v);
    v.sort();
    v
}

fn shards(tmp: &Path, file: &Path) -> (PathBuf, PathBuf) {
    let (one, two) = (tmp.join("sh1"), tmp.join("sh2"));
    for (i, d) in [(1, &one), (2, &two)] {
        let o = run_tiny(file, d, &["--shard", &format!("{i}/2")]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    (one, two)
}

fn merge(dirs: &[&Path], out: &Path, extra: &[&str]) -> Output {
    locklab()
        .arg("merge")
        .args(dirs)
        .arg("--out")
        .arg(out)
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn merge_never_overwrites_a_shard_nor_an_existing_directory_without_force() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tiny(tmp.path());
    let (one, two) = shards(tmp.path(), &file);
    let before = tree(&one);
    for extra in [&[][..], &["--force"][..]] {
        let o = merge(&[&one, &two], &one, extra);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("would overwrite the input"),
            "{}",
            stderr(&o)
        );
        assert_eq!(tree(&one), before, "shard 1 changed");
        assert_eq!(manifest_status(&one), "complete");
    }
    // The same directory under another name is still the input, also through a
    // folder that does not exist yet (which `--out` would create).
    for name in ["sh2/../sh1", "nx/../sh1", "nx/ny/../../sh1/."] {
        let o = merge(&[&one, &two], &tmp.path().join(name), &["--force"]);
        assert_eq!(o.status.code(), Some(2), "{name}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("would overwrite the input"),
            "{name}: {}",
            stderr(&o)
        );
        assert_eq!(tree(&one), before, "{name}: shard 1 changed");
        assert_eq!(manifest_status(&one), "complete");
    }

    // A complete run in the way: refused as `run` refuses it, replaced with --force.
    let other = tmp.path().join("other");
    assert_eq!(run_tiny(&file, &other, &[]).status.code(), Some(0));
    let o = merge(&[&one, &two], &other, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("refusing to overwrite"),
        "{}",
        stderr(&o)
    );
    assert!(!other.join("report").exists(), "the run was touched");
    let o = merge(&[&one, &two], &other, &["--force"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(manifest_status(&other), "complete");
    assert!(other.join("report/index.html").is_file());
}

/// A merge cut short (here: a shard whose record cannot be copied) leaves a
/// directory that says it is an unfinished merge, and says how to finish it.
#[test]
fn an_interrupted_merge_is_recognisably_one_and_is_merged_again_with_force() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tiny(tmp.path());
    let (one, two) = shards(tmp.path(), &file);
    let part = std::fs::read_dir(one.join("parts"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .min()
        .unwrap();
    let saved = std::fs::read(&part).unwrap();
    std::fs::remove_file(&part).unwrap();
    std::fs::create_dir(&part).unwrap();
    let out = tmp.path().join("merged");
    let o = merge(&[&one, &two], &out, &[]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert_eq!(manifest_status(&out), "merging");
    for args in [vec!["report"], vec!["run", "--resume"]] {
        let o = locklab().args(&args).arg(&out).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(
            e.contains("did not finish") && e.contains("--force") && e.contains("sh1"),
            "{args:?}: {e}"
        );
    }
    std::fs::remove_dir(&part).unwrap();
    std::fs::write(&part, saved).unwrap();
    let o = merge(&[&one, &two], &out, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let o = merge(&[&one, &two], &out, &["--force"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(manifest_status(&out), "complete");
}

#[test]
fn reproduce_never_overwrites_the_run_it_compares_with_nor_another_without_force() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tiny(tmp.path());
    let dir = tmp.path().join("r");
    assert_eq!(run_tiny(&file, &dir, &[]).status.code(), Some(0));
    let before = tree(&dir);
    for extra in [&[][..], &["--force"][..]] {
        let o = locklab()
            .arg("reproduce")
            .arg(&dir)
            .arg("--out")
            .arg(&dir)
            .args(extra)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("would overwrite the input"),
            "{}",
            stderr(&o)
        );
        assert_eq!(tree(&dir), before);
    }
    // Through a folder that does not exist yet: still the run itself.
    let o = locklab()
        .arg("reproduce")
        .arg(&dir)
        .arg("--out")
        .arg(tmp.path().join("nx/../r"))
        .arg("--force")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("would overwrite the input"),
        "{}",
        stderr(&o)
    );
    assert_eq!(tree(&dir), before);
    assert_eq!(manifest_status(&dir), "complete");
    let other = tmp.path().join("other");
    assert_eq!(run_tiny(&file, &other, &[]).status.code(), Some(0));
    let theirs = tree(&other);
    let reproduce = |extra: &[&str]| {
        locklab()
            .arg("reproduce")
            .arg(&dir)
            .arg("--out")
            .arg(&other)
            .args(extra)
            .output()
            .unwrap()
    };
    let o = reproduce(&[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("refusing to overwrite"),
        "{}",
        stderr(&o)
    );
    assert_eq!(tree(&other), theirs);
    let o = reproduce(&["--force"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("simulation: identical records"));
}

/// Nothing is re-run to compare with records that are not there: an interrupted
/// run, or one whose `parts/` is gone, is refused at once, and no reproduction
/// directory is left behind.
#[test]
fn reproduce_refuses_an_incomplete_run_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tiny(tmp.path());
    let dir = tmp.path().join("r");
    assert_eq!(run_tiny(&file, &dir, &[]).status.code(), Some(0));
    let reproduce = || locklab().arg("reproduce").arg(&dir).output().unwrap();
    let leftovers = || {
        std::fs::read_dir(&dir)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .starts_with("reproduce-")
            })
            .count()
    };
    // Interrupted: a record missing, the status says so.
    let part = std::fs::read_dir(dir.join("parts"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .max()
        .unwrap();
    let saved = std::fs::read(&part).unwrap();
    std::fs::remove_file(&part).unwrap();
    let m = std::fs::read_to_string(dir.join("manifest.yaml")).unwrap();
    std::fs::write(
        dir.join("manifest.yaml"),
        m.replace("status: complete", "status: interrupted"),
    )
    .unwrap();
    let o = reproduce();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("incomplete run (3 of 4 records") && stderr(&o).contains("--resume"),
        "{}",
        stderr(&o)
    );
    assert!(!stdout(&o).contains("differences"));
    assert_eq!(leftovers(), 0);
    // Complete, but its records deleted.
    std::fs::write(&part, saved).unwrap();
    std::fs::write(dir.join("manifest.yaml"), &m).unwrap();
    std::fs::remove_dir_all(dir.join("parts")).unwrap();
    let o = reproduce();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("0 of its 4 records"), "{}", stderr(&o));
    assert_eq!(leftovers(), 0);
}

/// `complete` is the last thing written: whenever the manifest says so, the claims
/// and the report are there.
#[test]
fn complete_is_written_only_after_the_claims_and_the_report() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tiny(tmp.path());
    for (i, args) in [
        vec!["run".to_string(), "--quick".into()],
        vec!["report".to_string()],
    ]
    .into_iter()
    .enumerate()
    {
        let dir = tmp.path().join("r");
        let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("locklab"));
        cmd.args(&args);
        if i == 0 {
            cmd.arg("--out").arg(&dir).arg(&file);
        } else {
            cmd.arg(&dir);
        }
        let mut child = cmd.current_dir(root()).spawn().unwrap();
        let mut seen = 0;
        loop {
            let done = child.try_wait().unwrap();
            let status = manifest_status(&dir);
            if status == "complete" && done.is_none() {
                seen += 1;
                for f in ["claims.json", "report/index.html", "report/report.md"] {
                    assert!(dir.join(f).is_file(), "{args:?}: complete before {f}");
                }
            } else if i == 1 && done.is_none() {
                // A report being rebuilt is not complete until it is written.
                assert!(status == "running" || status.is_empty(), "{status}");
            }
            if let Some(code) = done {
                assert_eq!(code.code(), Some(0), "{args:?}");
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert_eq!(manifest_status(&dir), "complete");
        let _ = seen;
    }
}

/// One writer at a time: while another locklab holds a results directory, `run
/// --resume`, `report`, `merge --force` and `run --force` into it exit 2 at once.
/// The lock leaves no file behind.
#[test]
fn a_second_writer_of_a_results_directory_is_refused() {
    use std::os::fd::AsRawFd;
    let tmp = tempfile::tempdir().unwrap();
    let file = tiny(tmp.path());
    let (one, two) = shards(tmp.path(), &file);
    let dir = tmp.path().join("r");
    assert_eq!(run_tiny(&file, &dir, &[]).status.code(), Some(0));
    let before = tree(&dir);
    let held = std::fs::File::open(&dir).unwrap();
    // SAFETY: flock on a descriptor this test owns.
    assert_eq!(
        unsafe { libc::flock(held.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) },
        0
    );
    let tries: Vec<Output> = vec![
        locklab()
            .args(["run", "--resume"])
            .arg(&dir)
            .output()
            .unwrap(),
        locklab().arg("report").arg(&dir).output().unwrap(),
        merge(&[&one, &two], &dir, &["--force"]),
        run_tiny(&file, &dir, &["--force"]),
    ];
    for o in &tries {
        assert_eq!(o.status.code(), Some(2), "{}", stderr(o));
        assert!(
            stderr(o).contains("another locklab is writing"),
            "{}",
            stderr(o)
        );
    }
    assert_eq!(tree(&dir), before);
    assert_eq!(manifest_status(&dir), "complete");
    drop(held);
    let o = locklab().arg("report").arg(&dir).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        !tree(&dir).iter().any(|f| f.contains("lock")),
        "{:?}",
        tree(&dir)
    );
}

/// Without `--out`, runs started in the same second (or microsecond: three at once on
/// two CPUs have shared one) get directories and run ids of their own.
#[test]
fn default_run_directories_never_collide() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tiny(tmp.path());
    let children: Vec<_> = (0..3)
        .map(|_| {
            Command::new(assert_cmd::cargo::cargo_bin("locklab"))
                .args(["run", "--quick", "--no-report"])
                .arg(&file)
                .current_dir(tmp.path())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let o = c.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    let runs: Vec<_> = std::fs::read_dir(tmp.path().join("results/tiny"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "latest")
        .collect();
    assert_eq!(runs.len(), 3, "{runs:?}");
    let ids: std::collections::BTreeSet<String> = runs
        .iter()
        .map(|r| {
            let m = std::fs::read_to_string(
                tmp.path()
                    .join("results/tiny")
                    .join(r)
                    .join("manifest.yaml"),
            )
            .unwrap();
            let m: locklab_model::manifest::Manifest = serde_yaml::from_str(&m).unwrap();
            m.run_id()
        })
        .collect();
    assert_eq!(ids.len(), 3, "run ids must differ: {ids:?}");
}

/// Ctrl-C: the records finished are kept, no temporary file is left, the manifest
/// says `interrupted`, the process ends by SIGINT; `--resume` completes the run.
#[test]
fn an_interrupted_run_cleans_up_and_says_so() {
    let _m = machine();
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("long.lab");
    std::fs::write(
        &file,
        "topology box { sockets = 1, cores = 4, transfer { llc = 40ns } }
experiment long {
  topology = box
  workload = single { critical = 100ns }
  sweep { lock = [tas, ttas, ticket, mcs], threads = [1, 2, 3, 4] }
  run { modes = [sim], duration = 20ms, repetitions = 3 }
  expect throughput_ops_s[lock = mcs, threads = 2] > 0
}
",
    )
    .unwrap();
    let dir = tmp.path().join("r");
    let mut child = interruptible(&[libc::SIGINT], libc::SIG_DFL)
        .args(["run", "--jobs", "1", "--no-report", "--out"])
        .arg(&dir)
        .arg(&file)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Once a record is written (the run has 48), interrupt.
    let started = std::time::Instant::now();
    while std::fs::read_dir(dir.join("parts")).map_or(0, |d| d.count()) == 0 {
        assert!(started.elapsed().as_secs() < 60, "no record written");
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    // SAFETY: a signal to the child this test started.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let status = child.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert_eq!(status.signal(), Some(libc::SIGINT), "{status:?}: {err}");
    assert!(
        err.contains("interrupted") && err.contains("--resume"),
        "{err}"
    );
    assert_eq!(manifest_status(&dir), "interrupted");
    assert!(
        !tree(&dir).iter().any(|f| f.ends_with(".tmp")),
        "{:?}",
        tree(&dir)
    );
    let o = resume(&dir);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(manifest_status(&dir), "complete");
}

/// `--resume` runs again the records whose parts are damaged (cut short, empty)
/// and drops parts that are not records of the run.
#[test]
fn resume_reruns_damaged_parts_and_drops_foreign_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tiny(tmp.path());
    let dir = tmp.path().join("r");
    assert_eq!(run_tiny(&file, &dir, &[]).status.code(), Some(0));
    let parts = dir.join("parts");
    let mut names: Vec<PathBuf> = std::fs::read_dir(&parts)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    let whole = std::fs::read_to_string(&names[0]).unwrap();
    std::fs::write(&names[0], &whole[..whole.len() / 3]).unwrap();
    std::fs::write(&names[1], "").unwrap();
    std::fs::write(parts.join("p099999-sim-r0000.yaml"), "garbage").unwrap();
    for f in ["points.parquet", "threads.parquet", "handoffs.parquet"] {
        std::fs::remove_file(dir.join(f)).unwrap();
    }
    let o = resume(&dir);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("2 of 4 records already done"), "{e}");
    assert!(e.contains("not a record of this run"), "{e}");
    assert_eq!(std::fs::read_dir(&parts).unwrap().count(), 4);
    assert_eq!(std::fs::read_to_string(&names[0]).unwrap(), whole);
    assert_eq!(manifest_status(&dir), "complete");
}

#[test]
fn usage_that_says_two_things_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tiny(tmp.path());
    let dir = tmp.path().join("r");
    assert_eq!(run_tiny(&file, &dir, &[]).status.code(), Some(0));
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["run", "--resume", dir.to_str().unwrap(), "--force"],
            "cannot be used with",
        ),
        (
            vec!["run", "--jobs", "0", file.to_str().unwrap()],
            "at least 1 job",
        ),
        (
            vec![
                "run",
                "--set",
                "threads=1",
                "--set",
                "threads=2",
                file.to_str().unwrap(),
            ],
            "given twice",
        ),
    ];
    for (args, why) in cases {
        let o = locklab().args(&args).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(why), "{args:?}: {}", stderr(&o));
    }
    // A manifest of a newer layout is not read as if it were this one's.
    let m = std::fs::read_to_string(dir.join("manifest.yaml")).unwrap();
    std::fs::write(
        dir.join("manifest.yaml"),
        m.replacen("schema_version: 1", "schema_version: 99", 1),
    )
    .unwrap();
    let o = locklab().arg("report").arg(&dir).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("schema_version 99"), "{}", stderr(&o));
}

/// A damaged table is named in the error.
#[test]
fn a_corrupt_table_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tiny(tmp.path());
    let dir = tmp.path().join("r");
    assert_eq!(run_tiny(&file, &dir, &[]).status.code(), Some(0));
    let points = dir.join("points.parquet");
    let bytes = std::fs::read(&points).unwrap();
    std::fs::write(&points, &bytes[..500.min(bytes.len() / 2)]).unwrap();
    let o = locklab().arg("report").arg(&dir).output().unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&points.display().to_string()),
        "{}",
        stderr(&o)
    );
}

/// `compare` refuses an incomplete run, and a comparison with nothing in it.
#[test]
fn compare_refuses_incomplete_runs_and_empty_comparisons() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tiny(tmp.path());
    let dir = tmp.path().join("r");
    assert_eq!(run_tiny(&file, &dir, &[]).status.code(), Some(0));
    let o = locklab()
        .args(["compare", "--sim-vs-native"])
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("nothing to compare"), "{}", stderr(&o));
    assert!(stderr(&o).contains("no native points"), "{}", stderr(&o));
    let running = tmp.path().join("running");
    assert_eq!(run_tiny(&file, &running, &[]).status.code(), Some(0));
    let m = std::fs::read_to_string(running.join("manifest.yaml")).unwrap();
    std::fs::write(
        running.join("manifest.yaml"),
        m.replace("status: complete", "status: running"),
    )
    .unwrap();
    let o = locklab()
        .arg("compare")
        .arg(&dir)
        .arg(&running)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("incomplete run"), "{}", stderr(&o));
    let o = locklab()
        .arg("compare")
        .arg(&dir)
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// A claim that divides by zero has no value: `error`, not a verdict on infinity.
#[test]
fn a_division_by_zero_in_a_claim_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("div.lab");
    // One thread on a TAS lock: nothing is ever bypassed, `bypass_max` is 0.
    let x = "throughput_ops_s[lock = mcs, threads = 1] / bypass_max[lock = tas, threads = 1]";
    std::fs::write(
        &file,
        format!(
            "topology box {{ sockets = 1, cores = 4, transfer {{ llc = 40ns }} }}
experiment div {{
  topology = box
  workload = single {{ critical = 100ns }}
  sweep {{ lock = [tas, mcs], threads = [1, 2] }}
  run {{ modes = [sim], duration = 2ms, repetitions = 1 }}
  expect a: {x} > 1
  expect b: 1 / ({x}) < 1
  expect c: 0 - {x} < 1
  expect ok: throughput_ops_s[lock = mcs, threads = 2] / throughput_ops_s[lock = mcs, threads = 1] > 0
}}
"
        ),
    )
    .unwrap();
    let dir = tmp.path().join("r");
    let o = locklab()
        .args(["run", "--no-report", "--out"])
        .arg(&dir)
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let claims: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("claims.json")).unwrap()).unwrap();
    for c in claims["claims"].as_array().unwrap() {
        let (id, verdict) = (c["id"].as_str().unwrap(), c["verdict"].as_str().unwrap());
        if id == "ok" {
            assert_eq!(verdict, "pass", "{c}");
        } else {
            assert_eq!(verdict, "error", "{c}");
            assert!(
                c["detail"].as_str().unwrap().contains("division by zero"),
                "{c}"
            );
        }
    }
}

/// `locklab` with `signals` set to `disposition` (`SIG_DFL` or `SIG_IGN`) in the
/// child, whatever this process has: a test run in the background of a script has
/// SIGINT ignored, and so would its children.
fn interruptible(signals: &[libc::c_int], disposition: libc::sighandler_t) -> Command {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("locklab"));
    cmd.current_dir(root());
    let signals = signals.to_vec();
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            for &sig in &signals {
                libc::signal(sig, disposition);
            }
            Ok(())
        });
    }
    cmd
}

/// Wait until `ready` holds or the child has exited (then `false`), polling.
fn wait_until(child: &mut std::process::Child, ready: impl Fn() -> bool) -> bool {
    let started = Instant::now();
    loop {
        if ready() {
            return true;
        }
        if child.try_wait().unwrap().is_some() {
            return false;
        }
        assert!(started.elapsed().as_secs() < 60, "the trigger never came");
        std::thread::sleep(Duration::from_micros(500));
    }
}

fn any_tmp(dir: &Path) -> bool {
    dir.is_dir() && tree(dir).iter().any(|f| f.ends_with(".tmp"))
}

/// Ctrl-C at any point of a run (a record, the tables, the claims and report) or of
/// a report's rebuild of the tables: the process ends by SIGINT (or exits 0 if it
/// finished first), the manifest says `complete` or `interrupted`, never `failed`,
/// a run that finished is never marked `interrupted`, and no temporary file is left
/// anywhere under the directory.
#[test]
fn ctrl_c_at_any_point_leaves_a_complete_or_interrupted_directory_and_no_temporary_file() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tiny(tmp.path());
    type Trigger = fn(&Path) -> bool;
    let triggers: [(&str, Trigger); 4] = [
        ("a record", |d| {
            std::fs::read_dir(d.join("parts")).is_ok_and(|mut e| e.next().is_some())
        }),
        ("the tables", |d| {
            d.join(".points.parquet.tmp").exists() || d.join("points.parquet").exists()
        }),
        ("the report", |d| d.join("report").exists()),
        ("the report's plots", |d| {
            std::fs::read_dir(d.join("report")).is_ok_and(|e| e.count() > 1)
        }),
    ];
    let check = |what: &str, dir: &Path, child: std::process::Child| {
        let o = child.wait_with_output().unwrap();
        let err = stderr(&o);
        let status = manifest_status(dir);
        assert!(
            o.status.signal() == Some(libc::SIGINT) || o.status.code() == Some(0),
            "{what}: {:?}: {err}",
            o.status
        );
        assert!(
            status == "complete" || status == "interrupted",
            "{what}: status {status:?}: {err}"
        );
        if o.status.code() == Some(0) || err.contains("report:") {
            assert_eq!(status, "complete", "{what}: a finished run: {err}");
        }
        if status == "interrupted" {
            assert!(err.contains("completes it"), "{what}: {err}");
        }
        assert!(!any_tmp(dir), "{what}: {:?}", tree(dir));
    };
    for (i, (what, ready)) in triggers.iter().enumerate() {
        let dir = tmp.path().join(format!("r{i}"));
        let mut child = interruptible(&[libc::SIGINT], libc::SIG_DFL)
            .args(["run", "--quick", "--out"])
            .arg(&dir)
            .arg(&file)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        if wait_until(&mut child, || ready(&dir)) {
            // SAFETY: a signal to the child this test started.
            unsafe {
                libc::kill(child.id() as i32, libc::SIGINT);
            }
        }
        check(what, &dir, child);
    }
    // `report` rebuilding the tables of a run whose tables are gone.
    let dir = tmp.path().join("r0");
    if manifest_status(&dir) == "interrupted" {
        let o = resume(&dir);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    for f in ["points.parquet", "threads.parquet", "handoffs.parquet"] {
        std::fs::remove_file(dir.join(f)).unwrap();
    }
    let mut child = interruptible(&[libc::SIGINT], libc::SIG_DFL)
        .arg("report")
        .arg(&dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    if wait_until(&mut child, || {
        dir.join(".points.parquet.tmp").exists() || dir.join("points.parquet").exists()
    }) {
        // SAFETY: as above.
        unsafe {
            libc::kill(child.id() as i32, libc::SIGINT);
        }
    }
    check("report", &dir, child);
}

/// A SIGINT or SIGTERM that the parent set to be ignored (a script's `cmd &`) is
/// ignored: the run goes on to complete.
#[test]
fn a_signal_the_parent_ignored_stays_ignored() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tiny(tmp.path());
    let dir = tmp.path().join("r");
    let mut child = interruptible(&[libc::SIGINT, libc::SIGTERM], libc::SIG_IGN)
        .args(["run", "--quick", "--out"])
        .arg(&dir)
        .arg(&file)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let parts = || std::fs::read_dir(dir.join("parts")).is_ok_and(|mut e| e.next().is_some());
    assert!(
        wait_until(&mut child, parts),
        "the run ended before its first record"
    );
    // SAFETY: signals to the child this test started.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{:?}: {}", o.status, stderr(&o));
    assert_eq!(manifest_status(&dir), "complete");
}

/// Ctrl-C in a shell loop stops the loop: locklab ends by the signal, as bash
/// expects of a program it ran, not by exiting 130 (bash goes on after that).
#[test]
fn ctrl_c_stops_a_shell_loop_of_runs() {
    if Command::new("bash").arg("-c").arg("true").output().is_err() {
        eprintln!("bash not found: the shell loop cannot be set up here");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let file = tiny(tmp.path());
    let bin = assert_cmd::cargo::cargo_bin("locklab");
    let script = format!(
        "for i in 1 2 3; do {} run --quick --out \"$D/w$i\" \"$F\" >/dev/null 2>&1; echo \"after $i rc=$?\"; done",
        bin.display()
    );
    let mut cmd = Command::new("bash");
    cmd.arg("-c")
        .arg(&script)
        .env("D", tmp.path())
        .env("F", &file)
        .stdout(std::process::Stdio::piped());
    // SAFETY: only async-signal-safe calls between fork and exec: a process group of
    // its own (the terminal's Ctrl-C signals the foreground group), SIGINT as a
    // terminal's shell has it.
    unsafe {
        cmd.pre_exec(|| {
            libc::setpgid(0, 0);
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            Ok(())
        });
    }
    let mut shell = cmd.spawn().unwrap();
    let w1 = tmp.path().join("w1");
    let ready = || std::fs::read_dir(w1.join("parts")).is_ok_and(|mut e| e.next().is_some());
    assert!(wait_until(&mut shell, ready), "the loop ended early");
    // SAFETY: a signal to the process group this test started.
    unsafe {
        libc::kill(-(shell.id() as i32), libc::SIGINT);
    }
    let o = shell.wait_with_output().unwrap();
    let out = stdout(&o);
    assert!(!tmp.path().join("w2").exists(), "the loop went on: {out}");
    assert!(!out.contains("after 2"), "{out}");
    // Interrupted where it was: among the records, or finishing (then complete).
    let status = manifest_status(&w1);
    assert!(
        status == "interrupted" || status == "complete",
        "{status}: {out}"
    );
}

/// A native point placed on a CPU the host does not have is reported as that, not
/// as pinning impossible; still exit 4.
#[test]
fn a_point_on_a_cpu_the_host_lacks_is_not_called_a_pinning_failure() {
    let _m = machine();
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("far.lab");
    std::fs::write(
        &file,
        "topology box { sockets = 1, cores = 4, transfer { llc = 40ns } }
experiment far {
  topology = box
  workload = single { critical = 100ns }
  placement = [4095]
  sweep { lock = [mcs], threads = [1] }
  run { modes = [native], duration = 5ms }
  expect throughput_ops_s > 1
}
",
    )
    .unwrap();
    let o = locklab()
        .args(["run", "--no-report", "--out"])
        .arg(tmp.path().join("r"))
        .arg(&file)
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(4), "{err}");
    assert!(err.contains("CPU 4095 is not on this machine"), "{err}");
    assert!(!err.contains("pinning impossible"), "{err}");
    assert!(!err.contains("cannot pin"), "{err}");
    let last = err.lines().last().unwrap_or("");
    assert!(
        last.contains("lacks the CPUs or nodes") && last.contains("exit 4"),
        "{last}"
    );
}
