//! The plan's own plots (`plot METRIC vs X by A`) over the points the language
//! resolved them to, and how a grouping names series.

use super::catalogue::Summaries;
use super::catalogue::{claim_bounds, node_boundaries};
use super::facets::{metric_vs, style_by_two_keys, VsSpec};
use super::figure::{HeatFig, Kind, Line, LineFig};
use super::format::{metric_label, unit_of_metric, Unit};
use crate::error::{Error, Result};
use crate::pipeline::{self, estimates, f64_values, str_values, SpeedupPair};
use crate::store::Results;
use locklab_model::plan::{Plan, PlotSpec, Point, Target, Value};
use locklab_model::select;
use polars::prelude::DataFrame;
use std::collections::{BTreeMap, BTreeSet};

/// A point × mode row of a summary, with its plan point.
pub(super) struct Row<'a> {
    pub(super) point: &'a Point,
    pub(super) mode: String,
    pub(super) i: usize,
}

pub(super) fn rows<'a>(plan: &'a Plan, df: &DataFrame) -> Result<Vec<Row<'a>>> {
    let p = f64_values(df, "point")?;
    let m = str_values(df, "mode")?;
    Ok((0..df.height())
        .filter_map(|i| {
            plan.points.get(p[i] as usize).map(|point| Row {
                point,
                mode: m[i].clone(),
                i,
            })
        })
        .collect())
}

/// Value of `key` for a point: a sweep axis, or `threads` / `lock`.
pub(super) fn key_value(p: &Point, key: &str) -> Option<Value> {
    if let Some(v) = p.axes.get(key) {
        return Some(v.clone());
    }
    match key {
        "threads" => Some(Value::Int(p.threads as i64)),
        "lock" => Some(Value::Str(p.lock.name.clone())),
        "workload" => Some(Value::Str(p.workload.kind_name().into())),
        _ => None,
    }
}

/// The axes, in plan order, along which `pts` differ ([`select::varying_axes`]),
/// except `x`.
pub(super) fn varying(plan: &Plan, pts: &[&Point], x: &str) -> Vec<String> {
    select::varying_axes(&plan.axes, pts)
        .into_iter()
        .filter(|k| *k != x)
        .map(str::to_string)
        .collect()
}

/// Series and facet names show a lock by its name alone (`cna15`, not
/// `lock=cna15`).
pub(super) fn is_lock_key(p: &Point, key: &str) -> bool {
    key == "lock" || p.lock.axis.as_deref() == Some(key)
}

