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

use super::{sample, View};
use crate::env::Env;
use crate::locks::{LocalState, Lock};
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
pub async fn double_lock_balance<E: Env, L: Lock>(
    policy: DoubleLockPolicy,
    locks: &View<'_, L>,
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

/// What one pass waited: the sum of its waits, the sum of the grants that overtook it,
/// and the node of the previous holder of the lock it waited longest for.
#[derive(Debug, Default, Clone, PartialEq)]
struct PassWait {
    wait_ns: u64,
    bypass: u64,
    longest_ns: u64,
    from: Option<u32>,
}

impl PassWait {
    fn add(&mut self, wait_ns: u64, bypass: u64, from: Option<u32>) {
        self.wait_ns += wait_ns;
        self.bypass += bypass;
        if from.is_some() && (self.from.is_none() || wait_ns > self.longest_ns) {
            self.longest_ns = wait_ns;
            self.from = from;
        }
    }
}

pub async fn run<E: Env, L: Lock>(
    p: &Params<'_>,
    locks: &View<'_, L>,
    env: &E,
    local: &mut LocalState,
    stats: &mut ThreadStats,
    end_ns: u64,
) -> u64 {
    let n = locks.len();
    let own = env.tid();
    let window = stats.window();
    let own_lock = &locks.locks[own];
    let mut ops = 0;
    'outer: loop {
        env.work(sample(p.interval, env)).await;
        let t0 = env.now();
        if t0 >= end_ns {
            break;
        }
        let mut pass = PassWait::default();
        // The pass begins by taking our own runqueue lock (schedule() does).
        let arrival = env.grants(own);
        own_lock.acquire(env, local).await;
        let t1 = env.now();
        let (before, from) = env.note_grant(own);
        pass.add(t1 - t0, before.saturating_sub(arrival), from);
        locks.touch(env, own).await;
        env.work(sample(p.own_hold, env)).await;
        let mut held = env.now() - t1;
        let mut last_grant = t1;
        for other in (0..n).filter(|&o| o != own) {
            let t0 = env.now();
            if t0 >= end_ns {
                // An unfinished pass is not recorded.
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
            pass.add(t1 - t0, before.saturating_sub(arrival), from);
            last_grant = t1;
            locks.touch(env, own).await;
            locks.touch(env, other).await;
            env.work(sample(p.pair_hold, env)).await;
            held += env.now() - t1;
            // double_unlock_balance: release the other, keep our own.
            locks.locks[other].release(env, local).await;
        }
        own_lock.release(env, local).await;
        // A pass counts where its last wait ended (when it held everything it needed).
        stats.record_acquire(0, last_grant, pass.wait_ns, pass.bypass, pass.from);
        stats.record_hold(0, last_grant, held);
        if window.contains(last_grant) {
            ops += 1;
        }
    }
    ops
}
