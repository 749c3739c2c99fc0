//! Hand-computed micro-scenarios for the engine and the coherence model.

use super::testkit::*;
use crate::env::{Addr, Env, LineAlloc};
use locklab_model::plan::PlacementKind;
use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering::Relaxed;

type Fut<'a> = Pin<Box<dyn Future<Output = ()> + 'a>>;

/// Two CPUs on different sockets pass a value back and forth through one line:
/// each round trip is two remote transfers.
#[test]
fn ping_pong_across_sockets_costs_two_remote_transfers_per_round_trip() {
    let m = spec(2, 2, 1, 10, 50, 190);
    let sl = slots(&m, PlacementKind::Scatter, 2);
    assert_eq!(sl.0.distance(sl.1[0].cpu, sl.1[1].cpu).as_str(), "remote");
    let mach = machine(&m, &sl, 1, 1);
    let a = Addr::new(0, 0);
    let stamps: [Cell<u64>; 2] = Default::default();
    const ROUNDS: u64 = 110;
    async fn player<E: Env>(e: &E, a: Addr, me: u64, stamps: &[Cell<u64>; 2]) {
        for i in 0..ROUNDS {
            let want = 2 * i + me;
            e.wait_until(a, Relaxed, |v| v == want).await;
            if me == 0 && i == 10 {
                stamps[0].set(e.now());
            }
            if me == 0 && i == ROUNDS - 1 {
                stamps[1].set(e.now());
            }
            e.store(a, want + 1, Relaxed).await;
        }
    }
    let envs = [mach.env(0), mach.env(1)];
    {
        let mut futs: Vec<Fut> = vec![
            Box::pin(player(&envs[0], a, 0, &stamps)),
            Box::pin(player(&envs[1], a, 1, &stamps)),
        ];
        let out = mach.run(&mut futs, u64::MAX);
        assert_eq!(out.finished, 2);
    }
    let per_round = (stamps[1].get() - stamps[0].get()) / (ROUNDS - 1 - 10);
    assert_eq!(per_round, 2 * 190);
}

/// k threads spinning on a TTAS lock: after each release the k re-reads queue on
/// the line (and the losers' swaps after them), so the hand-off grows by about one
/// to two transfers per spinner.
#[test]
fn ttas_handoff_grows_with_the_number_of_spinners() {
    let m = spec(1, 32, 1, 10, 50, 190);
    let handoff = |k: u32| {
        let r = Single {
            placement: PlacementKind::Compact,
            threads: k + 1,
            kind: Kind::Ttas,
            lines: 0,
            cs: 2_000,
            outside: 0,
            warmup: 50_000,
            duration: 500_000,
            seed: 7,
        }
        .run(&m);
        assert_eq!(r.violations, 0);
        r.mean_handoff_ns
    };
    let (h4, h16) = (handoff(4), handoff(16));
    // One transfer per spinner at least, two at most (plus the winner's swap).
    assert!((4.0 * 50.0..=2.0 * 5.0 * 55.0).contains(&h4), "h4 = {h4}");
    assert!(
        (16.0 * 50.0..=2.0 * 17.0 * 55.0).contains(&h16),
        "h16 = {h16}"
    );
    assert!(h16 > 3.0 * h4, "h4 = {h4}, h16 = {h16}");
}

/// An MCS hand-off: the successor sees its flag one transfer after the release
/// store, whatever the number of waiters (local spinning).
#[test]
fn mcs_handoff_is_one_transfer_and_does_not_grow_with_waiters() {
    let m = spec(4, 4, 1, 10, 50, 190);
    for threads in [4, 16] {
        // Scatter: consecutive threads on different sockets, FIFO order keeps
        // hand-offs mostly remote; one socket (compact, 4 threads): all at 50 ns.
        let r = Single {
            placement: PlacementKind::Compact,
            threads: threads.min(4),
            kind: Kind::Mcs,
            lines: 2,
            cs: 300,
            outside: 0,
            warmup: 20_000,
            duration: 200_000,
            seed: 3,
        }
        .run(&m);
        assert_eq!(r.violations, 0);
        assert_eq!(r.mean_handoff_ns, 50.0);
        let r = Single {
            placement: PlacementKind::Scatter,
            threads,
            kind: Kind::Mcs,
            lines: 2,
            cs: 300,
            outside: 0,
            warmup: 20_000,
            duration: 200_000,
            seed: 3,
        }
        .run(&m);
        assert_eq!(r.violations, 0);
        // FIFO over threads on distinct sockets in turn: every hand-off is remote.
        assert!(
            r.mean_handoff_ns >= 50.0 && r.mean_handoff_ns <= 1.05 * 190.0,
            "{}",
            r.mean_handoff_ns
        );
    }
}

