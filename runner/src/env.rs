//! `Env`: the one interface a lock algorithm or a workload sees.
//!
//! Lock algorithms and workloads are written once, as `async` code over `Env`, and run
//! two ways:
//! - natively (`crate::native`), where a cache line is a real 64-byte-aligned array of
//!   atomics, every operation is the real instruction and completes immediately (the
//!   futures are always ready; spinning happens inside `wait_until`);
//! - simulated (`crate::sim`), where every memory operation is an event whose
//!   completion time the coherence model decides, and `wait_until` parks the simulated
//!   thread until the line is written.
//!
//! Memory is a flat arena of cache lines, each holding `WORDS_PER_LINE` 64-bit words;
//! coherence is tracked per line. Pointers between queue nodes are thread ids + 1
//! (0 = null), never raw addresses, so the same code runs in both executors.

use locklab_model::time::Ns;
use std::future::Future;
use std::sync::atomic::Ordering;

pub type Word = u64;
pub const WORDS_PER_LINE: usize = 8;

/// A word in the line arena.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Addr {
    pub line: u32,
    pub word: u8,
}

impl Addr {
    pub const fn new(line: u32, word: u8) -> Self {
        Addr { line, word }
    }
    /// Another word of the same line.
    pub const fn word(self, word: u8) -> Self {
        Addr {
            line: self.line,
            word,
        }
    }
}

/// Hands out cache lines when a lock or workload is constructed; the executor then
/// allocates `lines()` lines. Lines are never shared by two unrelated objects.
#[derive(Debug, Default)]
pub struct LineAlloc {
    next: u32,
}

impl LineAlloc {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn line(&mut self) -> u32 {
        let l = self.next;
        self.next += 1;
        l
    }
    /// `n` consecutive lines; returns the first.
    pub fn lines(&mut self, n: u32) -> u32 {
        let l = self.next;
        self.next += n;
        l
    }
    pub fn count(&self) -> u32 {
        self.next
    }
}

/// What a simulated or native thread can do.
///
/// Orderings are those the native code needs; the simulator ignores them: values
/// change in the one order operations are issued, and its timing is x86-TSO's
/// (stores buffered, locked operations draining), which no ordering changes.
pub trait Env {
    /// True only for the native executor, whose threads are real OS threads. The
    /// OS-backed baselines (`std`, `parking_lot`, `pthread`) take the real mutex when
    /// this is true and run their documented model over `Env` otherwise (see
    /// `crate::locks::os`). Every other lock ignores it.
    const NATIVE: bool = false;

    /// Thread index within the point, 0-based.
    fn tid(&self) -> usize;
    /// Number of threads in the point.
    fn nthreads(&self) -> usize;
    /// NUMA node of this thread (virtual node map if the placement has one).
    fn node(&self) -> u32;
    /// Monotonic time, ns (virtual in the simulator).
    fn now(&self) -> u64;
    /// Deterministic per-thread random number.
    fn random(&self) -> u64;

    fn load(&self, a: Addr, o: Ordering) -> impl Future<Output = Word>;
    fn store(&self, a: Addr, v: Word, o: Ordering) -> impl Future<Output = ()>;
    fn swap(&self, a: Addr, v: Word, o: Ordering) -> impl Future<Output = Word>;
    /// Compare-and-swap; `Ok(old)` on success, `Err(actual)` on failure.
    fn cas(
        &self,
        a: Addr,
        old: Word,
        new: Word,
        o: Ordering,
    ) -> impl Future<Output = Result<Word, Word>>;
    fn fetch_add(&self, a: Addr, v: Word, o: Ordering) -> impl Future<Output = Word>;
    fn fetch_or(&self, a: Addr, v: Word, o: Ordering) -> impl Future<Output = Word>;
    fn fetch_and(&self, a: Addr, v: Word, o: Ordering) -> impl Future<Output = Word>;

