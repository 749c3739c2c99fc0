//! `locklab reproduce DIR`: re-run a stored experiment from its manifest and compare.
//!
//! The plan is taken from the manifest, not from the experiment file, so an edited
//! file cannot change what is re-run; a changed file is reported. Simulated records
//! must match exactly; native ones within statistical tolerance (`compare`).

use crate::exit::{self, Accept, Failure, Result, WithCode};
use crate::util;
use anyhow::anyhow;
use locklab_analysis::compare::{compare, CompareOptions};
use locklab_model::manifest::Manifest;
use locklab_model::plan::Mode;
use sha2::{Digest, Sha256};
use std::collections::BTreeSet;
use std::path::Path;

pub fn run(
    dir: &Path,
    out: Option<&Path>,
    force: bool,
    jobs: Option<usize>,
    accept: Accept,
    argv: &[String],
) -> Result<i32> {
    if !dir.join(locklab_analysis::store::MANIFEST_FILE).is_file() {
        return Err(Failure::new(
            exit::INVALID_INPUT,
            anyhow!(
                "{} is not a results directory (no manifest.yaml)",
                dir.display()
            ),
        ));
    }
    let old: Manifest = locklab_analysis::store::read_manifest(dir).code(exit::INVALID_INPUT)?;
    refuse_an_incomplete_run(dir, &old)?;

    for src in &old.sources {
        match std::fs::read(&src.path) {
            Ok(bytes) => {
                let now: String = Sha256::digest(&bytes)
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect();
                if now != src.sha256 {
                    eprintln!(
                        "note: {} changed since the run; re-running the stored plan",
                        src.path
                    );
                }
            }
            Err(_) => eprintln!("note: {} is not here; re-running the stored plan", src.path),
        }
    }
    let same_build = old.git_commit.as_deref() == Some(env!("LOCKLAB_GIT_COMMIT"));
    if !same_build {
        eprintln!(
            "note: stored run was made by locklab {} ({}); this is {} ({})",
            old.locklab_version,
            old.git_commit.as_deref().unwrap_or("unknown commit"),
            env!("CARGO_PKG_VERSION"),
            env!("LOCKLAB_GIT_COMMIT"),
        );
    }

    // The new run's directory: `--out` as `run` takes it (and never DIR itself), else
    // a new `DIR/reproduce-<stamp>`. Locked until the process ends.
    let (new_dir, _lock, created) = match out {
        Some(out) => {
            super::out_dir::refuse_inputs(out, [dir])?;
            let lock = super::out_dir::claim(out, force, [dir])?;
            let created = lock.created();
            (out.to_path_buf(), lock, created)
        }
        None => {
            let (d, lock) =
                super::out_dir::create_unique(dir, &format!("reproduce-{}", util::stamp_now()))?;
            (d, lock, true)
        }
    };
    let _interrupt = super::interrupt::watch(&new_dir);
    let mut manifest = super::run::new_manifest(
        old.plan.clone(),
        old.modes.clone(),
        old.quick,
        old.overrides.clone(),
        old.shard,
        argv,
    );
    manifest.started_utc = util::utc_now();
    // The new run's claims decide the exit code, as `run` would; a simulation that
    // does not reproduce exactly fails it whatever they say.
    let code = super::run::execute(
        manifest,
        &new_dir,
        &BTreeSet::new(),
        jobs,
        false,
        accept,
        crate::cli::Format::Text,
    )
    .inspect_err(|_| {
        // A reproduction that could not run leaves nothing behind it made.
        if created {
            let _ = super::interrupt::uninterrupted(|| std::fs::remove_dir_all(&new_dir));
        }
    })?;

    let mut ok = true;
    if old.modes.contains(&Mode::Sim) {
        let found = locklab_analysis::store::diff_records(dir, &new_dir, Mode::Sim)
            .code(exit::RUN_FAILED)?;
        let diffs = &found.differences;
        if diffs.is_empty() {
            println!("simulation: identical records");
        } else {
            ok = false;
            // One build must give identical records; another build may simulate or
            // measure differently (its model changed), and says so above.
            let why = if same_build {
                "the simulator must be deterministic"
            } else {
                "another build: its model or metrics may differ; one build must give identical records"
            };
            println!("simulation: {} differences ({why}):", diffs.len());
            for d in diffs.iter().take(20) {
                println!("  {d}");
            }
        }
        if !found.newly_recorded.is_empty() {
            let names: Vec<&str> = found.newly_recorded.iter().map(String::as_str).collect();
            println!(
                "  (this build also records {}, which the stored run left empty: not a difference)",
                names.join(", ")
            );
        }
    }
    if old.modes.contains(&Mode::Native) {
        let cmp = compare(
            dir,
            &new_dir,
            &CompareOptions {
                allow_cross_host: false,
                ..CompareOptions::default()
            },
        )
        .map_err(|e| Failure::new(exit::ENVIRONMENT, e))?;
        print!("{}", cmp.table());
    }
    println!("reproduction: {}", new_dir.display());
    Ok(if ok { code } else { exit::CLAIM_FAILED })
}

/// Only a complete run is reproduced: the records of an interrupted one (or one
/// whose `parts/` is gone) are not there to compare with, and every difference
/// would be blamed on the simulator.
fn refuse_an_incomplete_run(dir: &Path, m: &Manifest) -> Result<()> {
    let expected = super::run::jobs_for(&m.plan, &m.modes, m.shard);
    let finished = locklab_analysis::store::finished_records(dir).code(exit::INVALID_INPUT)?;
    let have = expected
        .iter()
        .filter(|j| finished.contains(&(j.point as u32, j.mode, j.rep)))
        .count();
    if m.status == "complete" && have == expected.len() {
        return Ok(());
    }
    let what = if m.status == "complete" {
        format!(
            "its status is `complete`, but parts/ holds {have} of its {} records, which reproduce compares with",
            expected.len()
        )
    } else {
        format!(
            "an incomplete run ({have} of {} records, status `{}`); finish it with `locklab run --resume {}`, then reproduce it",
            expected.len(),
            m.status,
            dir.display()
        )
    };
    Err(Failure::new(
        exit::INVALID_INPUT,
        anyhow!("cannot reproduce {}: {what}", dir.display()),
    ))
}
