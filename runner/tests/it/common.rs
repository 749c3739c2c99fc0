//! Shared test helpers: every algorithm, and plan fragments.

use locklab_model::plan::*;
use locklab_model::topology::{CpuInfo, CpuMap};
use locklab_runner::env::LineAlloc;
use locklab_runner::locks::{catalogue, Lock, Site};
use std::collections::BTreeMap;

/// Every algorithm (`locks::catalogue`), plus variants that exercise more paths in a
/// short test: TTAS with short backoff, CNA v14 and v15 with a short threshold (v15
/// with half its scans skipped). Each with a label.
pub fn all_algos() -> Vec<(&'static str, LockAlgo)> {
    let mut v = catalogue();
    v.extend([
        (
            "ttas_backoff",
            LockAlgo::Ttas {
                backoff: Some(Backoff {
                    min_ns: 10,
                    max_ns: 200,
                }),
            },
        ),
        ("cna_v14", cna(CnaVariant::V14, 1_000, 0.0)),
        ("cna_v15", cna(CnaVariant::V15, 1_000, 0.5)),
    ]);
    v
}

/// One lock made by `make` for `nthreads` threads, and the allocator after it (for
/// the test's own lines).
pub fn one_lock<L: Lock>(
    make: impl Fn(&mut LineAlloc, Site) -> L,
    nthreads: usize,
) -> (L, LineAlloc) {
    let mut alloc = LineAlloc::new();
    let lock = make(
        &mut alloc,
        Site {
            id: 0,
            nthreads,
            asks_contended: true,
        },
    );
    (lock, alloc)
}

pub fn cna(variant: CnaVariant, threshold_ns: u64, skip: f64) -> LockAlgo {
    LockAlgo::Cna(CnaParams {
        threshold_ns,
        variant,
        shuffle_skip_prob: skip,
    })
}

pub fn single(critical: u64, outside: u64, lines: u32) -> Workload {
    Workload::SingleLock {
        critical: Dist::Fixed { ns: critical },
        outside: Dist::Fixed { ns: outside },
        lines,
    }
}

pub fn point(algo: LockAlgo, workload: Workload, threads: u32, cpus: Option<Vec<u32>>) -> Point {
    Point {
        index: 0,
        id: "test".into(),
        axes: BTreeMap::new(),
        seed: 42,
        threads,
        lock: LockSpec {
            name: algo.kind_name().into(),
            algo,
            axis: None,
            params: vec![],
        },
        workload,
        placement: Placement {
            policy: match cpus {
                Some(l) => PlacementKind::List(l),
                None => PlacementKind::Compact,
            },
            virtual_nodes: None,
        },
        modes: vec![],
    }
}

pub fn plan(points: Vec<Point>) -> Plan {
    Plan {
        schema_version: PLAN_SCHEMA_VERSION,
        experiment: "test".into(),
        description: None,
        master_seed: 1,
        topology: Topology::Host { costs: None },
        run: RunSpec {
            modes: vec![Mode::Native],
            duration_ns: 20_000_000,
            warmup_ns: 5_000_000,
            repetitions: 1,
            quick_duration_ns: 20_000_000,
            quick_warmup_ns: 5_000_000,
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

/// A one-socket CPU table over `allowed` (at most its first 2): native tests never
/// run on the CI box's own topology.
pub fn one_socket(allowed: &[u32]) -> CpuMap {
    let cpus: Vec<CpuInfo> = allowed
        .iter()
        .take(2)
        .enumerate()
        .map(|(i, &os)| CpuInfo {
            os_id: os,
            socket: 0,
            core: i as u32,
            smt: 0,
            node: 0,
            llc: 0,
        })
        .collect();
    CpuMap {
        cores: cpus.len() as u32,
        cpus,
        sockets: 1,
        nodes: 1,
    }
}
