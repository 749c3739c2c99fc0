//! Lock workloads (single, double, bulk) simulated through the shared lock and
//! workload code: `with_lock` picks the point's lock type once, `Locks::build`
//! allocates the point's lines, each thread runs `workload::run_thread` over its
//! [`SimEnv`](super::SimEnv), and the records come from the same `stats::summarize`
//! the native executor uses.

use super::engine::{Machine, Outcome};
use super::Job;
use crate::env::{Env, LineAlloc};
use crate::locks::{with_lock, LocalState, Lock, LockVisitor, Site};
use crate::rng::{mix, SplitMix64};
use crate::stats::{self, RunContext, ThreadStats, Window};
use crate::workload::{self, Locks, Shape};
use locklab_model::plan::Workload;
use locklab_model::records::{RunRecord, SkipCause, PAIR_TRANSFER};
use locklab_model::topology::ThreadSlot;
use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;

/// Threads start at independent uniform offsets within one nominal cycle of the
/// workload (`Shape::cycle_ns`, at least 1 µs): real threads never start in lock step,
/// and with a FIFO lock and fixed durations the first arrival order would otherwise
/// persist for the whole run (thread index order, which is socket order under every
/// placement).
pub fn start_offsets(shape: &Shape, threads: u32, seed: u64) -> Vec<u64> {
    let spread = (shape.cycle_ns as u64).max(1_000);
    let mut r = SplitMix64::new(mix(seed, u64::MAX));
    (0..threads).map(|_| r.range(0, spread - 1)).collect()
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
    /// The requests of `Job::trace`'s window, if it asked for one.
    pub trace: Vec<super::TraceEvent>,
    /// How many lines the locks themselves use: lines from this index on are the
    /// workload's data lines.
    pub lock_lines: u32,
}

/// Simulate `job`'s lock workload with its threads on `slots`.
pub(crate) fn simulate(job: &Job<'_>, slots: &[ThreadSlot]) -> Raw {
    with_lock(&job.point.lock.algo, Simulate { job, slots })
}

struct Simulate<'a> {
    job: &'a Job<'a>,
    slots: &'a [ThreadSlot],
}

impl LockVisitor for Simulate<'_> {
    type Output = Raw;

    fn visit<L: Lock>(self, make: impl Fn(&mut LineAlloc, Site) -> L) -> Raw {
        let Simulate { job, slots } = self;
        let (point, map) = (job.point, &job.model.map);
        let n = slots.len();
        let shape = workload::shape(&point.workload, point.threads);
        let mut alloc = LineAlloc::new();
        let locks = Locks::build(&shape, point.threads as usize, &mut alloc, make);
        let class_refs: Vec<&str> = shape.classes.iter().map(String::as_str).collect();
        let window = Window {
            start_ns: job.warmup_ns,
            end_ns: job.warmup_ns + job.duration_ns,
        };
        let fw = locks.fairness_window_ns();
        let mut stats: Vec<ThreadStats> = slots
            .iter()
            .map(|s| ThreadStats::new(map.cpus[s.cpu].os_id, s.node, window, &class_refs, fw))
            .collect();
        let mut locals: Vec<LocalState> = (0..n).map(|t| LocalState::new(t, locks.len())).collect();
        let machine = Machine::new(
            map,
            &job.model.costs,
            slots,
            alloc.count(),
            thread_seeds(job.seed, n),
        );
        if let Some((from, to)) = job.trace {
            machine.trace(from, to);
        }
        machine.count_cpu_within(window.start_ns, window.end_ns);
        let envs: Vec<_> = (0..n).map(|t| machine.env(t)).collect();
        let ops: Vec<Cell<u64>> = (0..n).map(|_| Cell::new(0)).collect();
        let starts = start_offsets(&shape, point.threads, job.seed);
        let w = &point.workload;
        let locks = &locks;
        let outcome = {
            let mut futs: Vec<Pin<Box<dyn Future<Output = ()> + '_>>> = envs
                .iter()
                .zip(stats.iter_mut())
                .zip(locals.iter_mut())
                .zip(ops.iter())
                .map(|(((env, st), local), op)| {
                    Box::pin(async move {
                        let done =
                            workload::run_thread(w, locks, env, local, st, window.end_ns).await;
                        op.set(done);
                    }) as Pin<Box<dyn Future<Output = ()>>>
                })
                .collect();
            machine.run_from(&mut futs, &starts, window.end_ns)
        };
        // The run stops at the end of the window: a thread still waiting then has its
        // wait cut off there, bypassed by every grant of its lock since its wait began
        // (for a FIFO lock, its doorway: none if it had not passed it yet). The
        // single-lock workload times a wait, and counts its bypass, from its first
        // failed attempt, as natively (`Env::acquire_granted`, `Env::wait_start`): one
        // still in its first attempt has not waited.
        let from_first_failure = matches!(point.workload, Workload::SingleLock { .. });
        // A lock workload's thread is on its CPU for the whole window (spinning,
        // holding or working), as a pinned native thread is, except while asleep in
        // the kernel. (A wake-up workload's tasks, which sleep by design, are not
        // simulated here: `sim::sched`.)
        let window_ns = window.end_ns - window.start_ns;
        for ((st, local), env) in stats.iter_mut().zip(&locals).zip(&envs) {
            st.cpu_ns = Some(window_ns.saturating_sub(env.off_cpu_ns()));
            if from_first_failure {
                st.wait_began(env.wait_began());
            }
            if let Some(w) = st.waiting() {
                st.censor(local.bypass(w.lock, env.grants(w.lock), env.wait_start()));
            }
        }
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
            trace: machine.take_trace(),
            lock_lines: alloc.count() - shape.lines_per_lock * shape.locks as u32,
        }
    }
}

/// Simulate `job` and summarise it into its record.
pub(crate) fn run(mut ctx: RunContext, job: &Job<'_>, slots: &[ThreadSlot]) -> RunRecord {
    let raw = simulate(job, slots);
    if raw.outcome.deadlocked {
        return stats::skipped(
            &ctx,
            job.point.threads,
            SkipCause::Deadlock,
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
    // What a native repetition's measured pair is compared with (`compare
    // --sim-vs-native`): the model's transfer between the first two threads' CPUs.
    if let [t0, t1, ..] = slots {
        let model = job.model;
        let t = model.map.transfer_ns(&model.costs, t0.cpu, t1.cpu);
        ctx.extra.insert(PAIR_TRANSFER.into(), t.as_f64());
    }
    stats::summarize(&ctx, &raw.stats)
}
