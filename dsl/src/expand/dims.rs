//! The dimensions of a claim's terms: a metric is in the unit the registry gives it
//! (`wait_p99_ns` a duration, `throughput_ops_s` a rate, `jain` a plain number), a
//! constant in its unit's. The two sides of a comparison, and the terms of a sum,
//! must agree: `wait_p99_ns[...] < 1KiB` is an error, not a comparison with 1024.
//! A constant without a unit takes the dimension it meets (`wait_p99_ns < 5000`
//! reads nanoseconds), and is a plain factor in a product or a quotient.
//!
//! Durations are stored in nanoseconds and rates per second, so a product or a
//! quotient that mixes the two (`throughput_ops_s * 1ms`, in ns/s; `wait_mean_ns /
//! throughput_ops_s`, in ns·s) is in no unit a constant can be written in, and its
//! number is off by powers of 10⁹: it is an error. One such quotient is an idiom:
//! `1s / throughput_ops_s` (the constant one second over a rate) is the time per
//! operation, a duration in ns (10⁹ / the rate).

use super::claims::has_metric;
use crate::diag::Span;
use crate::resolve::Ctx;
use crate::syntax::{BandAst, ExprAst, Val, ValKind};
use crate::units::{self, Dim};
use locklab_model::metrics::{self, Unit};

/// Powers of the base units a claim's numbers are in: nanoseconds (durations),
/// per second (rates: `throughput_ops_s`, frequencies) and bytes; `Any` for a
/// plain number. Nanoseconds and per second are kept apart: `1 / throughput_ops_s`
/// is in seconds, not comparable with `1ms` (a million nanoseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dimension {
    Any,
    Of { ns: i32, per_s: i32, bytes: i32 },
}

use Dimension::{Any, Of};

const NUMBER: Dimension = Of {
    ns: 0,
    per_s: 0,
    bytes: 0,
};
const DURATION: Dimension = Of {
    ns: 1,
    per_s: 0,
    bytes: 0,
};
const RATE: Dimension = Of {
    ns: 0,
    per_s: 1,
    bytes: 0,
};
const SIZE: Dimension = Of {
    ns: 0,
    per_s: 0,
    bytes: 1,
};

impl Dimension {
    fn of_unit(d: Option<Dim>) -> Dimension {
        match d {
            None => Any,
            Some(Dim::Duration) => DURATION,
            Some(Dim::Size) => SIZE,
            Some(Dim::Freq) => RATE,
            Some(Dim::Percent) => NUMBER,
        }
    }

    fn of_metric(name: &str) -> Dimension {
        match metrics::get(name).map(|m| m.unit) {
            None => Any,
            Some(Unit::Nanos) => DURATION,
            Some(Unit::OpsPerSec) => RATE,
            Some(Unit::Count | Unit::Ratio | Unit::Fraction | Unit::Index) => NUMBER,
        }
    }

    /// The dimension both are, if they agree.
    fn unify(self, other: Dimension) -> Option<Dimension> {
        match (self, other) {
            (Any, d) | (d, Any) => Some(d),
            (a, b) if a == b => Some(a),
            _ => None,
        }
    }

    /// `self * other` (`sign` 1) or `self / other` (`sign` -1); a plain number is a
    /// plain factor.
    fn times(self, other: Dimension, sign: i32) -> Dimension {
        let of = |d: Dimension| match d {
            Any => (0, 0, 0),
            Of { ns, per_s, bytes } => (ns, per_s, bytes),
        };
        if self == Any && other == Any {
            return Any;
        }
        let (a, b) = (of(self), of(other));
        Of {
            ns: a.0.saturating_add(sign * b.0),
            per_s: a.1.saturating_add(sign * b.1),
            bytes: a.2.saturating_add(sign * b.2),
        }
    }

    /// Nanoseconds and per-second powers that do not cancel: a number in a unit
    /// such as ns/s or ns·s, which no constant can be written in.
    fn mixes_ns_and_per_s(self) -> bool {
        matches!(self, Of { ns, per_s, .. } if ns != 0 && per_s != 0)
    }

