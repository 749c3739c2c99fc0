//! The default figures: which apply to a results directory, and the data of each.

use super::draw::safe_name;
use super::facets::{facet_name, facet_suffix, metric_vs, slug, VsSpec};
use super::figure::{wants_log, BarFig, BarGroup, Fig, HeatFig, Kind, Line, LineFig};
use super::format::{metric_label, Unit};
use super::spec::{key_value, rows, series_name, spec_fig};
use crate::error::Result;
use crate::pipeline::{self, estimates, f64_values, str_values};
use crate::store::Results;
use locklab_model::plan::{ClaimKind, Expr as CExpr, Plan, Point, Value};
use polars::prelude::DataFrame;
use std::collections::{BTreeMap, BTreeSet};

/// The summaries the figures are drawn from, computed once per report.
pub(super) struct Summaries {
    /// One row per point × mode.
    pub(super) points: DataFrame,
    /// One row per thread and wait class of each point × mode.
    pub(super) threads: DataFrame,
    /// One row per node and wait class of each point × mode.
    pub(super) nodes: DataFrame,
    /// One row per (from node, to node) of each point × mode.
    pub(super) handoffs: DataFrame,
}

/// The baseline lock named by the plan's claims or plots, if any.
pub(super) fn known_baseline(plan: &Plan) -> Option<String> {
    fn walk(e: &CExpr) -> Option<String> {
        match e {
            CExpr::Metric(m) => m.baseline.clone(),
            CExpr::Const { .. } => None,
            CExpr::Binary { lhs, rhs, .. } => walk(lhs).or_else(|| walk(rhs)),
        }
    }
    plan.plots
        .iter()
        .find_map(|p| p.baseline.clone())
        .or_else(|| {
            plan.claims.iter().find_map(|c| match &c.kind {
                ClaimKind::Band { expr, .. } => walk(expr),
                ClaimKind::Ordering { exprs, .. } => exprs.iter().find_map(walk),
                ClaimKind::Trend { metric, .. } => metric.baseline.clone(),
            })
        })
}

/// What a per-point figure is about: its lock, then every other axis that varies
/// among `pts` (`cna15, workload=lock2, threshold=10ms, threads=142`).
pub(crate) fn point_label(p: &Point, pts: &[&Point]) -> String {
    let mut keys = vec!["lock".to_string()];
    keys.extend(varying_in(pts, &p.axes).into_iter().filter(|k| k != "lock"));
    if !keys.iter().any(|k| k == "threads") {
        keys.push("threads".into());
    }
    series_name(p, &keys)
}

