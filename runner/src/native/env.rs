//! `NativeEnv`: the `Env` of a real, pinned thread. Every future it returns is already
//! complete: the operation is the real atomic instruction, `wait_until` spins in place
//! (`spin_loop`), `work` is a calibrated spin. [`block_on`] polls such a future once.

use super::arena::{Arena, AtomicU64, LineView};
use super::calibrate::{WorkLoop, WorkState};
use crate::env::{Addr, Env, Grant, Handoff, WaitStart, Word};
use crate::rng::SplitMix64;
use locklab_model::plan::Recording;
use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

/// Run a future whose `Env` operations are all native (always ready).
#[inline(always)]
pub fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    match f.as_mut().poll(&mut cx) {
        Poll::Ready(v) => v,
        Poll::Pending => unreachable!("native Env futures complete when first polled"),
    }
}

/// [`block_on`] as a `workload::Drive`.
#[derive(Debug, Clone, Copy)]
pub struct BlockOn;

impl crate::workload::Drive for BlockOn {
    #[inline(always)]
    fn drive<F: Future>(&self, f: F) -> F::Output {
        block_on(f)
    }
}

/// The future of a native `Env` operation: the operation has already happened, this
/// only hands back its result. Unlike `std::future::Ready` it holds the value itself,
/// not an `Option` taken at the first poll, so polling it has no "polled twice" panic
/// path: an `.await` on it compiles to nothing, and the lock code around it stays small
/// enough to be inlined into the measured loop.
#[derive(Debug, Clone, Copy)]
pub struct Done<T: Copy>(T);

