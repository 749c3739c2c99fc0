//! The native executor end to end, on a CPU table made for the test (never the CI
//! box's own topology): records, skips with reasons, progress, classes.

use crate::common::{all_algos, one_socket, plan, point, single};
use locklab_model::plan::*;
use locklab_model::topology::CpuMap;
use locklab_runner::native::{pin, run_point, run_point_with_progress, NativeOptions, Spin};
use std::cell::RefCell;

/// A one-socket table over the CPUs this process may use (at most 2).
fn map() -> CpuMap {
    one_socket(&pin::allowed_cpus().unwrap_or_else(|| vec![0]))
}

/// Unpinned, yielding: safe when tests share the machine.
fn test_opts() -> NativeOptions {
    NativeOptions {
        cpu_map: Some(map()),
        pin: false,
        spin: Spin::YieldAfter(64),
        noise_retries: 0,
        ..NativeOptions::default()
    }
}

const D: u64 = 10_000_000;

/// On a shared machine a thread can lose its CPU for a whole short window, so "it
/// made progress" is asserted only when the threads actually ran: zero operations
/// with every thread on its CPU all window long would be a stuck lock.
fn progressed_or_lost_cpu(r: &locklab_model::records::RunRecord, what: &str) {
    let min_ratio = r
        .point
        .extra
        .get("cpu_wall_ratio_min")
        .copied()
        .unwrap_or(0.0);
    assert!(
        r.point.ops > 0 || min_ratio < 0.9,
        "{what}: no progress although every thread ran {:.0}% of the window",
        min_ratio * 100.0
    );
}
const W: u64 = 2_000_000;

/// Point `p` run alone under `recording = sampled` (window `D` after `W`), not skipped.
fn run_sampled(p: &Point) -> locklab_model::records::RunRecord {
    let mut pl = plan(vec![p.clone()]);
    pl.run.recording = Recording::Sampled;
    let r = run_point(&pl, p, 0, D, W, &test_opts());
    assert!(r.point.skipped.is_none(), "{:?}", r.point.skipped);
    r
}

#[test]
fn every_lock_runs_a_single_lock_point_with_two_threads() {
    let n = map().len().min(2) as u32;
    for (name, algo) in all_algos() {
        let p = point(algo, single(100, 200, 2), n, None);
        let r = run_point(&plan(vec![p.clone()]), &p, 0, D, W, &test_opts());
        assert!(r.point.skipped.is_none(), "{name}: {:?}", r.point.skipped);
        progressed_or_lost_cpu(&r, name);
        assert_eq!(r.point.ops, r.point.acquisitions, "{name}");
        assert_eq!(r.threads.len(), n as usize, "{name}");
        assert!(r.threads.iter().all(|t| t.cpu_ns >= 0.0), "{name}");
        assert!(r.point.critical_achieved_ns > 0.0 && r.point.critical_nominal_ns == 100.0);
        assert_eq!(r.point.mode, Mode::Native);
        assert!(
            r.point.noise.starts_with("flagged: threads not pinned"),
            "{}",
            r.point.noise
        );
        assert!(r.point.cpu_wall_ratio.is_finite());
    }
}

#[test]
fn sampled_recording_counts_every_acquisition_and_keeps_no_grant_order() {
    // `recording = sampled`: nothing shared is written per grant; the counts are
    // whole, the waits a sample, and what needs the grant order is not measured.
    let n = map().len().min(2) as u32;
    for algo in [LockAlgo::TAS, LockAlgo::Ticket, LockAlgo::Mcs] {
        let r = run_sampled(&point(algo.clone(), single(0, 0, 0), n, None));
        progressed_or_lost_cpu(&r, "sampled");
        let pt = &r.point;
        assert_eq!(pt.ops, pt.acquisitions, "{algo:?}");
        let per_thread: u64 = r.threads.iter().map(|t| t.acquisitions).sum();
        assert_eq!(per_thread, pt.acquisitions, "{algo:?}");
        assert_eq!(pt.extra.get("recording_sampled"), Some(&1.0));
        assert_eq!(pt.reacquisitions, None, "{algo:?}");
        assert!(r.threads.iter().all(|t| t.reacquisitions.is_none()));
        assert!(
            pt.bypass_max.is_nan() && pt.bypass_mean.is_nan(),
            "{algo:?}"
        );
        assert!(r.handoffs.is_empty(), "{algo:?}: {:?}", r.handoffs);
        // One acquisition in about 64 is timed (a no-work cycle): far fewer waits
        // than acquisitions, and some once there were enough acquisitions.
        let every = pt.extra["acquisitions_timed_every"];
        assert_eq!(every, 64.0);
        if pt.acquisitions > 100_000 {
            assert!(pt.wait_p50_ns.is_finite(), "{algo:?}");
        }
    }
}

