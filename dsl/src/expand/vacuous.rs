//! Claims that cannot fail: a band that holds every value its expression can take
//! (`M in ..`, `M >= 0` on a non-negative metric, `M <= 1` on a fraction, from the
//! metric registry's `range`), or a trend that asks for ρ ≥ -1. `check` warns about
//! them: such a claim passes whatever the run measures.

use locklab_model::metrics;
use locklab_model::plan::{BinOp, ClaimKind, Expr};

/// The closed interval an expression's value lies in, from the metrics' ranges;
/// `None` when nothing bounds it (a division by something that may be zero).
fn range(e: &Expr) -> Option<(f64, f64)> {
    match e {
        Expr::Const { value } => Some((*value, *value)),
        Expr::Metric(m) => {
            let name = if m.baseline.is_some() {
                "speedup"
            } else {
                m.metric.as_str()
            };
            metrics::get(name).map(|d| d.range)
        }
        Expr::Binary { op, lhs, rhs } => {
            let (a, b) = (range(lhs)?, range(rhs)?);
            let corners = |f: fn(f64, f64) -> f64| {
                let v = [f(a.0, b.0), f(a.0, b.1), f(a.1, b.0), f(a.1, b.1)];
                if v.iter().any(|x| x.is_nan()) {
                    return None;
                }
                Some((
                    v.iter().copied().fold(f64::INFINITY, f64::min),
                    v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                ))
            };
            match op {
                BinOp::Add => Some((a.0 + b.0, a.1 + b.1)),
                BinOp::Sub => Some((a.0 - b.1, a.1 - b.0)),
                BinOp::Mul => corners(|x, y| x * y),
                BinOp::Div if b.0 > 0.0 || b.1 < 0.0 => corners(|x, y| x / y),
                BinOp::Div => None,
            }
        }
    }
}

fn num(x: f64) -> String {
    if x == f64::INFINITY {
        "∞".into()
    } else if x == f64::NEG_INFINITY {
        "-∞".into()
    } else {
        format!("{x}")
    }
}

/// Why the claim cannot fail, if it cannot.
pub fn why(kind: &ClaimKind) -> Option<String> {
    match kind {
        ClaimKind::Band {
            expr,
            lo,
            hi,
            strict,
        } => {
            if lo.is_infinite() && hi.is_infinite() {
                return Some("the band is open at both ends, so every value lies in it".into());
            }
            let (a, b) = range(expr)?;
            let above = *lo == f64::NEG_INFINITY || if *strict { *lo < a } else { *lo <= a };
            let below = *hi == f64::INFINITY || if *strict { *hi > b } else { *hi >= b };
            (above && below).then(|| {
                format!(
                    "its value always lies in [{}, {}], inside the band",
                    num(a),
                    num(b)
                )
            })
        }
        ClaimKind::Trend { min_rho, .. } if *min_rho <= -1.0 => Some(format!(
            "Spearman's ρ is never below -1, so `rho >= {}` always holds",
            num(*min_rho)
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use locklab_model::plan::{MetricRef, Target};

    fn m(name: &str) -> Expr {
        Expr::Metric(MetricRef {
            metric: name.into(),
            select: Vec::new(),
            baseline: None,
            baseline_select: Vec::new(),
            target: Target::default(),
        })
    }

    fn band(expr: Expr, lo: f64, hi: f64, strict: bool) -> ClaimKind {
        ClaimKind::Band {
            expr,
            lo,
            hi,
            strict,
        }
    }

    const INF: f64 = f64::INFINITY;

    #[test]
    fn bands_the_metric_cannot_leave_are_found() {
        let frac = "handoff_local_frac";
        assert!(why(&band(m("jain"), -INF, INF, false)).is_some());
        assert!(why(&band(m(frac), 0.0, INF, false)).is_some());
        assert!(why(&band(m(frac), -INF, 1.0, false)).is_some());
        assert!(why(&band(m("wait_max_ns"), 0.0, INF, false)).is_some());
        // The bound itself is a value the metric can take: `> 0` can fail.
        assert!(why(&band(m("wait_max_ns"), 0.0, INF, true)).is_none());
        assert!(why(&band(m(frac), 0.1, INF, false)).is_none());
        assert!(why(&band(m(frac), -INF, 0.9, false)).is_none());
        // 2 × a fraction lies in [0, 2]: `<= 1` can fail, `<= 2` cannot.
        let twice = |e| Expr::Binary {
            op: BinOp::Mul,
            lhs: Box::new(Expr::Const { value: 2.0 }),
            rhs: Box::new(e),
        };
        assert!(why(&band(twice(m(frac)), -INF, 1.0, false)).is_none());
        assert!(why(&band(twice(m(frac)), -INF, 2.0, false)).is_some());
        // A ratio of two metrics that may be zero is unbounded.
        let ratio = Expr::Binary {
            op: BinOp::Div,
            lhs: Box::new(m(frac)),
            rhs: Box::new(m("jain")),
        };
        assert!(why(&band(ratio, 0.0, INF, false)).is_none());
    }
}
