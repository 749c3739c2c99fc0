//! The native executor: real threads pinned to real CPUs, running the same lock and
//! workload code as the simulator over [`NativeEnv`].
//!
//! [`run_point`] picks the point's lock type once (`locks::with_lock`: the whole
//! repetition is compiled for it), places the point's threads on the host's CPUs
//! (`topology::place`), skips with a stated reason when the host is too small or
//! pinning is impossible, pins each worker from inside itself
//! (`sched_setaffinity(0, ..)`: threads inherit masks, so the coordinator is never
//! pinned), starts all workers at a barrier, runs a warm-up and then the measured
//! window, and summarises per-thread `ThreadStats` into a `RunRecord`. `Env::work` is
//! a calibrated spin (`calibrate`), and the achieved durations go into the record next
//! to the nominal ones. A noise gate (`noise`) judges each repetition from per-thread
//! CPU/wall ratios and steal time, repeats a disturbed one up to
//! `NativeOptions::noise_retries` times, then flags it.
//!
//! Wake-up placement points (`Workload::Wakeup`) run a calibration instead
//! ([`wakeup`]): wake-up latency same-CPU vs cross-CPU and cache refill after a
//! migration.
//!
//! Nothing here prints: progress goes to the caller's callback.

pub mod arena;
pub mod bench;
pub mod calibrate;
pub mod env;
pub mod noise;
pub mod pin;
pub mod wakeup;

pub use arena::Arena;
pub use calibrate::{calibrate, calibrate_for, WorkLoop};
pub use env::{block_on, thread_cpu_ns, BlockOn, Clock, EnvConfig, NativeEnv, Spin};

use crate::env::{Env, LineAlloc};
use crate::locks::{with_lock, LocalState, Lock, LockVisitor, Site};
use crate::stats::{self, RunContext, ThreadStats, Window};
use crate::workload::{self, Locks, Shape};
use env::CpuMarks;
use locklab_model::plan::{Mode, PlacementKind, Plan, Point, Recording, Workload};
use locklab_model::records::{RunRecord, SkipCause};
use locklab_model::topology::{place, CpuMap, ThreadSlot};
use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

/// How native points run.
#[derive(Debug, Clone)]
pub struct NativeOptions {
    /// The CPU table to place threads on; `None`: the host's (`host::cpu_map`).
    pub cpu_map: Option<CpuMap>,
    /// Pin each thread to its CPU. When false, threads float (tests only: such a
    /// record says so in `noise`).
    pub pin: bool,
    /// How waiters spin. `Spin::Pure` for measurements; `Spin::YieldAfter` when the
    /// threads may outnumber free CPUs.
    pub spin: Spin,
    /// Disturbed repetitions are re-run up to this many times before being flagged.
    pub noise_retries: u32,
    pub gate: noise::Gate,
    /// Windowed fairness (`window_fairness_factor_max`); 0 disables.
    pub fairness_window_ns: u64,
}

impl Default for NativeOptions {
    fn default() -> Self {
        NativeOptions {
            cpu_map: None,
            pin: true,
            spin: Spin::Pure,
            noise_retries: 2,
            gate: noise::Gate::default(),
            fairness_window_ns: 0,
        }
    }
}

/// Run one repetition of a point natively.
pub fn run_point(
    plan: &Plan,
    point: &Point,
    rep: u32,
    duration_ns: u64,
    warmup_ns: u64,
    opts: &NativeOptions,
) -> RunRecord {
    run_point_with_progress(plan, point, rep, duration_ns, warmup_ns, opts, &|_| {})
}

