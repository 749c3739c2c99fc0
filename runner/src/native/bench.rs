//! `locklab bench native`: what a lock costs uncontended, what the measurement
//! harness adds around it, and what writing locks as `async` over `Env` costs
//! compared with a plain hand-written lock. Single thread, the calling thread's CPU.

use super::{block_on, calibrate_for, Arena, BlockOn, Clock, EnvConfig, NativeEnv, Spin, WorkLoop};
use crate::env::{Env, LineAlloc};
use crate::locks::{catalogue, with_lock, LocalState, Lock, LockVisitor, Site};
use crate::stats::{ThreadStats, Window};
use crate::workload::{self, Locks};
use locklab_model::plan::{Dist, LockAlgo, Recording, Workload};
use std::sync::atomic::AtomicU64;
use std::time::Instant;

/// Thread 0 of `nthreads` (the others never run: a shared lock's bookkeeping,
/// uncontended).
fn env<'a>(
    arena: &'a Arena,
    work: &WorkLoop,
    recording: Recording,
    nthreads: usize,
) -> NativeEnv<'a> {
    let config = EnvConfig {
        clock: Clock::host(),
        seed: 1,
        spin: Spin::Pure,
        work: *work,
        time_every: super::env::time_every(0.0),
        recording,
    };
    NativeEnv::new(arena, 0, nthreads, 0, config)
}

/// One lock, alone: its `Site`.
const ALONE: Site = Site {
    id: 0,
    nthreads: 1,
    asks_contended: false,
};

/// ns per uncontended acquire + release of `algo` (best of three rounds of `iters`),
/// the algorithm's own type (as the workloads run it).
pub fn uncontended(work: &WorkLoop, algo: &LockAlgo, iters: u64) -> f64 {
    struct Uncontended<'a>(&'a WorkLoop, u64);
    impl LockVisitor for Uncontended<'_> {
        type Output = f64;
        fn visit<L: Lock>(self, make: impl Fn(&mut LineAlloc, Site) -> L) -> f64 {
            let mut alloc = LineAlloc::new();
            let lock = make(&mut alloc, ALONE);
            let arena = Arena::new(alloc.count() as usize, 1);
            time_lock(&lock, &env(&arena, self.0, Recording::Exact, 1), self.1)
        }
    }
    with_lock(algo, Uncontended(work, iters))
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
/// histogram recording), recording as `recording` says, by thread 0 of a point of
/// `threads` (1: a run's only thread, whose grant order needs no recording; more:
/// the bookkeeping of a shared lock, without its contention). The best of three
/// rounds, each about `iters` × 50 ns.
pub fn harness(
    work: &WorkLoop,
    algo: &LockAlgo,
    iters: u64,
    recording: Recording,
    threads: usize,
) -> f64 {
    harness_rounds(work, algo, iters, recording, threads, 0, 0, 3)
        .into_iter()
        .fold(f64::INFINITY, f64::min)
}

