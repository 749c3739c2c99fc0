//! Lock algorithms, each written once as `async` code over [`Env`].
//!
//! Every algorithm touches shared memory only through `Env` (so the simulator sees each
//! load, store and read-modify-write on the line it hits), never loops without awaiting
//! an `Env` operation (a simulated loop that awaits nothing would stop virtual time),
//! and draws randomness only from `Env::random`. Queue pointers are thread ids + 1
//! (0 = null); per-thread queue nodes are one line each, allocated per lock, so a thread
//! may hold several locks at once (the double-lock workload does).
//!
//! Every algorithm is a type implementing [`Lock`]: `acquire`, `release`,
//! `try_acquire` and `is_contended` (asked by the holder: "is anyone waiting?", the
//! kernel's `spin_is_contended`). [`with_lock`] is the one place that turns a plan's
//! `LockAlgo` into a lock type: it hands a [`LockVisitor`] a constructor of that type,
//! and the visitor's generic code (a workload run, a benchmark, a test) is compiled once
//! per algorithm. The algorithm is thus picked once per run, never per operation (a
//! match per call doubled an uncontended acquire + release natively).
//!
//! Adding an algorithm: its file here, implementing `Lock`, and its line in
//! [`with_lock`] and [`catalogue`].
//!
//! The baselines `std`, `parking_lot` and `pthread` wrap OS mutexes that cannot be
//! written over `Env`; natively they are the real thing, simulated they run a futex
//! mutex model (see [`os`]).
//!
//! ```
//! use locklab_model::plan::LockAlgo;
//! use locklab_runner::env::LineAlloc;
//! use locklab_runner::locks::{with_lock, LocalState, Lock, LockVisitor, Site};
//! use locklab_runner::native::{block_on, Arena, NativeEnv};
//!
//! /// Takes and releases a fresh lock of any algorithm once, alone.
//! struct Once;
//!
//! impl LockVisitor for Once {
//!     type Output = bool;
//!     fn visit<L: Lock>(self, make: impl Fn(&mut LineAlloc, Site) -> L) -> bool {
//!         let mut alloc = LineAlloc::new();
//!         let lock = make(&mut alloc, Site { id: 0, nthreads: 1, asks_contended: false });
//!         let arena = Arena::new(alloc.count() as usize, 1);
//!         let env = NativeEnv::for_test(&arena, 0, 1);
//!         let mut local = LocalState::new(0, 1);
//!         block_on(async {
//!             lock.acquire(&env, &mut local).await;
//!             let contended = lock.is_contended(&env, &mut local).await;
//!             lock.release(&env, &mut local).await;
//!             contended
//!         })
//!     }
//! }
//!
//! assert!(!with_lock(&LockAlgo::Mcs, Once));
//! ```

pub mod clh;
pub mod cna;
pub mod decb;
pub mod mcs;
pub mod os;
pub mod qspinlock;
pub mod tas;
pub mod ticket;
pub mod ttas;

use crate::env::{Env, LineAlloc, WaitStart};
use locklab_model::plan::{Backoff, ClhPredecessor, CnaParams, CnaVariant, LockAlgo, Relax};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// What every lock offers; workloads are generic over it. A lock is owned data that
/// threads share (the native executor's, loom's): `Send + Sync + 'static`.
#[allow(async_fn_in_trait)] // used with concrete, single-threaded futures only
pub trait Lock: Send + Sync + 'static {
    /// Whether waiters may sleep in the kernel, so that a CPU-time/wall ratio below 1
    /// is the lock's doing, not noise (the OS-backed baselines, natively).
    const MAY_SLEEP: bool = false;

    async fn acquire<E: Env>(&self, env: &E, local: &mut LocalState);
    async fn release<E: Env>(&self, env: &E, local: &mut LocalState);
    /// One attempt; true if the lock is now held.
    async fn try_acquire<E: Env>(&self, env: &E, local: &mut LocalState) -> bool;
    /// Asked by the holder: does another thread wait for this lock?
    async fn is_contended<E: Env>(&self, env: &E, local: &mut LocalState) -> bool;

    /// The window over which this lock's fairness is meant to even out, for the
    /// windowed fairness metric (`window_fairness_factor_max`); 0: none.
    fn fairness_window_ns(&self) -> u64 {
        0
    }
}

/// Where a lock sits in its point: what every constructor is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Site {
    /// The lock's index among the point's locks: its `LocalState` slot and the index
    /// the workload passes to `Env::grants`.
    pub id: usize,
    /// Threads of the point (queue locks allocate one node line each).
    pub nthreads: usize,
    /// Whether the workload asks the holder `is_contended` (the `when_contended`
    /// break policy). The OS mutexes do not know their waiters: natively they count
    /// them for `is_contended`, two atomics on a line of its own per blocking
    /// acquisition, and only where a workload asks.
    pub asks_contended: bool,
}

