//! Loom models: every `Env` lock, two or three threads, the real lock code over loom's
//! atomics (the native arena swaps them in under `--cfg loom`). The critical section
//! increments a `loom::cell::UnsafeCell`, so loom reports both a lost update and any
//! access that the lock's Acquire/Release orderings fail to order.
//!
//!     RUSTFLAGS="--cfg loom" cargo test -p locklab-runner --release --test it loom
//!
//! Not modelled here, and why:
//! - the OS-backed baselines (std, parking_lot, pthread) wrap OS mutexes loom cannot
//!   see; their exclusion is covered by the stress tests and their futex model by the
//!   step-executor tests;
//! - TAS, TTAS and CNA v15's scan loop: loom 0.7 cannot bound a retry loop of this
//!   shape (a waiter polling a word the holder will change, between yields) and stops
//!   with "exceeded maximum number of branches" even for a ten-line TTAS with two
//!   threads. Their ordering is the simplest of all (one Acquire RMW, one Release
//!   store), and their exclusion is checked by the stress tests and by the step
//!   executor's seeded interleavings. CNA's queue surgery is modelled through v14,
//!   which runs the same `order_queue` step once per head.

use locklab_model::plan::{ClhPredecessor, CnaParams, CnaVariant, LockAlgo};
use locklab_runner::env::LineAlloc;
use locklab_runner::locks::{with_lock, LocalState, Lock, LockVisitor, Site};
use locklab_runner::native::{block_on, Arena, Clock, NativeEnv};
use loom::cell::UnsafeCell;
use loom::sync::Arc;

/// One lock for `nthreads` threads, shared by every execution of a model, and the
/// lines to allocate. A lock is plain data (its lines' addresses); the atomics are the
/// arena's, made afresh in each execution.
fn shared<L: Lock>(
    make: impl Fn(&mut LineAlloc, Site) -> L,
    nthreads: usize,
) -> (&'static L, usize) {
    let mut alloc = LineAlloc::new();
    let lock = make(
        &mut alloc,
        Site {
            id: 0,
            nthreads,
            asks_contended: true,
        },
    );
    (Box::leak(Box::new(lock)), alloc.count() as usize)
}

/// `iters[t]` critical sections for thread t; nodes[t] its NUMA node.
fn model(algo: LockAlgo, iters: &'static [u32], nodes: &'static [u32], bound: usize) {
    with_lock(
        &algo,
        Model {
            iters,
            nodes,
            bound,
        },
    )
}

struct Model {
    iters: &'static [u32],
    nodes: &'static [u32],
    bound: usize,
}

impl LockVisitor for Model {
    type Output = ();
    fn visit<L: Lock>(self, make: impl Fn(&mut LineAlloc, Site) -> L) {
        model_with(self, make)
    }
}

