//! One module per subcommand, plus what several of them share.

pub mod bench;
pub mod check;
pub mod compare;
pub mod merge;
pub mod plan;
pub mod report;
pub mod reproduce;
pub mod run;
pub mod topo;

use crate::exit::{self, Failure, Result};
use anyhow::anyhow;
use locklab_dsl::{FsLoader, LoadOptions};
use locklab_model::plan::{Mode, Plan};
use std::path::Path;

/// `--set axis=v1,v2` → ("axis", "v1,v2").
pub fn parse_overrides(set: &[String]) -> Result<Vec<(String, String)>> {
    set.iter()
        .map(|s| match s.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() && !v.trim().is_empty() => {
                Ok((k.trim().to_string(), v.trim().to_string()))
            }
            _ => Err(Failure::new(
                exit::INVALID_INPUT,
                anyhow!("--set expects AXIS=VALUES, got {s:?}"),
            )),
        })
        .collect()
}

/// The quick-start experiment, built in so that `locklab run` works anywhere.
pub const EMBEDDED_QUICKSTART: (&str, &str) = (
    "<built-in>/quickstart.lab",
    include_str!("../../experiments/quickstart.lab"),
);

/// Load and check a file (the built-in quick start by its pseudo path).
pub fn load_checked(file: &Path, overrides: &[(String, String)]) -> locklab_dsl::Checked {
    let path = file.to_string_lossy().to_string();
    let opts = LoadOptions {
        overrides: overrides.to_vec(),
    };
    if path == EMBEDDED_QUICKSTART.0 {
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
        locklab_dsl::load(&path, &FsLoader, &opts)
    }
}

/// Load and check an experiment; diagnostics go to stderr. `Ok(None)` for a library
/// file (no experiment block).
pub fn load_plan(file: &Path, overrides: &[(String, String)]) -> Result<Option<Plan>> {
    let path = file.to_string_lossy().to_string();
    let checked = load_checked(file, overrides);
    if !checked.diagnostics.is_empty() {
        eprint!(
            "{}",
            locklab_dsl::render(
                &checked.diagnostics,
                &checked.sources,
                crate::util::stderr_is_terminal()
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
pub fn load_experiment(file: &Path, overrides: &[(String, String)]) -> Result<Plan> {
    load_plan(file, overrides)?.ok_or_else(|| {
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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    pub duration_ns: u64,
    pub warmup_ns: u64,
    pub repetitions: u32,
}

pub fn timing(plan: &Plan, quick: bool) -> Timing {
    let r = &plan.run;
    if quick {
        Timing {
            duration_ns: r.quick_duration_ns.min(r.duration_ns),
            warmup_ns: r.quick_warmup_ns.min(r.warmup_ns),
            repetitions: r.quick_repetitions.clamp(1, r.repetitions.max(1)),
        }
    } else {
        Timing {
            duration_ns: r.duration_ns,
            warmup_ns: r.warmup_ns,
            repetitions: r.repetitions.max(1),
        }
    }
}

/// Rewrite the plan's run section so the manifest records what actually ran.
pub fn apply_timing(plan: &mut Plan, t: Timing) {
    plan.run.duration_ns = t.duration_ns;
    plan.run.warmup_ns = t.warmup_ns;
    plan.run.repetitions = t.repetitions;
}

/// Rough wall-time estimate per mode, seconds.
///
/// Native: every repetition of every point runs for warm-up + duration, plus start-up.
/// Simulated: simulated lock operations over an assumed 5 M operations per second per
/// job (the simulator's target speed); the workload's mean cycle gives the rate.
pub fn estimate_secs(plan: &Plan, t: Timing, mode: Mode, jobs: usize) -> f64 {
    let per_rep_s = (t.duration_ns + t.warmup_ns) as f64 / 1e9;
    let points = plan
        .points
        .iter()
        .filter(|p| p.modes.is_empty() || p.modes.contains(&mode));
    match mode {
        Mode::Native => points.count() as f64 * t.repetitions as f64 * (per_rep_s + 0.02),
        Mode::Sim => {
            let ops: f64 = points
                .map(|p| {
                    let cycle = cycle_ns(&p.workload).max(50.0);
                    // A saturated lock serialises: at most one critical section at a time.
                    let rate = (p.threads as f64 / cycle).min(1.0 / 60.0) * 1e9;
                    rate * per_rep_s * t.repetitions as f64
                })
                .sum();
            ops / 5e6 / jobs.max(1) as f64
        }
    }
}

fn cycle_ns(w: &locklab_model::plan::Workload) -> f64 {
    use locklab_model::plan::Workload;
    match w {
        Workload::SingleLock {
            critical, outside, ..
        } => critical.mean_ns() + outside.mean_ns(),
        Workload::DoubleLock {
            interval,
            own_hold,
            pair_hold,
            ..
        } => interval.mean_ns() + own_hold.mean_ns() + pair_hold.mean_ns(),
        Workload::Bulk {
            per_item, think, ..
        } => per_item.mean_ns() * 16.0 + think.mean_ns(),
        Workload::Wakeup(w) => w.burst.mean_ns() + w.sleep.mean_ns(),
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
