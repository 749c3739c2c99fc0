//! The native executor end to end, on a CPU table made for the test (never the CI
//! box's own topology): records, skips with reasons, progress, classes.

use crate::common::{all_algos, plan, point, single};
use locklab_model::plan::*;
use locklab_model::topology::{CpuInfo, CpuMap};
use locklab_runner::native::{pin, run_point, run_point_with_progress, NativeOptions, Spin};
use std::cell::RefCell;

/// A one-socket table over the CPUs this process may use (at most 2).
fn map() -> CpuMap {
    let allowed = pin::allowed_cpus().unwrap_or_else(|| vec![0]);
    let cpus: Vec<CpuInfo> = allowed
        .iter()
        .take(2)
        .enumerate()
        .map(|(i, &os)| CpuInfo {
            os_id: os,
            socket: 0,
            core: i as u32,
            smt: 0,
            node: 0,
            llc: 0,
        })
        .collect();
    CpuMap {
        cores: cpus.len() as u32,
        cpus,
        sockets: 1,
        nodes: 1,
    }
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
    for algo in [LockAlgo::Tas, LockAlgo::Ticket, LockAlgo::Mcs] {
        let p = point(algo.clone(), single(0, 0, 0), n, None);
        let mut pl = plan(vec![p.clone()]);
        pl.run.recording = Recording::Sampled;
        let r = run_point(&pl, &p, 0, D, W, &test_opts());
        assert!(r.point.skipped.is_none(), "{algo:?}: {:?}", r.point.skipped);
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
    let p = point(LockAlgo::Tas, w, 1, None);
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
        LockAlgo::Tas,
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
