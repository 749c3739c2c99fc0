//! Batches under one lock with a lock-break policy (CLAIMS.md, seed 001).
//!
//! Each request draws a class from the mix by weight, takes the lock, and does `items`
//! items of `per_item` work (writing the shared lines each item). Between items the
//! policy may release and retake the lock: `never`; `always` (after every item);
//! `when_contended` (only when `is_contended` says another thread waits: the kernel's
//! `spin_needbreak`). Then `think` outside.
//!
//! One record per request, in the request's class: wait = the sum of the waits of all
//! its acquisitions (the first and every retake), hold = the sum of its holds, bypass
//! and hand-off node from the first acquisition. One operation = one request.

use super::{sample, View};
use crate::env::Env;
use crate::locks::{LocalState, Lock};
use crate::stats::ThreadStats;
use locklab_dsl::plan::{BreakPolicy, BulkClass, Dist};

/// Pick a class index by weight (class indices follow `super::classes`).
fn pick<E: Env>(mix: &[BulkClass], class_of: &[usize], total: u64, env: &E) -> (usize, u32) {
    if total == 0 {
        return (
            class_of.first().copied().unwrap_or(0),
            mix.first().map_or(1, |c| c.items),
        );
    }
    let mut r = env.random() % total;
    for (i, c) in mix.iter().enumerate() {
        if r < c.weight as u64 {
            return (class_of[i], c.items);
        }
        r -= c.weight as u64;
    }
    (class_of[mix.len() - 1], mix[mix.len() - 1].items)
}

#[allow(clippy::too_many_arguments)]
pub async fn run<E: Env, L: Lock>(
    policy: BreakPolicy,
    mix: &[BulkClass],
    per_item: &Dist,
    think: &Dist,
    locks: &View<'_, L>,
    env: &E,
    local: &mut LocalState,
    stats: &mut ThreadStats,
    end_ns: u64,
) -> u64 {
    let names: Vec<&str> = {
        let mut v: Vec<&str> = Vec::new();
        for c in mix {
            if !v.contains(&c.name.as_str()) {
                v.push(&c.name);
            }
        }
        v
    };
    let class_of: Vec<usize> = mix
        .iter()
        .map(|c| names.iter().position(|n| *n == c.name).unwrap_or(0))
        .collect();
    let total: u64 = mix.iter().map(|c| c.weight as u64).sum();
    let lock = &locks.locks[0];
    let window = stats.window();
    let mut ops = 0;
    loop {
        let t0 = env.now();
        if t0 >= end_ns {
            break;
        }
        let (class, items) = pick(mix, &class_of, total, env);
        let arrival = env.grants(0);
        lock.acquire(env, local).await;
        let t1 = env.now();
        let (before, from) = env.note_grant(0);
        let mut wait = t1 - t0;
        let mut hold = 0;
        let mut held_since = t1;
        for i in 0..items.max(1) {
            locks.touch(env, 0).await;
            env.work(sample(per_item, env)).await;
            if i + 1 < items {
                let brk = match policy {
                    BreakPolicy::Never => false,
                    BreakPolicy::Always => true,
                    BreakPolicy::WhenContended => lock.is_contended(env, local).await,
                };
                if brk {
                    let ta = env.now();
                    hold += ta - held_since;
                    lock.release(env, local).await;
                    lock.acquire(env, local).await;
                    let tb = env.now();
                    env.note_grant(0);
                    wait += tb - ta;
                    held_since = tb;
                }
            }
        }
        let t2 = env.now();
        hold += t2 - held_since;
        lock.release(env, local).await;
        stats.record_acquire(class, t1, wait, before.saturating_sub(arrival), from);
        stats.record_hold(class, t1, hold);
        if window.contains(t1) {
            ops += 1;
        }
        env.work(sample(think, env)).await;
    }
    ops
}
