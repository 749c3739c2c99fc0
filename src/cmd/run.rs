//! `locklab run FILE`: execute the plan, store the records, check the claims, render
//! the report.

use super::{apply_timing, modes, summary, timing};
use crate::cli::{Format, RunArgs};
use crate::exit::{self, Accept, Failure, Result, WithCode};
use crate::util;
use anyhow::anyhow;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use locklab_analysis::store::{self, ResultsWriter};
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
    // Held until the process ends: no other locklab writes into the directory
    // meanwhile.
    let (manifest, dir, done, _lock) = match &args.resume {
        Some(dir) => {
            let lock = open_results(dir)?;
            let manifest = store::read_manifest(dir).code(exit::INVALID_INPUT)?;
            refuse_an_interrupted_merge(dir, &manifest)?;
            refuse_a_different_run(args, dir, &manifest)?;
            let expected: BTreeSet<store::RecordKey> =
                jobs_for(&manifest.plan, &manifest.modes, manifest.shard)
                    .iter()
                    .map(|j| (j.point as u32, j.mode, j.rep))
                    .collect();
            let store::CheckedParts { done, removed } =
                store::check_parts(dir, &expected).code(exit::RUN_FAILED)?;
            for (path, why) in &removed {
                eprintln!("warning: removed {}: {why}", path.display());
            }
            eprintln!(
                "resuming {}: {} of {} records already done",
                dir.display(),
                done.len(),
                expected.len()
            );
            (manifest, dir.clone(), done, lock)
        }
        None => {
            let overrides = super::parse_overrides(&args.load.set)?;
            let file = args
                .file
                .clone()
                .unwrap_or_else(|| PathBuf::from(super::EMBEDDED_QUICKSTART.0));
            let mut plan = super::load_experiment(&file, &args.load, args.quick)?;
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
            let (dir, lock) = match &args.out {
                Some(dir) => (dir.clone(), super::out_dir::claim(dir, args.force, [])?),
                None => {
                    let (parent, name) = default_dir(&manifest);
                    super::out_dir::create_unique(&parent, &name)?
                }
            };
            (manifest, dir, BTreeSet::new(), lock)
        }
    };
    let _interrupt = super::interrupt::watch(&dir);
    let accept = args.accept.accept();
    execute(
        manifest,
        &dir,
        &done,
        args.jobs,
        !args.no_report,
        accept,
        args.format,
    )
}

/// Lock an existing results directory for writing: exit 2 when it is not one (no
/// manifest) or another locklab is writing there.
pub fn open_results(dir: &Path) -> Result<super::out_dir::DirLock> {
    if !dir.join(store::MANIFEST_FILE).is_file() {
        return Err(Failure::new(
            exit::INVALID_INPUT,
            anyhow!(
                "{} is not a results directory (no manifest.yaml)",
                dir.display()
            ),
        ));
    }
    super::out_dir::lock(dir)
}

/// A merge that was cut short is finished by merging again, not by resuming or
/// reporting: its shards hold the records.
pub fn refuse_an_interrupted_merge(dir: &Path, m: &Manifest) -> Result<()> {
    if m.status != store::MERGING {
        return Ok(());
    }
    let shards: Vec<String> = m
        .shards
        .iter()
        .map(|s| super::slurm::shell_quote(&s.dir))
        .collect();
    Err(Failure::new(
        exit::INVALID_INPUT,
        anyhow!(
            "{0} is a merge that did not finish (status `{1}`); merge again over it: `locklab merge {2} --out {0} --force`",
            dir.display(),
            m.status,
            if shards.is_empty() { "SHARD_DIR...".to_string() } else { shards.join(" ") }
        ),
    ))
}