#[test]
fn sampled_recording_counts_every_acquisition_that_waited() {
    // Waits are timed in a sample (one acquisition in 64 without work), but every
    // failed first attempt is counted (`waits`): none for a run's only thread; with
    // two threads at a FIFO lock that both take many times, some. On a loaded
    // machine the scheduler may run the two threads apart for a whole 10 ms window
    // (seen once: 445,623 acquisitions, none waited), so the two-thread run is
    // repeated, up to five times, until its threads met at the lock. A run tells only
    // if both threads held their CPUs for nine tenths of the window (they ran side
    // by side) and both took the lock many times: seen again on 7 December, a run
    // where both took it over 1,000 times with none waiting, while other tests'
    // threads shared the two CPUs.
    let n = map().len().min(2) as u32;
    for threads in 1..=n {
        let (mut met, mut telling) = (false, 0);
        for _ in 0..5 {
            let r = run_sampled(&point(LockAlgo::Ticket, single(0, 0, 0), threads, None));
            progressed_or_lost_cpu(&r, "waits");
            let pt = &r.point;
            assert_eq!(
                pt.extra["acquisitions_timed_every"], 64.0,
                "most only counted"
            );
            let waits = pt.waits.expect("counted");
            let per_thread: Option<u64> = r.threads.iter().map(|t| t.waits).sum();
            assert_eq!(per_thread, Some(waits));
            assert!(waits <= pt.acquisitions, "{waits} of {}", pt.acquisitions);
            if threads == 1 {
                assert_eq!(waits, 0);
                met = true;
                break;
            }
            // A run whose threads did not both run throughout and take the lock many
            // times says nothing.
            let side_by_side = pt.extra.get("cpu_wall_ratio_min").copied().unwrap_or(0.0) >= 0.9;
            if side_by_side && r.threads.iter().all(|t| t.acquisitions > 1_000) {
                telling += 1;
                if waits > 0 {
                    met = true;
                    break;
                }
            }
        }
        assert!(
            threads == 1 || met || telling == 0,
            "{threads} threads: in {telling} runs where both took the lock many times, none waited"
        );
    }
}

#[test]
fn drawn_lengths_are_drawn_per_operation_natively() {
    // Fixed lengths and no work run loops of their own (`single::Params::run_driven`);
    // a distribution is drawn at every operation. Outside stretches of 1-2 ms leave a
    // lone thread at most one acquisition per millisecond of the 10 ms window (plus
    // the one under way when it opened), however the machine runs it; lengths not
    // drawn (0) would give millions.
    let p = point(
        LockAlgo::Ticket,
        Workload::SingleLock {
            critical: Dist::Uniform {
                lo_ns: 50,
                hi_ns: 150,
            },
            outside: Dist::Uniform {
                lo_ns: 1_000_000,
                hi_ns: 2_000_000,
            },
            lines: 1,
        },
        1,
        None,
    );
    let r = run_sampled(&p);
    progressed_or_lost_cpu(&r, "drawn lengths");
    let pt = &r.point;
    assert!(pt.acquisitions <= D / 1_000_000 + 1, "{}", pt.acquisitions);
    assert_eq!(pt.ops, pt.acquisitions);
    assert_eq!(pt.critical_nominal_ns, 100.0);
    assert_eq!(pt.outside_nominal_ns, 1_500_000.0);
}

