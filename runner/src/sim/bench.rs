//! Simulator speed: simulated lock acquisitions per wall-clock second, on one core.
//!
//! `locklab bench sim` prints [`report`]. The reference points are the seed-004 shapes
//! at 142 threads on the X5-4 model (lock2: 90 ns inside touching 2 lines, 520 ns
//! outside, will-it-scale placement), one with MCS and one with CNA (10 ms threshold,
//! v15), each simulated for 200 ms of virtual time.

use super::lockrun;
use super::{rep_seed, Job, SimModel};
use locklab_model::plan::{
    CnaParams, CnaVariant, Costs, Dist, LockAlgo, LockSpec, Machine, Placement, PlacementKind,
    Point, Workload,
};
use locklab_model::time::Ns;
use locklab_model::topology::place;
use std::time::Instant;

/// The Oracle X5-4 of thread 004: 4 sockets × 18 cores × 2 SMT, with the sourced
/// costs of `experiments/lib/x5-4.lab` (2 / 37 / 120 ns transfers, 7 ns atomics, an
/// 18 ns LLC hit, 3 ns read occupancy, 13 ns fence).
pub fn x5_4() -> Machine {
    let mut costs = Costs::levels(2, 37, 37, 120, 7);
    costs.memory.llc_hit_ns = Ns::whole(18);
    costs.memory.read_occupancy_ns = Ns::whole(3);
    costs.memory.fence_ns = Ns::whole(13);
    Machine {
        name: "x5-4".into(),
        sockets: 4,
        cores_per_socket: 18,
        smt: 2,
        nodes_per_socket: 1,
        llcs_per_socket: 1,
        costs,
        l2_bytes: Some(256 << 10),
        llc_bytes: Some(45 << 20),
        freq_hz: Some(2_600_000_000),
    }
}

/// will-it-scale lock2 as a point: 90 ns inside touching 2 lines, 520 ns outside.
pub fn lock2_point(algo: LockAlgo, threads: u32, seed: u64) -> Point {
    Point {
        index: 0,
        id: format!("lock={},threads={threads}", algo.kind_name()),
        axes: Default::default(),
        seed,
        threads,
        lock: LockSpec {
            name: algo.kind_name().into(),
            algo,
            axis: None,
            params: vec![],
        },
        workload: Workload::SingleLock {
            critical: Dist::Fixed { ns: 90 },
            outside: Dist::Fixed { ns: 520 },
            lines: 2,
        },
        placement: Placement {
            policy: PlacementKind::WillItScale,
            virtual_nodes: None,
        },
        modes: vec![],
    }
}

/// One measurement.
#[derive(Debug, Clone)]
pub struct Speed {
    pub label: String,
    pub threads: u32,
    pub virtual_ns: u64,
    pub acquisitions: u64,
    pub events: u64,
    pub counters: super::engine::Counters,
    pub wall_s: f64,
    /// CPU time of the simulating thread (the fair figure on a shared machine).
    pub cpu_s: f64,
}

impl Speed {
    pub fn acquisitions_per_s(&self) -> f64 {
        self.acquisitions as f64 / self.wall_s
    }
    pub fn acquisitions_per_cpu_s(&self) -> f64 {
        self.acquisitions as f64 / self.cpu_s
    }
    pub fn events_per_acquisition(&self) -> f64 {
        self.events as f64 / self.acquisitions.max(1) as f64
    }
}

/// Simulate `point` for `virtual_ns` (no warm-up) on `m` and time it (best of three).
pub fn measure(label: &str, m: &Machine, point: &Point, virtual_ns: u64) -> Speed {
    let model = SimModel::of_machine(m);
    let slots =
        place(&point.placement, &model.map, point.threads).expect("the point fits the model");
    let job = Job {
        point,
        model: &model,
        warmup_ns: 0,
        duration_ns: virtual_ns,
        seed: rep_seed(point.seed, 0),
        trace: None,
    };
    // Best of three: the machine may be shared, and the minimum is the least disturbed.
    let mut wall_s = f64::INFINITY;
    let mut cpu_s = f64::INFINITY;
    let mut raw = None;
    for _ in 0..3 {
        let c0 = thread_cpu_s();
        let t0 = Instant::now();
        let r = lockrun::simulate(&job, &slots);
        wall_s = wall_s.min(t0.elapsed().as_secs_f64());
        cpu_s = cpu_s.min(thread_cpu_s() - c0);
        raw = Some(r);
    }
    let raw = raw.expect("three runs");
    Speed {
        label: label.into(),
        threads: point.threads,
        virtual_ns,
        acquisitions: raw.stats.iter().map(|s| s.total_acquisitions()).sum(),
        events: raw.outcome.counters.events,
        counters: raw.outcome.counters,
        wall_s,
        cpu_s,
    }
}

/// CPU seconds used by the calling thread.
fn thread_cpu_s() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec for the call to fill.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return f64::NAN;
    }
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// The reference measurements: MCS and CNA (10 ms, v15) at 142 threads on the X5-4,
/// `virtual_ns` each.
pub fn speed(virtual_ns: u64) -> Vec<Speed> {
    let m = x5_4();
    let cna = LockAlgo::Cna(CnaParams {
        threshold_ns: 10_000_000,
        variant: CnaVariant::V15,
        shuffle_skip_prob: 127.0 / 128.0,
    });
    vec![
        measure("mcs", &m, &lock2_point(LockAlgo::Mcs, 142, 1), virtual_ns),
        measure(
            "qspinlock",
            &m,
            &lock2_point(
                LockAlgo::Qspinlock {
                    pending_loops: None,
                },
                142,
                1,
            ),
            virtual_ns,
        ),
        measure("cna 10ms", &m, &lock2_point(cna, 142, 1), virtual_ns),
    ]
}

/// `locklab bench sim`: a table of [`speed`] over 200 ms of virtual time.
pub fn report() -> String {
    let mut out = String::from(
        "simulator speed, one core, X5-4 model, lock2 shape, 142 threads, 200 ms virtual\n\
         lock        acquisitions   events/acq   wall s   M acq/s   cpu s   M acq/cpu-s\n",
    );
    for s in speed(200_000_000) {
        out += &format!(
            "{:<10} {:>13} {:>12.1} {:>8.3} {:>9.2} {:>7.3} {:>13.2}\n",
            s.label,
            s.acquisitions,
            s.events_per_acquisition(),
            s.wall_s,
            s.acquisitions_per_s() / 1e6,
            s.cpu_s,
            s.acquisitions_per_cpu_s() / 1e6
        );
    }
    out
}
