//! The default figures: which apply to a results directory, and the data of each.

use super::draw::safe_name;
use super::facets::Facet;
use super::facets::{facet_name, facet_suffix, metric_vs, slug, VsSpec};
use super::figure::{
    wants_log, BarFig, BarGroup, Bound, Boundary, Fig, HeatFig, Kind, Line, LineFig,
};
use super::format::{metric_label, Unit};
use super::spec::{key_value, rows, series_name, spec_fig};
use crate::error::Result;
use crate::pipeline::{self, estimates, f64_values, str_values};
use crate::store::Results;
use locklab_model::plan::{ClaimKind, Expr as CExpr, LockAlgo, Plan, Point, Value};
use locklab_model::units;
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
        .filter(|p| p.skipped.is_none())
        .find_map(|p| p.baseline.clone())
        .or_else(|| {
            plan.claims
                .iter()
                .filter(|c| c.skipped.is_none())
                .find_map(|c| match &c.kind {
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

    // Throughput vs threads: sim and native on one figure when both ran (colour: the
    // series, marker and dash: the mode), unless a plot of the plan already shows it.
    if threads_vary && !plan_plots(plan, "throughput_ops_s", "threads") {
        let mut per_mode = Vec::new();
        for mode in &modes {
            let vs = VsSpec::new("throughput_ops_s", "threads", mode);
            let mut facets = metric_vs(plan, &summary, &vs)?;
            for f in &mut facets {
                f.fig.boundaries = node_boundaries(plan, &thread_sum, mode, 0.5)?;
            }
            per_mode.push((mode.clone(), facets));
        }
        for (label, fig, shown) in overlay_modes(per_mode) {
            figs.push(Fig {
                name: facet_name("throughput_vs_threads", &label, &shown.join("_")),
                title: format!(
                    "Throughput vs threads{}",
                    facet_suffix(&label, &shown.join(" and "))
                ),
                caption: "Median throughput over repetitions; bars: 95 % interval; dotted lines: the thread count from which threads run on another NUMA node.".into(),
                kind: Kind::Line(fig),
            });
        }
    }
    for mode in &modes {
        // Speedup vs each non-lock axis with several values.
        if let (Some(b), Some(sp)) = (&baseline, &speed) {
            let lock_cols = lock_axis_names(plan);
            // Numeric axes only: a speedup against a list of names says little.
            for a in plan.axes.iter().filter(|a| {
                a.values.len() > 1
                    && !lock_cols.contains(&a.name)
                    && a.values.iter().all(|v| v.as_f64().is_some())
                    && !plan_plots(plan, "speedup", &a.name)
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
                for mut facet in metric_vs(plan, sp, &vs)? {
                    if a.name == "threads" {
                        facet.fig.boundaries = node_boundaries(plan, &thread_sum, mode, 0.5)?;
                    }
                    facet.fig.bounds =
                        claim_bounds(plan, ("speedup", &a.name), mode, &facet.points, &[]);
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
                            format!("Throughput ÷ throughput of the baseline point on {b} (the same values of every axis but the lock and its own parameters), at the largest thread count of each series; bars: 95 % bootstrap interval; dashed red: claims' bounds. Speedup vs threads shows every thread count.")
                        } else {
                            format!("Throughput ÷ throughput of the baseline point on {b} (the same values of every axis but the lock and its own parameters); bars: 95 % bootstrap interval; dashed red: claims' bounds.")
                        },
                        kind: Kind::Line(facet.fig),
                    });
                }
            }
        }
        // Fairness vs throughput: Jain's index (the fairness factor tells the same
        // story in another scale; a plot of the plan can ask for it).
        if let Some(f) = scatter(plan, &summary, "jain", mode)? {
            figs.push(Fig {
                name: format!("jain_vs_throughput-{mode}"),
                title: format!("Jain's index vs throughput ({mode})"),
                caption: "Each marker is one point (median over repetitions); colour = lock; 1 is fair, 1/n is one thread taking everything.".into(),
                kind: Kind::Line(f),
            });
        }
        let show = showcase(plan, &summary, mode, 4)?;
        let in_mode: Vec<&Point> = rows(plan, &summary)?
            .into_iter()
            .filter(|r| r.mode == *mode)
            .map(|r| r.point)
            .collect();
        // Waits per thread of the showcased points, one strip per point.
        if let Some(mut f) = thread_strips(plan, &thread_sum, &show, mode, &in_mode)? {
            let largest = show
                .iter()
                .copied()
                .max_by_key(|&p| plan.points[p as usize].threads);
            if let Some(p) = largest {
                f.boundaries = thread_node_starts(&thread_sum, p, mode, -0.5)?;
            }
            figs.push(Fig {
                name: format!("wait_per_thread-{mode}"),
                title: format!("Wait p99 per thread ({mode})"),
                caption: "Each thread's wait p99 (median over repetitions; bars: 95 % interval), for the point with the most threads of each lock; dotted lines: the first thread on each further NUMA node.".into(),
                kind: Kind::Line(f),
            });
        }
        // Per node and node to node: two locks, the NUMA-aware one and its baseline
        // first.
        let mut by_node = show.clone();
        by_node.sort_by_key(|&p| {
            let lock = &plan.points[p as usize].lock;
            let rank = if matches!(lock.algo, LockAlgo::Cna(_)) {
                0
            } else if Some(&lock.name) == baseline.as_ref() {
                1
            } else {
                2
            };
            (rank, p)
        });
        for p in by_node.iter().take(2) {
            let point = &plan.points[*p as usize];
            let label = point_label(point, &in_mode);
            let file = slug(&label);
            if let Some(f) = node_bars(&node_sum, &thread_sum, *p, mode)? {
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
                    caption: format!("Point {}: the next holder's wait p99 by (previous holder's node, next holder's node), log colour scale; hand-off counts in brackets.", point.id),
                    kind: Kind::Heat(f),
                });
            }
        }
        if let Some(f) = ccdf_fig(plan, &cdfs, &show, mode) {
            figs.push(Fig {
                name: format!("wait_ccdf-{mode}"),
                title: format!("Wait-time tail ({mode})"),
                caption: "Fraction of acquisitions that waited longer than x, on log axes (quantiles 0 to 0.99999 of the wait; median over repetitions, per quantile).".into(),
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
        if let Some(why) = &spec.skipped {
            warnings.push(format!("plot {} is not drawn: {why}", i + 1));
            continue;
        }
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
        .map(|(name, pts)| Line::new(name, pts))
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
        ..Default::default()
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

/// Waits per node of point `p`: only when some node holds two threads or more (with
/// one thread per node, the per-thread figure already shows it).
pub(super) fn node_bars(
    df: &DataFrame,
    threads: &DataFrame,
    p: u32,
    mode: &str,
) -> Result<Option<BarFig>> {
    let per_node = thread_nodes(threads, p, mode)?;
    let mut counts: BTreeMap<u32, usize> = BTreeMap::new();
    for (_, n) in &per_node {
        *counts.entry(*n).or_default() += 1;
    }
    if counts.values().all(|&c| c < 2) {
        return Ok(None);
    }
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

/// The wait-time CCDF of the showcased points: P(wait > x) against x on log axes, from
/// the stored quantiles (the maximum, where P = 0, is left out).
pub(super) fn ccdf_fig(
    plan: &Plan,
    cdfs: &[pipeline::CdfRow],
    show: &[u32],
    mode: &str,
) -> Option<LineFig> {
    let q = locklab_model::records::CDF_QUANTILES;
    let lines: Vec<Line> = cdfs
        .iter()
        .filter(|c| c.mode == mode && show.contains(&c.point))
        .map(|c| {
            let threads = plan
                .points
                .get(c.point as usize)
                .map(|p| p.threads)
                .unwrap_or(0);
            let pts = c
                .quantiles_ns
                .iter()
                .zip(q)
                .filter(|(v, q)| v.is_finite() && **v > 0.0 && *q < 1.0)
                .map(|(v, q)| (*v, 1.0 - q, 1.0 - q, 1.0 - q))
                .collect();
            Line::new(format!("{} ({threads} threads)", c.lock), pts)
        })
        .filter(|l| l.pts.len() > 1)
        .collect();
    if lines.is_empty() {
        return None;
    }
    let log_x = wants_log(lines.iter().flat_map(|l| l.pts.iter().map(|p| p.0)));
    Some(LineFig {
        x_label: "wait".into(),
        y_label: "fraction of acquisitions waiting longer".into(),
        x_unit: Unit::Duration,
        y_unit: Unit::Plain,
        lines,
        log_x,
        log_y: true,
        x_cats: None,
        markers_only: false,
        ..Default::default()
    })
}

/// Whether a `plot` of the plan already shows `metric` against `x` over whole points
/// (no row selector): the default figure would repeat it.
pub(super) fn plan_plots(plan: &Plan, metric: &str, x: &str) -> bool {
    plan.plots.iter().any(|p| {
        p.skipped.is_none()
            && p.metric == metric
            && p.x == x
            && p.targets.iter().all(|t| t.rows.is_empty())
    })
}

/// One figure per facet with every mode's lines: a facet label present in several
/// modes gets their lines together, the series' colour kept across modes and the
/// mode told by marker and dash. Returns (facet label, figure, modes shown).
pub(super) fn overlay_modes(
    per_mode: Vec<(String, Vec<Facet>)>,
) -> Vec<(String, LineFig, Vec<String>)> {
    let mut out: Vec<(String, LineFig, Vec<String>)> = Vec::new();
    let several = per_mode.iter().filter(|(_, f)| !f.is_empty()).count() > 1;
    for (variant, (mode, facets)) in per_mode.into_iter().enumerate() {
        for facet in facets {
            let slot = match out.iter().position(|o| o.0 == facet.label) {
                Some(i) => i,
                None => {
                    let fig = LineFig {
                        lines: Vec::new(),
                        ..facet.fig.clone()
                    };
                    out.push((facet.label.clone(), fig, Vec::new()));
                    out.len() - 1
                }
            };
            let (_, fig, modes) = &mut out[slot];
            modes.push(mode.clone());
            fig.log_x |= facet.fig.log_x;
            fig.log_y |= facet.fig.log_y;
            for mut line in facet.fig.lines {
                if several {
                    line.name = format!("{} ({mode})", line.name);
                }
                line.style = Some((0, variant));
                fig.lines.push(line);
            }
            for b in facet.fig.boundaries {
                if !fig.boundaries.contains(&b) {
                    fig.boundaries.push(b);
                }
            }
        }
    }
    // Colours by series name without the mode, in first-seen order.
    for (_, fig, _) in &mut out {
        let mut names: Vec<String> = Vec::new();
        for line in &mut fig.lines {
            let base = line
                .name
                .rsplit_once(" (")
                .map(|(b, _)| b.to_string())
                .filter(|_| several)
                .unwrap_or_else(|| line.name.clone());
            let c = match names.iter().position(|n| *n == base) {
                Some(i) => i,
                None => {
                    names.push(base);
                    names.len() - 1
                }
            };
            let variant = line.style.map(|s| s.1).unwrap_or(0);
            line.style = Some((c, if several { variant } else { c / 10 }));
        }
    }
    out
}

/// (thread, node) of point `p` in `mode`, by thread, from its first wait class.
pub(super) fn thread_nodes(df: &DataFrame, p: u32, mode: &str) -> Result<Vec<(u32, u32)>> {
    let mut idx = filter_point(df, p, mode)?;
    let classes = str_values(df, "class")?;
    if let Some(&first) = idx.first() {
        let c = classes[first].clone();
        idx.retain(|&i| classes[i] == c);
    }
    let thread = f64_values(df, "thread")?;
    let node = f64_values(df, "node")?;
    let mut v: Vec<(u32, u32)> = idx
        .iter()
        .map(|&i| (thread[i] as u32, node[i] as u32))
        .collect();
    v.sort_unstable();
    Ok(v)
}

/// Where point `p`'s threads first reach each further NUMA node: a boundary at the
/// first thread on each new node, plus `offset` (+0.5 on a thread-count axis: between
/// the last count without the node and the first with it; -0.5 on a thread axis).
pub(super) fn thread_node_starts(
    df: &DataFrame,
    p: u32,
    mode: &str,
    offset: f64,
) -> Result<Vec<Boundary>> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for (thread, node) in thread_nodes(df, p, mode)? {
        if seen.insert(node) && thread > 0 {
            out.push(Boundary {
                x: thread as f64 + offset,
                label: format!("node {node}"),
            });
        }
    }
    Ok(out)
}

/// Node boundaries for a thread-count axis in `mode`: from the point with the most
/// threads, when every point of the mode shares its placement (else none: the
/// boundaries would differ from series to series).
pub(super) fn node_boundaries(
    plan: &Plan,
    threads: &DataFrame,
    mode: &str,
    offset: f64,
) -> Result<Vec<Boundary>> {
    let pts: Vec<&Point> = plan
        .points
        .iter()
        .filter(|p| p.modes.iter().any(|m| m.as_str() == mode))
        .collect();
    let Some(largest) = pts.iter().max_by_key(|p| p.threads) else {
        return Ok(Vec::new());
    };
    if pts.iter().any(|p| p.placement != largest.placement) {
        return Ok(Vec::new());
    }
    thread_node_starts(threads, largest.index as u32, mode, offset)
}

/// The bounds of the band claims on `metric` over one of `points` in `mode` (with
/// the row selectors `rows`), to draw on a figure of that metric: one line per
/// distinct bound, labelled with the claims that set it.
pub(super) fn claim_bounds(
    plan: &Plan,
    fig: (&str, &str),
    mode: &str,
    points: &BTreeSet<u32>,
    rows: &[(String, Value)],
) -> Vec<Bound> {
    let (metric, x_axis) = fig;
    // (bound, operator) → (claims, x values of their points; None: not on the x axis)
    type Marks = (Vec<String>, Vec<Option<f64>>);
    let mut by_value: Vec<((f64, &'static str), Marks)> = Vec::new();
    for c in &plan.claims {
        let ClaimKind::Band { expr, lo, hi, .. } = &c.kind else {
            continue;
        };
        let CExpr::Metric(m) = expr else {
            continue;
        };
        let t = &m.target;
        if m.metric != metric
            || !points.contains(&t.point)
            || !t.modes.iter().any(|x| x.as_str() == mode)
            || t.rows != rows
        {
            continue;
        }
        let x = plan
            .points
            .get(t.point as usize)
            .and_then(|p| super::spec::key_value(p, x_axis))
            .and_then(|v| v.as_f64());
        for (y, op) in [(*lo, "≥"), (*hi, "≤")] {
            if !y.is_finite() {
                continue;
            }
            match by_value.iter_mut().find(|b| b.0 == (y, op)) {
                Some(b) => {
                    b.1 .0.push(c.id.clone());
                    b.1 .1.push(x);
                }
                None => by_value.push(((y, op), (vec![c.id.clone()], vec![x]))),
            }
        }
    }
    let unit_ns = metrics_unit_is_ns(metric);
    by_value
        .into_iter()
        .take(8)
        .map(|((y, op), (ids, xs))| {
            let x = xs
                .iter()
                .try_fold((f64::INFINITY, f64::NEG_INFINITY), |r, x| {
                    x.map(|x| (r.0.min(x), r.1.max(x)))
                });
            let ids = if ids.len() > 3 {
                format!("{} claims", ids.len())
            } else {
                ids.join(", ")
            };
            let v = if unit_ns {
                units::duration(y)
            } else {
                super::format::si(y)
            };
            Bound {
                y,
                x,
                label: format!("{ids}: {op} {v}"),
            }
        })
        .collect()
}

fn metrics_unit_is_ns(metric: &str) -> bool {
    super::format::unit_of_metric(metric) == Unit::Duration
}

/// Wait p99 per thread of each showcased point: a strip of markers by thread index,
/// readable at 2 threads and at 142.
pub(super) fn thread_strips(
    plan: &Plan,
    df: &DataFrame,
    show: &[u32],
    mode: &str,
    in_mode: &[&Point],
) -> Result<Option<LineFig>> {
    let p99 = estimates(df, "wait_p99_ns")?;
    let thread = f64_values(df, "thread")?;
    let classes = str_values(df, "class")?;
    let mut lines = Vec::new();
    for &p in show {
        let mut idx = filter_point(df, p, mode)?;
        if let Some(&first) = idx.first() {
            let c = classes[first].clone();
            idx.retain(|&i| classes[i] == c);
        }
        let pts: Vec<(f64, f64, f64, f64)> = idx
            .iter()
            .filter(|&&i| !p99[i].is_nan())
            .map(|&i| (thread[i], p99[i].value, p99[i].lo, p99[i].hi))
            .collect();
        if pts.len() < 2 {
            continue;
        }
        lines.push(Line::new(
            point_label(&plan.points[p as usize], in_mode),
            pts,
        ));
    }
    if lines.is_empty() {
        return Ok(None);
    }
    let log_y = wants_log(lines.iter().flat_map(|l| l.pts.iter().map(|p| p.1)));
    Ok(Some(LineFig {
        x_label: "thread".into(),
        y_label: metric_label("wait_p99_ns"),
        x_unit: Unit::Plain,
        y_unit: Unit::Duration,
        lines,
        log_y,
        markers_only: true,
        ..Default::default()
    }))
}
