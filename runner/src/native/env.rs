//! `NativeEnv`: the `Env` of a real, pinned thread. Every future it returns is already
//! complete: the operation is the real atomic instruction, `wait_until` spins in place
//! (`spin_loop`), `work` is a calibrated spin. [`block_on`] polls such a future once.

use super::arena::Arena;
use super::calibrate::WorkLoop;
use crate::env::{Addr, Env, Grant, Handoff, Word};
use crate::rng::SplitMix64;
use std::cell::Cell;
use std::future::{ready, Future};
use std::sync::atomic::Ordering;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

/// Run a future whose `Env` operations are all native (always ready).
pub fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    match f.as_mut().poll(&mut cx) {
        Poll::Ready(v) => v,
        Poll::Pending => unreachable!("native Env futures complete when first polled"),
    }
}

/// What a waiting thread does while its condition is false.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spin {
    /// Spin with `spin_loop` only (pinned measurement runs).
    Pure,
    /// Yield the CPU after this many fruitless spins (oversubscribed tests: a waiter
    /// must let a preempted holder run).
    YieldAfter(u32),
}

/// The clock `now()` reads.
#[derive(Debug, Clone, Copy)]
pub enum Clock {
    /// ns since a shared instant (the run's base).
    Real(Instant),
    /// ns since a shared TSC reading (x86_64 with an invariant TSC that the kernel
    /// itself uses as its clocksource): a raw `rdtsc` is about half the cost of
    /// `clock_gettime`, which matters at three clock reads per acquisition.
    Tsc(tsc::Base),
    /// Always this value (deterministic, no time).
    Fixed(u64),
    /// Advances by this much at every `now()` call (loom models: deterministic time
    /// that still passes, so thresholds are reached).
    Ticks(u64),
}

impl Clock {
    /// The best clock of this host, counting from now: TSC where trusted, else the
    /// monotonic clock.
    pub fn host() -> Clock {
        match tsc::Base::now() {
            Some(b) => Clock::Tsc(b),
            None => Clock::Real(Instant::now()),
        }
    }

    /// Read it without an `Env` (the coordinator).
    pub fn read(&self) -> u64 {
        match *self {
            Clock::Real(base) => base.elapsed().as_nanos() as u64,
            Clock::Tsc(b) => b.ns(),
            Clock::Fixed(t) | Clock::Ticks(t) => t,
        }
    }

    pub fn is_tsc(&self) -> bool {
        matches!(self, Clock::Tsc(_))
    }
}

/// The time-stamp counter as a clock.
pub mod tsc {
    use std::sync::OnceLock;
    use std::time::Instant;

    /// A TSC reading and the calibrated tick length.
    #[derive(Debug, Clone, Copy)]
    pub struct Base {
        tick0: u64,
        ns_per_tick: f64,
    }

    #[cfg(target_arch = "x86_64")]
    #[inline]
    fn read() -> u64 {
        #[allow(unused_unsafe)]
        // SAFETY: rdtsc has no preconditions on x86_64.
        unsafe {
            core::arch::x86_64::_rdtsc()
        }
    }

    #[cfg(not(target_arch = "x86_64"))]
    #[inline]
    fn read() -> u64 {
        0
    }

    impl Base {
        /// A base at this instant, if the TSC can be trusted here.
        pub fn now() -> Option<Base> {
            ns_per_tick().map(|ns_per_tick| Base {
                tick0: read(),
                ns_per_tick,
            })
        }

        #[inline]
        pub fn ns(&self) -> u64 {
            (read().wrapping_sub(self.tick0) as f64 * self.ns_per_tick) as u64
        }
    }

    /// Trusted only where the kernel says so: invariant TSC flags and `tsc` as the
    /// current clocksource (which the kernel drops if the TSCs of CPUs disagree).
    fn trusted() -> bool {
        if !cfg!(target_arch = "x86_64") || cfg!(loom) {
            return false;
        }
        let src = std::fs::read_to_string(
            "/sys/devices/system/clocksource/clocksource0/current_clocksource",
        )
        .unwrap_or_default();
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let flags = cpuinfo
            .lines()
            .find(|l| l.starts_with("flags"))
            .unwrap_or("");
        let has = |f: &str| flags.split_whitespace().any(|x| x == f);
        src.trim() == "tsc" && has("constant_tsc") && has("nonstop_tsc")
    }

