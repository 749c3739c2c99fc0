//! Compact NUMA-aware lock (Dice & Kogan), as the Linux CNA patch series (v14/v15)
//! grafts it onto the qspinlock slow path: [`Cna`] is the slow path's [`Hooks`], called
//! by the qspinlock queue path where the kernel calls them (`cna_init_node`,
//! `cna_wait_head_or_lock`, `cna_try_clear_tail`, `cna_lock_handoff`).
//!
//! - The queue head, before it owns the lock, inspects its successor: if the successor
//!   runs on another node than the head's preferred node and has a successor of its
//!   own, it is spliced out of the main queue onto the tail of a secondary queue
//!   (`order_queue`). v14 does one inspection per head; v15 keeps inspecting while the
//!   lock stays busy (`cna_wait_head_or_lock`'s loop).
//! - The secondary queue is circular and is handed from head to head in the MCS
//!   `locked` word: 1 = granted with an empty secondary queue, `ptr + 1` = granted and
//!   `ptr` is the secondary tail (whose NEXT points at the secondary head).
//! - `START` holds when the secondary queue was created (`now + 2`; 0 = none, 1 =
//!   flush requested). A head whose secondary queue is older than the threshold asks
//!   for a flush instead of scanning; at hand-off the secondary queue is then spliced
//!   in front of the main queue.
//! - A head whose secondary queue is empty skips the scan with probability
//!   `shuffle_skip_prob` (the patch's shuffle reduction, 127/128).
//! - A waiter handed the lock while the secondary queue is non-empty inherits the
//!   preferred node (`NUMA`) and the queue's `START`.
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
/// inherited with the secondary queue) ...
const NUMA: u8 = NODE_WORDS;
/// ... and when its secondary queue was created (see the module docs).
const START: u8 = NODE_WORDS + 1;

const START_NONE: u64 = 0;
const FLUSH_SECONDARY_QUEUE: u64 = 1;

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

    fn threshold_reached<E: Env>(&self, env: &E, start: u64) -> bool {
        // START is stored as now + 2 (0 and 1 are markers).
        env.now() + 2 > start.saturating_add(self.threshold_ns)
    }

    async fn lock_busy<E: Env>(&self, q: &Qspinlock<Self>, env: &E) -> bool {
        env.load(q.lock, Relaxed).await & LOCKED_PENDING_MASK != 0
    }

    /// `cna_order_queue`: true if the successor is on our preferred node (nothing to
    /// do); otherwise moves the successor to the secondary queue when it has a
    /// successor of its own, and returns false.
    async fn order_queue<E: Env>(&self, q: &Qspinlock<Self>, env: &E, me: u64) -> bool {
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
}

impl Hooks for Cna {
    /// `cna_init_node`: our node, our start time unset.
    async fn init_node<E: Env>(&self, q: &Qspinlock<Self>, env: &E, me: u64) {
        env.store(q.node(me, NUMA), env.node() as u64, Relaxed)
            .await;
        env.store(q.node(me, START), START_NONE, Relaxed).await;
    }

    /// `cna_wait_head_or_lock`: called by the new queue head before it waits for the
    /// owner. Scans (v14: once; v15: while the lock is busy) or requests a flush.
    async fn wait_head_or_lock<E: Env>(&self, q: &Qspinlock<Self>, env: &E, me: u64) {
        let locked = env.load(q.node(me, MCS_LOCKED), Relaxed).await;
        if locked <= 1 && self.skip(env) {
            return;
        }
        let start = env.load(q.node(me, START), Relaxed).await;
        if start == START_NONE || !self.threshold_reached(env, start) {
            match self.variant {
                CnaVariant::V14 => {
                    if self.lock_busy(q, env).await {
                        self.order_queue(q, env, me).await;
                    }
                }
                CnaVariant::V15 => {
                    while self.lock_busy(q, env).await && !self.order_queue(q, env, me).await {
                        env.pause().await;
                    }
                }
            }
        } else {
            env.store(q.node(me, START), FLUSH_SECONDARY_QUEUE, Relaxed)
                .await;
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

    /// `cna_lock_handoff`: pass the lock (and the secondary queue, the preferred node
    /// and its age) to the next waiter, or flush the secondary queue in front of it.
    async fn lock_handoff<E: Env>(&self, q: &Qspinlock<Self>, env: &E, me: u64, mut next: u64) {
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
        // arch_mcs_lock_handoff. Release: the relaxed node writes above (and the
        // secondary queue handed over in `val`) are visible to the new head.
        env.store(q.node(next, MCS_LOCKED), val, Release).await;
    }

    /// Windows of 100 thresholds (thread 004): the horizon over which the
    /// starvation bound is meant to even things out.
    fn fairness_window_ns(&self) -> u64 {
        self.threshold_ns.saturating_mul(100)
    }
}
