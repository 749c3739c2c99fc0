//! The scheduler model that runs the wake-up placement workload
//! (`crate::workload::wakeup`) in simulation: a CFS-like scheduler on a modelled
//! machine, with the old and the patched `select_idle_sibling`.
//!
//! The workload does not go through the lock code; this is its own discrete-event
//! model (same determinism rules: one heap ordered by time and sequence, seeds from
//! the point). By concern:
//!
//! - `runqueue`: per-CPU run queues, CFS-style: vruntime advances by
//!   `exec × 1024 / weight`, the next task is the lowest vruntime, a slice is
//!   `period × weight / queue weight` (period = `latency`, stretched to
//!   `nr × min_slice` when crowded), and a waking task starts at
//!   `max(own, min_vruntime − latency / 2)` (gentle sleeper credit). **Wake-up
//!   preemption** (`check_preempt_wakeup`): the wakee preempts the running task when it
//!   is behind by more than `wakeup_granularity × 1024 / wakee weight`; a synchronous
//!   wake-up gets no special treatment there, and a waker finishing a burst is
//!   preempted once its bookkeeping is done (need-resched). **Newly idle balancing**: a
//!   CPU about to go idle pulls the waiting task that ran longest ago from the busiest
//!   CPU of its LLC, else of the machine (both policies). **Idle exit**: a task placed
//!   on an idle CPU starts `idle_exit` later. **SMT co-run**: a task progresses at
//!   `smt_corun_factor` while its sibling runs.
//! - `placement`: `select_task_rq_fair` → `select_idle_sibling(p, target)`, target
//!   being the waker's CPU (wake-affine). Old: target if idle; else prev if idle and
//!   sharing the LLC; else the first core of the target's LLC whose CPUs are all idle;
//!   else target. Patched: the same, but an idle CPU on a partly busy core is
//!   remembered and used when no core is fully idle; and when the choice is still
//!   busy, balance on wake from the target (the patch's `prev_cpu`, which wake-affine
//!   has set to the waker's CPU).
//! - `cache`: cache warmth. Trade: a task that starts on another core than it last
//!   ran on first refills its working set: `min(ws, L2)` from the LLC at `llc_ns` per
//!   line if the old core shares the LLC, else `min(ws, LLC)` at `remote_ns` per line,
//!   divided by the topology's `misses_in_flight`; the refill is run time.
//!   Messaging: each core's L2 (the topology's `l2`, LRU) holds the messages its
//!   threads wrote or read. A burst reads its message (`working_set` bytes: the
//!   payload plus the socket, room and JVM objects along the path); what is missing
//!   from the core's L2 comes from the LLC it was written in at `llc_ns` per line (the
//!   other socket's at `remote_ns`), `misses_in_flight` at a time, as run time. SMT
//!   siblings share the L2.
//! - `events`: the event loop, and the scenario's tasks reacting to its events (a
//!   burst done, a timer): the scenarios themselves are the workload's.
//!
//! Not modelled: the periodic load balancer (only newly idle balancing), the cost of
//! the balance-on-wake scan itself, NUMA balancing, the runqueue lock, hogs' cache
//! pollution, the LLC's capacity for messaging data, coherence traffic between a
//! sender and receivers running at the same time.
//!
//! Metrics: ops = worker bursts completed in the window; wait = wake-up latency per
//! worker (class `wakeup`: from the wake-up to running); `migrations_per_wakeup` =
//! wake-ups placed on another CPU than the task's previous one, per wake-up;
//! `pulls_per_wakeup` = tasks pulled by newly idle balancing, per wake-up;
//! `refill_per_burst_ns` = messaging refill time charged per burst.

mod cache;
mod events;
mod placement;
mod runqueue;
#[cfg(test)]
mod tests;

pub use placement::IMBALANCE_PCT;

use super::Job;
use crate::rng::{mix, SplitMix64};
use crate::stats::{self, RunContext, ThreadStats, Window};
use crate::workload::wakeup::{self, Role, Tasks, Timer};
use cache::{Cache, Msg};
use events::Ev;
use locklab_model::plan::WakeupSpec;
use locklab_model::records::{RunRecord, SkipCause};
use runqueue::{Cpu, State, Task};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

/// "No task" / "no CPU".
const NONE: usize = usize::MAX;
/// The weight of a nice-0 task (CFS scales vruntime and loads by it).
const NICE_0: u64 = 1024;

/// The state of one simulated wake-up point.
struct Model<'a> {
    w: &'a WakeupSpec,
    /// The scenario: who the tasks are and who wakes whom.
    scenario: Tasks,
    now: u64,
    seq: u64,
    heap: BinaryHeap<Reverse<(u64, u64, Ev)>>,
    cpus: Vec<Cpu>,
    tasks: Vec<Task>,
    rng: SplitMix64,
    /// Per worker: its stats.
    stats: Vec<ThreadStats>,
    window: Window,
    bursts: u64,
    wakeups: u64,
    migrations: u64,
    /// Idle balancing: tasks pulled by a CPU going idle (in the window).
    pulls: u64,
    cache: Cache,
    /// Messaging: the messages in flight.
    msgs: HashMap<u64, Msg>,
    next_msg: u64,
}

