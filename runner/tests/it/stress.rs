//! Native stress: more threads than this machine's cores (4 on 2), waiters yielding
//! after a few spins so a preempted holder gets to run, a fixed number of critical
//! sections each doing a non-atomic increment and an owner check. The invariant is
//! exact (counter = threads × iterations, never two owners), so the test passes or
//! fails deterministically whatever the timing.

use crate::common::{all_algos, one_lock};
use locklab_model::plan::LockAlgo;
use locklab_runner::env::{Addr, Env, LineAlloc};
use locklab_runner::locks::{with_lock, LocalState, Lock, LockVisitor, Site};
use locklab_runner::native::{block_on, Arena, NativeEnv};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicU64, Ordering};

const THREADS: usize = 4;
const ITERS: u64 = 3_000;

fn stress(algo: &LockAlgo) {
    with_lock(algo, Stress);
}

struct Stress;

impl LockVisitor for Stress {
    type Output = ();
    fn visit<L: Lock>(self, make: impl Fn(&mut LineAlloc, Site) -> L) {
        stress_with(make)
    }
}

fn stress_with<L: Lock>(make: impl Fn(&mut LineAlloc, Site) -> L) {
    let (lock, mut alloc) = one_lock(make, THREADS);
    let line = alloc.line();
    let (counter, owner) = (Addr::new(line, 0), Addr::new(line, 1));
    let arena = Arena::new(alloc.count() as usize, 1);
    let violations = AtomicU64::new(0);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (lock, arena, violations) = (&lock, &arena, &violations);
            s.spawn(move || {
                let env = NativeEnv::for_test(arena, t, THREADS);
                let mut local = LocalState::new(t, 1);
                block_on(async {
                    for i in 0..ITERS {
                        lock.acquire(&env, &mut local).await;
                        if env.swap(owner, t as u64 + 1, Relaxed).await != 0 {
                            violations.fetch_add(1, Ordering::Relaxed);
                        }
                        let v = env.load(counter, Relaxed).await;
                        if i % 7 == 0 {
                            // Widen the window a little now and then.
                            for _ in 0..20 {
                                env.pause().await;
                            }
                        }
                        env.store(counter, v + 1, Relaxed).await;
                        if env.swap(owner, 0, Relaxed).await != t as u64 + 1 {
                            violations.fetch_add(1, Ordering::Relaxed);
                        }
                        lock.release(&env, &mut local).await;
                    }
                });
            });
        }
    });
    assert_eq!(violations.load(Ordering::Relaxed), 0, "two owners at once");
    assert_eq!(arena.peek(counter), THREADS as u64 * ITERS, "lost updates");
}

#[test]
fn every_lock_survives_stress() {
    for (name, algo) in all_algos() {
        stress(&algo);
        eprintln!("{name}: ok");
    }
}

#[test]
fn cna_with_virtual_nodes_and_a_zero_threshold_survives_stress() {
    // Nodes alternate so the head always finds remote successors to park, and a
    // zero threshold flushes them at once: the secondary queue churns constantly.
    let algo = crate::common::cna(locklab_model::plan::CnaVariant::V15, 0, 0.0);
    with_lock(&algo, VirtualNodes);
}

struct VirtualNodes;

impl LockVisitor for VirtualNodes {
    type Output = ();
    fn visit<L: Lock>(self, make: impl Fn(&mut LineAlloc, Site) -> L) {
        virtual_nodes_with(make)
    }
}

fn virtual_nodes_with<L: Lock>(make: impl Fn(&mut LineAlloc, Site) -> L) {
    let (lock, mut alloc) = one_lock(make, THREADS);
    let counter = Addr::new(alloc.line(), 0);
    let arena = Arena::new(alloc.count() as usize, 1);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (lock, arena) = (&lock, &arena);
            s.spawn(move || {
                let env = NativeEnv::for_test(arena, t, THREADS).with_node(t as u32 % 2);
                let mut local = LocalState::new(t, 1);
                block_on(async {
                    for _ in 0..ITERS {
                        lock.acquire(&env, &mut local).await;
                        let v = env.load(counter, Relaxed).await;
                        env.store(counter, v + 1, Relaxed).await;
                        lock.release(&env, &mut local).await;
                    }
                });
            });
        }
    });
    assert_eq!(arena.peek(counter), THREADS as u64 * ITERS);
}
