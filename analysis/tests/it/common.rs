//! A hand-made plan and synthetic records with known answers.
//!
//! Plan: lock ∈ {stock (qspinlock), cna}, threshold ∈ {10ms, 1ms, 100us} (cna only;
//! stock runs at 10ms, as a `where` filter would leave it), threads ∈ {4, 16}.
//! Throughput of stock: 1e6 at 4 threads, 0.5e6 at 16; cna = stock × S with
//! S = 2.0 / 1.8 / 1.2 at 16 threads (10ms / 1ms / 100us) and 1.0 at 4 threads.
//! Repetition r multiplies every throughput by 1 + 0.01·(r − 2), so the ratio of
//! medians is exactly S and each point's interval is ±2 %.
//!
//! Claims and plots are written by hand with unresolved references, then
//! [`resolve`]d as the language resolves them (with `locklab_model::select`).

use locklab_model::manifest::{HostInfo, Manifest};
use locklab_model::plan::*;
use locklab_model::records::{HandoffRecord, PointRecord, RunRecord, ThreadRecord, CDF_QUANTILES};
use locklab_model::select::{self, BaselineQuery};
use std::collections::BTreeMap;

pub const REPS: u32 = 5;
pub const MS: u64 = 1_000_000;

pub fn thresholds() -> Vec<Value> {
    vec![
        Value::Duration(10 * MS),
        Value::Duration(MS),
        Value::Duration(100_000),
    ]
}

pub fn plan() -> Plan {
    let mut points = Vec::new();
    let single = Workload::SingleLock {
        critical: Dist::Fixed { ns: 90 },
        outside: Dist::Fixed { ns: 520 },
        lines: 2,
    };
    let mut push = |lock: &str, threshold: Value, threads: u32| {
        let algo = if lock == "cna" {
            LockAlgo::Cna(CnaParams {
                threshold_ns: threshold.as_f64().unwrap() as u64,
                variant: CnaVariant::V15,
                shuffle_skip_prob: 127.0 / 128.0,
            })
        } else {
            LockAlgo::Qspinlock {
                pending_loops: None,
            }
        };
        let mut axes = BTreeMap::new();
        axes.insert("lock".to_string(), Value::Str(lock.into()));
        axes.insert("threshold".to_string(), threshold.clone());
        axes.insert("threads".to_string(), Value::Int(threads as i64));
        let index = points.len();
        points.push(Point {
            index,
            id: format!(
                "lock={lock},threshold={},threads={threads}",
                threshold.label()
            ),
            axes,
            seed: 1000 + index as u64,
            threads,
            lock: LockSpec {
                name: lock.into(),
                algo,
                axis: Some("lock".into()),
                // `lock cna = cna { threshold = $threshold }`: its own parameter.
                params: if lock == "cna" {
                    vec!["threshold".into()]
                } else {
                    vec![]
                },
            },
            workload: single.clone(),
            placement: Placement {
                policy: PlacementKind::WillItScale,
                virtual_nodes: None,
            },
            modes: vec![],
        });
    };
    for threads in [4u32, 16] {
        push("stock", Value::Duration(10 * MS), threads);
        for t in thresholds() {
            push("cna", t, threads);
        }
    }
    Plan {
        schema_version: PLAN_SCHEMA_VERSION,
        experiment: "cna_threshold".into(),
        description: Some("synthetic".into()),
        master_seed: 42,
        topology: Topology::Host { costs: None },
        run: RunSpec {
            modes: vec![Mode::Sim],
            duration_ns: 200 * MS,
            warmup_ns: 10 * MS,
            repetitions: REPS,
            quick_duration_ns: MS,
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
                name: "threshold".into(),
                values: thresholds(),
                zip_group: None,
            },
            Axis {
                name: "threads".into(),
                values: vec![Value::Int(4), Value::Int(16)],
                zip_group: None,
            },
        ],
        points,
        claims: vec![],
        plots: vec![],
        sources: vec![SourceFile {
            path: "cna.lab".into(),
            sha256: "00".repeat(32),
        }],
    }
}

pub fn speedup_of(p: &Point) -> f64 {
    if p.lock.name == "stock" || p.threads == 4 {
        return 1.0;
    }
    match p.axes["threshold"].as_f64().unwrap() as u64 {
        t if t == 10 * MS => 2.0,
        t if t == MS => 1.8,
        _ => 1.2,
    }
}

pub fn throughput(p: &Point, rep: u32) -> f64 {
    let stock = if p.threads == 4 { 1e6 } else { 0.5e6 };
    stock * speedup_of(p) * (1.0 + 0.01 * (rep as f64 - 2.0))
}