    /// ns per tick, measured once against the monotonic clock over 20 ms.
    pub fn ns_per_tick() -> Option<f64> {
        static CAL: OnceLock<Option<f64>> = OnceLock::new();
        *CAL.get_or_init(|| {
            if !trusted() {
                return None;
            }
            let (t0, c0) = (Instant::now(), read());
            std::thread::sleep(std::time::Duration::from_millis(20));
            let (t1, c1) = (Instant::now(), read());
            let ticks = c1.wrapping_sub(c0);
            (ticks > 0).then(|| (t1 - t0).as_nanos() as f64 / ticks as f64)
        })
    }
}

/// Records thread CPU time and involuntary context switches when `now()` first
/// crosses the window's start and end, so they cover the measured window only.
#[derive(Debug)]
pub(crate) struct CpuMarks {
    pub start_ns: u64,
    pub end_ns: u64,
    /// (CPU ns, involuntary switches) at the window's start and end.
    pub at_start: Cell<Option<(u64, u64)>>,
    pub at_end: Cell<Option<(u64, u64)>>,
}

impl CpuMarks {
    fn observe(&self, t: u64) {
        if self.at_end.get().is_some() {
            return;
        }
        if self.at_start.get().is_none() {
            if t >= self.start_ns {
                self.at_start.set(Some(mark()));
            }
        } else if t >= self.end_ns {
            self.at_end.set(Some(mark()));
        }
    }
}

/// (thread CPU ns, involuntary context switches of this thread).
pub(crate) fn mark() -> (u64, u64) {
    (thread_cpu_ns(), involuntary_switches())
}

/// Times the calling thread was preempted (getrusage RUSAGE_THREAD `ru_nivcsw`): a
/// thread that shares its CPU with another task loses it this way, whether or not
/// its lock makes it sleep otherwise.
pub fn involuntary_switches() -> u64 {
    // SAFETY: zeroed rusage is a valid out value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid `who` and out pointer.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    if rc != 0 {
        return 0;
    }
    ru.ru_nivcsw as u64
}

/// CPU time of the calling thread (CLOCK_THREAD_CPUTIME_ID), ns.
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid clock id and a valid out pointer.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// How a native thread's `Env` behaves, besides who it is.
#[derive(Debug, Clone, Copy)]
pub struct EnvConfig {
    pub clock: Clock,
    /// The run's seed; each thread's random stream is derived from it and its id.
    pub seed: u64,
    pub spin: Spin,
    /// The calibrated loop behind `Env::work`.
    pub work: WorkLoop,
}

// Under loom, waits yield to the model checker instead of spinning.
#[cfg_attr(loom, allow(dead_code))]
pub struct NativeEnv<'a> {
    arena: &'a Arena,
    tid: usize,
    nthreads: usize,
    node: u32,
    clock: Clock,
    rng: Cell<SplitMix64>,
    spin: Spin,
    work: WorkLoop,
    pauses: Cell<u32>,
    ticks: Cell<u64>,
    pub(crate) marks: Option<CpuMarks>,
}

impl<'a> NativeEnv<'a> {
    /// Thread `tid` of `nthreads`, on NUMA node `node`.
    pub fn new(
        arena: &'a Arena,
        tid: usize,
        nthreads: usize,
        node: u32,
        config: EnvConfig,
    ) -> Self {
        let seed = config.seed ^ (tid as u64).wrapping_mul(0xd1b5_4a32_d192_ed03);
        NativeEnv {
            arena,
            tid,
            nthreads,
            node,
            clock: config.clock,
            rng: Cell::new(SplitMix64::new(seed)),
            spin: config.spin,
            work: config.work,
            pauses: Cell::new(0),
            ticks: Cell::new(0),
            marks: None,
        }
    }

    /// A thread for tests and examples: real clock, node 0, seed = tid, yielding
    /// waits (safe when oversubscribed), uncalibrated `work`.
    pub fn for_test(arena: &'a Arena, tid: usize, nthreads: usize) -> Self {
        let config = EnvConfig {
            clock: Clock::Real(Instant::now()),
            seed: tid as u64,
            spin: Spin::YieldAfter(64),
            work: WorkLoop::uncalibrated(),
        };
        Self::new(arena, tid, nthreads, 0, config)
    }

    /// Override the node (virtual node maps in tests).
    pub fn with_node(mut self, node: u32) -> Self {
        self.node = node;
        self
    }

    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    #[inline]
    fn relax(&self) {
        #[cfg(loom)]
        loom::thread::yield_now();
        #[cfg(not(loom))]
        {
            std::hint::spin_loop();
            if let Spin::YieldAfter(n) = self.spin {
                let p = self.pauses.get() + 1;
                if p >= n {
                    self.pauses.set(0);
                    std::thread::yield_now();
                } else {
                    self.pauses.set(p);
                }
            }
        }
    }
}