    /// Atomically replace the bits of the word under `mask` with those of `v & mask`,
    /// leaving the others as they are; returns the old whole word. This is a narrow
    /// `xchg` on a sub-field of a word (the kernel's 16-bit `xchg_tail` on the
    /// qspinlock's tail half).
    ///
    /// The default is a CAS loop on the whole word. That is the correct native
    /// implementation, not a stand-in: Rust's memory model has no mixed-size atomic
    /// accesses to one location (an `AtomicU16` overlaid on an `AtomicU64` is
    /// undefined behaviour, and loom could not check it), so the only sound way to
    /// change some bits atomically while other threads RMW the rest is a loop of
    /// whole-word CAS. Natively this costs extra round trips under contention that
    /// the kernel's single `xchg` does not; an executor that models hardware cost
    /// (the simulator) overrides this with one RMW, which is what the kernel issues.
    fn swap_masked(&self, a: Addr, mask: Word, v: Word, o: Ordering) -> impl Future<Output = Word> {
        async move {
            let mut cur = self.load(a, Ordering::Relaxed).await;
            loop {
                let new = (cur & !mask) | (v & mask);
                match self.cas(a, cur, new, o).await {
                    Ok(old) => return old,
                    Err(actual) => cur = actual,
                }
            }
        }
    }

    /// Atomically write `v & mask` to the bits under `mask`, leaving the others as they
    /// are: a narrow store to a sub-field of a word (the kernel's byte store to the
    /// qspinlock's locked byte, or its 16-bit store to locked + pending). The default
    /// is one `fetch_and` when it only clears bits (exact), else a CAS loop for the
    /// reason given at [`Env::swap_masked`]; the simulator prices it as one store, as
    /// the hardware does.
    fn store_masked(&self, a: Addr, mask: Word, v: Word, o: Ordering) -> impl Future<Output = ()> {
        store_masked_by_rmw(self, a, mask, v, o)
    }
    /// Spin until `pred(value)` holds; returns the value seen. Natively: a load loop with
    /// `spin_loop()`; simulated: park until the line is written, then re-read.
    fn wait_until<P: Fn(Word) -> bool>(
        &self,
        a: Addr,
        o: Ordering,
        pred: P,
    ) -> impl Future<Output = Word>;
    /// A hint that the line of `a` will be read soon: the simulator starts its miss
    /// without waiting for it, as an out-of-order core overlaps independent misses.
    /// Natively nothing: the core does that by itself.
    fn prefetch(&self, _a: Addr) -> impl Future<Output = ()> {
        async {}
    }
    /// A full fence (`mfence`): waits for this thread's earlier stores to be visible.
    fn fence(&self) -> impl Future<Output = ()> {
        async { std::sync::atomic::fence(Ordering::SeqCst) }
    }
    /// Private computation lasting `ns` (calibrated spin natively; a delay simulated).
    fn work(&self, ns: u64) -> impl Future<Output = ()>;
    /// Once per workload operation: the instructions around the lock that no memory
    /// operation or `work` prices (the topology's `overhead`; 0 by default). Natively
    /// nothing: the real loop takes its real time.
    fn overhead(&self) -> impl Future<Output = ()> {
        std::future::ready(())
    }
    /// Instructions that no memory operation prices, lasting `t` (an OS mutex's
    /// library code: `futex { pthread_call }`): simulated a delay, as `overhead`;
    /// natively nothing, the real code takes its real time.
    fn instructions(&self, t: Ns) -> impl Future<Output = ()> {
        let _ = t;
        std::future::ready(())
    }
    /// Time in the kernel lasting `t` (the simulated OS mutexes' futex calls): as
    /// `work`, except that a simulated core runs nothing ahead into it (a system
    /// call is no independent work; `memory { run_ahead }`).
    fn syscall(&self, t: Ns) -> impl Future<Output = ()> {
        self.work(t.round_ns())
    }
    /// The thread leaves its CPU, asleep in the kernel (`off` true), or has it again
    /// (false): the simulated OS mutexes mark their futex sleeps so that a
    /// simulated thread's CPU time leaves them out, as the OS leaves a sleeping
    /// native thread's out. Natively nothing: the OS counts.
    fn off_cpu(&self, off: bool) {
        let _ = off;
    }
    /// One `cpu_relax()` (pause) for backoff loops.
    fn pause(&self) -> impl Future<Output = ()>;
    /// A failed attempt to be retried at once, with no pause (a bare swap loop):
    /// what `pause` does for the wait (timed from the first failed attempt, counted
    /// as a spin, a turn given up where the run yields to oversubscribed threads),
    /// without the pause itself.
    fn retry(&self) -> impl Future<Output = ()>;
    /// What the kernel's futex costs on this machine, for the simulated OS mutexes
    /// (the topology's `futex`). Natively they are the real mutexes and never ask.
    fn futex(&self) -> locklab_model::plan::Futex {
        locklab_model::plan::Futex::DEFAULT
    }