/// As [`run_point`], calling `progress` with the fraction (0..=1) of this repetition's
/// time elapsed, about every 50 ms, from the calling thread.
pub fn run_point_with_progress(
    plan: &Plan,
    point: &Point,
    rep: u32,
    duration_ns: u64,
    warmup_ns: u64,
    opts: &NativeOptions,
    progress: &dyn Fn(f64),
) -> RunRecord {
    let mut ctx = context(point, rep);
    let (map, allowed) = cpu_table(opts, point);
    if let Some(n) = allowed {
        ctx.extra.insert("cpus_allowed".into(), n as f64);
    }
    let job = Job {
        point,
        rep,
        duration_ns,
        warmup_ns,
        recording: plan.run.recording,
        opts,
        map: &map,
        progress,
    };
    // Wake-up placement runs natively as a calibration of its own (`wakeup`).
    if let Workload::Wakeup(spec) = &point.workload {
        return wakeup::run_point(&job, spec, ctx);
    }
    let slots = match place(&point.placement, &map, point.threads) {
        Ok(s) => s,
        // On a process restricted to some CPUs, "the machine" is those: a point that
        // needs more is refused by the environment (the affinity mask), not the host.
        Err(e) => {
            let (cause, why) = match allowed {
                Some(n) if map.len() < point.threads as usize => (
                    SkipCause::Pinning,
                    format!(
                        "pinning impossible: {} threads, and this process's affinity mask allows {n} CPU(s)",
                        point.threads
                    ),
                ),
                Some(n) => (
                    SkipCause::Pinning,
                    format!("pinning impossible: {e} (on the {n} CPUs of this process's affinity mask)"),
                ),
                None => (SkipCause::Host, e),
            };
            return stats::skipped(&ctx, point.threads, cause, why);
        }
    };
    if opts.pin {
        if let Err(e) = pin::check_allowed(&slots, &map) {
            return stats::skipped(&ctx, point.threads, SkipCause::Pinning, e);
        }
    }
    let shape = workload::shape(&point.workload, point.threads);
    ctx.critical_nominal_ns = shape.critical_ns;
    ctx.outside_nominal_ns = shape.outside_ns;
    ctx.extra.insert(
        "clock_tsc".into(),
        if Clock::host().is_tsc() { 1.0 } else { 0.0 },
    );
    // How acquisitions were timed (`NativeEnv`): the clock read at the start of one
    // in this many (on average), which also times its hold; waits timed from the
    // first failed attempt, zero when the first attempt succeeded; under `recording
    // = sampled` only those acquisitions recorded, and no grant order kept.
    ctx.extra.insert(
        "acquisitions_timed_every".into(),
        env::time_every(shape.cycle_ns) as f64,
    );
    ctx.extra.insert(
        "recording_sampled".into(),
        f64::from(u8::from(job.recording == Recording::Sampled)),
    );

    let run = RunOnce {
        job: &job,
        slots: &slots,
        shape: &shape,
    };
    let mut attempt = 0;
    loop {
        let before = noise::Snapshot::take();
        let out = match with_lock(&point.lock.algo, &run) {
            Ok(o) => o,
            Err(e) => return stats::skipped(&ctx, point.threads, SkipCause::Pinning, e),
        };
        let after = noise::Snapshot::take();
        let work = out.work_checks(&shape);
        let seen = noise::Observed {
            ratios: &out.ratios,
            preempted: &out.preempted,
            window_ns: duration_ns,
            may_sleep: out.may_sleep,
            work: &work,
            pair_ns: out.pair_ns,
        };
        let judged = opts.gate.judge(&before, &after, &seen);
        let last = attempt >= opts.noise_retries;
        if judged.disturbed.is_none() || last {
            ctx.ops = Some(out.ops);
            out.record_work(&mut ctx);
            judged.record(&mut ctx, opts.pin, attempt + 1);
            return stats::summarize(&ctx, &out.stats);
        }
        attempt += 1;
    }
}

/// The CPU table a point's threads are placed on: the test's, else the host's, cut
/// down to the CPUs this process may use (`taskset -c 2,3 locklab run ...`, a cpuset)
/// when pinning, so that a placement policy fills those as a machine of their shape;
/// with how many CPUs the process may use when it was cut down. A `list` placement
/// names its CPUs itself: pinning outside the mask is refused with the reason.
fn cpu_table(opts: &NativeOptions, point: &Point) -> (CpuMap, Option<usize>) {
    if let Some(m) = &opts.cpu_map {
        return (m.clone(), None);
    }
    let host = crate::host::cpu_map();
    match pin::allowed_cpus() {
        Some(allowed)
            if opts.pin
                && !matches!(point.placement.policy, PlacementKind::List(_))
                && host.cpus.iter().any(|c| !allowed.contains(&c.os_id)) =>
        {
            (host.restricted_to(&allowed), Some(allowed.len()))
        }
        _ => (host, None),
    }
}

