//! Linux's queued spinlock, following `kernel/locking/qspinlock.c`: one lock word with
//! a locked byte, a pending bit and an MCS tail; a fast-path cmpxchg, a pending path for
//! the first contender (spinning on the lock word, no queue node), and a queue path of
//! per-thread MCS nodes whose head waits for locked and pending to clear.
//!
//! The queue path calls [`Hooks`] where the kernel calls its `pv_*` / `cna_*` hooks
//! (`pv_init_node`, `pv_wait_head_or_lock`, `try_clear_tail`, `mcs_lock_handoff`):
//! [`Stock`] is the plain MCS queue (the hooks' defaults); another slow path is this
//! one with its own hooks and node words after `NODE_WORDS`, as the kernel swaps its
//! slow path at boot.
//!
//! The kernel's sub-word accesses (NR_CPUS < 16K, so `_Q_PENDING_BITS == 8`) are
//! masked `Env` operations on the lock word: `xchg_tail` (a 16-bit `xchg` of the tail)
//! is `swap_masked`, and the byte / half-word stores (release, `set_locked`,
//! `clear_pending_set_locked`, `clear_pending`) are `store_masked`. The simulator
//! prices each as the one RMW or one store the kernel issues. Natively the stores are
//! the kernel's plain byte or 16-bit `mov` on x86_64 (`NativeEnv::store_masked`, in
//! inline assembly, as Rust has no mixed-size atomics on one location) and a CAS loop
//! (or a `fetch_and` where the store only clears bits) elsewhere; `xchg_tail` is a
//! CAS loop everywhere (see `Env::swap_masked`).
//!
//! The pending hand-over wait (`_Q_PENDING_LOOPS`): by default x86's `1 << 9`, which
//! is waited out as a wait for the value to change rather than by counting 512 reads
//! (the hand-over is one store, done long before); with `pending_loops = n` (the
//! generic value is 1) it is the kernel's `atomic_cond_read_relaxed` loop as written,
//! one read, then at most `n` more with a pause before each, then the queue.
//!
//! A thread has one node per lock (the kernel has four per CPU for nesting contexts).

use super::{out_of_line, LocalState, Lock, Site};
use crate::env::{Addr, Env, LineAlloc};
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};

pub(crate) const LOCKED: u64 = 1;
pub(crate) const LOCKED_MASK: u64 = 0xff;
pub(crate) const PENDING: u64 = 1 << 8;
pub(crate) const PENDING_MASK: u64 = 0xff00;
pub(crate) const LOCKED_PENDING_MASK: u64 = 0xffff;
pub(crate) const TAIL_SHIFT: u32 = 16;
pub(crate) const TAIL_MASK: u64 = !0xffff;

/// Node words of the MCS queue; hooks may use the words from [`NODE_WORDS`] on.
pub(crate) const NEXT: u8 = 0;
/// 0 while waiting; set non-zero by the predecessor at hand-off (1 by [`Stock`];
/// hooks may hand over other non-zero values).
pub(crate) const MCS_LOCKED: u8 = 1;
/// The first node word free for the hooks.
pub(crate) const NODE_WORDS: u8 = 2;

pub(crate) fn encode_tail(ptr: u64) -> u64 {
    ptr << TAIL_SHIFT
}

pub(crate) fn decode_tail(val: u64) -> u64 {
    val >> TAIL_SHIFT
}

