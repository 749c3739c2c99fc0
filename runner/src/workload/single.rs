//! One hot lock: acquire, write the shared lines, `critical` of work, release, then
//! `outside` of private work. One operation = one acquisition.

use super::dist::sample_env;
use super::{Drive, Locks, Shape, Thread};
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
        macro_rules! awaited {
            ($f:expr) => {
                $f.await
            };
        }
        let mut ops = 0;
        while operation!(self, locks, t, ops, awaited) {}
        ops
    }

    /// [`Params::run`] with every future driven to completion where it is made (the
    /// native executor: its futures are complete at once). The loop is then plain
    /// code, which the compiler treats as the hot loop it is and inlines the lock code
    /// into; inside the `async` loop every acquire stayed a call (~10 ns each).
    pub fn run_driven<E: Env, L: Lock>(
        &self,
        d: &impl Drive,
        locks: &Locks<L>,
        t: Thread<'_, E>,
    ) -> u64 {
        macro_rules! driven {
            ($f:expr) => {
                d.drive($f)
            };
        }
        let mut ops = 0;
        while operation!(self, locks, t, ops, driven) {}
        ops
    }
}

/// One operation of the single-lock loop, written once for [`Params::run`] and
/// [`Params::run_driven`]: `$run!(f)` awaits the future `f` or drives it. Announce the
/// wait, acquire, write the lines, `critical`, release, `outside`; counts the
/// operation in `$ops` if it was granted in the window. Evaluates to false (having
/// done nothing) once the window is over.
macro_rules! operation {
    ($p:expr, $locks:expr, $t:expr, $ops:expr, $run:ident) => {{
        let (p, locks, env) = (&$p, $locks, $t.env);
        let lock = locks.get(0);
        // Before the acquisition's start: the loop's own instructions are no wait.
        $run!(env.overhead());
        let t0 = env.acquire_start();
        if t0 >= $t.end_ns {
            // Once per run. Telling the compiler so makes the driven loop hot to it,
            // which is what lets it inline the lock code there.
            crate::locks::cold_path();
            false
        } else {
            let local = &mut *$t.local;
            local.arrive(env, 0);
            $t.stats.wait(Waiting::new(0, 0, t0));
            $run!(lock.acquire(env, local));
            let (t1, wait) = env.acquire_granted(t0);
            let grant = env.note_grant(0);
            let bypass = grant.before.saturating_sub(local.arrival(0));
            $t.stats.granted_after(t1, wait, bypass);
            $run!(locks.touch(env, 0));
            $run!(env.work(sample_env(p.critical, env)));
            let hold = env.acquire_held(t1);
            $run!(lock.release(env, local));
            let stats = &mut *$t.stats;
            stats.record_acquire(0, t1, wait, bypass, grant.from);
            if let Some(hold) = hold {
                stats.record_hold(0, t1, hold);
            }
            if stats.window().contains(t1) {
                $ops += 1;
            }
            $run!(env.work(sample_env(p.outside, env)));
            true
        }
    }};
}
use operation;
