//! What a plan may ask for, and what it costs: the limits the language enforces
//! on every resource, and the estimate of a run's work that `plan` prints and
//! `check` bounds.
//!
//! The limits keep every accepted experiment runnable: memory and time grow with
//! these numbers, and none of the shipped experiments comes near them.

use crate::plan::{Dist, Mode, Point, RunSpec, Workload};

/// CPUs a modelled machine may have; CPU ids in a placement are below this.
pub const MAX_CPUS: u32 = 1 << 16;
/// Threads one simulated point may have: the width of the simulator's sharer sets.
pub const MAX_SIM_THREADS: u32 = 256;
/// Threads one point may have in any mode (one OS thread each when native).
pub const MAX_THREADS: u32 = 4_096;
/// Repetitions of every point, and quick repetitions.
pub const MAX_REPETITIONS: u32 = 10_000;
/// Shared cache lines a workload writes while holding a lock.
pub const MAX_LINES: u32 = 1_024;
/// Items of one bulk request.
pub const MAX_BULK_ITEMS: u32 = 100_000;
/// Workers, hogs and hog groups of a wake-up workload (each a simulated task).
pub const MAX_WAKEUP_TASKS: u32 = 4_096;
/// Virtual NUMA node ids run from 0 to this minus one (at most one node per
/// simulated thread is ever needed).
pub const MAX_VIRTUAL_NODES: u32 = MAX_SIM_THREADS;
/// Claims, and plots, of one experiment (each is resolved against every point).
pub const MAX_CLAIMS: usize = 1_000;
pub const MAX_PLOTS: usize = 1_000;
/// A run may be estimated to take at most this long in one mode (simulation on one
/// core) unless the user insists (`--allow-huge`).
pub const MAX_ESTIMATED_SECS: f64 = 24.0 * 3600.0;
/// Simulated operations per second one core is assumed to manage.
pub const SIM_OPS_PER_SEC: f64 = 5e6;
/// What one simulated record costs besides its operations: setting the point up,
/// summarising it, writing its part (2,000 records of 1 µs: 2.5 s on a 2-core VM,
/// which the operations alone put at 0.0 s).
pub const SIM_SECS_PER_RECORD: f64 = 1e-3;

/// Durations and repetitions a run uses (after `--quick`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    pub duration_ns: u64,
    pub warmup_ns: u64,
    pub repetitions: u32,
}

impl Timing {
    /// What a run of `run` uses, with `--quick` or without.
    pub fn of(run: &RunSpec, quick: bool) -> Timing {
        if quick {
            Timing {
                duration_ns: run.quick_duration_ns.min(run.duration_ns),
                warmup_ns: run.quick_warmup_ns.min(run.warmup_ns),
                repetitions: run.quick_repetitions.clamp(1, run.repetitions.max(1)),
            }
        } else {
            Timing {
                duration_ns: run.duration_ns,
                warmup_ns: run.warmup_ns,
                repetitions: run.repetitions.max(1),
            }
        }
    }
}

/// Estimated wall time, in seconds, of `points` in `mode` on one job: natively each
/// repetition runs for warm-up + duration plus start-up; simulated, the operations
/// the points ask for over [`SIM_OPS_PER_SEC`], plus [`SIM_SECS_PER_RECORD`] a
/// record.
pub fn estimate_secs<'a>(
    points: impl IntoIterator<Item = &'a Point>,
    t: Timing,
    mode: Mode,
) -> f64 {
    let per_rep_s = (t.duration_ns + t.warmup_ns) as f64 / 1e9;
    let reps = f64::from(t.repetitions.max(1));
    let points = points
        .into_iter()
        .filter(|p| p.modes.is_empty() || p.modes.contains(&mode));
    match mode {
        Mode::Native => points.count() as f64 * reps * (per_rep_s + 0.02),
        Mode::Sim => {
            let (mut ops, mut records) = (0.0, 0.0);
            for p in points {
                ops += sim_ops_per_sec(p) * per_rep_s * reps;
                records += reps;
            }
            ops / SIM_OPS_PER_SEC + records * SIM_SECS_PER_RECORD
        }
    }
}

/// Simulated operations per simulated second of one point: lock operations times
/// the lines each writes; for a wake-up workload, the wake-ups of every task.
fn sim_ops_per_sec(p: &Point) -> f64 {
    let threads = f64::from(p.threads);
    match &p.workload {
        Workload::Wakeup(w) => {
            let tasks = f64::from(w.workers.max(p.threads)) + f64::from(w.hogs);
            let cycle = (w.burst.mean_ns() + w.sleep.mean_ns()).max(1_000.0);
            tasks / cycle * 1e9
        }
        w => {
            let (cycle, lines) = cycle_ns(w);
            // A saturated lock serialises: at most one critical section at a time.
            let ops = (threads / cycle.max(50.0)).min(1.0 / 60.0) * 1e9;
            ops * (1.0 + f64::from(lines))
        }
    }
}

/// Mean ns between two acquisitions of one thread, and lines written per operation.
fn cycle_ns(w: &Workload) -> (f64, u32) {
    let mean = Dist::mean_ns;
    match w {
        Workload::SingleLock {
            critical,
            outside,
            lines,
        } => (mean(critical) + mean(outside), *lines),
        Workload::DoubleLock {
            interval,
            own_hold,
            pair_hold,
            lines,
            ..
        } => (
            mean(interval) + mean(own_hold) + mean(pair_hold),
            lines.saturating_mul(2),
        ),
        Workload::Bulk {
            per_item,
            think,
            lines,
            mix,
            ..
        } => {
            let items = mix.iter().map(|c| c.items).max().unwrap_or(1).max(1);
            (
                mean(per_item) * f64::from(items) + mean(think),
                lines.saturating_mul(items),
            )
        }
        Workload::Wakeup(w) => (mean(&w.burst) + mean(&w.sleep), 0),
    }
}
