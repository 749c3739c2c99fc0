//! Per-CPU locks and the kernel's `double_lock_balance` (docs/reproduction.md, thread 000).
//!
//! The model is the real-time scheduler's `pull_rt_task` of 2008 (kernel/sched_rt.c):
//! with its own runqueue lock held, a CPU walks the other runqueues with
//! `for_each_cpu_mask` (ascending CPU id, skipping itself), double-locks each
//! (`double_lock_balance(this_rq, src_rq)`), looks at it, and drops the other lock
//! again (`spin_unlock(&src_rq->lock)`, later `double_unlock_balance`), keeping its
//! own.
//!
//! Each thread, every `interval`, takes its own lock (lock index = thread index) for
//! `own_hold`, then double-locks it with every other thread's lock in ascending order
//! ([`pass_order`]), holds both for `pair_hold` and releases the other one, keeping
//! its own; finally it releases its own. A lock's "address" is its index: the
//! runqueue of CPU 0 has the lowest address.
//!
//! - `ordered` (the old logic): trylock the other; on failure, if the other has the
//!   lower address, drop our own, take the other, retake our own; otherwise keep our
//!   own and wait for the other, still holding ours (so whoever wants ours waits
//!   too). Lower-numbered threads keep their place and win.
//! - `fair` (the patch): always drop our own, then take both, lower address first
//!   (`double_rq_lock`).
//!
//! The order of the walk matters: each CPU meets the lower runqueues first (where the
//! old logic makes it drop its own lock and queue) and the higher ones last (where it
//! keeps its own lock while it waits). Walking `tid + 1, tid + 2, ...` modulo n
//! instead, as an earlier version did, spreads both cases evenly over the pass and
//! the per-CPU gradient disappears (only CPU 0 stands out).
//!
//! Wait class `pass`: one record per `double_lock_balance` call, from its start to
//! holding both locks (the `wait_ns` of docs/metrics.md); `acquisitions` counts those
//! calls, n − 1 per pass of the walk.

use super::dist::sample_env;
use super::{Locks, Shape, Thread};
use crate::env::Env;
use crate::locks::{LocalState, Lock};
use crate::stats::Waiting;
use locklab_model::plan::{Dist, DoubleLockPolicy};

pub struct Params<'a> {
    pub policy: DoubleLockPolicy,
    pub interval: &'a Dist,
    pub own_hold: &'a Dist,
    pub pair_hold: &'a Dist,
}

/// The runqueues CPU `own` double-locks in one pass, in order: every other CPU in
/// ascending id (`for_each_cpu_mask` over the mask, `if (this_cpu == cpu) continue`).
pub fn pass_order(own: usize, n: usize) -> impl Iterator<Item = usize> {
    (0..n).filter(move |&cpu| cpu != own)
}

/// Take `locks[other]` while holding `locks[own]`, by `policy`; on return both are
/// held. Returns whether `own` was released and retaken (its grant is then noted
/// again).
pub async fn double_lock_balance<E: Env, L: Lock>(
    policy: DoubleLockPolicy,
    locks: &[L],
    env: &E,
    local: &mut LocalState,
    own: usize,
    other: usize,
) -> bool {
    let (o, b) = (&locks[own], &locks[other]);
    match policy {
        DoubleLockPolicy::Ordered => {
            // if (unlikely(!spin_trylock(&busiest->lock))) {
            if b.try_acquire(env, local).await {
                return false;
            }
            if other < own {
                // busiest < this_rq: unlock this_rq, lock busiest, lock this_rq.
                o.release(env, local).await;
                b.acquire(env, local).await;
                o.acquire(env, local).await;
                true
            } else {
                // Keep this_rq and spin on busiest.
                b.acquire(env, local).await;
                false
            }
        }
        DoubleLockPolicy::Fair => {
            // spin_unlock(&this_rq->lock); double_rq_lock(this_rq, busiest);
            o.release(env, local).await;
            let (lo, hi) = if own < other { (o, b) } else { (b, o) };
            lo.acquire(env, local).await;
            hi.acquire(env, local).await;
            true
        }
    }
}