/// `--resume DIR` continues the run the manifest describes. A file, `--quick`,
/// `--set`, `--mode` or `--shard` given beside it that says otherwise, or a source
/// edited since, is refused: the result would mix two experiments.
fn refuse_a_different_run(args: &RunArgs, dir: &Path, m: &Manifest) -> Result<()> {
    let mut differs = Vec::new();
    if let (Some(file), Some(main)) = (&args.file, m.sources.first()) {
        let same = match (
            std::fs::canonicalize(file),
            std::fs::canonicalize(&main.path),
        ) {
            (Ok(a), Ok(b)) => a == b,
            _ => *file == Path::new(&main.path),
        };
        if !same {
            differs.push(format!(
                "the file is {}, the run's is {}",
                file.display(),
                main.path
            ));
        }
    }
    for src in &m.sources {
        if let Some(now) = sha256_of(Path::new(&src.path)) {
            if now != src.sha256 {
                differs.push(format!("{} was edited since the run", src.path));
            }
        }
    }
    if args.quick && !m.quick {
        differs.push("--quick, but the run was not quick".into());
    }
    if !args.load.set.is_empty() {
        let set = super::parse_overrides(&args.load.set)?;
        if set != m.overrides {
            differs.push(format!(
                "--set {}, but the run had {}",
                show_overrides(&set),
                show_overrides(&m.overrides)
            ));
        }
    }
    if args.mode.is_some() {
        let asked = modes(&m.plan, args.mode);
        if asked != m.modes {
            let names = |ms: &[Mode]| ms.iter().map(|m| m.as_str()).collect::<Vec<_>>().join("+");
            differs.push(format!(
                "--mode {}, but the run's modes are {}",
                names(&asked),
                names(&m.modes)
            ));
        }
    }
    if let Some(s) = &args.shard {
        if Some(parse_shard(s)?) != m.shard {
            differs.push(format!("--shard {s}, but the run is not that shard"));
        }
    }
    if differs.is_empty() {
        return Ok(());
    }
    Err(Failure::new(
        exit::INVALID_INPUT,
        anyhow!(
            "cannot resume {}: {}; resume without them to finish the run as it was started, or start a new run",
            dir.display(),
            differs.join("; ")
        ),
    ))
}

fn show_overrides(o: &[(String, String)]) -> String {
    if o.is_empty() {
        return "none".into();
    }
    o.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// SHA-256 of a source file as the run recorded it; `None` when it cannot be read
/// (gone, or the built-in quick start): the stored plan is what resumes.
fn sha256_of(path: &Path) -> Option<String> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .ok()?
        .take(locklab_dsl::MAX_MATRIX_BYTES + 1)
        .read_to_end(&mut bytes)
        .ok()?;
    Some(
        Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect(),
    )
}

