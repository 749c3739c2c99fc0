//! Test-and-set: every attempt is an atomic swap on the lock word, waiters keep
//! swapping (with one pause between attempts, or none: `relax`), so each release
//! starts a herd of RMWs on one line. Not FIFO.
//!
//! `relax = none` is the bare swap loop (lockhammer's `swap_mutex`): no pause, and no
//! waiter count unless the workload asks `is_contended`.

use super::{LocalState, Lock, Site, MINUS_ONE};
use crate::env::{Addr, Env, LineAlloc};
use locklab_model::plan::Relax;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};

#[derive(Debug)]
pub struct Tas {
    /// Word 0: 0 free, 1 held.
    lock: Addr,
    /// Threads that failed their first attempt and are still trying. TAS itself has no
    /// notion of waiters; this count (on its own line, touched only on the slow path)
    /// is what lets `is_contended` serve the `when_contended` break policy.
    waiters: Addr,
    /// Whether waiters keep `waiters`: always with a pause between swaps (the
    /// reproductions lean on the count's two locked adds, docs/native.md, "TAS's
    /// waiter count"); in the bare loop only where a workload asks `is_contended`.
    counts: bool,
    /// Between two failed swaps: a `pause`, or nothing.
    relax: Relax,
}

impl Tas {
    pub fn new(alloc: &mut LineAlloc, site: Site, relax: Relax) -> Self {
        Tas {
            lock: Addr::new(alloc.line(), 0),
            waiters: Addr::new(alloc.line(), 0),
            counts: relax == Relax::Pause || site.asks_contended,
            relax,
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
        if self.counts {
            env.fetch_add(self.waiters, 1, Relaxed).await;
        }
        loop {
            match self.relax {
                Relax::Pause => env.pause().await,
                Relax::None => env.retry().await,
            }
            if env.swap(self.lock, 1, Acquire).await == 0 {
                break;
            }
        }
        if self.counts {
            env.fetch_add(self.waiters, MINUS_ONE, Relaxed).await;
        }
    }

    async fn release<E: Env>(&self, env: &E, _: &mut LocalState) {
        env.store(self.lock, 0, Release).await;
    }

    async fn try_acquire<E: Env>(&self, env: &E, _: &mut LocalState) -> bool {
        env.swap(self.lock, 1, Acquire).await == 0
    }

    async fn is_contended<E: Env>(&self, env: &E, _: &mut LocalState) -> bool {
        debug_assert!(
            self.counts,
            "is_contended asked of a bare TAS built without Site::asks_contended"
        );
        env.load(self.waiters, Relaxed).await != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The paused TAS always counts its waiters (the reproductions lean on it); the
    /// bare loop only for a workload that asks `is_contended`.
    #[test]
    fn only_the_bare_loop_leaves_its_waiters_uncounted_where_nobody_asks() {
        let counts = |relax, asks_contended| {
            let site = Site {
                id: 0,
                nthreads: 2,
                asks_contended,
            };
            Tas::new(&mut LineAlloc::new(), site, relax).counts
        };
        assert!(counts(Relax::Pause, false));
        assert!(counts(Relax::Pause, true));
        assert!(!counts(Relax::None, false));
        assert!(counts(Relax::None, true));
    }
}