pub fn record(plan: &Plan, point: usize, mode: Mode, rep: u32) -> RunRecord {
    let p = &plan.points[point];
    let tp = throughput(p, rep);
    let n = p.threads;
    let mut extra = BTreeMap::new();
    extra.insert("migrations_per_wakeup".to_string(), 0.25 * (rep + 1) as f64);
    let point_rec = PointRecord {
        point: point as u32,
        point_id: p.id.clone(),
        mode,
        rep,
        seed: p.seed + rep as u64,
        lock: p.lock.name.clone(),
        lock_algo: p.lock.algo.kind_name().into(),
        workload: "single".into(),
        threads: n,
        skipped: None,
        skip_cause: None,
        window_ns: 200 * MS,
        acquisitions: (tp * 0.2) as u64,
        ops: (tp * 0.2) as u64,
        waits: Some((tp * 0.1) as u64),
        waits_censored: n as u64 - 1,
        reacquisitions: Some(0),
        throughput_ops_s: tp,
        cpu_ns_per_acq: f64::NAN,
        overhead_ns: f64::NAN,
        jain: 0.9 + 0.01 * rep as f64,
        cov_acq: 0.1,
        max_min: if rep == 0 { f64::INFINITY } else { 1.5 },
        fairness_factor: if p.lock.name == "cna" { 0.55 } else { 0.5 },
        window_fairness_factor_max: 0.58,
        fairness_window_ns: MS,
        wait_p50_ns: 500.0,
        wait_p99_ns: 5000.0 + 100.0 * rep as f64,
        wait_p999_ns: 9000.0,
        wait_max_ns: 20000.0,
        wait_mean_ns: 800.0,
        hold_mean_ns: 90.0,
        bypass_max: 3.0,
        wait_max_censored: false,
        bypass_max_censored: false,
        bypass_mean: 1.0,
        handoff_local_frac: if p.lock.name == "cna" { 0.9 } else { 0.5 },
        cpu_wall_ratio: f64::NAN,
        critical_nominal_ns: 90.0,
        critical_achieved_ns: 90.0,
        outside_nominal_ns: 520.0,
        outside_achieved_ns: 520.0,
        noise: "sim".into(),
        wait_cdf_ns: CDF_QUANTILES
            .iter()
            .map(|q| 100.0 + 10_000.0 * q * q)
            .collect(),
        extra,
    };
    let threads = (0..n)
        .map(|i| ThreadRecord {
            point: point as u32,
            mode,
            rep,
            thread: i,
            cpu: i,
            node: i / (n / 2).max(1),
            class: "lock".into(),
            acquisitions: 1000 + i as u64,
            waits: Some(500),
            waits_censored: 1,
            reacquisitions: Some(0),
            share: 1.0 / n as f64,
            wait_p50_ns: 400.0 + i as f64,
            // Rises with the CPU id: the double-lock gradient.
            wait_p99_ns: 1000.0 * (1.0 + i as f64) + rep as f64,
            wait_p999_ns: 2000.0 * (1.0 + i as f64),
            wait_max_ns: 3000.0 * (1.0 + i as f64),
            wait_mean_ns: 500.0,
            hold_mean_ns: 90.0,
            bypass_max: 2.0,
            wait_max_censored: false,
            bypass_max_censored: false,
            cpu_ns: f64::NAN,
        })
        .collect();
    let mut handoffs = Vec::new();
    for from in 0..2u32 {
        for to in 0..2u32 {
            handoffs.push(HandoffRecord {
                point: point as u32,
                mode,
                rep,
                from_node: from,
                to_node: to,
                distance: if from == to { "local" } else { "remote" }.into(),
                count: if from == to { 900 } else { 100 },
                wait_p50_ns: 300.0,
                wait_p99_ns: if from == to { 2000.0 } else { 8000.0 },
                wait_max_ns: if from == to {
                    4000.0
                } else {
                    30_000.0 + rep as f64
                },
            });
        }
    }
    RunRecord {
        point: point_rec,
        threads,
        handoffs,
    }
}

pub fn all_records(plan: &Plan) -> Vec<RunRecord> {
    let mut v = Vec::new();
    for p in 0..plan.points.len() {
        for r in 0..REPS {
            v.push(record(plan, p, Mode::Sim, r));
        }
    }
    v
}

