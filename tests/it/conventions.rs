//! Command-line conventions: completions and a man page, no escape sequences under
//! NO_COLOR or TERM=dumb, `--format json`, a claims table that fits, report-only
//! claims that say what they would be, the noise gate's summary, no silent
//! overwrite of `--out`, and `results/<experiment>/latest`.

use super::*;
use std::path::Path;

const ESC: u8 = 0x1b;

fn escapes(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| b == ESC).count()
}

/// A quick simulated run of the built-in quick start into `out`, with `extra` args.
fn quick_sim(out: &Path, extra: &[&str]) -> std::process::Output {
    locklab()
        .args(["run", "--mode", "sim", "--quick", "--no-report", "--out"])
        .arg(out)
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn completions_for_bash_zsh_and_fish_name_every_subcommand() {
    for shell in ["bash", "zsh", "fish"] {
        let out = locklab().args(["completions", shell]).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{shell}: {}", stderr(&out));
        let script = stdout(&out);
        for word in ["locklab", "run", "check", "compare", "format", "force"] {
            assert!(script.contains(word), "{shell} completion lacks {word}");
        }
    }
    let bad = locklab().args(["completions", "tcsh"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn the_man_page_covers_each_subcommand_and_its_options() {
    let out = locklab().arg("man").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let page = stdout(&out);
    assert!(
        page.starts_with(".ie") || page.contains(".TH locklab"),
        "{page}"
    );
    for section in [
        "LOCKLAB RUN",
        "LOCKLAB CHECK",
        "LOCKLAB COMPARE",
        "LOCKLAB MAN",
    ] {
        assert!(page.contains(section), "no section {section}");
    }
    assert!(page.contains("\\-\\-force") || page.contains("--force"));
}

/// A file with errors: its diagnostics are drawn by miette, in colour when allowed.
fn bad_file(dir: &Path) -> std::path::PathBuf {
    let bad = dir.join("bad.lab");
    std::fs::write(&bad, "experiment broken {\n  lock a = mcsx\n}\n").unwrap();
    bad
}

#[test]
fn no_color_and_dumb_terminals_get_no_escape_sequences() {
    let dir = tempfile::tempdir().unwrap();
    let bad = bad_file(dir.path());
    let run = |env: &[(&str, &str)], args: &[&std::ffi::OsStr]| {
        let mut cmd = locklab();
        cmd.env_remove("NO_COLOR").env("TERM", "xterm-256color");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.args(args).output().unwrap();
        [out.stdout, out.stderr].concat()
    };
    let check: [&std::ffi::OsStr; 2] = ["check".as_ref(), bad.as_os_str()];
    let usage: [&std::ffi::OsStr; 2] = ["run".as_ref(), "--no-such-flag".as_ref()];
    for args in [&check[..], &usage[..]] {
        // Colours asked for on a pipe: the diagnostics and clap's usage use them...
        assert!(
            escapes(&run(&[("CLICOLOR_FORCE", "1")], args)) > 0,
            "{args:?}"
        );
        // ...and each convention turns every one of them off.
        for env in [
            [("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")],
            [("CLICOLOR_FORCE", "1"), ("TERM", "dumb")],
        ] {
            let out = run(&env, args);
            assert_eq!(
                escapes(&out),
                0,
                "{env:?} {args:?}: {}",
                String::from_utf8_lossy(&out)
            );
        }
    }
}

/// Run `locklab` with stdout and stderr on a pseudo-terminal, as a person at a
/// terminal would; returns everything it wrote.
fn on_a_terminal(args: &[&str], env: &[(&str, &str)]) -> Vec<u8> {
    use std::io::Read;
    use std::os::fd::FromRawFd;
    let (mut master, mut slave) = (0, 0);
    // SAFETY: openpty writes two new descriptors into the given integers.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(rc, 0, "openpty");
    // SAFETY: both descriptors were just opened and are owned here alone.
    let (master, slave) = unsafe {
        (
            std::fs::File::from_raw_fd(master),
            std::fs::File::from_raw_fd(slave),
        )
    };
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("locklab"));
    cmd.current_dir(root())
        .args(args)
        .env_remove("NO_COLOR")
        .env_remove("CLICOLOR_FORCE")
        .env("TERM", "xterm-256color")
        .stdout(slave.try_clone().unwrap())
        .stderr(slave.try_clone().unwrap());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap();
    drop(cmd);
    drop(slave);
    let mut out = Vec::new();
    let mut master = master;
    // Reading ends with EIO once the child has exited and the slave is closed.
    let mut buf = [0u8; 4096];
    loop {
        match master.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
        }
    }
    child.wait().unwrap();
    out
}

#[test]
fn on_a_terminal_no_color_and_term_dumb_still_mean_no_escapes() {
    let dir = tempfile::tempdir().unwrap();
    let bad = bad_file(dir.path());
    let bad = bad.to_str().unwrap();
    assert!(escapes(&on_a_terminal(&["check", bad], &[])) > 0);
    let out = dir.path().join("run");
    let out = out.to_str().unwrap();
    for env in [("NO_COLOR", "1"), ("TERM", "dumb")] {
        for (i, args) in [
            vec!["check", bad],
            vec![
                "run",
                "--mode",
                "sim",
                "--quick",
                "--no-report",
                "--force",
                "--out",
                out,
            ],
        ]
        .iter()
        .enumerate()
        {
            let text = on_a_terminal(args, &[env]);
            assert_eq!(
                escapes(&text),
                0,
                "{env:?} {args:?}: {}",
                String::from_utf8_lossy(&text)
            );
            if i == 1 {
                assert!(String::from_utf8_lossy(&text).contains("ran 8 records"));
            }
        }
    }
}

#[test]
fn run_check_and_compare_speak_json() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("q");
    let o = quick_sim(&out, &["--format", "json"]);
    let code = o.status.code().unwrap();
    let run: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("run prints JSON");
    assert_eq!(run["run"], 1);
    assert_eq!(run["exit_code"], code);
    assert_eq!(run["experiment"], "quickstart");
    assert_eq!(run["records"]["total"], 8);
    assert_eq!(run["claims"].as_array().unwrap().len(), 4);
    assert!(run["counts"]["gating"]["pass"].as_u64().unwrap() >= 3);
    assert!(run["run_id"].as_str().unwrap().len() > 10);

    let bad = bad_file(dir.path());
    let o = locklab()
        .args(["check", "--format", "json"])
        .arg(&bad)
        .arg("experiments/quickstart.lab")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let check: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("check prints JSON");
    assert_eq!(check["failed"], 1);
    let files = check["files"].as_array().unwrap();
    assert_eq!(files[0]["status"], "errors");
    let d = files[0]["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["start"]["line"] == 2)
        .expect("the error on line 2 is reported");
    assert_eq!(d["severity"], "error");
    assert_eq!(d["start"]["column"], 10, "{d}");
    assert!(d["message"].as_str().unwrap().contains("found `=`"), "{d}");
    assert_eq!(files[1]["status"], "ok");
    assert_eq!(files[1]["points"], 8);

    let o = locklab()
        .args(["compare", "--format", "json"])
        .arg(&out)
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let cmp: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("compare prints JSON");
    let rows = cmp["rows"].as_array().unwrap();
    assert!(!rows.is_empty());
    for key in ["point_id", "mode", "metric", "a", "b", "ratio", "verdict"] {
        assert!(rows[0].get(key).is_some(), "row lacks {key}: {}", rows[0]);
    }
}

#[test]
fn the_claims_table_fits_the_width_and_report_claims_say_what_they_would_be() {
    let dir = tempfile::tempdir().unwrap();
    for width in ["60", "100"] {
        let o = locklab()
            .env("COLUMNS", width)
            .args([
                "run",
                "--mode",
                "sim",
                "--quick",
                "--no-report",
                "--force",
                "--out",
            ])
            .arg(dir.path().join("q"))
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let text = stdout(&o);
        let table: Vec<&str> = text.lines().take_while(|l| !l.is_empty()).collect();
        assert!(table.len() >= 6, "{text}");
        let w: usize = width.parse().unwrap();
        for l in &table {
            assert!(l.chars().count() <= w, "wider than {w}: {l:?}\n{text}");
        }
        // The full text of each claim, once, under the table.
        assert!(
            text.contains("tas_bypass   bypass_max[lock = tas, threads = 2]"),
            "{text}"
        );
        assert!(text.contains("report (would "), "{text}");
    }
}

#[test]
fn noise_flagged_points_are_summed_up_after_a_run() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("q");
    assert_eq!(quick_sim(&out, &[]).status.code(), Some(0));
    // Flag one record as the native noise gate would, and rebuild from the journal.
    let part = std::fs::read_dir(out.join("parts"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .min()
        .unwrap();
    let text = std::fs::read_to_string(&part).unwrap();
    assert!(text.contains("noise: sim"), "{text}");
    std::fs::write(
        &part,
        text.replace("noise: sim", "noise: 'flagged: steal 12%'"),
    )
    .unwrap();
    for t in ["points.parquet", "threads.parquet", "handoffs.parquet"] {
        std::fs::remove_file(out.join(t)).unwrap();
    }
    let o = locklab().arg("report").arg(&out).output().unwrap();
    let err = stderr(&o);
    assert!(
        err.contains("1 of 8 native points flagged by the noise gate: lock=tas,threads=1 (rep 0: flagged: steal 12%)"),
        "{err}"
    );
}

#[test]
fn an_existing_out_is_never_overwritten_silently() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("q");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("notes.txt"), "mine").unwrap();
    let o = quick_sim(&out, &[]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains("refusing to overwrite") && err.contains("--force"),
        "{err}"
    );
    assert!(!out.join("manifest.yaml").exists());

    // --force writes into it, keeping what is not a run's.
    assert_eq!(quick_sim(&out, &["--force"]).status.code(), Some(0));
    assert_eq!(
        std::fs::read_to_string(out.join("notes.txt")).unwrap(),
        "mine"
    );
    // A results directory: the hint names --resume.
    let o = quick_sim(&out, &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--resume"), "{}", stderr(&o));
    // An empty directory is fine.
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    assert_eq!(quick_sim(&empty, &[]).status.code(), Some(0));
}

#[test]
fn latest_names_the_last_complete_run_of_the_experiment() {
    let dir = tempfile::tempdir().unwrap();
    let exp = dir.path().join("results").join("quickstart");
    for run in ["first", "second"] {
        assert_eq!(quick_sim(&exp.join(run), &[]).status.code(), Some(0));
        assert_eq!(
            std::fs::canonicalize(exp.join("latest")).unwrap(),
            std::fs::canonicalize(exp.join(run)).unwrap()
        );
        assert!(exp.join("latest/points.parquet").is_file());
    }
    // Anywhere else, no pointer appears.
    let other = dir.path().join("elsewhere");
    assert_eq!(quick_sim(&other.join("run"), &[]).status.code(), Some(0));
    assert!(!other.join("latest").exists());
}
