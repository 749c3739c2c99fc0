//! The discrete-event simulator: a deterministic machine model with cache-line
//! coherence costs.
//!
//! Lock algorithms and workloads are the shared `async` code over [`crate::env::Env`];
//! here each simulated thread is one of those futures, driven by [`engine::Machine`]
//! (no OS threads, no real time). Every memory operation is priced by the per-line
//! coherence model of [`coherence`]: owner, sharers, busy-until, watchers
//! (`lockrun` runs a point's lock workload). The wake-up placement workload runs on a
//! separate CFS-like scheduler model ([`sched`]).
//!
//! Entry points: [`run_point`] runs one point × repetition and returns its
//! [`RunRecord`]; [`run_points`] runs many in parallel (rayon, one point per task,
//! never inside a point) and returns them in input order.
//!
//! Architecture Invariant: the simulator is deterministic. Same plan, point, rep and
//! durations ⇒ byte-identical records, whatever `--jobs` is: the only order is the
//! event heap's (time, sequence), seeds come from the point seed, and nothing reads
//! a clock, a hash map's order or an address.
//!
//! `Topology::Host` simulates this machine: the CPU table `host::cpu_map()` detects
//! (or, if detection finds nothing, one socket of `available_parallelism()` cores, one
//! NUMA node, no SMT) with the costs the file gives, else [`HOST_DEFAULT_COSTS`]. Such
//! records are reproducible on the same host only. Callers with another CPU table pass
//! it to [`run_point_on`] in a [`SimModel`].

pub mod bench;
pub(crate) mod coherence;
pub mod engine;
mod lockrun;
pub mod sched;
#[cfg(test)]
pub(crate) mod testkit;
#[cfg(test)]
mod tests;

pub use coherence::TraceEvent;
pub use coherence::MAX_THREADS;
pub use engine::{Machine, Outcome, SimEnv};

use crate::stats::{self, RunContext};
use crate::workload;
use locklab_model::plan::{Costs, Machine as MachineSpec, Mode, Plan, Point, Topology, Workload};
use locklab_model::records::{RunRecord, SkipCause};
use locklab_model::topology::{place, CpuMap, ThreadSlot};
use std::collections::BTreeMap;

/// Costs assumed for a simulated host when the file gives none (a current
/// single-socket x86: 10 ns SMT sibling, 40 ns within the socket, 5 ns atomic).
pub const HOST_DEFAULT_COSTS: Costs = Costs::levels(10, 40, 40, 120, 5);

/// The machine a point is simulated on: its CPU table, its transfer costs, and the
/// machine description when there is one (cache sizes and the frequency for the
/// scheduler model).
#[derive(Debug, Clone)]
pub struct SimModel {
    pub map: CpuMap,
    pub costs: Costs,
    pub spec: Option<MachineSpec>,
}

impl SimModel {
    pub fn of_machine(m: &MachineSpec) -> SimModel {
        SimModel {
            map: CpuMap::from_machine(m),
            costs: m.costs.clone(),
            spec: Some(m.clone()),
        }
    }
}

/// The model the simulator uses for a topology.
pub fn model_of(topology: &Topology) -> SimModel {
    match topology {
        Topology::Machine(m) => SimModel::of_machine(m),
        Topology::Host { costs } => {
            let costs = costs.clone().unwrap_or(HOST_DEFAULT_COSTS);
            let detected = crate::host::cpu_map();
            if !detected.is_empty() {
                return SimModel {
                    map: detected,
                    costs,
                    spec: None,
                };
            }
            let cores = std::thread::available_parallelism()
                .map(|n| n.get() as u32)
                .unwrap_or(1);
            let m = MachineSpec {
                name: "host".into(),
                sockets: 1,
                cores_per_socket: cores,
                smt: 1,
                nodes_per_socket: 1,
                llcs_per_socket: 1,
                costs,
                l2_bytes: None,
                llc_bytes: None,
                freq_hz: None,
            };
            SimModel::of_machine(&m)
        }
    }
}

/// The seed of repetition `rep` of a point.
pub fn rep_seed(point_seed: u64, rep: u32) -> u64 {
    crate::rng::mix(point_seed, rep as u64)
}

/// One point × repetition to simulate.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Job<'a> {
    pub point: &'a Point,
    pub model: &'a SimModel,
    /// Virtual time discarded first, then measured.
    pub warmup_ns: u64,
    pub duration_ns: u64,
    /// The repetition's seed ([`rep_seed`]).
    pub seed: u64,
    /// Record the memory requests from .0 to .1 ns of virtual time ([`trace_point`]).
    pub trace: Option<(u64, u64)>,
}

/// Run one point × repetition: `warmup_ns` of virtual time discarded, then
/// `duration_ns` measured.
pub fn run_point(
    plan: &Plan,
    point: &Point,
    rep: u32,
    duration_ns: u64,
    warmup_ns: u64,
) -> RunRecord {
    let model = model_of(&plan.topology);
    run_point_on(point, rep, duration_ns, warmup_ns, &model)
}

/// [`run_point`] on an explicit model (e.g. the detected host).
pub fn run_point_on(
    point: &Point,
    rep: u32,
    duration_ns: u64,
    warmup_ns: u64,
    model: &SimModel,
) -> RunRecord {
    let job = Job {
        point,
        model,
        warmup_ns,
        duration_ns,
        seed: rep_seed(point.seed, rep),
        trace: None,
    };
    let ctx = context(&job, rep);
    if let Workload::Wakeup(w) = &point.workload {
        return sched::run(&ctx, &job, w);
    }
    let horizon_ns = engine::HORIZON_PS / locklab_model::time::PS_PER_NS;
    if warmup_ns.saturating_add(duration_ns) > horizon_ns {
        let reason = format!(
            "the simulator's clock holds {} days of virtual time, and this point's warm-up and duration are longer",
            horizon_ns / 86_400_000_000_000
        );
        return stats::skipped(&ctx, point.threads, SkipCause::Host, reason);
    }
    match lock_slots(point, model) {
        Ok(slots) => lockrun::run(ctx, &job, &slots),
        Err(reason) => stats::skipped(&ctx, point.threads, SkipCause::Host, reason),
    }
}