/// Generic code to run with a lock type chosen at run time (see [`with_lock`]).
pub trait LockVisitor {
    type Output;
    /// Called once, with the constructor of the plan's lock type: `make` allocates one
    /// lock's lines (and its per-thread node lines) and builds it.
    fn visit<L: Lock>(self, make: impl Fn(&mut LineAlloc, Site) -> L) -> Self::Output;
}

/// Runs `visitor` with the lock type of `algo`: the one map from the plan's algorithm
/// to the code that implements it.
pub fn with_lock<V: LockVisitor>(algo: &LockAlgo, v: V) -> V::Output {
    use os::{OsKind, OsLock};
    use qspinlock::{Qspinlock, Stock};
    match algo {
        LockAlgo::Tas { relax } => v.visit(|a, s| tas::Tas::new(a, s, *relax)),
        LockAlgo::Decb => v.visit(decb::Decb::new),
        LockAlgo::Ttas { backoff } => v.visit(|a, s| ttas::Ttas::new(a, s, backoff.clone())),
        LockAlgo::Ticket => v.visit(ticket::Ticket::new),
        LockAlgo::Mcs => v.visit(mcs::Mcs::new),
        LockAlgo::Clh { predecessor } => clh::with_predecessor(*predecessor, v),
        LockAlgo::Qspinlock { pending_loops } => {
            v.visit(|a, s| Qspinlock::new(a, s, Stock).with_pending_loops(*pending_loops))
        }
        LockAlgo::Cna(p) => v.visit(|a, s| Qspinlock::new(a, s, cna::Cna::new(p))),
        LockAlgo::Std => v.visit(|a, s| OsLock::new(a, s, OsKind::Std)),
        LockAlgo::ParkingLot => v.visit(|a, s| OsLock::new(a, s, OsKind::ParkingLot)),
        LockAlgo::Pthread => v.visit(|a, s| OsLock::new(a, s, OsKind::Pthread)),
    }
}

/// Every algorithm, with the parameters `locklab bench native` reports it with (TTAS
/// twice: without and with backoff), under a label. Tests that cover every lock start
/// from this list.
pub fn catalogue() -> Vec<(&'static str, LockAlgo)> {
    vec![
        ("tas", LockAlgo::TAS),
        ("tas (relax none)", LockAlgo::Tas { relax: Relax::None }),
        ("ttas", LockAlgo::Ttas { backoff: None }),
        (
            "ttas+backoff",
            LockAlgo::Ttas {
                backoff: Some(Backoff {
                    min_ns: 100,
                    max_ns: 10_000,
                }),
            },
        ),
        ("decb", LockAlgo::Decb),
        ("ticket", LockAlgo::Ticket),
        ("mcs", LockAlgo::Mcs),
        ("clh", LockAlgo::CLH),
        (
            "clh (predecessor in node)",
            LockAlgo::Clh {
                predecessor: ClhPredecessor::Node,
            },
        ),
        (
            "qspinlock",
            LockAlgo::Qspinlock {
                pending_loops: None,
            },
        ),
        (
            "qspinlock (pending_loops 1)",
            LockAlgo::Qspinlock {
                pending_loops: Some(1),
            },
        ),
        (
            "cna (v15, 10ms)",
            LockAlgo::Cna(CnaParams {
                threshold_ns: 10_000_000,
                variant: CnaVariant::V15,
                shuffle_skip_prob: 127.0 / 128.0,
            }),
        ),
        ("std", LockAlgo::Std),
        ("parking_lot", LockAlgo::ParkingLot),
        ("pthread", LockAlgo::Pthread),
    ]
}

/// A thread's private lock state, kept off shared memory: one slot per lock of the
/// point (only CLH uses it: the index + 1 of the node the thread currently owns, which
/// changes hands at every release). Built by the workload's thread, passed `&mut`,
/// and kept for as long as the thread uses these locks: a fresh one would make a CLH
/// thread reuse a node it gave away.
#[derive(Debug, Clone)]
pub struct LocalState {
    tid: usize,
    slots: Vec<u64>,
    /// Per lock: this thread's last arrival (for `bypass`).
    marks: Vec<Mark>,
    /// Stand-ins for an entry beyond `nlocks` (see `slot`).
    spare: u64,
    spare_mark: Mark,
}

/// A thread's last arrival at a lock, one word so that marking a doorway is one
/// store: the lock's grant count then, and two flags in the top bits (no count
/// reaches them).
#[derive(Debug, Clone, Copy, Default)]
struct Mark(u64);

impl Mark {
    /// The lock is FIFO from a doorway (seen once this thread passed one).
    const FIFO: u64 = 1 << 63;
    /// The current wait has passed the doorway.
    const PASSED: u64 = 1 << 62;