pub(super) fn series_name(p: &Point, keys: &[String]) -> String {
    if keys.is_empty() {
        return "all".into();
    }
    keys.iter()
        .map(|k| {
            let v = key_value(p, k)
                .map(|v| v.label())
                .unwrap_or_else(|| "—".into());
            if is_lock_key(p, k) {
                v
            } else {
                format!("{k}={v}")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// A value of `key` for row `i` of a thread/node/hand-off summary: a row dimension
/// read from the frame, else the point's axis.
pub(super) fn row_key(df: &DataFrame, i: usize, p: &Point, key: &str) -> String {
    if ROW_DIMS.contains(&key) {
        if let Ok(v) = str_values(df, key) {
            return format!("{key}={}", v[i]);
        }
    }
    series_name(p, &[key.to_string()])
}

pub(super) const ROW_DIMS: &[&str] = locklab_model::plan::ROW_DIMENSIONS;

/// Rows of a row-level summary that hold the values of the row selectors `rows`
/// (a dimension the summary lacks, such as `thread` per node, is not applied).
pub(super) fn row_dims_match(df: &DataFrame, rows: &[(String, Value)]) -> Result<Vec<bool>> {
    let mut ok = vec![true; df.height()];
    for (k, v) in rows {
        if df.column(k).is_err() {
            continue;
        }
        let vals = str_values(df, k)?;
        for (i, x) in vals.iter().enumerate() {
            let want = match v {
                Value::Bool(b) => b.to_string(),
                other => other.label(),
            };
            let same = match (x.parse::<f64>(), v.as_f64()) {
                (Ok(a), Some(b)) if !matches!(v, Value::Bool(_)) => a == b,
                _ => *x == want,
            };
            ok[i] &= same;
        }
    }
    Ok(ok)
}

/// The figures of one `plot` of the plan in `mode`: (facet label, figure) pairs.
/// The points shown are the plot's targets read in `mode`, as the language
/// resolved them (for `speedup`, each over its own baseline point).
pub(super) fn spec_fig(
    results: &Results,
    sums: &Summaries,
    spec: &PlotSpec,
    mode: &str,
) -> Result<Vec<(String, Kind)>> {
    let plan = results.plan();
    let fail = |message: String| Error::Plot {
        plot: spec.title.clone().unwrap_or_else(|| spec.metric.clone()),
        message,
    };
    if spec.targets.iter().any(Target::is_unresolved) || spec.targets.is_empty() {
        return Err(fail(
            "its points are not resolved in the plan (a plan written by an older locklab); run the experiment again".into(),
        ));
    }
    let targets: Vec<&Target> = spec
        .targets
        .iter()
        .filter(|t| t.modes.iter().any(|m| m.as_str() == mode))
        .filter(|t| (t.point as usize) < plan.points.len())
        .collect();
    let Some(first) = targets.first() else {
        return Ok(Vec::new());
    };
    let shown: BTreeSet<u32> = targets.iter().map(|t| t.point).collect();
    // The selection's row dimensions: the same for every point.
    let row_sel = &first.rows;
    let log = (Some(spec.log_x), Some(spec.log_y));
    let group = (!spec.group_by.is_empty()).then_some(spec.group_by.as_slice());
    if ROW_DIMS.contains(&spec.x.as_str()) && spec.x != "class" && spec.x != "cross_node" {
        // A thread or hand-off metric against thread, cpu, node, from_node or to_node:
        // one line per point (or per group value) among the shown points.
        let df = match spec.x.as_str() {
            "node" => &sums.nodes,
            "from_node" | "to_node" => &sums.handoffs,
            _ => &sums.threads,
        };
        if df.column(&spec.metric).is_err() {
            return Err(fail(format!(
                "no metric named \"{}\" per {}",
                spec.metric, spec.x
            )));
        }
        let est = estimates(df, &spec.metric)?;
        let xs = f64_values(df, &spec.x)?;
        let keep = row_dims_match(df, row_sel)?;
        let pts: Vec<&Point> = shown.iter().map(|&i| &plan.points[i as usize]).collect();
        let keys = match group {
            Some(g) => g.to_vec(),
            None => varying(plan, &pts, &spec.x),
        };
        let other = if spec.x == "from_node" {
            "to_node"
        } else {
            "from_node"
        };
        if ROW_DIMS.contains(&other) && spec.x.ends_with("_node") && keys.iter().any(|k| k == other)
        {
            // Node against node is categorical × categorical: a heat map per value of
            // the remaining keys, never lines across a categorical axis.
            let rest: Vec<String> = keys.iter().filter(|k| *k != other).cloned().collect();
            let sel = Selected {
                df,
                metric: &spec.metric,
                est: &est,
                keep: &keep,
                shown: &shown,
                mode,
            };
            return node_heats(plan, &sel, &rest);
        }
        let mut series: BTreeMap<String, Vec<(f64, f64, f64, f64)>> = BTreeMap::new();
        for r in rows(plan, df)? {
            let p = r.point.index as u32;
            if r.mode != mode || !keep[r.i] || !shown.contains(&p) || est[r.i].is_nan() {
                continue;
            }
            let e = est[r.i];
            let name = if keys.is_empty() {
                "all".to_string()
            } else {
                keys.iter()
                    .map(|k| row_key(df, r.i, r.point, k))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            series
                .entry(name)
                .or_default()
                .push((xs[r.i], e.value, e.lo, e.hi));
        }
        if series.is_empty() {
            return Ok(Vec::new());
        }
        let mut lines: Vec<Line> = series
            .into_iter()
            .map(|(name, mut pts)| {
                pts.sort_by(|a, b| a.0.total_cmp(&b.0));
                Line::new(name, pts)
            })
            .collect();
        if keys.len() == 2 {
            style_by_two_keys(&mut lines);
        }
        return Ok(vec![(
            String::new(),
            Kind::Line(LineFig {
                x_label: spec.x.replace('_', " "),
                y_label: metric_label(&spec.metric),
                x_unit: Unit::Plain,
                y_unit: unit_of_metric(&spec.metric),
                lines,
                log_x: spec.log_x,
                log_y: spec.log_y,
                x_cats: None,
                markers_only: false,
                ..Default::default()
            }),
        )]);
    }
    let df;
    let source = if spec.metric == "speedup" {
        let pairs: Vec<SpeedupPair> = targets
            .iter()
            .filter_map(|t| {
                t.baseline.map(|baseline| SpeedupPair {
                    point: t.point,
                    baseline,
                })
            })
            .collect();
        df = pipeline::speedup_of(results, &pairs)?;
        &df
    } else if let Some(sel) = pipeline::selected_summary(results, row_sel)? {
        // `cross_node = true`, `cpu = 7`, ...: the selected rows, combined per repetition.
        df = sel;
        &df
    } else {
        &sums.points
    };
    if source.column(&spec.metric).is_err() {
        return Err(fail(format!(
            "no metric named \"{}\" in these results",
            spec.metric
        )));
    }
    let boundaries = if spec.x == "threads" {
        node_boundaries(plan, &sums.threads, mode, 0.5)?
    } else {
        Vec::new()
    };
    let vs = VsSpec {
        group,
        points: Some(&shown),
        log,
        ..VsSpec::new(&spec.metric, &spec.x, mode)
    };
    Ok(metric_vs(plan, source, &vs)?
        .into_iter()
        .map(|mut f| {
            f.fig.bounds = claim_bounds(plan, (&spec.metric, &spec.x), mode, &f.points, row_sel);
            if spec.x == "threads" {
                f.fig.boundaries = boundaries.clone();
            }
            (f.label, Kind::Line(f.fig))
        })
        .collect())
}

/// The rows of a row-level summary a plot shows.
struct Selected<'a> {
    df: &'a DataFrame,
    metric: &'a str,
    /// `metric` per row.
    est: &'a [crate::stats::Estimate],
    /// Rows that hold the plot's row selectors.
    keep: &'a [bool],
    /// The plot's points.
    shown: &'a BTreeSet<u32>,
    mode: &'a str,
}

/// The shown rows of a node-to-node summary as heat maps, one per value of `rest`
/// (the grouping keys other than the two node axes): cell (from, to) holds the metric.
fn node_heats(plan: &Plan, sel: &Selected, rest: &[String]) -> Result<Vec<(String, Kind)>> {
    let Selected {
        df,
        metric,
        est,
        keep,
        shown,
        mode,
    } = *sel;
    let from = f64_values(df, "from_node")?;
    let to = f64_values(df, "to_node")?;
    let count = estimates(df, "count")?;
    // facet label → ((from, to) → (value, count)), in first-seen order.
    type Cells = BTreeMap<(u32, u32), (f64, f64)>;
    let mut facets: Vec<(String, Cells)> = Vec::new();
    for r in rows(plan, df)? {
        let p = r.point.index as u32;
        if r.mode != mode || !keep[r.i] || !shown.contains(&p) || est[r.i].is_nan() {
            continue;
        }
        let label = rest
            .iter()
            .map(|k| row_key(df, r.i, r.point, k))
            .collect::<Vec<_>>()
            .join(", ");
        let slot = match facets.iter().position(|f| f.0 == label) {
            Some(i) => i,
            None => {
                facets.push((label, BTreeMap::new()));
                facets.len() - 1
            }
        };
        facets[slot].1.insert(
            (from[r.i] as u32, to[r.i] as u32),
            (est[r.i].value, count[r.i].value),
        );
    }
    Ok(facets
        .into_iter()
        .map(|(label, cells)| {
            let nodes: Vec<u32> = cells
                .keys()
                .flat_map(|&(a, b)| [a, b])
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect();
            let n = nodes.len();
            let at = |x: u32| nodes.iter().position(|&y| y == x).unwrap_or(0);
            let mut value = vec![vec![f64::NAN; n]; n];
            let mut counts = vec![vec![0.0; n]; n];
            for ((a, b), (v, c)) in cells {
                value[at(a)][at(b)] = v;
                counts[at(a)][at(b)] = c;
            }
            let fig = HeatFig {
                nodes,
                value,
                count: counts,
                value_label: metric_label(metric).trim_end_matches(" (ns)").to_string(),
            };
            (label, Kind::Heat(fig))
        })
        .collect())
}