/// Where a lock workload's threads run on `model`, or why they cannot.
fn lock_slots(point: &Point, model: &SimModel) -> Result<Vec<ThreadSlot>, String> {
    let slots = place(&point.placement, &model.map, point.threads)?;
    if slots.len() > MAX_THREADS {
        return Err(format!(
            "the simulator handles at most {MAX_THREADS} threads"
        ));
    }
    Ok(slots)
}

/// What [`trace_point`] saw: each simulated thread's CPU (its OS id in the model) and
/// the requests of the window, in the order the engine priced them.
#[derive(Debug, Clone)]
pub struct PointTrace {
    pub cpus: Vec<u32>,
    pub events: Vec<TraceEvent>,
    /// Lines below this index are the locks' own; from it on, the workload's data.
    pub lock_lines: u32,
    /// When every thread was left waiting on a line no one would write, if they were.
    pub deadlocked_at: Option<u64>,
}

/// Simulate repetition `rep` of a lock workload's point from the start until
/// `from_ns + for_ns` of virtual time, recording every memory request from `from_ns`
/// on, the end excluded (and each thread's waits and grants): the same events a full
/// run of the point has in that window, since nothing before a time depends on when
/// the run ends.
pub fn trace_point(
    plan: &Plan,
    point: &Point,
    rep: u32,
    from_ns: u64,
    for_ns: u64,
) -> Result<PointTrace, String> {
    if let Workload::Wakeup(_) = &point.workload {
        return Err("the wake-up workload runs on the scheduler model, which has no memory requests to trace".into());
    }
    let model = model_of(&plan.topology);
    let slots = lock_slots(point, &model)?;
    let to = from_ns.saturating_add(for_ns);
    let job = Job {
        point,
        model: &model,
        warmup_ns: from_ns,
        duration_ns: for_ns.max(1),
        seed: rep_seed(point.seed, rep),
        trace: Some((from_ns, to)),
    };
    let raw = lockrun::simulate(&job, &slots);
    Ok(PointTrace {
        cpus: slots.iter().map(|s| model.map.cpus[s.cpu].os_id).collect(),
        events: raw.trace,
        lock_lines: raw.lock_lines,
        deadlocked_at: raw.outcome.deadlocked.then_some(raw.outcome.end_ns),
    })
}

/// Run `jobs` (point index, rep) on a local pool of `threads` workers; results come
/// back in the order of `jobs`, and `on_done` sees each as it finishes.
pub fn run_points(
    plan: &Plan,
    jobs: &[(usize, u32)],
    duration_ns: u64,
    warmup_ns: u64,
    threads: usize,
    on_done: &(dyn Fn(&RunRecord) + Sync),
) -> Vec<RunRecord> {
    use rayon::prelude::*;
    let model = model_of(&plan.topology);
    let one = |&(i, rep): &(usize, u32)| {
        let r = run_point_on(&plan.points[i], rep, duration_ns, warmup_ns, &model);
        on_done(&r);
        r
    };
    match rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .build()
    {
        Ok(pool) => pool.install(|| jobs.par_iter().map(one).collect()),
        // No pool (resource limits): the same results, one at a time.
        Err(_) => jobs.iter().map(one).collect(),
    }
}

fn context(job: &Job<'_>, rep: u32) -> RunContext {
    let point = job.point;
    let shape = workload::shape(&point.workload, point.threads);
    let (crit, out) = (shape.critical_ns, shape.outside_ns);
    let virtual_nodes = point.placement.virtual_nodes.is_some();
    RunContext {
        point: point.index as u32,
        point_id: point.id.clone(),
        mode: Mode::Sim,
        rep,
        seed: job.seed,
        lock: point.lock.name.clone(),
        lock_algo: point.lock.algo.kind_name().to_string(),
        workload: point.workload.kind_name().to_string(),
        ops: None,
        critical_nominal_ns: crit,
        critical_achieved_ns: crit,
        outside_nominal_ns: out,
        outside_achieved_ns: out,
        noise: "sim".into(),
        node_distance: match &job.model.spec {
            Some(m) if !virtual_nodes => node_distance_fn(m.nodes_per_socket),
            _ => stats::default_node_distance,
        },
        extra: BTreeMap::new(),
    }
}

/// Nodes are numbered socket-major (`CpuMap::from_machine`), `k` per socket.
fn node_distance_per<const K: u32>(a: u32, b: u32) -> &'static str {
    if a == b {
        "local"
    } else if a / K == b / K {
        "socket"
    } else {
        "remote"
    }
}

/// A label function for the hand-off table (`RunContext::node_distance` is a plain
/// `fn`, so one instance per common nodes-per-socket count).
fn node_distance_fn(nodes_per_socket: u32) -> fn(u32, u32) -> &'static str {
    match nodes_per_socket {
        0 | 1 => node_distance_per::<1>,
        2 => node_distance_per::<2>,
        3 => node_distance_per::<3>,
        4 => node_distance_per::<4>,
        6 => node_distance_per::<6>,
        8 => node_distance_per::<8>,
        _ => stats::default_node_distance,
    }
}
