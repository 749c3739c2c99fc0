//! `expr in lo..hi` (and the bounds `expr <= c`, `expr > c`): the whole interval must
//! lie in the band to pass, outside it to fail.

use super::terms::{Reading, Res};
use super::{expr_label, Outcome, Verdict};
use crate::stats::Estimate;
use crate::util::fmt_num;
use locklab_model::plan::Expr;
use locklab_model::units;

/// A band claim.
pub(super) struct Band<'p> {
    pub(super) expr: &'p Expr,
    pub(super) lo: f64,
    pub(super) hi: f64,
    /// The finite bounds are excluded.
    pub(super) strict: bool,
}

pub(super) fn label(lo: f64, hi: f64, strict: bool) -> String {
    label_with(lo, hi, strict, fmt_num)
}

/// A bare duration metric reads better in time units (`≤ 31ms`, not `3.1e7`).
fn is_duration(expr: &Expr) -> bool {
    matches!(expr, Expr::Metric(m) if m.metric.ends_with("_ns"))
}

/// The expectation as shown, measured or not: a bare duration metric's bounds in
/// time units.
pub(super) fn expectation(expr: &Expr, lo: f64, hi: f64, strict: bool) -> String {
    if is_duration(expr) {
        label_with(lo, hi, strict, units::duration)
    } else {
        label(lo, hi, strict)
    }
}

fn label_with(lo: f64, hi: f64, strict: bool, f: fn(f64) -> String) -> String {
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

fn verdict(e: &Estimate, lo: f64, hi: f64, strict: bool) -> (Verdict, String) {
    if e.value.is_nan() || e.lo.is_nan() || e.hi.is_nan() {
        return (Verdict::Error, "the measured value is not a number".into());
    }
    // Only the finite bounds are excluded: an open end (`M > 1`: hi = inf) is no
    // bound, so an interval reaching inf there (a ratio whose divisor is 0 in some
    // resamples) lies inside it, not on it.
    let (inside, outside) = if strict {
        (
            (lo == f64::NEG_INFINITY || e.lo > lo) && (hi == f64::INFINITY || e.hi < hi),
            (lo.is_finite() && e.hi <= lo) || (hi.is_finite() && e.lo >= hi),
        )
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
                label(lo, hi, strict)
            ),
        )
    }
}

pub(super) fn evaluate(r: &mut Reading, band: &Band) -> Res<Outcome> {
    let Band {
        expr,
        lo,
        hi,
        strict,
    } = *band;
    let node = r.expr(expr)?;
    r.finite(expr, &node)?;
    let est = r.estimate(&node);
    let (mut verdict, mut why) = verdict(&est, lo, hi, strict);
    // A maximum from a wait cut off by the window's end is a lower bound: the true
    // value may be higher, so only "above the band" is certain.
    if matches!(expr, Expr::Metric(m) if r.is_lower_bound(m)) {
        let above = if strict { est.lo >= hi } else { est.lo > hi };
        let certain = match verdict {
            Verdict::Pass => hi == f64::INFINITY,
            Verdict::Fail => above,
            _ => true,
        };
        if !certain {
            verdict = Verdict::Inconclusive;
            why = format!(
                "{why}, but the value is a lower bound (a wait still running at the end of the window): the true value may be higher"
            );
        }
    }
    let measured_text = if is_duration(expr) && est.value.is_finite() {
        let d = units::duration;
        if est.lo == est.hi {
            d(est.value)
        } else {
            format!("{} [{}, {}]", d(est.value), d(est.lo), d(est.hi))
        }
    } else {
        String::new()
    };
    Ok(Outcome {
        expectation: expectation(expr, lo, hi, strict),
        measured: Some(est),
        measured_text,
        verdict,
        detail: format!("{} = {}: {why}", expr_label(expr), est.label()),
        terms: r.terms(),
    })
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
            verdict(&est(0.0, 0.0), 0.0, f64::INFINITY, false).0,
            Verdict::Pass
        );
        assert_eq!(
            verdict(&est(0.0, 0.0), 0.0, f64::INFINITY, true).0,
            Verdict::Fail
        );
        // An interval touching the bound from inside is inconclusive for `x > 0`.
        assert_eq!(
            verdict(&est(0.0, 2.0), 0.0, f64::INFINITY, true).0,
            Verdict::Inconclusive
        );
        assert_eq!(
            verdict(&est(0.5, 2.0), 0.0, f64::INFINITY, true).0,
            Verdict::Pass
        );
        assert_eq!(label(0.0, f64::INFINITY, true), "> 0");
        assert_eq!(label(f64::NEG_INFINITY, 1.0, false), "≤ 1");
    }

    #[test]
    fn a_duration_bound_is_shown_in_time_units_measured_or_not() {
        let metric = |name: &str| {
            Expr::Metric(locklab_model::plan::MetricRef {
                metric: name.into(),
                select: Vec::new(),
                baseline: None,
                baseline_select: Vec::new(),
                target: Default::default(),
            })
        };
        // What the claims table shows even when nothing was measured (a skipped
        // claim): `≤ 1ms`, not `≤ 1.000e6`.
        let e = expectation(&metric("wait_max_ns"), f64::NEG_INFINITY, 1e6, false);
        assert_eq!(e, "≤ 1ms");
        let e = expectation(&metric("jain"), 0.9, f64::INFINITY, false);
        assert_eq!(e, "≥ 0.9");
    }
}
