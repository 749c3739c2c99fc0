//! One hot lock: acquire, write the shared lines, `critical` of work, release, then
//! `outside` of private work. One operation = one acquisition.

use super::dist::sample_env;
use super::{Locks, Shape, Thread};
use crate::env::Env;
use crate::locks::Lock;
use crate::stats::Waiting;
use locklab_model::plan::Dist;

pub struct Params<'a> {
    pub critical: &'a Dist,
    pub outside: &'a Dist,
}

impl Params<'_> {
    /// One lock; a thread's cycle is one critical section and one outside stretch.
    pub fn shape(&self, lines: u32) -> Shape {
        let (critical_ns, outside_ns) = (self.critical.mean_ns(), self.outside.mean_ns());
        Shape {
            classes: vec!["lock".into()],
            locks: 1,
            lines_per_lock: lines,
            critical_ns,
            outside_ns,
            cycle_ns: critical_ns + outside_ns,
        }
    }

    pub async fn run<E: Env, L: Lock>(&self, locks: &Locks<L>, t: Thread<'_, E>) -> u64 {
        let Thread {
            env,
            local,
            stats,
            end_ns,
        } = t;
        let lock = locks.get(0);
        let window = stats.window();
        let mut ops = 0;
        loop {
            let t0 = env.now();
            if t0 >= end_ns {
                break;
            }
            local.arrive(env, 0);
            stats.wait(Waiting::new(0, 0, t0));
            lock.acquire(env, local).await;
            let t1 = env.now();
            let grant = env.note_grant(0);
            let bypass = grant.before.saturating_sub(local.arrival(0));
            stats.granted(t1, bypass);
            locks.touch(env, 0).await;
            env.work(sample_env(self.critical, env)).await;
            let t2 = env.now();
            lock.release(env, local).await;
            stats.record_acquire(0, t1, t1 - t0, bypass, grant.from);
            stats.record_hold(0, t1, t2 - t1);
            if window.contains(t1) {
                ops += 1;
            }
            env.work(sample_env(self.outside, env)).await;
        }
        ops
    }
}
