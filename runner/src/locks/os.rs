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
//! A sleep is `wait_until(word != 2)` (woken by the release's write) followed by
//! [`WAKE_LATENCY_NS`] of delay; a release that finds sleepers pays
//! [`FUTEX_WAKE_NS`] for the system call. `parking_lot`'s eventual-fairness hand-off
//! (every ~0.5 ms) is not modelled. The model is a stand-in for comparing shapes, not a
//! measurement of the kernel's futex path.

use super::{LocalState, Lock, Site, MINUS_ONE};
use crate::env::{Addr, Env, LineAlloc};
use parking_lot::lock_api::RawMutex as _;
use std::cell::UnsafeCell;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};

/// `model_spin`'s answer when it took the lock itself (parking_lot barges).
const ACQUIRED: u64 = u64::MAX;

/// Modelled cost of a `FUTEX_WAKE` system call, paid by the releasing thread.
pub const FUTEX_WAKE_NS: u64 = 1_000;
/// Modelled delay between the wake-up and the sleeper running again.
pub const WAKE_LATENCY_NS: u64 = 3_000;

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
}

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
    real: Box<Real>,
    /// Model: the futex word.
    word: Addr,
    /// Native: threads that failed a first try and are blocking, for `is_contended`
    /// (the OS mutexes do not expose their waiters).
    waiters: Addr,
}

impl std::fmt::Debug for OsLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OsLock").field("kind", &self.kind).finish()
    }
}

impl OsLock {
    pub fn new(alloc: &mut LineAlloc, _: Site, kind: OsKind) -> Self {
        OsLock {
            kind,
            real: Box::new(Real {
                std: std::sync::Mutex::new(()),
                std_guard: UnsafeCell::new(None),
                parking: parking_lot::RawMutex::INIT,
                pthread: UnsafeCell::new(libc::PTHREAD_MUTEX_INITIALIZER),
            }),
            word: Addr::new(alloc.line(), 0),
            waiters: Addr::new(alloc.line(), 0),
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
        if env.cas(self.word, 0, 1, Acquire).await.is_ok() {
            return;
        }
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
            // futex_wait(word, 2): sleep until the word is written away from 2.
            env.wait_until(self.word, Relaxed, |v| v != 2).await;
            env.work(WAKE_LATENCY_NS).await;
            state = if self.kind == OsKind::Std {
                self.model_spin(env).await
            } else {
                env.load(self.word, Relaxed).await
            };
        }
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

/// Natively (`Env::NATIVE`) the real mutex, simulated the futex model.
impl Lock for OsLock {
    const MAY_SLEEP: bool = true;

    async fn acquire<E: Env>(&self, env: &E, _: &mut LocalState) {
        if E::NATIVE {
            if self.real_try() {
                return;
            }
            env.waiting();
            env.fetch_add(self.waiters, 1, Relaxed).await;
            self.real_lock();
            env.fetch_add(self.waiters, MINUS_ONE, Relaxed).await;
            return;
        }
        self.model_lock(env).await;
    }

    async fn release<E: Env>(&self, env: &E, _: &mut LocalState) {
        if E::NATIVE {
            self.real_unlock();
            return;
        }
        // Release: the next owner's Acquire RMW sees our critical section.
        if env.swap(self.word, 0, Release).await == 2 {
            env.work(FUTEX_WAKE_NS).await;
        }
    }

    async fn try_acquire<E: Env>(&self, env: &E, _: &mut LocalState) -> bool {
        if E::NATIVE {
            return self.real_try();
        }
        env.cas(self.word, 0, 1, Acquire).await.is_ok()
    }

    async fn is_contended<E: Env>(&self, env: &E, _: &mut LocalState) -> bool {
        if E::NATIVE {
            return env.load(self.waiters, Relaxed).await != 0;
        }
        env.load(self.word, Relaxed).await == 2
    }
}