/// [`harness`] with `lines` data lines written in the critical section (`harness`:
/// none, as lockhammer's loop) and `outside_ns` of work after each release (`harness`:
/// none), each of `rounds` rounds' ns per iteration.
#[allow(clippy::too_many_arguments)]
pub fn harness_rounds(
    work: &WorkLoop,
    algo: &LockAlgo,
    iters: u64,
    recording: Recording,
    threads: usize,
    lines: u32,
    outside_ns: u64,
    rounds: usize,
) -> Vec<f64> {
    struct Harness<'a>(&'a WorkLoop, u64, Recording, usize, usize, u32, u64);
    impl LockVisitor for Harness<'_> {
        type Output = Vec<f64>;
        fn visit<L: Lock>(self, make: impl Fn(&mut LineAlloc, Site) -> L) -> Vec<f64> {
            let (iters, threads, rounds, lines) = (self.1, self.3, self.4, self.5);
            let w = Workload::SingleLock {
                critical: Dist::Fixed { ns: 0 },
                outside: Dist::Fixed { ns: self.6 },
                lines,
            };
            let shape = workload::shape(&w, threads as u32);
            let mut alloc = LineAlloc::new();
            let locks = Locks::build(&shape, threads, &mut alloc, make);
            let arena = Arena::new(alloc.count() as usize, locks.len());
            let env = env(&arena, self.0, self.2, threads);
            // One LocalState for the thread's whole use of the locks (CLH nodes change
            // hands).
            let mut local = LocalState::new(0, locks.len());
            let mut each = Vec::with_capacity(rounds);
            for _ in 0..rounds {
                let start = env.now();
                let end = start + iters.saturating_mul(50).max(1_000_000);
                let window = Window {
                    start_ns: start,
                    end_ns: end,
                };
                let mut stats = ThreadStats::new(0, 0, window, &["lock"], 0).recording(self.2);
                let ops =
                    workload::drive_thread(&BlockOn, &w, &locks, &env, &mut local, &mut stats, end);
                let took = env.now() - start;
                each.push(took as f64 / ops.max(1) as f64);
            }
            each
        }
    }
    with_lock(
        algo,
        Harness(work, iters, recording, threads, rounds, lines, outside_ns),
    )
}

/// A line of its own for a hand-written lock's words.
#[repr(align(128))]
#[derive(Default)]
struct Line {
    a: AtomicU64,
    b: AtomicU64,
}

/// Four locks written by hand on std atomics, no `Env`, no `async`: the
/// reference for what the `Env` abstraction costs. The same words on lines of their
/// own, the same orderings, and the same memory accesses as the `Env` versions,
/// including the FIFO locks' mark of their doorway for `bypass` (`LocalState::arrive`:
/// the grant count read from an instrumentation line and kept; about 2 ns here).
pub mod plain {
    use super::{best_of_three, Line};
    use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};

    /// Lines and thread state on the heap, where a run's arena and `LocalState` are
    /// (on the stack the same accesses measured 2 ns less per acquisition here).
    fn lines<const N: usize>() -> Box<[Line; N]> {
        let lines = Box::new(std::array::from_fn(|_| Line::default()));
        // Shared with others as far as the compiler knows, like the arena's lines.
        std::hint::black_box(&*lines);
        lines
    }

    /// The doorway mark: the lock's grant count, as this thread's arrival.
    #[inline(always)]
    fn arrive(grants: &Line, arrival: &mut u64) {
        // Volatile: kept like the Env version's, not folded out of the loop.
        // SAFETY: a valid, exclusive reference.
        unsafe { std::ptr::write_volatile(arrival, grants.a.load(Relaxed)) };
    }

    /// Test-and-set: swap until it returns 0; release stores 0.
    pub fn tas(iters: u64) -> f64 {
        let [l] = &*lines::<1>();
        best_of_three(iters, &mut || {
            for _ in 0..iters {
                while l.a.swap(1, Acquire) != 0 {
                    std::hint::spin_loop();
                }
                l.a.store(0, Release);
            }
        })
    }

    /// Ticket: fetch-add `next`, wait for `owner`; release increments `owner`.
    pub fn ticket(iters: u64) -> f64 {
        let [l, grants] = &*lines::<2>();
        let mut arrival = Box::new(0);
        best_of_three(iters, &mut || {
            for _ in 0..iters {
                let me = l.a.fetch_add(1, Relaxed);
                arrive(grants, &mut arrival);
                while l.b.load(Acquire) != me {
                    std::hint::spin_loop();
                }
                let o = l.b.load(Relaxed);
                l.b.store(o + 1, Release);
            }
        })
    }

    /// MCS: a tail word and one node line per thread (next, locked), pointers being
    /// thread ids + 1, as in `locks::mcs`.
    pub fn mcs(iters: u64) -> f64 {
        let [tail, grants, nodes @ ..] = &*lines::<4>();
        let mut arrival = Box::new(0);
        let node = |p: u64| &nodes[p as usize - 1];
        let me = 1;
        best_of_three(iters, &mut || {
            for _ in 0..iters {
                // acquire
                let n = node(me);
                n.a.store(0, Relaxed);
                n.b.store(1, Relaxed);
                let prev = tail.a.swap(me, AcqRel);
                arrive(grants, &mut arrival);
                if prev != 0 {
                    node(prev).a.store(me, Release);
                    while n.b.load(Acquire) != 0 {
                        std::hint::spin_loop();
                    }
                }
                // release
                let mut next = n.a.load(Acquire);
                if next == 0 {
                    if tail.a.compare_exchange(me, 0, Release, Relaxed).is_ok() {
                        continue;
                    }
                    while next == 0 {
                        std::hint::spin_loop();
                        next = n.a.load(Acquire);
                    }
                }
                node(next).b.store(0, Release);
            }
        })
    }

    /// CLH: a tail word and one node line per thread plus a spare, nodes named by
    /// index + 1 (the tail's 0 is the spare), which with the tail on line 0 are
    /// `locks::clh`'s line numbers; the thread's current node and, while it holds,
    /// its predecessor's kept in its own state, as there.
    pub fn clh(iters: u64) -> f64 {
        let [tail, grants, nodes @ ..] = &*lines::<4>();
        let mut arrival = Box::new(0);
        let mut slot = Box::new(1u64);
        let flag = |p: u64| &nodes[p as usize - 1].a;
        best_of_three(iters, &mut || {
            for _ in 0..iters {
                // acquire
                // SAFETY (both volatile accesses): a valid, exclusive reference.
                let me = unsafe { std::ptr::read_volatile(&*slot) } & 0xffff_ffff;
                flag(me).store(1, Relaxed);
                let pred = match tail.a.swap(me, AcqRel) {
                    0 => 2,
                    p => p,
                };
                arrive(grants, &mut arrival);
                while flag(pred).load(Acquire) != 0 {
                    std::hint::spin_loop();
                }
                unsafe { std::ptr::write_volatile(&mut *slot, me | pred << 32) };
                // release
                let s = unsafe { std::ptr::read_volatile(&*slot) };
                flag(s & 0xffff_ffff).store(0, Release);
                unsafe { std::ptr::write_volatile(&mut *slot, s >> 32) };
            }
        })
    }
}