/// One repetition of a point, as the native executor runs it.
pub(crate) struct Job<'a> {
    pub point: &'a Point,
    pub rep: u32,
    pub duration_ns: u64,
    pub warmup_ns: u64,
    /// How acquisitions are recorded (`run { recording = ... }`).
    pub recording: Recording,
    pub opts: &'a NativeOptions,
    /// The CPU table threads are placed on.
    pub map: &'a CpuMap,
    pub progress: &'a dyn Fn(f64),
}

fn context(point: &Point, rep: u32) -> RunContext {
    RunContext {
        point: point.index as u32,
        point_id: point.id.clone(),
        mode: Mode::Native,
        rep,
        seed: point.seed,
        lock: point.lock.name.clone(),
        lock_algo: point.lock.algo.kind_name().into(),
        workload: point.workload.kind_name().into(),
        ops: None,
        critical_nominal_ns: f64::NAN,
        critical_achieved_ns: f64::NAN,
        outside_nominal_ns: f64::NAN,
        outside_achieved_ns: f64::NAN,
        noise: String::new(),
        node_distance: stats::default_node_distance,
        extra: BTreeMap::new(),
    }
}

struct Outcome {
    stats: Vec<ThreadStats>,
    ops: u64,
    ratios: Vec<f64>,
    preempted: Vec<u64>,
    may_sleep: bool,
    work: Vec<WorkSeen>,
    /// The transfer between the first two threads' CPUs before and after the window
    /// (`crate::calibrate::pair_transfer`), with two threads or more.
    pair_ns: Option<[f64; 2]>,
}

struct WorkerResult {
    stats: ThreadStats,
    ops: u64,
    /// Involuntary context switches in the window.
    preempted: u64,
    work: WorkSeen,
}

/// A thread's work loop as calibrated, and what its `critical` and `outside`
/// durations took before and after the window (`calibrate`).
#[derive(Debug, Clone, Copy)]
struct WorkSeen {
    read_ns: f64,
    /// What a `critical` and an `outside` call cost besides their reads, in reads
    /// (`WorkLoop::besides`).
    besides: [f64; 2],
    before: [f64; 2],
    after: [f64; 2],
    /// How many calibrations were made (the one kept missed least).
    calibrations: u32,
}

/// How many times a worker calibrates its work loop at most before a window, and
/// how far from nominal the durations measured right after a calibration may be
/// for it to stop: a calibration (about 10 ms a length) can catch a virtual
/// machine's host in one speed and its check find another, on the Emerald Rapids
/// guest for a third of 50 ns requests (docs/validation.md).
const CALIBRATIONS: u32 = 3;
const CALIBRATED_WITHIN: f64 = 0.03;

impl WorkSeen {
    /// Calibrate on this (pinned) thread and measure the shape's durations; again,
    /// up to [`CALIBRATIONS`] times, while a duration misses its nominal length by
    /// more than [`CALIBRATED_WITHIN`], keeping the calibration that missed least.
    fn calibrate(shape: &Shape) -> (WorkLoop, WorkSeen) {
        let requests = [shape.critical_ns, shape.outside_ns].map(|ns| ns.round() as u64);
        let miss = |before: &[f64; 2]| {
            requests
                .iter()
                .zip(before)
                .filter(|(&ns, _)| ns > 0)
                .map(|(&ns, &a)| (a / ns as f64 - 1.0).abs())
                .fold(0.0, f64::max)
        };
        let ((wl, mut seen), made) = least_miss(CALIBRATIONS, CALIBRATED_WITHIN, || {
            let wl = calibrate::calibrate_for(&requests);
            let seen = WorkSeen {
                read_ns: wl.read_ns(),
                besides: requests.map(|ns| wl.besides(ns)),
                before: achieved(&wl, shape),
                after: [f64::NAN; 2],
                calibrations: 0,
            };
            let m = miss(&seen.before);
            ((wl, seen), m)
        });
        seen.calibrations = made;
        (wl, seen)
    }
}

