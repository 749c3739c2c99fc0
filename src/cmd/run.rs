//! `locklab run FILE`: execute the plan, store the records, check the claims, render
//! the report.

use super::{apply_timing, modes, timing};
use crate::cli::RunArgs;
use crate::exit::{self, Accept, Failure, Result, WithCode};
use crate::util;
use anyhow::{anyhow, Context};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use locklab_analysis::store::ResultsWriter;
use locklab_model::manifest::{Manifest, MANIFEST_SCHEMA_VERSION};
use locklab_model::plan::{Mode, Plan};
use locklab_model::records::RunRecord;
use sha2::{Digest, Sha256};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

/// One unit of work: a point in a mode, one repetition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Job {
    pub mode: Mode,
    pub point: usize,
    pub rep: u32,
}

pub fn run(args: &RunArgs, argv: &[String]) -> Result<i32> {
    let (manifest, dir, done) = match &args.resume {
        Some(dir) => {
            let (_, manifest, done) = ResultsWriter::resume(dir).code(exit::INVALID_INPUT)?;
            eprintln!(
                "resuming {}: {} records already done",
                dir.display(),
                done.len()
            );
            (manifest, dir.clone(), done)
        }
        None => {
            let overrides = super::parse_overrides(&args.set)?;
            let file = args
                .file
                .clone()
                .unwrap_or_else(|| PathBuf::from(super::EMBEDDED_QUICKSTART.0));
            let mut plan = super::load_experiment(&file, &overrides)?;
            let t = timing(&plan, args.quick);
            apply_timing(&mut plan, t);
            let shard = args.shard.as_deref().map(parse_shard).transpose()?;
            let modes = modes(&plan, args.mode);
            if jobs_for(&plan, &modes, None).is_empty() {
                let names: Vec<&str> = modes.iter().map(|m| m.as_str()).collect();
                return Err(Failure::new(
                    exit::INVALID_INPUT,
                    anyhow!(
                        "nothing to run: no point of {} runs in mode {}",
                        file.display(),
                        names.join(" or ")
                    ),
                ));
            }
            let manifest = new_manifest(plan, modes, args.quick, overrides, shard, argv);
            let dir = args.out.clone().unwrap_or_else(|| default_dir(&manifest));
            (manifest, dir, BTreeSet::new())
        }
    };
    let accept = args.accept.accept();
    execute(manifest, &dir, &done, args.jobs, !args.no_report, accept)
}

