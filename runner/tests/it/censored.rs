//! Waits cut off by the end of the measured window, simulated: a starved thread is
//! seen (its wait is at least the window, its bypass every grant it saw pass), and a
//! FIFO lock still bounds bypass by n − 1.

use crate::common::{plan, point, single};
use locklab_model::plan::{Costs, LockAlgo, Machine, Topology};
use locklab_model::records::RunRecord;
use locklab_runner::sim;

/// One socket of eight cores.
fn box8() -> Topology {
    Topology::Machine(Machine {
        name: "box8".into(),
        sockets: 1,
        cores_per_socket: 8,
        smt: 1,
        nodes_per_socket: 1,
        llcs_per_socket: 1,
        costs: Costs::levels(10, 40, 40, 40, 5),
        l2_bytes: None,
        llc_bytes: None,
        freq_hz: None,
    })
}

const DURATION: u64 = 1_000_000;
const WARMUP: u64 = 100_000;

/// Eight threads on one hot lock, critical section 10 ns, no outside work.
fn hot8(algo: LockAlgo) -> RunRecord {
    let p = point(algo, single(10, 0, 0), 8, None);
    let mut pl = plan(vec![p.clone()]);
    pl.topology = box8();
    sim::run_point(&pl, &p, 0, DURATION, WARMUP)
}

#[test]
fn a_starved_ttas_waiter_fails_both_fairness_bounds() {
    let r = hot8(LockAlgo::Ttas { backoff: None });
    let p = &r.point;
    assert_eq!(p.skipped, None);
    // One thread takes every acquisition; the seven others wait the whole window.
    let starved: Vec<_> = r.threads.iter().filter(|t| t.acquisitions == 0).collect();
    assert_eq!(starved.len(), 7, "{:?}", r.threads);
    assert!(p.jain < 0.13, "jain {}", p.jain);
    for t in &starved {
        assert_eq!(t.waits_censored, 1);
        assert!(t.wait_max_ns >= DURATION as f64, "{t:?}");
        assert!(t.wait_max_censored && t.bypass_max_censored);
        assert!(t.bypass_max > 1_000.0, "{t:?}");
    }
    // `expect bypass_max <= 7` and `expect wait_max_ns <= 1us` fail.
    assert!(p.bypass_max > 7.0, "bypass_max {}", p.bypass_max);
    assert!(p.wait_max_ns > 1_000.0, "wait_max_ns {}", p.wait_max_ns);
    assert!(p.wait_max_censored && p.bypass_max_censored);
    // The seven, and the holder when the window ends while it re-takes the lock.
    assert!((7..=8).contains(&p.waits_censored), "{}", p.waits_censored);
    // The holder re-takes its own lock: no hand-off at all.
    assert_eq!(p.reacquisitions, Some(p.acquisitions));
    assert!(r.handoffs.is_empty(), "{:?}", r.handoffs);
    assert!(p.handoff_local_frac.is_nan());
}

#[test]
fn fifo_locks_bound_bypass_by_n_minus_one_with_cut_off_waits() {
    for algo in [LockAlgo::Ticket, LockAlgo::Mcs, LockAlgo::CLH] {
        let r = hot8(algo.clone());
        let p = &r.point;
        // The seven waiters in the queue when the window ends are cut off.
        assert!(p.waits_censored >= 6, "{algo:?}: {}", p.waits_censored);
        assert!(p.bypass_max <= 7.0, "{algo:?}: bypass_max {}", p.bypass_max);
        assert!(p.jain > 0.99, "{algo:?}: jain {}", p.jain);
        // FIFO: each grant goes to the next thread in the queue, never back.
        assert_eq!(p.reacquisitions, Some(0), "{algo:?}");
    }
}

/// `threads` threads on one lock of `algo` on the eight-core box, critical 10 ns.
fn box8_point(algo: LockAlgo, threads: u32, outside: u64) -> RunRecord {
    let p = point(algo, single(10, outside, 1), threads, None);
    let mut pl = plan(vec![p.clone()]);
    pl.topology = box8();
    sim::run_point(&pl, &p, 0, DURATION, WARMUP)
}

#[test]
fn a_simulated_wait_runs_from_the_first_failed_attempt_as_a_native_one() {
    for algo in [
        LockAlgo::TAS,
        LockAlgo::Ticket,
        LockAlgo::Mcs,
        LockAlgo::Pthread,
    ] {
        // Alone, every first attempt succeeds: no wait at all, though each acquisition
        // costs its atomic (it used to count as a wait of that length).
        let alone = box8_point(algo.clone(), 1, 0);
        assert!(alone.point.acquisitions > 10_000, "{algo:?}");
        assert_eq!(alone.point.wait_max_ns, 0.0, "{algo:?}: {:?}", alone.point);
        // Two threads meeting rarely (10 ns held in every 5 µs each): most first
        // attempts succeed, after fetching the lock's line from the other core (40
        // ns), which is no wait either.
        let rare = box8_point(algo.clone(), 2, 5_000);
        assert_eq!(rare.point.wait_p50_ns, 0.0, "{algo:?}: {:?}", rare.point);
        // Two threads without work: the one that did not just release finds the lock
        // taken and waits (TAS's and pthread's releasers, taking it straight back, mostly
        // do not).
        let hot = box8_point(algo.clone(), 2, 0);
        assert!(hot.point.wait_p999_ns > 40.0, "{algo:?}: {:?}", hot.point);
    }
}
