//! Test-and-test-and-set: waiters spin reading the lock word (sharing the line) and
//! swap only when they see it free; optional exponential backoff after a failed swap.
//! Not FIFO.

use super::{out_of_line, LocalState, Lock, Site, MINUS_ONE};
use crate::env::{Addr, Env, LineAlloc};
use locklab_model::plan::Backoff;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};

#[derive(Debug)]
pub struct Ttas {
    lock: Addr,
    /// As in `Tas`: slow-path waiter count for `is_contended`, on its own line.
    waiters: Addr,
    backoff: Option<Backoff>,
}

impl Ttas {
    pub fn new(alloc: &mut LineAlloc, _: Site, backoff: Option<Backoff>) -> Self {
        Ttas {
            lock: Addr::new(alloc.line(), 0),
            waiters: Addr::new(alloc.line(), 0),
            backoff,
        }
    }
}

impl Lock for Ttas {
    async fn acquire<E: Env>(&self, env: &E, _: &mut LocalState) {
        if env.swap(self.lock, 1, Acquire).await == 0 {
            return;
        }
        out_of_line(self.contended(env)).await;
    }

    async fn release<E: Env>(&self, env: &E, _: &mut LocalState) {
        env.store(self.lock, 0, Release).await;
    }

    async fn try_acquire<E: Env>(&self, env: &E, _: &mut LocalState) -> bool {
        env.load(self.lock, Relaxed).await == 0 && env.swap(self.lock, 1, Acquire).await == 0
    }

    async fn is_contended<E: Env>(&self, env: &E, _: &mut LocalState) -> bool {
        env.load(self.waiters, Relaxed).await != 0
    }
}

impl Ttas {
    /// The acquisition after a failed first swap: counted as a waiter, spin on
    /// reads until the lock looks free, swap again (with backoff, if any). Kept out
    /// of the fast path ([`out_of_line`]), which is then TAS's.
    async fn contended<E: Env>(&self, env: &E) {
        env.fetch_add(self.waiters, 1, Relaxed).await;
        let mut delay = self.backoff.as_ref().map_or(0, |b| b.min_ns.max(1));
        loop {
            // The read-only spin needs no ordering: the swap below is the acquire.
            env.wait_until(self.lock, Relaxed, |v| v == 0).await;
            if env.swap(self.lock, 1, Acquire).await == 0 {
                break;
            }
            if let Some(b) = &self.backoff {
                // Randomised in [delay/2, delay] so that waiters released together do
                // not retry in lock step (deterministic: Env::random).
                let half = delay / 2;
                let d = half + env.random() % (delay - half + 1);
                env.work(d).await;
                delay = (delay.saturating_mul(2)).min(b.max_ns.max(1));
            }
        }
        env.fetch_add(self.waiters, MINUS_ONE, Relaxed).await;
    }
}