#[test]
fn sampled_recording_counts_reacquisitions_by_the_holders_mark() {
    // With a data line the holder marks it (`Locks::mark_holder`): re-acquisitions
    // are counted without the grant order, per thread and in total. A run's only
    // thread re-acquires every time (its warm-up came first).
    let n = map().len().min(2) as u32;
    for algo in [LockAlgo::TAS, LockAlgo::Ticket] {
        let r = run_sampled(&point(algo.clone(), single(0, 0, 1), n, None));
        progressed_or_lost_cpu(&r, "sampled, marked");
        let pt = &r.point;
        let re = pt.reacquisitions.expect("counted by the holder's mark");
        assert!(
            re <= pt.acquisitions,
            "{algo:?}: {re} of {}",
            pt.acquisitions
        );
        let per_thread: Option<u64> = r.threads.iter().map(|t| t.reacquisitions).sum();
        assert_eq!(per_thread, Some(re), "{algo:?}");
        if n == 1 {
            assert_eq!(re, pt.acquisitions, "{algo:?}");
        }
        assert!(r.handoffs.is_empty() && pt.bypass_max.is_nan(), "{algo:?}");
    }
}

#[test]
fn a_pinned_run_reports_a_noise_verdict() {
    let p = point(LockAlgo::Ticket, single(50, 50, 1), 1, None);
    let opts = NativeOptions {
        cpu_map: Some(map()),
        spin: Spin::YieldAfter(64),
        noise_retries: 1,
        ..NativeOptions::default()
    };
    let r = run_point(&plan(vec![p.clone()]), &p, 0, D, W, &opts);
    assert!(r.point.skipped.is_none(), "{:?}", r.point.skipped);
    assert!(
        r.point.noise == "ok" || r.point.noise.starts_with("flagged: "),
        "{}",
        r.point.noise
    );
    assert!(r.point.extra.contains_key("noise_attempts"));
    assert!(r.point.extra.contains_key("cpu_wall_ratio_min"));
    assert!(r.point.extra.contains_key("preemptions_max"));
}

#[test]
fn points_the_host_cannot_run_are_skipped_with_a_reason() {
    let too_many = point(LockAlgo::Mcs, single(10, 10, 1), 3, None);
    let r = run_point(
        &plan(vec![too_many.clone()]),
        &too_many,
        0,
        D,
        W,
        &test_opts(),
    );
    let why = r.point.skipped.expect("skipped");
    assert!(why.contains("needs 3 CPUs"), "{why}");
    assert!(r.point.throughput_ops_s.is_nan());
    assert_eq!(r.point.threads, 3);

    let mut outside = map();
    outside.cpus[0].os_id = 100_000;
    let p = point(LockAlgo::Mcs, single(10, 10, 1), 1, None);
    let opts = NativeOptions {
        cpu_map: Some(outside),
        ..test_opts()
    };
    let pinned = NativeOptions { pin: true, ..opts };
    let why = run_point(&plan(vec![p.clone()]), &p, 0, D, W, &pinned)
        .point
        .skipped
        .unwrap();
    assert!(why.contains("pinning impossible"), "{why}");
}

#[test]
fn the_wakeup_workload_runs_as_a_calibration_natively() {
    let w = Workload::Wakeup(WakeupSpec {
        policy: PlacementPolicy::Old,
        scenario: WakeupScenario::Trade,
        workers: 1,
        worker_weight: 1024,
        hogs: 0,
        hog_groups: 0,
        hog_group_weight: 1024,
        burst: Dist::Fixed { ns: 1000 },
        sleep: Dist::Fixed { ns: 1000 },
        working_set_bytes: 0,
        sched: SchedParams {
            wakeup_granularity_ns: 1,
            latency_ns: 1,
            min_slice_ns: 1,
            migration_cost_ns: 1,
            idle_exit_ns: 1,
            smt_corun_factor: 1.0,
        },
    });
    let p = point(LockAlgo::TAS, w, 1, None);
    let r = run_point(&plan(vec![p.clone()]), &p, 0, D, W, &test_opts());
    // Two threads ping-pong a wake-up whatever the point's thread count (see
    // `native_wakeup` for the pinned run); one CPU: skipped with the reason.
    match r.point.skipped {
        Some(why) => assert!(map().len() < 2 && why.contains("needs 2 CPUs"), "{why}"),
        None => {
            assert_eq!(r.point.workload, "wakeup");
            assert_eq!(r.threads.len(), 2);
            assert!(r.point.noise.starts_with("flagged: threads not pinned"));
            // Unpinned: no migration to time.
            assert!(r.point.extra["refill_ns"].is_nan());
        }
    }
}

