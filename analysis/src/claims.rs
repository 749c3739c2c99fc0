//! Claims: each `expect` of the plan evaluated against stored results, on the
//! confidence interval rather than on the median alone.
//!
//! Verdicts:
//!
//! * `pass`: the whole 95 % interval satisfies the claim;
//! * `fail`: the whole interval contradicts it;
//! * `inconclusive`: the interval straddles the boundary (more repetitions, or a
//!   quieter machine, would decide), or the metric has no value in any repetition
//!   because the run was too short to measure it (shorter than one fairness window);
//! * `error`: the claim could not be evaluated (a selection that matches nothing
//!   or several points, a metric this mode never measures); the detail says what;
//! * `skipped`: the points the claim needs are in the plan but were not run in these
//!   results (another mode, or skipped for a stated reason);
//! * `report`: a non-gating claim; the detail says what the verdict would be.
//!
//! Intervals: a bare metric uses the order-statistic interval of its median
//! ([`crate::stats::median_ci`]); anything derived from several measurements
//! (`speedup`, ratios, orderings, trends) uses a seeded percentile bootstrap in
//! which each underlying set of repetitions is resampled once per draw, so a term
//! that appears twice (the baseline of S1/S10) moves together.
//!
//! A claim that does not select a `mode` is evaluated in each mode the results hold
//! data for, one result per mode.
//!
//! [`VerdictCounts`] counts the verdicts; the command line decides its exit code from
//! the gating claims' counts. The report lists `inconclusive` and `skipped` claims as
//! warnings.

