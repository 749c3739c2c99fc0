//! `a < b < c gap 2%` (or `>`): each neighbouring pair ordered, with a relative gap
//! of at least `min_gap`, and separated beyond the run-to-run spread.

use super::terms::{eval, Node, Reading, Res, Why};
use super::{Outcome, Verdict};
use crate::stats::Estimate;
use crate::util::fmt_num;
use locklab_model::plan::{Expr, OrderOp};

/// How far `big` exceeds `small`, relative to `small`: (big − small) / |small|.
/// Equal values give 0 (also at zero, or both infinite alike); a zero `small`
/// gives ±inf. An infinite term (a draw that divided by zero, a starved thread's
/// `max_min`) gives the limit, never NaN: an infinite `small` and a finite `big`
/// ±1, opposite infinities ±inf, a finite `small` and an infinite `big` ±inf.
fn rel_gap(small: f64, big: f64) -> f64 {
    let signed_inf = |up: bool| if up { f64::INFINITY } else { f64::NEG_INFINITY };
    if small == big {
        0.0
    } else if small == 0.0 {
        signed_inf(big > 0.0)
    } else if small.is_infinite() {
        if big.is_finite() {
            -small.signum()
        } else {
            signed_inf(big > small)
        }
    } else {
        (big - small) / small.abs()
    }
}

pub(super) fn expectation(op: OrderOp, min_gap: f64, or_equal: &[bool]) -> String {
    let eq = or_equal.iter().any(|e| *e);
    let dir = match (op, eq) {
        (OrderOp::Less, false) => "increasing (<)",
        (OrderOp::Less, true) => "non-decreasing (≤)",
        (OrderOp::Greater, false) => "decreasing (>)",
        (OrderOp::Greater, true) => "non-increasing (≥)",
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

/// An ordering claim as the plan states it.
pub(super) struct Order<'a> {
    pub exprs: &'a [Expr],
    pub op: OrderOp,
    pub min_gap: f64,
    /// Per neighbouring pair, whether equality satisfies it; empty: all strict.
    pub or_equal: &'a [bool],
}

pub(super) fn evaluate(r: &mut Reading, order: &Order) -> Res<Outcome> {
    let &Order {
        exprs,
        op,
        min_gap,
        or_equal,
    } = order;
    if exprs.len() < 2 {
        return Err(Why::Error("an ordering needs at least two terms".into()));
    }
    let nodes: Vec<Node> = exprs.iter().map(|e| r.expr(e)).collect::<Res<_>>()?;
    for (e, n) in exprs.iter().zip(&nodes) {
        r.finite(e, n)?;
    }
    let k = nodes.len();
    let gap = |a: f64, b: f64| match op {
        OrderOp::Less => rel_gap(a, b),
        OrderOp::Greater => rel_gap(b, a),
    };
    let est = r.bootstrap(|m| {
        let v: Vec<f64> = nodes.iter().map(|n| eval(n, m)).collect();
        let mut out = v.clone();
        out.extend((0..k - 1).map(|i| gap(v[i], v[i + 1])));
        out
    });
    let (vals, gaps) = est.split_at(k);
    let mut verdicts = Vec::new();
    let mut notes = Vec::new();
    for (i, g) in gaps.iter().enumerate() {
        let (a, b) = (&vals[i], &vals[i + 1]);
        let separated = match op {
            OrderOp::Less => a.hi < b.lo,
            OrderOp::Greater => a.lo > b.hi,
        };
        // An exact tie in every draw (the deterministic simulator makes them): no
        // strict `<`, but `<=` holds.
        let tie = g.lo == 0.0 && g.hi == 0.0;
        let inclusive = or_equal.get(i).copied().unwrap_or(false);
        let v = if g.is_nan() || g.lo.is_nan() {
            Verdict::Error
        } else if inclusive {
            if g.hi < min_gap {
                Verdict::Fail
            } else if g.lo >= min_gap && (separated || (tie && min_gap == 0.0)) {
                Verdict::Pass
            } else {
                Verdict::Inconclusive
            }
        } else if g.hi < min_gap || g.hi <= 0.0 {
            Verdict::Fail
        } else if g.lo >= min_gap && separated {
            Verdict::Pass
        } else {
            Verdict::Inconclusive
        };
        let sym = match (op, inclusive) {
            (OrderOp::Less, false) => "<",
            (OrderOp::Less, true) => "≤",
            (OrderOp::Greater, false) => ">",
            (OrderOp::Greater, true) => "≥",
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
    let min = gaps
        .iter()
        .copied()
        .min_by(|a, b| a.value.total_cmp(&b.value))
        .unwrap_or_else(Estimate::nan);
    Ok(Outcome {
        expectation: expectation(op, min_gap, or_equal),
        measured: Some(min),
        measured_text: format!("min gap {}", pct(&min)),
        verdict: Verdict::worst(&verdicts),
        detail: notes.join("; "),
        terms: r.terms(),
    })
}