#[test]
fn progress_is_reported_and_reaches_one() {
    let p = point(LockAlgo::Ticket, single(10, 10, 1), 1, None);
    let seen = RefCell::new(Vec::new());
    run_point_with_progress(&plan(vec![p.clone()]), &p, 0, D, W, &test_opts(), &|f| {
        seen.borrow_mut().push(f)
    });
    let seen = seen.into_inner();
    assert!(!seen.is_empty());
    assert!(seen.windows(2).all(|w| w[0] <= w[1]), "{seen:?}");
    assert_eq!(*seen.last().unwrap(), 1.0);
}

#[test]
fn a_lone_thread_records_its_trivial_grant_order_exactly_without_the_bookkeeping() {
    // One thread under the default `exact`: only one acquisition in about 64 goes
    // through the recording path, yet the record is whole: every grant (the first
    // is in the warm-up) a re-acquisition, every wait zero, nothing bypassed.
    for (name, algo) in all_algos() {
        let p = point(algo, single(0, 0, 0), 1, None);
        let r = run_point(&plan(vec![p.clone()]), &p, 0, D, W, &test_opts());
        assert!(r.point.skipped.is_none(), "{name}: {:?}", r.point.skipped);
        progressed_or_lost_cpu(&r, name);
        let pt = &r.point;
        assert_eq!(pt.ops, pt.acquisitions, "{name}");
        assert_eq!(pt.extra.get("recording_sampled"), Some(&0.0), "{name}");
        if pt.acquisitions == 0 {
            continue; // it lost its CPU all window long (see progressed_or_lost_cpu)
        }
        // Every grant re-acquires, but the run's first, which is in the window if the
        // thread first ran more than the warm-up after the start (a busy machine).
        let reacquired = pt.reacquisitions.expect("measured");
        assert!(
            (pt.acquisitions - 1..=pt.acquisitions).contains(&reacquired),
            "{name}: {reacquired} of {}",
            pt.acquisitions
        );
        assert_eq!(r.threads[0].reacquisitions, pt.reacquisitions, "{name}");
        assert_eq!((pt.bypass_max, pt.bypass_mean), (0.0, 0.0), "{name}");
        assert_eq!((pt.wait_max_ns, pt.waits_censored), (0.0, 0), "{name}");
        assert!(r.handoffs.is_empty(), "{name}: {:?}", r.handoffs);
    }
    // A workload that records every acquisition itself (bulk): no bypass either.
    let p = point(
        LockAlgo::Ticket,
        Workload::Bulk {
            policy: BreakPolicy::WhenContended,
            mix: vec![BulkClass {
                name: "batch".into(),
                weight: 1,
                items: 4,
            }],
            per_item: Dist::Fixed { ns: 100 },
            think: Dist::Fixed { ns: 500 },
            lines: 1,
        },
        1,
        None,
    );
    let r = run_point(&plan(vec![p.clone()]), &p, 0, D, W, &test_opts());
    progressed_or_lost_cpu(&r, "bulk");
    if r.point.acquisitions == 0 {
        return;
    }
    assert_eq!(
        (r.point.bypass_max, r.point.bypass_mean),
        (0.0, 0.0),
        "{:?}",
        r.point
    );
}

