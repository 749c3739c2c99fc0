//! A metric against an axis from a point-level summary, one series per group, split
//! into small multiples past [`MAX_SERIES`] series.

use super::figure::{wants_log, Line, LineFig};
use super::format::{axis_label, axis_unit, metric_label, unit_of_metric};
use super::spec::{is_lock_key, key_value, rows, series_name, varying, Row};
use crate::error::Result;
use crate::pipeline::estimates;
use crate::stats::Estimate;
use locklab_model::plan::{Plan, Point, Value};
use polars::prelude::DataFrame;
use std::collections::{BTreeMap, BTreeSet};

/// Series per figure before a default figure is split into small multiples.
pub(super) const MAX_SERIES: usize = 10;

/// One figure of a set of small multiples: the values of the facet axes it shows
/// (empty: the only figure) and its lines.
#[derive(Debug, Clone)]
pub(super) struct Facet {
    /// `workload=lock2`; empty when the figure is not split.
    pub(super) label: String,
    pub(super) fig: LineFig,
    /// Thread counts of the points shown.
    pub(super) threads: BTreeSet<u32>,
    /// The points shown (indices into the plan's points).
    pub(super) points: BTreeSet<u32>,
}

/// Whether `key` says which lock a series is: the lock axis, or one of the lock's own
/// parameters (cna's threshold). Figures split on other keys first, so that a lock is
/// never parted from its baseline.
fn names_lock(rows: &[Row], key: &String) -> bool {
    rows.iter()
        .any(|r| is_lock_key(r.point, key) || r.point.lock.params.contains(key))
}

/// Split the series keys into small multiples until one figure can tell its series
/// apart: colour shows one key and marker and dash a second, so a figure keeps at most
/// two keys, at most [`TWO_KEY_SERIES`] series with two and [`MAX_SERIES`] with one.
/// Each split takes the key with the most values among those that do not name the
/// lock ([`names_lock`]): it leaves the fewest series per figure, so the fewest
/// figures. Locks stay together: they are what a figure compares.
pub(super) fn split_facets(
    rows: &[Row],
    mut facet: Vec<String>,
    mut series: Vec<String>,
) -> (Vec<String>, Vec<String>) {
    loop {
        let count = rows
            .iter()
            .map(|r| series_name(r.point, &series))
            .collect::<BTreeSet<_>>()
            .len();
        let too_many =
            series.len() > 2 || (series.len() == 2 && count > TWO_KEY_SERIES) || count > MAX_SERIES;
        if !too_many {
            break;
        }
        let values = |k: &String| {
            rows.iter()
                .map(|r| series_name(r.point, std::slice::from_ref(k)))
                .collect::<BTreeSet<_>>()
                .len()
        };
        let Some(i) = (0..series.len())
            .filter(|&i| !names_lock(rows, &series[i]))
            .max_by_key(|&i| (values(&series[i]), std::cmp::Reverse(i)))
        else {
            break;
        };
        facet.push(series.remove(i));
    }
    (facet, series)
}

/// Most series a figure draws with two keys (colour × marker) before splitting.
pub(super) const TWO_KEY_SERIES: usize = 4;

/// Lines named `a, b` (two grouping keys): colour by `a`, marker and dash by `b`.
pub(super) fn style_by_two_keys(lines: &mut [Line]) {
    let mut firsts: Vec<String> = Vec::new();
    let mut seconds: Vec<String> = Vec::new();
    for line in lines.iter_mut() {
        let Some((a, b)) = line.name.split_once(", ") else {
            return;
        };
        let index = |v: &mut Vec<String>, x: &str| match v.iter().position(|y| y == x) {
            Some(i) => i,
            None => {
                v.push(x.to_string());
                v.len() - 1
            }
        };
        let c = index(&mut firsts, a);
        let d = index(&mut seconds, b);
        line.style = Some((c, d));
    }
}

/// What a metric-vs-axis figure shows.
#[derive(Debug, Clone, Copy)]
pub(super) struct VsSpec<'a> {
    pub(super) metric: &'a str,
    /// A sweep axis, `threads` or `lock`.
    pub(super) x: &'a str,
    /// The series keys; `None`: every other varying axis.
    pub(super) group: Option<&'a [String]>,
    /// Only these points (indices into the plan's points); `None`: every point.
    pub(super) points: Option<&'a BTreeSet<u32>>,
    pub(super) mode: &'a str,
    /// Log scales (x, y) asked for; `None`: decided by the data's span.
    pub(super) log: (Option<bool>, Option<bool>),
    /// Leave out this lock (the baseline of a speedup, always 1).
    pub(super) skip_lock: Option<&'a str>,
    /// Keep only the points with the most threads among those that share every
    /// other axis value (speedup vs threshold, where it matters).
    pub(super) at_most_threads: bool,
}

impl<'a> VsSpec<'a> {
    /// `metric` vs `x` in `mode`: every point, default grouping and scales.
    pub(super) fn new(metric: &'a str, x: &'a str, mode: &'a str) -> Self {
        VsSpec {
            metric,
            x,
            group: None,
            points: None,
            mode,
            log: (None, None),
            skip_lock: None,
            at_most_threads: false,
        }
    }
}