/// Up to `tries` results of `attempt` (each with how far it missed), stopping at the
/// first that missed by no more than `within`: the one that missed least, and how
/// many were made.
fn least_miss<T>(tries: u32, within: f64, mut attempt: impl FnMut() -> (T, f64)) -> (T, u32) {
    let mut best: Option<(T, f64)> = None;
    let mut made = 0;
    while made < tries.max(1) {
        made += 1;
        let (t, miss) = attempt();
        let stop = miss <= within;
        if best.as_ref().is_none_or(|(_, m)| miss < *m) {
            best = Some((t, miss));
        }
        if stop {
            break;
        }
    }
    let (t, _) = best.expect("at least one attempt");
    (t, made)
}

/// The mean durations of the shape's `critical` and `outside` work on this thread.
fn achieved(wl: &WorkLoop, shape: &Shape) -> [f64; 2] {
    [shape.critical_ns, shape.outside_ns].map(|ns| wl.achieved_ns(ns.round() as u64, 5, 200_000))
}

impl Outcome {
    /// The gate's view of the work durations: every thread's, before and after.
    fn work_checks(&self, shape: &Shape) -> Vec<noise::WorkCheck> {
        [
            ("critical", shape.critical_ns),
            ("outside", shape.outside_ns),
        ]
        .into_iter()
        .enumerate()
        .map(|(i, (name, nominal_ns))| noise::WorkCheck {
            name,
            nominal_ns,
            achieved_ns: self
                .work
                .iter()
                .flat_map(|w| [w.before[i], w.after[i]])
                .collect(),
        })
        .collect()
    }

    /// The achieved durations (mean over threads, before and after) and the work
    /// loop's calibration, into the record.
    fn record_work(&self, ctx: &mut RunContext) {
        let mean = |f: &dyn Fn(&WorkSeen) -> f64| {
            self.work.iter().map(f).sum::<f64>() / self.work.len().max(1) as f64
        };
        ctx.critical_achieved_ns = mean(&|w| (w.before[0] + w.after[0]) / 2.0);
        ctx.outside_achieved_ns = mean(&|w| (w.before[1] + w.after[1]) / 2.0);
        ctx.extra
            .insert("work_read_ns".into(), mean(&|w| w.read_ns));
        ctx.extra
            .insert("work_besides_critical".into(), mean(&|w| w.besides[0]));
        ctx.extra
            .insert("work_besides_outside".into(), mean(&|w| w.besides[1]));
        ctx.extra.insert(
            "work_calibrations".into(),
            mean(&|w| f64::from(w.calibrations)),
        );
    }
}

/// One attempt at a lock point's repetition, generic over the lock type.
struct RunOnce<'a> {
    job: &'a Job<'a>,
    slots: &'a [ThreadSlot],
    shape: &'a Shape,
}

impl LockVisitor for &RunOnce<'_> {
    type Output = Result<Outcome, String>;

    fn visit<L: Lock>(self, make: impl Fn(&mut LineAlloc, Site) -> L) -> Self::Output {
        run_once(self, make)
    }
}

