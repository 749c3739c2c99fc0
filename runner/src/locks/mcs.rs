//! MCS queue lock (Mellor-Crummey & Scott): a `tail` word plus one node line per
//! thread; each waiter spins on its own node, so a hand-off moves one line. FIFO.

use super::{LocalState, Lock, Site};
use crate::env::{Addr, Env, LineAlloc};
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};

/// Node words.
const NEXT: u8 = 0;
const LOCKED: u8 = 1;

#[derive(Debug)]
pub struct Mcs {
    /// Last waiter (tid + 1), 0 if free.
    tail: Addr,
    /// First node line; thread t's node is line `nodes + t`.
    nodes: u32,
    /// Index among the point's locks (for the arrival mark).
    id: usize,
}

impl Mcs {
    pub fn new(alloc: &mut LineAlloc, site: Site) -> Self {
        Mcs {
            tail: Addr::new(alloc.line(), 0),
            nodes: alloc.lines(site.nthreads as u32),
            id: site.id,
        }
    }

    fn node(&self, ptr: u64, w: u8) -> Addr {
        Addr::new(self.nodes + (ptr - 1) as u32, w)
    }
}

impl Lock for Mcs {
    async fn acquire<E: Env>(&self, env: &E, local: &mut LocalState) {
        let me = env.tid() as u64 + 1;
        env.store(self.node(me, NEXT), 0, Relaxed).await;
        env.store(self.node(me, LOCKED), 1, Relaxed).await;
        // Release: our node's initialisation is visible to whoever reads the tail and
        // links to us. Acquire: if the queue was empty we own the lock and must see the
        // last holder's writes (its Release CAS of the tail to 0).
        let prev = env.swap(self.tail, me, AcqRel).await;
        local.doorway(env, self.id);
        if prev != 0 {
            // Release: the predecessor reads `next` with Acquire before writing our
            // LOCKED word, which is then ordered after our initialisation.
            env.store(self.node(prev, NEXT), me, Release).await;
            env.wait_until(self.node(me, LOCKED), Acquire, |v| v == 0)
                .await;
        }
    }

    async fn release<E: Env>(&self, env: &E, _: &mut LocalState) {
        let me = env.tid() as u64 + 1;
        let mut next = env.load(self.node(me, NEXT), Acquire).await;
        if next == 0 {
            // Release: the next thread to swap the tail from 0 sees our critical
            // section.
            if env.cas(self.tail, me, 0, Release).await.is_ok() {
                return;
            }
            // Someone swapped the tail but has not linked yet.
            next = env
                .wait_until(self.node(me, NEXT), Acquire, |v| v != 0)
                .await;
        }
        env.store(self.node(next, LOCKED), 0, Release).await;
    }

    async fn try_acquire<E: Env>(&self, env: &E, _: &mut LocalState) -> bool {
        let me = env.tid() as u64 + 1;
        env.store(self.node(me, NEXT), 0, Relaxed).await;
        // Release so that a successor linking to us sees NEXT = 0 first.
        env.cas(self.tail, 0, me, AcqRel).await.is_ok()
    }

    /// Asked by the holder: the tail is someone else once a waiter has enqueued.
    async fn is_contended<E: Env>(&self, env: &E, _: &mut LocalState) -> bool {
        let me = env.tid() as u64 + 1;
        env.load(self.tail, Relaxed).await != me
    }
}
