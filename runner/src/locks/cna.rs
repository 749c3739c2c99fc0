//! Compact NUMA-aware lock (Dice & Kogan), as the Linux CNA patch series (v14/v15)
//! grafts it onto the qspinlock slow path: [`Cna`] is the slow path's [`Hooks`], called
//! by the qspinlock queue path where the kernel calls them (`cna_init_node`,
//! `cna_wait_head_or_lock`, `cna_try_clear_tail`, `cna_lock_handoff`).
//!
//! Common to both versions:
//! - The queue head, before it owns the lock, inspects its successor: if the successor
//!   runs on another node than the head's preferred node and has a successor of its
//!   own, it is spliced out of the main queue onto the tail of a secondary queue
//!   (`order_queue`).
//! - The secondary queue is circular and is handed from head to head in the MCS
//!   `locked` word: 1 = granted with an empty secondary queue, `ptr + 1` = granted and
//!   `ptr` is the secondary tail (whose NEXT points at the secondary head).
//! - `START` holds when the secondary queue was created (`now + 2`; 0 = none). A head
//!   whose secondary queue is older than the threshold asks for a flush instead of
//!   scanning; at hand-off the secondary queue is then spliced in front of the main
//!   queue.
//! - A head whose secondary queue is empty skips the scan with probability
//!   `shuffle_skip_prob` (the patch's shuffle reduction, 127/128).
//!
//! v14 (`<20210401153156.1165900-4-alex.kogan@oracle.com>`, as quoted in Peter
//! Zijlstra's review `<YHWAvjymlE5svU71@hirez.programming.kicks-ass.net>`):
//! - the head calls `order_queue` once, whether or not the lock is still busy;
//! - `order_queue` makes the waiter left behind the head (the remote successor's
//!   successor after a splice, or the successor itself) inherit the head's node at
//!   once, even with an empty secondary queue ("fake local");
//! - a head that saw no successor (`PARTIAL_ORDER` = not found) scans again in
//!   `lock_handoff`, holding the lock;
//! - the threshold is in jiffies (10 ms rounded up to whole jiffies, reached once
//!   `jiffies - (start + threshold) > 0`), the flush request in `PARTIAL_ORDER`.
//!
//! v15 (`<20210514200743.3026725-4-alex.kogan@oracle.com>`):
//! - the head repeats `order_queue` while the lock is busy, until its successor is on
//!   its node;
//! - no scan in `lock_handoff`; the node and `START` pass to the next waiter there,
//!   and only when the secondary queue is non-empty;
//! - the threshold is in ns (`local_clock()`), the flush request in `START` (1).
//!
//! Not modelled: priority waiters (5/6: a waiter in IRQ context, with IRQs off or
//! real-time is never moved to the secondary queue); every modelled waiter is a task
//! with IRQs on.
//!
//! Every step is a real `Env` operation on the waiters' node lines: the cost of
//! re-sorting the queue after a flush is what the simulator charges for it.

use super::qspinlock::{
    encode_tail, Hooks, Qspinlock, LOCKED, LOCKED_PENDING_MASK, MCS_LOCKED, NEXT, NODE_WORDS,
};
use crate::env::Env;
use locklab_model::plan::{CnaParams, CnaVariant};
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};

/// Node words after the MCS ones: the waiter's preferred node (its own, or the one it
/// inherited) ...
const NUMA: u8 = NODE_WORDS;
/// ... when its secondary queue was created (see the module docs) ...
const START: u8 = NODE_WORDS + 1;
/// ... and (v14) what its scan found: [`LOCAL_WAITER_FOUND`], [`LOCAL_WAITER_NOT_FOUND`]
/// or [`FLUSH_REQUESTED`].
const PARTIAL_ORDER: u8 = NODE_WORDS + 2;

const START_NONE: u64 = 0;
/// v15's flush request, stored in `START`.
const FLUSH_SECONDARY_QUEUE: u64 = 1;

/// v14's `partial_order` values (`LOCAL_WAITER_FOUND` is also the initial one).
const LOCAL_WAITER_FOUND: u64 = 0;
const LOCAL_WAITER_NOT_FOUND: u64 = 1;
const FLUSH_REQUESTED: u64 = 2;