/// A fixed permutation, so tests see records out of order.
pub fn shuffled<T: Clone>(v: &[T]) -> Vec<T> {
    let mut idx: Vec<usize> = (0..v.len()).collect();
    let mut s: u64 = 12345;
    for i in (1..idx.len()).rev() {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let j = (s >> 33) as usize % (i + 1);
        idx.swap(i, j);
    }
    idx.into_iter().map(|i| v[i].clone()).collect()
}

pub fn manifest(plan: &Plan) -> Manifest {
    Manifest {
        schema_version: 1,
        locklab_version: "0.1.0".into(),
        git_commit: Some("abc123".into()),
        git_dirty: Some(false),
        rustc: Some("rustc 1.85.0".into()),
        build_profile: "debug".into(),
        command_line: vec!["locklab".into(), "run".into(), "cna.lab".into()],
        sources: plan.sources.clone(),
        master_seed: plan.master_seed,
        modes: vec![Mode::Sim],
        quick: false,
        overrides: vec![],
        shard: None,
        started_utc: "2026-01-01T00:00:00Z".into(),
        nonce: String::new(),
        finished_utc: None,
        status: "running".into(),
        host: HostInfo {
            hostname: "labhost".into(),
            kernel: "6.1".into(),
            cpu_model: "Test CPU".into(),
            online_cpus: 2,
            ..HostInfo::default()
        },
        plan: plan.clone(),
        shards: Vec::new(),
    }
}

pub fn mref(metric: &str, select: &[(&str, Value)], baseline: Option<&str>) -> MetricRef {
    MetricRef {
        target: Default::default(),
        metric: metric.into(),
        select: select
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect(),
        baseline: baseline.map(str::to_string),
        baseline_select: vec![],
    }
}

pub fn claim(id: &str, kind: ClaimKind) -> Claim {
    Claim {
        id: id.into(),
        text: format!("claim {id}"),
        source: Some("v15 cover letter".into()),
        file: "cna.lab".into(),
        line: 10,
        gating: true,
        kind,
        modes: vec![],
        skipped: None,
    }
}

pub fn metric(m: MetricRef) -> Expr {
    Expr::Metric(m)
}

pub fn s(x: &str) -> Value {
    Value::Str(x.into())
}

/// A finished results directory with every record.
pub fn results_dir(plan: &Plan) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let m = manifest(plan);
    let mut w = locklab_analysis::ResultsWriter::create(dir.path(), &m).unwrap();
    for r in shuffled(&all_records(plan)) {
        w.write(&r).unwrap();
    }
    w.finish(&m).unwrap();
    dir
}

// ---------------------------------------------------------------------------
// Resolving references, as the language does

fn named_mode(select: &[(String, Value)]) -> Option<Mode> {
    [Mode::Sim, Mode::Native].into_iter().find(|m| {
        select
            .iter()
            .any(|(k, v)| k == "mode" && *v == s(m.as_str()))
    })
}

/// What `m` reads at point `p`: its baseline by the rule, its row selectors, and
/// the modes both run in (the selection's, if it names one).
fn target_at(plan: &Plan, m: &MetricRef, p: &Point) -> Target {
    let named = named_mode(&m.select);
    let mut modes: Vec<Mode> = [Mode::Sim, Mode::Native]
        .into_iter()
        .filter(|x| named.is_none_or(|n| n == *x) && select::runs_in(p, *x))
        .collect();
    let baseline = m.baseline.as_deref().map(|lock| {
        let query = BaselineQuery {
            lock,
            pinned: &m.baseline_select,
        };
        let b = select::baseline(&plan.axes, &plan.points, p, &query)
            .unwrap_or_else(|e| panic!("{}: no baseline: {e:?}", p.id));
        modes.retain(|x| select::runs_in(&plan.points[b], *x));
        b as u32
    });
    Target {
        point: p.index as u32,
        baseline,
        rows: m
            .select
            .iter()
            .filter(|(k, _)| select::is_row_key(k))
            .cloned()
            .collect(),
        modes,
    }
}

/// The points `m` matches; they may differ in `free` only.
fn matched<'p>(plan: &'p Plan, m: &MetricRef, free: Option<&str>) -> Vec<&'p Point> {
    let pts: Vec<&Point> = plan
        .points
        .iter()
        .filter(|p| select::matches(p, &m.select))
        .collect();
    let varying: Vec<&str> = select::varying_axes(&plan.axes, &pts)
        .into_iter()
        .filter(|a| Some(*a) != free)
        .collect();
    assert!(
        !pts.is_empty() && varying.is_empty(),
        "{} must pin one point: {} match, differing in {varying:?}",
        m.metric,
        pts.len()
    );
    pts
}

