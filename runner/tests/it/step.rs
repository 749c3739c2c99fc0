//! A deterministic cooperative executor for behaviour tests: every thread is a future
//! over `StepEnv`, all on one OS thread; each memory operation is a scheduling point,
//! and the scheduler picks the next thread round-robin or from a seeded generator.
//! No timing is involved, so assertions on interleavings (mutual exclusion, FIFO
//! bypass, hand-off order) are reproducible. `now()` is the global step count.

use locklab_runner::env::{Addr, Env, Grant, Handoff, Holder, Word};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll, Waker};

#[derive(Clone, Copy, Debug)]
pub enum Sched {
    RoundRobin,
    Random(u64),
}

pub struct World {
    mem: RefCell<HashMap<Addr, Word>>,
    steps: Cell<u64>,
    grants: RefCell<Vec<(u64, Option<Holder>)>>,
    pub nodes: Vec<u32>,
}

impl World {
    pub fn new(nodes: Vec<u32>, nlocks: usize) -> Self {
        World {
            mem: RefCell::new(HashMap::new()),
            steps: Cell::new(0),
            grants: RefCell::new(vec![(0, None); nlocks.max(1)]),
            nodes,
        }
    }

    pub fn peek(&self, a: Addr) -> Word {
        *self.mem.borrow().get(&a).unwrap_or(&0)
    }

    /// Grants of `lock` so far.
    pub fn grants(&self, lock: usize) -> u64 {
        self.grants.borrow()[lock].0
    }
}

pub struct StepEnv<'w> {
    w: &'w World,
    tid: usize,
    rng: Cell<u64>,
}

impl<'w> StepEnv<'w> {
    pub fn new(w: &'w World, tid: usize) -> Self {
        StepEnv {
            w,
            tid,
            rng: Cell::new(0x1234_5678 ^ tid as u64),
        }
    }

    async fn op<T>(&self, f: impl FnOnce(&mut HashMap<Addr, Word>) -> T) -> T {
        YieldOnce(false).await;
        self.w.steps.set(self.w.steps.get() + 1);
        f(&mut self.w.mem.borrow_mut())
    }
}

/// Pending once, then ready: the scheduling point before each operation.
struct YieldOnce(bool);

impl Future for YieldOnce {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            Poll::Ready(())
        } else {
            self.0 = true;
            Poll::Pending
        }
    }
}

fn xorshift(s: &Cell<u64>) -> u64 {
    let mut x = s.get().max(1);
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    s.set(x);
    x
}

impl Env for StepEnv<'_> {
    fn tid(&self) -> usize {
        self.tid
    }
    fn nthreads(&self) -> usize {
        self.w.nodes.len()
    }
    fn node(&self) -> u32 {
        self.w.nodes[self.tid]
    }
    fn now(&self) -> u64 {
        self.w.steps.get()
    }
    fn random(&self) -> u64 {
        xorshift(&self.rng)
    }
    async fn load(&self, a: Addr, _o: Ordering) -> Word {
        self.op(|m| *m.get(&a).unwrap_or(&0)).await
    }
    async fn store(&self, a: Addr, v: Word, _o: Ordering) {
        self.op(|m| {
            m.insert(a, v);
        })
        .await
    }
    async fn swap(&self, a: Addr, v: Word, _o: Ordering) -> Word {
        self.op(|m| m.insert(a, v).unwrap_or(0)).await
    }
    async fn cas(&self, a: Addr, old: Word, new: Word, _o: Ordering) -> Result<Word, Word> {
        self.op(|m| {
            let cur = *m.get(&a).unwrap_or(&0);
            if cur == old {
                m.insert(a, new);
                Ok(cur)
            } else {
                Err(cur)
            }
        })
        .await
    }
    async fn fetch_add(&self, a: Addr, v: Word, _o: Ordering) -> Word {
        self.op(|m| {
            let cur = *m.get(&a).unwrap_or(&0);
            m.insert(a, cur.wrapping_add(v));
            cur
        })
        .await
    }
    async fn fetch_or(&self, a: Addr, v: Word, _o: Ordering) -> Word {
        self.op(|m| {
            let cur = *m.get(&a).unwrap_or(&0);
            m.insert(a, cur | v);
            cur
        })
        .await
    }
    async fn fetch_and(&self, a: Addr, v: Word, _o: Ordering) -> Word {
        self.op(|m| {
            let cur = *m.get(&a).unwrap_or(&0);
            m.insert(a, cur & v);
            cur
        })
        .await
    }
    async fn wait_until<P: Fn(Word) -> bool>(&self, a: Addr, o: Ordering, pred: P) -> Word {
        loop {
            let v = self.load(a, o).await;
            if pred(v) {
                return v;
            }
        }
    }
    async fn work(&self, ns: u64) {
        // One scheduling point per 10 "ns", at least one.
        for _ in 0..(ns / 10).max(1) {
            self.op(|_| ()).await;
        }
    }
    async fn pause(&self) {
        self.op(|_| ()).await;
    }
    /// Nothing to schedule: the next attempt is itself a scheduling point.
    async fn retry(&self) {}
    fn grants(&self, lock: usize) -> u64 {
        self.w.grants.borrow()[lock].0
    }
    fn note_grant(&self, lock: usize) -> Grant {
        let mut g = self.w.grants.borrow_mut();
        let (n, last) = g[lock];
        g[lock] = (n + 1, Some((self.tid, self.node())));
        Grant {
            before: n,
            from: Handoff::after(self.tid, last),
        }
    }
}

/// Run the threads' futures to completion under `sched`; panics after `max_steps`
/// polls (a livelock or deadlock).
pub fn run_all<'a>(
    mut futs: Vec<Pin<Box<dyn Future<Output = ()> + 'a>>>,
    sched: Sched,
    max_steps: u64,
) {
    let mut cx = Context::from_waker(Waker::noop());
    let mut live: Vec<usize> = (0..futs.len()).collect();
    let rng = Cell::new(match sched {
        Sched::Random(s) => s | 1,
        Sched::RoundRobin => 1,
    });
    let mut rr = 0usize;
    let mut polls = 0u64;
    while !live.is_empty() {
        polls += 1;
        assert!(polls < max_steps, "no progress after {max_steps} steps");
        let k = match sched {
            Sched::RoundRobin => {
                rr %= live.len();
                let k = rr;
                rr += 1;
                k
            }
            Sched::Random(_) => (xorshift(&rng) % live.len() as u64) as usize,
        };
        let t = live[k];
        if futs[t].as_mut().poll(&mut cx).is_ready() {
            live.remove(k);
        }
    }
}