    pub fn noun(self) -> String {
        match self {
            Any => "a plain number".into(),
            NUMBER => "a number without a unit (a count, ratio or fraction)".into(),
            DURATION => "a duration".into(),
            RATE => "a rate (per second)".into(),
            SIZE => "a size".into(),
            Of { ns, per_s, bytes } => {
                // Numerator and denominator: `ns·B/s`, `s`, `1/ns`.
                let mut num = Vec::new();
                let mut den = Vec::new();
                for (unit, p) in [("ns", ns), ("s", -per_s), ("B", bytes)] {
                    let side = if p > 0 { &mut num } else { &mut den };
                    match p.unsigned_abs() {
                        0 => {}
                        1 => side.push(unit.to_string()),
                        n => side.push(format!("{unit}^{n}")),
                    }
                }
                let num = if num.is_empty() {
                    "1".to_string()
                } else {
                    num.join("·")
                };
                if den.is_empty() {
                    format!("a quantity in {num}")
                } else {
                    format!("a quantity in {num}/{}", den.join("·"))
                }
            }
        }
    }

    /// What to write instead of a constant of another dimension.
    fn help(self) -> String {
        match self {
            DURATION => "write a duration such as `100ns` (or a plain number of nanoseconds)".into(),
            RATE => "write a rate as a plain number of operations per second (`1e6`) or as a frequency (`1MHz`)".into(),
            SIZE => "write a size such as `1KiB`".into(),
            NUMBER => "write a plain number (or a percentage)".into(),
            _ => "write a plain number".into(),
        }
    }
}

/// The dimension of `e`; `None` (with an error) when two of its terms are added
/// that do not agree.
pub fn of_expr(ctx: &mut Ctx, file: usize, e: &ExprAst) -> Option<Dimension> {
    match e {
        ExprAst::Metric(m) => Some(if m.baseline.is_some() {
            NUMBER
        } else {
            Dimension::of_metric(&m.name.name)
        }),
        ExprAst::Const(v) => Some(of_const(v)),
        ExprAst::Bin { op, lhs, rhs, .. } => {
            let l = of_expr(ctx, file, lhs);
            let r = of_expr(ctx, file, rhs);
            let (l, r) = (l?, r?);
            match op {
                '*' | '/' => product(ctx, file, e, (lhs, l), r),
                _ => match l.unify(r) {
                    Some(d) => Some(d),
                    None => {
                        let (verb, to) = if *op == '+' {
                            ("add", "to")
                        } else {
                            ("subtract", "from")
                        };
                        ctx.err(
                            file,
                            rhs.span(),
                            format!("cannot {verb} {} {to} {}", r.noun(), l.noun()),
                        )
                        .set_label(r.noun())
                        .add_label(lhs.span(), l.noun())
                        .help = Some(if has_metric(rhs) {
                            "add and subtract terms of one unit; divide to compare two units".into()
                        } else {
                            l.help()
                        });
                        None
                    }
                },
            }
        }
    }
}

/// Is `e` the constant one second (`1s`, `1000ms`, ...)?
fn is_one_second(e: &ExprAst) -> bool {
    match e {
        ExprAst::Const(Val {
            kind: ValKind::Num { text, unit },
            ..
        }) => matches!(
            units::quantity_f64(text, unit.as_ref().map(|u| u.name.as_str())),
            Ok((v, Some(Dim::Duration))) if v == 1e9
        ),
        _ => false,
    }
}

/// The dimension of the product or quotient `e` of `lhs` (of dimension `l`) and a
/// right-hand side of dimension `r`; `None` (with an error) where it mixes
/// nanoseconds and per second. `1s / rate` is the time per operation, in ns.
fn product(
    ctx: &mut Ctx,
    file: usize,
    e: &ExprAst,
    (lhs, l): (&ExprAst, Dimension),
    r: Dimension,
) -> Option<Dimension> {
    let div = matches!(e, ExprAst::Bin { op: '/', .. });
    if div && (l, r) == (DURATION, RATE) && is_one_second(lhs) {
        return Some(DURATION);
    }
    let d = l.times(r, if div { -1 } else { 1 });
    if !d.mixes_ns_and_per_s() {
        return Some(d);
    }
    let verb = if div { "divide" } else { "multiply" };
    let help = if div && (l, r) == (DURATION, RATE) {
        if has_metric(lhs) {
            "a duration over a rate is in ns·s, not a duration: write the time per operation as `1s / throughput_ops_s[...]` (in ns), and compare durations with durations or like metrics as a ratio (`wait_mean_ns[...] / wait_mean_ns[...]`)"
        } else {
            "the time per operation is `1s / throughput_ops_s[...]` (in ns), with the constant one second; scale it by a plain number (`2 * (1s / throughput_ops_s[...])`)"
        }
    } else {
        "write the conversion as a plain number (operations per millisecond: `throughput_ops_s[...] / 1000`), compare like metrics as a ratio (`throughput_ops_s[...] / throughput_ops_s[...]`), or write the time per operation as `1s / throughput_ops_s[...]`"
    };
    ctx.err(
        file,
        e.span(),
        format!(
            "cannot {verb} {} by {}: durations are in ns and rates per second, so this is {}",
            l.noun(),
            r.noun(),
            d.noun()
        ),
    )
    .set_label(d.noun())
    .help = Some(help.into());
    None
}