#[test]
fn double_and_bulk_points_record_their_classes_and_virtual_nodes() {
    let n = map().len().min(2) as u32;
    let mut p = point(
        LockAlgo::Ticket,
        Workload::DoubleLock {
            policy: DoubleLockPolicy::Fair,
            interval: Dist::Exp { mean_ns: 500 },
            own_hold: Dist::Fixed { ns: 100 },
            pair_hold: Dist::Fixed { ns: 100 },
            lines: 1,
        },
        n,
        None,
    );
    p.placement.virtual_nodes = Some(vec![0, 1]);
    let r = run_point(&plan(vec![p.clone()]), &p, 0, D, W, &test_opts());
    assert!(r.threads.iter().all(|t| t.class == "pass"));
    progressed_or_lost_cpu(&r, "double");
    if n == 2 {
        assert_eq!(r.threads[1].node, 1);
    }

    let b = point(
        LockAlgo::TAS,
        Workload::Bulk {
            policy: BreakPolicy::WhenContended,
            mix: vec![
                BulkClass {
                    name: "single".into(),
                    weight: 1,
                    items: 1,
                },
                BulkClass {
                    name: "batch".into(),
                    weight: 1,
                    items: 31,
                },
            ],
            per_item: Dist::Fixed { ns: 100 },
            think: Dist::Uniform {
                lo_ns: 500,
                hi_ns: 2000,
            },
            lines: 1,
        },
        n,
        None,
    );
    let r = run_point(&plan(vec![b.clone()]), &b, 0, D, W, &test_opts());
    let classes: std::collections::BTreeSet<&str> =
        r.threads.iter().map(|t| t.class.as_str()).collect();
    // Class 0 always has rows; "batch" only if a batch request fell in the window.
    assert!(classes.contains("single"), "{classes:?}");
    assert!(
        classes.iter().all(|c| ["single", "batch"].contains(c)),
        "{classes:?}"
    );
    assert_eq!(r.point.ops, r.point.acquisitions);
}

/// A TAS lock that counts the real grants inside and after a window, and holds
/// the time its hog thread took it.
mod blocked {
    use locklab_runner::env::Env;
    use locklab_runner::locks::{tas::Tas, LocalState, Lock};
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
    use std::sync::Arc;
    use std::time::Instant;

    pub struct Spy {
        pub inner: Tas,
        pub base: Instant,
        pub end_ns: u64,
        pub in_window: Arc<AtomicU64>,
        pub after_end: Arc<AtomicU64>,
        /// When thread 1 last began an acquisition, ns since `base`.
        pub entered: Arc<AtomicU64>,
    }

    impl Lock for Spy {
        async fn acquire<E: Env>(&self, env: &E, local: &mut LocalState) {
            if env.tid() == 1 {
                let now = self.base.elapsed().as_nanos() as u64;
                self.entered.store(now, Relaxed);
            }
            self.inner.acquire(env, local).await;
            let n = if self.base.elapsed().as_nanos() as u64 >= self.end_ns {
                &self.after_end
            } else {
                &self.in_window
            };
            n.fetch_add(1, Relaxed);
        }
        async fn release<E: Env>(&self, env: &E, local: &mut LocalState) {
            self.inner.release(env, local).await
        }
        async fn try_acquire<E: Env>(&self, env: &E, local: &mut LocalState) -> bool {
            self.inner.try_acquire(env, local).await
        }
        async fn is_contended<E: Env>(&self, env: &E, local: &mut LocalState) -> bool {
            self.inner.is_contended(env, local).await
        }
    }
}

