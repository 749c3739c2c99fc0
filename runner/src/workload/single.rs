//! One hot lock: acquire, write the shared lines, `critical` of work, release, then
//! `outside` of private work. One operation = one acquisition.

use super::dist::sample_env;
use super::{Drive, Locks, Shape, Thread};
use crate::env::{Env, Handoff};
use crate::locks::{LocalState, Lock};
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
            asks_contended: false,
        }
    }

    pub async fn run<E: Env, L: Lock>(&self, locks: &Locks<L>, t: Thread<'_, E>) -> u64 {
        macro_rules! awaited {
            ($f:expr) => {
                $f.await
            };
        }
        let marks = marks_holder(locks, t.stats);
        t.env.note_wait_grants_of(0);
        let (mut ops, mut counted) = (0, Counted::default());
        while operation!(self, locks, t, ops, counted, marks, awaited) {}
        counted.flush(t.stats, &mut ops);
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
        // Fixed lengths (the common case) as plain numbers, which the loop keeps in
        // registers across the lock's atomics: no draw and no match on the
        // distribution per operation. Otherwise the distributions, as locals for the
        // same reason (memory behind `self` is reloaded after every atomic).
        let Thread {
            env,
            local,
            stats,
            end_ns,
        } = t;
        match (self.critical, self.outside) {
            (&Dist::Fixed { ns: 0 }, &Dist::Fixed { ns: 0 }) => {
                driven_loop(&NoWork, d, locks, env, local, stats, end_ns)
            }
            (&Dist::Fixed { ns: critical }, &Dist::Fixed { ns: outside }) => {
                let p = FixedLengths { critical, outside };
                driven_loop(&p, d, locks, env, local, stats, end_ns)
            }
            _ => {
                let (critical, outside) = (self.critical.clone(), self.outside.clone());
                let p = Params {
                    critical: &critical,
                    outside: &outside,
                };
                driven_loop(&p, d, locks, env, local, stats, end_ns)
            }
        }
    }
}

/// The lengths of an operation's critical section and of its outside stretch, ns.
trait Lengths {
    fn critical_ns<E: Env>(&self, env: &E) -> u64;
    fn outside_ns<E: Env>(&self, env: &E) -> u64;
}

/// Drawn from the workload's distributions at every operation (a fixed one among them
/// gives its length without a draw).
impl Lengths for Params<'_> {
    #[inline(always)]
    fn critical_ns<E: Env>(&self, env: &E) -> u64 {
        sample_env(self.critical, env)
    }

    #[inline(always)]
    fn outside_ns<E: Env>(&self, env: &E) -> u64 {
        sample_env(self.outside, env)
    }
}

/// Both lengths fixed.
struct FixedLengths {
    critical: u64,
    outside: u64,
}

impl Lengths for FixedLengths {
    #[inline(always)]
    fn critical_ns<E: Env>(&self, _: &E) -> u64 {
        self.critical
    }

    #[inline(always)]
    fn outside_ns<E: Env>(&self, _: &E) -> u64 {
        self.outside
    }
}

/// No work at all, inside or outside (lockhammer's no-delay setting): the loop is the
/// lock and the harness alone.
struct NoWork;

impl Lengths for NoWork {
    #[inline(always)]
    fn critical_ns<E: Env>(&self, _: &E) -> u64 {
        0
    }

    #[inline(always)]
    fn outside_ns<E: Env>(&self, _: &E) -> u64 {
        0
    }
}

/// [`Params::run_driven`]'s loop over lengths `p`, a function of its own, not
/// inlined, that takes the thread's references as arguments: a reference argument is
/// `noalias` to the compiler, so what the lock code reads through `env` (the arena's
/// base and mask) stays in registers across the lock's atomics. As a field of a
/// [`Thread`] it was reloaded after every atomic, and a load after a locked
/// instruction waits for it: CLH's wait on the flag whose line the swap returned took
/// one more L1 hit on its path (one thread, no work: TAS 266 → 321 M acquisitions/s,
/// CLH 141 → 202 on a Zen 4 guest).
#[inline(never)]
fn driven_loop<E: Env, L: Lock>(
    p: &impl Lengths,
    d: &impl Drive,
    locks: &Locks<L>,
    env: &E,
    local: &mut LocalState,
    stats: &mut crate::stats::ThreadStats,
    end_ns: u64,
) -> u64 {
    let t = Thread {
        env,
        local,
        stats,
        end_ns,
    };
    macro_rules! driven {
        ($f:expr) => {
            d.drive($f)
        };
    }
    let marks = marks_holder(locks, t.stats);
    t.env.note_wait_grants_of(0);
    let (mut ops, mut counted) = (0, Counted::default());
    while operation!(p, locks, t, ops, counted, marks, driven) {}
    counted.flush(t.stats, &mut ops);
    ops
}

/// Whether the holder marks the lock's data line to count its re-acquisitions
/// ([`Locks::mark_holder`]): where the grant order is not recorded (native `recording
/// = sampled`) and there is a data line. Tells the thread's stats so.
fn marks_holder<L: Lock>(locks: &Locks<L>, stats: &mut crate::stats::ThreadStats) -> bool {
    let marks = !stats.grant_order() && locks.can_mark_holder();
    if marks {
        stats.counting_reacquisitions();
    }
    marks
}