impl Model<'_> {
    fn in_window(&self, t: u64) -> bool {
        self.window.contains(t)
    }
}

/// Run a wake-up placement point.
pub(crate) fn run(ctx: &RunContext, job: &Job<'_>, w: &WakeupSpec) -> RunRecord {
    let mut ctx = ctx.clone();
    let map = &job.model.map;
    let ncpu = map.len();
    if ncpu == 0 {
        return stats::skipped(
            &ctx,
            job.point.threads,
            SkipCause::Host,
            "the machine model has no CPUs".into(),
        );
    }
    let scenario = Tasks::new(w);
    let workers = scenario.workers;
    let cpus: Vec<Cpu> = (0..ncpu).map(|c| Cpu::new(map, c)).collect();

    // Hogs spread as the load balancer leaves them: over sockets, then cores, then
    // second hardware threads.
    let per_socket = (map.cores / map.sockets.max(1)).max(1);
    let mut spread: Vec<usize> = (0..ncpu).collect();
    spread.sort_by_key(|&c| {
        let i = &map.cpus[c];
        (i.smt, i.core % per_socket, i.socket)
    });
    // Workers first, spread one per CPU in order as fork balancing leaves them,
    // asleep; hogs runnable.
    let tasks: Vec<Task> = (0..scenario.len())
        .map(|t| {
            let role = scenario.role(t);
            if role == Role::Hog {
                let cpu = spread[(t - workers) % ncpu];
                Task::new(
                    role,
                    scenario.weight(t),
                    cpu,
                    f64::INFINITY,
                    State::Runnable,
                )
            } else {
                Task::new(role, scenario.weight(t), t % ncpu, 0.0, State::Sleeping)
            }
        })
        .collect();

    let window = Window {
        start_ns: job.warmup_ns,
        end_ns: job.warmup_ns + job.duration_ns,
    };
    let stats = (0..workers)
        .map(|i| {
            let c = tasks[i].cpu;
            ThreadStats::new(
                map.cpus[c].os_id,
                map.cpus[c].node,
                window,
                &[wakeup::CLASS],
                0,
            )
        })
        .collect();
    let mut m = Model {
        w,
        scenario,
        now: 0,
        seq: 0,
        heap: BinaryHeap::new(),
        cpus,
        tasks,
        rng: SplitMix64::new(mix(job.seed, 3)),
        stats,
        window,
        bursts: 0,
        wakeups: 0,
        migrations: 0,
        pulls: 0,
        cache: Cache::new(
            map,
            &job.model.costs,
            job.model.spec.as_ref(),
            w.working_set_bytes,
        ),
        msgs: HashMap::new(),
        next_msg: 0,
    };
    // Hogs start running; workers start asleep with a random first sleep.
    for h in workers..m.tasks.len() {
        let c = m.tasks[h].cpu;
        m.cpus[c].queue.push(h);
    }
    for c in 0..ncpu {
        if !m.cpus[c].queue.is_empty() {
            m.pick(c);
        }
    }
    for t in 0..workers {
        let mean = (w.sleep.mean_ns() as u64).max(1_000);
        let Some(timer) = m.scenario.first_timer(t) else {
            continue;
        };
        let s = m.rng.range(0, mean);
        m.push(s, Ev::Timer(timer));
    }
    m.run(window.end_ns);

    ctx.ops = Some(m.bursts);
    let migrations_per_wakeup = if m.wakeups == 0 {
        f64::NAN
    } else {
        m.migrations as f64 / m.wakeups as f64
    };
    let mut rec = stats::summarize(&ctx, &m.stats);
    let p = &mut rec.point;
    p.extra
        .insert("migrations_per_wakeup".into(), migrations_per_wakeup);
    wakeup::record_latency(&mut p.extra, p.wait_p50_ns, p.wait_p99_ns, m.wakeups);
    let per_wakeup = |x: f64| {
        if m.wakeups == 0 {
            f64::NAN
        } else {
            x / m.wakeups as f64
        }
    };
    p.extra
        .insert("pulls_per_wakeup".into(), per_wakeup(m.pulls as f64));
    let per_burst = if m.bursts == 0 {
        f64::NAN
    } else {
        m.cache.charged_ns / m.bursts as f64
    };
    p.extra.insert("refill_per_burst_ns".into(), per_burst);
    p.extra
        .insert("refill_same_llc_ns".into(), m.cache.refill_same_llc_ns);
    p.extra
        .insert("refill_other_llc_ns".into(), m.cache.refill_other_llc_ns);
    rec
}