    fn arrival(self) -> u64 {
        self.0 & !(Self::FIFO | Self::PASSED)
    }

    /// FIFO and the doorway not yet passed: no one can have overtaken the wait.
    fn before_doorway(self) -> bool {
        self.0 & (Self::FIFO | Self::PASSED) == Self::FIFO
    }
}

impl LocalState {
    /// `nlocks`: the number of locks of the point (`Locks::len`).
    pub fn new(tid: usize, nlocks: usize) -> Self {
        LocalState {
            tid,
            slots: vec![0; nlocks],
            marks: vec![Mark::default(); nlocks],
            spare: 0,
            spare_mark: Mark::default(),
        }
    }

    /// Marks this thread's arrival at `lock`: remembers its grant count. The
    /// `double` and `bulk` workloads call it before `acquire` (the single-lock one
    /// calls [`Self::enter`]); a FIFO lock calls [`Self::doorway`] right after its
    /// doorway (the ticket fetch-add, the tail swap), because FIFO order is defined from the
    /// doorway: a thread preempted between arriving and its doorway is not overtaken
    /// by the threads that entered the queue first, it simply entered later. For the
    /// same reason a lock that is not FIFO counts from the wait's first failed
    /// attempt where the executor notes it ([`Self::bypass`]).
    #[inline]
    pub fn arrive<E: Env>(&mut self, env: &E, lock: usize) {
        self.mark(env, lock, false);
    }

    /// Marks the start of an acquisition at `lock` whose bypass counts from where
    /// its wait begins (the single-lock workload: [`Env::wait_start`]): a FIFO lock's
    /// doorway is still to come. Reads nothing: the grant count that matters is the
    /// one the executor notes at the first failed attempt (or the doorway's).
    #[inline]
    pub fn enter(&mut self, lock: usize) {
        let m = self.mark_mut(lock);
        *m = Mark(m.0 & Mark::FIFO);
    }

    /// Marks this thread's passing the doorway of FIFO `lock` (see [`Self::arrive`]).
    #[inline]
    pub fn doorway<E: Env>(&mut self, env: &E, lock: usize) {
        self.mark(env, lock, true);
    }

    #[inline(always)]
    fn mark<E: Env>(&mut self, env: &E, lock: usize, doorway: bool) {
        // An acquisition that is only counted (`Env::recorded`) has no bypass.
        if !env.recorded() {
            return;
        }
        let arrival = env.grants(lock) & !(Mark::FIFO | Mark::PASSED);
        let m = self.mark_mut(lock);
        *m = Mark(if doorway {
            arrival | Mark::FIFO | Mark::PASSED
        } else {
            arrival | (m.0 & Mark::FIFO)
        });
    }

    #[inline(always)]
    fn mark_mut(&mut self, lock: usize) -> &mut Mark {
        debug_assert!(
            lock < self.marks.len(),
            "lock {lock} of a LocalState built for {}",
            self.marks.len()
        );
        match self.marks.get_mut(lock) {
            Some(m) => m,
            None => {
                cold_path();
                &mut self.spare_mark
            }
        }
    }

    fn mark_of(&self, lock: usize) -> Mark {
        self.marks.get(lock).copied().unwrap_or(self.spare_mark)
    }

    /// The grants of `lock`, when this thread's acquisition was granted after
    /// `before` of them, since its last [`Self::arrive`] or doorway: the bypass of a
    /// workload that times its waits from the operation's start (`double`, `bulk`),
    /// whatever way the lock was taken (a successful `try_acquire` passes no doorway).
    pub fn bypass_since_arrival(&self, lock: usize, before: u64) -> u64 {
        before.saturating_sub(self.mark_of(lock).arrival())
    }

    /// The bypass of this thread's wait at `lock`, granted (or cut off) when the lock
    /// had had `grants` grants: the grants since its wait began. For a FIFO lock that
    /// is its doorway (none if the thread has not passed it: it had not entered the
    /// queue, no one overtook it); for another lock where the executor says the wait
    /// began (`start`: the first failed attempt, where the wait is timed from, or the
    /// arrival), so that a thread that lost its CPU before its first attempt failed is
    /// not counted as overtaken meanwhile.
    pub fn bypass(&self, lock: usize, grants: u64, start: WaitStart) -> u64 {
        let mark = self.mark_of(lock);
        let from = if mark.0 & Mark::FIFO != 0 {
            if mark.before_doorway() {
                return 0;
            }
            mark.arrival()
        } else {
            match start {
                WaitStart::Arrival => mark.arrival(),
                WaitStart::NotYet => return 0,
                WaitStart::Grants(g) => g,
            }
        };
        grants.saturating_sub(from)
    }

