//! The scheduler model against the seed's claims: who gains from the patch, and
//! determinism.

use crate::sim::run_point;
use crate::sim::testkit::{plan_of, spec};
use locklab_model::plan::{
    Dist, LockAlgo, LockSpec, Placement, PlacementKind, PlacementPolicy, Point, SchedParams,
    WakeupScenario, WakeupSpec, Workload,
};

fn x5570() -> locklab_model::plan::Machine {
    let mut m = spec(2, 4, 2, 7, 37, 74);
    m.l2_bytes = Some(256 << 10);
    m.llc_bytes = Some(8 << 20);
    m
}

fn point(policy: PlacementPolicy, scenario: WakeupScenario, hogs: u32, ws: u64) -> Point {
    let trade = scenario == WakeupScenario::Trade;
    let spec = WakeupSpec {
        policy,
        scenario,
        // Messaging: VolanoMark's 10 rooms of 20 users, 4 threads per user.
        workers: if trade { 8 } else { 800 },
        worker_weight: if trade { 8192 } else { 1024 },
        hogs,
        hog_groups: 4,
        hog_group_weight: 1024,
        burst: if trade {
            Dist::Exp { mean_ns: 100_000 }
        } else {
            Dist::Uniform {
                lo_ns: 20_000,
                hi_ns: 50_000,
            }
        },
        sleep: Dist::Exp {
            mean_ns: if trade { 300_000 } else { 50_000 },
        },
        working_set_bytes: ws,
        sched: SchedParams {
            wakeup_granularity_ns: 4_000_000,
            latency_ns: 24_000_000,
            min_slice_ns: 3_000_000,
            migration_cost_ns: 500_000,
            idle_exit_ns: 3_000,
            smt_corun_factor: 0.6,
        },
    };
    Point {
        index: 0,
        id: "wakeup".into(),
        axes: Default::default(),
        seed: 3,
        threads: spec.workers,
        lock: LockSpec {
            name: "q".into(),
            algo: LockAlgo::Qspinlock {
                pending_loops: None,
            },
            axis: None,
            params: vec![],
        },
        workload: Workload::Wakeup(spec),
        placement: Placement {
            policy: PlacementKind::Compact,
            virtual_nodes: None,
        },
        modes: vec![],
    }
}

fn run(p: Point) -> locklab_model::plan::Plan {
    plan_of(&x5570(), vec![p])
}

fn measure(p: Point) -> (f64, f64, locklab_model::records::RunRecord) {
    let plan = run(p);
    let r = run_point(&plan, &plan.points[0], 0, 400_000_000, 50_000_000);
    assert!(r.point.skipped.is_none(), "{:?}", r.point.skipped);
    (
        r.point.throughput_ops_s,
        r.point.extra["migrations_per_wakeup"],
        r,
    )
}

/// Trade beside 16 hogs: the old policy stacks the workers on the NIC CPU (no core
/// is ever fully idle), the patch spreads them and migrates more; without hogs
/// both find idle cores and perform alike.
#[test]
fn trade_gains_from_the_patch_only_beside_hogs() {
    use PlacementPolicy::{Old, Patched};
    use WakeupScenario::Trade;
    let (old16, mig_old, r) = measure(point(Old, Trade, 16, 256 << 10));
    let (new16, mig_new, _) = measure(point(Patched, Trade, 16, 256 << 10));
    assert!(new16 / old16 >= 1.5, "gain {}", new16 / old16);
    assert!(mig_new > mig_old, "{mig_new} vs {mig_old}");
    let (old0, _, _) = measure(point(Old, Trade, 0, 256 << 10));
    let (new0, _, _) = measure(point(Patched, Trade, 0, 256 << 10));
    assert!((0.9..=1.1).contains(&(new0 / old0)), "gain {}", new0 / old0);
    // Wake-up latency is recorded per worker, class "wakeup".
    assert_eq!(r.threads.len(), 8);
    assert!(r.threads.iter().all(|t| t.class == "wakeup"));
    assert!(r.point.extra["wake_latency_p99_ns"] >= r.point.extra["wake_latency_p50_ns"]);
}

/// Messaging (800 threads on 16 CPUs): the patch moves wakees off the waker's
/// core, where the message is in L2, so it refills more per burst and loses
/// throughput at 128 KiB; the loss is gone at 4 KiB.
#[test]
fn messaging_pays_for_migrations_with_a_large_working_set() {
    use PlacementPolicy::{Old, Patched};
    use WakeupScenario::Messaging;
    let ratio = |ws| {
        let (o, mo, ro) = measure(point(Old, Messaging, 0, ws));
        let (n, mn, rn) = measure(point(Patched, Messaging, 0, ws));
        assert!(mn > mo, "{mn} vs {mo}");
        let refill = |r: &locklab_model::records::RunRecord| r.point.extra["refill_per_burst_ns"];
        assert!(
            refill(&rn) >= refill(&ro),
            "{} vs {}",
            refill(&rn),
            refill(&ro)
        );
        n / o
    };
    let (small, large) = (ratio(4 << 10), ratio(128 << 10));
    assert!(small >= 0.98, "{small}");
    assert!(large < small, "{large} vs {small}");
    assert!(large < 0.95, "{large}");
}

#[test]
fn the_scheduler_model_is_deterministic() {
    let p = point(
        PlacementPolicy::Patched,
        WakeupScenario::Trade,
        8,
        128 << 10,
    );
    let plan = run(p);
    let a = run_point(&plan, &plan.points[0], 0, 50_000_000, 5_000_000);
    let b = run_point(&plan, &plan.points[0], 0, 50_000_000, 5_000_000);
    assert_eq!(format!("{a:?}"), format!("{b:?}"));
    assert!(a.point.ops > 100);
}