impl Params<'_> {
    /// Per-CPU locks, one per thread; a thread's cycle is its `interval` (the passes
    /// themselves are its critical sections: `pair_hold` each).
    pub fn shape(&self, lines: u32, threads: u32) -> Shape {
        Shape {
            classes: vec!["pass".into()],
            locks: threads as usize,
            lines_per_lock: lines,
            critical_ns: self.pair_hold.mean_ns(),
            outside_ns: self.interval.mean_ns(),
            cycle_ns: self.interval.mean_ns(),
            asks_contended: false,
        }
    }

    pub async fn run<E: Env, L: Lock>(&self, locks: &Locks<L>, t: Thread<'_, E>) -> u64 {
        let Thread {
            env,
            local,
            stats,
            end_ns,
        } = t;
        let n = locks.len();
        let own = env.tid();
        let window = stats.window();
        let own_lock = locks.get(own);
        let mut ops = 0;
        'outer: loop {
            env.overhead().await;
            env.work(sample_env(self.interval, env)).await;
            if env.now() >= end_ns {
                break;
            }
            own_lock.acquire(env, local).await;
            env.note_grant(own);
            locks.touch(env, own).await;
            env.work(sample_env(self.own_hold, env)).await;
            for other in pass_order(own, n) {
                let t0 = env.now();
                if t0 >= end_ns {
                    own_lock.release(env, local).await;
                    break 'outer;
                }
                local.arrive(env, other);
                stats.wait(Waiting::new(0, other, t0));
                let retaken =
                    double_lock_balance(self.policy, locks.all(), env, local, own, other).await;
                let t1 = env.now();
                let grant = env.note_grant(other);
                // Timed from the pass's start: bypass from the arrival.
                let bypass = local.bypass_since_arrival(other, grant.before);
                stats.granted(t1, bypass);
                if retaken {
                    env.note_grant(own);
                }
                locks.touch(env, own).await;
                locks.touch(env, other).await;
                env.work(sample_env(self.pair_hold, env)).await;
                let t2 = env.now();
                // double_unlock_balance: release the other, keep our own.
                locks.get(other).release(env, local).await;
                stats.record_acquire(0, t1, t1 - t0, bypass, grant.from);
                stats.record_hold(0, t1, t2 - t1);
                if window.contains(t1) {
                    ops += 1;
                }
            }
            own_lock.release(env, local).await;
        }
        ops
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::LineAlloc;
    use crate::locks::tas::Tas;
    use crate::locks::ticket::Ticket;
    use crate::locks::Site;
    use crate::sim::testkit::{machine, plan_of, slots, spec};
    use locklab_model::plan::{LockAlgo, LockSpec, Placement, PlacementKind, Point, Workload};
    use std::cell::Cell;
    use std::future::Future;
    use std::pin::Pin;

    type Fut<'a> = Pin<Box<dyn Future<Output = ()> + 'a>>;

    #[test]
    fn a_pass_walks_the_other_cpus_in_ascending_order() {
        assert_eq!(pass_order(0, 4).collect::<Vec<_>>(), [1, 2, 3]);
        assert_eq!(pass_order(2, 4).collect::<Vec<_>>(), [0, 1, 3]);
        assert_eq!(pass_order(3, 4).collect::<Vec<_>>(), [0, 1, 2]);
        assert_eq!(pass_order(0, 1).count(), 0);
    }

    /// The scenario of the thread, on two simulated CPUs. CPU 0 holds rq[0] for 1 us;
    /// meanwhile CPU 1 takes rq[1] and calls `double_lock_balance(rq1, rq0)`. Then
    /// CPU 0 calls `double_lock_balance(rq0, rq1)`. Returns the virtual times at which
    /// each CPU held both locks.
    /// Ticket locks numbered 0, 1, ... as the per-CPU locks of a point are.
    fn ticket_per_cpu() -> impl Fn(&mut LineAlloc) -> Ticket {
        let next = Cell::new(0);
        move |a| {
            let id = next.get();
            next.set(id + 1);
            Ticket::new(
                a,
                Site {
                    id,
                    nthreads: 2,
                    asks_contended: false,
                },
            )
        }
    }

    fn race<L: Lock>(policy: DoubleLockPolicy, new: impl Fn(&mut LineAlloc) -> L) -> [u64; 2] {
        let m = spec(1, 2, 1, 10, 50, 130);
        let sl = slots(&m, PlacementKind::Compact, 2);
        let mut alloc = LineAlloc::new();
        let locks = [new(&mut alloc), new(&mut alloc)];
        let mach = machine(&m, &sl, alloc.count(), 1);
        let done: [Cell<u64>; 2] = Default::default();
        async fn cpu<E: Env, L: Lock>(
            e: &E,
            policy: DoubleLockPolicy,
            locks: &[L],
            first_ns: u64,
            own_ns: u64,
            done: &Cell<u64>,
        ) {
            let (own, other) = (e.tid(), 1 - e.tid());
            let mut local = LocalState::new(own, 2);
            e.work(first_ns).await;
            locks[own].acquire(e, &mut local).await;
            e.work(own_ns).await;
            double_lock_balance(policy, locks, e, &mut local, own, other).await;
            done.set(e.now());
            e.work(100).await;
            locks[other].release(e, &mut local).await;
            locks[own].release(e, &mut local).await;
        }
        let envs = [mach.env(0), mach.env(1)];
        {
            let mut futs: Vec<Fut> = vec![
                Box::pin(cpu(&envs[0], policy, &locks, 0, 1_000, &done[0])),
                Box::pin(cpu(&envs[1], policy, &locks, 200, 0, &done[1])),
            ];
            let out = mach.run(&mut futs, u64::MAX);
            assert_eq!(out.finished, 2);
        }
        [done[0].get(), done[1].get()]
    }

    #[test]
    fn old_logic_lets_the_lower_cpu_win_although_it_came_second() {
        // CPU 1 dropped rq[1] and queued on rq[0]; CPU 0 then finds rq[1] free, takes
        // it without waiting, and CPU 1 waits for all of CPU 0's critical section.
        let [cpu0, cpu1] = race(DoubleLockPolicy::Ordered, ticket_per_cpu());
        assert!(cpu0 < cpu1, "ticket: cpu0 {cpu0} cpu1 {cpu1}");
        let [cpu0, cpu1] = race(DoubleLockPolicy::Ordered, |a| {
            Tas::new(
                a,
                Site {
                    id: 0,
                    nthreads: 2,
                    asks_contended: false,
                },
                locklab_model::plan::Relax::Pause,
            )
        });
        assert!(cpu0 < cpu1, "tas: cpu0 {cpu0} cpu1 {cpu1}");
    }

    #[test]
    fn fair_logic_serves_the_double_locks_in_arrival_order_with_a_ticket_lock() {
        // CPU 0 drops rq[0] first; CPU 1, queued on rq[0] since earlier, gets it and
        // finishes first; CPU 0 queues behind it.
        let [cpu0, cpu1] = race(DoubleLockPolicy::Fair, ticket_per_cpu());
        assert!(cpu1 < cpu0, "cpu0 {cpu0} cpu1 {cpu1}");
    }

    /// The experiment's point (8 CPUs of box8, per-CPU ticket locks), simulated for
    /// 10 ms of virtual time: deterministic.
    fn box8(policy: DoubleLockPolicy) -> Vec<(u64, f64)> {
        let m = spec(2, 4, 1, 10, 50, 130);
        let point = Point {
            index: 0,
            id: "double".into(),
            axes: Default::default(),
            seed: 7,
            threads: 8,
            lock: LockSpec {
                name: "ticket".into(),
                algo: LockAlgo::Ticket,
                axis: None,
                params: vec![],
            },
            workload: Workload::DoubleLock {
                policy,
                interval: Dist::Exp { mean_ns: 5_000 },
                own_hold: Dist::Fixed { ns: 1_000 },
                pair_hold: Dist::Fixed { ns: 1_000 },
                lines: 1,
            },
            placement: Placement {
                policy: PlacementKind::Compact,
                virtual_nodes: None,
            },
            modes: vec![],
        };
        let plan = plan_of(&m, vec![point]);
        let r = crate::sim::run_point(&plan, &plan.points[0], 0, 10_000_000, 200_000);
        assert!(r.point.skipped.is_none(), "{:?}", r.point.skipped);
        let mut t: Vec<_> = r.threads.iter().filter(|t| t.class == "pass").collect();
        t.sort_by_key(|t| t.cpu);
        assert_eq!(t.len(), 8);
        t.iter().map(|t| (t.acquisitions, t.wait_mean_ns)).collect()
    }

    #[test]
    fn on_eight_cpus_the_old_logic_favours_low_cpus_and_the_fair_logic_does_not() {
        let old = box8(DoubleLockPolicy::Ordered);
        let fair = box8(DoubleLockPolicy::Fair);
        // Old: CPU 7 waits longer and completes fewer double locks than CPU 0.
        assert!(old[7].1 > old[0].1, "old waits {old:?}");
        assert!(old[7].0 < old[0].0, "old counts {old:?}");
        // ... and the wait rises past CPU 0 too: CPUs 5-7 wait longer than CPUs 1-3
        // (about 12 % here; with the walk rotated from each CPU's own id instead of
        // ascending, CPUs 1-7 come out flat and this fails).
        let mean = |r: std::ops::Range<usize>| {
            old[r.clone()].iter().map(|t| t.1).sum::<f64>() / r.len() as f64
        };
        assert!(mean(5..8) > 1.05 * mean(1..4), "old waits {old:?}");
        // Fair: no upward gradient; CPU 7 waits less than under the old logic.
        assert!(fair[7].1 <= fair[0].1, "fair waits {fair:?}");
        assert!(fair[7].1 < old[7].1, "old {old:?} fair {fair:?}");
    }
}
