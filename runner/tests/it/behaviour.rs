//! Lock behaviour under the deterministic step executor: mutual exclusion under many
//! seeded interleavings, FIFO bounds, try/contended answers, CNA's queue sorting.

use crate::common::{all_algos, cna, one_lock, single};
use crate::step::{run_all, Sched, StepEnv, World};
use locklab_model::plan::{CnaVariant, LockAlgo, Workload};
use locklab_model::records::RunRecord;
use locklab_runner::env::{Addr, Env, LineAlloc};
use locklab_runner::locks::{with_lock, LocalState, Lock, LockVisitor, Site};
use locklab_runner::stats::{self, RunContext, ThreadStats, Window};
use locklab_runner::workload::{self, Locks};
use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering::Relaxed;

type Fut<'a> = Pin<Box<dyn Future<Output = ()> + 'a>>;

/// `threads` threads × `iters` critical sections of a non-atomic increment; checks
/// that no two threads are ever inside together and no update is lost.
fn exclusion(algo: &LockAlgo, threads: usize, iters: u64, sched: Sched) {
    exclusion_on(algo, vec![0; threads], iters, sched)
}

fn exclusion_on(algo: &LockAlgo, nodes: Vec<u32>, iters: u64, sched: Sched) {
    with_lock(
        algo,
        Exclusion {
            nodes,
            iters,
            sched,
        },
    )
}

struct Exclusion {
    nodes: Vec<u32>,
    iters: u64,
    sched: Sched,
}

impl LockVisitor for Exclusion {
    type Output = ();
    fn visit<L: Lock>(self, make: impl Fn(&mut LineAlloc, Site) -> L) {
        let Exclusion {
            nodes,
            iters,
            sched,
        } = self;
        exclusion_with(make, nodes, iters, sched)
    }
}

fn exclusion_with<L: Lock>(
    make: impl Fn(&mut LineAlloc, Site) -> L,
    nodes: Vec<u32>,
    iters: u64,
    sched: Sched,
) {
    let threads = nodes.len();
    let (lock, mut alloc) = one_lock(make, threads);
    let counter = Addr::new(alloc.line(), 0);
    let world = World::new(nodes, 1);
    let inside = Cell::new(None::<usize>);
    let futs: Vec<Fut<'_>> = (0..threads)
        .map(|t| {
            let (lock, world, inside) = (&lock, &world, &inside);
            Box::pin(async move {
                let env = StepEnv::new(world, t);
                let mut local = LocalState::new(t, 1);
                for _ in 0..iters {
                    lock.acquire(&env, &mut local).await;
                    assert_eq!(inside.replace(Some(t)), None, "two holders at once");
                    let v = env.load(counter, Relaxed).await;
                    env.pause().await;
                    env.store(counter, v + 1, Relaxed).await;
                    assert_eq!(inside.replace(None), Some(t));
                    lock.release(&env, &mut local).await;
                }
            }) as Fut<'_>
        })
        .collect();
    run_all(futs, sched, 5_000_000);
    assert_eq!(world.peek(counter), threads as u64 * iters, "lost updates");
}

#[test]
fn every_lock_excludes_under_many_interleavings() {
    for (name, algo) in all_algos() {
        exclusion(&algo, 3, 30, Sched::RoundRobin);
        for seed in 1..25 {
            exclusion(&algo, 3, 15, Sched::Random(seed * 7919));
        }
        // The queue locks with more threads than one node line can hide problems in.
        exclusion(&algo, 5, 8, Sched::Random(99));
        eprintln!("{name}: ok");
    }
}

#[test]
fn cna_excludes_while_it_parks_and_flushes_remote_waiters() {
    // Six threads on alternating nodes: heads find remote successors with successors
    // of their own, so waiters move to the secondary queue; threshold 0 flushes them at
    // every hand-off, a huge one never does (they return when the main queue drains).
    for v in [CnaVariant::V14, CnaVariant::V15] {
        for threshold in [0, 300, u64::MAX / 4] {
            let algo = cna(v, threshold, 0.0);
            for seed in 1..20 {
                exclusion_on(
                    &algo,
                    vec![0, 1, 0, 1, 0, 1],
                    12,
                    Sched::Random(seed * 104_729),
                );
            }
            exclusion_on(&algo, vec![0, 1, 0, 1, 0, 1], 20, Sched::RoundRobin);
        }
    }
}

