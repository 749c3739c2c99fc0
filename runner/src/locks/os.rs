//! The OS-backed baselines: `std::sync::Mutex`, `parking_lot`'s raw mutex and
//! `pthread_mutex_t` (default attributes).
//!
//! Natively (`Env::NATIVE`) they are the real mutexes. Their code cannot be written
//! over `Env`, so simulated runs use a model: the futex mutex that all three are on
//! Linux (Drepper's "mutex2": 0 free, 1 locked, 2 locked with possible sleepers),
//! written over `Env`, with each one's own spinning before it sleeps:
//!
//! | lock | spin before sleeping | source |
//! | --- | --- | --- |
//! | `std` | up to 100 reads while the word is 1 | `sys/sync/mutex/futex.rs` |
//! | `parking_lot` | 3 rounds of 2, 4, 8 pauses, then 7 yields (modelled as pauses) | `parking_lot_core::SpinWait` |
//! | `pthread` | none (`lll_lock_wait` sleeps at once) | glibc `lowlevellock.c` |
//!
//! The kernel's part is priced by the topology's `futex` costs (`Env::futex`,
//! measured on the host by `locklab topo --measure`): a `futex_wait` pays the system
//! call (`wait`) and sleeps only if the word is still 2 then; a sleeper waits for the
//! word to be written away from 2 (the release, whose wake call follows it) and runs
//! again `latency` later; a release that finds the word at 2 pays the wake call,
//! `wake_sleeper` if a thread sleeps and `wake` if none does.
//! glibc's own code around pthread's atomics is `futex { pthread_call }` (measured by
//! `topo --measure`; `std` and `parking_lot` are inlined Rust, their atomics their cost).
//! `parking_lot`'s eventual-fairness hand-off (every ~0.5 ms) is not modelled, nor the
//! scheduler beyond that latency: the model compares shapes and, calibrated, the cost
//! of the system calls around a contended mutex.

use super::{LocalState, Lock, Site};
use crate::env::{Addr, Env, LineAlloc};
use locklab_model::time::Ns;
use parking_lot::lock_api::RawMutex as _;
use std::cell::UnsafeCell;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::sync::atomic::{AtomicU32, AtomicU64};
use std::task::{Context, Poll};

/// `model_spin`'s answer when it took the lock itself (parking_lot barges).
const ACQUIRED: u64 = u64::MAX;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OsKind {
    Std,
    ParkingLot,
    Pthread,
}

/// The real mutexes. Boxed so that their addresses never move (the `std` guard points
/// into its own box).
struct Real {
    std: std::sync::Mutex<()>,
    /// The `std` guard, kept while held. Only the holder touches it: the mutex itself
    /// protects this cell.
    std_guard: UnsafeCell<Option<std::sync::MutexGuard<'static, ()>>>,
    parking: parking_lot::RawMutex,
    pthread: UnsafeCell<libc::pthread_mutex_t>,
    /// Threads that failed a first try and are blocking, for `is_contended` (the OS
    /// mutexes do not expose their waiters), counted only where the workload asks
    /// (`OsLock::count_waiters`). On a line of its own: a waiter's count must not
    /// take the mutex's line from its holder.
    waiters: OwnLine,
}

#[repr(align(128))]
struct OwnLine(AtomicU64);

// SAFETY: `std_guard` is only accessed by the thread holding `std`, and `pthread` only
// through the pthread API, which is thread-safe.
unsafe impl Sync for Real {}
unsafe impl Send for Real {}

impl Drop for Real {
    fn drop(&mut self) {
        // Drop a guard left by a holder that never released (before the mutex).
        self.std_guard.get_mut().take();
        // SAFETY: no thread uses the mutex any more (we have `&mut self`).
        unsafe { libc::pthread_mutex_destroy(self.pthread.get()) };
    }
}