fn resolve_ref(plan: &Plan, m: &mut MetricRef) {
    let p = matched(plan, m, None)[0];
    m.target = target_at(plan, m, p);
}

fn resolve_expr(plan: &Plan, e: &mut Expr, out: &mut Vec<(Option<Mode>, Vec<Mode>)>) {
    match e {
        Expr::Metric(m) => {
            resolve_ref(plan, m);
            out.push((named_mode(&m.select), m.target.modes.clone()));
        }
        Expr::Const { .. } => {}
        Expr::Binary { lhs, rhs, .. } => {
            resolve_expr(plan, lhs, out);
            resolve_expr(plan, rhs, out);
        }
    }
}

fn resolve_trend(plan: &Plan, metric: &MetricRef, axis: &str, listed: &[Value]) -> TrendSeries {
    let pts = matched(plan, metric, Some(axis));
    let step = |value: &Value, target: Target| {
        let mut m = metric.clone();
        m.select.push((axis.to_string(), value.clone()));
        m.target = target;
        TrendStep {
            value: value.clone(),
            metric: m,
        }
    };
    let Some(a) = plan.axes.iter().find(|a| a.name == axis) else {
        let target = target_at(plan, metric, pts[0]);
        if listed.is_empty() {
            return TrendSeries::Rows { target };
        }
        let steps = listed
            .iter()
            .map(|v| {
                let mut t = target.clone();
                t.rows.push((axis.to_string(), v.clone()));
                step(v, t)
            })
            .collect();
        return TrendSeries::Steps { steps };
    };
    let mut values = if listed.is_empty() {
        a.values.clone()
    } else {
        listed.to_vec()
    };
    if listed.is_empty() && values.iter().all(|v| v.as_f64().is_some()) {
        values.sort_by(|x, y| x.as_f64().unwrap().total_cmp(&y.as_f64().unwrap()));
    }
    let steps = values
        .iter()
        .filter_map(|v| {
            let p = pts
                .iter()
                .find(|p| p.axes.get(axis).is_some_and(|x| select::same_value(x, v)))?;
            Some(step(v, target_at(plan, metric, p)))
        })
        .collect();
    TrendSeries::Steps { steps }
}

/// Resolve every claim and plot of `plan` as the language does: each reference's
/// target, each trend's steps, each claim's modes, each plot's points. Panics on
/// a reference the language would reject.
pub fn resolve(plan: &mut Plan) {
    let all = [Mode::Sim, Mode::Native];
    let snapshot = plan.clone();
    for c in &mut plan.claims {
        let mut readable: Vec<(Option<Mode>, Vec<Mode>)> = Vec::new();
        match &mut c.kind {
            ClaimKind::Band { expr, .. } => resolve_expr(&snapshot, expr, &mut readable),
            ClaimKind::Ordering { exprs, .. } => {
                for e in exprs {
                    resolve_expr(&snapshot, e, &mut readable);
                }
            }
            ClaimKind::Trend {
                metric,
                axis,
                values,
                series,
                ..
            } => {
                *series = resolve_trend(&snapshot, metric, axis, values);
                let modes = match series {
                    TrendSeries::Rows { target } => target.modes.clone(),
                    TrendSeries::Steps { steps } => all
                        .into_iter()
                        .filter(|m| {
                            steps
                                .iter()
                                .filter(|s| s.metric.target.modes.contains(m))
                                .count()
                                >= 2
                        })
                        .collect(),
                };
                readable.push((named_mode(&metric.select), modes));
            }
        }
        c.modes = if readable.iter().all(|(named, _)| named.is_some()) {
            readable.first().and_then(|r| r.0).into_iter().collect()
        } else {
            all.into_iter()
                .filter(|m| {
                    readable
                        .iter()
                        .all(|(n, can)| n.is_some() || can.contains(m))
                })
                .collect()
        };
        assert!(!c.modes.is_empty(), "{}: no common mode", c.id);
    }
    for plot in &mut plan.plots {
        let m = MetricRef {
            metric: plot.metric.clone(),
            select: plot.select.clone(),
            baseline: plot.baseline.clone(),
            baseline_select: vec![],
            target: Target::default(),
        };
        plot.targets = snapshot
            .points
            .iter()
            .filter(|p| select::matches(p, &m.select))
            .filter(|p| m.baseline.as_ref() != Some(&p.lock.name))
            .map(|p| target_at(&snapshot, &m, p))
            .collect();
    }
}

/// `plan` with `claims`, resolved.
pub fn with_claims(mut plan: Plan, claims: Vec<Claim>) -> Plan {
    plan.claims = claims;
    resolve(&mut plan);
    plan
}
