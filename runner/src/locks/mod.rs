//! Lock algorithms, each written once as `async` code over [`Env`].
//!
//! Every algorithm touches shared memory only through `Env` (so the simulator sees each
//! load, store and read-modify-write on the line it hits), never loops without awaiting
//! an `Env` operation (a simulated loop that awaits nothing would stop virtual time),
//! and draws randomness only from `Env::random`. Queue pointers are thread ids + 1
//! (0 = null); per-thread queue nodes are one line each, allocated per lock, so a thread
//! may hold several locks at once (the double-lock workload does).
//!
//! [`AnyLock`] is the one type the workloads use: built from a `LockAlgo`, with
//! `acquire`, `release`, `try_acquire` and `is_contended`. `is_contended` is asked by
//! the holder ("is anyone waiting?", the kernel's `spin_is_contended`).
//!
//! The baselines `std`, `parking_lot` and `pthread` wrap OS mutexes that cannot be
//! written over `Env`; natively they are the real thing, simulated they run a futex
//! mutex model (see [`os`]). [`AnyLock::native_only`] tells which is which.
//!
//! ```
//! use locklab_model::plan::LockAlgo;
//! use locklab_runner::env::LineAlloc;
//! use locklab_runner::locks::{AnyLock, LocalState};
//! use locklab_runner::native::{block_on, Arena, NativeEnv};
//!
//! let mut alloc = LineAlloc::new();
//! let lock = AnyLock::new(&LockAlgo::Mcs, &mut alloc, 1, 0);
//! let arena = Arena::new(alloc.count() as usize, 1);
//! let env = NativeEnv::for_test(&arena, 0, 1);
//! let mut local = LocalState::new(0, 1);
//! block_on(async {
//!     lock.acquire(&env, &mut local).await;
//!     assert!(!lock.is_contended(&env, &mut local).await);
//!     lock.release(&env, &mut local).await;
//! });
//! ```

pub mod clh;
pub mod cna;
pub mod mcs;
pub mod os;
pub mod qspinlock;
pub mod tas;
pub mod ticket;
pub mod ttas;

use crate::env::{Env, LineAlloc};
use locklab_model::plan::LockAlgo;

/// What every lock offers, so that workloads can be generic over the algorithm and
/// dispatch once per thread run instead of once per operation (the `AnyLock` match
/// per call doubled an uncontended acquire + release natively).
#[allow(async_fn_in_trait)] // used with concrete, single-threaded futures only
pub trait Lock {
    async fn acquire<E: Env>(&self, env: &E, local: &mut LocalState);
    async fn release<E: Env>(&self, env: &E, local: &mut LocalState);
    /// One attempt; true if the lock is now held.
    async fn try_acquire<E: Env>(&self, env: &E, local: &mut LocalState) -> bool;
    /// Asked by the holder: does another thread wait for this lock?
    async fn is_contended<E: Env>(&self, env: &E, local: &mut LocalState) -> bool;
}

/// `Lock` for a lock type whose methods ignore `LocalState`.
macro_rules! lock_without_local {
    ($($t:ty),*) => {$(
        impl Lock for $t {
            async fn acquire<E: Env>(&self, env: &E, _: &mut LocalState) {
                <$t>::acquire(self, env).await
            }
            async fn release<E: Env>(&self, env: &E, _: &mut LocalState) {
                <$t>::release(self, env).await
            }
            async fn try_acquire<E: Env>(&self, env: &E, _: &mut LocalState) -> bool {
                <$t>::try_acquire(self, env).await
            }
            async fn is_contended<E: Env>(&self, env: &E, _: &mut LocalState) -> bool {
                <$t>::is_contended(self, env).await
            }
        }
    )*};
}

lock_without_local!(tas::Tas, ttas::Ttas, qspinlock::Qspinlock, os::OsLock);

/// `Lock` for a FIFO lock whose `acquire` marks the doorway in `LocalState`.
macro_rules! fifo_lock {
    ($($t:ty),*) => {$(
        impl Lock for $t {
            async fn acquire<E: Env>(&self, env: &E, local: &mut LocalState) {
                <$t>::acquire(self, env, local).await
            }
            async fn release<E: Env>(&self, env: &E, _: &mut LocalState) {
                <$t>::release(self, env).await
            }
            async fn try_acquire<E: Env>(&self, env: &E, _: &mut LocalState) -> bool {
                <$t>::try_acquire(self, env).await
            }
            async fn is_contended<E: Env>(&self, env: &E, _: &mut LocalState) -> bool {
                <$t>::is_contended(self, env).await
            }
        }
    )*};
}

