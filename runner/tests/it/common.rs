//! Shared test helpers: every algorithm, and plan fragments.

use locklab_model::plan::*;
use std::collections::BTreeMap;

/// Every algorithm with representative parameters, and a label.
pub fn all_algos() -> Vec<(&'static str, LockAlgo)> {
    vec![
        ("tas", LockAlgo::Tas),
        ("ttas", LockAlgo::Ttas { backoff: None }),
        (
            "ttas_backoff",
            LockAlgo::Ttas {
                backoff: Some(Backoff {
                    min_ns: 10,
                    max_ns: 200,
                }),
            },
        ),
        ("ticket", LockAlgo::Ticket),
        ("mcs", LockAlgo::Mcs),
        ("clh", LockAlgo::Clh),
        ("qspinlock", LockAlgo::Qspinlock),
        ("cna_v14", cna(CnaVariant::V14, 1_000, 0.0)),
        ("cna_v15", cna(CnaVariant::V15, 1_000, 0.5)),
        ("std", LockAlgo::Std),
        ("parking_lot", LockAlgo::ParkingLot),
        ("pthread", LockAlgo::Pthread),
    ]
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
        },
        axes: vec![],
        points,
        claims: vec![],
        plots: vec![],
        sources: vec![],
    }
}
