//! Batches under one lock with a lock-break policy (docs/reproduction.md, thread 001).
//!
//! Each request draws a class from the mix by weight, takes the lock, and does `items`
//! items of `per_item` work (writing the shared lines each item). Between items the
//! policy may release and retake the lock: `never`; `always` (after every item);
//! `when_contended` (only when `is_contended` says another thread waits: the kernel's
//! `spin_needbreak`). Then `think` outside.
//!
//! A break is `release` then `acquire`, nothing in between: Porter's patch (lock and
//! unlock per page) and Morton's sketch in the thread (`spin_unlock; spin_lock; /* To
//! the back of the queue */`). With a FIFO lock the retake queues behind every waiter;
//! with TAS whoever's RMW reaches the line first after the release wins. A break costs
//! one more acquisition per page (30 between the 31 pages of a batch) when nobody
//! waits, and under contention a hand-off plus the migration of the data lines.
//!
//! One record per request, in the request's class: wait = the sum of the waits of all
//! its acquisitions (the first and every retake), hold = the sum of its holds, bypass
//! and hand-off node from the first acquisition. One operation = one request.

use super::dist::sample_env;
use super::{Locks, Shape, Thread};
use crate::env::Env;
use crate::locks::Lock;
use crate::stats::Waiting;
use locklab_model::plan::{BreakPolicy, BulkClass, Dist};

pub struct Params<'a> {
    pub policy: BreakPolicy,
    pub mix: &'a [BulkClass],
    pub per_item: &'a Dist,
    pub think: &'a Dist,
}

/// The result classes of a mix: its names, first occurrence first (entries of one
/// name share a class); "request" for an empty mix.
fn class_names(mix: &[BulkClass]) -> Vec<&str> {
    let mut names: Vec<&str> = Vec::new();
    for c in mix {
        if !names.contains(&c.name.as_str()) {
            names.push(&c.name);
        }
    }
    if names.is_empty() {
        names.push("request");
    }
    names
}

/// Pick a class index by weight (class indices follow `class_names`).
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

