//! One module per subcommand, plus what several of them share.

pub mod bench;
pub mod check;
pub mod compare;
pub mod docs;
pub mod interrupt;
pub mod latest;
pub mod merge;
pub mod out_dir;
pub mod plan;
pub mod report;
pub mod reproduce;
pub mod run;
pub mod slurm;
pub mod summary;
pub mod topo;
pub mod trace;

use crate::cli::LoadArgs;
use crate::exit::{self, Failure, Result};
use anyhow::anyhow;
use locklab_dsl::{FsLoader, LoadOptions};
use locklab_model::plan::{Mode, Plan};
use std::path::Path;

/// `--set axis=v1,v2` → ("axis", "v1,v2"). An axis set twice is refused: which
/// values were meant?
pub fn parse_overrides(set: &[String]) -> Result<Vec<(String, String)>> {
    let parsed: Vec<(String, String)> = set
        .iter()
        .map(|s| match s.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() && !v.trim().is_empty() => {
                Ok((k.trim().to_string(), v.trim().to_string()))
            }
            _ => Err(Failure::new(
                exit::INVALID_INPUT,
                anyhow!("--set expects AXIS=VALUES, got {s:?}"),
            )),
        })
        .collect::<Result<_>>()?;
    for (i, (k, v)) in parsed.iter().enumerate() {
        if let Some((_, first)) = parsed[..i].iter().find(|(k0, _)| k0 == k) {
            return Err(Failure::new(
                exit::INVALID_INPUT,
                anyhow!(
                    "--set {k} is given twice ({k}={first} and {k}={v}); give its values once: --set {k}={first},{v}"
                ),
            ));
        }
    }
    Ok(parsed)
}

/// The quick-start experiment, built in so that `locklab run` works anywhere.
pub const EMBEDDED_QUICKSTART: (&str, &str) = (
    "<built-in>/quickstart.lab",
    include_str!("../../experiments/quickstart.lab"),
);

/// Load and check a file (the built-in quick start by its pseudo path) under the
/// file policy: `use` and `matrix` read below the file's directory and `--include-dir`.
pub fn load_checked(file: &Path, args: &LoadArgs, quick: bool) -> Result<locklab_dsl::Checked> {
    let path = file.to_string_lossy().to_string();
    let opts = LoadOptions {
        overrides: parse_overrides(&args.set)?,
        quick,
        allow_huge: args.allow_huge,
    };
    Ok(if path == EMBEDDED_QUICKSTART.0 {
        let files = [(
            EMBEDDED_QUICKSTART.0.to_string(),
            EMBEDDED_QUICKSTART.1.to_string(),
        )];
        locklab_dsl::load(
            &path,
            &locklab_dsl::MemLoader(files.into_iter().collect()),
            &opts,
        )
    } else {
        let loader = FsLoader::for_experiment(file, &args.include_dirs);
        locklab_dsl::load(&path, &loader, &opts)
    })
}

/// Load and check an experiment; diagnostics go to stderr. `Ok(None)` for a library
/// file (no experiment block).
pub fn load_plan(file: &Path, args: &LoadArgs, quick: bool) -> Result<Option<Plan>> {
    let path = file.to_string_lossy().to_string();
    let checked = load_checked(file, args, quick)?;
    if !checked.diagnostics.is_empty() {
        eprint!(
            "{}",
            locklab_dsl::render(
                &checked.diagnostics,
                &checked.sources,
                crate::term::colour()
            )
        );
    }
    if checked.has_errors() {
        return Err(Failure::new(
            exit::INVALID_INPUT,
            anyhow!("{path}: the experiment has errors"),
        ));
    }
    Ok(checked.plan)
}

/// Load a file that must be an experiment (not a library).
pub fn load_experiment(file: &Path, args: &LoadArgs, quick: bool) -> Result<Plan> {
    load_plan(file, args, quick)?.ok_or_else(|| {
        Failure::new(
            exit::INVALID_INPUT,
            anyhow!(
                "{}: no experiment block (a library file can be checked, not run)",
                file.display()
            ),
        )
    })
}

/// Durations and repetitions actually used, after `--quick`.
pub use locklab_model::cost::Timing;

pub fn timing(plan: &Plan, quick: bool) -> Timing {
    Timing::of(&plan.run, quick)
}

/// Rewrite the plan's run section so the manifest records what actually ran.
pub fn apply_timing(plan: &mut Plan, t: Timing) {
    plan.run.duration_ns = t.duration_ns;
    plan.run.warmup_ns = t.warmup_ns;
    plan.run.repetitions = t.repetitions;
}

/// Rough wall-time estimate per mode, seconds (`locklab_model::cost`); simulated
/// points share `jobs` cores.
pub fn estimate_secs(plan: &Plan, t: Timing, mode: Mode, jobs: usize) -> f64 {
    let one_job = locklab_model::cost::estimate_secs(&plan.points, t, mode);
    match mode {
        Mode::Sim => one_job / jobs.max(1) as f64,
        Mode::Native => one_job,
    }
}

/// Modes to run: the flag, else what the file asks for.
pub fn modes(plan: &Plan, flag: Option<crate::cli::ModeArg>) -> Vec<Mode> {
    use crate::cli::ModeArg;
    match flag {
        Some(ModeArg::Sim) => vec![Mode::Sim],
        Some(ModeArg::Native) => vec![Mode::Native],
        Some(ModeArg::Both) => vec![Mode::Sim, Mode::Native],
        None => plan.run.modes.clone(),
    }
}