    /// The clock at the start of an acquisition: the workload ends its loop by it, and
    /// places it in the window. The default (and the simulator's) is `now()`; the native
    /// executor reads the clock only at some starts (see `NativeEnv`).
    #[inline(always)]
    fn acquire_start(&self) -> u64 {
        self.now()
    }
    /// Once the lock is held: (grant time, wait). The default is `now()` and the time
    /// since `start`; natively and simulated the wait runs from the first failed
    /// attempt (`Env::waiting`; zero if the first attempt succeeded).
    #[inline(always)]
    fn acquire_granted(&self, start: u64) -> (u64, u64) {
        let t = self.now();
        (t, t - start)
    }
    /// Before the release: the hold since `granted`, or `None` where this
    /// acquisition's hold is not timed (natively, most of them). The default times
    /// every hold.
    #[inline(always)]
    fn acquire_held(&self, granted: u64) -> Option<u64> {
        Some(self.now() - granted)
    }
    /// Whether the acquisition `acquire_start` began is recorded: its wait, grant
    /// and hold. Always in the simulator, and natively for a thread of several under
    /// `recording = exact`; natively under `sampled`, and for a run's only thread,
    /// one in about `acquisitions_timed_every`, the others only counted
    /// (`ThreadStats::count_acquires`). (Only the single-lock workload asks.)
    #[inline(always)]
    fn recorded(&self) -> bool {
        true
    }
    /// Right after `acquire`, for an acquisition that is only counted (not
    /// `recorded`): whether its first attempt failed, known though its wait was not
    /// timed (`waits`). Whether it waited long is decided here: a spin in its
    /// release (MCS's, for its successor) does not make it a long wait. The default
    /// (never called: the simulator records every acquisition) is no.
    #[inline(always)]
    fn acquire_waited(&self) -> bool {
        false
    }
    /// After the release of an acquisition that is only counted (not `recorded`),
    /// given what `acquire_waited` said: the time to count it at, and when its wait
    /// began if it waited long enough to be timed. The default (never called: the
    /// simulator records every acquisition) is `now()`, no wait. Natively a counted
    /// acquisition that waited reads the clock here, outside its critical section, so
    /// that the loop's end and the window see a grant that came late, and a wait
    /// still running at the window's end is cut off there.
    #[inline(always)]
    fn acquire_counted(&self, _start: u64, _waited: bool) -> (u64, Option<u64>) {
        (self.now(), None)
    }
    /// The current acquisition could not be granted at once: its wait is timed from
    /// the first call, in both modes. `wait_until` (when its first check fails) and
    /// `pause` imply it; lock code that waits some other way (the OS mutexes) calls
    /// it. The default, with the default `acquire_granted`, times every wait from
    /// `acquire_start` instead.
    #[inline(always)]
    fn waiting(&self) {}
    /// From now on, this thread's waits are all for `lock` (the single-lock
    /// workload's): at each acquisition's first failed attempt (`waiting`) the
    /// executor also notes that lock's grant count, which [`Env::wait_start`] then
    /// tells, so that the wait's bypass counts from where the wait does. The
    /// default notes nothing.
    #[inline(always)]
    fn note_wait_grants_of(&self, _lock: usize) {}
    /// Where the current acquisition's wait began, for its bypass ([`WaitStart`]).
    /// The default (waits timed from `acquire_start`) is the arrival.
    #[inline(always)]
    fn wait_start(&self) -> WaitStart {
        WaitStart::Arrival
    }