fn failure_ordering(o: Ordering) -> Ordering {
    match o {
        Ordering::SeqCst => Ordering::SeqCst,
        Ordering::Acquire | Ordering::AcqRel => Ordering::Acquire,
        _ => Ordering::Relaxed,
    }
}

impl Env for NativeEnv<'_> {
    const NATIVE: bool = true;

    fn tid(&self) -> usize {
        self.tid
    }

    fn nthreads(&self) -> usize {
        self.nthreads
    }

    fn node(&self) -> u32 {
        self.node
    }

    #[inline]
    fn now(&self) -> u64 {
        let t = match self.clock {
            Clock::Real(base) => base.elapsed().as_nanos() as u64,
            Clock::Tsc(b) => b.ns(),
            Clock::Fixed(t) => t,
            Clock::Ticks(step) => {
                let t = self.ticks.get() + step;
                self.ticks.set(t);
                t
            }
        };
        if let Some(m) = &self.marks {
            m.observe(t);
        }
        t
    }

    fn random(&self) -> u64 {
        let mut r = self.rng.get();
        let v = r.next_u64();
        self.rng.set(r);
        v
    }

    #[inline]
    fn load(&self, a: Addr, o: Ordering) -> impl Future<Output = Word> {
        ready(self.arena.word(a).load(o))
    }

    #[inline]
    fn store(&self, a: Addr, v: Word, o: Ordering) -> impl Future<Output = ()> {
        self.arena.word(a).store(v, o);
        ready(())
    }

    #[inline]
    fn swap(&self, a: Addr, v: Word, o: Ordering) -> impl Future<Output = Word> {
        // Loom cannot explore a spin loop that stores on every iteration (a TAS
        // waiter's failing swap): each store is a new state. A swap that would store
        // the value already there is, at that instant, a load with the same result
        // (nothing is published), so under loom it is one.
        #[cfg(loom)]
        {
            let lo = match o {
                Ordering::AcqRel => Ordering::Acquire,
                Ordering::Release => Ordering::Relaxed,
                o => o,
            };
            let cur = self.arena.word(a).load(lo);
            if cur == v {
                return ready(cur);
            }
        }
        ready(self.arena.word(a).swap(v, o))
    }

    #[inline]
    fn cas(
        &self,
        a: Addr,
        old: Word,
        new: Word,
        o: Ordering,
    ) -> impl Future<Output = Result<Word, Word>> {
        ready(
            self.arena
                .word(a)
                .compare_exchange(old, new, o, failure_ordering(o)),
        )
    }

    #[inline]
    fn fetch_add(&self, a: Addr, v: Word, o: Ordering) -> impl Future<Output = Word> {
        ready(self.arena.word(a).fetch_add(v, o))
    }

    #[inline]
    fn fetch_or(&self, a: Addr, v: Word, o: Ordering) -> impl Future<Output = Word> {
        ready(self.arena.word(a).fetch_or(v, o))
    }

    #[inline]
    fn fetch_and(&self, a: Addr, v: Word, o: Ordering) -> impl Future<Output = Word> {
        ready(self.arena.word(a).fetch_and(v, o))
    }

    #[inline]
    fn wait_until<P: Fn(Word) -> bool>(
        &self,
        a: Addr,
        o: Ordering,
        pred: P,
    ) -> impl Future<Output = Word> {
        let w = self.arena.word(a);
        loop {
            let v = w.load(o);
            if pred(v) {
                return ready(v);
            }
            self.relax();
        }
    }

    #[inline]
    fn work(&self, ns: u64) -> impl Future<Output = ()> {
        self.work.spin(ns);
        ready(())
    }

    #[inline]
    fn pause(&self) -> impl Future<Output = ()> {
        self.relax();
        ready(())
    }

    fn grants(&self, lock: usize) -> u64 {
        self.arena.instr(lock, 0).load(Ordering::Relaxed)
    }

    fn note_grant(&self, lock: usize) -> Grant {
        // Only the holder writes these words, so load + store (no RMW) is enough.
        let g = self.arena.instr(lock, 0);
        let before = g.load(Ordering::Relaxed);
        g.store(before + 1, Ordering::Relaxed);
        // The last holder: thread id + 1 in the high half, node in the low (0: none).
        let last = self.arena.instr(lock, 1);
        let prev = last.load(Ordering::Relaxed);
        last.store(
            ((self.tid as u64 + 1) << 32) | self.node as u64,
            Ordering::Relaxed,
        );
        let holder = (prev >> 32)
            .checked_sub(1)
            .map(|t| (t as usize, prev as u32));
        Grant {
            before,
            from: Handoff::after(self.tid, holder),
        }
    }
}