pub struct OsLock {
    kind: OsKind,
    /// Natively, whether blocked waiters are counted: only where the workload asks
    /// `is_contended` (`Site::asks_contended`); elsewhere the count's two atomics per
    /// blocking acquisition, on a line the waiters pass between them, are a cost the
    /// mutex does not have.
    count_waiters: bool,
    real: Box<Real>,
    /// Model: the futex word.
    word: Addr,
    /// Model: threads asleep on the word, as the kernel's futex queue knows them. Not
    /// simulated memory: the kernel's own bookkeeping is priced by the topology's
    /// `futex` costs.
    sleepers: AtomicU32,
}

impl std::fmt::Debug for OsLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OsLock").field("kind", &self.kind).finish()
    }
}

impl OsLock {
    pub fn new(alloc: &mut LineAlloc, site: Site, kind: OsKind) -> Self {
        OsLock {
            kind,
            count_waiters: site.asks_contended,
            real: Box::new(Real {
                std: std::sync::Mutex::new(()),
                std_guard: UnsafeCell::new(None),
                parking: parking_lot::RawMutex::INIT,
                pthread: UnsafeCell::new(libc::PTHREAD_MUTEX_INITIALIZER),
                waiters: OwnLine(AtomicU64::new(0)),
            }),
            word: Addr::new(alloc.line(), 0),
            sleepers: AtomicU32::new(0),
        }
    }

    pub fn kind(&self) -> OsKind {
        self.kind
    }

