//! `metric increasing|decreasing over axis`: Spearman's ρ between the trend's
//! positions and the metric read at each, with a bootstrap interval.

use super::terms::{eval, Node, Reading, Res, Why};
use super::{Outcome, Verdict};
use crate::stats;
use crate::util::fmt_num;
use locklab_model::plan::{Expr, MetricRef, Target, TrendDirection, TrendSeries, TrendStep};
use locklab_model::select;

/// A trend claim.
pub(super) struct Trend<'p> {
    /// The reference as written (labels only).
    pub(super) metric: &'p MetricRef,
    pub(super) axis: &'p str,
    pub(super) direction: TrendDirection,
    pub(super) min_rho: f64,
    pub(super) series: &'p TrendSeries,
}

pub(super) fn expectation(axis: &str, direction: TrendDirection, min_rho: f64) -> String {
    match direction {
        TrendDirection::Increasing => {
            format!("increasing over {axis}: ρ ≥ {}", fmt_num(min_rho))
        }
        TrendDirection::Decreasing => {
            format!("decreasing over {axis}: ρ ≤ {}", fmt_num(-min_rho))
        }
    }
}

/// The steps of a trend over a row dimension: one per value the point's selected
/// rows hold, ascending, each selecting that value.
fn row_steps(r: &Reading, trend: &Trend, target: &Target) -> Res<Vec<TrendStep>> {
    let whole = MetricRef {
        target: target.clone(),
        ..trend.metric.clone()
    };
    let (p, mode) = r.point(&whole)?;
    let Some(table) = select::row_table(trend.axis) else {
        return Err(Why::Error(format!(
            "a trend over rows runs over thread, cpu or node, not {}",
            trend.axis
        )));
    };
    let values = r
        .ctx()
        .dim_values(table, p, mode, trend.axis, &target.rows)?;
    Ok(values
        .into_iter()
        .map(|v| {
            let at = (trend.axis.to_string(), v.clone());
            let mut metric = whole.clone();
            metric.select.push(at.clone());
            metric.target.rows.push(at);
            TrendStep { value: v, metric }
        })
        .collect())
}

pub(super) fn evaluate(r: &mut Reading, trend: &Trend) -> Res<Outcome> {
    let axis = trend.axis;
    let steps = match trend.series {
        TrendSeries::Steps { steps } => steps.clone(),
        TrendSeries::Rows { target } => row_steps(r, trend, target)?,
    };
    let mut nodes: Vec<Node> = Vec::new();
    let mut used = Vec::new();
    let mut missing = Vec::new();
    for step in &steps {
        match r.metric(&step.metric) {
            Ok(n) => {
                r.finite(&Expr::Metric(step.metric.clone()), &n)?;
                nodes.push(n);
                used.push(step.value.label());
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
    let est = r.bootstrap(|m| {
        let y: Vec<f64> = nodes.iter().map(|n| eval(n, m)).collect();
        vec![stats::spearman(&pos, &y)]
    })[0];
    let min_rho = trend.min_rho;
    let verdict = match trend.direction {
        TrendDirection::Increasing if est.lo.is_nan() => Verdict::Error,
        TrendDirection::Increasing if est.lo >= min_rho => Verdict::Pass,
        TrendDirection::Increasing if est.hi < min_rho => Verdict::Fail,
        TrendDirection::Decreasing if est.hi.is_nan() => Verdict::Error,
        TrendDirection::Decreasing if est.hi <= -min_rho => Verdict::Pass,
        TrendDirection::Decreasing if est.lo > -min_rho => Verdict::Fail,
        _ => Verdict::Inconclusive,
    };
    let terms = r.terms();
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
        expectation: expectation(axis, trend.direction, min_rho),
        measured: Some(est),
        measured_text: String::new(),
        verdict,
        detail,
        terms,
    })
}
