//! Claims: `expect` and `report` statements to plan claims, each metric reference
//! resolved (`refs`), each claim with the modes it is evaluated in.

use super::refs::{
    check_dup_keys, mode_of, resolve_one, resolve_trend, select_value, written, Scope,
};
use crate::diag::{did_you_mean, Label, Span};
use crate::resolve::{Ctx, Env};
use crate::syntax::{
    BandAst, ClaimAst, ClaimBody, ExpectStmt, ExprAst, Ident, OrdOp, Val, ValKind,
};
use crate::units::{self, Dim};
use locklab_model::plan::{
    BinOp, Claim, ClaimKind, Expr, Mode, OrderOp, TrendDirection, TrendSeries,
};
use std::collections::BTreeMap;

/// One claim as the file states it, in the group it sits in.
struct ClaimIn<'a> {
    ast: &'a ClaimAst,
    /// The group's selector (`expect [mode = sim, ...] { ... }`), merged into every
    /// metric of the claim.
    group: &'a [(Ident, Val)],
    group_span: Option<Span>,
    /// `c1`, `c2`, ... in file order, or the claim's name.
    id: String,
    gating: bool,
}

/// Every claim of the experiment, in file order. Returns them and whether all
/// checked.
pub fn claims(ctx: &mut Ctx, scope: &Scope, expects: &[&ExpectStmt]) -> (Vec<Claim>, bool) {
    let mut ok = true;
    let mut claims = Vec::new();
    let mut names: BTreeMap<String, Span> = BTreeMap::new();
    // Unnamed claims are numbered by their place in the file (`c1`, `c2`, ...): a
    // name may not take one of those ids.
    let numbered: BTreeMap<String, usize> = expects
        .iter()
        .flat_map(|e| e.claims.iter())
        .enumerate()
        .filter(|(_, c)| c.name.is_none())
        .map(|(i, _)| (format!("c{}", i + 1), i + 1))
        .collect();
    let mut index = 0;
    for e in expects {
        let group: Vec<(Ident, Val)> = e
            .group
            .as_ref()
            .map(|g| g.items.clone())
            .unwrap_or_default();
        if let Some(g) = &e.group {
            ok &= check_dup_keys(ctx, scope.file, &g.items);
        }
        for c in &e.claims {
            index += 1;
            let id = match &c.name {
                Some(name) => {
                    if let Some(k) = numbered.get(&name.name) {
                        ctx.err(
                            scope.file,
                            name.span,
                            format!("`{}` is the id of the unnamed claim {k}", name.name),
                        )
                        .set_label("taken")
                        .help = Some(
                            "unnamed claims are numbered c1, c2, ... in file order: choose another name".into(),
                        );
                        ok = false;
                    }
                    if let Some(first) = names.get(&name.name) {
                        let first = *first;
                        ctx.err(
                            scope.file,
                            name.span,
                            format!("claim `{}` is named twice", name.name),
                        )
                        .set_label("second claim of this name")
                        .labels
                        .push(Label {
                            span: first,
                            message: "first here".into(),
                        });
                        ok = false;
                    }
                    names.insert(name.name.clone(), name.span);
                    name.name.clone()
                }
                None => format!("c{index}"),
            };
            let input = ClaimIn {
                ast: c,
                group: &group,
                group_span: e.group.as_ref().map(|g| g.span),
                id,
                gating: !(e.report || c.report),
            };
            let told = ctx.diags.len();
            let built = claim(ctx, scope, input);
            // What `--set` left out: a value the claim names (a trend left with
            // fewer steps is not the trend written), or a point it cannot read now.
            match (scope.narrowed_away_claim(index - 1, built.is_some()), built) {
                (Some(skipped), _) => {
                    ctx.diags.truncate(told);
                    claims.push(skipped);
                }
                (None, Some(cl)) => claims.push(cl),
                (None, None) => ok = false,
            }
        }
    }
    (claims, ok)
}