/// v14's clock: `jiffies` at HZ = 1000 (an assumption: the series does not say which
/// HZ the X5-4's kernel had; 1000 is the common server setting).
const JIFFY_NS: u64 = 1_000_000;

#[derive(Debug, Clone)]
pub struct Cna {
    threshold_ns: u64,
    variant: CnaVariant,
    /// Skip the scan when `random() < skip_below` (u64 scale of the probability).
    skip_below: u64,
}

fn sec_encode(ptr: u64) -> u64 {
    ptr + 1
}

fn sec_decode(locked: u64) -> u64 {
    locked - 1
}

impl Cna {
    pub fn new(p: &CnaParams) -> Self {
        let prob = p.shuffle_skip_prob.clamp(0.0, 1.0);
        Cna {
            threshold_ns: p.threshold_ns,
            variant: p.variant,
            skip_below: if prob >= 1.0 {
                u64::MAX
            } else {
                (prob * u64::MAX as f64) as u64
            },
        }
    }

    /// `probably()`: true with the shuffle-reduction probability.
    fn skip<E: Env>(&self, env: &E) -> bool {
        self.skip_below != 0 && env.random() < self.skip_below
    }

    /// `intra_node_threshold_reached`: `start` is stored as creation time + 2.
    fn threshold_reached<E: Env>(&self, env: &E, start: u64) -> bool {
        let created = start - 2;
        match self.variant {
            // local_clock() > start_time + threshold
            CnaVariant::V15 => env.now() > created.saturating_add(self.threshold_ns),
            // jiffies - (start_time + MSECS_TO_JIFFIES(threshold)) > 0
            CnaVariant::V14 => {
                let threshold = self.threshold_ns.div_ceil(JIFFY_NS);
                env.now() / JIFFY_NS > created / JIFFY_NS + threshold
            }
        }
    }

    async fn lock_busy<E: Env>(&self, q: &Qspinlock<Self>, env: &E) -> bool {
        env.load(q.lock, Relaxed).await & LOCKED_PENDING_MASK != 0
    }

    /// v15's `cna_order_queue`: true if the successor is on our preferred node
    /// (nothing to do); otherwise moves the successor to the secondary queue when it
    /// has a successor of its own, and returns false.
    async fn order_queue_v15<E: Env>(&self, q: &Qspinlock<Self>, env: &E, me: u64) -> bool {
        // Acquire: we read the successor's node words, written before it linked.
        let next = env.load(q.node(me, NEXT), Acquire).await;
        if next == 0 {
            return false;
        }
        let ours = env.load(q.node(me, NUMA), Relaxed).await;
        if env.load(q.node(next, NUMA), Relaxed).await == ours {
            return true;
        }
        let nnext = env.load(q.node(next, NEXT), Acquire).await;
        if nnext != 0 {
            self.splice_next(q, env, me, next, nnext).await;
        }
        false
    }

    /// v14's `cna_order_queue`: no successor yet: remember it (`lock_handoff` scans
    /// again). A successor on another node is moved to the secondary queue when it
    /// has a successor of its own; either way the waiter now behind us takes our node.
    async fn order_queue_v14<E: Env>(&self, q: &Qspinlock<Self>, env: &E, me: u64) {
        let mut next = env.load(q.node(me, NEXT), Acquire).await;
        if next == 0 {
            env.store(q.node(me, PARTIAL_ORDER), LOCAL_WAITER_NOT_FOUND, Relaxed)
                .await;
            return;
        }
        let ours = env.load(q.node(me, NUMA), Relaxed).await;
        if env.load(q.node(next, NUMA), Relaxed).await == ours {
            return;
        }
        let nnext = env.load(q.node(next, NEXT), Acquire).await;
        if nnext != 0 {
            self.splice_next(q, env, me, next, nnext).await;
            next = nnext;
        }
        // "Inherit NUMA node id of primary queue, to maintain the preference even if
        // the next-next waiter is on a different NUMA-node."
        env.store(q.node(next, NUMA), ours, Relaxed).await;
    }