/// A constant's dimension; one that does not parse is `Any` (its error is told
/// where its value is read).
fn of_const(v: &Val) -> Dimension {
    match &v.kind {
        ValKind::Num { text, unit } => {
            match units::quantity_f64(text, unit.as_ref().map(|u| u.name.as_str())) {
                Ok((_, d)) => Dimension::of_unit(d),
                Err(_) => Any,
            }
        }
        _ => Any,
    }
}

/// `what` (at `span`, of dimension `found`) compared with a term of dimension
/// `expected` at `expected_span`: an error unless they agree.
fn compare(
    ctx: &mut Ctx,
    file: usize,
    (expected, expected_span): (Dimension, Span),
    (found, span, constant): (Dimension, Span, bool),
) -> bool {
    if expected.unify(found).is_some() {
        return true;
    }
    ctx.err(
        file,
        span,
        format!(
            "this claim compares {} with {}",
            expected.noun(),
            found.noun()
        ),
    )
    .set_label(found.noun())
    .add_label(expected_span, expected.noun())
    .help = Some(if constant {
        expected.help()
    } else {
        "compare metrics of one unit, or divide one by the other".into()
    });
    false
}

/// A band's constants agree with its expression, and a `±` tolerance with its
/// centre (a percentage is relative, of any dimension).
pub fn band(ctx: &mut Ctx, file: usize, e: &ExprAst, band: &BandAst) -> bool {
    let Some(d) = of_expr(ctx, file, e) else {
        return false;
    };
    let lhs = (d, e.span());
    match band {
        BandAst::Range { lo, hi, .. } => [lo, hi]
            .into_iter()
            .flatten()
            .all(|v| compare(ctx, file, lhs, (of_const(v), v.span, true))),
        BandAst::PlusMinus { center, tol, .. } => {
            let c = of_const(center);
            if !compare(ctx, file, lhs, (c, center.span, true)) {
                return false;
            }
            let relative = matches!(&tol.kind, ValKind::Num { unit: Some(u), .. } if u.name == "%");
            // A percentage is relative; a tolerance in a unit beside a centre in a
            // unit is checked against it where the band is built.
            relative || c != Any || compare(ctx, file, lhs, (of_const(tol), tol.span, true))
        }
    }
}

/// The terms of an ordering (`A < B < C`, `M <= 3 * 10ms`) agree.
pub fn chain(ctx: &mut Ctx, file: usize, terms: &[&ExprAst]) -> bool {
    let mut dims = Vec::new();
    for t in terms {
        match of_expr(ctx, file, t) {
            Some(d) => dims.push((d, t)),
            None => return false,
        }
    }
    // The dimension so far, from the first term that has one (a metric's first).
    let mut acc: Option<(Dimension, &ExprAst)> = None;
    for (d, t) in dims {
        match acc {
            None => acc = Some((d, t)),
            Some((a, first)) => {
                // Point at the constant side when there is one: it is what to fix.
                let ok = if has_metric(first) {
                    compare(ctx, file, (a, first.span()), (d, t.span(), !has_metric(t)))
                } else {
                    compare(ctx, file, (d, t.span()), (a, first.span(), true))
                };
                if !ok {
                    return false;
                }
                if a == Any {
                    acc = Some((d, t));
                }
            }
        }
    }
    true
}