    pub fn tid(&self) -> usize {
        self.tid
    }

    /// Lock `lock`'s slot. A lock beyond those the state was built for is the
    /// caller's error (`new`'s `nlocks`): debug builds stop there; release builds use a
    /// spare entry rather than panic or grow (here and in `mark`), because either
    /// would keep the lock code from being inlined into the native measured loop (a
    /// panic that unwinds gives every lock a landing pad, and a call to grow costs as
    /// much).
    #[inline(always)]
    fn slot(&mut self, lock: usize) -> &mut u64 {
        let v = &mut self.slots;
        debug_assert!(
            lock < v.len(),
            "lock {lock} of a LocalState built for {}",
            v.len()
        );
        match v.get_mut(lock) {
            Some(e) => e,
            None => {
                // A branch, not a select: the entry's address is then known early.
                cold_path();
                &mut self.spare
            }
        }
    }
}

/// Marks the branch that calls it as rarely taken (`std::hint::cold_path`, which is
/// newer than the Rust this crate supports): a call to an empty cold function.
#[cold]
#[inline(never)]
pub(crate) fn cold_path() {}

/// `f`, polled out of line: a lock's slow path, kept out of its fast path as the
/// kernel keeps `queued_spin_lock_slowpath` out of `queued_spin_lock`. Awaited
/// directly, an `async fn` called from one place is always inlined into its caller,
/// and a fast path that holds its slow path is too big to be inlined into the
/// measured loop natively. The simulator does not care.
pub(crate) fn out_of_line<F: Future>(f: F) -> OutOfLine<F> {
    OutOfLine(f)
}

/// See [`out_of_line`].
pub(crate) struct OutOfLine<F>(F);

impl<F: Future> Future for OutOfLine<F> {
    type Output = F::Output;

    #[inline(never)]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // SAFETY: structural pinning: the inner future is never moved out of `self`.
        unsafe { self.map_unchecked_mut(|s| &mut s.0) }.poll(cx)
    }
}

/// `fetch_add` of −1: `Env` words wrap (two's complement), so adding `u64::MAX`
/// decrements.
pub(crate) const MINUS_ONE: u64 = u64::MAX;

/// The bypass rule of [`LocalState::bypass`] as both executors must keep it, for
/// their tests: `me` and `other` are two threads' `Env`s of one point, with grants
/// recorded, `me` not yet asked to note where its waits begin. Until it is, the wait
/// starts at the arrival; once it is, a grant before the first failed attempt is not
/// counted, one after is, an acquisition still in its first attempt has none, and a
/// second failed check of the same wait moves nothing; the next acquisition starts
/// afresh. A FIFO lock counts from its doorway whatever the executor noted.
#[cfg(test)]
pub(crate) fn check_bypass_counts_from_the_first_failed_attempt<E: Env>(me: &E, other: &E) {
    let mut local = LocalState::new(me.tid(), 1);
    me.acquire_start();
    local.arrive(me, 0);
    other.note_grant(0);
    assert_eq!(me.wait_start(), WaitStart::Arrival);
    assert_eq!(local.bypass(0, me.grants(0), me.wait_start()), 1);
    me.note_wait_grants_of(0);
    me.acquire_start();
    local.enter(0);
    other.note_grant(0);
    assert_eq!(me.wait_start(), WaitStart::NotYet);
    assert_eq!(local.bypass(0, me.grants(0), me.wait_start()), 0);
    me.waiting();
    assert_eq!(me.wait_start(), WaitStart::Grants(2));
    other.note_grant(0);
    other.note_grant(0);
    assert_eq!(local.bypass(0, me.grants(0), me.wait_start()), 2);
    other.note_grant(0);
    me.waiting();
    assert_eq!(me.wait_start(), WaitStart::Grants(2));
    assert_eq!(local.bypass(0, me.grants(0), me.wait_start()), 3);
    // A FIFO lock: from its doorway, before and after the first failed attempt.
    me.acquire_start();
    local.enter(0);
    local.doorway(me, 0); // at 5 grants
    other.note_grant(0);
    assert_eq!(local.bypass(0, me.grants(0), me.wait_start()), 1);
    me.waiting();
    other.note_grant(0);
    assert_eq!(me.wait_start(), WaitStart::Grants(6));
    assert_eq!(local.bypass(0, me.grants(0), me.wait_start()), 2);
    // The next acquisition at that lock, before its doorway: none, noted or not.
    me.acquire_start();
    local.enter(0);
    other.note_grant(0);
    assert_eq!(local.bypass(0, me.grants(0), me.wait_start()), 0);
    me.waiting();
    other.note_grant(0);
    assert_eq!(local.bypass(0, me.grants(0), me.wait_start()), 0);
}