#[test]
fn a_counted_acquisition_blocked_across_the_window_end_is_cut_off_not_counted() {
    // `recording = sampled`: a thread that has been acquiring is blocked, in an
    // acquisition it only counts, by a hog holding the lock past the window's end.
    // Its wait must be recorded cut off at the end, and its grant after the end must
    // not be counted in the window (its clock reading is not the stale one).
    use locklab_runner::env::LineAlloc;
    use locklab_runner::locks::{tas::Tas, LocalState, Lock, Site};
    use locklab_runner::native::{block_on, Arena, BlockOn, Clock, EnvConfig, NativeEnv, WorkLoop};
    use locklab_runner::stats::{self, RunContext, ThreadStats, Window};
    use locklab_runner::workload::{self, Locks};
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    let (in_window, after_end) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let entered = Arc::new(AtomicU64::new(0));
    let hog_at = AtomicU64::new(0);
    let base = Instant::now();
    let ms = 1_000_000;
    let window = Window {
        start_ns: 0,
        end_ns: 30 * ms,
    };
    let w = single(0, 200, 0);
    let shape = workload::shape(&w, 2);
    let mut alloc = LineAlloc::new();
    let locks = Locks::build(&shape, 2, &mut alloc, |a, s: Site| blocked::Spy {
        inner: Tas::new(a, s, Relax::Pause),
        base,
        end_ns: window.end_ns,
        in_window: in_window.clone(),
        after_end: after_end.clone(),
        entered: entered.clone(),
    });
    let arena = Arena::new(alloc.count() as usize, locks.len());
    let config = |seed| EnvConfig {
        clock: Clock::Real(base),
        seed,
        spin: Spin::YieldAfter(64),
        work: WorkLoop::uncalibrated(),
        time_every: 64,
        recording: Recording::Sampled,
    };
    let (ops, st) = std::thread::scope(|s| {
        let (arena, locks, in_window, hog_at) = (&arena, &locks, &*in_window, &hog_at);
        s.spawn(move || {
            // Once the worker has been granted the lock a thousand times, take it and
            // keep it until 20 ms past the window's end.
            while in_window.load(Relaxed) < 1_000 {
                std::thread::yield_now();
            }
            let env = NativeEnv::new(arena, 0, 2, 0, config(7));
            let mut local = LocalState::new(0, 1);
            block_on(locks.get(0).acquire(&env, &mut local));
            hog_at.store(base.elapsed().as_nanos() as u64, Relaxed);
            let until = Duration::from_nanos(window.end_ns + 20 * ms);
            std::thread::sleep(until.saturating_sub(base.elapsed()));
            block_on(locks.get(0).release(&env, &mut local));
        });
        s.spawn(move || {
            let env = NativeEnv::new(arena, 1, 2, 0, config(8));
            let mut local = LocalState::new(1, 1);
            let mut st = ThreadStats::new(1, 0, window, &["lock"], 0).without_grant_order();
            let ops = workload::drive_thread(
                &BlockOn,
                &w,
                locks,
                &env,
                &mut local,
                &mut st,
                window.end_ns,
            );
            (ops, st)
        })
        .join()
        .unwrap()
    });
    let hog_at = hog_at.load(Relaxed);
    // The hog counted once in the window (or after it) too.
    let (inside, after) = (in_window.load(Relaxed), after_end.load(Relaxed));
    let ctx = RunContext {
        point: 0,
        point_id: "p".into(),
        mode: Mode::Native,
        rep: 0,
        seed: 1,
        lock: "tas".into(),
        lock_algo: "tas".into(),
        workload: "single".into(),
        ops: Some(ops),
        critical_nominal_ns: 0.0,
        critical_achieved_ns: 0.0,
        outside_nominal_ns: 200.0,
        outside_achieved_ns: 200.0,
        noise: String::new(),
        node_distance: stats::default_node_distance,
        extra: Default::default(),
    };
    let r = stats::summarize(&ctx, &[st]);
    assert_eq!(r.point.acquisitions, ops);
    // Never more than the real grants in the window (the hog's included there).
    assert!(
        ops <= inside,
        "counted {ops}, granted in the window {inside}"
    );
    // The blocked acquisition began after the hog's grant or before it; on a busy
    // machine the worker may only get to it well after.
    let blocked_from = hog_at.max(entered.load(Relaxed));
    if blocked_from < window.end_ns - 5 * ms {
        // Blocked from before the end: the grant came after it, the wait was cut off
        // there and lasted at least from the blocked acquisition's start to the end.
        assert!(after >= 1, "no grant after the end");
        assert_eq!(r.point.waits_censored, 1);
        assert!(r.point.wait_max_censored);
        assert!(
            r.point.wait_max_ns >= (window.end_ns - blocked_from) as f64 * 0.9,
            "wait_max {} for a wait from {blocked_from} to {}",
            r.point.wait_max_ns,
            window.end_ns
        );
    }
}
