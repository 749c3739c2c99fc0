//! A claim's terms: each metric reference read where the language resolved it to
//! (its [`Target`]: point, baseline, rows, modes), as sets of repetitions shared by
//! the terms of one evaluation, and the arithmetic over their medians.
//!
//! [`Target`]: locklab_model::plan::Target

use super::context::{Ctx, Ran};
use super::Term;
use crate::stats::{self, Estimate};
use crate::util::fmt_num;
use locklab_model::metrics::{self, Table};
use locklab_model::plan::{BinOp, Expr, MetricRef, Mode, Value};
use locklab_model::select;
use std::collections::{BTreeSet, HashMap};

/// Why a term could not be read.
#[derive(Debug, Clone)]
pub(super) enum Why {
    /// Data the claim needs that the results cannot give (a metric this mode never
    /// measures, rows the point does not have), or a plan whose references are not
    /// resolved: the claim errs.
    Error(String),
    /// The point exists in the plan but not in these results (for this mode).
    NotRun(String),
    /// The point ran, but the metric has no value in any repetition (a run shorter
    /// than one fairness window, no hand-offs between nodes): more data would decide.
    NotMeasured(String),
}

pub(super) type Res<T> = std::result::Result<T, Why>;

/// Evaluation tree over the medians of the sets of repetitions.
#[derive(Debug, Clone)]
pub(super) enum Node {
    Const(f64),
    Src(usize),
    Bin(BinOp, Box<Node>, Box<Node>),
}

pub(super) fn eval(node: &Node, m: &[f64]) -> f64 {
    match node {
        Node::Const(v) => *v,
        Node::Src(i) => m[*i],
        Node::Bin(op, a, b) => {
            let (a, b) = (eval(a, m), eval(b, m));
            match op {
                BinOp::Add => a + b,
                BinOp::Sub => a - b,
                BinOp::Mul => a * b,
                // `x / 0` is ±inf (by the signs of x and the zero) and `0 / 0` NaN.
                // On the medians, [`Reading::finite`] makes either an error first;
                // in a bootstrap resample whose divisor's median is 0 they are kept:
                // an infinite draw widens the interval to inf, a NaN one counts
                // against both ends ([`crate::stats::bootstrap_paired`]), so a
                // divisor that is 0 in some repetitions cannot pass on the draws
                // that happen to miss them.
                BinOp::Div => a / b,
            }
        }
    }
}

/// The first arithmetic step of `n` (whose expression is `e`, where known) that
/// divides by zero or makes a number that is not finite of finite ones, on the
/// medians `m`: why, in words.
fn not_finite(e: Option<&Expr>, n: &Node, m: &[f64]) -> Option<String> {
    let Node::Bin(op, a, b) = n else {
        return None;
    };
    let (ea, eb) = match e {
        Some(Expr::Binary { lhs, rhs, .. }) => (Some(&**lhs), Some(&**rhs)),
        _ => (None, None),
    };
    if let Some(why) = not_finite(ea, a, m).or_else(|| not_finite(eb, b, m)) {
        return Some(why);
    }
    let (x, y) = (eval(a, m), eval(b, m));
    if *op == BinOp::Div && y == 0.0 {
        let divisor = match (e, eb) {
            (_, Some(rhs)) => format!("{} is 0", expr_label(rhs)),
            (Some(Expr::Metric(r)), _) => format!(
                "the throughput of the baseline {} is 0",
                r.baseline.as_deref().unwrap_or("point")
            ),
            _ => "the divisor is 0".into(),
        };
        return Some(format!("division by zero: {divisor}"));
    }
    let v = eval(n, m);
    (x.is_finite() && y.is_finite() && !v.is_finite()).then(|| {
        format!(
            "not a finite number: {} {} {} = {}",
            fmt_num(x),
            bin_sym(*op),
            fmt_num(y),
            fmt_num(v)
        )
    })
}