    // Instrumentation: free in the simulator, and natively kept on lines of their own
    // so that it does not perturb the lock's lines. `lock` indexes the point's locks
    // (0 for a single hot lock; the CPU's index for per-CPU locks).

    /// Grants of `lock` so far. Read at arrival; with the count `note_grant` returns,
    /// bypass = grants before this thread's grant − grants at its arrival.
    fn grants(&self, lock: usize) -> u64;
    /// Called by the new holder once it holds `lock`: counts the grant and says how
    /// many came before it and whom the lock came from.
    fn note_grant(&self, lock: usize) -> Grant;
}

/// Where a wait began, for the bypass of a lock that is not FIFO: the grants to
/// other threads while a thread waited count from there ([`LocalState::bypass`]; a
/// FIFO lock counts from its doorway instead).
///
/// [`LocalState::bypass`]: crate::locks::LocalState::bypass
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitStart {
    /// At the arrival (`LocalState::arrive`): the executor times the wait from the
    /// acquisition's start, or does not note where the wait began.
    Arrival,
    /// The acquisition has not waited: its first attempt succeeded, or it is still
    /// in it. Nobody overtook it while it waited.
    NotYet,
    /// At its first failed attempt, when its lock had had this many grants.
    Grants(u64),
}

/// What [`Env::note_grant`] tells the new holder of a lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grant {
    /// Grants of the lock before this one.
    pub before: u64,
    pub from: Handoff,
}

/// A lock's last holder: its thread id and node.
pub type Holder = (usize, u32);

/// Where a lock came from when a thread was granted it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handoff {
    /// No one held the lock before (its first grant), or the event recorded is no
    /// grant of a lock (a wake-up).
    Unheld,
    /// The new holder held it last: a re-acquisition, not a hand-off.
    Reacquired,
    /// Handed over by another thread, on this node.
    From(u32),
    /// Not recorded: the executor keeps no grant order (native `recording =
    /// sampled`), so neither whom the lock came from nor the bypass is known.
    Unrecorded,
}

impl Handoff {
    /// The grant of a thread (`tid`) after the last holder (`last`: its thread id and
    /// node), if any.
    pub fn after(tid: usize, last: Option<Holder>) -> Self {
        match last {
            None => Handoff::Unheld,
            Some((t, _)) if t == tid => Handoff::Reacquired,
            Some((_, node)) => Handoff::From(node),
        }
    }
}

/// [`Env::store_masked`] as read-modify-writes: one `fetch_and` when it only clears
/// bits (exact), else a CAS loop on the whole word (see [`Env::swap_masked`]). The
/// default, and the native executor's wherever no plain narrow store fits.
pub(crate) async fn store_masked_by_rmw<E: Env + ?Sized>(
    env: &E,
    a: Addr,
    mask: Word,
    v: Word,
    o: Ordering,
) {
    // Clearing bits is exactly one `fetch_and`: no loop needed.
    if v & mask == 0 {
        env.fetch_and(a, !mask, o).await;
        return;
    }
    // A CAS carries the store's ordering on success; its load side needs none
    // beyond Relaxed, which `cas` (compare_exchange) derives for failure.
    let o = match o {
        Ordering::Release | Ordering::AcqRel => Ordering::Release,
        Ordering::SeqCst => Ordering::SeqCst,
        _ => Ordering::Relaxed,
    };
    env.swap_masked(a, mask, v, o).await;
}