impl Params<'_> {
    /// One lock; a request holds it for its items (the mix's mean item count), and a
    /// thread's cycle is its `think` time.
    pub fn shape(&self, lines: u32) -> Shape {
        let w: f64 = self.mix.iter().map(|c| c.weight as f64).sum();
        let items = if w > 0.0 {
            self.mix
                .iter()
                .map(|c| c.weight as f64 * c.items as f64)
                .sum::<f64>()
                / w
        } else {
            1.0
        };
        Shape {
            classes: class_names(self.mix)
                .into_iter()
                .map(String::from)
                .collect(),
            locks: 1,
            lines_per_lock: lines,
            critical_ns: self.per_item.mean_ns() * items,
            outside_ns: self.think.mean_ns(),
            cycle_ns: self.think.mean_ns(),
            asks_contended: self.policy == BreakPolicy::WhenContended,
        }
    }

    pub async fn run<E: Env, L: Lock>(&self, locks: &Locks<L>, t: Thread<'_, E>) -> u64 {
        let Thread {
            env,
            local,
            stats,
            end_ns,
        } = t;
        let mix = self.mix;
        let names = class_names(mix);
        let class_of: Vec<usize> = mix
            .iter()
            .map(|c| names.iter().position(|n| *n == c.name).unwrap_or(0))
            .collect();
        let total: u64 = mix.iter().map(|c| c.weight as u64).sum();
        let lock = locks.get(0);
        let window = stats.window();
        let mut ops = 0;
        loop {
            // Before the request's start: the loop's own instructions are no wait.
            env.overhead().await;
            let t0 = env.now();
            if t0 >= end_ns {
                break;
            }
            let (class, items) = pick(mix, &class_of, total, env);
            local.arrive(env, 0);
            stats.wait(Waiting::new(class, 0, t0));
            lock.acquire(env, local).await;
            let t1 = env.now();
            let grant = env.note_grant(0);
            // Timed from the request's start: bypass from the arrival.
            let bypass = local.bypass_since_arrival(0, grant.before);
            stats.granted(t1, bypass);
            let mut wait = t1 - t0;
            let mut hold = 0;
            let mut held_since = t1;
            for i in 0..items.max(1) {
                locks.touch(env, 0).await;
                env.work(sample_env(self.per_item, env)).await;
                if i + 1 < items {
                    let brk = match self.policy {
                        BreakPolicy::Never => false,
                        BreakPolicy::Always => true,
                        BreakPolicy::WhenContended => lock.is_contended(env, local).await,
                    };
                    if brk {
                        let ta = env.now();
                        hold += ta - held_since;
                        lock.release(env, local).await;
                        // A retake's own bypass, should the window end during it.
                        local.arrive(env, 0);
                        stats.wait(Waiting {
                            since_ns: ta,
                            waited_ns: wait,
                            op_granted_ns: Some(t1),
                            ..Waiting::new(class, 0, ta)
                        });
                        lock.acquire(env, local).await;
                        let tb = env.now();
                        let retake = env.note_grant(0);
                        stats.granted(tb, local.bypass_since_arrival(0, retake.before));
                        wait += tb - ta;
                        held_since = tb;
                    }
                }
            }
            let t2 = env.now();
            hold += t2 - held_since;
            lock.release(env, local).await;
            stats.record_acquire(class, t1, wait, bypass, grant.from);
            stats.record_hold(class, t1, hold);
            if window.contains(t1) {
                ops += 1;
            }
            env.work(sample_env(self.think, env)).await;
        }
        ops
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::native::{Arena, NativeEnv};

    fn class(name: &str, weight: u32, items: u32) -> BulkClass {
        BulkClass {
            name: name.into(),
            weight,
            items,
        }
    }

    #[test]
    fn pick_follows_the_weights() {
        let arena = Arena::new(1, 1);
        let env = NativeEnv::for_test(&arena, 0, 1);
        let mix = [class("single", 1, 1), class("batch", 1, 31)];
        let mut n = [0u32; 2];
        for _ in 0..10_000 {
            let (c, items) = pick(&mix, &[0, 1], 2, &env);
            assert_eq!(items, mix[c].items);
            n[c] += 1;
        }
        // Half and half (deterministic: the test env's random stream is seeded by tid).
        assert!((4_500..=5_500).contains(&n[0]), "{n:?}");
    }

    #[test]
    fn pick_skips_zero_weights_and_handles_an_empty_total() {
        let arena = Arena::new(1, 1);
        let env = NativeEnv::for_test(&arena, 0, 1);
        let mix = [class("single", 0, 1), class("batch", 3, 31)];
        for _ in 0..100 {
            assert_eq!(pick(&mix, &[0, 1], 3, &env), (1, 31));
        }
        let none = [class("single", 0, 1), class("batch", 0, 31)];
        assert_eq!(pick(&none, &[0, 1], 0, &env), (0, 1));
    }

    #[test]
    fn only_the_when_contended_policy_asks_the_holder_about_waiters() {
        let mix = [class("single", 1, 1)];
        let (per_item, think) = (Dist::Fixed { ns: 10 }, Dist::Fixed { ns: 100 });
        for (policy, asks) in [
            (BreakPolicy::Never, false),
            (BreakPolicy::Always, false),
            (BreakPolicy::WhenContended, true),
        ] {
            let p = Params {
                policy,
                mix: &mix,
                per_item: &per_item,
                think: &think,
            };
            assert_eq!(p.shape(1).asks_contended, asks, "{policy:?}");
        }
    }

    #[test]
    fn classes_of_one_name_share_an_index() {
        let arena = Arena::new(1, 1);
        let env = NativeEnv::for_test(&arena, 0, 1);
        // Two entries both named "batch" map to result class 1 (see `run`).
        let mix = [
            class("single", 0, 1),
            class("batch", 1, 31),
            class("batch", 1, 8),
        ];
        for _ in 0..100 {
            let (c, items) = pick(&mix, &[0, 1, 1], 2, &env);
            assert_eq!(c, 1);
            assert!(items == 31 || items == 8);
        }
    }
}
