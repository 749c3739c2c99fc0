//! Test-and-set: every attempt is an atomic swap on the lock word, waiters keep
//! swapping (with one pause between attempts), so each release starts a herd of RMWs
//! on one line. Not FIFO.

use super::{LocalState, Lock, Site, MINUS_ONE};
use crate::env::{Addr, Env, LineAlloc};
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};

#[derive(Debug)]
pub struct Tas {
    /// Word 0: 0 free, 1 held.
    lock: Addr,
    /// Threads that failed their first attempt and are still trying. TAS itself has no
    /// notion of waiters; this count (on its own line, touched only on the slow path)
    /// is what lets `is_contended` serve the `when_contended` break policy.
    waiters: Addr,
}

impl Tas {
    pub fn new(alloc: &mut LineAlloc, _: Site) -> Self {
        Tas {
            lock: Addr::new(alloc.line(), 0),
            waiters: Addr::new(alloc.line(), 0),
        }
    }
}

impl Lock for Tas {
    async fn acquire<E: Env>(&self, env: &E, _: &mut LocalState) {
        // Acquire pairs with the Release store in `release`: the previous holder's
        // critical-section writes are visible once we see 0.
        if env.swap(self.lock, 1, Acquire).await == 0 {
            return;
        }
        env.fetch_add(self.waiters, 1, Relaxed).await;
        loop {
            env.pause().await;
            if env.swap(self.lock, 1, Acquire).await == 0 {
                break;
            }
        }
        env.fetch_add(self.waiters, MINUS_ONE, Relaxed).await;
    }

    async fn release<E: Env>(&self, env: &E, _: &mut LocalState) {
        env.store(self.lock, 0, Release).await;
    }

    async fn try_acquire<E: Env>(&self, env: &E, _: &mut LocalState) -> bool {
        env.swap(self.lock, 1, Acquire).await == 0
    }

    async fn is_contended<E: Env>(&self, env: &E, _: &mut LocalState) -> bool {
        env.load(self.waiters, Relaxed).await != 0
    }
}