/// A FIFO lock at saturation: throughput = 1 / (critical section + hand-off), where
/// the MCS hand-off on one socket is the flag transfer plus one transfer per data
/// line. (The releaser's read of its `next` pointer is a hit: the successor's write
/// to that line woke the releaser's own spin on the flag in the same line, which
/// re-read it while the releaser was still waiting.)
#[test]
fn fifo_lock_throughput_at_saturation() {
    let m = spec(1, 8, 1, 10, 50, 190);
    let (cs, lines) = (500, 2);
    let r = Single {
        placement: PlacementKind::Compact,
        threads: 8,
        kind: Kind::Mcs,
        lines,
        cs,
        outside: 100,
        warmup: 20_000,
        duration: 1_000_000,
        seed: 11,
    }
    .run(&m);
    assert_eq!(r.violations, 0);
    let period = 1_000_000.0 / r.acquisitions as f64;
    let expect = (cs + 50 + lines as u64 * 50) as f64;
    assert!(
        (period - expect).abs() <= 0.02 * expect,
        "period {period} ns, expected {expect}"
    );
    // FIFO: the grant order cycles through the threads.
    let o = &r.order[100..200];
    for w in o.windows(9) {
        assert_eq!(w[0], w[8]);
    }
    // Fair: every thread within one acquisition of the others.
    let (mn, mx) = (
        r.per_thread.iter().min().unwrap(),
        r.per_thread.iter().max().unwrap(),
    );
    assert!(mx - mn <= 1, "{:?}", r.per_thread);
}

/// The ticket lock spins globally: every waiter re-reads on each release, so it
/// collapses against MCS as waiters are added across sockets.
#[test]
fn ticket_collapses_where_mcs_does_not() {
    let m = spec(2, 8, 1, 10, 50, 190);
    let run = |kind| {
        Single {
            placement: PlacementKind::Scatter,
            threads: 16,
            kind,
            lines: 1,
            cs: 200,
            outside: 0,
            warmup: 20_000,
            duration: 400_000,
            seed: 5,
        }
        .run(&m)
        .acquisitions
    };
    let (t, mcs) = (run(Kind::Ticket), run(Kind::Mcs));
    assert!(mcs as f64 > 1.5 * t as f64, "ticket {t}, mcs {mcs}");
}

#[test]
fn same_seed_same_history_and_seeds_change_random_numbers() {
    let m = spec(2, 4, 2, 10, 50, 190);
    let a = Single {
        placement: PlacementKind::WillItScale,
        threads: 12,
        kind: Kind::Ttas,
        lines: 2,
        cs: 90,
        outside: 300,
        warmup: 5_000,
        duration: 100_000,
        seed: 9,
    }
    .run(&m);
    let b = Single {
        placement: PlacementKind::WillItScale,
        threads: 12,
        kind: Kind::Ttas,
        lines: 2,
        cs: 90,
        outside: 300,
        warmup: 5_000,
        duration: 100_000,
        seed: 9,
    }
    .run(&m);
    assert_eq!(a.order, b.order);
    assert_eq!(a.per_thread, b.per_thread);
    assert_eq!(a.outcome, b.outcome);

    let sl = slots(&m, PlacementKind::Compact, 2);
    let draws = |seed| {
        let mach = machine(&m, &sl, 1, seed);
        let e = mach.env(1);
        (e.random(), e.random())
    };
    assert_eq!(draws(1), draws(1));
    assert_ne!(draws(1), draws(2));
}