impl<T: Copy> Future for Done<T> {
    type Output = T;
    #[inline(always)]
    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<T> {
        Poll::Ready(self.0)
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

    /// The TSC now (0 where there is none).
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    pub(crate) fn read() -> u64 {
        #[allow(unused_unsafe)]
        // SAFETY: rdtsc has no preconditions on x86_64.
        unsafe {
            core::arch::x86_64::_rdtsc()
        }
    }

    #[cfg(not(target_arch = "x86_64"))]
    #[inline(always)]
    pub(crate) fn read() -> u64 {
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

    /// How many ticks the counter advances at a time, from 10,000 pairs of reads a
    /// varied distance apart (measured once; [`step_of`]). 1 on most Intel parts; on
    /// AMD's Zen parts the TSC counts a 100 MHz reference clock, so it steps by the P0
    /// multiplier, 10 ns at a time, and a single timed interval is known only to
    /// within one step. The distance varies (a counted loop of 0 to 96 iterations
    /// between the two reads) so that a counter of single ticks read at a steady
    /// rhythm, whose differences would cluster on one value, is not taken for one
    /// that steps.
    pub fn step_ticks() -> u64 {
        static STEP: OnceLock<u64> = OnceLock::new();
        *STEP.get_or_init(|| {
            let deltas: Vec<u64> = (0..10_000u64)
                .map(|i| {
                    let a = read();
                    let mut j = 0;
                    while j < i % 97 {
                        j = std::hint::black_box(j + 1);
                    }
                    read().wrapping_sub(a)
                })
                .collect();
            step_of(&deltas)
        })
    }

    /// The step of a counter from the differences of pairs of reads: of the `s` of at
    /// least 4 ticks such that 90 % of the non-zero differences lie within one tick
    /// of a multiple of `s`, the largest that nearly as many are exact multiples of
    /// as of any; 1 if there is none. Within one tick, not exactly:
    /// a guest's TSC is the host's scaled and offset, and on one Zen 4 guest 9 % of
    /// back-to-back differences were 1 and 25 ticks (a step of 26 read one tick
    /// late) against 91 % at 26. Differences spread over several steps leave a
    /// counter of single ticks below 75 % for every `s` of 4 or more.
    pub(crate) fn step_of(deltas: &[u64]) -> u64 {
        let d: Vec<u64> = deltas.iter().copied().filter(|&d| d > 0).collect();
        if d.is_empty() {
            return 1;
        }
        let mut sorted = d.clone();
        let largest = *sorted.select_nth_unstable(d.len() / 2).1 + 1;
        // The steps that qualify, with how many differences are exact multiples of
        // each: the step, its divisors, and perhaps one tick more than it (26 mod 27
        // is within one tick). Of those, the largest that about as many differences
        // are exact multiples of as of any: the step, not its divisors, nor its
        // neighbour.
        let count = |f: &dyn Fn(u64) -> bool| d.iter().filter(|&&x| f(x)).count();
        let qualifying: Vec<(u64, usize)> = (4..=largest)
            .filter(|&s| count(&|x| x % s <= 1 || x % s >= s - 1) * 10 >= d.len() * 9)
            .map(|s| (s, count(&|x| x % s == 0)))
            .collect();
        let best = qualifying.iter().map(|&(_, e)| e).max().unwrap_or(0);
        qualifying
            .into_iter()
            .rev()
            .find(|&(_, e)| e * 10 >= best * 9)
            .map_or(1, |(s, _)| s)
    }

    /// The counter's step in ticks and ns where it advances more than one tick at a
    /// time (a trusted TSC only): what `topo --measure` and `bench native` report.
    pub fn coarse_step() -> Option<(u64, f64)> {
        let ns = ns_per_tick()?;
        let step = step_ticks();
        (step > 1).then_some((step, step as f64 * ns))
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
    /// Read the clock at the start of one acquisition in about this many (at
    /// random, this many on average), and time that one's grant and hold (1: every
    /// acquisition). See [`NativeEnv`]'s timing.
    pub time_every: u32,
    /// `Recording::Sampled`: record only the acquisitions whose start read the
    /// clock, and keep no grant order (no shared instrumentation line).
    pub recording: Recording,
}

/// Spins after which a wait that is only counted (`recording = sampled`) reads the
/// clock: a wait that long (about 1 µs of `pause`s on current x86) may run into the
/// window's end, where it must be cut off rather than lost. A bare loop's spins
/// (`Env::retry`, no pause) come faster, so its waits read the clock sooner: more
/// reads, never a wait lost.
pub(crate) const LONG_WAIT_SPINS: u32 = 32;

/// `EnvConfig::time_every` for a workload whose nominal cycle (one acquisition and
/// the work around it) is `cycle_ns`: the clock is read about every 20 µs, in one
/// acquisition in 64 on average at most (the spacing is drawn, 1 to 2N − 1). 20 µs
/// (40 µs at most) keeps the loop's end and the window's edges (and fairness windows
/// of a millisecond or more) exact to a few percent of a millisecond; 64 makes the
/// reads cost a fraction of a nanosecond per acquisition.
pub fn time_every(cycle_ns: f64) -> u32 {
    (20_000.0 / cycle_ns.max(1.0)).clamp(1.0, 64.0) as u32
}

/// A native thread's `Env`: real atomics on the run's arena, the real clock.
///
/// Acquisitions are timed the cheap way (`Env::acquire_start` and its siblings): a
/// clock read costs 12–25 ns on common virtual machines, more than an uncontended
/// lock, so the clock is read at the start of one acquisition in `time_every` (the
/// others reuse that reading to end the loop and place the grant in the window), a
/// wait is timed only when the first attempt failed (from the first failed check,
/// marked by `wait_until`'s waiting path, `pause` or [`Env::waiting`], to the grant;
/// an acquisition whose first attempt succeeds waited zero), and holds are timed on
/// the acquisitions whose start read the clock.
///
/// Its mutable state is boxed ([`ThreadState`]), so that `NativeEnv` holds no `Cell`
/// itself: a `&NativeEnv` argument is then read-only and `noalias` to the compiler,
/// which keeps the arena's base and mask in registers across the lock's atomics
/// instead of reloading them (the measured loop takes it as an argument for that:
/// `workload::single`'s `driven_loop`).
// Under loom, waits yield to the model checker instead of spinning.
#[cfg_attr(loom, allow(dead_code))]
pub struct NativeEnv<'a> {
    /// The arena's lines and instrumentation lines, held by value (see `LineView`).
    lines: LineView<'a>,
    instr: LineView<'a>,
    tid: usize,
    nthreads: usize,
    node: u32,
    clock: Clock,
    spin: Spin,
    work: WorkLoop,
    time_every: u32,
    /// What this thread records of the grant order.
    order: GrantOrder,
    state: Box<ThreadState>,
}

/// What a native thread records of the grant order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GrantOrder {
    /// `recording = exact`, the lock shared: every grant, through the lock's
    /// instrumentation line.
    Recorded,
    /// `exact`, the run's only thread: the order is known without recording it
    /// (every grant but the first re-acquires the lock from itself, nothing is
    /// bypassed, no first attempt fails), so its acquisitions whose start did not
    /// read the clock are only counted, as under `sampled`, and recorded as zero
    /// waits and re-acquisitions (`ThreadStats::count_acquires`).
    Alone,
    /// `recording = sampled`: not kept.
    Unrecorded,
}

/// What a native thread's `Env` changes as it runs.
struct ThreadState {
    rng: Cell<SplitMix64>,
    /// Draws the spacing of timed acquisitions, apart from `rng` so that the
    /// workload's and the locks' draws do not depend on it.
    spacing: Cell<SplitMix64>,
    /// Pauses since the last yield (`Spin::YieldAfter`); loom models yield instead.
    #[cfg_attr(loom, allow(dead_code))]
    pauses: Cell<u32>,
    ticks: Cell<u64>,
    marks: Option<CpuMarks>,
    work: WorkState,
    /// The clock at the current acquisition's first failed attempt (for one only
    /// counted, at its `LONG_WAIT_SPINS`-th spin), where `Acquisition::WAITED`.
    wait_from: Cell<u64>,
    /// The lock whose grant count the first failed attempt notes under `exact`
    /// (`Env::note_wait_grants_of`; `usize::MAX`: none), and that count for the
    /// current wait.
    wait_lock: Cell<usize>,
    wait_grants: Cell<u64>,
    /// Spins of the current acquisition, while it is only counted and untimed;
    /// nonzero only where `Acquisition::SPUN`.
    spins: Cell<u32>,
    /// The last clock reading of `acquire_start` or `acquire_granted`.
    last: Cell<u64>,
    /// The countdown to the next timed acquisition and the current one's flags.
    acquisition: Cell<Acquisition>,
}

/// What a thread knows of its current acquisition, in one word so that an untimed
/// one that did not wait costs `acquire_start` one load and one store: the
/// acquisitions until the next one whose start reads the clock (low 32 bits), and
/// flags above them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Acquisition(u64);

impl Acquisition {
    /// The start read the clock: its grant and hold are timed.
    const TIMED: u64 = 1 << 32;
    /// It has waited since `ThreadState::wait_from`.
    const WAITED: u64 = 1 << 33;
    /// It has spun (`ThreadState::spins` is nonzero).
    const SPUN: u64 = 1 << 34;
    /// Only counted, it waited and was granted (`acquire_waited`): whether its wait
    /// was long is decided, and a spin from here on is its release's (MCS's, for its
    /// successor).
    const GRANTED: u64 = 1 << 35;