/// Run what is left of `manifest` into `dir`, then check the claims and report.
pub fn execute(
    mut manifest: Manifest,
    dir: &Path,
    done: &BTreeSet<(u32, Mode, u32)>,
    jobs: Option<usize>,
    report: bool,
    accept: Accept,
) -> Result<i32> {
    let writer = if done.is_empty() && !dir.join("manifest.yaml").exists() {
        ResultsWriter::create(dir, &manifest)
            .with_context(|| format!("cannot create results directory {}", dir.display()))
            .code(exit::RUN_FAILED)?
    } else {
        ResultsWriter::resume(dir)
            .map(|(w, _, _)| w)
            .code(exit::RUN_FAILED)?
    };
    let plan = &manifest.plan;
    let work: Vec<Job> = jobs_for(plan, &manifest.modes, manifest.shard)
        .into_iter()
        .filter(|j| !done.contains(&(j.point as u32, j.mode, j.rep)))
        .collect();
    let jobs_n = jobs
        .unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
        })
        .max(1);

    let progress = progress_bar(work.len() as u64);
    let started = Instant::now();
    let writer = Mutex::new(writer);
    let write_error: Mutex<Option<anyhow::Error>> = Mutex::new(None);
    let skipped: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let on_done = |rec: &RunRecord| {
        if let Some(why) = &rec.point.skipped {
            let line = format!(
                "{} [{}] {}: skipped: {why}",
                rec.point.point_id,
                rec.point.mode.as_str(),
                rec.point.lock
            );
            progress.suspend(|| eprintln!("{line}"));
            skipped.lock().unwrap().push(line);
        }
        if let Err(e) = writer.lock().unwrap().write(rec) {
            write_error.lock().unwrap().get_or_insert(e.into());
        }
        progress.inc(1);
    };

    let t = super::Timing {
        duration_ns: plan.run.duration_ns,
        warmup_ns: plan.run.warmup_ns,
        repetitions: plan.run.repetitions,
    };
    // Simulated points in parallel (deterministic whatever the job count), then native
    // points one at a time: they own the machine while they run.
    let sim: Vec<(usize, u32)> = work
        .iter()
        .filter(|j| j.mode == Mode::Sim)
        .map(|j| (j.point, j.rep))
        .collect();
    if !sim.is_empty() {
        progress.set_message("simulating");
        locklab_runner::sim::run_points(plan, &sim, t.duration_ns, t.warmup_ns, jobs_n, &on_done);
    }
    let native: Vec<&Job> = work.iter().filter(|j| j.mode == Mode::Native).collect();
    if !native.is_empty() {
        progress.set_message("native");
        let opts = locklab_runner::native::NativeOptions::default();
        for j in native {
            let rec = locklab_runner::native::run_point(
                plan,
                &plan.points[j.point],
                j.rep,
                t.duration_ns,
                t.warmup_ns,
                &opts,
            );
            on_done(&rec);
        }
    }
    progress.finish_and_clear();
    if let Some(e) = write_error.into_inner().unwrap() {
        return Err(Failure::new(exit::RUN_FAILED, e.context("writing results")));
    }

    manifest.finished_utc = Some(util::utc_now());
    manifest.status = "complete".into();
    writer
        .into_inner()
        .unwrap()
        .finish(&manifest)
        .code(exit::RUN_FAILED)?;
    let skipped = skipped.into_inner().unwrap();
    eprintln!(
        "ran {} record{} ({} skipped) in {} → {}",
        work.len(),
        if work.len() == 1 { "" } else { "s" },
        skipped.len(),
        util::human_secs(started.elapsed().as_secs_f64()),
        dir.display()
    );
    check_and_report(dir, report, accept)
}

/// Evaluate the claims of a finished results directory, print the table, and render
/// the report. Returns the exit code the records and the claims call for.
pub fn check_and_report(dir: &Path, report: bool, accept: Accept) -> Result<i32> {
    let results = locklab_analysis::store::load_results(dir).code(exit::RUN_FAILED)?;
    let claims = locklab_analysis::claims::evaluate(&results.manifest.plan, &results);
    locklab_analysis::claims::write_claims_json(dir, &claims).code(exit::RUN_FAILED)?;
    if report {
        let summary = locklab_analysis::report::build_report(dir).code(exit::RUN_FAILED)?;
        eprintln!("report: {}", summary.index_html.display());
    }
    if claims.is_empty() {
        println!("no claims in this experiment");
    } else {
        print!("{}", locklab_analysis::claims::claims_table(&claims));
        let plan = &results.manifest.plan;
        if plan.run.repetitions <= 1 && claims.iter().any(|c| c.repetitions == 1) {
            println!(
                "note: {}",
                locklab_analysis::report::one_seed_note(results.manifest.quick)
            );
        }
    }
    let by_claims = exit::for_claims(&claims, accept);
    if by_claims == exit::UNDECIDED {
        eprintln!(
            "undecided: a gating claim is inconclusive, skipped or over noise-flagged points (exit {}; --accept-undecided accepts it)",
            exit::UNDECIDED
        );
    }
    let skips = locklab_analysis::pipeline::skipped_points(&results).code(exit::RUN_FAILED)?;
    let gating: BTreeSet<u32> = results
        .manifest
        .plan
        .claims
        .iter()
        .filter(|c| c.gating)
        .flat_map(locklab_analysis::claims::points_read)
        .collect();
    let pairs = jobs_for(
        &results.manifest.plan,
        &results.manifest.modes,
        results.manifest.shard,
    )
    .iter()
    .map(|j| (j.point, j.mode))
    .collect::<BTreeSet<_>>()
    .len();
    if let Some(v) = exit::for_skips(&skips, &gating, pairs) {
        let what = if v.code == exit::RUN_FAILED {
            "simulated deadlock"
        } else {
            "pinning impossible"
        };
        for line in &v.lines {
            eprintln!("error: {what}: {line}");
        }
        return Ok(v.code);
    }
    Ok(by_claims)
}