#[test]
fn a_deadlock_is_reported_not_hung() {
    let m = spec(1, 2, 1, 10, 50, 190);
    let sl = slots(&m, PlacementKind::Compact, 2);
    let mut alloc = LineAlloc::new();
    let l = alloc.line();
    let mach = machine(&m, &sl, alloc.count(), 1);
    let envs = [mach.env(0), mach.env(1)];
    async fn waiter<E: Env>(e: &E, l: u32) {
        e.wait_until(Addr::new(l, 0), Relaxed, |v| v == 1).await;
    }
    let mut futs: Vec<Fut> = vec![Box::pin(waiter(&envs[0], l)), Box::pin(waiter(&envs[1], l))];
    let out = mach.run(&mut futs, 1_000_000);
    assert!(out.deadlocked);
    assert_eq!(out.finished, 0);
}

/// Same plan, point, rep and seed: byte-identical records; and `run_points` gives
/// the same records, in input order, whatever the number of workers.
#[test]
fn run_point_is_deterministic_and_run_points_ignores_the_job_count() {
    use super::{run_point, run_points};
    use locklab_model::plan::{CnaParams, CnaVariant, LockAlgo};
    let m = x5_4();
    let cna = LockAlgo::Cna(CnaParams {
        threshold_ns: 20_000,
        variant: CnaVariant::V15,
        shuffle_skip_prob: 127.0 / 128.0,
    });
    let plan = plan_of(
        &m,
        vec![
            lock2_point(LockAlgo::Qspinlock, 40, 5),
            lock2_point(cna, 40, 6),
            lock2_point(LockAlgo::Ticket, 8, 7),
        ],
    );
    // The warm-up covers the start, when 40 simultaneous arrivals on the qspinlock
    // word's CAS loop (xchg_tail) serialise quadratically.
    let a = run_point(&plan, &plan.points[1], 0, 300_000, 400_000);
    let b = run_point(&plan, &plan.points[1], 0, 300_000, 400_000);
    assert!(a.point.skipped.is_none(), "{:?}", a.point.skipped);
    assert!(a.point.acquisitions > 100, "{}", a.point.acquisitions);
    assert_eq!(format!("{a:?}"), format!("{b:?}"));
    let c = run_point(&plan, &plan.points[1], 1, 300_000, 400_000);
    assert_ne!(a.point.seed, c.point.seed);

    let jobs = [(2, 0), (0, 0), (1, 1), (0, 1), (1, 0)];
    let one = run_points(&plan, &jobs, 200_000, 20_000, 1, &|_| {});
    let two = run_points(&plan, &jobs, 200_000, 20_000, 2, &|_| {});
    assert_eq!(format!("{one:?}"), format!("{two:?}"));
    let order: Vec<(u32, u32)> = one.iter().map(|r| (r.point.point, r.point.rep)).collect();
    assert_eq!(order, vec![(2, 0), (0, 0), (1, 1), (0, 1), (1, 0)]);
}

/// Every lock algorithm of the language runs simulated through the shared code,
/// keeps mutual exclusion (the workload's unprotected counters add up) and makes
/// progress at 16 threads over two sockets.
#[test]
fn every_lock_algorithm_runs_simulated() {
    use super::run_point;
    use locklab_model::plan::{Backoff, CnaParams, CnaVariant, LockAlgo};
    let m = spec(2, 4, 2, 10, 50, 190);
    // The catalogue, plus backoff and CNA thresholds short enough to act in 400 us.
    let cna = |variant, shuffle_skip_prob| {
        LockAlgo::Cna(CnaParams {
            threshold_ns: 50_000,
            variant,
            shuffle_skip_prob,
        })
    };
    let mut algos: Vec<LockAlgo> = crate::locks::catalogue()
        .into_iter()
        .map(|(_, a)| a)
        .collect();
    algos.extend([
        LockAlgo::Ttas {
            backoff: Some(Backoff {
                min_ns: 50,
                max_ns: 2_000,
            }),
        },
        cna(CnaVariant::V14, 0.5),
        cna(CnaVariant::V15, 0.0),
    ]);
    let points = algos.into_iter().map(|a| lock2_point(a, 16, 3)).collect();
    let plan = plan_of(&m, points);
    for p in &plan.points {
        let r = run_point(&plan, p, 0, 400_000, 50_000);
        assert!(r.point.skipped.is_none(), "{}: {:?}", p.id, r.point.skipped);
        assert!(
            r.point.acquisitions > 50,
            "{}: {} acquisitions",
            p.id,
            r.point.acquisitions
        );
        assert_eq!(r.threads.len(), 16);
        // Handed from node to node: the table covers both sockets.
        assert!(
            r.handoffs.iter().any(|h| h.distance == "remote"),
            "{}",
            p.id
        );
    }
}