/// Metric vs x from a point-level summary, one series per combination of the group
/// keys (default: every other varying axis).
///
/// Axes that vary among the selected points but are neither `x` nor in the group
/// split the figure into small multiples, one per value; so does a default grouping
/// with more than [`MAX_SERIES`] series. No series is ever dropped.
pub(super) fn metric_vs(plan: &Plan, df: &DataFrame, vs: &VsSpec) -> Result<Vec<Facet>> {
    let VsSpec {
        metric,
        x,
        group,
        points,
        mode,
        log,
        skip_lock,
        at_most_threads,
    } = *vs;
    let est: Vec<Estimate> = estimates(df, metric)?;
    let mut rows: Vec<Row> = rows(plan, df)?
        .into_iter()
        .filter(|r| r.mode == mode && !est[r.i].is_nan())
        .filter(|r| points.is_none_or(|s| s.contains(&(r.point.index as u32))))
        .filter(|r| Some(r.point.lock.name.as_str()) != skip_lock)
        .filter(|r| key_value(r.point, x).is_some())
        .collect();
    if at_most_threads && x != "threads" {
        let pts: Vec<&Point> = rows.iter().map(|r| r.point).collect();
        let others: Vec<String> = varying(plan, &pts, x)
            .into_iter()
            .filter(|k| k != "threads")
            .collect();
        let mut most: BTreeMap<String, u32> = BTreeMap::new();
        for r in &rows {
            let e = most.entry(series_name(r.point, &others)).or_insert(0);
            *e = (*e).max(r.point.threads);
        }
        rows.retain(|r| most.get(&series_name(r.point, &others)) == Some(&r.point.threads));
    }
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    let pts: Vec<&Point> = rows.iter().map(|r| r.point).collect();
    let all_varying = varying(plan, &pts, x);
    let (facet_keys, keys): (Vec<String>, Vec<String>) = match group {
        Some(g) => (
            all_varying
                .iter()
                .filter(|k| !g.contains(k))
                .cloned()
                .collect(),
            g.to_vec(),
        ),
        None => (Vec::new(), all_varying),
    };
    let (facet_keys, keys) = split_facets(&rows, facet_keys, keys);
    let xv: Vec<Value> = rows.iter().filter_map(|r| key_value(r.point, x)).collect();
    let numeric = xv.iter().all(|v| v.as_f64().is_some());
    let cats: Option<Vec<String>> = (!numeric).then(|| {
        let mut seen = Vec::new();
        for v in &xv {
            if !seen.contains(&v.label()) {
                seen.push(v.label());
            }
        }
        seen
    });
    // facet label → (series name → points), both in first-seen order.
    type Series = Vec<(String, Vec<(f64, f64, f64, f64)>)>;
    let mut facets: Vec<(String, Series)> = Vec::new();
    let mut threads: BTreeMap<String, BTreeSet<u32>> = BTreeMap::new();
    let mut shown: BTreeMap<String, BTreeSet<u32>> = BTreeMap::new();
    for r in &rows {
        let flabel = series_name(r.point, &facet_keys);
        let flabel = if facet_keys.is_empty() {
            String::new()
        } else {
            flabel
        };
        threads
            .entry(flabel.clone())
            .or_default()
            .insert(r.point.threads);
        shown
            .entry(flabel.clone())
            .or_default()
            .insert(r.point.index as u32);
        let name = series_name(r.point, &keys);
        let v = key_value(r.point, x).unwrap_or(Value::Int(0));
        let xf = match &cats {
            Some(c) => c.iter().position(|s| *s == v.label()).unwrap_or(0) as f64,
            None => v.as_f64().unwrap_or(0.0),
        };
        let e = est[r.i];
        let fi = match facets.iter().position(|f| f.0 == flabel) {
            Some(i) => i,
            None => {
                facets.push((flabel, Vec::new()));
                facets.len() - 1
            }
        };
        let series = &mut facets[fi].1;
        let si = match series.iter().position(|s| s.0 == name) {
            Some(i) => i,
            None => {
                series.push((name, Vec::new()));
                series.len() - 1
            }
        };
        series[si].1.push((xf, e.value, e.lo, e.hi));
    }
    let mut out = Vec::new();
    for (label, series) in facets {
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
        let log_x = log.0.unwrap_or_else(|| {
            cats.is_none() && wants_log(lines.iter().flat_map(|l| l.pts.iter().map(|p| p.0)))
        });
        let log_y = log
            .1
            .unwrap_or_else(|| wants_log(lines.iter().flat_map(|l| l.pts.iter().map(|p| p.1))));
        out.push(Facet {
            threads: threads.remove(&label).unwrap_or_default(),
            points: shown.remove(&label).unwrap_or_default(),
            label,
            fig: LineFig {
                x_label: if x == "lock" {
                    "lock".into()
                } else {
                    axis_label(plan, x)
                },
                y_label: metric_label(metric),
                x_unit: axis_unit(plan, x),
                y_unit: unit_of_metric(metric),
                lines,
                log_x,
                log_y,
                x_cats: cats.clone(),
                markers_only: false,
                swept_x: true,
                ..Default::default()
            },
        });
    }
    Ok(out)
}

/// `throughput_vs_threads-sim`, or `throughput_vs_threads-workload-lock2-sim` for
/// one figure of a set of small multiples.
pub(super) fn facet_name(stem: &str, facet: &str, mode: &str) -> String {
    if facet.is_empty() {
        format!("{stem}-{mode}")
    } else {
        format!("{stem}-{}-{mode}", slug(facet))
    }
}

/// `workload=lock2, threshold=10ms` → `workload-lock2_threshold-10ms`.
pub(super) fn slug(label: &str) -> String {
    label
        .replace(", ", "_")
        .replace('=', "-")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// ` (sim)` or `, workload=lock2 (sim)`.
pub(super) fn facet_suffix(facet: &str, mode: &str) -> String {
    if facet.is_empty() {
        format!(" ({mode})")
    } else {
        format!(", {facet} ({mode})")
    }
}
