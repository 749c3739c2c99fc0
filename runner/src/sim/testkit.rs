//! Small private locks and a single-lock loop over `Env`, to check the engine against
//! hand-computed costs independently of the shared lock code.

use super::engine::Machine;
use crate::env::{Addr, Env, LineAlloc};
use crate::rng::mix;
use crate::stats::{ThreadStats, Window};
use locklab_model::plan::{Costs, Machine as Spec, Placement, PlacementKind};
use locklab_model::time::Ns;
use locklab_model::topology::{place, CpuMap, ThreadSlot};
use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};

pub fn spec(
    sockets: u32,
    cores: u32,
    smt: u32,
    smt_ns: u64,
    socket_ns: u64,
    remote_ns: u64,
) -> Spec {
    Spec {
        name: "test".into(),
        sockets,
        cores_per_socket: cores,
        smt,
        nodes_per_socket: 1,
        llcs_per_socket: 1,
        // No jitter, and spinners that notice a write at once (no `pause` to finish,
        // `Core::wake_time`): the scenarios check hand-derived numbers exactly. A
        // scenario that pauses sets its `pause`.
        costs: Costs {
            jitter_ppm: 0,
            pause_ns: Ns::ZERO,
            ..Costs::levels(smt_ns, socket_ns, socket_ns, remote_ns, 5)
        },
        l2_bytes: None,
        llc_bytes: None,
        freq_hz: None,
    }
}

pub fn slots(m: &Spec, kind: PlacementKind, n: u32) -> (CpuMap, Vec<ThreadSlot>) {
    let map = CpuMap::from_machine(m);
    let p = Placement {
        policy: kind,
        virtual_nodes: None,
    };
    let s = place(&p, &map, n).unwrap();
    (map, s)
}

pub fn machine(m: &Spec, slots_: &(CpuMap, Vec<ThreadSlot>), nlines: u32, seed: u64) -> Machine {
    let seeds = (0..slots_.1.len()).map(|i| mix(seed, i as u64)).collect();
    Machine::new(&slots_.0, &m.costs, &slots_.1, nlines, seeds)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Ttas,
    Ticket,
    Mcs,
}

/// A test lock: TTAS (swap, then spin reading), ticket (both counters on one line),
/// or MCS (one node line per thread: word 0 locked, word 1 next).
#[derive(Debug, Clone, Copy)]
pub struct TestLock {
    pub kind: Kind,
    pub line: u32,
    pub nodes: u32,
}

impl TestLock {
    pub fn new(kind: Kind, alloc: &mut LineAlloc, threads: u32) -> TestLock {
        let line = alloc.line();
        let nodes = alloc.lines(threads);
        TestLock { kind, line, nodes }
    }

    fn node(&self, t: usize) -> Addr {
        Addr::new(self.nodes + t as u32, 0)
    }

    pub async fn acquire<E: Env>(&self, e: &E) {
        let l = Addr::new(self.line, 0);
        match self.kind {
            Kind::Ttas => loop {
                if e.swap(l, 1, Acquire).await == 0 {
                    return;
                }
                e.wait_until(l, Relaxed, |v| v == 0).await;
            },
            Kind::Ticket => {
                let t = e.fetch_add(l, 1, Relaxed).await;
                e.wait_until(l.word(1), Acquire, |v| v == t).await;
            }
            Kind::Mcs => {
                let me = self.node(e.tid());
                e.store(me.word(1), 0, Relaxed).await;
                e.store(me, 1, Relaxed).await;
                let pred = e.swap(l, e.tid() as u64 + 1, Acquire).await;
                if pred != 0 {
                    e.store(
                        self.node(pred as usize - 1).word(1),
                        e.tid() as u64 + 1,
                        Release,
                    )
                    .await;
                    e.wait_until(me, Acquire, |v| v == 0).await;
                }
            }
        }
    }

    /// `before_handoff` runs just before the store that passes the lock on.
    pub async fn release<E: Env>(&self, e: &E, before_handoff: impl Fn(u64)) {
        let l = Addr::new(self.line, 0);
        match self.kind {
            Kind::Ttas => {
                before_handoff(e.now());
                e.store(l, 0, Release).await;
            }
            Kind::Ticket => {
                let s = e.load(l.word(1), Relaxed).await;
                before_handoff(e.now());
                e.store(l.word(1), s + 1, Release).await;
            }
            Kind::Mcs => {
                let me = self.node(e.tid());
                let mut next = e.load(me.word(1), Acquire).await;
                if next == 0 {
                    if e.cas(l, e.tid() as u64 + 1, 0, Release).await.is_ok() {
                        return;
                    }
                    next = e.wait_until(me.word(1), Acquire, |v| v != 0).await;
                }
                before_handoff(e.now());
                e.store(self.node(next as usize - 1), 0, Release).await;
            }
        }
    }
}

/// Shared observations of a single-lock run.
#[derive(Debug, Default)]
pub struct Obs {
    /// Time of the last hand-off store, and the sum / count of (grant − that time).
    pub last_release: Cell<u64>,
    pub handoff_sum: Cell<u64>,
    pub handoffs: Cell<u64>,
    pub inside: Cell<u32>,
    pub violations: Cell<u32>,
    pub order: std::cell::RefCell<Vec<u32>>,
}