#[test]
fn try_acquire_and_is_contended_answer_truthfully() {
    for (name, algo) in all_algos() {
        with_lock(&algo, TryAndContended(name));
    }
}

struct TryAndContended(&'static str);

impl LockVisitor for TryAndContended {
    type Output = ();
    fn visit<L: Lock>(self, make: impl Fn(&mut LineAlloc, Site) -> L) {
        try_and_contended_with(self.0, make)
    }
}

fn try_and_contended_with<L: Lock>(name: &str, make: impl Fn(&mut LineAlloc, Site) -> L) {
    let (lock, _) = one_lock(make, 2);
    let world = World::new(vec![0, 0], 1);
    let observed = Cell::new((false, false, false));
    let phase = Cell::new(0);
    let futs: Vec<Fut<'_>> = vec![
        Box::pin({
            let (lock, world, observed, phase) = (&lock, &world, &observed, &phase);
            async move {
                let env = StepEnv::new(world, 0);
                let mut local = LocalState::new(0, 1);
                assert!(
                    lock.try_acquire(&env, &mut local).await,
                    "{name}: free lock"
                );
                let alone = lock.is_contended(&env, &mut local).await;
                phase.set(1);
                // Wait until thread 1 is (very probably) queued: poll a while.
                for _ in 0..2_000 {
                    env.pause().await;
                }
                let busy = lock.is_contended(&env, &mut local).await;
                observed.set((alone, busy, false));
                lock.release(&env, &mut local).await;
            }
        }),
        Box::pin({
            let (lock, world, observed, phase) = (&lock, &world, &observed, &phase);
            async move {
                let env = StepEnv::new(world, 1);
                let mut local = LocalState::new(1, 1);
                while phase.get() == 0 {
                    env.pause().await;
                }
                let got = lock.try_acquire(&env, &mut local).await;
                let (a, b, _) = observed.get();
                observed.set((a, b, got));
                lock.acquire(&env, &mut local).await;
                lock.release(&env, &mut local).await;
            }
        }),
    ];
    run_all(futs, Sched::RoundRobin, 1_000_000);
    let (alone, busy, stole) = observed.get();
    assert!(!alone, "{name}: contended with no waiter");
    assert!(!stole, "{name}: try_acquire succeeded on a held lock");
    assert!(busy, "{name}: a queued waiter was not seen");
}

/// Run the single-lock workload under the step executor and summarise it.
pub fn run_workload(
    algo: &LockAlgo,
    w: &Workload,
    nodes: Vec<u32>,
    end: u64,
    sched: Sched,
) -> RunRecord {
    run_workload_grants(algo, w, nodes, end, sched).0
}

/// As `run_workload`, also returning how many times lock 0 was granted.
pub fn run_workload_grants(
    algo: &LockAlgo,
    w: &Workload,
    nodes: Vec<u32>,
    end: u64,
    sched: Sched,
) -> (RunRecord, u64) {
    with_lock(
        algo,
        Workloads {
            algo,
            w,
            nodes,
            end,
            sched,
        },
    )
}

struct Workloads<'a> {
    algo: &'a LockAlgo,
    w: &'a Workload,
    nodes: Vec<u32>,
    end: u64,
    sched: Sched,
}

impl LockVisitor for Workloads<'_> {
    type Output = (RunRecord, u64);
    fn visit<L: Lock>(self, make: impl Fn(&mut LineAlloc, Site) -> L) -> (RunRecord, u64) {
        run_workload_with(&self, make)
    }
}