    fn countdown(self) -> u32 {
        self.0 as u32
    }

    fn has(self, flag: u64) -> bool {
        self.0 & flag != 0
    }

    fn with(self, flag: u64) -> Self {
        Acquisition(self.0 | flag)
    }

    fn without(self, flag: u64) -> Self {
        Acquisition(self.0 & !flag)
    }
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
            lines: arena.lines(),
            instr: arena.instr(),
            tid,
            nthreads,
            node,
            clock: config.clock,
            spin: config.spin,
            work: config.work,
            time_every: config.time_every.max(1),
            order: match config.recording {
                Recording::Sampled => GrantOrder::Unrecorded,
                Recording::Exact if nthreads == 1 => GrantOrder::Alone,
                Recording::Exact => GrantOrder::Recorded,
            },
            state: Box::new(ThreadState {
                rng: Cell::new(SplitMix64::new(seed)),
                spacing: Cell::new(SplitMix64::new(seed ^ 0x5a4d_504c_494e_4721)),
                pauses: Cell::new(0),
                ticks: Cell::new(0),
                marks: None,
                work: config.work.state(),
                wait_from: Cell::new(0),
                wait_lock: Cell::new(usize::MAX),
                wait_grants: Cell::new(0),
                spins: Cell::new(0),
                last: Cell::new(0),
                acquisition: Cell::new(Acquisition(Acquisition::TIMED)),
            }),
        }
    }

    /// A thread for tests and examples: real clock, node 0, seed = tid, yielding
    /// waits (safe when oversubscribed), uncalibrated `work`, every acquisition timed.
    pub fn for_test(arena: &'a Arena, tid: usize, nthreads: usize) -> Self {
        let config = EnvConfig {
            clock: Clock::Real(Instant::now()),
            seed: tid as u64,
            spin: Spin::YieldAfter(64),
            work: WorkLoop::uncalibrated(),
            time_every: 1,
            recording: Recording::Exact,
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

    /// Record CPU time and preemptions when the clock crosses the window's edges.
    pub(crate) fn set_marks(&mut self, marks: CpuMarks) {
        self.state.marks = Some(marks);
    }

    pub(crate) fn marks(&self) -> Option<&CpuMarks> {
        self.state.marks.as_ref()
    }

    /// The current acquisition's start read the clock: its grant and hold are timed.
    #[inline(always)]
    fn timed(&self) -> bool {
        self.state.acquisition.get().has(Acquisition::TIMED)
    }

    /// The clock, without the window marks `now()` also checks.
    #[inline(always)]
    fn read_clock(&self) -> u64 {
        match self.clock {
            Clock::Real(base) => base.elapsed().as_nanos() as u64,
            Clock::Tsc(b) => b.ns(),
            Clock::Fixed(t) => t,
            Clock::Ticks(step) => {
                let t = self.state.ticks.get() + step;
                self.state.ticks.set(t);
                t
            }
        }
    }

    #[inline(always)]
    fn word(&self, a: Addr) -> &'a AtomicU64 {
        self.lines.word(a.line as usize, a.word as usize)
    }

    /// Waits until `pred` holds for `w`; its first check failed, so the acquisition
    /// waits from here. Out of line (see `wait_until`); `o` is never a store
    /// ordering, which keeps the load's "invalid ordering" panic, and an unwinding
    /// path, out of the loop.
    #[inline(never)]
    fn spin_until<P: Fn(Word) -> bool>(&self, w: &AtomicU64, o: Ordering, pred: P) -> Word {
        let o = match o {
            Ordering::Release => Ordering::Relaxed,
            Ordering::AcqRel => Ordering::Acquire,
            o => o,
        };
        loop {
            self.spun();
            self.relax();
            let v = w.load(o);
            if pred(v) {
                return v;
            }
        }
    }

    /// `Env::pause`, out of line: a pause instruction takes tens of cycles anyway, and
    /// the call keeps backoff loops small enough to inline. Lock code pauses only
    /// after an attempt failed, so the acquisition waits from here.
    #[inline(never)]
    fn backoff(&self) {
        self.spun();
        self.relax();
    }

    /// `Env::retry`, out of line as `backoff`: a spin without the pause.
    #[inline(never)]
    fn retried(&self) {
        self.spun();
        self.spin_turn();
    }

    /// Under `exact`, where the current wait's bypass counts from (`wait_start`):
    /// the grant count of the workload's lock, one read of its instrumentation line
    /// by a thread that waits anyway (it read nothing on its way in: `LocalState::
    /// enter`).
    #[cold]
    #[inline(never)]
    fn note_wait_grants(&self) {
        let s = &*self.state;
        s.wait_grants.set(self.grants(s.wait_lock.get()));
    }

    /// One more spin of a waiting acquisition: a recorded one is timed from its first
    /// (the first failed attempt); one only counted under `recording = sampled` reads
    /// the clock only once it has spun [`LONG_WAIT_SPINS`] times, so that a short
    /// wait costs no clock read at all and a long one is still seen
    /// (`acquire_counted`). A lone thread's (which no lock here makes wait) is timed
    /// from its first spin, as a recorded one.
    #[inline(always)]
    fn spun(&self) {
        let s = &*self.state;
        let a = s.acquisition.get();
        if self.order == GrantOrder::Unrecorded && !a.has(Acquisition::TIMED) {
            if a.has(Acquisition::GRANTED) {
                return;
            }
            let n = s.spins.get().saturating_add(1);
            s.spins.set(n);
            s.acquisition.set(a.with(Acquisition::SPUN));
            if n < LONG_WAIT_SPINS {
                return;
            }
        }
        self.waiting();
    }

    #[inline(always)]
    fn relax(&self) {
        #[cfg(not(loom))]
        std::hint::spin_loop();
        self.spin_turn();
    }

    /// The end of one spin, pause or not: under loom a yield (its spin loops must let
    /// the other threads run), natively a turn given up every so many spins where the
    /// run oversubscribes its CPUs (`Spin::YieldAfter`).
    #[inline(always)]
    fn spin_turn(&self) {
        #[cfg(loom)]
        loom::thread::yield_now();
        #[cfg(not(loom))]
        if let Spin::YieldAfter(n) = self.spin {
            count_pause(&self.state.pauses, n);
        }
    }
}