/// One thread's loop over a test lock (see [`single_loop`]).
#[derive(Debug, Clone, Copy)]
pub struct Loop {
    pub lock: TestLock,
    /// First of the `lines` data lines written inside.
    pub data: u32,
    pub lines: u32,
    pub cs: u64,
    pub outside: u64,
    /// Stop at this time.
    pub end: u64,
}

/// One thread of a single hot lock: acquire, increment the data lines (their misses
/// started together, as `Locks::touch` does), work `cs`, release, work `outside`;
/// records into `stats` as a workload that times each wait from its start would: the
/// wait and the bypass from the arrival (the single-lock workload times both from
/// the first failed attempt).
pub async fn single_loop<E: Env>(e: &E, l: Loop, stats: &mut ThreadStats, obs: &Obs) {
    while e.now() < l.end {
        let t0 = e.now();
        let arrival = e.grants(0);
        l.lock.acquire(e).await;
        let g = e.now();
        let grant = e.note_grant(0);
        let before = grant.before;
        if obs.inside.get() != 0 {
            obs.violations.set(obs.violations.get() + 1);
        }
        obs.inside.set(1);
        if before > 0 {
            obs.handoff_sum
                .set(obs.handoff_sum.get() + (g - obs.last_release.get()));
            obs.handoffs.set(obs.handoffs.get() + 1);
        }
        obs.order.borrow_mut().push(e.tid() as u32);
        for i in 0..l.lines {
            e.prefetch(Addr::new(l.data + i, 0)).await;
        }
        for i in 0..l.lines {
            let a = Addr::new(l.data + i, 0);
            let v = e.load(a, Relaxed).await;
            e.store(a, v + 1, Relaxed).await;
        }
        e.work(l.cs).await;
        obs.inside.set(0);
        l.lock.release(e, |t| obs.last_release.set(t)).await;
        stats.record_acquire(0, g, g - t0, before - arrival, grant.from);
        e.work(l.outside).await;
    }
}

pub struct SingleResult {
    pub acquisitions: u64,
    pub per_thread: Vec<u64>,
    pub mean_handoff_ns: f64,
    pub violations: u32,
    pub order: Vec<u32>,
    pub outcome: super::Outcome,
}

/// A single hot test lock: `threads` threads placed by `placement`, each running
/// [`single_loop`] for `warmup + duration`, recording after `warmup`.
#[derive(Debug, Clone)]
pub struct Single {
    pub placement: PlacementKind,
    pub threads: u32,
    pub kind: Kind,
    pub lines: u32,
    pub cs: u64,
    pub outside: u64,
    pub warmup: u64,
    pub duration: u64,
    pub seed: u64,
}

impl Single {
    pub fn run(&self, m: &Spec) -> SingleResult {
        let sl = slots(m, self.placement.clone(), self.threads);
        let mut alloc = LineAlloc::new();
        let lock = TestLock::new(self.kind, &mut alloc, self.threads);
        let data = alloc.lines(self.lines.max(1));
        let mach = machine(m, &sl, alloc.count(), self.seed);
        let w = Window {
            start_ns: self.warmup,
            end_ns: self.warmup + self.duration,
        };
        let mut stats: Vec<ThreadStats> =
            sl.1.iter()
                .map(|s| ThreadStats::new(s.cpu as u32, s.node, w, &["lock"], 0))
                .collect();
        let obs = Obs::default();
        let envs: Vec<_> = (0..self.threads as usize).map(|i| mach.env(i)).collect();
        let l = Loop {
            lock,
            data,
            lines: self.lines,
            cs: self.cs,
            outside: self.outside,
            end: w.end_ns,
        };
        let outcome = {
            let mut futs: Vec<Pin<Box<dyn Future<Output = ()> + '_>>> = envs
                .iter()
                .zip(stats.iter_mut())
                .map(|(e, st)| {
                    Box::pin(single_loop(e, l, st, &obs)) as Pin<Box<dyn Future<Output = ()>>>
                })
                .collect();
            mach.run(&mut futs, w.end_ns)
        };
        let per_thread: Vec<u64> = stats.iter().map(|s| s.total_acquisitions()).collect();
        SingleResult {
            acquisitions: per_thread.iter().sum(),
            per_thread,
            mean_handoff_ns: obs.handoff_sum.get() as f64 / obs.handoffs.get().max(1) as f64,
            violations: obs.violations.get(),
            order: obs.order.take(),
            outcome,
        }
    }
}

pub use crate::sim::bench::{lock2_point, x5_4};

pub fn plan_of(m: &Spec, points: Vec<locklab_model::plan::Point>) -> locklab_model::plan::Plan {
    use locklab_model::plan::{Mode, Plan, RunSpec, Topology, PLAN_SCHEMA_VERSION};
    let points = points
        .into_iter()
        .enumerate()
        .map(|(i, mut p)| {
            p.index = i;
            p
        })
        .collect();
    Plan {
        schema_version: PLAN_SCHEMA_VERSION,
        experiment: "test".into(),
        description: None,
        master_seed: 1,
        topology: Topology::Machine(m.clone()),
        run: RunSpec {
            modes: vec![Mode::Sim],
            duration_ns: 1_000_000,
            warmup_ns: 100_000,
            repetitions: 1,
            quick_duration_ns: 100_000,
            quick_warmup_ns: 10_000,
            quick_repetitions: 1,
            recording: Default::default(),
        },
        axes: vec![],
        points,
        claims: vec![],
        plots: vec![],
        sources: vec![],
    }
}