fn best_of_three(iters: u64, f: &mut dyn FnMut()) -> f64 {
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
    /// One single-lock workload iteration with an empty critical section, ns: a
    /// run's only thread (`alone`, any recording), and a thread of a two-thread run,
    /// uncontended, recording every grant in order (`recording = exact`) and one
    /// acquisition in about 64 (`sampled`).
    pub alone_ns: f64,
    pub exact_ns: f64,
    pub sampled_ns: f64,
}

/// One row per lock of `locks::catalogue`.
pub fn rows(work: &WorkLoop, iters: u64) -> Vec<Row> {
    catalogue()
        .into_iter()
        .map(|(name, a)| Row {
            lock: name.into(),
            lock_ns: uncontended(work, &a, iters),
            alone_ns: harness(work, &a, iters / 4, Recording::Exact, 1),
            exact_ns: harness(work, &a, iters / 4, Recording::Exact, 2),
            sampled_ns: harness(work, &a, iters / 4, Recording::Sampled, 2),
        })
        .collect()
}

/// "TSC", and how far it advances at a time where that is more than a tick (a Zen
/// TSC: 10 ns), which is then the resolution of one clock reading.
fn clock_steps() -> String {
    match super::env::tsc::coarse_step() {
        Some((step, ns)) => format!("TSC, advancing {step} ticks ({ns:.1} ns) at a time"),
        None => "TSC".into(),
    }
}

