//! `locklab bench analysis`: how long loading, aggregating and judging claims take
//! on a large synthetic results directory, and how much memory it needs.
//!
//! The directory is generated first (not timed) with the same writer code as a
//! real run, at 144 threads per point (the X5-4 of the CNA thread) and 5
//! repetitions, so `rows` thread rows make `rows / 720` points. Peak memory is the
//! process's VmHWM, reset after generation where the kernel allows it
//! (`/proc/self/clear_refs`), so it covers the timed work only.

use crate::claims;
use crate::error::{Error, Result};
use crate::pipeline;
use crate::store::{self, write_manifest, write_parquet, Tables, THREADS_FILE};
use locklab_model::manifest::{HostInfo, Manifest};
use locklab_model::metrics::Table;
use locklab_model::plan::*;
use locklab_model::records::{HandoffRecord, PointRecord, RunRecord, ThreadRecord, CDF_QUANTILES};
use polars::prelude::ParquetWriter;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

const THREADS: u32 = 144;
const REPS: u32 = 5;
const NODES: u32 = 4;

#[derive(Debug, Clone)]
pub struct BenchResult {
    pub rows: usize,
    pub points: usize,
    pub generate_s: f64,
    pub load_s: f64,
    /// Each aggregation step and its seconds.
    pub aggregate: Vec<(String, f64)>,
    pub aggregate_s: f64,
    pub claims_s: f64,
    pub claims: usize,
    /// load + aggregate + claims.
    pub total_s: f64,
    /// Peak resident memory (VmHWM), bytes; None where /proc is unavailable.
    pub peak_rss_bytes: Option<u64>,
    /// Whether the peak was reset after generation (else it includes generation).
    pub peak_reset: bool,
    pub profile: &'static str,
}

impl std::fmt::Display for BenchResult {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "analysis pipeline: {} thread rows ({} points × {REPS} repetitions × {THREADS} threads), {} build",
            self.rows, self.points, self.profile
        )?;
        writeln!(f, "  generate   {:>8.2} s  (not counted)", self.generate_s)?;
        writeln!(f, "  load       {:>8.2} s", self.load_s)?;
        let steps: Vec<String> = self
            .aggregate
            .iter()
            .map(|(n, s)| format!("{n} {s:.2} s"))
            .collect();
        writeln!(
            f,
            "  aggregate  {:>8.2} s  ({})",
            self.aggregate_s,
            steps.join(", ")
        )?;
        writeln!(
            f,
            "  claims     {:>8.2} s  ({} claims)",
            self.claims_s, self.claims
        )?;
        writeln!(f, "  total      {:>8.2} s", self.total_s)?;
        match self.peak_rss_bytes {
            Some(b) => write!(
                f,
                "  peak RSS   {:>8.1} MiB ({})",
                b as f64 / (1u64 << 20) as f64,
                if self.peak_reset {
                    "VmHWM of the timed work"
                } else {
                    "VmHWM including generation"
                }
            ),
            None => write!(f, "  peak RSS   unavailable"),
        }
    }
}

fn vm_hwm() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

fn reset_hwm() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