fn model_with<L: Lock>(m: Model, make: impl Fn(&mut LineAlloc, Site) -> L) {
    let Model {
        iters,
        nodes,
        bound,
    } = m;
    let n = iters.len();
    let (lock, lines) = shared(make, n);
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(bound);
    // Spinning waiters re-read (and TAS re-swaps) while the holder is preempted;
    // each read is a branch.
    b.max_branches = 20_000;
    b.check(move || {
        let arena = Arc::new(Arena::new(lines, 1));
        let data = Arc::new(UnsafeCell::new(0u32));
        let handles: Vec<_> = (0..n)
            .map(|t| {
                let (arena, data) = (arena.clone(), data.clone());
                loom::thread::spawn(move || {
                    let env = NativeEnv::for_test(&arena, t, n)
                        .with_node(nodes[t])
                        .with_clock(Clock::Ticks(1));
                    let mut local = LocalState::new(t, 1);
                    for _ in 0..iters[t] {
                        block_on(lock.acquire(&env, &mut local));
                        // SAFETY: loom checks that the lock makes this exclusive.
                        data.with_mut(|p| unsafe { *p += 1 });
                        block_on(lock.release(&env, &mut local));
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        let total: u32 = iters.iter().sum();
        // SAFETY: every thread has joined.
        assert_eq!(data.with(|p| unsafe { *p }), total);
    });
}

#[test]
fn loom_ticket() {
    model(LockAlgo::Ticket, &[2, 1], &[0, 0], 3);
}

#[test]
fn loom_mcs() {
    model(LockAlgo::Mcs, &[2, 1], &[0, 0], 3);
}

#[test]
fn loom_clh_recycles_nodes() {
    // Two acquisitions by thread 0: its second uses the node it inherited.
    model(LockAlgo::CLH, &[2, 1], &[0, 0], 3);
}

#[test]
fn loom_clh_with_its_predecessor_in_its_node() {
    // The predecessor written into the node after the enqueue and read back at the
    // release, before the successor takes the node over: thread 1 can take over the
    // node thread 0 released and enqueue it again before thread 0 reads it. Read
    // after the release, thread 0's next acquisition waits on the wrong node, and
    // loom finds a thread spinning forever ("exceeded maximum number of branches").
    model(
        LockAlgo::Clh {
            predecessor: ClhPredecessor::Node,
        },
        &[2, 2],
        &[0, 0],
        3,
    );
}

#[test]
fn loom_qspinlock_two_threads() {
    model(
        LockAlgo::Qspinlock {
            pending_loops: None,
        },
        &[2, 1],
        &[0, 0],
        3,
    );
}

#[test]
fn loom_qspinlock_three_threads_reach_the_queue() {
    // A third thread is needed for the MCS queue path (the second takes pending).
    model(
        LockAlgo::Qspinlock {
            pending_loops: None,
        },
        &[1, 1, 1],
        &[0, 0, 0],
        1,
    );
}

#[test]
fn loom_qspinlock_counting_its_pending_loops() {
    // With the hand-over wait counted, the interleavings include a re-acquiring
    // releaser that finds the other thread's pending-to-locked hand-over in flight,
    // gives up and queues: two threads can reach the queue path. 0: no re-read; 1:
    // one `pause` and one re-read.
    for loops in [0, 1] {
        model(
            LockAlgo::Qspinlock {
                pending_loops: Some(loops),
            },
            &[2, 1],
            &[0, 0],
            3,
        );
    }
}

fn cna(variant: CnaVariant, threshold_ns: u64) -> LockAlgo {
    LockAlgo::Cna(CnaParams {
        threshold_ns,
        variant,
        shuffle_skip_prob: 0.0,
    })
}

#[test]
fn loom_cna_v14_flushes_at_once() {
    // Zero threshold: a non-empty secondary queue is flushed at the next hand-off.
    model(cna(CnaVariant::V14, 0), &[1, 1, 1], &[0, 1, 0], 1);
}

/// Thread 0 takes the lock twice; thread 1 tries once and enters only on success.
/// Loom reports the data access if a successful try is not ordered after the
/// previous holder's critical section.
fn model_try(algo: LockAlgo) {
    with_lock(&algo, ModelTry)
}

struct ModelTry;

impl LockVisitor for ModelTry {
    type Output = ();
    fn visit<L: Lock>(self, make: impl Fn(&mut LineAlloc, Site) -> L) {
        model_try_with(make)
    }
}

fn model_try_with<L: Lock>(make: impl Fn(&mut LineAlloc, Site) -> L) {
    let (lock, lines) = shared(make, 2);
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(3);
    b.check(move || {
        let arena = Arc::new(Arena::new(lines, 1));
        let data = Arc::new(UnsafeCell::new(0u32));
        let spawn = |t: usize| {
            let (arena, data) = (arena.clone(), data.clone());
            loom::thread::spawn(move || {
                let env = NativeEnv::for_test(&arena, t, 2).with_clock(Clock::Ticks(1));
                let mut local = LocalState::new(t, 1);
                let rounds = if t == 0 { 2 } else { 1 };
                let mut entered = 0;
                for _ in 0..rounds {
                    let got = if t == 0 {
                        block_on(lock.acquire(&env, &mut local));
                        true
                    } else {
                        block_on(lock.try_acquire(&env, &mut local))
                    };
                    if got {
                        // SAFETY: loom checks that the lock makes this exclusive.
                        data.with_mut(|p| unsafe { *p += 1 });
                        block_on(lock.release(&env, &mut local));
                        entered += 1;
                    }
                }
                entered
            })
        };
        let (a, b) = (spawn(0), spawn(1));
        let total = a.join().unwrap() + b.join().unwrap();
        // SAFETY: every thread has joined.
        assert_eq!(data.with(|p| unsafe { *p }), total);
    });
}

#[test]
fn loom_try_acquire_ticket() {
    model_try(LockAlgo::Ticket);
}

#[test]
fn loom_try_acquire_mcs() {
    model_try(LockAlgo::Mcs);
}

#[test]
fn loom_try_acquire_clh() {
    model_try(LockAlgo::CLH);
}

#[test]
fn loom_try_acquire_qspinlock() {
    model_try(LockAlgo::Qspinlock {
        pending_loops: None,
    });
}
