//! Ticket lock: `next` and `owner` words on one line (as the kernel's ticket spinlock
//! packs head and tail in one word); a waiter takes a ticket with one fetch-add and
//! spins reading `owner`, so every release is seen by every waiter. FIFO.

use super::{LocalState, Lock, Site};
use crate::env::{Addr, Env, LineAlloc};
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};

#[derive(Debug)]
pub struct Ticket {
    /// Next ticket to hand out.
    next: Addr,
    /// Ticket now served. Words are 64-bit: they never wrap in a run.
    owner: Addr,
    /// Index among the point's locks (for the arrival mark).
    id: usize,
}

impl Ticket {
    pub fn new(alloc: &mut LineAlloc, site: Site) -> Self {
        let l = alloc.line();
        Ticket {
            next: Addr::new(l, 0),
            owner: Addr::new(l, 1),
            id: site.id,
        }
    }
}

impl Lock for Ticket {
    async fn acquire<E: Env>(&self, env: &E, local: &mut LocalState) {
        // The ticket itself orders nothing; the Acquire wait on `owner` pairs with the
        // previous holder's Release store.
        let me = env.fetch_add(self.next, 1, Relaxed).await;
        local.doorway(env, self.id);
        env.wait_until(self.owner, Acquire, move |v| v == me).await;
    }

    async fn release<E: Env>(&self, env: &E, _: &mut LocalState) {
        // Only the holder writes `owner`, so a plain load + store suffices (no RMW).
        let o = env.load(self.owner, Relaxed).await;
        env.store(self.owner, o + 1, Release).await;
    }

    /// Free iff `next == owner`. `owner` only grows and never passes `next`, so if the
    /// CAS finds `next` still equal to the `owner` we read, the lock was free at the
    /// CAS (the kernel's `ticket_spin_trylock` does the same on the packed word).
    ///
    /// Acquire on the `owner` read: that is the word the last holder released with
    /// Release, so reading it is what orders its critical section before ours (the
    /// CAS on `next` only meets other threads' relaxed fetch-adds).
    async fn try_acquire<E: Env>(&self, env: &E, _: &mut LocalState) -> bool {
        let o = env.load(self.owner, Acquire).await;
        env.cas(self.next, o, o + 1, Acquire).await.is_ok()
    }

    /// The kernel's `ticket_spin_is_contended`: more than one ticket outstanding.
    async fn is_contended<E: Env>(&self, env: &E, _: &mut LocalState) -> bool {
        let o = env.load(self.owner, Relaxed).await;
        let n = env.load(self.next, Relaxed).await;
        n.wrapping_sub(o) > 1
    }
}