/// The acquisitions counted but not recorded (`Env::recorded`) since the last
/// clock reading: all at that reading, so a count in a register until the next
/// reading (a recorded acquisition, a counted one that waited) or the end hands them
/// to the thread's stats.
#[derive(Debug, Default, Clone)]
struct Counted {
    n: u64,
    /// Of those, re-acquisitions the holder's mark told ([`Locks::mark_holder`]).
    reacquired: u64,
    /// Of those, acquisitions whose first attempt failed ([`Env::acquire_waited`]).
    waited: u64,
    at: u64,
}

impl Counted {
    #[inline(always)]
    fn add(&mut self, at: u64, reacquired: bool, waited: bool) {
        self.n += 1;
        self.reacquired += u64::from(reacquired);
        self.waited += u64::from(waited);
        self.at = at;
    }

    /// Into `stats` and `ops` (those in the window), emptied.
    #[inline(always)]
    fn flush(&mut self, stats: &mut crate::stats::ThreadStats, ops: &mut u64) {
        if self.n > 0 {
            *ops += hand_over(self.clone(), stats);
            (self.n, self.reacquired, self.waited) = (0, 0, 0);
        }
    }
}

/// [`Counted::flush`]'s work, out of the loop and given the counts by value: a
/// `Counted` whose address went to a call would live in memory, and the measured
/// loop would load and store it at every acquisition. Returns the operations in the
/// window.
#[inline(never)]
fn hand_over(c: Counted, stats: &mut crate::stats::ThreadStats) -> u64 {
    stats.count_acquires(0, c.at, c.n);
    stats.count_reacquisitions(0, c.at, c.reacquired);
    stats.count_waited(0, c.at, c.waited);
    if stats.window().contains(c.at) {
        c.n
    } else {
        0
    }
}

/// One operation of the single-lock loop, written once for [`Params::run`] and
/// [`Params::run_driven`]: `$run!(f)` awaits the future `f` or drives it. Announce the
/// wait, acquire, write the lines, `critical`, release, `outside`; counts the
/// operation in `$ops` if it was granted in the window. An acquisition the `Env` does
/// not record (`Env::recorded`) is only counted, in `$counted`. Where `$marks`, the
/// holder marks the data line to tell its re-acquisitions ([`marks_holder`]).
/// Evaluates to false (having done nothing) once the window is over.
macro_rules! operation {
    ($p:expr, $locks:expr, $t:expr, $ops:expr, $counted:expr, $marks:expr, $run:ident) => {{
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
        } else if !env.recorded() {
            // Counted only (native `recording = sampled`, or a run's only thread):
            // no grant order, and no clock unless it waited (`Env::acquire_counted`).
            let local = &mut *$t.local;
            $run!(lock.acquire(env, local));
            // Read here, before the release can spin (MCS's, for its successor).
            let waited = env.acquire_waited();
            $run!(locks.touch(env, 0));
            let reacquired = $marks && $run!(locks.mark_holder(env, 0));
            $run!(env.work(p.critical_ns(env)));
            $run!(lock.release(env, local));
            let (at, waited_from) = env.acquire_counted(t0, waited);
            match waited_from {
                None => $counted.add(at, reacquired, waited),
                Some(from) => {
                    // It waited: counted at its own clock reading, and its wait cut
                    // off at the window's end if it was still running then.
                    crate::locks::cold_path();
                    $counted.flush($t.stats, &mut $ops);
                    $t.stats.wait(Waiting::new(0, 0, from));
                    $t.stats.granted(at, 0);
                    if $t.stats.grant_order() {
                        // A lone thread's (under `exact`; no lock here makes one
                        // wait): recorded, its wait up to `at`, after its release.
                        let stats = &mut *$t.stats;
                        let wait = at.saturating_sub(from);
                        stats.record_acquire(0, at, wait, 0, Handoff::Reacquired);
                        if stats.window().contains(at) {
                            $ops += 1;
                        }
                    } else {
                        $counted.add(at, reacquired, waited);
                    }
                }
            }
            $run!(env.work(p.outside_ns(env)));
            true
        } else {
            $counted.flush($t.stats, &mut $ops);
            let local = &mut *$t.local;
            local.enter(0);
            $t.stats.wait(Waiting::new(0, 0, t0));
            $run!(lock.acquire(env, local));
            let (t1, wait) = env.acquire_granted(t0);
            let grant = env.note_grant(0);
            let bypass = local.bypass(0, grant.before, env.wait_start());
            $t.stats.granted_after(t1, wait, bypass);
            $run!(locks.touch(env, 0));
            let reacquired = $marks && $run!(locks.mark_holder(env, 0));
            $run!(env.work(p.critical_ns(env)));
            let hold = env.acquire_held(t1);
            $run!(lock.release(env, local));
            let stats = &mut *$t.stats;
            stats.record_acquire(0, t1, wait, bypass, grant.from);
            stats.count_reacquisitions(0, t1, reacquired as u64);
            if let Some(hold) = hold {
                stats.record_hold(0, t1, hold);
            }
            if stats.window().contains(t1) {
                $ops += 1;
            }
            $run!(env.work(p.outside_ns(env)));
            true
        }
    }};
}
use operation;