    pub fn model_description(&self) -> &'static str {
        match self.kind {
            OsKind::Std => "futex mutex model, 100 spins before sleeping (std)",
            OsKind::ParkingLot => "futex mutex model, SpinWait before parking (parking_lot)",
            OsKind::Pthread => "futex mutex model, no spinning (glibc lll_lock)",
        }
    }

    // --- native ---------------------------------------------------------------

    /// The real mutex, as plain code (see [`OsOp`]). The wait, if the first try fails,
    /// is timed from here whether or not the acquisition is recorded.
    #[inline(always)]
    fn real_acquire<E: Env>(&self, env: &E) {
        if self.real_try() {
            return;
        }
        env.waiting();
        if self.count_waiters {
            let waiters = &self.real.waiters.0;
            waiters.fetch_add(1, Relaxed);
            self.real_lock();
            waiters.fetch_sub(1, Relaxed);
        } else {
            self.real_lock();
        }
    }

    #[inline(always)]
    fn real_try(&self) -> bool {
        match self.kind {
            OsKind::Std => match self.real.std.try_lock() {
                Ok(g) => {
                    self.keep_guard(g);
                    true
                }
                Err(std::sync::TryLockError::WouldBlock) => false,
                Err(std::sync::TryLockError::Poisoned(p)) => {
                    self.keep_guard(p.into_inner());
                    true
                }
            },
            OsKind::ParkingLot => self.real.parking.try_lock(),
            // SAFETY: an initialised mutex that never moves (boxed).
            OsKind::Pthread => unsafe { libc::pthread_mutex_trylock(self.real.pthread.get()) == 0 },
        }
    }

    #[inline(always)]
    fn real_lock(&self) {
        match self.kind {
            OsKind::Std => {
                let g = self.real.std.lock().unwrap_or_else(|p| p.into_inner());
                self.keep_guard(g);
            }
            OsKind::ParkingLot => self.real.parking.lock(),
            OsKind::Pthread => {
                // SAFETY: as above.
                let rc = unsafe { libc::pthread_mutex_lock(self.real.pthread.get()) };
                assert_eq!(rc, 0, "pthread_mutex_lock failed");
            }
        }
    }

    fn keep_guard(&self, g: std::sync::MutexGuard<'_, ()>) {
        // SAFETY: the guard borrows `self.real.std`, which lives in a box that outlives
        // every guard (`Real::drop` drops a left-over guard first). We hold the mutex,
        // so no other thread touches the cell.
        unsafe {
            let g: std::sync::MutexGuard<'static, ()> = std::mem::transmute(g);
            *self.real.std_guard.get() = Some(g);
        }
    }

    #[inline(always)]
    fn real_unlock(&self) {
        match self.kind {
            // SAFETY: we hold the mutex, so the cell is ours; dropping the guard
            // unlocks.
            OsKind::Std => unsafe {
                let g = (*self.real.std_guard.get()).take();
                drop(g.expect("std mutex released without being held"));
            },
            // SAFETY: the caller holds the lock (`Lock::release`'s contract).
            OsKind::ParkingLot => unsafe { self.real.parking.unlock() },
            OsKind::Pthread => {
                // SAFETY: as above.
                let rc = unsafe { libc::pthread_mutex_unlock(self.real.pthread.get()) };
                assert_eq!(rc, 0, "pthread_mutex_unlock failed");
            }
        }
    }

    // --- model ----------------------------------------------------------------

    async fn model_lock<E: Env>(&self, env: &E) {
        self.library_code(env, false).await;
        if env.cas(self.word, 0, 1, Acquire).await.is_ok() {
            return;
        }
        // As the real mutex's (`real_acquire`): the wait is timed from the failed try.
        env.waiting();
        let mut state = self.model_spin(env).await;
        if state == ACQUIRED {
            return;
        }
        if self.kind == OsKind::Std && state == 0 {
            match env.cas(self.word, 0, 1, Acquire).await {
                Ok(_) => return,
                Err(s) => state = s,
            }
        }
        loop {
            // Mark "sleepers possible" and try to take it in one swap.
            if state != 2 && env.swap(self.word, 2, Acquire).await == 0 {
                return;
            }
            // futex_wait(word, 2): the system call, which sleeps only if the word is
            // still 2 when the kernel looks; a sleeper runs again `latency` after the
            // write that ends its sleep (the release, whose wake call follows it).
            let futex = env.futex();
            if !futex.wait_ns.is_zero() {
                env.syscall(futex.wait_ns).await;
            }
            if env.load(self.word, Relaxed).await == 2 {
                // Asleep, off the CPU, until it runs again.
                env.off_cpu(true);
                self.sleepers.fetch_add(1, Relaxed);
                env.wait_until(self.word, Relaxed, |v| v != 2).await;
                self.sleepers.fetch_sub(1, Relaxed);
                env.syscall(futex.latency_ns).await;
                env.off_cpu(false);
            }
            state = if self.kind == OsKind::Std {
                self.model_spin(env).await
            } else {
                env.load(self.word, Relaxed).await
            };
        }
    }

    async fn model_try<E: Env>(&self, env: &E) -> bool {
        self.library_code(env, false).await;
        env.cas(self.word, 0, 1, Acquire).await.is_ok()
    }

    async fn model_is_contended<E: Env>(&self, env: &E) -> bool {
        env.load(self.word, Relaxed).await == 2
    }

    async fn model_unlock<E: Env>(&self, env: &E) {
        self.library_code(env, true).await;
        // Release: the next owner's Acquire RMW sees our critical section.
        if env.swap(self.word, 0, Release).await == 2 {
            // futex_wake, paid by the releaser: dear if it wakes a sleeper (still
            // counted: the write that woke it resumes it only later), a plain call if
            // the waiters are all awake (in their own calls, or back in user space).
            let futex = env.futex();
            let cost = if self.sleepers.load(Relaxed) > 0 {
                futex.wake_sleeper_ns
            } else {
                futex.wake_ns
            };
            if !cost.is_zero() {
                env.syscall(cost).await;
            }
        }
    }

    /// glibc's code around pthread's atomics (`futex { pthread_call }`, for a lock and
    /// an unlock together): half before the lock's (or trylock's) compare-and-swap,
    /// the rest before the unlock's swap. `std` and `parking_lot` pay nothing here.
    fn library_code<'a, E: Env>(&self, env: &'a E, unlock: bool) -> impl Future<Output = ()> + 'a {
        let call = match self.kind {
            OsKind::Pthread => env.futex().pthread_call_ns,
            OsKind::Std | OsKind::ParkingLot => Ns::ZERO,
        };
        let half = Ns::from_ps(call.ps() / 2);
        env.instructions(if unlock {
            Ns::from_ps(call.ps() - half.ps())
        } else {
            half
        })
    }

    /// The spin phase before sleeping; returns the last state read.
    async fn model_spin<E: Env>(&self, env: &E) -> u64 {
        match self.kind {
            OsKind::Std => {
                let mut state = env.load(self.word, Relaxed).await;
                for _ in 0..100 {
                    if state != 1 {
                        break;
                    }
                    env.pause().await;
                    state = env.load(self.word, Relaxed).await;
                }
                state
            }
            OsKind::ParkingLot => {
                for round in 0..10u32 {
                    let pauses = if round < 3 { 2u32 << round } else { 1 };
                    for _ in 0..pauses {
                        env.pause().await;
                    }
                    if env.cas(self.word, 0, 1, Acquire).await.is_ok() {
                        return ACQUIRED;
                    }
                }
                env.load(self.word, Relaxed).await
            }
            OsKind::Pthread => env.load(self.word, Relaxed).await,
        }
    }
}