/// True when the reference's selection names its `mode`: it is read in that mode
/// whatever mode the claim is evaluated in.
pub(super) fn names_mode(m: &MetricRef) -> bool {
    m.select.iter().any(|(k, _)| k == "mode")
}

fn bin_sym(op: BinOp) -> &'static str {
    match op {
        BinOp::Add => "+",
        BinOp::Sub => "-",
        BinOp::Mul => "*",
        BinOp::Div => "/",
    }
}

/// `k=v` for each selector, joined by `sep`.
fn select_label(select: &[(String, Value)], sep: &str) -> String {
    let sel: Vec<String> = select
        .iter()
        .map(|(k, v)| format!("{k}={}", v.label()))
        .collect();
    sel.join(sep)
}

/// `metric[k=v, ...] over base`, or `... over base[k=v]` for a pinned baseline.
pub fn metric_label(m: &MetricRef) -> String {
    let mut s = m.metric.clone();
    if !m.select.is_empty() {
        s.push_str(&format!("[{}]", select_label(&m.select, ", ")));
    }
    if let Some(b) = &m.baseline {
        s.push_str(&format!(" over {b}"));
        if !m.baseline_select.is_empty() {
            s.push_str(&format!("[{}]", select_label(&m.baseline_select, ", ")));
        }
    }
    s
}

pub fn expr_label(e: &Expr) -> String {
    match e {
        Expr::Metric(m) => metric_label(m),
        Expr::Const { value } => fmt_num(*value),
        Expr::Binary { op, lhs, rhs } => {
            let wrap = |x: &Expr| match x {
                Expr::Binary { .. } => format!("({})", expr_label(x)),
                _ => expr_label(x),
            };
            format!("{} {} {}", wrap(lhs), bin_sym(*op), wrap(rhs))
        }
    }
}

/// One evaluation of a claim in one mode: the sets of repetitions its terms read
/// (each set once, however many terms share it) and the terms, labelled.
pub(super) struct Reading<'c, 'a> {
    ctx: &'c Ctx<'a>,
    /// The mode the claim is evaluated in.
    mode: Mode,
    /// The bootstrap's seed, one per claim and mode.
    pub(super) seed: u64,
    sets: Vec<Vec<f64>>,
    /// Per set, the repetitions its values are of, and the run they are of (an
    /// index into `runs`): sets of one run are resampled in pairs.
    reps: Vec<Vec<u32>>,
    run_of: Vec<usize>,
    runs: Vec<(u32, Mode)>,
    keys: HashMap<String, usize>,
    terms: Vec<(String, Node)>,
    /// Every (point, mode) read, baselines included.
    read: BTreeSet<(u32, Mode)>,
    /// The labels of the terms whose value is a lower bound.
    lower_bounds: BTreeSet<String>,
}

impl<'c, 'a> Reading<'c, 'a> {
    pub(super) fn new(ctx: &'c Ctx<'a>, mode: Mode, seed: u64) -> Self {
        Reading {
            ctx,
            mode,
            seed,
            sets: Vec::new(),
            reps: Vec::new(),
            run_of: Vec::new(),
            runs: Vec::new(),
            keys: HashMap::new(),
            terms: Vec::new(),
            read: BTreeSet::new(),
            lower_bounds: BTreeSet::new(),
        }
    }

    pub(super) fn ctx(&self) -> &'c Ctx<'a> {
        self.ctx
    }

    /// The set `key` names: the values of point `p` in `mode`, repetition by
    /// repetition (`reps`).
    fn add(&mut self, key: String, p: u32, mode: Mode, reps: Vec<u32>, values: Vec<f64>) -> usize {
        if let Some(&i) = self.keys.get(&key) {
            return i;
        }
        let run = match self.runs.iter().position(|&r| r == (p, mode)) {
            Some(i) => i,
            None => {
                self.runs.push((p, mode));
                self.runs.len() - 1
            }
        };
        self.sets.push(values);
        self.reps.push(reps);
        self.run_of.push(run);
        self.keys.insert(key, self.sets.len() - 1);
        self.sets.len() - 1
    }

