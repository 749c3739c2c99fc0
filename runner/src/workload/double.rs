//! Per-CPU locks and the kernel's `double_lock_balance` (CLAIMS.md, seed 000).
//!
//! Each thread, every `interval`, takes its own lock (lock index = thread index) for
//! `own_hold`, then double-locks it with each other thread's lock in turn
//! (`tid + 1, tid + 2, ...` modulo n), holds both for `pair_hold` and releases the
//! other one (`double_unlock_balance`), keeping its own; finally it releases its own.
//! A lock's "address" is its index.
//!
//! - `ordered` (the old logic): trylock the other; on failure, if the other has the
//!   lower address, drop our own, take the other, retake our own; otherwise keep our
//!   own and wait for the other. Lower-numbered threads keep their place and win.
//! - `fair` (the patch): always drop our own, then take both, lower address first
//!   (`double_rq_lock`).
//!
//! Wait class `pass`: from the start of `double_lock_balance` to holding both; one
//! operation = one pass.

use super::{sample, Locks};
use crate::env::Env;
use crate::locks::LocalState;
use crate::stats::ThreadStats;
use locklab_dsl::plan::{Dist, DoubleLockPolicy};

pub struct Params<'a> {
    pub policy: DoubleLockPolicy,
    pub interval: &'a Dist,
    pub own_hold: &'a Dist,
    pub pair_hold: &'a Dist,
}

/// Take lock `other` while holding `own`, by `policy`; on return both are held.
/// Returns whether `own` was released and retaken (its grant is then noted again).
pub async fn double_lock_balance<E: Env>(
    policy: DoubleLockPolicy,
    locks: &Locks,
    env: &E,
    local: &mut LocalState,
    own: usize,
    other: usize,
) -> bool {
    let (o, b) = (&locks.locks[own], &locks.locks[other]);
    match policy {
        DoubleLockPolicy::Ordered => {
            if b.try_acquire(env, local).await {
                return false;
            }
            if other < own {
                o.release(env, local).await;
                b.acquire(env, local).await;
                o.acquire(env, local).await;
                true
            } else {
                b.acquire(env, local).await;
                false
            }
        }
        DoubleLockPolicy::Fair => {
            o.release(env, local).await;
            let (lo, hi) = if own < other { (o, b) } else { (b, o) };
            lo.acquire(env, local).await;
            hi.acquire(env, local).await;
            true
        }
    }
}

pub async fn run<E: Env>(
    p: &Params<'_>,
    locks: &Locks,
    env: &E,
    local: &mut LocalState,
    stats: &mut ThreadStats,
    end_ns: u64,
) -> u64 {
    let n = locks.len();
    let own = env.tid();
    let window = stats.window();
    let mut ops = 0;
    'outer: loop {
        env.work(sample(p.interval, env)).await;
        if env.now() >= end_ns {
            break;
        }
        let own_lock = &locks.locks[own];
        own_lock.acquire(env, local).await;
        env.note_grant(own);
        locks.touch(env, own).await;
        env.work(sample(p.own_hold, env)).await;
        for k in 1..n {
            let other = (own + k) % n;
            let t0 = env.now();
            if t0 >= end_ns {
                own_lock.release(env, local).await;
                break 'outer;
            }
            let arrival = env.grants(other);
            let retaken = double_lock_balance(p.policy, locks, env, local, own, other).await;
            let t1 = env.now();
            let (before, from) = env.note_grant(other);
            if retaken {
                env.note_grant(own);
            }
            locks.touch(env, own).await;
            locks.touch(env, other).await;
            env.work(sample(p.pair_hold, env)).await;
            let t2 = env.now();
            // double_unlock_balance: release the other, keep our own.
            locks.locks[other].release(env, local).await;
            stats.record_acquire(0, t1, t1 - t0, before.saturating_sub(arrival), from);
            stats.record_hold(0, t1, t2 - t1);
            if window.contains(t1) {
                ops += 1;
            }
        }
        own_lock.release(env, local).await;
    }
    ops
}