fn bench_plan(points: usize) -> Plan {
    let xs = points.div_ceil(2);
    let single = Workload::SingleLock {
        critical: Dist::Fixed { ns: 90 },
        outside: Dist::Fixed { ns: 520 },
        lines: 2,
    };
    let pts = (0..points)
        .map(|i| {
            let lock = if i % 2 == 0 { "stock" } else { "cna" };
            let x = (i / 2) as i64;
            let mut axes = BTreeMap::new();
            axes.insert("lock".to_string(), Value::Str(lock.into()));
            axes.insert("x".to_string(), Value::Int(x));
            Point {
                index: i,
                id: format!("lock={lock},x={x}"),
                axes,
                seed: i as u64,
                threads: THREADS,
                lock: LockSpec {
                    name: lock.into(),
                    algo: if lock == "cna" {
                        LockAlgo::Cna(CnaParams {
                            threshold_ns: 10_000_000,
                            variant: CnaVariant::V15,
                            shuffle_skip_prob: 127.0 / 128.0,
                        })
                    } else {
                        LockAlgo::Qspinlock {
                            pending_loops: None,
                        }
                    },
                    axis: Some("lock".into()),
                    params: vec![],
                },
                workload: single.clone(),
                placement: Placement {
                    policy: PlacementKind::WillItScale,
                    virtual_nodes: None,
                },
                modes: vec![],
            }
        })
        .collect();
    // Point 2x runs stock at x and point 2x + 1 cna: each claim's targets (what the
    // language would resolve its references to) follow from that.
    let at = |x: i64, baseline: bool, rows: Vec<(String, Value)>| Target {
        point: 2 * x as u32 + 1,
        baseline: baseline.then_some(2 * x as u32),
        rows,
        modes: vec![Mode::Sim],
    };
    let cna = |x: i64| {
        vec![
            ("lock".to_string(), Value::Str("cna".into())),
            ("x".to_string(), Value::Int(x)),
        ]
    };
    let sp = |x: i64| MetricRef {
        target: at(x, true, vec![]),
        metric: "speedup".into(),
        select: cna(x),
        baseline: Some("stock".into()),
        baseline_select: vec![],
    };
    let cna0 = |metric: &str, row: (&str, Value)| {
        let row = (row.0.to_string(), row.1);
        let mut select = cna(0);
        select.push(row.clone());
        Expr::Metric(MetricRef {
            target: at(0, false, vec![row]),
            metric: metric.into(),
            select,
            baseline: None,
            baseline_select: vec![],
        })
    };
    let claim = |id: &str, kind| Claim {
        id: id.into(),
        text: id.into(),
        source: None,
        file: "bench.lab".into(),
        line: 1,
        gating: true,
        kind,
        modes: vec![Mode::Sim],
        skipped: None,
    };
    let trend_xs = 0..(xs as i64).min(10);
    Plan {
        schema_version: PLAN_SCHEMA_VERSION,
        experiment: "bench".into(),
        description: None,
        master_seed: 1,
        topology: Topology::Host { costs: None },
        run: RunSpec {
            modes: vec![Mode::Sim],
            duration_ns: 1_000_000,
            warmup_ns: 0,
            repetitions: REPS,
            quick_duration_ns: 1_000_000,
            quick_warmup_ns: 0,
            quick_repetitions: 1,
            recording: Default::default(),
        },
        axes: vec![
            Axis {
                name: "lock".into(),
                values: vec![Value::Str("stock".into()), Value::Str("cna".into())],
                zip_group: None,
            },
            Axis {
                name: "x".into(),
                values: (0..xs as i64).map(Value::Int).collect(),
                zip_group: None,
            },
        ],
        points: pts,
        claims: vec![
            claim(
                "band",
                ClaimKind::Band {
                    expr: Expr::Metric(sp(0)),
                    lo: 1.5,
                    hi: 2.5,
                    strict: false,
                },
            ),
            claim(
                "order",
                ClaimKind::Ordering {
                    exprs: [2, 1, 0].map(|x| Expr::Metric(sp(x))).to_vec(),
                    op: OrderOp::Less,
                    min_gap: 0.02,
                    or_equal: Vec::new(),
                },
            ),
            claim(
                "trend",
                ClaimKind::Trend {
                    metric: MetricRef {
                        target: Target::default(),
                        metric: "speedup".into(),
                        select: vec![("lock".into(), Value::Str("cna".into()))],
                        baseline: Some("stock".into()),
                        baseline_select: vec![],
                    },
                    axis: "x".into(),
                    values: trend_xs.clone().map(Value::Int).collect(),
                    direction: TrendDirection::Decreasing,
                    min_rho: 0.8,
                    series: TrendSeries::Steps {
                        steps: trend_xs
                            .map(|x| TrendStep {
                                value: Value::Int(x),
                                metric: sp(x),
                            })
                            .collect(),
                    },
                },
            ),
            claim(
                "cpu",
                ClaimKind::Band {
                    expr: cna0("wait_p99_ns", ("cpu", Value::Int(7))),
                    lo: 0.0,
                    hi: 1e9,
                    strict: false,
                },
            ),
            claim(
                "cross_node",
                ClaimKind::Band {
                    expr: cna0("wait_max_ns", ("cross_node", Value::Bool(true))),
                    lo: 0.0,
                    hi: 1e9,
                    strict: false,
                },
            ),
        ],
        plots: vec![],
        sources: vec![],
    }
}