fn claim(ctx: &mut Ctx, scope: &Scope, input: ClaimIn) -> Option<Claim> {
    let file = scope.file;
    let (c, group) = (input.ast, input.group);
    // The claim as written, one line, without the comments a span can take along
    // (claim bodies hold no strings, so `#` and `//` always start a comment).
    let text_of = |sp: Span| -> String {
        ctx.text(file)
            .get(sp.start..sp.end)
            .unwrap_or("")
            .lines()
            .map(|l| {
                let cut = [l.find('#'), l.find("//")]
                    .into_iter()
                    .flatten()
                    .min()
                    .unwrap_or(l.len());
                &l[..cut]
            })
            .flat_map(str::split_whitespace)
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut text = text_of(c.body_span);
    if let Some(gs) = input.group_span {
        text = format!("{} {text}", text_of(gs));
    }
    let kind = match &c.body {
        ClaimBody::Trend {
            metric,
            increasing,
            axis,
            values,
            rho,
        } => {
            let is_axis = scope.axes.iter().any(|a| a.name == axis.name);
            let is_dim = ["thread", "cpu", "node"].contains(&axis.name.as_str());
            if !is_axis && !is_dim {
                if scope.sweep_unparsed {
                    return None;
                }
                let cands: Vec<&str> = scope
                    .axes
                    .iter()
                    .map(|a| a.name.as_str())
                    .chain(["thread", "cpu", "node"])
                    .collect();
                let help = did_you_mean(&axis.name, cands.iter().copied());
                let d = ctx
                    .err(
                        file,
                        axis.span,
                        format!("unknown axis `{}` for a trend", axis.name),
                    )
                    .set_label("not an axis");
                d.help = help;
                return None;
            }
            let w = written(ctx, scope, group, metric)?;
            if w.mref.select.iter().any(|(k, _)| *k == axis.name) {
                ctx.err(
                    file,
                    metric.span,
                    format!("a trend over `{}` cannot also select it", axis.name),
                );
                return None;
            }
            let mut vals = Vec::new();
            if let Some(list) = values {
                if let ValKind::List(items) = &list.kind {
                    for it in items {
                        let (_, v) = select_value(ctx, scope, axis, it)?;
                        vals.push(v);
                    }
                }
                if vals.len() < 2 {
                    ctx.err(file, list.span, "a trend needs at least two values");
                    return None;
                }
            } else if is_axis {
                let n = scope
                    .axes
                    .iter()
                    .find(|a| a.name == axis.name)
                    .map_or(0, |a| a.values.len());
                if n < 2 {
                    ctx.err(
                        file,
                        axis.span,
                        format!(
                            "a trend over `{}` needs at least two values; it has {n}",
                            axis.name
                        ),
                    );
                    return None;
                }
            }
            let min_rho = match rho {
                Some(r) => ctx.real(Env::NoAxes, file, r, "`rho`", -1.0..=1.0)?,
                None => 0.8,
            };
            let series = resolve_trend(ctx, scope, &w, axis, &vals)?;
            ClaimKind::Trend {
                metric: w.mref,
                series,
                axis: axis.name.clone(),
                values: vals,
                direction: if *increasing {
                    TrendDirection::Increasing
                } else {
                    TrendDirection::Decreasing
                },
                min_rho,
            }
        }
        ClaimBody::Band { expr: e, band } => {
            if !has_metric(e) {
                ctx.err(file, e.span(), "a claim needs a metric")
                    .set_label("only constants");
                return None;
            }
            let ex = expr(ctx, scope, group, e);
            // Units are compared once the terms check (a term in error says so).
            let dims_ok = ex.is_none() || super::dims::band(ctx, file, e, band);
            let (lo, hi) = match band {
                BandAst::Range { lo, hi, span } => {
                    let l = lo.as_ref().map(|v| const_f64(ctx, file, v));
                    let h = hi.as_ref().map(|v| const_f64(ctx, file, v));
                    let l = match l {
                        Some(x) => x?,
                        None => f64::NEG_INFINITY,
                    };
                    let h = match h {
                        Some(x) => x?,
                        None => f64::INFINITY,
                    };
                    if l > h {
                        ctx.err(file, *span, format!("an empty band: {l} > {h}"))
                            .set_label("lo must not exceed hi");
                        return None;
                    }
                    (l, h)
                }
                BandAst::PlusMinus { center, tol, .. } => {
                    let (c, cd) = const_dim(ctx, file, center)?;
                    let (t, td) = const_dim(ctx, file, tol)?;
                    if t < 0.0 {
                        ctx.err(file, tol.span, "a tolerance cannot be negative")
                            .set_label("negative")
                            .help = Some(format!(
                            "`±` takes the distance on either side: write `± {}`",
                            tol_text(ctx.text(file), tol.span)
                        ));
                        return None;
                    }
                    let t = match td {
                        Some(Dim::Percent) => (c * t).abs(),
                        _ => {
                            if let (Some(a), Some(b)) = (cd, td) {
                                if a != b {
                                    ctx.err(
                                        file,
                                        tol.span,
                                        format!(
                                            "the tolerance is {} but the centre is {}",
                                            b.noun(),
                                            a.noun()
                                        ),
                                    );
                                    return None;
                                }
                            }
                            t
                        }
                    };
                    (c - t, c + t)
                }
            };
            if !dims_ok {
                return None;
            }
            ClaimKind::Band {
                expr: ex?,
                lo,
                hi,
                strict: false,
            }
        }
        ClaimBody::Chain { first, links, gap } => {
            let all: Vec<&ExprAst> = std::iter::once(first)
                .chain(links.iter().map(|(_, _, e)| e))
                .collect();
            let up = links
                .iter()
                .all(|(o, _, _)| matches!(o, OrdOp::Lt | OrdOp::Le));
            let down = links
                .iter()
                .all(|(o, _, _)| matches!(o, OrdOp::Gt | OrdOp::Ge));
            if !up && !down {
                let sp = links
                    .iter()
                    .find(|(o, _, _)| matches!(o, OrdOp::Gt | OrdOp::Ge) != down)
                    .map_or(c.span, |l| l.1);
                ctx.err(file, sp, "an ordering must run one way: all `<` or all `>`")
                    .set_label("direction changes here");
                return None;
            }
            if all.iter().all(|e| !has_metric(e)) {
                ctx.err(file, first.span(), "a claim needs a metric")
                    .set_label("only constants");
                return None;
            }
            let exprs: Vec<Option<Expr>> = all.iter().map(|e| expr(ctx, scope, group, e)).collect();
            let exprs: Vec<Expr> = exprs.into_iter().collect::<Option<_>>()?;
            if !super::dims::chain(ctx, file, &all) {
                return None;
            }
            let min_gap = match gap {
                Some(g) => Some(ctx.real(Env::NoAxes, file, g, "`gap`", 0.0..=1.0)?),
                None => None,
            };
            // `metric <= c` (or `c < metric`) is a band; anything longer is an ordering.
            if exprs.len() == 2
                && min_gap.is_none()
                && (fold(&exprs[0]).is_some() || fold(&exprs[1]).is_some())
            {
                let (m, k, metric_first) = match fold(&exprs[1]) {
                    Some(k) => (exprs[0].clone(), k, true),
                    None => (exprs[1].clone(), fold(&exprs[0]).unwrap_or(0.0), false),
                };
                let below = up == metric_first;
                let (lo, hi) = if below {
                    (f64::NEG_INFINITY, k)
                } else {
                    (k, f64::INFINITY)
                };
                // `<` and `>` exclude the bound; `<=` and `>=` include it.
                let strict = matches!(links[0].0, OrdOp::Lt | OrdOp::Gt);
                ClaimKind::Band {
                    expr: m,
                    lo,
                    hi,
                    strict,
                }
            } else {
                let or_equal: Vec<bool> = links
                    .iter()
                    .map(|(o, _, _)| matches!(o, OrdOp::Le | OrdOp::Ge))
                    .collect();
                ClaimKind::Ordering {
                    exprs,
                    op: if up { OrderOp::Less } else { OrderOp::Greater },
                    min_gap: min_gap.unwrap_or(0.0),
                    or_equal: if or_equal.iter().any(|e| *e) {
                        or_equal
                    } else {
                        Vec::new()
                    },
                }
            }
        }
    };
    if let Some(why) = super::vacuous::why(&kind) {
        // The body's span runs to the next claim; point at its text only.
        let span = ctx.trimmed(file, c.body_span);
        let d = ctx
            .warn(file, span, format!("this claim cannot fail: {why}"))
            .set_label("holds whatever the run measures");
        d.help = Some("state a bound the measured value could cross".into());
    }
    let modes = match scope.points {
        Some(_) => claim_modes(ctx, scope, c, &kind)?,
        None => Vec::new(),
    };
    let (line, _) = crate::diag::line_col(ctx.text(file), c.span.start);
    Some(Claim {
        id: input.id,
        text,
        source: c.source.clone(),
        file: ctx.path(file),
        line: line as u32,
        gating: input.gating,
        kind,
        modes,
        skipped: None,
    })
}

/// The modes the claim is evaluated in: those in which every reference that does
/// not name its mode can be read (a trend: at least two of its steps); when every
/// reference names one, the mode of the first. None is an error.
fn claim_modes(ctx: &mut Ctx, scope: &Scope, c: &ClaimAst, kind: &ClaimKind) -> Option<Vec<Mode>> {
    let all = [Mode::Sim, Mode::Native];
    // For each reference: the mode it names, or the modes it can be read in.
    let mut readable: Vec<(Option<Mode>, Vec<Mode>)> = Vec::new();
    match kind {
        ClaimKind::Band { expr, .. } => metric_refs(expr, &mut readable),
        ClaimKind::Ordering { exprs, .. } => {
            exprs.iter().for_each(|e| metric_refs(e, &mut readable))
        }
        ClaimKind::Trend { metric, series, .. } => {
            let modes = match series {
                TrendSeries::Rows { target } => target.modes.clone(),
                TrendSeries::Steps { steps } => all
                    .into_iter()
                    .filter(|m| {
                        steps
                            .iter()
                            .filter(|s| s.metric.target.modes.contains(m))
                            .count()
                            >= 2
                    })
                    .collect(),
            };
            readable.push((mode_of(&metric.select), modes));
        }
    }
    let modes: Vec<Mode> = if readable.iter().all(|(named, _)| named.is_some()) {
        readable
            .first()
            .and_then(|(named, _)| *named)
            .into_iter()
            .collect()
    } else {
        all.into_iter()
            .filter(|m| {
                readable
                    .iter()
                    .all(|(named, can)| named.is_some() || can.contains(m))
            })
            .collect()
    };
    if modes.is_empty() {
        ctx.err(
            scope.file,
            c.body_span,
            "the terms of this claim never run in the same mode",
        )
        .set_label("no common mode")
        .help = Some(
            "name each term's mode (`[mode = sim]`), or run its points in a common mode".into(),
        );
        return None;
    }
    Some(modes)
}

fn metric_refs(e: &Expr, out: &mut Vec<(Option<Mode>, Vec<Mode>)>) {
    out.extend(
        e.metrics()
            .into_iter()
            .map(|m| (mode_of(&m.select), m.target.modes.clone())),
    );
}

fn const_dim(ctx: &mut Ctx, file: usize, v: &Val) -> Option<(f64, Option<Dim>)> {
    match &v.kind {
        ValKind::Num { text, unit } => {
            match units::quantity_f64(text, unit.as_ref().map(|u| u.name.as_str())) {
                Ok(x) => Some(x),
                Err((msg, help)) => {
                    let span = unit
                        .as_ref()
                        .filter(|_| msg.starts_with("unknown unit"))
                        .map_or(v.span, |u| u.span);
                    let d = ctx.err(file, span, msg);
                    d.help = help;
                    None
                }
            }
        }
        _ => {
            let (s, _, _) = ctx.scalar(Env::NoAxes, file, v, "a claim")?;
            Some((s.as_f64(), None))
        }
    }
}

fn const_f64(ctx: &mut Ctx, file: usize, v: &Val) -> Option<f64> {
    const_dim(ctx, file, v).map(|(f, _)| f)
}

fn expr(ctx: &mut Ctx, scope: &Scope, group: &[(Ident, Val)], e: &ExprAst) -> Option<Expr> {
    match e {
        ExprAst::Metric(m) => {
            let w = written(ctx, scope, group, m)?;
            resolve_one(ctx, scope, w).map(Expr::Metric)
        }
        ExprAst::Const(v) => const_f64(ctx, scope.file, v).map(|value| Expr::Const { value }),
        ExprAst::Bin { op, lhs, rhs, span } => {
            let l = expr(ctx, scope, group, lhs);
            let r = expr(ctx, scope, group, rhs);
            let op = match op {
                '+' => BinOp::Add,
                '-' => BinOp::Sub,
                '*' => BinOp::Mul,
                _ => BinOp::Div,
            };
            // Constants are known now: a division by zero, or a constant part too
            // large for a number, is the file's mistake, not the run's.
            if let (BinOp::Div, Some(r)) = (op, &r) {
                if fold(r) == Some(0.0) {
                    ctx.err(scope.file, rhs.span(), "division by zero")
                        .set_label("this is 0")
                        .help = Some("divide by a metric, or by a constant other than 0".into());
                    return None;
                }
            }
            if let (Some(l), Some(r)) = (&l, &r) {
                if let (Some(a), Some(b)) = (fold(l), fold(r)) {
                    let v = match op {
                        BinOp::Add => a + b,
                        BinOp::Sub => a - b,
                        BinOp::Mul => a * b,
                        BinOp::Div => a / b,
                    };
                    if !v.is_finite() {
                        ctx.err(scope.file, *span, "this constant is out of range")
                            .set_label("not a finite number");
                        return None;
                    }
                }
            }
            Some(Expr::Binary {
                op,
                lhs: Box::new(l?),
                rhs: Box::new(r?),
            })
        }
    }
}

fn fold(e: &Expr) -> Option<f64> {
    match e {
        Expr::Metric(_) => None,
        Expr::Const { value } => Some(*value),
        Expr::Binary { op, lhs, rhs } => {
            let (a, b) = (fold(lhs)?, fold(rhs)?);
            let v = match op {
                BinOp::Add => a + b,
                BinOp::Sub => a - b,
                BinOp::Mul => a * b,
                BinOp::Div => a / b,
            };
            v.is_finite().then_some(v)
        }
    }
}

pub(super) fn has_metric(e: &ExprAst) -> bool {
    match e {
        ExprAst::Metric(_) => true,
        ExprAst::Const(_) => false,
        ExprAst::Bin { lhs, rhs, .. } => has_metric(lhs) || has_metric(rhs),
    }
}

/// The tolerance as written, without its sign (for the help of a negative one).
fn tol_text(text: &str, span: Span) -> String {
    text.get(span.start..span.end)
        .unwrap_or("")
        .trim_start_matches('-')
        .to_string()
}