/// The text `locklab bench native` prints.
pub fn report(iters: u64) -> String {
    let iters = iters.max(1_000);
    // A run is a multi-threaded process; a process that never started a thread gets
    // glibc's single-threaded mutex path (no atomic instructions), which would make
    // the OS mutexes look cheaper here than in any run. Once a thread has been
    // created the process counts as multi-threaded for good.
    let _ = std::thread::spawn(|| {}).join();
    const WORK_NS: [u64; 4] = [50, 100, 200, 1_000];
    let work = calibrate_for(&WORK_NS);
    let fresh = WORK_NS.map(|ns| work.achieved_ns(ns, 9, 1_000_000));
    let mut s = String::new();
    s.push_str(&format!(
        "native, single thread, {iters} iterations per round, best of 3 rounds; clock: {}\n\n",
        if Clock::host().is_tsc() {
            clock_steps()
        } else {
            "clock_gettime(MONOTONIC)".into()
        }
    ));
    s.push_str(
        "ns per acquire + release alone, and per iteration of the single-lock loop \
         (no work): a run's only thread (alone), and one of two, uncontended, recording \
         every grant in order (exact) or one acquisition in 64 (sampled):\n",
    );
    let width = catalogue()
        .iter()
        .map(|(name, _)| name.len())
        .max()
        .unwrap_or(4);
    s.push_str(&format!(
        "{:<width$} {:>8} {:>7} {:>6} {:>6} {:>7} {:>6} {:>8} {:>6}\n",
        "lock", "acq+rel", "alone", "adds", "M/s", "exact", "adds", "sampled", "adds"
    ));
    for r in rows(&work, iters) {
        s.push_str(&format!(
            "{:<width$} {:>8.1} {:>7.1} {:>6.1} {:>6.1} {:>7.1} {:>6.1} {:>8.1} {:>6.1}\n",
            r.lock,
            r.lock_ns,
            r.alone_ns,
            r.alone_ns - r.lock_ns,
            1e3 / r.alone_ns,
            r.exact_ns,
            r.exact_ns - r.lock_ns,
            r.sampled_ns,
            r.sampled_ns - r.lock_ns,
        ));
    }
    s.push_str(
        "\nthe same algorithm written plainly on std atomics vs as async over Env \
         (best of 5 alternations of 3 rounds each):\n",
    );
    // (name, the hand-written lock: ns per acquire + release of `iters`, the Env one)
    type Pair = (&'static str, fn(u64) -> f64, LockAlgo);
    let pairs: [Pair; 4] = [
        ("tas", plain::tas, LockAlgo::TAS),
        ("ticket", plain::ticket, LockAlgo::Ticket),
        ("mcs", plain::mcs, LockAlgo::Mcs),
        ("clh", plain::clh, LockAlgo::CLH),
    ];
    for (name, plain, algo) in pairs {
        // Alternate, so that both see the machine's slow and fast spells alike.
        let (mut p, mut e) = (f64::INFINITY, f64::INFINITY);
        for _ in 0..5 {
            p = p.min(plain(iters));
            e = e.min(uncontended(&work, &algo, iters));
        }
        s.push_str(&format!(
            "{name:<8} plain {p:>6.1} ns, over Env {e:>6.1} ns (ratio {:.2})\n",
            e / p
        ));
    }
    s.push_str(&format!(
        "\nwork loop: two clock reads are {:.1} ns apart; below {} ns a request is a counted loop, \
         one call in 8 timed; a call costs, besides what its reads measure (in reads): {}\n",
        work.read_ns(),
        work.short_ns(),
        work.calibrated()
            .iter()
            .map(|(ns, b)| format!("{ns} ns {b:.2}"))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    s.push_str(
        "the mean of a call against the clock (median of 9 rounds of 1 ms), right after \
         calibrating and again after the lock measurements above:\n",
    );
    for (ns, fresh) in WORK_NS.into_iter().zip(fresh) {
        let later = work.achieved_ns(ns, 9, 1_000_000);
        s.push_str(&format!(
            "work({ns} ns) takes {fresh:.1} ns, then {later:.1} ns (achieved/nominal {:.3}, {:.3})\n",
            fresh / ns as f64,
            later / ns as f64
        ));
    }
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