/// An OS lock operation's future. Natively the real mutex is called where the future
/// is made, as the native `Env` does its operations, and the future is `Done`;
/// simulated, it is the model's future, polled by a call that is never inlined.
///
/// An `async fn` with both paths compiles to one state machine whose resume points
/// include the model's even where `Env::NATIVE` rules them out: the native acquire and
/// release outgrew the inliner and stayed calls in the measured loop (a run's only
/// thread took 39 ns an iteration with `pthread`, 24.5 ns now; `bench native`). Here
/// the native instantiation's `poll` is a branch.
enum OsOp<T, F> {
    Done(T),
    Model(F),
}

impl<T: Copy + Unpin, F: Future<Output = T>> Future for OsOp<T, F> {
    type Output = T;

    #[inline(always)]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        // SAFETY: the model's future is pinned structurally: `OsOp` never moves it out.
        match unsafe { self.get_unchecked_mut() } {
            OsOp::Done(v) => Poll::Ready(*v),
            OsOp::Model(f) => poll_out_of_line(unsafe { Pin::new_unchecked(f) }, cx),
        }
    }
}

#[inline(never)]
fn poll_out_of_line<F: Future>(f: Pin<&mut F>, cx: &mut Context<'_>) -> Poll<F::Output> {
    f.poll(cx)
}

/// Natively (`Env::NATIVE`) the real mutex, simulated the futex model.
impl Lock for OsLock {
    const MAY_SLEEP: bool = true;

    #[inline(always)]
    fn acquire<E: Env>(&self, env: &E, _: &mut LocalState) -> impl Future<Output = ()> {
        if E::NATIVE {
            self.real_acquire(env);
            OsOp::Done(())
        } else {
            OsOp::Model(self.model_lock(env))
        }
    }

    #[inline(always)]
    fn release<E: Env>(&self, env: &E, _: &mut LocalState) -> impl Future<Output = ()> {
        if E::NATIVE {
            self.real_unlock();
            OsOp::Done(())
        } else {
            OsOp::Model(self.model_unlock(env))
        }
    }

    #[inline(always)]
    fn try_acquire<E: Env>(&self, env: &E, _: &mut LocalState) -> impl Future<Output = bool> {
        if E::NATIVE {
            OsOp::Done(self.real_try())
        } else {
            OsOp::Model(self.model_try(env))
        }
    }

    #[inline(always)]
    fn is_contended<E: Env>(&self, env: &E, _: &mut LocalState) -> impl Future<Output = bool> {
        if E::NATIVE {
            debug_assert!(
                self.count_waiters,
                "is_contended asked of a mutex built without Site::asks_contended"
            );
            OsOp::Done(self.real.waiters.0.load(Relaxed) != 0)
        } else {
            OsOp::Model(self.model_is_contended(env))
        }
    }
}