/// Every job of the plan, in a fixed order; with a shard, only the points whose
/// index falls in it (point i belongs to shard i mod n + 1).
pub fn jobs_for(plan: &Plan, modes: &[Mode], shard: Option<(u32, u32)>) -> Vec<Job> {
    let mut out = Vec::new();
    for &mode in modes {
        for p in &plan.points {
            // A point may run in fewer modes than the file (e.g. natively only up to
            // the host's core count).
            if !p.modes.is_empty() && !p.modes.contains(&mode) {
                continue;
            }
            if let Some((i, n)) = shard {
                if (p.index as u32 % n) + 1 != i {
                    continue;
                }
            }
            for rep in 0..plan.run.repetitions.max(1) {
                out.push(Job {
                    mode,
                    point: p.index,
                    rep,
                });
            }
        }
    }
    out
}

fn parse_shard(s: &str) -> Result<(u32, u32)> {
    let bad = || {
        Failure::new(
            exit::INVALID_INPUT,
            anyhow!("--shard expects I/N with 1 ≤ I ≤ N, got {s:?}"),
        )
    };
    let (i, n) = s.split_once('/').ok_or_else(bad)?;
    let (i, n): (u32, u32) = (
        i.trim().parse().map_err(|_| bad())?,
        n.trim().parse().map_err(|_| bad())?,
    );
    if n == 0 || i == 0 || i > n {
        return Err(bad());
    }
    Ok((i, n))
}

pub fn new_manifest(
    plan: Plan,
    modes: Vec<Mode>,
    quick: bool,
    overrides: Vec<(String, String)>,
    shard: Option<(u32, u32)>,
    argv: &[String],
) -> Manifest {
    Manifest {
        schema_version: MANIFEST_SCHEMA_VERSION,
        locklab_version: env!("CARGO_PKG_VERSION").to_string(),
        git_commit: Some(env!("LOCKLAB_GIT_COMMIT"))
            .filter(|s| !s.is_empty())
            .map(String::from),
        git_dirty: match env!("LOCKLAB_GIT_DIRTY") {
            "true" => Some(true),
            "false" => Some(false),
            _ => None,
        },
        rustc: Some(env!("LOCKLAB_RUSTC"))
            .filter(|s| !s.is_empty())
            .map(String::from),
        build_profile: env!("LOCKLAB_PROFILE").to_string(),
        command_line: argv.to_vec(),
        sources: plan.sources.clone(),
        master_seed: plan.master_seed,
        modes,
        quick,
        overrides,
        shard,
        started_utc: util::utc_now(),
        finished_utc: None,
        status: "running".into(),
        host: locklab_runner::host::detect(),
        plan,
    }
}

/// `results/<experiment>/<yyyymmdd-hhmmss>-<plan hash>`
fn default_dir(m: &Manifest) -> PathBuf {
    let plan_json = serde_json::to_vec(&m.plan).unwrap_or_default();
    let hash = Sha256::digest(&plan_json);
    let short: String = hash.iter().take(4).map(|b| format!("{b:02x}")).collect();
    PathBuf::from("results")
        .join(&m.plan.experiment)
        .join(format!("{}-{short}", util::stamp_now()))
}

fn progress_bar(len: u64) -> ProgressBar {
    // On a terminal: a bar with ETA. In pipes and CI: nothing until the summary.
    let target = if util::stderr_is_terminal() {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    };
    let bar = ProgressBar::with_draw_target(Some(len), target);
    bar.set_style(
        ProgressStyle::with_template(
            "{msg:>10} [{bar:40}] {pos}/{len} runs  {elapsed_precise} elapsed, ETA {eta}",
        )
        .expect("static template")
        .progress_chars("=> "),
    );
    bar
}