fn run_workload_with<L: Lock>(
    run: &Workloads<'_>,
    make: impl Fn(&mut LineAlloc, Site) -> L,
) -> (RunRecord, u64) {
    let Workloads {
        algo,
        w,
        ref nodes,
        end,
        sched,
    } = *run;
    let n = nodes.len();
    let shape = workload::shape(w, n as u32);
    let mut alloc = LineAlloc::new();
    let locks = Locks::build(&shape, n, &mut alloc, make);
    let world = World::new(nodes.clone(), locks.len());
    let class_refs: Vec<&str> = shape.classes.iter().map(String::as_str).collect();
    // The whole run is the window: no warm-up to discard in step time.
    let window = Window {
        start_ns: 0,
        end_ns: end,
    };
    let mut all: Vec<ThreadStats> = (0..n)
        .map(|t| ThreadStats::new(t as u32, nodes[t], window, &class_refs, 0))
        .collect();
    let ops = Cell::new(0u64);
    {
        let futs: Vec<Fut<'_>> = all
            .iter_mut()
            .enumerate()
            .map(|(t, st)| {
                let (locks, world, ops) = (&locks, &world, &ops);
                Box::pin(async move {
                    let env = StepEnv::new(world, t);
                    let mut local = LocalState::new(t, locks.len());
                    let o = workload::run_thread(w, locks, &env, &mut local, st, end).await;
                    ops.set(ops.get() + o);
                }) as Fut<'_>
            })
            .collect();
        run_all(futs, sched, 50_000_000);
    }
    let ctx = RunContext {
        point: 0,
        point_id: "step".into(),
        mode: locklab_model::plan::Mode::Sim,
        rep: 0,
        seed: 0,
        lock: algo.kind_name().into(),
        lock_algo: algo.kind_name().into(),
        workload: w.kind_name().into(),
        ops: Some(ops.get()),
        critical_nominal_ns: 0.0,
        critical_achieved_ns: 0.0,
        outside_nominal_ns: 0.0,
        outside_achieved_ns: 0.0,
        noise: "step".into(),
        node_distance: stats::default_node_distance,
        extra: Default::default(),
    };
    let grants = world.grants(0);
    (stats::summarize(&ctx, &all), grants)
}

#[test]
fn fifo_locks_bound_bypass_by_n_minus_one() {
    let w = single(20, 30, 1);
    for algo in [LockAlgo::Ticket, LockAlgo::Mcs, LockAlgo::CLH] {
        for n in [2usize, 3] {
            let r = run_workload(&algo, &w, vec![0; n], 40_000, Sched::RoundRobin);
            assert!(
                r.point.acquisitions > 100,
                "{algo:?}: {}",
                r.point.acquisitions
            );
            assert!(
                r.point.bypass_max <= (n - 1) as f64,
                "{algo:?} with {n} threads: bypass {}",
                r.point.bypass_max
            );
        }
    }
}

#[test]
fn cna_keeps_the_lock_on_one_node_until_the_threshold() {
    // Six threads on two (virtual) nodes, a long critical section so a queue forms
    // (holder, pending waiter, queue head, and successors for the head to sort).
    let w = single(200, 50, 1);
    let nodes = vec![0, 1, 0, 1, 0, 1];
    let end = 400_000;
    let stock = run_workload(
        &LockAlgo::Qspinlock {
            pending_loops: None,
        },
        &w,
        nodes.clone(),
        end,
        Sched::RoundRobin,
    );
    for v in [CnaVariant::V14, CnaVariant::V15] {
        // v14 counts whole jiffies (1 ms): its runs go past a few.
        let end = match v {
            CnaVariant::V14 => 4_000_000,
            CnaVariant::V15 => end,
        };
        let long = run_workload(
            &cna(v, u64::MAX / 4, 0.0),
            &w,
            nodes.clone(),
            end,
            Sched::RoundRobin,
        );
        assert!(
            long.point.handoff_local_frac > stock.point.handoff_local_frac + 0.2,
            "{v:?}: cna local {} vs stock {}",
            long.point.handoff_local_frac,
            stock.point.handoff_local_frac
        );
        // A short threshold flushes the secondary queue: every thread keeps running.
        let short = run_workload(
            &cna(v, 2_000, 0.0),
            &w,
            nodes.clone(),
            end,
            Sched::RoundRobin,
        );
        let min = short.threads.iter().map(|t| t.acquisitions).min().unwrap();
        assert!(
            min > 10,
            "{v:?}: a thread starved with a short threshold ({min})"
        );
        assert!(
            short.point.handoff_local_frac < long.point.handoff_local_frac,
            "{v:?}: short {} long {}",
            short.point.handoff_local_frac,
            long.point.handoff_local_frac
        );
    }
}