fn bench_record(plan: &Plan, i: usize, rep: u32) -> RunRecord {
    let p = &plan.points[i];
    let x = (i / 2) as f64;
    let jitter = 1.0 + 0.004 * (rep as f64 - 2.0);
    let s = if p.lock.name == "cna" {
        2.0 - 0.1 * (x % 10.0)
    } else {
        1.0
    };
    let tp = 1e6 * s * jitter;
    let node = |t: u32| t * NODES / THREADS;
    let point = PointRecord {
        point: i as u32,
        point_id: p.id.clone(),
        mode: Mode::Sim,
        rep,
        seed: p.seed + rep as u64,
        lock: p.lock.name.clone(),
        lock_algo: p.lock.algo.kind_name().into(),
        workload: "single".into(),
        threads: THREADS,
        skipped: None,
        skip_cause: None,
        window_ns: 1_000_000_000,
        acquisitions: tp as u64,
        ops: tp as u64,
        waits: Some(tp as u64 / 2),
        waits_censored: THREADS as u64,
        reacquisitions: Some(0),
        throughput_ops_s: tp,
        cpu_ns_per_acq: f64::NAN,
        overhead_ns: f64::NAN,
        jain: 0.95,
        cov_acq: 0.05,
        max_min: 1.2,
        fairness_factor: 0.52,
        window_fairness_factor_max: 0.6,
        fairness_window_ns: 10_000_000,
        wait_p50_ns: 1e4,
        wait_p99_ns: 1e5 * jitter,
        wait_p999_ns: 2e5,
        wait_max_ns: 1e6,
        wait_mean_ns: 2e4,
        hold_mean_ns: 90.0,
        bypass_max: 143.0,
        wait_max_censored: false,
        bypass_max_censored: false,
        bypass_mean: 10.0,
        handoff_local_frac: 0.8,
        cpu_wall_ratio: f64::NAN,
        critical_nominal_ns: 90.0,
        critical_achieved_ns: 90.0,
        outside_nominal_ns: 520.0,
        outside_achieved_ns: 520.0,
        noise: "sim".into(),
        wait_cdf_ns: CDF_QUANTILES.iter().map(|q| 1e3 + 1e6 * q * q).collect(),
        extra: BTreeMap::new(),
    };
    let threads = (0..THREADS)
        .map(|t| ThreadRecord {
            point: i as u32,
            mode: Mode::Sim,
            rep,
            thread: t,
            cpu: t,
            node: node(t),
            class: "lock".into(),
            acquisitions: (tp / THREADS as f64) as u64 + t as u64,
            waits: Some((tp / THREADS as f64) as u64 / 2),
            waits_censored: 1,
            reacquisitions: Some(0),
            share: 1.0 / THREADS as f64,
            wait_p50_ns: 1e4 + t as f64,
            wait_p99_ns: 1e5 * jitter + 10.0 * t as f64,
            wait_p999_ns: 2e5,
            wait_max_ns: 1e6 + t as f64,
            wait_mean_ns: 2e4,
            hold_mean_ns: 90.0,
            bypass_max: 143.0,
            wait_max_censored: false,
            bypass_max_censored: false,
            cpu_ns: f64::NAN,
        })
        .collect();
    let handoffs = (0..NODES * NODES)
        .map(|k| {
            let (from, to) = (k / NODES, k % NODES);
            HandoffRecord {
                point: i as u32,
                mode: Mode::Sim,
                rep,
                from_node: from,
                to_node: to,
                distance: if from == to { "local" } else { "remote" }.into(),
                count: if from == to { 1000 } else { 50 },
                wait_p50_ns: 1e4,
                wait_p99_ns: 1e5,
                wait_max_ns: 1e6 * jitter,
            }
        })
        .collect();
    RunRecord {
        point,
        threads,
        handoffs,
    }
}

