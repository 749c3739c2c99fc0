//! Scale-out: the Slurm script of `plan --emit slurm` under a fake `sbatch`, with
//! spaces, quotes and `$(...)` in every path; its shards run for real and merge.
//! `merge` refuses a shard set that is not one run's complete set.

use super::durable::{tiny, TINY};
use super::*;
use std::process::Command;

/// A stand-in for `sbatch`: records each call's arguments, one per line, in
/// `$SBATCH_LOG.<n>` and prints a job id the way `--parsable` does on a
/// multi-cluster site (`id;cluster`).
const FAKE_SBATCH: &str = r#"#!/bin/sh
n=$(cat "$SBATCH_LOG.count" 2>/dev/null || echo 0)
n=$((n + 1))
echo "$n" > "$SBATCH_LOG.count"
for a in "$@"; do printf '%s\n' "$a"; done > "$SBATCH_LOG.$n"
echo "$((4240 + n));cluster"
"#;

fn calls(log: &Path, n: u32) -> Vec<String> {
    std::fs::read_to_string(format!("{}.{n}", log.display()))
        .unwrap_or_else(|e| panic!("sbatch call {n}: {e}"))
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn the_slurm_script_submits_itself_and_its_shards_merge() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let bin = t.join("bin");
    std::fs::create_dir(&bin).unwrap();
    std::fs::write(bin.join("sbatch"), FAKE_SBATCH).unwrap();
    Command::new("chmod")
        .arg("+x")
        .arg(bin.join("sbatch"))
        .status()
        .unwrap();
    let exp_dir = t.join("exp dir $HOME");
    std::fs::create_dir(&exp_dir).unwrap();
    let file = tiny(&exp_dir);
    let out_dir = t.join("my results $(touch PWNED) it's");
    let log = t.join("sbatch.log");

    let out = locklab()
        .current_dir(t)
        .args([
            "plan", "--emit", "slurm", "--shards", "2", "--quick", "--out",
        ])
        .arg(&out_dir)
        .args([
            "--time",
            "0:10:00",
            "--partition",
            "debug",
            "--account",
            "proj-1",
        ])
        .args(["--cpus-per-task", "2"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let script = stdout(&out);
    for line in [
        "#SBATCH --array=1-2",
        "#SBATCH --time=0:10:00",
        "#SBATCH --partition=debug",
        "#SBATCH --account=proj-1",
        "#SBATCH --cpus-per-task=2",
    ] {
        assert!(script.contains(line), "{line} missing:\n{script}");
    }
    std::fs::write(t.join("job.sh"), &script).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let bash = |task: Option<u32>| {
        let mut c = Command::new("bash");
        c.arg("job.sh")
            .current_dir(t)
            .env("PATH", &path)
            .env("SBATCH_LOG", &log)
            .env_remove("SLURM_ARRAY_TASK_ID");
        if let Some(i) = task {
            c.env("SLURM_ARRAY_TASK_ID", i.to_string());
        }
        c.output().unwrap()
    };

    // Outside a job: the log directory first, then the array, then the merge.
    let out = bash(None);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("job array 4241 and the merge as job 4242"));
    let base = out_dir.join("tiny");
    assert!(base.join("logs").is_dir());
    let array = calls(&log, 1);
    assert_eq!(
        array,
        [
            "--parsable".to_string(),
            format!("--output={}/logs/shard-%A_%a.out", base.display()),
            "job.sh".to_string()
        ]
    );
    let merge = calls(&log, 2);
    assert_eq!(merge[..2], ["--parsable", "--dependency=afterok:4241"]);
    assert!(merge.contains(&format!("--output={}/logs/merge-%j.out", base.display())));
    assert!(merge.contains(&"--partition=debug".to_string()));
    let wrap = merge[merge.iter().position(|a| a == "--wrap").unwrap() + 1].clone();

    // Inside the array: each task runs its shard, claims wait for the merge.
    for i in 1..=2 {
        let out = bash(Some(i));
        assert_eq!(out.status.code(), Some(0), "shard {i}: {}", stderr(&out));
        assert!(stdout(&out).contains("claims are evaluated by merge"));
        assert!(base.join(format!("shard-{i}/points.parquet")).is_file());
    }
    // A task run again: a complete shard is left as it is; an interrupted one is
    // resumed.
    let out = bash(Some(1));
    assert_eq!(out.status.code(), Some(0), "again: {}", stderr(&out));
    assert!(
        stdout(&out).contains("shard 1/2 is complete"),
        "{}",
        stdout(&out)
    );
    let two = base.join("shard-2");
    let part = std::fs::read_dir(two.join("parts"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .min()
        .unwrap();
    std::fs::remove_file(part).unwrap();
    std::fs::remove_file(two.join("points.parquet")).unwrap();
    let m = std::fs::read_to_string(two.join("manifest.yaml")).unwrap();
    std::fs::write(
        two.join("manifest.yaml"),
        m.replace("status: complete", "status: interrupted"),
    )
    .unwrap();
    let out = bash(Some(2));
    assert_eq!(out.status.code(), Some(0), "resumed: {}", stderr(&out));
    assert!(stderr(&out).contains("resuming"), "{}", stderr(&out));
    assert!(two.join("points.parquet").is_file());
    // The merge job runs the wrapped command through sh; run again, it replaces
    // its own result.
    for _ in 0..2 {
        let out = Command::new("sh")
            .args(["-c", &wrap])
            .current_dir(t)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}{}",
            stdout(&out),
            stderr(&out)
        );
    }
    let merged = std::fs::read_to_string(base.join("merged/manifest.yaml")).unwrap();
    assert!(merged.contains("status: complete"), "{merged}");
    assert_eq!(
        merged.matches("hostname:").count(),
        3,
        "the run's and each shard's"
    );
    assert!(base.join("merged/claims.json").is_file());
    assert!(!t.join("PWNED").exists() && !root().join("PWNED").exists());
}

#[test]
fn merge_refuses_a_missing_or_foreign_shard() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tiny(tmp.path());
    let shard = |i: u32, name: &str| {
        let dir = tmp.path().join(name);
        let out = locklab()
            .args(["run", "--quick", "--shard", &format!("{i}/2"), "--out"])
            .arg(&dir)
            .arg(&file)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert!(stdout(&out).contains("claims are evaluated by merge"));
        dir
    };
    let (one, two, again) = (shard(1, "one"), shard(2, "two"), shard(2, "again"));
    // A shard of another plan: the file changed between the jobs.
    std::fs::write(&file, TINY.replace("200ns", "300ns")).unwrap();
    let other = shard(2, "other");
    let merge = |dirs: &[&PathBuf]| {
        locklab()
            .arg("merge")
            .args(dirs)
            .arg("--out")
            .arg(tmp.path().join("m"))
            .output()
            .unwrap()
    };
    let out = merge(&[&one]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("shard 2 of 2 is missing"),
        "{}",
        stderr(&out)
    );
    let out = merge(&[&one, &other]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("another plan"), "{}", stderr(&out));
    let out = merge(&[&one, &two, &again]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("given twice"), "{}", stderr(&out));
    assert!(!tmp.path().join("m/manifest.yaml").exists());
    let out = merge(&[&one, &two]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// Slurm options mean nothing without `--emit slurm`, zero shards or CPUs per task
/// are no job, and a script is not JSON: usage errors, not silently ignored or
/// emitted.
#[test]
fn slurm_options_without_emit_or_of_zero_are_usage_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tiny(tmp.path());
    for args in [
        vec!["--shards", "2"],
        vec!["--cpus-per-task", "2"],
        vec!["--time", "1:00:00"],
        vec!["--emit", "slurm", "--cpus-per-task", "0"],
        vec!["--emit", "slurm", "--shards", "0"],
        vec!["--emit", "slurm", "--format", "json"],
    ] {
        let o = locklab()
            .arg("plan")
            .arg(&file)
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
    }
    let ok = locklab()
        .arg("plan")
        .arg(&file)
        .args(["--emit", "slurm", "--shards", "2"])
        .output()
        .unwrap();
    assert_eq!(ok.status.code(), Some(0), "{}", stderr(&ok));
}