/// The hooks of the queue path. `me` is the calling thread's node pointer (tid + 1).
/// The defaults are the stock MCS queue.
#[allow(async_fn_in_trait)] // used with concrete, single-threaded futures only
pub trait Hooks: Sized + Send + Sync + 'static {
    /// `pv_init_node`: after our node's NEXT and MCS_LOCKED are cleared, before it is
    /// published as the tail.
    async fn init_node<E: Env>(&self, _q: &Qspinlock<Self>, _env: &E, _me: u64) {}

    /// `pv_wait_head_or_lock`: we just became the queue head; called before we wait
    /// for the owner and the pending waiter to go.
    async fn wait_head_or_lock<E: Env>(&self, _q: &Qspinlock<Self>, _env: &E, _me: u64) {}

    /// `try_clear_tail`: we are the head and the last in the queue; claim the lock and
    /// empty the queue in one step from `val` (n,0,0 -> 0,0,1). False if someone
    /// enqueued meanwhile.
    async fn try_clear_tail<E: Env>(
        &self,
        q: &Qspinlock<Self>,
        env: &E,
        val: u64,
        _me: u64,
    ) -> bool {
        env.cas(q.lock, val, LOCKED, Relaxed).await.is_ok()
    }

    /// `mcs_lock_handoff`: we hold the lock; make `next` the queue head.
    async fn lock_handoff<E: Env>(&self, q: &Qspinlock<Self>, env: &E, _me: u64, next: u64) {
        // arch_mcs_lock_handoff. The data hand-off goes through the lock word (the
        // new head's Acquire wait for the owner); Release here only orders our reads
        // of the queue before the successor starts rewriting it.
        env.store(q.node(next, MCS_LOCKED), 1, Release).await;
    }

    /// What `Lock::fairness_window_ns` answers for a lock with these hooks.
    fn fairness_window_ns(&self) -> u64 {
        0
    }
}

/// The stock queue path: MCS, no hooks.
#[derive(Debug, Clone, Copy, Default)]
pub struct Stock;

impl Hooks for Stock {}

#[derive(Debug)]
pub struct Qspinlock<H> {
    pub(crate) lock: Addr,
    nodes: u32,
    hooks: H,
    /// `_Q_PENDING_LOOPS` when counted; `None`: x86's, waited out (module doc).
    pending_loops: Option<u32>,
}

impl<H: Hooks> Qspinlock<H> {
    pub fn new(alloc: &mut LineAlloc, site: Site, hooks: H) -> Self {
        Qspinlock {
            lock: Addr::new(alloc.line(), 0),
            nodes: alloc.lines(site.nthreads as u32),
            hooks,
            pending_loops: None,
        }
    }

    /// The lock with `_Q_PENDING_LOOPS` counted (`Some`) or x86's (`None`).
    pub fn with_pending_loops(self, pending_loops: Option<u32>) -> Self {
        Qspinlock {
            pending_loops,
            ..self
        }
    }

    /// Word `w` of the node of thread `ptr - 1`.
    pub(crate) fn node(&self, ptr: u64, w: u8) -> Addr {
        Addr::new(self.nodes + (ptr - 1) as u32, w)
    }

    /// `queued_spin_trylock`.
    async fn trylock<E: Env>(&self, env: &E) -> bool {
        let val = env.load(self.lock, Relaxed).await;
        if val != 0 {
            return false;
        }
        env.cas(self.lock, 0, LOCKED, Acquire).await.is_ok()
    }

    async fn slowpath<E: Env>(&self, env: &E, mut val: u64) {
        // Wait for an in-progress pending -> locked hand-over (0,1,0 -> 0,0,1).
        if val == PENDING {
            val = match self.pending_loops {
                None => env.wait_until(self.lock, Relaxed, |v| v != PENDING).await,
                // atomic_cond_read_relaxed(&lock->val, VAL != _Q_PENDING_VAL || !cnt--)
                Some(loops) => {
                    let mut v = env.load(self.lock, Relaxed).await;
                    for _ in 0..loops {
                        if v != PENDING {
                            break;
                        }
                        env.pause().await;
                        v = env.load(self.lock, Relaxed).await;
                    }
                    v
                }
            };
        }
        // Anything besides the locked byte (pending or a queue): queue.
        if val & !LOCKED_MASK == 0 {
            // trylock || pending: 0,0,* -> 0,1,*
            val = env.fetch_or(self.lock, PENDING, Acquire).await;
            if val & !LOCKED_MASK == 0 {
                // We own the pending bit; wait for the owner to go (Acquire: its
                // critical section happens before ours).
                if val & LOCKED_MASK != 0 {
                    env.wait_until(self.lock, Acquire, |v| v & LOCKED_MASK == 0)
                        .await;
                }
                // clear_pending_set_locked: *,1,0 -> *,0,1, the kernel's 16-bit
                // WRITE_ONCE(lock->locked_pending, _Q_LOCKED_VAL).
                env.store_masked(self.lock, LOCKED_PENDING_MASK, LOCKED, Relaxed)
                    .await;
                return;
            }
            // Contention appeared: undo our pending bit unless someone else owned it.
            // clear_pending: WRITE_ONCE(lock->pending, 0).
            if val & PENDING == 0 {
                env.store_masked(self.lock, PENDING_MASK, 0, Relaxed).await;
            }
        }
        self.queue(env).await;
    }