    /// `cna_splice_next`: unlink `next` (whose successor is `nnext`) from the main
    /// queue and append it to our secondary queue. Only the head touches the
    /// secondary queue's nodes, and their waiters only watch their MCS_LOCKED words,
    /// so relaxed writes suffice; the whole queue is published by the hand-off.
    async fn splice_next<E: Env>(
        &self,
        q: &Qspinlock<Self>,
        env: &E,
        me: u64,
        next: u64,
        nnext: u64,
    ) {
        env.store(q.node(me, NEXT), nnext, Relaxed).await;
        let locked = env.load(q.node(me, MCS_LOCKED), Relaxed).await;
        if locked <= 1 {
            // Create the secondary queue: a one-element cycle, started now.
            env.store(q.node(next, NEXT), next, Relaxed).await;
            env.store(q.node(me, START), env.now() + 2, Relaxed).await;
        } else {
            let tail2 = sec_decode(locked);
            let head2 = env.load(q.node(tail2, NEXT), Relaxed).await;
            env.store(q.node(next, NEXT), head2, Relaxed).await;
            env.store(q.node(tail2, NEXT), next, Relaxed).await;
        }
        env.store(q.node(me, MCS_LOCKED), sec_encode(next), Relaxed)
            .await;
    }

    /// `cna_splice_head`: put the secondary queue in front of `next`. With `next == 0`
    /// (main queue empty) the secondary tail becomes the lock's tail, claimed with the
    /// lock in one CAS from `val`; returns 0 if that CAS fails (someone enqueued).
    /// Returns the new main-queue head otherwise.
    async fn splice_head<E: Env>(
        &self,
        q: &Qspinlock<Self>,
        env: &E,
        me: u64,
        val: u64,
        next: u64,
    ) -> u64 {
        let locked = env.load(q.node(me, MCS_LOCKED), Relaxed).await;
        let tail2 = sec_decode(locked);
        let head2 = env.load(q.node(tail2, NEXT), Relaxed).await;
        if next != 0 {
            env.store(q.node(tail2, NEXT), next, Relaxed).await;
        } else {
            // Break the cycle: the secondary tail becomes the primary tail.
            env.store(q.node(tail2, NEXT), 0, Relaxed).await;
            // Release: whoever enqueues behind tail2 sees its NEXT = 0 first.
            let new = encode_tail(tail2) | LOCKED;
            if env.cas(q.lock, val, new, Release).await.is_err() {
                env.store(q.node(tail2, NEXT), head2, Relaxed).await;
                return 0;
            }
        }
        head2
    }

    /// v14's `cna_wait_head_or_lock`: one scan (or a flush request).
    async fn wait_head_v14<E: Env>(&self, q: &Qspinlock<Self>, env: &E, me: u64) {
        let locked = env.load(q.node(me, MCS_LOCKED), Relaxed).await;
        if locked <= 1 && self.skip(env) {
            return;
        }
        let start = env.load(q.node(me, START), Relaxed).await;
        if start == START_NONE || !self.threshold_reached(env, start) {
            self.order_queue_v14(q, env, me).await;
        } else {
            env.store(q.node(me, PARTIAL_ORDER), FLUSH_REQUESTED, Relaxed)
                .await;
        }
    }

    /// v15's `cna_wait_head_or_lock`: scan while the lock is busy (or request a flush).
    async fn wait_head_v15<E: Env>(&self, q: &Qspinlock<Self>, env: &E, me: u64) {
        let locked = env.load(q.node(me, MCS_LOCKED), Relaxed).await;
        if locked <= 1 && self.skip(env) {
            return;
        }
        let start = env.load(q.node(me, START), Relaxed).await;
        if start == START_NONE || !self.threshold_reached(env, start) {
            while self.lock_busy(q, env).await && !self.order_queue_v15(q, env, me).await {
                env.pause().await;
            }
        } else {
            env.store(q.node(me, START), FLUSH_SECONDARY_QUEUE, Relaxed)
                .await;
        }
    }