/// Axes of `axes` (plus threads) whose value differs among `pts`, in sweep order.
pub(super) fn varying_in(pts: &[&Point], axes: &BTreeMap<String, Value>) -> Vec<String> {
    let mut keys: Vec<String> = Vec::new();
    let order: Vec<String> = pts
        .first()
        .map(|p| {
            p.id.split(',')
                .filter_map(|kv| kv.split('=').next())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    for k in order
        .iter()
        .chain(axes.keys())
        .chain(["threads".to_string()].iter())
    {
        if keys.contains(k) {
            continue;
        }
        let vals: BTreeSet<String> = pts
            .iter()
            .map(|q| key_value(q, k).map(|v| v.label()).unwrap_or_default())
            .collect();
        if vals.len() > 1 {
            keys.push(k.clone());
        }
    }
    keys
}

/// Points to show in per-thread, per-node, CDF and heat-map figures: per lock,
/// the point with the most threads (then the first in plan order), at most `max`.
pub(super) fn showcase(plan: &Plan, df: &DataFrame, mode: &str, max: usize) -> Result<Vec<u32>> {
    let rows = rows(plan, df)?;
    let mut best: BTreeMap<&str, &Point> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.mode == mode) {
        let e = best.entry(r.point.lock.name.as_str()).or_insert(r.point);
        if r.point.threads > e.threads {
            *e = r.point;
        }
    }
    let mut v: Vec<u32> = best.values().map(|p| p.index as u32).collect();
    v.sort_unstable();
    v.truncate(max);
    Ok(v)
}

pub(super) fn modes_of(df: &DataFrame) -> Result<Vec<String>> {
    let mut m: Vec<String> = str_values(df, "mode")?
        .into_iter()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    m.sort_by_key(|x| (x != "sim", x.clone()));
    Ok(m)
}

pub(super) fn figures(results: &Results) -> Result<(Vec<Fig>, Vec<String>)> {
    let mut warnings = Vec::new();
    let plan = results.plan();
    let summary = pipeline::point_summary(results)?;
    let modes = modes_of(&summary)?;
    let mut figs = Vec::new();
    let threads_vary = plan
        .points
        .iter()
        .map(|p| p.threads)
        .collect::<BTreeSet<_>>()
        .len()
        > 1;
    let baseline = known_baseline(plan);
    let speed = match &baseline {
        Some(b) => match pipeline::speedup(results, b) {
            Ok(df) => Some(df),
            Err(e) => {
                warnings.push(format!("no speedup figures: {e}"));
                None
            }
        },
        None => None,
    };
    let thread_sum = pipeline::thread_summary(results)?;
    let node_sum = pipeline::node_summary(results)?;
    let hand = pipeline::handoff_summary(results)?;
    let cdfs = pipeline::wait_cdfs(results)?;

    for mode in &modes {
        // Throughput vs threads, one line per lock (and other axes).
        if threads_vary {
            let vs = VsSpec::new("throughput_ops_s", "threads", mode);
            for facet in metric_vs(plan, &summary, &vs)? {
                figs.push(Fig {
                    name: facet_name("throughput_vs_threads", &facet.label, mode),
                    title: format!("Throughput vs threads{}", facet_suffix(&facet.label, mode)),
                    caption: "Median throughput over repetitions; bars: 95 % interval.".into(),
                    kind: Kind::Line(facet.fig),
                });
            }
        }
        // Speedup vs each non-lock axis with several values.
        if let (Some(b), Some(sp)) = (&baseline, &speed) {
            let lock_cols = lock_axis_names(plan);
            // Numeric axes only: a speedup against a list of names says little.
            for a in plan.axes.iter().filter(|a| {
                a.values.len() > 1
                    && !lock_cols.contains(&a.name)
                    && a.values.iter().all(|v| v.as_f64().is_some())
            }) {
                // Against any axis but threads: at the most threads of each series,
                // where the axis matters (one socket's points all sit at 1.0).
                let most = a.name != "threads" && threads_vary;
                let vs = VsSpec {
                    log: (None, Some(false)),
                    skip_lock: Some(b),
                    at_most_threads: most,
                    ..VsSpec::new("speedup", &a.name, mode)
                };
                for facet in metric_vs(plan, sp, &vs)? {
                    let at = match (most, facet.threads.len()) {
                        (false, _) => String::new(),
                        (true, 1) => format!(
                            " at {} threads",
                            facet.threads.iter().next().copied().unwrap_or(0)
                        ),
                        (true, _) => " at the most threads".to_string(),
                    };
                    figs.push(Fig {
                        name: facet_name(&format!("speedup_vs_{}", a.name), &facet.label, mode),
                        title: format!(
                            "Speedup over {b} vs {}{at}{}",
                            a.name,
                            facet_suffix(&facet.label, mode)
                        ),
                        caption: if most {
                            format!("Throughput ÷ throughput of the baseline point on {b} (the same values of every axis but the lock and its own parameters), at the largest thread count of each series; bars: 95 % bootstrap interval. Speedup vs threads shows every thread count.")
                        } else {
                            format!("Throughput ÷ throughput of the baseline point on {b} (the same values of every axis but the lock and its own parameters); bars: 95 % bootstrap interval.")
                        },
                        kind: Kind::Line(facet.fig),
                    });
                }
            }
        }
        // Fairness vs throughput.
        for (metric, what) in [
            ("jain", "Jain's index"),
            ("fairness_factor", "fairness factor"),
        ] {
            if let Some(f) = scatter(plan, &summary, metric, mode)? {
                figs.push(Fig {
                    name: format!("{metric}_vs_throughput-{mode}"),
                    title: format!("{what} vs throughput ({mode})"),
                    caption: "Each marker is one point (median over repetitions); colour = lock."
                        .into(),
                    kind: Kind::Line(f),
                });
            }
        }
        let show = showcase(plan, &summary, mode, 4)?;
        let in_mode: Vec<&Point> = rows(plan, &summary)?
            .into_iter()
            .filter(|r| r.mode == *mode)
            .map(|r| r.point)
            .collect();
        for p in &show {
            let point = &plan.points[*p as usize];
            let label = point_label(point, &in_mode);
            let file = slug(&label);
            if let Some(f) = thread_bars(&thread_sum, *p, mode)? {
                figs.push(Fig {
                    name: format!("wait_per_thread-{file}-{mode}"),
                    title: format!("Wait per thread: {label} ({mode})"),
                    caption: format!("Point {}: wait p50 / p99 / max per thread (CPU in brackets), medians over repetitions.", point.id),
                    kind: Kind::Bar(f),
                });
            }
            if let Some(f) = node_bars(&node_sum, *p, mode)? {
                figs.push(Fig {
                    name: format!("wait_per_node-{file}-{mode}"),
                    title: format!("Wait per node: {label} ({mode})"),
                    caption: format!("Point {}: per node, p50 = median of its threads' p50, p99 and max = largest of its threads'.", point.id),
                    kind: Kind::Bar(f),
                });
            }
            if let Some(f) = heat(&hand, *p, mode)? {
                figs.push(Fig {
                    name: format!("handoff_heatmap-{file}-{mode}"),
                    title: format!("Node-to-node wait p99: {label} ({mode})"),
                    caption: format!("Point {}: the next holder's wait p99 by (previous holder's node, next holder's node); hand-off counts in brackets.", point.id),
                    kind: Kind::Heat(f),
                });
            }
        }
        if let Some(f) = cdf_fig(plan, &cdfs, &show, mode) {
            figs.push(Fig {
                name: format!("wait_cdf-{mode}"),
                title: format!("Wait-time CDF ({mode})"),
                caption: "Fraction of acquisitions that waited at most x (median over repetitions, per quantile).".into(),
                kind: Kind::Line(f),
            });
        }
    }
    // The plan's own plots.
    let sums = Summaries {
        points: summary,
        threads: thread_sum,
        nodes: node_sum,
        handoffs: hand,
    };
    for (i, spec) in plan.plots.iter().enumerate() {
        for mode in &modes {
            let kinds = match spec_fig(results, &sums, spec, mode) {
                Ok(k) => k,
                Err(e) => {
                    warnings.push(format!("plot {} ({mode}): {e}", i + 1));
                    Vec::new()
                }
            };
            for (facet, kind) in kinds {
                let title = spec
                    .title
                    .clone()
                    .unwrap_or_else(|| format!("{} vs {}", metric_label(&spec.metric), spec.x));
                figs.push(Fig {
                    name: facet_name(
                        &format!("plot{}-{}", i + 1, safe_name(&spec.metric)),
                        &facet,
                        mode,
                    ),
                    title: format!("{title}{}", facet_suffix(&facet, mode)),
                    caption: format!(
                        "Plot {} of the experiment: {} against {}.",
                        i + 1,
                        spec.metric,
                        spec.x
                    ),
                    kind,
                });
            }
        }
    }
    Ok((figs, warnings))
}

/// The axes that choose a lock ([`locklab_model::plan::LockSpec::axis`]).
pub(super) fn lock_axis_names(plan: &Plan) -> BTreeSet<String> {
    plan.points
        .iter()
        .filter_map(|p| p.lock.axis.clone())
        .collect()
}

pub(super) fn scatter(
    plan: &Plan,
    df: &DataFrame,
    metric: &str,
    mode: &str,
) -> Result<Option<LineFig>> {
    let tp = estimates(df, "throughput_ops_s")?;
    let y = estimates(df, metric)?;
    let mut by_lock: BTreeMap<String, Vec<(f64, f64, f64, f64)>> = BTreeMap::new();
    for r in rows(plan, df)?.into_iter().filter(|r| r.mode == mode) {
        if tp[r.i].is_nan() || y[r.i].is_nan() {
            continue;
        }
        by_lock.entry(r.point.lock.name.clone()).or_default().push((
            tp[r.i].value,
            y[r.i].value,
            y[r.i].lo,
            y[r.i].hi,
        ));
    }
    if by_lock.is_empty() {
        return Ok(None);
    }
    let lines: Vec<Line> = by_lock
        .into_iter()
        .map(|(name, pts)| Line { name, pts })
        .collect();
    let log_x = wants_log(lines.iter().flat_map(|l| l.pts.iter().map(|p| p.0)));
    Ok(Some(LineFig {
        x_label: metric_label("throughput_ops_s"),
        y_label: metric_label(metric),
        x_unit: Unit::Plain,
        y_unit: Unit::Plain,
        lines,
        log_x,
        log_y: false,
        x_cats: None,
        markers_only: true,
    }))
}

pub(super) fn filter_point(df: &DataFrame, p: u32, mode: &str) -> Result<Vec<usize>> {
    let pts = f64_values(df, "point")?;
    let modes = str_values(df, "mode")?;
    Ok((0..df.height())
        .filter(|&i| pts[i] as u32 == p && modes[i] == mode)
        .collect())
}

pub(super) fn wait_groups(df: &DataFrame, idx: &[usize]) -> Result<Vec<BarGroup>> {
    let mut groups = Vec::new();
    for (m, name) in [
        ("wait_p50_ns", "p50"),
        ("wait_p99_ns", "p99"),
        ("wait_max_ns", "max"),
    ] {
        let e = estimates(df, m)?;
        groups.push((
            name.to_string(),
            idx.iter()
                .map(|&i| (e[i].value, e[i].lo, e[i].hi))
                .collect(),
        ));
    }
    Ok(groups)
}

pub(super) fn thread_bars(df: &DataFrame, p: u32, mode: &str) -> Result<Option<BarFig>> {
    let mut idx = filter_point(df, p, mode)?;
    let classes = str_values(df, "class")?;
    // The main wait class only: the first one of the point.
    if let Some(&first) = idx.first() {
        let c = classes[first].clone();
        idx.retain(|&i| classes[i] == c);
    }
    if idx.len() < 2 || idx.len() > 160 {
        return Ok(None);
    }
    let thread = f64_values(df, "thread")?;
    let cpu = f64_values(df, "cpu")?;
    let cats = idx
        .iter()
        .map(|&i| format!("{} ({})", thread[i], cpu[i]))
        .collect();
    let groups = wait_groups(df, &idx)?;
    let log_y = wants_log(groups.iter().flat_map(|g| g.1.iter().map(|v| v.0)));
    Ok(Some(BarFig {
        x_label: "thread (cpu)".into(),
        y_label: "wait (ns)".into(),
        cats,
        groups,
        log_y,
    }))
}

pub(super) fn node_bars(df: &DataFrame, p: u32, mode: &str) -> Result<Option<BarFig>> {
    let mut idx = filter_point(df, p, mode)?;
    let classes = str_values(df, "class")?;
    if let Some(&first) = idx.first() {
        let c = classes[first].clone();
        idx.retain(|&i| classes[i] == c);
    }
    if idx.len() < 2 {
        return Ok(None);
    }
    let node = f64_values(df, "node")?;
    let cats = idx.iter().map(|&i| format!("node {}", node[i])).collect();
    let groups = wait_groups(df, &idx)?;
    let log_y = wants_log(groups.iter().flat_map(|g| g.1.iter().map(|v| v.0)));
    Ok(Some(BarFig {
        x_label: "NUMA node".into(),
        y_label: "wait (ns)".into(),
        cats,
        groups,
        log_y,
    }))
}

pub(super) fn heat(df: &DataFrame, p: u32, mode: &str) -> Result<Option<HeatFig>> {
    let idx = filter_point(df, p, mode)?;
    let from = f64_values(df, "from_node")?;
    let to = f64_values(df, "to_node")?;
    let nodes: Vec<u32> = idx
        .iter()
        .flat_map(|&i| [from[i] as u32, to[i] as u32])
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if nodes.len() < 2 {
        return Ok(None);
    }
    let p99 = estimates(df, "wait_p99_ns")?;
    let count = estimates(df, "count")?;
    let n = nodes.len();
    let mut value = vec![vec![f64::NAN; n]; n];
    let mut counts = vec![vec![0.0; n]; n];
    for &i in &idx {
        let a = nodes.iter().position(|&x| x == from[i] as u32).unwrap_or(0);
        let b = nodes.iter().position(|&x| x == to[i] as u32).unwrap_or(0);
        value[a][b] = p99[i].value;
        counts[a][b] = count[i].value;
    }
    Ok(Some(HeatFig {
        nodes,
        value,
        count: counts,
        value_label: "wait p99".into(),
    }))
}

pub(super) fn cdf_fig(
    plan: &Plan,
    cdfs: &[pipeline::CdfRow],
    show: &[u32],
    mode: &str,
) -> Option<LineFig> {
    let q = locklab_model::records::CDF_QUANTILES;
    let lines: Vec<Line> = cdfs
        .iter()
        .filter(|c| c.mode == mode && show.contains(&c.point))
        .map(|c| Line {
            name: format!(
                "{} ({} threads)",
                c.lock,
                plan.points
                    .get(c.point as usize)
                    .map(|p| p.threads)
                    .unwrap_or(0)
            ),
            pts: c
                .quantiles_ns
                .iter()
                .zip(q)
                .filter(|(v, _)| v.is_finite())
                .map(|(v, q)| (*v, q, q, q))
                .collect(),
        })
        .filter(|l| l.pts.len() > 1)
        .collect();
    if lines.is_empty() {
        return None;
    }
    let log_x = wants_log(lines.iter().flat_map(|l| l.pts.iter().map(|p| p.0)));
    Some(LineFig {
        x_label: "wait (ns)".into(),
        y_label: "fraction of acquisitions".into(),
        x_unit: Unit::Duration,
        y_unit: Unit::Plain,
        lines,
        log_x,
        log_y: false,
        x_cats: None,
        markers_only: false,
    })
}