    async fn queue<E: Env>(&self, env: &E) {
        let me = env.tid() as u64 + 1;
        let tail = encode_tail(me);
        env.store(self.node(me, MCS_LOCKED), 0, Relaxed).await;
        env.store(self.node(me, NEXT), 0, Relaxed).await;
        self.hooks.init_node(self, env, me).await;
        // "We touched a (possibly) cold cacheline in the per-cpu queue node; attempt
        // the trylock once more in the hope someone let go while we weren't watching."
        if self.trylock(env).await {
            return;
        }
        // xchg_tail: a 16-bit xchg of the tail, leaving locked and pending alone.
        // Release: our node's initialisation is published with the tail (the kernel's
        // smp_wmb); Acquire: we read the predecessor's node below.
        let old = env.swap_masked(self.lock, TAIL_MASK, tail, AcqRel).await;
        let mut next = 0;
        if old & TAIL_MASK != 0 {
            let prev = decode_tail(old);
            // Release pairs with the predecessor's Acquire read of its NEXT.
            env.store(self.node(prev, NEXT), me, Release).await;
            // arch_mcs_spin_lock_contended: wait for the hand-off.
            env.wait_until(self.node(me, MCS_LOCKED), Acquire, |v| v != 0)
                .await;
            // Acquire: we will write the successor's node.
            next = env.load(self.node(me, NEXT), Acquire).await;
        }

        // We are the queue head.
        self.hooks.wait_head_or_lock(self, env, me).await;
        // Wait for the owner and any pending waiter to go (Acquire: the last owner's
        // critical section happens before ours).
        let val = env
            .wait_until(self.lock, Acquire, |v| v & LOCKED_PENDING_MASK == 0)
            .await;

        // Claim the lock. If we are the last in the queue (tail == us), n,0,0 -> 0,0,1
        // both claims the lock and empties the queue. Pending cannot be set now (it is
        // only set while the tail is empty), so a concurrent enqueue makes this fail.
        if val & TAIL_MASK == tail && self.hooks.try_clear_tail(self, env, val, me).await {
            return;
        }
        // Someone queued behind us: only set the locked byte (set_locked, a byte
        // store; pending is clear and stays clear while the queue is non-empty).
        env.store_masked(self.lock, LOCKED_MASK, LOCKED, Relaxed)
            .await;
        if next == 0 {
            next = env
                .wait_until(self.node(me, NEXT), Acquire, |v| v != 0)
                .await;
        }
        self.hooks.lock_handoff(self, env, me, next).await;
    }
}

impl<H: Hooks> Lock for Qspinlock<H> {
    async fn acquire<E: Env>(&self, env: &E, _: &mut LocalState) {
        // Fast path: 0,0,0 -> 0,0,1; the slow path out of line, as in the kernel.
        match env.cas(self.lock, 0, LOCKED, Acquire).await {
            Ok(_) => {}
            Err(val) => out_of_line(self.slowpath(env, val)).await,
        }
    }

    async fn release<E: Env>(&self, env: &E, _: &mut LocalState) {
        // smp_store_release(&lock->locked, 0): a byte store.
        env.store_masked(self.lock, LOCKED_MASK, 0, Release).await;
    }

    async fn try_acquire<E: Env>(&self, env: &E, _: &mut LocalState) -> bool {
        self.trylock(env).await
    }

    /// `queued_spin_is_contended`: anything besides the locked byte.
    async fn is_contended<E: Env>(&self, env: &E, _: &mut LocalState) -> bool {
        env.load(self.lock, Relaxed).await & !LOCKED_MASK != 0
    }

    fn fairness_window_ns(&self) -> u64 {
        self.hooks.fairness_window_ns()
    }
}
