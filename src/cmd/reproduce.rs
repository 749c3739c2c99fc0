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
    jobs: Option<usize>,
    accept: Accept,
    argv: &[String],
) -> Result<i32> {
    let text = std::fs::read_to_string(dir.join("manifest.yaml")).map_err(|e| {
        Failure::new(
            exit::INVALID_INPUT,
            anyhow!("{}: cannot read manifest.yaml: {e}", dir.display()),
        )
    })?;
    let old: Manifest = serde_yaml::from_str(&text).map_err(|e| {
        Failure::new(
            exit::INVALID_INPUT,
            anyhow!("{}: manifest.yaml is not valid: {e}", dir.display()),
        )
    })?;

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
    if old.git_commit.as_deref() != Some(env!("LOCKLAB_GIT_COMMIT")) {
        eprintln!(
            "note: stored run was made by locklab {} ({}); this is {} ({})",
            old.locklab_version,
            old.git_commit.as_deref().unwrap_or("unknown commit"),
            env!("CARGO_PKG_VERSION"),
            env!("LOCKLAB_GIT_COMMIT"),
        );
    }

    let new_dir = out
        .map(Path::to_path_buf)
        .unwrap_or_else(|| dir.join(format!("reproduce-{}", util::stamp_now())));
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
    )?;

    let mut ok = true;
    if old.modes.contains(&Mode::Sim) {
        let diffs = locklab_analysis::store::diff_records(dir, &new_dir, Mode::Sim)
            .code(exit::RUN_FAILED)?;
        if diffs.is_empty() {
            println!("simulation: identical records");
        } else {
            ok = false;
            println!(
                "simulation: {} differences (the simulator must be deterministic):",
                diffs.len()
            );
            for d in diffs.iter().take(20) {
                println!("  {d}");
            }
        }
    }
    if old.modes.contains(&Mode::Native) {
        let cmp = compare(
            dir,
            &new_dir,
            &CompareOptions {
                allow_cross_host: false,
                sim_vs_native: false,
            },
        )
        .map_err(|e| Failure::new(exit::ENVIRONMENT, e))?;
        print!("{}", cmp.table());
    }
    println!("reproduction: {}", new_dir.display());
    Ok(if ok { code } else { exit::CLAIM_FAILED })
}