/// Run what is left of `manifest` into `dir`, then check the claims and report.
/// The manifest says `complete` only once everything is written.
pub fn execute(
    manifest: Manifest,
    dir: &Path,
    done: &BTreeSet<(u32, Mode, u32)>,
    jobs: Option<usize>,
    report: bool,
    accept: Accept,
    format: Format,
) -> Result<i32> {
    // Every write into `dir` from here on is done uninterrupted: an interruption
    // cleans up between writes, never beside one (`interrupt`).
    let writer = super::interrupt::uninterrupted(|| -> Result<ResultsWriter> {
        if done.is_empty() && !dir.join(store::MANIFEST_FILE).exists() {
            ResultsWriter::create(dir, &manifest).code(exit::RUN_FAILED)
        } else {
            let (w, _, _) = ResultsWriter::resume(dir).code(exit::RUN_FAILED)?;
            store::set_status(dir, "running").code(exit::RUN_FAILED)?;
            Ok(w)
        }
    })?;
    let plan = &manifest.plan;
    // Simulated beside native points, the costs should be this CPU's.
    if manifest.modes.contains(&Mode::Sim) && manifest.modes.contains(&Mode::Native) {
        let elsewhere = plan
            .topology
            .costs()
            .and_then(|c| c.measured_elsewhere(&manifest.host));
        if let Some(why) = elsewhere {
            eprintln!("warning: {why}");
        }
    }
    let work: Vec<Job> = jobs_for(plan, &manifest.modes, manifest.shard)
        .into_iter()
        .filter(|j| !done.contains(&(j.point as u32, j.mode, j.rep)))
        .collect();
    // More simulation jobs than cores or than records to run only adds threads.
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let jobs_n = jobs.unwrap_or(cores).clamp(1, cores.min(work.len().max(1)));

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
        if let Err(e) = super::interrupt::uninterrupted(|| writer.lock().unwrap().write(rec)) {
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
    let writer = writer.into_inner().unwrap();
    let write_error = write_error.into_inner().unwrap();
    super::interrupt::uninterrupted(|| {
        if let Some(e) = write_error {
            return Err(failed(dir, Failure::new(exit::RUN_FAILED, e)));
        }
        writer
            .write_tables(&manifest)
            .code(exit::RUN_FAILED)
            .map_err(|f| failed(dir, f))
    })?;
    let skipped = skipped.into_inner().unwrap();
    eprintln!(
        "ran {} record{} ({} skipped) in {} → {}",
        work.len(),
        if work.len() == 1 { "" } else { "s" },
        skipped.len(),
        util::human_secs(started.elapsed().as_secs_f64()),
        dir.display()
    );
    if let Some((i, n)) = manifest.shard {
        super::interrupt::uninterrupted(|| store::set_status(dir, "complete"))
            .code(exit::RUN_FAILED)?;
        match format {
            Format::Text => println!("shard {i}/{n} done; claims are evaluated by merge"),
            Format::Json => println!(
                "{}",
                serde_json::json!({ "run": 1, "dir": dir, "status": "complete",
                    "shard": [i, n], "exit_code": exit::OK, "claims": [] })
            ),
        }
        return Ok(exit::OK);
    }
    finish_as(dir, report, accept, format)
}

/// Evaluate the claims of a results directory whose records are all there, write
/// claims.json and (with `report`) the report, then mark the run `complete`; print
/// the claims table. Returns the exit code the records and the claims call for. A
/// failure to write marks the run `failed: ...` (as far as the disk allows) and is
/// exit 3. The writing is done uninterrupted: Ctrl-C meanwhile waits for it.
pub fn finish(dir: &Path, report: bool, accept: Accept) -> Result<i32> {
    finish_as(dir, report, accept, Format::Text)
}

/// [`finish`], printing the outcome as `format` asks.
pub fn finish_as(dir: &Path, report: bool, accept: Accept, format: Format) -> Result<i32> {
    let write = || -> locklab_analysis::Result<_> {
        // Rewriting the claims and the report of a complete run: until they are all
        // written again, it is not complete (an interruption leaves `running`, which
        // `report` finishes). The finish time of the run is kept.
        let mut m = store::read_manifest(dir)?;
        if m.status != "running" {
            m.status = "running".into();
            store::write_manifest(dir, &m)?;
        }
        let mut results = store::load_results(dir)?;
        // The report shows the manifest as it will be once everything is written.
        results.manifest.status = "complete".into();
        let finished =
            (results.manifest.finished_utc.clone()).unwrap_or_else(locklab_analysis::now_utc);
        results.manifest.finished_utc = Some(finished);
        let claims = locklab_analysis::claims::evaluate(&results.manifest.plan, &results);
        let index = if report {
            let summary = locklab_analysis::report::build_report_with(&results, claims.clone())?;
            Some(summary.index_html)
        } else {
            locklab_analysis::claims::write_claims_json(dir, &claims)?;
            None
        };
        // Last: the records, tables, claims and report are all written.
        store::write_manifest(dir, &results.manifest)?;
        Ok((results, claims, index))
    };
    let (results, claims, index) = super::interrupt::uninterrupted(|| {
        let written = write().code(exit::RUN_FAILED).map_err(|f| failed(dir, f))?;
        // `latest` beside the run, replaced by a rename: not left half made either.
        if let Err(e) = super::latest::mark(dir, &written.0.manifest.plan.experiment) {
            eprintln!("warning: {e}");
        }
        Ok::<_, Failure>(written)
    })?;
    if let Some(index) = index {
        eprintln!("report: {}", index.display());
    }
    let flags = summary::noise_flags(&results);
    if let Some(line) = summary::noise_line(&results, &flags) {
        eprintln!("{line}");
    }
    if let Ok(Some(line)) = locklab_analysis::pipeline::placement_note(&results) {
        eprintln!("warning: {line}");
    }
    let code = exit_code(&results, &claims, accept)?;
    match format {
        Format::Json => println!(
            "{}",
            serde_json::to_string_pretty(&summary::run_json(dir, &results, &claims, code))
                .unwrap_or_default()
        ),
        Format::Text if claims.is_empty() => println!("no claims in this experiment"),
        Format::Text => {
            print!(
                "{}",
                locklab_analysis::claims::claims_table(&claims, crate::term::width())
            );
            let plan = &results.manifest.plan;
            if plan.run.repetitions <= 1 && claims.iter().any(|c| c.repetitions == 1) {
                println!(
                    "note: {}",
                    locklab_analysis::report::one_seed_note(results.manifest.quick)
                );
            }
        }
    }
    Ok(code)
}

/// The exit code the records and the claims of a finished run call for: a simulated
/// deadlock (3) or pinning refused for the gating points (4) first, then the claims'
/// (1, 5 or 0), with the reasons on stderr.
fn exit_code(
    results: &store::Results,
    claims: &[locklab_analysis::claims::ClaimResult],
    accept: Accept,
) -> Result<i32> {
    let by_claims = exit::for_claims(claims, accept);
    let skips = locklab_analysis::pipeline::skipped_points(results).code(exit::RUN_FAILED)?;
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
        use locklab_model::records::SkipCause;
        // The causes of `v.lines`, in their order: the points `for_skips` names.
        let causes: Vec<Option<SkipCause>> = if v.code == exit::RUN_FAILED {
            vec![Some(SkipCause::Deadlock); v.lines.len()]
        } else {
            skips
                .iter()
                .filter(|s| match s.cause {
                    Some(SkipCause::Pinning) => true,
                    Some(SkipCause::Host) => s.mode == Mode::Native.as_str(),
                    _ => false,
                })
                .filter(|s| v.all || gating.contains(&s.point))
                .map(|s| s.cause)
                .collect()
        };
        let (mut pinning, mut host) = (false, false);
        for (i, line) in v.lines.iter().enumerate() {
            let what = match causes.get(i).copied().flatten() {
                Some(SkipCause::Deadlock) => "simulated deadlock",
                Some(SkipCause::Host) => {
                    host = true;
                    "placement beyond this host"
                }
                _ => {
                    pinning = true;
                    "pinning impossible"
                }
            };
            eprintln!("error: {what}: {line}");
        }
        // The last line says what the exit code means.
        if v.code == exit::ENVIRONMENT {
            let points = if v.all {
                "any point of the run"
            } else {
                "the points a gating claim reads"
            };
            let why = match (pinning, host) {
                (false, true) => {
                    format!("this machine lacks the CPUs or nodes the placement needs for {points}")
                }
                (true, true) => format!(
                    "this machine cannot pin, or lacks the CPUs or nodes the placement needs for, {points}"
                ),
                _ => format!("this machine cannot pin {points}"),
            };
            eprintln!("environment refused: {why} (exit {})", exit::ENVIRONMENT);
        }
        return Ok(v.code);
    }
    if by_claims == exit::UNDECIDED {
        eprintln!(
            "undecided: a gating claim is inconclusive, skipped or over noise-flagged points (exit {}; --accept-undecided accepts it)",
            exit::UNDECIDED
        );
    }
    Ok(by_claims)
}

