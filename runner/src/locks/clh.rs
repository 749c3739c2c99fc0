//! CLH queue lock (Craig; Landin & Hagersten): the tail points at the last node; a
//! waiter spins on its predecessor's node and, on release, takes that node over as its
//! own. Nodes change hands, so a thread's current node lives in its `LocalState`.
//! FIFO.

use super::{LocalState, Lock, Site};
use crate::env::{Addr, Env, LineAlloc};
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};

/// Node word 0: 1 while its owner holds or waits for the lock, 0 once released.
const BUSY: u8 = 0;

#[derive(Debug)]
pub struct Clh {
    /// Index + 1 of the last node (initially the spare node `nthreads`, free).
    tail: Addr,
    /// `nthreads + 1` node lines.
    nodes: u32,
    nthreads: usize,
    /// This lock's slot in `LocalState`.
    id: usize,
}

impl Clh {
    pub fn new(alloc: &mut LineAlloc, site: Site) -> Self {
        Clh {
            tail: Addr::new(alloc.line(), 0),
            nodes: alloc.lines(site.nthreads as u32 + 1),
            nthreads: site.nthreads,
            id: site.id,
        }
    }

    fn node(&self, ptr: u64) -> Addr {
        Addr::new(self.nodes + (ptr - 1) as u32, BUSY)
    }

    /// The tail starts at the spare node; the arena starts zeroed, so read 0 as it.
    fn tail_ptr(&self, raw: u64) -> u64 {
        if raw == 0 {
            self.nthreads as u64 + 1
        } else {
            raw
        }
    }

    /// This thread's current node (pointer form), thread t starting with node t.
    fn mine(&self, local: &mut LocalState) -> u64 {
        let tid = local.tid() as u64;
        let s = local.slot(self.id);
        if *s == 0 {
            *s = tid + 1;
        }
        *s
    }

    fn set_pred(&self, local: &mut LocalState, me: u64, pred: u64) {
        // Slot layout: low 32 bits our node, high 32 bits the predecessor's node.
        *local.slot(self.id) = me | (pred << 32);
    }
}

impl Lock for Clh {
    async fn acquire<E: Env>(&self, env: &E, local: &mut LocalState) {
        let me = self.mine(local);
        env.store(self.node(me), 1, Relaxed).await;
        // Release publishes BUSY = 1 before the node becomes visible as tail; Acquire
        // is not needed for the predecessor's node (we only read its flag, with
        // Acquire, below).
        let pred = self.tail_ptr(env.swap(self.tail, me, AcqRel).await);
        local.doorway(env, self.id);
        env.wait_until(self.node(pred), Acquire, |v| v == 0).await;
        // Remember the predecessor's node: it becomes ours at release.
        self.set_pred(local, me, pred);
    }

    async fn release<E: Env>(&self, env: &E, local: &mut LocalState) {
        let s = *local.slot(self.id);
        let (me, pred) = (s & 0xffff_ffff, s >> 32);
        // Release: the successor's Acquire wait sees our critical section.
        env.store(self.node(me), 0, Release).await;
        *local.slot(self.id) = pred;
    }

    /// Enqueue only if the tail node is free. If the tail changed between our reads,
    /// the CAS fails and we never enqueued. In the one ABA case (the tail left and came
    /// back to the same node, now busy again) we are enqueued and cannot leave a CLH
    /// queue: we wait our turn and still return true (holding). Rare, and correct.
    async fn try_acquire<E: Env>(&self, env: &E, local: &mut LocalState) -> bool {
        let me = self.mine(local) & 0xffff_ffff;
        let t = self.tail_ptr(env.load(self.tail, Relaxed).await);
        if env.load(self.node(t), Relaxed).await != 0 {
            return false;
        }
        env.store(self.node(me), 1, Relaxed).await;
        let raw = if t == self.nthreads as u64 + 1 {
            // The arena's initial 0 and the explicit spare pointer mean the same.
            match env.cas(self.tail, 0, me, AcqRel).await {
                Ok(v) => Ok(v),
                Err(_) => env.cas(self.tail, t, me, AcqRel).await,
            }
        } else {
            env.cas(self.tail, t, me, AcqRel).await
        };
        if raw.is_err() {
            env.store(self.node(me), 0, Relaxed).await;
            return false;
        }
        env.wait_until(self.node(t), Acquire, |v| v == 0).await;
        self.set_pred(local, me, t);
        true
    }

    /// Asked by the holder: the tail is another node once someone enqueued.
    async fn is_contended<E: Env>(&self, env: &E, local: &mut LocalState) -> bool {
        let me = *local.slot(self.id) & 0xffff_ffff;
        self.tail_ptr(env.load(self.tail, Relaxed).await) != me
    }
}