#[test]
fn points_that_do_not_fit_the_model_are_skipped_with_a_reason() {
    use super::run_point;
    use locklab_model::plan::LockAlgo;
    let m = spec(1, 4, 1, 10, 50, 190);
    let plan = plan_of(&m, vec![lock2_point(LockAlgo::Mcs, 5, 1)]);
    let r = run_point(&plan, &plan.points[0], 0, 10_000, 0);
    assert!(r.point.skipped.as_deref().unwrap().contains("needs 5 CPUs"));
    assert!(r.point.throughput_ops_s.is_nan());
}

/// `swap_masked` is one RMW and `store_masked` one store, whatever the contention: 8
/// threads installing a 16-bit tail at the same instant are served back to back (no
/// CAS retries), each sees the previous tail, and the bits outside the mask survive.
#[test]
fn masked_operations_are_one_access_each() {
    const MASK: u64 = 0xffff_0000;
    let m = spec(1, 8, 1, 10, 50, 190);
    let sl = slots(&m, PlacementKind::Compact, 8);
    let mut alloc = LineAlloc::new();
    let l = alloc.line();
    let mach = machine(&m, &sl, alloc.count(), 1);
    let a = Addr::new(l, 0);
    mach.poke(a, 0x1);
    let olds: Vec<Cell<u64>> = (0..8).map(|_| Cell::new(u64::MAX)).collect();
    let done: Vec<Cell<u64>> = (0..8).map(|_| Cell::new(0)).collect();
    async fn tail<E: Env>(e: &E, a: Addr, old: &Cell<u64>, done: &Cell<u64>) {
        let me = (e.tid() as u64 + 1) << 16;
        old.set(e.swap_masked(a, MASK, me | 0xff, Relaxed).await);
        done.set(e.now());
    }
    let envs: Vec<_> = (0..8).map(|t| mach.env(t)).collect();
    let out = {
        let mut futs: Vec<Fut> = envs
            .iter()
            .enumerate()
            .map(|(t, e)| Box::pin(tail(e, a, &olds[t], &done[t])) as Fut)
            .collect();
        mach.run(&mut futs, u64::MAX)
    };
    assert_eq!(out.finished, 8);
    assert_eq!(out.counters.ops, 8, "one access per thread");
    // Served in issue order: the first finds the line nowhere (atomic cost only), each
    // later one a 50 ns transfer plus the atomic.
    let last = done.iter().map(Cell::get).max().unwrap();
    assert_eq!(last, 5 + 7 * 55);
    let mut tails: Vec<u64> = olds.iter().map(|c| c.get() >> 16).collect();
    assert!(olds.iter().all(|c| c.get() & 0xffff == 0x1));
    tails.sort_unstable();
    assert_eq!(tails, (0..8).collect::<Vec<_>>());
    let end = mach.peek(a);
    assert_eq!(end & 0xffff, 0x1);
    assert_eq!(end >> 32, 0);

    // store_masked: one store, leaving the other bits.
    let mach = machine(&m, &slots(&m, PlacementKind::Compact, 1), alloc.count(), 1);
    mach.poke(a, 0xabcd_0001);
    let envs = [mach.env(0)];
    async fn set<E: Env>(e: &E, a: Addr) {
        e.store_masked(a, 0xffff, 0x0001_0100, Relaxed).await;
    }
    let out = {
        let mut futs: Vec<Fut> = vec![Box::pin(set(&envs[0], a))];
        mach.run(&mut futs, u64::MAX)
    };
    assert_eq!(out.counters.ops, 1);
    assert_eq!(mach.peek(a), 0xabcd_0100);
}
