//! One hot lock: acquire, write the shared lines, `critical` of work, release, then
//! `outside` of private work. One operation = one acquisition.

use super::{sample, View};
use crate::env::Env;
use crate::locks::{LocalState, Lock};
use crate::stats::ThreadStats;
use locklab_model::plan::Dist;

pub async fn run<E: Env, L: Lock>(
    critical: &Dist,
    outside: &Dist,
    locks: &View<'_, L>,
    env: &E,
    local: &mut LocalState,
    stats: &mut ThreadStats,
    end_ns: u64,
) -> u64 {
    let lock = &locks.locks[0];
    let window = stats.window();
    let mut ops = 0;
    loop {
        let t0 = env.now();
        if t0 >= end_ns {
            break;
        }
        local.arrive(env, 0);
        lock.acquire(env, local).await;
        let t1 = env.now();
        let (before, from) = env.note_grant(0);
        locks.touch(env, 0).await;
        env.work(sample(critical, env)).await;
        let t2 = env.now();
        lock.release(env, local).await;
        stats.record_acquire(
            0,
            t1,
            t1 - t0,
            before.saturating_sub(local.arrival(0)),
            from,
        );
        stats.record_hold(0, t1, t2 - t1);
        if window.contains(t1) {
            ops += 1;
        }
        env.work(sample(outside, env)).await;
    }
    ops
}