    pub(super) fn expr(&mut self, e: &Expr) -> Res<Node> {
        Ok(match e {
            Expr::Const { value } => Node::Const(*value),
            Expr::Metric(m) => self.metric(m)?,
            Expr::Binary { op, lhs, rhs } => {
                Node::Bin(*op, Box::new(self.expr(lhs)?), Box::new(self.expr(rhs)?))
            }
        })
    }

    /// The point `m` reads and the mode it is read in (the one its selection
    /// names, else the claim's), once the results show that the point ran there.
    pub(super) fn point(&self, m: &MetricRef) -> Res<(u32, Mode)> {
        let t = &m.target;
        let mode = match t.modes.first() {
            Some(named) if names_mode(m) => *named,
            _ => self.mode,
        };
        let p = t.point;
        let no_records = || {
            Why::NotRun(format!(
                "{} has no records in mode {}",
                metric_label(m),
                mode.as_str()
            ))
        };
        if !t.modes.contains(&mode) {
            return Err(no_records());
        }
        match self.ctx.ran(p, mode) {
            Ran::Yes => Ok((p, mode)),
            Ran::No => Err(no_records()),
            Ran::Skipped(why) => Err(Why::NotRun(format!(
                "point {} was skipped in mode {}: {why}",
                self.ctx.id(p),
                mode.as_str()
            ))),
        }
    }

    /// Read one metric reference: a node over the sets of repetitions it needs.
    pub(super) fn metric(&mut self, m: &MetricRef) -> Res<Node> {
        let (p, mode) = self.point(m)?;
        self.read.insert((p, mode));
        let label = metric_label(m);
        let rows = &m.target.rows;
        let node = if let Some(base) = &m.baseline {
            let Some(b) = m.target.baseline else {
                return Err(Why::Error(format!(
                    "{label} has no baseline point in the plan"
                )));
            };
            match self.ctx.ran(b, mode) {
                Ran::Yes => {}
                Ran::No => {
                    return Err(Why::NotRun(format!(
                        "baseline {base} has no records in mode {}",
                        mode.as_str()
                    )))
                }
                Ran::Skipped(why) => {
                    return Err(Why::NotRun(format!(
                        "baseline point {} was skipped in mode {}: {why}",
                        self.ctx.id(b),
                        mode.as_str()
                    )))
                }
            }
            self.read.insert((b, mode));
            let tp = "throughput_ops_s";
            let (a, a_reps) = (
                self.ctx.point_samples(p, mode, tp)?,
                self.ctx.point_reps(p, mode)?,
            );
            let a = self.add(format!("{tp}|{p}|{}", mode.as_str()), p, mode, a_reps, a);
            let (bs, b_reps) = (
                self.ctx.point_samples(b, mode, tp)?,
                self.ctx.point_reps(b, mode)?,
            );
            let b = self.add(format!("{tp}|{b}|{}", mode.as_str()), b, mode, b_reps, bs);
            Node::Bin(BinOp::Div, Box::new(Node::Src(a)), Box::new(Node::Src(b)))
        } else {
            let Some(metric) = metrics::get(&m.metric) else {
                return Err(Why::Error(format!("unknown metric \"{}\"", m.metric)));
            };
            let table =
                select::table(metric, rows).map_err(|e| Why::Error(format!("{label}: {e}")))?;
            if table == Table::Points && self.ctx.lower_bound(p, mode, &m.metric) {
                self.lower_bounds.insert(label.clone());
            }
            let (key, (reps, samples)) = match table {
                Table::Points => (
                    format!("{}|{p}|{}", m.metric, mode.as_str()),
                    (
                        self.ctx.point_reps(p, mode)?,
                        self.ctx.point_samples(p, mode, &m.metric)?,
                    ),
                ),
                t => (
                    format!(
                        "{}|{p}|{}|{}",
                        m.metric,
                        mode.as_str(),
                        select_label(rows, ",")
                    ),
                    self.ctx.row_samples(t, p, mode, &m.metric, rows)?,
                ),
            };
            if samples.iter().all(|v| v.is_nan()) {
                return Err(self.ctx.not_measured(p, mode, &m.metric));
            }
            Node::Src(self.add(key, p, mode, reps, samples))
        };
        self.terms.push((label, node.clone()));
        Ok(node)
    }