/// Record in the manifest why the run failed, if the disk still lets us. Called
/// inside [`super::interrupt::uninterrupted`], as every manifest write is.
fn failed(dir: &Path, f: Failure) -> Failure {
    let _ = store::set_status(dir, &format!("failed: {}", f.error));
    f
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

/// The command as typed, with the program named by its file name: a results
/// directory is shared and kept (`experiments/measured/`), and the path to the binary
/// says only where one machine keeps it (the build itself is in `git_commit`,
/// `rustc` and `build_profile`).
fn portable_command_line(argv: &[String]) -> Vec<String> {
    let mut line = argv.to_vec();
    if let Some(program) = line.first_mut() {
        if let Some(name) = std::path::Path::new(program.as_str()).file_name() {
            *program = name.to_string_lossy().into_owned();
        }
    }
    line
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
        command_line: portable_command_line(argv),
        sources: plan.sources.clone(),
        master_seed: plan.master_seed,
        modes,
        quick,
        overrides,
        shard,
        started_utc: util::utc_now(),
        nonce: util::nonce(),
        finished_utc: None,
        status: "running".into(),
        host: locklab_runner::host::detect(),
        plan,
        shards: Vec::new(),
    }
}

/// `results/<experiment>` and `<yyyymmdd-hhmmss>-<plan hash>`: where a run goes
/// without `--out` (with `-2`, `-3`, ... when that exists: [`super::out_dir::create_unique`]).
fn default_dir(m: &Manifest) -> (PathBuf, String) {
    let plan_json = serde_json::to_vec(&m.plan).unwrap_or_default();
    let hash = Sha256::digest(&plan_json);
    let short: String = hash.iter().take(4).map(|b| format!("{b:02x}")).collect();
    (
        PathBuf::from("results").join(&m.plan.experiment),
        format!("{}-{short}", util::stamp_now()),
    )
}

fn progress_bar(len: u64) -> ProgressBar {
    // On a terminal: a bar with ETA. In pipes, CI, NO_COLOR or TERM=dumb: nothing
    // until the summary.
    let target = if crate::term::animate() {
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
