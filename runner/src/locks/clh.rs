//! CLH queue lock (Craig; Landin & Hagersten): the tail points at the last node; a
//! waiter spins on its predecessor's node and, on release, takes that node over as its
//! own. Nodes change hands, so a thread's current node lives in its `LocalState`.
//! FIFO. The predecessor's node is kept there too, or in the thread's node
//! (`predecessor = node`, Scott's and lockhammer's layout), on the line its successor
//! spins on.

use super::{LocalState, Lock, LockVisitor, Site};
use crate::env::{Addr, Env, LineAlloc};
use locklab_model::plan::ClhPredecessor;
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};

/// Node word 0: 1 while its owner holds or waits for the lock, 0 once released.
const BUSY: u8 = 0;
/// Node word 1, under `predecessor = node`: the node its owner waited on.
const PRED: u8 = 1;

/// `PRED_IN_NODE`: where a thread keeps its predecessor's node between acquire and
/// release, in its node (`predecessor = node`) or in its `LocalState` slot. A
/// parameter of the type, not a field, so that each layout compiles to its own code
/// (a run-time choice cost the thread layout 2–4 ns of its 7 ns loop natively).
#[derive(Debug)]
pub struct Clh<const PRED_IN_NODE: bool> {
    /// The line of the last node (initially the spare node, free; the arena's
    /// initial 0 reads as it). Nodes are named by their lines, never 0: every node
    /// line is allocated after a tail line.
    tail: Addr,
    /// `nthreads + 1` node lines, the last the spare.
    nodes: u32,
    nthreads: usize,
    /// This lock's slot in `LocalState`.
    id: usize,
}

/// CLH as the plan names it.
pub fn with_predecessor<V: LockVisitor>(predecessor: ClhPredecessor, v: V) -> V::Output {
    match predecessor {
        ClhPredecessor::Thread => v.visit(Clh::<false>::new),
        ClhPredecessor::Node => v.visit(Clh::<true>::new),
    }
}

impl<const PRED_IN_NODE: bool> Clh<PRED_IN_NODE> {
    pub fn new(alloc: &mut LineAlloc, site: Site) -> Self {
        Clh {
            tail: Addr::new(alloc.line(), 0),
            nodes: alloc.lines(site.nthreads as u32 + 1),
            nthreads: site.nthreads,
            id: site.id,
        }
    }

    /// Node `line`'s flag. Lines name nodes, so the flag's line is the value the tail
    /// held: no offset to add between the swap and the wait.
    fn node(line: u64) -> Addr {
        Addr::new(line as u32, BUSY)
    }

    fn spare(&self) -> u64 {
        (self.nodes + self.nthreads as u32) as u64
    }

    /// The tail starts at the spare node; the arena starts zeroed, so read 0 as it.
    /// A branch, not a select: a 0 is seen once per lock, and through a select the
    /// address of the flag to wait on would wait for the spare's loads, which
    /// natively cannot start before the exchange ends (one L1 hit more on the path
    /// from the exchange to the wait).
    #[inline(always)]
    fn tail_node(&self, raw: u64) -> u64 {
        if raw != 0 {
            raw
        } else {
            super::cold_path();
            self.spare()
        }
    }

    /// This thread's current node, thread t starting with node t.
    fn mine(&self, local: &mut LocalState) -> u64 {
        let tid = local.tid() as u32;
        let s = local.slot(self.id);
        if *s == 0 {
            *s = (self.nodes + tid) as u64;
        }
        *s
    }

    /// Under `predecessor = node`, right after the enqueue (as Scott's and
    /// lockhammer's), the word of this thread's node that keeps `pred`, the node it
    /// waits on: nobody else touches the node before its release.
    fn pred_word(me: u64) -> Addr {
        Addr::new(me as u32, PRED)
    }

    /// Under `predecessor = thread`, once the wait is over: `pred` into the thread's
    /// slot (low 32 bits its node, high 32 bits the predecessor's).
    fn keep_pred_in_slot(&self, local: &mut LocalState, me: u64, pred: u64) {
        if !PRED_IN_NODE {
            *local.slot(self.id) = me | (pred << 32);
        }
    }
}

impl<const PRED_IN_NODE: bool> Lock for Clh<PRED_IN_NODE> {
    async fn acquire<E: Env>(&self, env: &E, local: &mut LocalState) {
        let me = self.mine(local);
        env.store(Self::node(me), 1, Relaxed).await;
        // Release publishes BUSY = 1 before the node becomes visible as tail; Acquire
        // is not needed for the predecessor's node (we only read its flag, with
        // Acquire, below).
        let pred = self.tail_node(env.swap(self.tail, me, AcqRel).await);
        if PRED_IN_NODE {
            env.store(Self::pred_word(me), pred, Relaxed).await;
        }
        local.doorway(env, self.id);
        env.wait_until(Self::node(pred), Acquire, |v| v == 0).await;
        // Remember the predecessor's node: it becomes ours at release.
        self.keep_pred_in_slot(local, me, pred);
    }

    async fn release<E: Env>(&self, env: &E, local: &mut LocalState) {
        let s = *local.slot(self.id);
        let (me, pred) = if PRED_IN_NODE {
            // Read before the release: the successor then takes our node over and
            // writes its own predecessor into it.
            (s, env.load(Self::pred_word(s), Relaxed).await)
        } else {
            (s & 0xffff_ffff, s >> 32)
        };
        // Release: the successor's Acquire wait sees our critical section.
        env.store(Self::node(me), 0, Release).await;
        *local.slot(self.id) = pred;
    }

    /// Enqueue only if the tail node is free. If the tail changed between our reads,
    /// the CAS fails and we never enqueued. In the one ABA case (the tail left and came
    /// back to the same node, now busy again) we are enqueued and cannot leave a CLH
    /// queue: we wait our turn and still return true (holding). Rare, and correct.
    async fn try_acquire<E: Env>(&self, env: &E, local: &mut LocalState) -> bool {
        let me = self.mine(local) & 0xffff_ffff;
        let t = self.tail_node(env.load(self.tail, Relaxed).await);
        if env.load(Self::node(t), Relaxed).await != 0 {
            return false;
        }
        env.store(Self::node(me), 1, Relaxed).await;
        let raw = if t == self.spare() {
            // The arena's initial 0 and the explicit spare pointer mean the same.
            match env.cas(self.tail, 0, me, AcqRel).await {
                Ok(v) => Ok(v),
                Err(_) => env.cas(self.tail, t, me, AcqRel).await,
            }
        } else {
            env.cas(self.tail, t, me, AcqRel).await
        };
        if raw.is_err() {
            env.store(Self::node(me), 0, Relaxed).await;
            return false;
        }
        if PRED_IN_NODE {
            env.store(Self::pred_word(me), t, Relaxed).await;
        }
        env.wait_until(Self::node(t), Acquire, |v| v == 0).await;
        self.keep_pred_in_slot(local, me, t);
        true
    }

    /// Asked by the holder: the tail is another node once someone enqueued.
    async fn is_contended<E: Env>(&self, env: &E, local: &mut LocalState) -> bool {
        let me = *local.slot(self.id) & 0xffff_ffff;
        self.tail_node(env.load(self.tail, Relaxed).await) != me
    }
}