    /// An error where the arithmetic of `e` (read as `node`) has no finite value on
    /// the medians: a division by zero, or an overflow. (An infinite metric, the
    /// `max_min` of a starved thread, is a value, and so is what follows from it.)
    /// Only the medians: a divisor that is 0 in some resamples is the bootstrap's
    /// to weigh (see [`eval`]).
    pub(super) fn finite(&self, e: &Expr, node: &Node) -> Res<()> {
        let medians: Vec<f64> = self
            .sets
            .iter()
            .map(|s| stats::median_ci(s).value)
            .collect();
        match not_finite(Some(e), node, &medians) {
            Some(why) => Err(Why::Error(format!("{}: {why}", expr_label(e)))),
            None => Ok(()),
        }
    }

    /// The fewest repetitions with a value behind any set read (0: none read).
    pub(super) fn repetitions(&self) -> usize {
        self.sets
            .iter()
            .map(|s| s.iter().filter(|v| !v.is_nan()).count())
            .min()
            .unwrap_or(0)
    }

    /// The labels of the terms read whose value is a lower bound.
    pub(super) fn lower_bounds(&self) -> Vec<String> {
        self.lower_bounds.iter().cloned().collect()
    }

    /// Is the value of `m`, as read, a lower bound?
    pub(super) fn is_lower_bound(&self, m: &MetricRef) -> bool {
        self.lower_bounds.contains(&metric_label(m))
    }

    /// The ids of the points read whose repetitions the noise gate flagged.
    pub(super) fn noisy_points(&self) -> Vec<String> {
        self.read
            .iter()
            .filter(|(p, mode)| self.ctx.flagged(*p, *mode))
            .map(|(p, _)| self.ctx.id(*p).to_string())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect()
    }

    /// `stats` of the medians of the sets, with bootstrap intervals; the sets of
    /// one point in one mode paired by repetition (`stats::bootstrap_paired`).
    pub(super) fn bootstrap(&self, stats: impl Fn(&[f64]) -> Vec<f64>) -> Vec<Estimate> {
        let samples: Vec<stats::Samples> = (0..self.sets.len())
            .map(|i| stats::Samples {
                values: &self.sets[i],
                reps: &self.reps[i],
                group: self.run_of[i],
            })
            .collect();
        stats::bootstrap_paired(&samples, self.seed, stats)
    }

    /// The estimate of a node: the order-statistic interval of the median for a
    /// single set of repetitions, the bootstrap for anything derived.
    pub(super) fn estimate(&self, node: &Node) -> Estimate {
        match node {
            Node::Src(i) => stats::median_ci(&self.sets[*i]),
            _ => self.bootstrap(|m| vec![eval(node, m)])[0],
        }
    }

    /// Every term read, once per label, with its estimate.
    pub(super) fn terms(&self) -> Vec<Term> {
        let mut seen = BTreeSet::new();
        let uniq: Vec<&(String, Node)> = self
            .terms
            .iter()
            .filter(|(l, _)| seen.insert(l.clone()))
            .collect();
        let est = self.bootstrap(|m| uniq.iter().map(|(_, n)| eval(n, m)).collect());
        uniq.iter()
            .zip(est)
            .map(|((label, node), e)| Term {
                label: label.clone(),
                value: match node {
                    Node::Src(i) => stats::median_ci(&self.sets[*i]),
                    _ => e,
                },
            })
            .collect()
    }
}