use crate::error::{Error, Result};
use crate::pipeline::{f64_values, str_values};
use crate::stats::{self, Estimate};
use crate::store::{Results, HANDOFF_METRICS, THREAD_METRICS};
use crate::util::{fmt_num, write_atomic};
use locklab_model::plan::{
    BinOp, Claim, ClaimKind, Expr as CExpr, MetricRef, OrderOp, Plan, Point, TrendDirection, Value,
};
use locklab_model::units;
use polars::prelude::*;
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Pass,
    Fail,
    Inconclusive,
    Error,
    Skipped,
    Report,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Inconclusive => "inconclusive",
            Verdict::Error => "error",
            Verdict::Skipped => "skipped",
            Verdict::Report => "report",
        }
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One measured term of a claim (`speedup[threads=142] over stock = 2.1 [2.0, 2.2]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Term {
    pub label: String,
    pub value: Estimate,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClaimResult {
    pub id: String,
    pub text: String,
    pub source: Option<String>,
    pub file: String,
    pub line: u32,
    pub gating: bool,
    /// The mode evaluated, when the claim does not name one.
    pub mode: Option<String>,
    /// What the claim expects (`in [1.7, 2.7]`, `ρ ≤ -0.8`, ...).
    pub expectation: String,
    /// The value compared with the expectation, with its interval.
    pub measured: Option<Estimate>,
    /// `measured` as shown in tables (a gap as a percentage); empty: the plain value.
    #[serde(default)]
    pub measured_text: String,
    pub verdict: Verdict,
    pub detail: String,
    pub terms: Vec<Term>,
}

impl ClaimResult {
    pub fn location(&self) -> String {
        format!("{}:{}", self.file, self.line)
    }
    pub fn measured_label(&self) -> String {
        if !self.measured_text.is_empty() {
            return self.measured_text.clone();
        }
        self.measured
            .map(|m| m.label())
            .unwrap_or_else(|| "—".into())
    }
}

/// Why a term could not be resolved.
#[derive(Debug, Clone)]
enum Why {
    /// A mistake in the claim or missing data: the claim errs.
    Error(String),
    /// The points exist in the plan but not in these results (for this mode).
    NotRun(String),
    /// The points ran, but the metric has no value in any repetition (a run shorter
    /// than one fairness window, no hand-offs between nodes): more data would decide.
    NotMeasured(String),
}

type Res<T> = std::result::Result<T, Why>;

fn err<T>(msg: impl Into<String>) -> Res<T> {
    Err(Why::Error(msg.into()))
}

/// Result dimensions a selector may name besides the sweep axes.
const ROW_DIMS: &[&str] = locklab_model::plan::ROW_DIMENSIONS;
const THREAD_DIMS: &[&str] = &["thread", "cpu", "node", "class"];
const HANDOFF_DIMS: &[&str] = &["from_node", "to_node", "remote"];
const POINT_KEYS: &[&str] = &[
    "mode",
    "lock",
    "threads",
    "workload",
    "lock_algo",
    "point_id",
];

/// Evaluation tree over source medians.
#[derive(Debug, Clone)]
enum Node {
    Const(f64),
    Src(usize),
    Bin(BinOp, Box<Node>, Box<Node>),
}

fn eval(node: &Node, m: &[f64]) -> f64 {
    match node {
        Node::Const(v) => *v,
        Node::Src(i) => m[*i],
        Node::Bin(op, a, b) => {
            let (a, b) = (eval(a, m), eval(b, m));
            match op {
                BinOp::Add => a + b,
                BinOp::Sub => a - b,
                BinOp::Mul => a * b,
                BinOp::Div => a / b,
            }
        }
    }
}

/// Sets of repetitions, shared between the terms of one claim evaluation.
#[derive(Default)]
struct Sources {
    sets: Vec<Vec<f64>>,
    keys: HashMap<String, usize>,
}

impl Sources {
    fn add(&mut self, key: String, values: Vec<f64>) -> usize {
        if let Some(&i) = self.keys.get(&key) {
            return i;
        }
        self.sets.push(values);
        self.keys.insert(key, self.sets.len() - 1);
        self.sets.len() - 1
    }
}

fn bin_sym(op: BinOp) -> &'static str {
    match op {
        BinOp::Add => "+",
        BinOp::Sub => "-",
        BinOp::Mul => "*",
        BinOp::Div => "/",
    }
}

/// `metric[k=v, ...] over base`.
pub fn metric_label(m: &MetricRef) -> String {
    let mut s = m.metric.clone();
    if !m.select.is_empty() {
        let sel: Vec<String> = m
            .select
            .iter()
            .map(|(k, v)| format!("{k}={}", v.label()))
            .collect();
        s.push_str(&format!("[{}]", sel.join(", ")));
    }
    if let Some(b) = &m.baseline {
        s.push_str(&format!(" over {b}"));
    }
    s
}

pub fn expr_label(e: &CExpr) -> String {
    match e {
        CExpr::Metric(m) => metric_label(m),
        CExpr::Const { value } => fmt_num(*value),
        CExpr::Binary { op, lhs, rhs } => {
            let wrap = |x: &CExpr| match x {
                CExpr::Binary { .. } => format!("({})", expr_label(x)),
                _ => expr_label(x),
            };
            format!("{} {} {}", wrap(lhs), bin_sym(*op), wrap(rhs))
        }
    }
}

fn values_match(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x == y || (x - y).abs() <= 1e-9 * x.abs().max(y.abs()),
        _ => a.label() == b.label(),
    }
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            cur.push(
                (prev[j] + usize::from(ca != *cb))
                    .min(prev[j + 1] + 1)
                    .min(cur[j] + 1),
            );
        }
        prev = cur;
    }
    prev[b.len()]
}

fn suggest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    let candidates: Vec<&str> = candidates.into_iter().collect();
    // A prefix of a name (`throughput` for `throughput_ops_s`) is the likeliest slip.
    if let Some(c) = candidates
        .iter()
        .filter(|c| name.len() >= 4 && c.starts_with(name))
        .min_by_key(|c| c.len())
    {
        return format!("; did you mean \"{c}\"?");
    }
    let best = candidates
        .into_iter()
        .map(|c| (edit_distance(name, c), c))
        .min();
    match best {
        Some((d, c)) if d <= name.len().max(3) / 2 => format!("; did you mean \"{c}\"?"),
        _ => String::new(),
    }
}

/// Where a metric is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Table {
    Points,
    Threads,
    Handoffs,
}

struct Ctx<'a> {
    plan: &'a Plan,
    results: &'a Results,
    points: DataFrame,
    /// Row indices of `points` by (point, mode).
    rows: BTreeMap<(u32, String), Vec<usize>>,
    skipped: Vec<Option<String>>,
    modes: Vec<String>,
    point_metrics: BTreeSet<String>,
    cache: RefCell<HashMap<String, Vec<f64>>>,
}

impl<'a> Ctx<'a> {
    fn new(plan: &'a Plan, results: &'a Results) -> Result<Self> {
        let points = results
            .points
            .clone()
            .drop(cols(["wait_cdf_ns"]))
            .sort(["point", "mode", "rep"], SortMultipleOptions::default())
            .collect()
            .map_err(Error::polars("read the points table for claims"))?;
        let pidx = f64_values(&points, "point")?;
        let modes_col = str_values(&points, "mode")?;
        let skipped_s = points
            .column("skipped")
            .and_then(|c| c.str().cloned())
            .map_err(Error::polars("read the skipped column"))?;
        let skipped: Vec<Option<String>> =
            skipped_s.iter().map(|s| s.map(str::to_string)).collect();
        let mut rows: BTreeMap<(u32, String), Vec<usize>> = BTreeMap::new();
        for i in 0..points.height() {
            rows.entry((pidx[i] as u32, modes_col[i].clone()))
                .or_default()
                .push(i);
        }
        let mut modes: Vec<String> = modes_col
            .iter()
            .cloned()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        // sim first, as in the plan's Mode order.
        modes.sort_by_key(|m| (m != "sim", m.clone()));
        let point_metrics = crate::pipeline::point_metrics(results)?
            .into_iter()
            .collect();
        Ok(Ctx {
            plan,
            results,
            points,
            rows,
            skipped,
            modes,
            point_metrics,
            cache: RefCell::new(HashMap::new()),
        })
    }

    fn column(&self, name: &str) -> Res<Vec<f64>> {
        if let Some(v) = self.cache.borrow().get(name) {
            return Ok(v.clone());
        }
        let v = f64_values(&self.points, name).map_err(|e| Why::Error(e.to_string()))?;
        self.cache.borrow_mut().insert(name.to_string(), v.clone());
        Ok(v)
    }

    fn axis_names(&self) -> Vec<&str> {
        self.plan.axes.iter().map(|a| a.name.as_str()).collect()
    }

    fn known_metrics(&self) -> Vec<String> {
        let mut v: BTreeSet<String> = self.point_metrics.clone();
        v.insert("speedup".into());
        v.extend(THREAD_METRICS.iter().map(|s| s.to_string()));
        v.extend(HANDOFF_METRICS.iter().map(|s| s.to_string()));
        v.into_iter().collect()
    }

    /// Does `point` satisfy the point-level selector `key = v`?
    fn point_matches(&self, p: &Point, key: &str, v: &Value) -> Res<bool> {
        if let Some(av) = p.axes.get(key) {
            return Ok(values_match(av, v));
        }
        if self.plan.axes.iter().any(|a| a.name == key) {
            // An axis this point does not take (e.g. a threshold for a lock without one).
            return Ok(false);
        }
        // An axis given by its column name (`threshold_ns`).
        if let Some(a) = crate::store::axis_columns(self.plan)
            .into_iter()
            .find(|a| a.column == key)
        {
            return Ok(p.axes.get(&a.axis).is_some_and(|av| values_match(av, v)));
        }
        Ok(match key {
            "lock" => p.lock.name == v.label(),
            "threads" => v.as_f64() == Some(p.threads as f64),
            "workload" => p.workload.kind_name() == v.label(),
            "lock_algo" => p.lock.algo.kind_name() == v.label(),
            "point_id" => p.id == v.label(),
            _ => {
                let mut known: Vec<&str> = self.axis_names();
                known.extend(POINT_KEYS);
                known.extend(ROW_DIMS);
                return err(format!(
                    "unknown selector \"{key}\"; selectors are the axes ({}) and {}{}",
                    self.axis_names().join(", "),
                    POINT_KEYS
                        .iter()
                        .chain(ROW_DIMS)
                        .copied()
                        .collect::<Vec<_>>()
                        .join(", "),
                    suggest(key, known)
                ));
            }
        })
    }

    /// Plan points matching the point-level selectors; the explicit mode, if any;
    /// the row-level selectors.
    #[allow(clippy::type_complexity)]
    fn plan_points(
        &self,
        m: &MetricRef,
    ) -> Res<(Vec<usize>, Option<String>, Vec<(String, Value)>)> {
        let mut mode = None;
        let mut rowsel = Vec::new();
        let mut pts: Vec<usize> = (0..self.plan.points.len()).collect();
        for (k, v) in &m.select {
            if k == "mode" {
                let s = v.label();
                if s != "sim" && s != "native" {
                    return err(format!("mode must be sim or native, not \"{s}\""));
                }
                mode = Some(s);
                continue;
            }
            if ROW_DIMS.contains(&k.as_str()) && !self.plan.axes.iter().any(|a| &a.name == k) {
                rowsel.push((k.clone(), v.clone()));
                continue;
            }
            let before = pts.len();
            let mut kept = Vec::new();
            for &i in &pts {
                if self.point_matches(&self.plan.points[i], k, v)? {
                    kept.push(i);
                }
            }
            if kept.is_empty() && before > 0 {
                let taken: BTreeSet<String> = pts
                    .iter()
                    .filter_map(|&i| {
                        let p = &self.plan.points[i];
                        match k.as_str() {
                            "lock" => Some(p.lock.name.clone()),
                            "threads" => Some(p.threads.to_string()),
                            _ => p.axes.get(k).map(Value::label),
                        }
                    })
                    .collect();
                return err(format!(
                    "no point of the plan has {k}={} in {}{}",
                    v.label(),
                    metric_label(m),
                    if taken.is_empty() {
                        String::new()
                    } else {
                        format!(
                            " ({k} takes {})",
                            taken.into_iter().collect::<Vec<_>>().join(", ")
                        )
                    }
                ));
            }
            pts = kept;
        }
        if pts.is_empty() {
            return err("the plan has no points");
        }
        Ok((pts, mode, rowsel))
    }

    /// The one point of `pts` that has records in `mode`.
    fn the_point(&self, m: &MetricRef, pts: &[usize], mode: &str) -> Res<u32> {
        let present: Vec<usize> = pts
            .iter()
            .copied()
            .filter(|&i| self.rows.contains_key(&(i as u32, mode.to_string())))
            .collect();
        if present.is_empty() {
            return Err(Why::NotRun(format!(
                "{} has no records in mode {mode}",
                metric_label(m)
            )));
        }
        if present.len() > 1 {
            let varying: Vec<&str> = self
                .plan
                .axes
                .iter()
                .filter(|a| {
                    let vals: BTreeSet<String> = present
                        .iter()
                        .map(|&i| {
                            self.plan.points[i]
                                .axes
                                .get(&a.name)
                                .map(Value::label)
                                .unwrap_or_default()
                        })
                        .collect();
                    vals.len() > 1
                })
                .map(|a| a.name.as_str())
                .collect();
            let ids: Vec<&str> = present
                .iter()
                .take(4)
                .map(|&i| self.plan.points[i].id.as_str())
                .collect();
            return err(format!(
                "{} matches {} points in mode {mode} ({}{}); select one value of {}",
                metric_label(m),
                present.len(),
                ids.join("; "),
                if present.len() > 4 { "; ..." } else { "" },
                if varying.is_empty() {
                    "the lock or threads".to_string()
                } else {
                    varying.join(", ")
                }
            ));
        }
        let p = present[0] as u32;
        let rows = &self.rows[&(p, mode.to_string())];
        if rows.iter().all(|&r| self.skipped[r].is_some()) {
            let why = self.skipped[rows[0]].clone().unwrap_or_default();
            return Err(Why::NotRun(format!(
                "point {} was skipped in mode {mode}: {why}",
                self.plan.points[p as usize].id
            )));
        }
        Ok(p)
    }

    /// Repetition values of a point-table metric.
    fn point_samples(&self, p: u32, mode: &str, metric: &str) -> Res<Vec<f64>> {
        let col = self.column(metric)?;
        Ok(self.rows[&(p, mode.to_string())]
            .iter()
            .filter(|&&r| self.skipped[r].is_none())
            .map(|&r| col[r])
            .collect())
    }

    fn table_for(&self, m: &MetricRef, rowsel: &[(String, Value)]) -> Res<Table> {
        let thread_sel = rowsel
            .iter()
            .any(|(k, _)| THREAD_DIMS.contains(&k.as_str()));
        let handoff_sel = rowsel
            .iter()
            .any(|(k, _)| HANDOFF_DIMS.contains(&k.as_str()));
        let name = m.metric.as_str();
        if thread_sel && handoff_sel {
            return err(format!(
                "{} mixes thread selectors (thread, cpu, node, class) with hand-off selectors (from_node, to_node, remote)",
                metric_label(m)
            ));
        }
        if handoff_sel || (name == "count" && !thread_sel) {
            if HANDOFF_METRICS.contains(&name) {
                return Ok(Table::Handoffs);
            }
            return err(format!(
                "{} selects hand-offs, which measure {}",
                metric_label(m),
                HANDOFF_METRICS.join(", ")
            ));
        }
        if thread_sel || (!self.point_metrics.contains(name) && THREAD_METRICS.contains(&name)) {
            if THREAD_METRICS.contains(&name) {
                return Ok(Table::Threads);
            }
            return err(format!(
                "{} selects threads, which measure {}",
                metric_label(m),
                THREAD_METRICS.join(", ")
            ));
        }
        if self.point_metrics.contains(name) {
            return Ok(Table::Points);
        }
        let known = self.known_metrics();
        err(format!(
            "unknown metric \"{name}\"{}",
            suggest(name, known.iter().map(String::as_str))
        ))
    }

    /// Per-repetition values of a thread or hand-off metric, combining the matched
    /// rows of each repetition (see [`crate::combine`]).
    fn row_samples(
        &self,
        table: Table,
        p: u32,
        mode: &str,
        metric: &str,
        rowsel: &[(String, Value)],
    ) -> Res<Vec<f64>> {
        let lf = match table {
            Table::Threads => self.results.threads.clone(),
            Table::Handoffs => self.results.handoffs.clone(),
            Table::Points => unreachable!("point metrics are read from the points table"),
        };
        let mut pred = col("point")
            .cast(DataType::UInt32)
            .eq(lit(p))
            .and(col("mode").eq(lit(mode)));
        for (k, v) in rowsel {
            let e = match (k.as_str(), v) {
                ("class", v) => col("class").eq(lit(v.label())),
                ("remote", v) => {
                    let b = match v {
                        Value::Bool(b) => *b,
                        other => match other.label().as_str() {
                            "true" | "1" => true,
                            "false" | "0" => false,
                            s => return err(format!("remote takes true or false, not \"{s}\"")),
                        },
                    };
                    col("remote").eq(lit(b))
                }
                (k, v) => match v.as_f64() {
                    Some(f) => col(k).cast(DataType::Float64).eq(lit(f)),
                    None => return err(format!("{k} takes a number, not \"{}\"", v.label())),
                },
            };
            pred = pred.and(e);
        }
        let weight = if table == Table::Threads {
            "acquisitions"
        } else {
            "count"
        };
        let mut sel = vec![
            col("rep"),
            col(metric).cast(DataType::Float64).alias("__v"),
            col(weight).cast(DataType::Float64).alias("__w"),
        ];
        if table == Table::Threads {
            sel.push(col("class"));
        }
        let df = lf
            .filter(pred)
            .select(sel)
            .sort(["rep"], SortMultipleOptions::default())
            .collect()
            .map_err(|e| Why::Error(format!("cannot read {metric}: {e}")))?;
        if df.height() == 0 {
            let sel: Vec<String> = rowsel
                .iter()
                .map(|(k, v)| format!("{k}={}", v.label()))
                .collect();
            return err(format!(
                "no {} rows of point {} in mode {mode} match {}",
                if table == Table::Threads {
                    "thread"
                } else {
                    "hand-off"
                },
                self.plan.points[p as usize].id,
                sel.join(", ")
            ));
        }
        if table == Table::Threads {
            let classes: BTreeSet<String> = str_values(&df, "class")
                .map_err(|e| Why::Error(e.to_string()))?
                .into_iter()
                .collect();
            if classes.len() > 1 {
                return err(format!(
                    "{metric} of point {} matches the wait classes {}; add class=...",
                    self.plan.points[p as usize].id,
                    classes.into_iter().collect::<Vec<_>>().join(", ")
                ));
            }
        }
        let reps = f64_values(&df, "rep").map_err(|e| Why::Error(e.to_string()))?;
        let v = f64_values(&df, "__v").map_err(|e| Why::Error(e.to_string()))?;
        let w = f64_values(&df, "__w").map_err(|e| Why::Error(e.to_string()))?;
        let mut out = Vec::new();
        let mut i = 0;
        while i < reps.len() {
            let mut j = i;
            while j < reps.len() && reps[j] == reps[i] {
                j += 1;
            }
            out.push(crate::combine::values(metric, &v[i..j], &w[i..j]));
            i = j;
        }
        Ok(out)
    }

    /// Resolve one metric reference in `mode` to a node over shared sources.
    fn leaf(
        &self,
        m: &MetricRef,
        mode: &str,
        src: &mut Sources,
        terms: &mut Vec<(String, Node)>,
    ) -> Res<Node> {
        let (pts, explicit, rowsel) = self.plan_points(m)?;
        let mode = explicit.as_deref().unwrap_or(mode);
        let p = self.the_point(m, &pts, mode)?;
        let node = if m.metric == "speedup" {
            let Some(base) = &m.baseline else {
                return err(format!(
                    "{} needs a baseline: write `speedup over <lock>`",
                    metric_label(m)
                ));
            };
            if !rowsel.is_empty() {
                return err(format!(
                    "{} is a point metric; thread and hand-off selectors do not apply",
                    metric_label(m)
                ));
            }
            let b = self.baseline_point(p, base, mode)?;
            let a = src.add(
                format!("throughput_ops_s|{p}|{mode}"),
                self.point_samples(p, mode, "throughput_ops_s")?,
            );
            let bi = src.add(
                format!("throughput_ops_s|{b}|{mode}"),
                self.point_samples(b, mode, "throughput_ops_s")?,
            );
            Node::Bin(BinOp::Div, Box::new(Node::Src(a)), Box::new(Node::Src(bi)))
        } else {
            if m.baseline.is_some() {
                return err(format!(
                    "{}: only speedup takes a baseline",
                    metric_label(m)
                ));
            }
            let table = self.table_for(m, &rowsel)?;
            let (key, samples) = match table {
                Table::Points => (
                    format!("{}|{p}|{mode}", m.metric),
                    self.point_samples(p, mode, &m.metric)?,
                ),
                t => {
                    let sel: Vec<String> = rowsel
                        .iter()
                        .map(|(k, v)| format!("{k}={}", v.label()))
                        .collect();
                    (
                        format!("{}|{p}|{mode}|{}", m.metric, sel.join(",")),
                        self.row_samples(t, p, mode, &m.metric, &rowsel)?,
                    )
                }
            };
            if samples.iter().all(|v| v.is_nan()) {
                return Err(self.not_measured(p, mode, &m.metric));
            }
            Node::Src(src.add(key, samples))
        };
        terms.push((metric_label(m), node.clone()));
        Ok(node)
    }

    /// Why `metric` has no value in any repetition of point `p`: a metric this mode
    /// never measures (CPU time in simulation) or windowed fairness switched off is
    /// an error in the claim; a run too short or too quiet to measure it is not.
    fn not_measured(&self, p: u32, mode: &str, metric: &str) -> Why {
        let id = &self.plan.points[p as usize].id;
        let never_in_sim = ["cpu_wall_ratio", "cpu_ns_per_acq", "overhead_ns"];
        if mode == "sim" && never_in_sim.contains(&metric) {
            return Why::Error(format!(
                "{metric} is not measured in simulation (no CPU time there); point {id} has no value in any repetition"
            ));
        }
        let first = |col: &str| {
            self.point_samples(p, mode, col)
                .ok()
                .and_then(|v| v.into_iter().find(|x| x.is_finite()))
        };
        let dur = |ns: f64| units::duration_label(ns.max(0.0).round() as u64);
        if metric.starts_with("window_") {
            match (first("window_ns"), first("fairness_window_ns")) {
                (_, Some(f)) if f <= 0.0 => {
                    return Why::Error(format!(
                        "{metric} is not measured: point {id} has no fairness window"
                    ))
                }
                (Some(w), Some(f)) if f > w => {
                    return Why::NotMeasured(format!(
                        "not measured: the measured window ({}) is shorter than one fairness window ({}), so point {id} has no full window in mode {mode}; a longer duration would measure {metric}",
                        dur(w),
                        dur(f)
                    ))
                }
                _ => {}
            }
        }
        let window = first("window_ns")
            .map(|w| format!(" in its measured window of {}", dur(w)))
            .unwrap_or_default();
        Why::NotMeasured(format!(
            "not measured: {metric} has no value in any repetition of point {id} in mode {mode} (nothing to measure it from{window}); a longer run would decide"
        ))
    }

    /// The baseline point for `p`: same mode, lock `base`, equal values of every
    /// non-lock axis along which the baseline varies (as in `pipeline::speedup`).
    fn baseline_point(&self, p: u32, base: &str, mode: &str) -> Res<u32> {
        let cands: Vec<usize> = (0..self.plan.points.len())
            .filter(|&i| {
                self.plan.points[i].lock.name == base
                    && self.rows.contains_key(&(i as u32, mode.to_string()))
            })
            .collect();
        if cands.is_empty() {
            let locks: BTreeSet<&str> = self
                .plan
                .points
                .iter()
                .map(|q| q.lock.name.as_str())
                .collect();
            if !locks.contains(base) {
                return err(format!(
                    "unknown baseline lock \"{base}\"; locks are {}{}",
                    locks.iter().copied().collect::<Vec<_>>().join(", "),
                    suggest(base, locks.iter().copied())
                ));
            }
            return Err(Why::NotRun(format!(
                "baseline {base} has no records in mode {mode}"
            )));
        }
        let locks: BTreeSet<&str> = self
            .plan
            .points
            .iter()
            .map(|q| q.lock.name.as_str())
            .collect();
        let target = &self.plan.points[p as usize];
        let keys: Vec<&str> = self
            .plan
            .axes
            .iter()
            .filter(|a| {
                a.name != "lock"
                    && !a
                        .values
                        .iter()
                        .any(|v| matches!(v, Value::Str(s) if locks.contains(s.as_str())))
            })
            .filter(|a| {
                let vals: BTreeSet<String> = cands
                    .iter()
                    .map(|&i| {
                        self.plan.points[i]
                            .axes
                            .get(&a.name)
                            .map(Value::label)
                            .unwrap_or_default()
                    })
                    .collect();
                vals.len() > 1
            })
            .map(|a| a.name.as_str())
            .collect();
        let matching: Vec<usize> = cands
            .into_iter()
            .filter(|&i| {
                keys.iter().all(
                    |k| match (self.plan.points[i].axes.get(*k), target.axes.get(*k)) {
                        (Some(a), Some(b)) => values_match(a, b),
                        (None, None) => true,
                        _ => false,
                    },
                )
            })
            .collect();
        match matching.as_slice() {
            [] => err(format!(
                "no {base} point matches {} on {}",
                target.id,
                if keys.is_empty() {
                    "its axes".to_string()
                } else {
                    keys.join(", ")
                }
            )),
            [b] => {
                let b = *b as u32;
                let rows = &self.rows[&(b, mode.to_string())];
                if rows.iter().all(|&r| self.skipped[r].is_some()) {
                    return Err(Why::NotRun(format!(
                        "baseline point {} was skipped in mode {mode}: {}",
                        self.plan.points[b as usize].id,
                        self.skipped[rows[0]].clone().unwrap_or_default()
                    )));
                }
                Ok(b)
            }
            many => err(format!(
                "{} points of {base} match {} ({}); the speedup's baseline is ambiguous",
                many.len(),
                target.id,
                many.iter()
                    .take(3)
                    .map(|&i| self.plan.points[i].id.as_str())
                    .collect::<Vec<_>>()
                    .join("; ")
            )),
        }
    }

    fn expr(
        &self,
        e: &CExpr,
        mode: &str,
        src: &mut Sources,
        terms: &mut Vec<(String, Node)>,
    ) -> Res<Node> {
        Ok(match e {
            CExpr::Const { value } => Node::Const(*value),
            CExpr::Metric(m) => self.leaf(m, mode, src, terms)?,
            CExpr::Binary { op, lhs, rhs } => Node::Bin(
                *op,
                Box::new(self.expr(lhs, mode, src, terms)?),
                Box::new(self.expr(rhs, mode, src, terms)?),
            ),
        })
    }

    /// Values of a result dimension (cpu, thread, node, ...) present for the point a
    /// trend selects, ascending.
    fn dim_values(&self, m: &MetricRef, dim: &str, mode: &str) -> Res<Vec<Value>> {
        let (pts, explicit, rowsel) = self.plan_points(m)?;
        let mode = explicit.as_deref().unwrap_or(mode);
        let p = self.the_point(m, &pts, mode)?;
        let lf = if HANDOFF_DIMS.contains(&dim) {
            self.results.handoffs.clone()
        } else {
            self.results.threads.clone()
        };
        let mut pred = col("point")
            .cast(DataType::UInt32)
            .eq(lit(p))
            .and(col("mode").eq(lit(mode)));
        for (k, v) in &rowsel {
            pred = pred.and(match v.as_f64() {
                Some(f) if k != "class" => col(k.as_str()).cast(DataType::Float64).eq(lit(f)),
                _ => col(k.as_str()).eq(lit(v.label())),
            });
        }
        let df = lf
            .filter(pred)
            .select([col(dim).cast(DataType::Float64).alias("v")])
            .unique(None, UniqueKeepStrategy::Any)
            .sort(["v"], SortMultipleOptions::default())
            .collect()
            .map_err(|e| Why::Error(format!("cannot list the values of {dim}: {e}")))?;
        Ok(f64_values(&df, "v")
            .map_err(|e| Why::Error(e.to_string()))?
            .into_iter()
            .map(|f| Value::Int(f as i64))
            .collect())
    }
}

fn band_label(lo: f64, hi: f64, strict: bool) -> String {
    band_label_with(lo, hi, strict, fmt_num)
}

fn band_label_with(lo: f64, hi: f64, strict: bool, f: fn(f64) -> String) -> String {
    match (lo.is_finite(), hi.is_finite(), strict) {
        (true, true, false) => format!("in [{}, {}]", f(lo), f(hi)),
        (true, true, true) => format!("in ({}, {})", f(lo), f(hi)),
        (true, false, false) => format!("≥ {}", f(lo)),
        (true, false, true) => format!("> {}", f(lo)),
        (false, true, false) => format!("≤ {}", f(hi)),
        (false, true, true) => format!("< {}", f(hi)),
        (false, false, _) => "any value".into(),
    }
}

fn band_verdict(e: &Estimate, lo: f64, hi: f64, strict: bool) -> (Verdict, String) {
    if e.value.is_nan() || e.lo.is_nan() || e.hi.is_nan() {
        return (Verdict::Error, "the measured value is not a number".into());
    }
    let (inside, outside) = if strict {
        (e.lo > lo && e.hi < hi, e.hi <= lo || e.lo >= hi)
    } else {
        (e.lo >= lo && e.hi <= hi, e.hi < lo || e.lo > hi)
    };
    if inside {
        (Verdict::Pass, "the whole interval lies in the band".into())
    } else if outside {
        (
            Verdict::Fail,
            "the whole interval lies outside the band".into(),
        )
    } else {
        (
            Verdict::Inconclusive,
            format!(
                "the interval [{}, {}] straddles the band {}",
                fmt_num(e.lo),
                fmt_num(e.hi),
                band_label(lo, hi, strict)
            ),
        )
    }
}

struct Outcome {
    expectation: String,
    measured: Option<Estimate>,
    measured_text: String,
    verdict: Verdict,
    detail: String,
    terms: Vec<Term>,
}

fn term_estimates(terms: &[(String, Node)], src: &Sources, seed: u64) -> Vec<Term> {
    let mut seen = BTreeSet::new();
    let uniq: Vec<&(String, Node)> = terms
        .iter()
        .filter(|(l, _)| seen.insert(l.clone()))
        .collect();
    let est = stats::bootstrap(&src.sets, seed, |m| {
        uniq.iter().map(|(_, n)| eval(n, m)).collect()
    });
    uniq.iter()
        .zip(est)
        .map(|((label, node), e)| Term {
            label: label.clone(),
            value: match node {
                Node::Src(i) => stats::median_ci(&src.sets[*i]),
                _ => e,
            },
        })
        .collect()
}

fn trend_values(
    ctx: &Ctx,
    metric: &MetricRef,
    axis: &str,
    listed: &[Value],
    mode: &str,
) -> Res<Vec<Value>> {
    if !listed.is_empty() {
        return Ok(listed.to_vec());
    }
    if let Some(a) = ctx.plan.axes.iter().find(|a| a.name == axis) {
        let mut v = a.values.clone();
        if v.iter().all(|x| x.as_f64().is_some()) {
            v.sort_by(|a, b| {
                a.as_f64()
                    .unwrap_or(0.0)
                    .total_cmp(&b.as_f64().unwrap_or(0.0))
            });
        }
        return Ok(v);
    }
    if ROW_DIMS.contains(&axis) && axis != "class" && axis != "remote" {
        return ctx.dim_values(metric, axis, mode);
    }
    err(format!(
        "a trend runs over a sweep axis ({}) or thread, cpu, node, from_node, to_node; not \"{axis}\"",
        ctx.axis_names().join(", ")
    ))
}

fn evaluate_in(ctx: &Ctx, claim: &Claim, mode: &str) -> Res<Outcome> {
    let mut src = Sources::default();
    let mut terms = Vec::new();
    let seed = stats::seed_for(&format!("{}|{}|{mode}", claim.id, claim.text));
    match &claim.kind {
        ClaimKind::Band {
            expr,
            lo,
            hi,
            strict,
        } => {
            let node = ctx.expr(expr, mode, &mut src, &mut terms)?;
            let est = match (&node, expr) {
                (Node::Src(i), CExpr::Metric(_)) => stats::median_ci(&src.sets[*i]),
                _ => stats::bootstrap(&src.sets, seed, |m| vec![eval(&node, m)])[0],
            };
            let (verdict, why) = band_verdict(&est, *lo, *hi, *strict);
            // A bare duration metric reads better in time units (`≤ 31ms`, not `3.1e7`).
            let is_ns = matches!(expr, CExpr::Metric(m) if m.metric.ends_with("_ns"));
            let (expectation, measured_text) = if is_ns && est.value.is_finite() {
                let d = units::duration;
                (
                    band_label_with(*lo, *hi, *strict, d),
                    format!("{} [{}, {}]", d(est.value), d(est.lo), d(est.hi)),
                )
            } else {
                (band_label(*lo, *hi, *strict), String::new())
            };
            Ok(Outcome {
                expectation,
                measured: Some(est),
                measured_text,
                verdict,
                detail: format!("{} = {}: {why}", expr_label(expr), est.label()),
                terms: term_estimates(&terms, &src, seed),
            })
        }
        ClaimKind::Ordering { exprs, op, min_gap } => {
            if exprs.len() < 2 {
                return err("an ordering needs at least two terms");
            }
            let nodes: Vec<Node> = exprs
                .iter()
                .map(|e| ctx.expr(e, mode, &mut src, &mut terms))
                .collect::<Res<_>>()?;
            let k = nodes.len();
            let gap = |a: f64, b: f64| match op {
                OrderOp::Less => rel_gap(a, b),
                OrderOp::Greater => rel_gap(b, a),
            };
            let est = stats::bootstrap(&src.sets, seed, |m| {
                let v: Vec<f64> = nodes.iter().map(|n| eval(n, m)).collect();
                let mut out = v.clone();
                out.extend((0..k - 1).map(|i| gap(v[i], v[i + 1])));
                out
            });
            let (vals, gaps) = est.split_at(k);
            let sym = if *op == OrderOp::Less { "<" } else { ">" };
            let mut verdicts = Vec::new();
            let mut notes = Vec::new();
            for i in 0..k - 1 {
                let (a, b, g) = (&vals[i], &vals[i + 1], &gaps[i]);
                let separated = match op {
                    OrderOp::Less => a.hi < b.lo,
                    OrderOp::Greater => a.lo > b.hi,
                };
                let v = if g.is_nan() || g.lo.is_nan() {
                    Verdict::Error
                } else if g.hi < *min_gap {
                    Verdict::Fail
                } else if g.lo >= *min_gap && separated {
                    Verdict::Pass
                } else {
                    Verdict::Inconclusive
                };
                notes.push(format!(
                    "{} {sym} {}: gap {} ({}{})",
                    a.label(),
                    b.label(),
                    pct(g),
                    v,
                    if v == Verdict::Inconclusive && !separated {
                        ", intervals overlap"
                    } else {
                        ""
                    }
                ));
                verdicts.push(v);
            }
            let verdict = worst(&verdicts);
            let min = gaps
                .iter()
                .copied()
                .min_by(|a, b| a.value.total_cmp(&b.value))
                .unwrap_or_else(Estimate::nan);
            Ok(Outcome {
                expectation: ordering_expectation(*op, *min_gap),
                measured: Some(min),
                measured_text: format!("min gap {}", pct(&min)),
                verdict,
                detail: notes.join("; "),
                terms: term_estimates(&terms, &src, seed),
            })
        }
        ClaimKind::Trend {
            metric,
            axis,
            values,
            direction,
            min_rho,
            ..
        } => {
            if metric.select.iter().any(|(k, _)| k == axis) {
                return err(format!(
                    "{} selects {axis}, the axis the trend runs over",
                    metric_label(metric)
                ));
            }
            let vals = trend_values(ctx, metric, axis, values, mode)?;
            let mut nodes = Vec::new();
            let mut used = Vec::new();
            let mut missing = Vec::new();
            for v in &vals {
                let mut m = metric.clone();
                m.select.push((axis.clone(), v.clone()));
                match ctx.leaf(&m, mode, &mut src, &mut terms) {
                    Ok(n) => {
                        nodes.push(n);
                        used.push(v.label());
                    }
                    Err(Why::NotRun(why)) => missing.push(why),
                    Err(e) => return Err(e),
                }
            }
            if nodes.len() < 2 {
                let why = if missing.is_empty() {
                    String::new()
                } else {
                    format!(": {}", missing.join("; "))
                };
                return Err(Why::NotRun(format!(
                    "a trend needs at least two values of {axis} with data{why}"
                )));
            }
            let pos: Vec<f64> = (0..nodes.len()).map(|i| i as f64).collect();
            let est = stats::bootstrap(&src.sets, seed, |m| {
                let y: Vec<f64> = nodes.iter().map(|n| eval(n, m)).collect();
                vec![stats::spearman(&pos, &y)]
            })[0];
            let (verdict, expectation) = match direction {
                TrendDirection::Increasing => (
                    if est.lo.is_nan() {
                        Verdict::Error
                    } else if est.lo >= *min_rho {
                        Verdict::Pass
                    } else if est.hi < *min_rho {
                        Verdict::Fail
                    } else {
                        Verdict::Inconclusive
                    },
                    format!("increasing over {axis}: ρ ≥ {}", fmt_num(*min_rho)),
                ),
                TrendDirection::Decreasing => (
                    if est.hi.is_nan() {
                        Verdict::Error
                    } else if est.hi <= -min_rho {
                        Verdict::Pass
                    } else if est.lo > -min_rho {
                        Verdict::Fail
                    } else {
                        Verdict::Inconclusive
                    },
                    format!("decreasing over {axis}: ρ ≤ {}", fmt_num(-min_rho)),
                ),
            };
            let terms = term_estimates(&terms, &src, seed);
            let series: Vec<String> = used
                .iter()
                .zip(&terms)
                .map(|(u, t)| format!("{u}: {}", t.value.label()))
                .collect();
            let mut detail = format!(
                "Spearman ρ = {} over {axis} = {}",
                est.label(),
                series.join(", ")
            );
            if !missing.is_empty() {
                detail.push_str(&format!("; left out: {}", missing.join("; ")));
            }
            Ok(Outcome {
                expectation,
                measured: Some(est),
                measured_text: String::new(),
                verdict,
                detail,
                terms,
            })
        }
    }
}

/// How far `big` exceeds `small`, relative to `small`: (big − small) / |small|.
/// Equal values give 0 (also at zero); a zero `small` gives ±inf.
fn rel_gap(small: f64, big: f64) -> f64 {
    if small == big {
        0.0
    } else if small == 0.0 {
        if big > 0.0 {
            f64::INFINITY
        } else {
            f64::NEG_INFINITY
        }
    } else {
        (big - small) / small.abs()
    }
}

fn ordering_expectation(op: OrderOp, min_gap: f64) -> String {
    let dir = match op {
        OrderOp::Less => "increasing (<)",
        OrderOp::Greater => "decreasing (>)",
    };
    format!("{dir}, each gap ≥ {} beyond the spread", pct_num(min_gap))
}

fn pct_num(x: f64) -> String {
    format!("{}%", fmt_num(x * 100.0))
}

fn pct(e: &Estimate) -> String {
    if e.lo == e.hi {
        pct_num(e.value)
    } else {
        format!(
            "{} [{}, {}]",
            pct_num(e.value),
            pct_num(e.lo),
            pct_num(e.hi)
        )
    }
}

fn worst(v: &[Verdict]) -> Verdict {
    for w in [Verdict::Error, Verdict::Fail, Verdict::Inconclusive] {
        if v.contains(&w) {
            return w;
        }
    }
    Verdict::Pass
}

fn claim_metric_refs(c: &Claim) -> Vec<&MetricRef> {
    fn walk<'a>(e: &'a CExpr, out: &mut Vec<&'a MetricRef>) {
        match e {
            CExpr::Metric(m) => out.push(m),
            CExpr::Const { .. } => {}
            CExpr::Binary { lhs, rhs, .. } => {
                walk(lhs, out);
                walk(rhs, out);
            }
        }
    }
    let mut out = Vec::new();
    match &c.kind {
        ClaimKind::Band { expr, .. } => walk(expr, &mut out),
        ClaimKind::Ordering { exprs, .. } => exprs.iter().for_each(|e| walk(e, &mut out)),
        ClaimKind::Trend { metric, .. } => out.push(metric),
    }
    out
}

fn expectation_of(c: &Claim) -> String {
    match &c.kind {
        ClaimKind::Band { lo, hi, strict, .. } => band_label(*lo, *hi, *strict),
        ClaimKind::Ordering { op, min_gap, .. } => ordering_expectation(*op, *min_gap),
        ClaimKind::Trend {
            axis,
            direction,
            min_rho,
            ..
        } => match direction {
            TrendDirection::Increasing => {
                format!("increasing over {axis}: ρ ≥ {}", fmt_num(*min_rho))
            }
            TrendDirection::Decreasing => {
                format!("decreasing over {axis}: ρ ≤ {}", fmt_num(-min_rho))
            }
        },
    }
}

fn evaluate_claim(ctx: &Ctx, claim: &Claim) -> Vec<ClaimResult> {
    let base = |mode: Option<String>, o: Outcome| {
        let (verdict, detail) = if !claim.gating && o.verdict != Verdict::Error {
            (
                Verdict::Report,
                format!("not gating; would be {}: {}", o.verdict, o.detail),
            )
        } else {
            (o.verdict, o.detail)
        };
        ClaimResult {
            id: claim.id.clone(),
            text: claim.text.clone(),
            source: claim.source.clone(),
            file: claim.file.clone(),
            line: claim.line,
            gating: claim.gating,
            mode,
            expectation: o.expectation,
            measured: o.measured,
            measured_text: o.measured_text,
            verdict,
            detail,
            terms: o.terms,
        }
    };
    let simple = |verdict: Verdict, detail: String| Outcome {
        expectation: expectation_of(claim),
        measured: None,
        measured_text: String::new(),
        verdict,
        detail,
        terms: Vec::new(),
    };
    // Mistakes in the claim itself are reported once, whatever the mode.
    for m in claim_metric_refs(claim) {
        if let Err(Why::Error(e)) = ctx.plan_points(m) {
            return vec![base(None, simple(Verdict::Error, e))];
        }
    }
    let explicit = claim_metric_refs(claim)
        .iter()
        .all(|m| m.select.iter().any(|(k, _)| k == "mode"));
    let modes: Vec<String> = if explicit {
        vec![ctx.modes.first().cloned().unwrap_or_else(|| "sim".into())]
    } else {
        ctx.modes.clone()
    };
    let mut done = Vec::new();
    let mut not_run = Vec::new();
    for mode in &modes {
        match evaluate_in(ctx, claim, mode) {
            Ok(o) => done.push((mode.clone(), o)),
            Err(Why::Error(e)) => done.push((mode.clone(), simple(Verdict::Error, e))),
            Err(Why::NotRun(why)) => not_run.push(why),
            Err(Why::NotMeasured(why)) => {
                done.push((mode.clone(), simple(Verdict::Inconclusive, why)))
            }
        }
    }
    if done.is_empty() {
        let why = if not_run.is_empty() {
            "these results hold no records".to_string()
        } else {
            not_run.join("; ")
        };
        return vec![base(None, simple(Verdict::Skipped, why))];
    }
    let per_mode = !explicit && (done.len() > 1 || ctx.modes.len() > 1);
    done.into_iter()
        .map(|(mode, o)| base(per_mode.then_some(mode), o))
        .collect()
}

/// Evaluate every claim of `plan` against `results`, in plan order.
pub fn evaluate(plan: &Plan, results: &Results) -> Vec<ClaimResult> {
    if plan.claims.is_empty() {
        return Vec::new();
    }
    let ctx = match Ctx::new(plan, results) {
        Ok(c) => c,
        Err(e) => {
            return plan
                .claims
                .iter()
                .map(|c| ClaimResult {
                    id: c.id.clone(),
                    text: c.text.clone(),
                    source: c.source.clone(),
                    file: c.file.clone(),
                    line: c.line,
                    gating: c.gating,
                    mode: None,
                    expectation: expectation_of(c),
                    measured: None,
                    measured_text: String::new(),
                    verdict: Verdict::Error,
                    detail: format!("cannot read the results: {e}"),
                    terms: Vec::new(),
                })
                .collect()
        }
    };
    plan.claims
        .iter()
        .flat_map(|c| evaluate_claim(&ctx, c))
        .collect()
}

/// `<dir>/claims.json`: `{ "schema_version": 1, "claims": [...] }`, written atomically.
pub fn write_claims_json(dir: &Path, claims: &[ClaimResult]) -> Result<()> {
    #[derive(Serialize)]
    struct File<'a> {
        schema_version: u32,
        claims: &'a [ClaimResult],
    }
    let path = dir.join("claims.json");
    let text = serde_json::to_string_pretty(&File {
        schema_version: crate::store::RESULTS_SCHEMA_VERSION,
        claims,
    })
    .map_err(|source| Error::Json {
        path: path.clone(),
        source,
    })?;
    write_atomic(&path, text.as_bytes())
}

/// Read `<dir>/claims.json` back.
pub fn read_claims_json(dir: &Path) -> Result<Vec<ClaimResult>> {
    #[derive(Deserialize)]
    struct File {
        claims: Vec<ClaimResult>,
    }
    let path = dir.join("claims.json");
    let text = crate::util::read_to_string(&path)?;
    let f: File = serde_json::from_str(&text).map_err(|source| Error::Json { path, source })?;
    Ok(f.claims)
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

/// Plain-text table for the terminal: claim, file:line, expectation, measured,
/// verdict. No colour: the CLI decides about terminals.
pub fn claims_table(claims: &[ClaimResult]) -> String {
    if claims.is_empty() {
        return "no claims\n".into();
    }
    let header = ["claim", "where", "expected", "measured", "verdict"];
    let rows: Vec<[String; 5]> = claims
        .iter()
        .map(|c| {
            let mut name = format!("{} {}", c.id, truncate(&c.text, 48));
            if let Some(m) = &c.mode {
                name.push_str(&format!(" ({m})"));
            }
            let verdict = if c.gating || c.verdict == Verdict::Error {
                c.verdict.as_str().to_string()
            } else {
                format!("{} (not gating)", c.verdict)
            };
            [
                name,
                c.location(),
                truncate(&c.expectation, 40),
                c.measured_label(),
                verdict,
            ]
        })
        .collect();
    let width = |i: usize| {
        rows.iter()
            .map(|r| r[i].chars().count())
            .chain([header[i].len()])
            .max()
            .unwrap_or(0)
    };
    let w: Vec<usize> = (0..5).map(width).collect();
    let line = |cells: [&str; 5]| {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            s.push_str(c);
            if i < 4 {
                s.push_str(&" ".repeat(w[i] - c.chars().count() + 2));
            }
        }
        s.trim_end().to_string() + "\n"
    };
    let mut out = line(header);
    out.push_str(&line(
        w.iter()
            .map(|n| "-".repeat(*n))
            .collect::<Vec<_>>()
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .try_into()
            .expect("five columns"),
    ));
    for r in &rows {
        out.push_str(&line([&r[0], &r[1], &r[2], &r[3], &r[4]]));
    }
    for c in claims.iter().filter(|c| {
        matches!(
            c.verdict,
            Verdict::Fail | Verdict::Error | Verdict::Inconclusive | Verdict::Skipped
        )
    }) {
        out.push_str(&format!("{} {}: {}\n", c.id, c.verdict, c.detail));
    }
    out
}

/// How many claims reached each verdict. The command line turns the counts of the
/// gating claims into its exit code.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct VerdictCounts {
    pub pass: usize,
    pub fail: usize,
    pub inconclusive: usize,
    pub error: usize,
    pub skipped: usize,
    pub report: usize,
}

impl VerdictCounts {
    pub fn of<'a>(claims: impl IntoIterator<Item = &'a ClaimResult>) -> Self {
        let mut n = VerdictCounts::default();
        for c in claims {
            *match c.verdict {
                Verdict::Pass => &mut n.pass,
                Verdict::Fail => &mut n.fail,
                Verdict::Inconclusive => &mut n.inconclusive,
                Verdict::Error => &mut n.error,
                Verdict::Skipped => &mut n.skipped,
                Verdict::Report => &mut n.report,
            } += 1;
        }
        n
    }

    /// The verdicts of the gating claims only (`expect`, not `report`).
    pub fn gating(claims: &[ClaimResult]) -> Self {
        Self::of(claims.iter().filter(|c| c.gating))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn est(lo: f64, hi: f64) -> Estimate {
        Estimate {
            value: (lo + hi) / 2.0,
            lo,
            hi,
            n: 5,
        }
    }

    #[test]
    fn a_strict_bound_excludes_the_bound_itself() {
        // Measured exactly 0 in every repetition: `x >= 0` holds, `x > 0` does not.
        assert_eq!(
            band_verdict(&est(0.0, 0.0), 0.0, f64::INFINITY, false).0,
            Verdict::Pass
        );
        assert_eq!(
            band_verdict(&est(0.0, 0.0), 0.0, f64::INFINITY, true).0,
            Verdict::Fail
        );
        // An interval touching the bound from inside is inconclusive for `x > 0`.
        assert_eq!(
            band_verdict(&est(0.0, 2.0), 0.0, f64::INFINITY, true).0,
            Verdict::Inconclusive
        );
        assert_eq!(
            band_verdict(&est(0.5, 2.0), 0.0, f64::INFINITY, true).0,
            Verdict::Pass
        );
        assert_eq!(band_label(0.0, f64::INFINITY, true), "> 0");
        assert_eq!(band_label(f64::NEG_INFINITY, 1.0, false), "≤ 1");
    }
}