fifo_lock!(ticket::Ticket, mcs::Mcs);

impl Lock for clh::Clh {
    async fn acquire<E: Env>(&self, env: &E, local: &mut LocalState) {
        clh::Clh::acquire(self, env, local).await
    }
    async fn release<E: Env>(&self, env: &E, local: &mut LocalState) {
        clh::Clh::release(self, env, local).await
    }
    async fn try_acquire<E: Env>(&self, env: &E, local: &mut LocalState) -> bool {
        clh::Clh::try_acquire(self, env, local).await
    }
    async fn is_contended<E: Env>(&self, env: &E, local: &mut LocalState) -> bool {
        clh::Clh::is_contended(self, env, local).await
    }
}

impl Lock for AnyLock {
    async fn acquire<E: Env>(&self, env: &E, local: &mut LocalState) {
        AnyLock::acquire(self, env, local).await
    }
    async fn release<E: Env>(&self, env: &E, local: &mut LocalState) {
        AnyLock::release(self, env, local).await
    }
    async fn try_acquire<E: Env>(&self, env: &E, local: &mut LocalState) -> bool {
        AnyLock::try_acquire(self, env, local).await
    }
    async fn is_contended<E: Env>(&self, env: &E, local: &mut LocalState) -> bool {
        AnyLock::is_contended(self, env, local).await
    }
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
    /// Per lock: its grant count when this thread last arrived (for `bypass`).
    arrivals: Vec<u64>,
}

impl LocalState {
    /// `nlocks`: the number of locks of the point (`Locks::len`).
    pub fn new(tid: usize, nlocks: usize) -> Self {
        LocalState {
            tid,
            slots: vec![0; nlocks],
            arrivals: vec![0; nlocks],
        }
    }

    /// Marks this thread's arrival at `lock`: remembers its grant count. Workloads
    /// call it before `acquire`; a FIFO lock calls it again right after its doorway
    /// (the ticket fetch-add, the tail swap), because FIFO order is defined from the
    /// doorway: a thread preempted between arriving and its doorway is not overtaken
    /// by the threads that entered the queue first, it simply entered later.
    pub fn arrive<E: Env>(&mut self, env: &E, lock: usize) {
        if self.arrivals.len() <= lock {
            self.arrivals.resize(lock + 1, 0);
        }
        self.arrivals[lock] = env.grants(lock);
    }

    /// The grant count of `lock` remembered by the last `arrive` at it.
    pub fn arrival(&self, lock: usize) -> u64 {
        self.arrivals.get(lock).copied().unwrap_or(0)
    }

    pub fn tid(&self) -> usize {
        self.tid
    }

    fn slot(&mut self, lock: usize) -> &mut u64 {
        if self.slots.len() <= lock {
            self.slots.resize(lock + 1, 0);
        }
        &mut self.slots[lock]
    }
}

/// `fetch_add` of −1: `Env` words wrap (two's complement), so adding `u64::MAX`
/// decrements.
pub(crate) const MINUS_ONE: u64 = u64::MAX;

/// One lock of a point, any algorithm.
#[derive(Debug)]
pub enum AnyLock {
    Tas(tas::Tas),
    Ttas(ttas::Ttas),
    Ticket(ticket::Ticket),
    Mcs(mcs::Mcs),
    Clh(clh::Clh),
    /// Linux qspinlock; with `cna` set, the CNA slow path.
    Qspinlock(qspinlock::Qspinlock),
    /// `std`, `parking_lot`, `pthread`.
    Os(os::OsLock),
}