/// Generate a results directory of about `rows` thread rows under `tmp`, then time
/// loading it, aggregating it and evaluating five claims over it.
pub fn bench_pipeline(rows: usize, tmp: &Path) -> Result<BenchResult> {
    let t0 = Instant::now();
    // At least three values of x: the ordering claim reads x = 0, 1 and 2.
    let points = rows.div_ceil((THREADS * REPS) as usize).max(6);
    let plan = bench_plan(points);
    let dir = tmp.join("results");
    crate::util::create_dir(&dir)?;
    let manifest = Manifest {
        schema_version: locklab_model::manifest::MANIFEST_SCHEMA_VERSION,
        locklab_version: env!("CARGO_PKG_VERSION").into(),
        git_commit: None,
        git_dirty: None,
        rustc: None,
        build_profile: profile().into(),
        command_line: vec!["locklab".into(), "bench".into(), "analysis".into()],
        sources: vec![],
        master_seed: 1,
        modes: vec![Mode::Sim],
        quick: false,
        overrides: vec![],
        shard: None,
        started_utc: crate::util::now_utc(),
        nonce: String::new(),
        finished_utc: Some(crate::util::now_utc()),
        status: "complete".into(),
        host: HostInfo::default(),
        plan: plan.clone(),
        shards: Vec::new(),
    };
    write_manifest(&dir, &manifest)?;

    // Threads stream to Parquet chunk by chunk; points and hand-offs are small.
    let threads_path = dir.join(THREADS_FILE);
    let file = std::fs::File::create(&threads_path).map_err(Error::io("create", &threads_path))?;
    let mut writer = None;
    let (mut pts, mut hos) = (Vec::new(), Vec::new());
    let chunk = 32;
    for start in (0..points).step_by(chunk) {
        let recs: Vec<RunRecord> = (start..(start + chunk).min(points))
            .flat_map(|i| (0..REPS).map(move |r| (i, r)))
            .map(|(i, r)| bench_record(&plan, i, r))
            .collect();
        let t = Tables::from_records(&manifest, &recs)?;
        if writer.is_none() {
            writer = Some(
                ParquetWriter::new(file.try_clone().map_err(Error::io("open", &threads_path))?)
                    .batched(t.threads.schema())
                    .map_err(Error::polars("start the threads file"))?,
            );
        }
        if let Some(w) = writer.as_mut() {
            w.write_batch(&t.threads)
                .map_err(Error::polars("write the threads file"))?;
        }
        pts.push(t.points);
        hos.push(t.handoffs);
    }
    if let Some(w) = writer {
        w.finish()
            .map_err(Error::polars("finish the threads file"))?;
    }
    drop(file);
    write_parquet(
        &dir.join(store::POINTS_FILE),
        Table::Points,
        &mut store::stack(pts)?,
    )?;
    write_parquet(
        &dir.join(store::HANDOFFS_FILE),
        Table::Handoffs,
        &mut store::stack(hos)?,
    )?;
    let generate_s = t0.elapsed().as_secs_f64();

    let peak_reset = reset_hwm();
    let t1 = Instant::now();
    let results = store::load_results(&dir)?;
    let load_s = t1.elapsed().as_secs_f64();

    let mut aggregate = Vec::new();
    let mut step = |name: &str, f: &dyn Fn() -> Result<usize>| -> Result<()> {
        let t = Instant::now();
        let n = f()?;
        aggregate.push((format!("{name} ({n} rows)"), t.elapsed().as_secs_f64()));
        Ok(())
    };
    step(
        "points",
        &|| Ok(pipeline::point_summary(&results)?.height()),
    )?;
    step("speedup", &|| {
        Ok(pipeline::speedup(&results, "stock")?.height())
    })?;
    step("nodes", &|| Ok(pipeline::node_summary(&results)?.height()))?;
    step("hand-offs", &|| {
        Ok(pipeline::handoff_summary(&results)?.height())
    })?;
    step("threads", &|| {
        Ok(pipeline::thread_summary(&results)?.height())
    })?;
    let aggregate_s: f64 = aggregate.iter().map(|(_, s)| s).sum();

    let t2 = Instant::now();
    let verdicts = claims::evaluate(&plan, &results);
    let claims_s = t2.elapsed().as_secs_f64();
    if let Some(bad) = verdicts.iter().find(|c| c.verdict != claims::Verdict::Pass) {
        return Err(Error::Results(format!(
            "bench claim {} is {}, expected pass: {}",
            bad.id, bad.verdict, bad.detail
        )));
    }
    Ok(BenchResult {
        rows: points * (THREADS * REPS) as usize,
        points,
        generate_s,
        load_s,
        aggregate,
        aggregate_s,
        claims_s,
        claims: verdicts.len(),
        total_s: load_s + aggregate_s + claims_s,
        peak_rss_bytes: vm_hwm(),
        peak_reset,
        profile: profile(),
    })
}

fn profile() -> &'static str {
    if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    }
}
