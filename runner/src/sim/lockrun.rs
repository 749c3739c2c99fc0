//! Lock workloads (single, double, bulk) simulated through the shared lock and
//! workload code: `workload::build` allocates the point's lines, each thread runs
//! `workload::run_thread` over its [`SimEnv`](super::SimEnv), and the records come
//! from the same `stats::summarize` the native executor uses.

use super::engine::{Machine, Outcome, SimConfig};
use super::rng::{mix, SplitMix64};
use crate::env::LineAlloc;
use crate::locks::LocalState;
use crate::stats::{self, RunContext, ThreadStats, Window};
use crate::workload;
use locklab_model::plan::{Costs, LockAlgo, Point, Workload};
use locklab_model::records::RunRecord;
use locklab_model::topology::{CpuMap, ThreadSlot};
use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;

/// Windowed fairness for CNA: windows of 100 thresholds (CLAIMS.md, seed 004), the
/// horizon over which its starvation bound is meant to even things out. Other locks: 0
/// (disabled).
pub fn fairness_window_ns(point: &Point) -> u64 {
    match &point.lock.algo {
        LockAlgo::Cna(p) => p.threshold_ns.saturating_mul(100),
        _ => 0,
    }
}

/// Threads start at independent uniform offsets within one nominal cycle of the
/// workload (at least 1 µs): real threads never start in lock step, and with a FIFO
/// lock and fixed durations the first arrival order would otherwise persist for the
/// whole run (thread index order, which is socket order under every placement).
pub fn start_offsets(point: &Point, seed: u64) -> Vec<u64> {
    let cycle = match &point.workload {
        Workload::SingleLock {
            critical, outside, ..
        } => critical.mean_ns() + outside.mean_ns(),
        Workload::DoubleLock { interval, .. } => interval.mean_ns(),
        Workload::Bulk { think, .. } => think.mean_ns(),
        Workload::Wakeup(_) => 0.0,
    };
    let spread = (cycle as u64).max(1_000);
    let mut r = SplitMix64::new(mix(seed, u64::MAX));
    (0..point.threads).map(|_| r.range(0, spread - 1)).collect()
}

/// The per-thread seeds of a repetition.
pub fn thread_seeds(seed: u64, threads: usize) -> Vec<u64> {
    (0..threads as u64).map(|t| mix(seed, t)).collect()
}

/// Everything a simulated lock point produced, before summarising.
pub(crate) struct Raw {
    pub stats: Vec<ThreadStats>,
    pub ops: u64,
    pub outcome: Outcome,
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn simulate(
    point: &Point,
    map: &CpuMap,
    costs: &Costs,
    slots: &[ThreadSlot],
    duration_ns: u64,
    warmup_ns: u64,
    seed: u64,
    config: &SimConfig,
) -> Raw {
    let mut alloc = LineAlloc::new();
    let locks = workload::build(point, &mut alloc);
    let classes = workload::classes(&point.workload);
    let class_refs: Vec<&str> = classes.iter().map(String::as_str).collect();
    let window = Window {
        start_ns: warmup_ns,
        end_ns: warmup_ns + duration_ns,
    };
    let fw = fairness_window_ns(point);
    let mut stats: Vec<ThreadStats> = slots
        .iter()
        .map(|s| ThreadStats::new(map.cpus[s.cpu].os_id, s.node, window, &class_refs, fw))
        .collect();
    let n = slots.len();
    let machine = Machine::new(
        map,
        costs,
        slots,
        alloc.count(),
        thread_seeds(seed, n),
        config,
    );
    let envs: Vec<_> = (0..n).map(|t| machine.env(t)).collect();
    let ops: Vec<Cell<u64>> = (0..n).map(|_| Cell::new(0)).collect();
    let starts = start_offsets(point, seed);
    let w = &point.workload;
    let locks = &locks;
    let outcome = {
        let mut futs: Vec<Pin<Box<dyn Future<Output = ()> + '_>>> = envs
            .iter()
            .zip(stats.iter_mut())
            .zip(ops.iter())
            .enumerate()
            .map(|(t, ((env, st), op))| {
                Box::pin(async move {
                    let mut local = LocalState::new(t, locks.len());
                    let done =
                        workload::run_thread(w, locks, env, &mut local, st, window.end_ns).await;
                    op.set(done);
                }) as Pin<Box<dyn Future<Output = ()>>>
            })
            .collect();
        machine.run_from(&mut futs, &starts, window.end_ns)
    };
    // Threads still running at the end have counted their operations in `stats`
    // but not returned them: count class acquisitions inside the window instead
    // when the workload's operations are acquisitions.
    let returned: u64 = ops.iter().map(Cell::get).sum();
    let ops = if outcome.finished == n {
        returned
    } else {
        stats.iter().map(|s| s.total_acquisitions()).sum()
    };
    Raw {
        stats,
        ops,
        outcome,
    }
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn run(
    mut ctx: RunContext,
    point: &Point,
    map: &CpuMap,
    costs: &Costs,
    slots: &[ThreadSlot],
    duration_ns: u64,
    warmup_ns: u64,
    seed: u64,
) -> RunRecord {
    let raw = simulate(
        point,
        map,
        costs,
        slots,
        duration_ns,
        warmup_ns,
        seed,
        &SimConfig::default(),
    );
    if raw.outcome.deadlocked {
        return stats::skipped(
            &ctx,
            point.threads,
            format!(
                "the simulated threads deadlocked at {} ns (every thread waiting on a line \
                 no one will write)",
                raw.outcome.end_ns
            ),
        );
    }
    ctx.ops = Some(raw.ops);
    ctx.extra
        .insert("sim_events".into(), raw.outcome.counters.events as f64);
    stats::summarize(&ctx, &raw.stats)
}