    /// v14's `cna_lock_handoff`: scan again if the first scan saw no successor; pass
    /// the secondary queue and its age on, or flush it in front of `next`.
    async fn lock_handoff_v14<E: Env>(&self, q: &Qspinlock<Self>, env: &E, me: u64, next: u64) {
        let partial_order = env.load(q.node(me, PARTIAL_ORDER), Relaxed).await;
        if partial_order == LOCAL_WAITER_NOT_FOUND {
            self.order_queue_v14(q, env, me).await;
        }
        let locked = env.load(q.node(me, MCS_LOCKED), Relaxed).await;
        let (next, val) = if partial_order != FLUSH_REQUESTED || locked <= 1 {
            // Reload: order_queue may have changed our successor.
            let next = env.load(q.node(me, NEXT), Relaxed).await;
            if locked > 1 {
                let start = env.load(q.node(me, START), Relaxed).await;
                env.store(q.node(next, START), start, Relaxed).await;
            }
            (next, locked.max(1))
        } else {
            (self.splice_head(q, env, me, 0, next).await, 1)
        };
        // arch_mcs_lock_handoff. Release: the relaxed node writes above (and the
        // secondary queue handed over in `val`) are visible to the new head.
        env.store(q.node(next, MCS_LOCKED), val, Release).await;
    }

    /// v15's `cna_lock_handoff`: pass the secondary queue, the preferred node and the
    /// queue's age on, or flush the secondary queue in front of `next`.
    async fn lock_handoff_v15<E: Env>(&self, q: &Qspinlock<Self>, env: &E, me: u64, mut next: u64) {
        let start = env.load(q.node(me, START), Relaxed).await;
        let locked = env.load(q.node(me, MCS_LOCKED), Relaxed).await;
        let mut val = 1;
        if locked > 1 {
            if start != FLUSH_SECONDARY_QUEUE {
                val = locked;
                // Reload: order_queue may have changed our successor.
                next = env.load(q.node(me, NEXT), Relaxed).await;
                let numa = env.load(q.node(me, NUMA), Relaxed).await;
                env.store(q.node(next, NUMA), numa, Relaxed).await;
                env.store(q.node(next, START), start, Relaxed).await;
            } else {
                next = self.splice_head(q, env, me, 0, next).await;
            }
        }
        env.store(q.node(next, MCS_LOCKED), val, Release).await;
    }
}

impl Hooks for Cna {
    /// `cna_init_node`: our node, our start time unset (v14: and nothing found yet).
    async fn init_node<E: Env>(&self, q: &Qspinlock<Self>, env: &E, me: u64) {
        env.store(q.node(me, NUMA), env.node() as u64, Relaxed)
            .await;
        if self.variant == CnaVariant::V14 {
            env.store(q.node(me, PARTIAL_ORDER), LOCAL_WAITER_FOUND, Relaxed)
                .await;
        }
        env.store(q.node(me, START), START_NONE, Relaxed).await;
    }

    /// `cna_wait_head_or_lock`: called by the new queue head before it waits for the
    /// owner.
    async fn wait_head_or_lock<E: Env>(&self, q: &Qspinlock<Self>, env: &E, me: u64) {
        match self.variant {
            CnaVariant::V14 => self.wait_head_v14(q, env, me).await,
            CnaVariant::V15 => self.wait_head_v15(q, env, me).await,
        }
    }

    /// `cna_try_clear_tail`: we are the last in the main queue. With parked waiters,
    /// move them back and let them rip; otherwise do what MCS does.
    async fn try_clear_tail<E: Env>(
        &self,
        q: &Qspinlock<Self>,
        env: &E,
        val: u64,
        me: u64,
    ) -> bool {
        let locked = env.load(q.node(me, MCS_LOCKED), Relaxed).await;
        if locked > 1 {
            let head = self.splice_head(q, env, me, val, 0).await;
            if head != 0 {
                env.store(q.node(head, MCS_LOCKED), 1, Release).await;
                return true;
            }
            return false;
        }
        env.cas(q.lock, val, LOCKED, Relaxed).await.is_ok()
    }

    /// `cna_lock_handoff`: pass the lock to the next waiter.
    async fn lock_handoff<E: Env>(&self, q: &Qspinlock<Self>, env: &E, me: u64, next: u64) {
        match self.variant {
            CnaVariant::V14 => self.lock_handoff_v14(q, env, me, next).await,
            CnaVariant::V15 => self.lock_handoff_v15(q, env, me, next).await,
        }
    }

    /// Windows of 100 thresholds (thread 004): the horizon over which the
    /// starvation bound is meant to even things out.
    fn fairness_window_ns(&self) -> u64 {
        self.threshold_ns.saturating_mul(100)
    }
}