fn run_once<L: Lock>(
    run: &RunOnce<'_>,
    make: impl Fn(&mut LineAlloc, Site) -> L,
) -> Result<Outcome, String> {
    let RunOnce { job, slots, shape } = *run;
    let Job {
        point,
        rep,
        duration_ns,
        warmup_ns,
        recording,
        opts,
        map,
        progress,
    } = *job;
    let n = slots.len();
    let mut alloc = LineAlloc::new();
    let locks = Locks::build(shape, point.threads as usize, &mut alloc, make);
    let arena = Arena::new(alloc.count() as usize, locks.len());
    let class_refs: Vec<&str> = shape.classes.iter().map(String::as_str).collect();
    let may_sleep = locks.may_sleep();
    let clock = Clock::host();
    let go_ns = AtomicU64::new(0);
    let abort = AtomicBool::new(false);
    let pin_error = std::sync::Mutex::new(None::<String>);
    let ready = Barrier::new(n + 1);
    let start = Barrier::new(n + 1);
    let seed = point.seed ^ (rep as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let total_ns = warmup_ns + duration_ns;
    let time_every = env::time_every(shape.cycle_ns);
    // Which machine the repetition measures: the host may move its vCPUs. (Two
    // threads sharing a CPU have no transfer between them to measure.)
    let pair = || match slots {
        [t0, t1, ..] if opts.pin && t0.cpu != t1.cpu => {
            crate::calibrate::pair_transfer(map.cpus[t0.cpu].os_id, map.cpus[t1.cpu].os_id)
        }
        _ => None,
    };
    let pair_before = pair();

    let results: Vec<WorkerResult> = std::thread::scope(|s| {
        let handles: Vec<_> = slots
            .iter()
            .enumerate()
            .map(|(tid, slot)| {
                let (arena, locks, go_ns, abort, pin_error, ready, start, class_refs) = (
                    &arena,
                    &locks,
                    &go_ns,
                    &abort,
                    &pin_error,
                    &ready,
                    &start,
                    &class_refs,
                );
                let os_id = map.cpus[slot.cpu].os_id;
                let node = slot.node;
                std::thread::Builder::new()
                    .name(format!("locklab-{tid}"))
                    .spawn_scoped(s, move || {
                        if opts.pin {
                            if let Err(e) = pin::pin_current(os_id) {
                                abort.store(true, Ordering::SeqCst);
                                *pin_error.lock().unwrap() = Some(format!(
                                    "pinning thread {tid} to CPU {os_id} failed: {e}"
                                ));
                            }
                        }
                        // Calibrated here, pinned, all threads at once.
                        let (wl, mut work) = WorkSeen::calibrate(shape);
                        ready.wait();
                        start.wait();
                        let go = go_ns.load(Ordering::SeqCst);
                        let window = Window {
                            start_ns: go + warmup_ns,
                            end_ns: go + total_ns,
                        };
                        let config = EnvConfig {
                            clock,
                            seed,
                            spin: opts.spin,
                            work: wl,
                            time_every,
                            recording,
                        };
                        let mut env = NativeEnv::new(arena, tid, n, node, config);
                        env.set_marks(CpuMarks {
                            start_ns: window.start_ns,
                            end_ns: window.end_ns,
                            at_start: Cell::new(None),
                            at_end: Cell::new(None),
                        });
                        let mut stats = ThreadStats::new(
                            os_id,
                            node,
                            window,
                            class_refs,
                            opts.fairness_window_ns,
                        )
                        .recording(recording);
                        let mut local = LocalState::new(tid, locks.len());
                        let ops = if abort.load(Ordering::SeqCst) {
                            0
                        } else {
                            workload::drive_thread(
                                &BlockOn,
                                &point.workload,
                                locks,
                                &env,
                                &mut local,
                                &mut stats,
                                window.end_ns,
                            )
                        };
                        // The loop ends at the first now() >= end, which marked it;
                        // mark again in case the window was empty.
                        env.now();
                        let m = env.marks().expect("set above");
                        let ((c0, v0), (c1, v1)) = match (m.at_start.get(), m.at_end.get()) {
                            (Some(a), Some(b)) => (a, b),
                            (Some(a), None) => (a, env::mark()),
                            _ => ((0, 0), (0, 0)),
                        };
                        stats.cpu_ns = Some(c1.saturating_sub(c0));
                        let preempted = v1.saturating_sub(v0);
                        work.after = achieved(&wl, shape);
                        WorkerResult {
                            stats,
                            ops,
                            preempted,
                            work,
                        }
                    })
                    .expect("spawning a worker thread")
            })
            .collect();
        ready.wait();
        go_ns.store(clock.read(), Ordering::SeqCst);
        start.wait();
        wait_reporting_progress(Duration::from_nanos(total_ns), &abort, progress);
        handles
            .into_iter()
            .map(|h| h.join().expect("a worker thread panicked"))
            .collect()
    });
    if let Some(e) = pin_error.into_inner().unwrap() {
        return Err(e);
    }
    let pair_ns = pair_before.zip(pair()).map(|(b, a)| [b, a]);
    let ratios = results
        .iter()
        .map(|r| r.stats.cpu_ns.unwrap_or(0) as f64 / duration_ns.max(1) as f64)
        .collect();
    Ok(Outcome {
        ops: results.iter().map(|r| r.ops).sum(),
        work: results.iter().map(|r| r.work).collect(),
        preempted: results.iter().map(|r| r.preempted).collect(),
        stats: results.into_iter().map(|r| r.stats).collect(),
        ratios,
        may_sleep,
        pair_ns,
    })
}

/// Wait on the calling (coordinating) thread until `total` has passed since now or
/// `abort` is set, calling `progress` with the fraction passed every 50 ms.
pub(crate) fn wait_reporting_progress(total: Duration, abort: &AtomicBool, progress: &dyn Fn(f64)) {
    let go = Instant::now();
    loop {
        let el = go.elapsed();
        progress((el.as_secs_f64() / total.as_secs_f64().max(1e-9)).min(1.0));
        if el >= total || abort.load(Ordering::SeqCst) {
            break;
        }
        std::thread::sleep((total - el).min(Duration::from_millis(50)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_is_calibrated_again_while_it_misses_keeping_the_least_miss() {
        // Calibrations numbered from 1 that miss by these in turn.
        let calibrations = |misses: [f64; 3]| {
            let mut i = 0;
            least_miss(3, 0.03, move || {
                i += 1;
                (i, misses[i - 1])
            })
        };
        // The second is within 3 %: it stops there.
        assert_eq!(calibrations([0.12, 0.02, 0.0]), (2, 2));
        // None within: all three made, the one that missed least kept.
        assert_eq!(calibrations([0.12, 0.05, 0.08]), (2, 3));
        // The first within: one calibration, as before.
        assert_eq!(least_miss(3, 0.03, || ("only", 0.01)), ("only", 1));
        // A miss that is not a number (nothing measured) is never the best but
        // still a result.
        assert_eq!(least_miss(2, 0.03, || ("nan", f64::NAN)), ("nan", 2));
    }

    #[test]
    fn block_on_runs_a_native_lock() {
        let mut alloc = LineAlloc::new();
        let lock = crate::locks::ticket::Ticket::new(
            &mut alloc,
            Site {
                id: 0,
                nthreads: 1,
                asks_contended: false,
            },
        );
        let arena = Arena::new(alloc.count() as usize, 1);
        let env = NativeEnv::for_test(&arena, 0, 1);
        let mut local = LocalState::new(0, 1);
        block_on(async {
            lock.acquire(&env, &mut local).await;
            lock.release(&env, &mut local).await;
            assert!(lock.try_acquire(&env, &mut local).await);
        });
        assert_eq!(env.grants(0), 0);
    }

    /// A test thread's configuration: a clock of one tick per read, one acquisition
    /// in 64 timed, `recording` as given.
    fn ticking(recording: Recording) -> EnvConfig {
        EnvConfig {
            clock: Clock::Ticks(1),
            seed: 3,
            spin: Spin::Pure,
            work: WorkLoop::uncalibrated(),
            time_every: 64,
            recording,
        }
    }

    /// Under `exact` the first failed attempt of a single-lock wait notes its lock's
    /// grant count, and the bypass counts from there (as the wait does): grants
    /// before it (the thread on its way in) are not counted, an acquisition that
    /// never waited has none. Without the note (the other workloads), the arrival.
    #[test]
    fn an_exact_wait_notes_where_it_began_for_its_bypass() {
        let arena = Arena::new(2, 1);
        let config = ticking(Recording::Exact);
        let me = NativeEnv::new(&arena, 0, 2, 0, config);
        let other = NativeEnv::new(&arena, 1, 2, 0, config);
        crate::locks::check_bypass_counts_from_the_first_failed_attempt(&me, &other);
    }

    #[test]
    fn only_a_lone_or_sampled_thread_records_just_its_timed_acquisitions() {
        let arena = Arena::new(1, 1);
        let recorded = |recording, nthreads| {
            let env = NativeEnv::new(&arena, 0, nthreads, 0, ticking(recording));
            (0..64_000)
                .filter(|_| {
                    env.acquire_start();
                    env.recorded()
                })
                .count()
        };
        // Exact with others on the lock: every grant, in order. Alone or sampled:
        // one in about 64 (the first among them), the others counted.
        assert_eq!(recorded(Recording::Exact, 2), 64_000);
        for (recording, n) in [(Recording::Exact, 1), (Recording::Sampled, 2)] {
            let r = recorded(recording, n);
            assert!((800..1_200).contains(&r), "{recording:?} {n}: {r}");
        }
    }

    #[test]
    fn a_counted_acquisition_knows_whether_its_first_attempt_failed() {
        // Sampled, two threads: most acquisitions are only counted. One whose
        // attempt failed (a spin) has waited from then on; the next acquisition
        // starts afresh, so a spin in a release (MCS's) is not the next one's.
        let arena = Arena::new(1, 1);
        let env = NativeEnv::new(&arena, 0, 2, 0, ticking(Recording::Sampled));
        let mut counted = 0;
        for _ in 0..1_000 {
            env.acquire_start();
            if env.recorded() {
                continue;
            }
            counted += 1;
            assert!(!env.acquire_waited(), "a fresh acquisition has not waited");
            block_on(env.pause());
            assert!(env.acquire_waited(), "a failed attempt's spin");
            block_on(env.pause());
            assert!(env.acquire_waited());
        }
        assert!(counted > 900, "{counted}");
    }

    #[test]
    fn a_counted_acquisitions_release_spins_do_not_make_its_wait_a_long_one() {
        // A release that spins long (MCS's, for a successor still linking in) after
        // an acquisition that did not wait, or waited too briefly to be timed, is no
        // timed wait of that acquisition; one that spun long before its grant is.
        let arena = Arena::new(1, 1);
        let env = NativeEnv::new(&arena, 0, 2, 0, ticking(Recording::Sampled));
        let spin = |n| (0..n).for_each(|_| block_on(env.pause()));
        let long = env::LONG_WAIT_SPINS as usize + 8;
        // (spins before the grant, whether it waited, whether its wait was timed)
        for (before, waited, timed) in [(0, false, false), (1, true, false), (long, true, true)] {
            let mut checked = 0;
            for _ in 0..200 {
                let t0 = env.acquire_start();
                if env.recorded() {
                    continue;
                }
                checked += 1;
                spin(before);
                assert_eq!(env.acquire_waited(), waited, "{before} spins");
                spin(long);
                let (_, from) = env.acquire_counted(t0, waited);
                assert_eq!(from.is_some(), timed, "{before} spins, then the release's");
            }
            assert!(checked > 150, "{checked}");
        }
    }

    #[test]
    fn a_masked_store_writes_its_field_only() {
        use crate::env::Addr;
        use std::sync::atomic::Ordering::{Relaxed, Release, SeqCst};
        let mut alloc = LineAlloc::new();
        let a = Addr::new(alloc.line(), 3);
        let arena = Arena::new(alloc.count() as usize, 1);
        let env = NativeEnv::for_test(&arena, 0, 1);
        let set = |v: u64| block_on(env.store(a, v, Relaxed));
        // (word before, mask, value, word after): the qspinlock's fields (narrow
        // stores on x86_64), a 32-bit half, and masks no narrow store fits (the
        // portable fetch_and or CAS loop).
        let cases = [
            (0xdead_beef_0000_01ff, 0xff, 0, 0xdead_beef_0000_0100),
            (0xdead_beef_0005_0100, 0xffff, 1, 0xdead_beef_0005_0001),
            (0xdead_beef_0005_0101, 0xff00, 0, 0xdead_beef_0005_0001),
            (
                0x1234_5678_9abc_def0,
                0xffff_ffff_0000_0000,
                0x42 << 32,
                0x0000_0042_9abc_def0,
            ),
            (0xffff_0000_0000_0000, 0x0ff0, 0x0560, 0xffff_0000_0000_0560),
            (0xffff, 0xff_ff00, 0xab_cd00, 0xab_cdff),
        ];
        for (before, mask, v, after) in cases {
            for o in [Relaxed, Release, SeqCst] {
                set(before);
                block_on(env.store_masked(a, mask, v, o));
                assert_eq!(arena.peek(a), after, "{before:#x} {mask:#x} {v:#x} {o:?}");
            }
        }
    }
}