impl AnyLock {
    /// Allocates the lock's lines (and one node line per thread for the queue locks).
    /// `id` is the lock's index among the point's locks (its `LocalState` slot and the
    /// index the workload passes to `Env::grants`).
    pub fn new(algo: &LockAlgo, alloc: &mut LineAlloc, nthreads: usize, id: usize) -> AnyLock {
        match algo {
            LockAlgo::Tas => AnyLock::Tas(tas::Tas::new(alloc)),
            LockAlgo::Ttas { backoff } => AnyLock::Ttas(ttas::Ttas::new(alloc, backoff.clone())),
            LockAlgo::Ticket => AnyLock::Ticket(ticket::Ticket::new(alloc, id)),
            LockAlgo::Mcs => AnyLock::Mcs(mcs::Mcs::new(alloc, nthreads, id)),
            LockAlgo::Clh => AnyLock::Clh(clh::Clh::new(alloc, nthreads, id)),
            LockAlgo::Qspinlock => {
                AnyLock::Qspinlock(qspinlock::Qspinlock::new(alloc, nthreads, None))
            }
            LockAlgo::Cna(p) => AnyLock::Qspinlock(qspinlock::Qspinlock::new(
                alloc,
                nthreads,
                Some(cna::Cna::new(p)),
            )),
            LockAlgo::Std => AnyLock::Os(os::OsLock::new(os::OsKind::Std, alloc)),
            LockAlgo::ParkingLot => AnyLock::Os(os::OsLock::new(os::OsKind::ParkingLot, alloc)),
            LockAlgo::Pthread => AnyLock::Os(os::OsLock::new(os::OsKind::Pthread, alloc)),
        }
    }

    /// True for the OS-backed baselines: natively the real mutex, simulated a model
    /// (`os::OsLock::model_description`).
    pub fn native_only(&self) -> bool {
        matches!(self, AnyLock::Os(_))
    }

    /// Whether waiters sleep in the kernel (so a CPU-time/wall ratio below 1 is the
    /// lock's doing, not noise).
    pub fn may_sleep(&self) -> bool {
        matches!(self, AnyLock::Os(_))
    }

    pub async fn acquire<E: Env>(&self, env: &E, local: &mut LocalState) {
        match self {
            AnyLock::Tas(l) => l.acquire(env).await,
            AnyLock::Ttas(l) => l.acquire(env).await,
            AnyLock::Ticket(l) => l.acquire(env, local).await,
            AnyLock::Mcs(l) => l.acquire(env, local).await,
            AnyLock::Clh(l) => l.acquire(env, local).await,
            AnyLock::Qspinlock(l) => l.acquire(env).await,
            AnyLock::Os(l) => l.acquire(env).await,
        }
    }

    pub async fn release<E: Env>(&self, env: &E, local: &mut LocalState) {
        match self {
            AnyLock::Tas(l) => l.release(env).await,
            AnyLock::Ttas(l) => l.release(env).await,
            AnyLock::Ticket(l) => l.release(env).await,
            AnyLock::Mcs(l) => l.release(env).await,
            AnyLock::Clh(l) => l.release(env, local).await,
            AnyLock::Qspinlock(l) => l.release(env).await,
            AnyLock::Os(l) => l.release(env).await,
        }
    }

    /// One attempt; true if the lock is now held. (CLH may wait in one rare race, see
    /// `clh::Clh::try_acquire`; it still returns holding.)
    pub async fn try_acquire<E: Env>(&self, env: &E, local: &mut LocalState) -> bool {
        match self {
            AnyLock::Tas(l) => l.try_acquire(env).await,
            AnyLock::Ttas(l) => l.try_acquire(env).await,
            AnyLock::Ticket(l) => l.try_acquire(env).await,
            AnyLock::Mcs(l) => l.try_acquire(env).await,
            AnyLock::Clh(l) => l.try_acquire(env, local).await,
            AnyLock::Qspinlock(l) => l.try_acquire(env).await,
            AnyLock::Os(l) => l.try_acquire(env).await,
        }
    }

    /// Asked by the holder: does another thread wait for this lock?
    pub async fn is_contended<E: Env>(&self, env: &E, local: &mut LocalState) -> bool {
        match self {
            AnyLock::Tas(l) => l.is_contended(env).await,
            AnyLock::Ttas(l) => l.is_contended(env).await,
            AnyLock::Ticket(l) => l.is_contended(env).await,
            AnyLock::Mcs(l) => l.is_contended(env).await,
            AnyLock::Clh(l) => l.is_contended(env, local).await,
            AnyLock::Qspinlock(l) => l.is_contended(env).await,
            AnyLock::Os(l) => l.is_contended(env).await,
        }
    }
}