/// The yielding spin's bookkeeping, out of line and unable to unwind (`extern "C"`):
/// only oversubscribed tests use it, and anything inline or unwinding in a wait loop
/// keeps the lock code around it from being inlined into the measured loop.
#[cfg_attr(loom, allow(dead_code))]
#[cold]
#[inline(never)]
extern "C" fn count_pause(pauses: &Cell<u32>, n: u32) {
    let p = pauses.get() + 1;
    if p >= n {
        pauses.set(0);
        std::thread::yield_now();
    } else {
        pauses.set(p);
    }
}

/// Store `v` to the bits of `w` under `mask` with one plain store of just those
/// bytes, if `mask` is a naturally aligned byte, 16- or 32-bit field and the target
/// has such stores (x86_64; not under loom, whose atomics are models). False, having
/// done nothing, otherwise. `w` is a 64-bit atomic word: this module's `AtomicU64`,
/// or std's where the caller measures the hardware under any cfg (`topo --measure`).
#[inline(always)]
pub(crate) fn narrow_store<W>(w: &W, mask: Word, v: Word) -> bool {
    const { assert!(std::mem::size_of::<W>() == 8) };
    #[cfg(all(target_arch = "x86_64", not(loom)))]
    {
        let shift = mask.trailing_zeros();
        let width = (mask >> (shift % 64)).count_ones();
        let field = (v & mask) >> (shift % 64);
        let aligned = matches!(width, 8 | 16 | 32)
            && shift % width == 0
            && mask >> shift == (1u64 << width) - 1;
        if !aligned {
            return false;
        }
        // Little-endian: the field's first byte is `shift / 8` bytes in.
        let p = (w as *const W as *mut u8).wrapping_add(shift as usize / 8);
        // SAFETY: `p` points inside `*w` (the field lies within its 8 bytes, aligned
        // to its width), which lives as long as the borrow. The store is the
        // hardware's plain store of the field, as the kernel's `smp_store_release` of
        // a narrower field compiles to; `asm!` without `nomem` is a compiler barrier
        // for memory, and x86 orders a store after every earlier load and store
        // (release). Every other access to the word is a locked or aligned atomic
        // instruction on the same cache line, which x86 keeps coherent across
        // widths.
        unsafe {
            match width {
                8 => {
                    core::arch::asm!("mov byte ptr [{p}], {v}", p = in(reg) p, v = in(reg_byte) field as u8, options(nostack, preserves_flags))
                }
                16 => {
                    core::arch::asm!("mov word ptr [{p}], {v:x}", p = in(reg) p, v = in(reg) field as u16, options(nostack, preserves_flags))
                }
                _ => {
                    core::arch::asm!("mov dword ptr [{p}], {v:e}", p = in(reg) p, v = in(reg) field as u32, options(nostack, preserves_flags))
                }
            }
        }
        true
    }
    #[cfg(not(all(target_arch = "x86_64", not(loom))))]
    {
        let _ = (w, mask, v);
        false
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

    #[inline(always)]
    fn tid(&self) -> usize {
        self.tid
    }

    #[inline(always)]
    fn nthreads(&self) -> usize {
        self.nthreads
    }

    #[inline(always)]
    fn node(&self) -> u32 {
        self.node
    }

    #[inline]
    fn now(&self) -> u64 {
        let t = self.read_clock();
        if let Some(m) = &self.state.marks {
            m.observe(t);
        }
        t
    }

    #[inline(always)]
    fn random(&self) -> u64 {
        let mut r = self.state.rng.get();
        let v = r.next_u64();
        self.state.rng.set(r);
        v
    }

    #[inline(always)]
    fn acquire_start(&self) -> u64 {
        // Few stores here: they all drain before the lock's first atomic. A wait
        // marked since the last acquisition began (a release that waited, as MCS's
        // for its successor) is not this acquisition's: the flags start clear.
        let s = &*self.state;
        let a = s.acquisition.get();
        let left = a.countdown();
        if left > 1 {
            s.acquisition.set(Acquisition(left as u64 - 1));
            // The spin count's reset is written in both branches: hoisted above the
            // countdown it measured slower in the one-thread CLH loop (181–194 M/s
            // against 190–201, three alternations).
            if a.has(Acquisition::SPUN) {
                s.spins.set(0);
            }
            return s.last.get();
        }
        if a.has(Acquisition::SPUN) {
            s.spins.set(0);
        }
        // The next timed acquisition 1 to 2n - 1 from now (n on average), at random
        // so that no periodic pattern of the lock's hand-offs is sampled in step.
        let n = self.time_every as u64;
        let next = if n > 1 {
            let mut r = s.spacing.get();
            let v = r.next_u64();
            s.spacing.set(r);
            1 + v % (2 * n - 1)
        } else {
            1
        };
        let next = next.min(u32::MAX as u64);
        s.acquisition.set(Acquisition(next | Acquisition::TIMED));
        let t = self.now();
        s.last.set(t);
        t
    }

    #[inline(always)]
    fn acquire_granted(&self, _start: u64) -> (u64, u64) {
        let s = &*self.state;
        let a = s.acquisition.get();
        if a.has(Acquisition::WAITED) {
            let t = self.now();
            s.last.set(t);
            (t, t.saturating_sub(s.wait_from.get()))
        } else if a.has(Acquisition::TIMED) {
            (self.now(), 0)
        } else {
            (s.last.get(), 0)
        }
    }

    #[inline(always)]
    fn acquire_held(&self, granted: u64) -> Option<u64> {
        self.timed().then(|| self.now().saturating_sub(granted))
    }

    #[inline(always)]
    fn recorded(&self) -> bool {
        self.order == GrantOrder::Recorded || self.timed()
    }

    /// A failed attempt either spun (counted, untimed) or began a timed wait. One
    /// that waited is marked granted, so that its release's spins cannot extend its
    /// wait; one that did not costs no store (`acquire_counted` is told it did not).
    #[inline(always)]
    fn acquire_waited(&self) -> bool {
        let s = &*self.state;
        let a = s.acquisition.get();
        let waited = a.has(Acquisition::SPUN | Acquisition::WAITED);
        if waited {
            s.acquisition.set(a.with(Acquisition::GRANTED));
        }
        waited
    }

    #[inline(always)]
    fn acquire_counted(&self, start: u64, waited: bool) -> (u64, Option<u64>) {
        let s = &*self.state;
        let a = s.acquisition.get();
        if !waited || !a.has(Acquisition::WAITED) {
            return (start, None);
        }
        s.acquisition.set(a.without(Acquisition::WAITED));
        let t = self.now();
        s.last.set(t);
        (t, Some(s.wait_from.get()))
    }

    /// Lock code that waits in a way `wait_until` and `pause` do not see (the real OS
    /// mutexes) calls this once: the wait is timed from here, recorded or not.
    #[inline(always)]
    fn waiting(&self) {
        let s = &*self.state;
        let a = s.acquisition.get();
        if !a.has(Acquisition::WAITED) {
            s.wait_from.set(self.read_clock());
            s.acquisition.set(a.with(Acquisition::WAITED));
            if self.order == GrantOrder::Recorded && s.wait_lock.get() != usize::MAX {
                self.note_wait_grants();
            }
        }
    }

    #[inline]
    fn note_wait_grants_of(&self, lock: usize) {
        self.state.wait_lock.set(lock);
    }

    /// Read on the recorded path only. A wait is known to have begun only where
    /// grants are counted (`exact`, several threads); elsewhere bypass is not
    /// measured and the arrival serves.
    #[inline(always)]
    fn wait_start(&self) -> WaitStart {
        let s = &*self.state;
        if self.order != GrantOrder::Recorded || s.wait_lock.get() == usize::MAX {
            WaitStart::Arrival
        } else if s.acquisition.get().has(Acquisition::WAITED) {
            WaitStart::Grants(s.wait_grants.get())
        } else {
            WaitStart::NotYet
        }
    }

    #[inline]
    fn load(&self, a: Addr, o: Ordering) -> impl Future<Output = Word> {
        Done(self.word(a).load(o))
    }

    #[inline]
    fn store(&self, a: Addr, v: Word, o: Ordering) -> impl Future<Output = ()> {
        self.word(a).store(v, o);
        Done(())
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
            let cur = self.word(a).load(lo);
            if cur == v {
                return Done(cur);
            }
        }
        Done(self.word(a).swap(v, o))
    }

    #[inline]
    fn cas(
        &self,
        a: Addr,
        old: Word,
        new: Word,
        o: Ordering,
    ) -> impl Future<Output = Result<Word, Word>> {
        Done(
            self.word(a)
                .compare_exchange(old, new, o, failure_ordering(o)),
        )
    }

    #[inline]
    fn fetch_add(&self, a: Addr, v: Word, o: Ordering) -> impl Future<Output = Word> {
        Done(self.word(a).fetch_add(v, o))
    }

    #[inline]
    fn fetch_or(&self, a: Addr, v: Word, o: Ordering) -> impl Future<Output = Word> {
        Done(self.word(a).fetch_or(v, o))
    }

    #[inline]
    fn fetch_and(&self, a: Addr, v: Word, o: Ordering) -> impl Future<Output = Word> {
        Done(self.word(a).fetch_and(v, o))
    }

    /// The kernel's narrow store (a byte to the qspinlock's locked field, 16 bits to
    /// locked + pending) where the hardware has one: a plain `mov` of the field's
    /// width, which on x86 has release semantics. Elsewhere, or for a field that is
    /// not a naturally aligned byte, 16- or 32-bit part, or a `SeqCst` store, the
    /// default's read-modify-writes (which cost more than the store they stand for).
    #[inline]
    fn store_masked(&self, a: Addr, mask: Word, v: Word, o: Ordering) -> impl Future<Output = ()> {
        if o == Ordering::SeqCst || !narrow_store(self.word(a), mask, v) {
            block_on(crate::env::store_masked_by_rmw(self, a, mask, v, o));
        }
        Done(())
    }

    #[inline]
    fn wait_until<P: Fn(Word) -> bool>(
        &self,
        a: Addr,
        o: Ordering,
        pred: P,
    ) -> impl Future<Output = Word> {
        // The first check inline (an uncontended lock passes it), the waiting out of
        // line: a loop here made the lock code around it too big to inline.
        let w = self.word(a);
        let v = w.load(o);
        if pred(v) {
            return Done(v);
        }
        Done(self.spin_until(w, o, pred))
    }

    #[inline]
    fn work(&self, ns: u64) -> impl Future<Output = ()> {
        self.work.spin(ns, &self.state.work);
        Done(())
    }

    #[inline]
    fn pause(&self) -> impl Future<Output = ()> {
        self.backoff();
        Done(())
    }

    #[inline]
    fn retry(&self) -> impl Future<Output = ()> {
        self.retried();
        Done(())
    }

    /// The real loop takes its real time (`Done`, not `std::future::ready`, whose
    /// "polled twice" panic path would keep the loop from inlining the lock code).
    #[inline(always)]
    fn overhead(&self) -> impl Future<Output = ()> {
        Done(())
    }

    #[inline(always)]
    fn grants(&self, lock: usize) -> u64 {
        // Nothing to count: not recorded, or no one else to bypass a lone thread.
        if self.order != GrantOrder::Recorded {
            return 0;
        }
        self.instr.word(lock, 0).load(Ordering::Relaxed)
    }

    #[inline(always)]
    fn note_grant(&self, lock: usize) -> Grant {
        if self.order == GrantOrder::Unrecorded {
            return Grant {
                before: 0,
                from: Handoff::Unrecorded,
            };
        }
        // Only the holder writes these words, so load + store (no RMW) is enough.
        let before = if self.order == GrantOrder::Alone {
            0
        } else {
            let g = self.instr.word(lock, 0);
            let before = g.load(Ordering::Relaxed);
            g.store(before + 1, Ordering::Relaxed);
            before
        };
        // The last holder: thread id + 1 in the high half, node in the low (0: none).
        let last = self.instr.word(lock, 1);
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
