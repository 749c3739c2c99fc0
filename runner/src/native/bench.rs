//! `locklab bench native`: what a lock costs uncontended, what the measurement
//! harness adds around it, and what writing locks as `async` over `Env` costs
//! compared with a plain hand-written lock. Single thread, the calling thread's CPU.

use super::{block_on, work_loop, Arena, BlockOn, Clock, EnvConfig, NativeEnv, Spin};
use crate::env::{Env, LineAlloc};
use crate::locks::{catalogue, with_lock, LocalState, Lock, LockVisitor, Site};
use crate::stats::{ThreadStats, Window};
use crate::workload::{self, Locks};
use locklab_model::plan::{Dist, LockAlgo, Workload};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

fn env(arena: &Arena) -> NativeEnv<'_> {
    let config = EnvConfig {
        clock: Clock::host(),
        seed: 1,
        spin: Spin::Pure,
        work: work_loop(),
        time_every: super::env::time_every(0.0),
    };
    NativeEnv::new(arena, 0, 1, 0, config)
}

/// One lock, alone: its `Site`.
const ALONE: Site = Site { id: 0, nthreads: 1 };

/// ns per uncontended acquire + release of `algo` (best of three rounds of `iters`),
/// the algorithm's own type (as the workloads run it).
pub fn uncontended(algo: &LockAlgo, iters: u64) -> f64 {
    struct Uncontended(u64);
    impl LockVisitor for Uncontended {
        type Output = f64;
        fn visit<L: Lock>(self, make: impl Fn(&mut LineAlloc, Site) -> L) -> f64 {
            let mut alloc = LineAlloc::new();
            let lock = make(&mut alloc, ALONE);
            let arena = Arena::new(alloc.count() as usize, 1);
            time_lock(&lock, &env(&arena), self.0)
        }
    }
    with_lock(algo, Uncontended(iters))
}

#[inline(never)]
fn time_lock<L: Lock>(lock: &L, env: &NativeEnv<'_>, iters: u64) -> f64 {
    let mut local = LocalState::new(0, 1);
    let mut best = f64::INFINITY;
    for _ in 0..3 {
        let t = Instant::now();
        for _ in 0..iters {
            block_on(lock.acquire(env, &mut local));
            block_on(lock.release(env, &mut local));
        }
        best = best.min(t.elapsed().as_nanos() as f64 / iters.max(1) as f64);
    }
    best
}

/// ns per iteration of the single-lock workload loop with an empty critical section
/// and no outside work: the lock plus the harness (clock reads, grant counters,
/// histogram recording). Runs for about `iters` × 50 ns.
pub fn harness(algo: &LockAlgo, iters: u64) -> f64 {
    struct Harness(u64);
    impl LockVisitor for Harness {
        type Output = f64;
        fn visit<L: Lock>(self, make: impl Fn(&mut LineAlloc, Site) -> L) -> f64 {
            let iters = self.0;
            let w = Workload::SingleLock {
                critical: Dist::Fixed { ns: 0 },
                outside: Dist::Fixed { ns: 0 },
                lines: 0,
            };
            let shape = workload::shape(&w, 1);
            let mut alloc = LineAlloc::new();
            let locks = Locks::build(&shape, 1, &mut alloc, make);
            let arena = Arena::new(alloc.count() as usize, locks.len());
            let env = env(&arena);
            // One LocalState for the thread's whole use of the locks (CLH nodes change
            // hands).
            let mut local = LocalState::new(0, locks.len());
            let mut best = f64::INFINITY;
            for _ in 0..3 {
                let start = env.now();
                let end = start + iters.saturating_mul(50).max(1_000_000);
                let window = Window {
                    start_ns: start,
                    end_ns: end,
                };
                let mut stats = ThreadStats::new(0, 0, window, &["lock"], 0);
                let ops =
                    workload::drive_thread(&BlockOn, &w, &locks, &env, &mut local, &mut stats, end);
                let took = env.now() - start;
                best = best.min(took as f64 / ops.max(1) as f64);
            }
            best
        }
    }
    with_lock(algo, Harness(iters))
}

/// A ticket lock written by hand on std atomics, no `Env`, no `async`: the reference
/// for what the `Env` abstraction costs.
pub fn plain_ticket(iters: u64) -> f64 {
    #[repr(align(128))]
    struct T {
        next: AtomicU64,
        owner: AtomicU64,
    }
    let t = T {
        next: AtomicU64::new(0),
        owner: AtomicU64::new(0),
    };
    best_of_three(iters, || {
        for _ in 0..iters {
            let me = t.next.fetch_add(1, Ordering::Relaxed);
            while t.owner.load(Ordering::Acquire) != me {
                std::hint::spin_loop();
            }
            let o = t.owner.load(Ordering::Relaxed);
            t.owner.store(o + 1, Ordering::Release);
        }
    })
}

fn best_of_three(iters: u64, mut f: impl FnMut()) -> f64 {
    let mut best = f64::INFINITY;
    for _ in 0..3 {
        let t = Instant::now();
        f();
        best = best.min(t.elapsed().as_nanos() as f64 / iters.max(1) as f64);
    }
    best
}

/// One row of the report.
#[derive(Debug, Clone)]
pub struct Row {
    pub lock: String,
    /// Uncontended acquire + release, ns.
    pub lock_ns: f64,
    /// One single-lock workload iteration with an empty critical section, ns.
    pub harness_ns: f64,
}

/// One row per lock of `locks::catalogue`.
pub fn rows(iters: u64) -> Vec<Row> {
    catalogue()
        .into_iter()
        .map(|(name, a)| Row {
            lock: name.into(),
            lock_ns: uncontended(&a, iters),
            harness_ns: harness(&a, iters / 4),
        })
        .collect()
}

/// The text `locklab bench native` prints.
pub fn report(iters: u64) -> String {
    let iters = iters.max(1_000);
    let wl = work_loop();
    let mut s = String::new();
    s.push_str(&format!(
        "native, single thread, {iters} iterations per round, best of 3 rounds; clock: {}\n\n",
        if Clock::host().is_tsc() {
            "TSC"
        } else {
            "clock_gettime(MONOTONIC)"
        }
    ));
    s.push_str(&format!(
        "{:<18} {:>14} {:>16} {:>14}\n",
        "lock", "acq+rel ns", "harness iter ns", "harness adds"
    ));
    for r in rows(iters) {
        s.push_str(&format!(
            "{:<18} {:>14.1} {:>16.1} {:>14.1}\n",
            r.lock,
            r.lock_ns,
            r.harness_ns,
            r.harness_ns - r.lock_ns
        ));
    }
    let plain = plain_ticket(iters);
    let asy = uncontended(&LockAlgo::Ticket, iters);
    s.push_str(&format!(
        "\nticket written plainly on std atomics: {plain:.1} ns; as async over Env: {asy:.1} ns (ratio {:.2})\n",
        asy / plain
    ));
    s.push_str(&format!(
        "work loop: {:.3} iterations/ns; work(100ns) takes {:.1} ns, work(1us) {:.1} ns\n",
        wl.iters_per_ns(),
        wl.achieved_ns(100),
        wl.achieved_ns(1_000)
    ));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_covers_every_lock() {
        let r = report(1_000);
        for (name, _) in catalogue() {
            assert!(r.contains(name), "{name} missing:\n{r}");
        }
        assert!(r.contains("ratio"));
    }
}
