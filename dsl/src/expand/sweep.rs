//! Sweeps: axes (lists, ranges, `zip`), `where` filters compiled against them, and
//! `--set` replacements from the command line.

use crate::diag::{did_you_mean, Label, Span};
use crate::resolve::Ctx;
use crate::syntax::{parse_set_values, CmpOp, Cond, Entry, Ident, Prop, Step, Val, ValKind};
use crate::units::{self, cmp_values, same_type, value_noun, Dim, Scalar};
use locklab_model::plan::{Value, DIMENSIONS};

/// A range may not expand to more values than this.
pub const MAX_RANGE: usize = 10_000;
/// An axis may hold at most this many values (ranges and lists together).
pub const MAX_AXIS_VALUES: usize = 100_000;

/// Axis values ordered as the language compares them, for finding repeats. Values of
/// one axis have one type (checked before), so the order is total but for NaN,
/// which no value of the language is.
struct Ordered(Value);

impl PartialEq for Ordered {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == std::cmp::Ordering::Equal
    }
}
impl Eq for Ordered {}
impl PartialOrd for Ordered {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Ordered {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        cmp_values(&self.0, &other.0).unwrap_or(std::cmp::Ordering::Equal)
    }
}

pub struct AxisDecl {
    pub name: Ident,
    pub file: usize,
    pub vals: Vec<Val>,
    pub values: Vec<Value>,
    pub zip: Option<u32>,
    /// Some values did not check: skip follow-on errors that would only repeat it.
    pub broken: bool,
}

/// A `where` condition with its axes looked up and its values typed.
pub enum CCond {
    Or(Vec<CCond>),
    And(Vec<CCond>),
    Not(Box<CCond>),
    Cmp(usize, CmpOp, Value),
    In(usize, bool, Vec<Value>),
}

impl CCond {
    pub fn eval(&self, vals: &[&Value]) -> bool {
        match self {
            CCond::Or(v) => v.iter().any(|c| c.eval(vals)),
            CCond::And(v) => v.iter().all(|c| c.eval(vals)),
            CCond::Not(c) => !c.eval(vals),
            CCond::Cmp(a, op, v) => {
                let Some(o) = cmp_values(vals[*a], v) else {
                    return false;
                };
                use std::cmp::Ordering::*;
                match op {
                    CmpOp::Eq => o == Equal,
                    CmpOp::Ne => o != Equal,
                    CmpOp::Lt => o == Less,
                    CmpOp::Le => o != Greater,
                    CmpOp::Gt => o == Greater,
                    CmpOp::Ge => o != Less,
                }
            }
            CCond::In(a, neg, vs) => {
                let hit = vs
                    .iter()
                    .any(|v| cmp_values(vals[*a], v) == Some(std::cmp::Ordering::Equal));
                hit != *neg
            }
        }
    }
}

/// The sweep block, read and checked, `--set` applied.
pub struct Sweep {
    pub axes: Vec<AxisDecl>,
    /// The block's `where` filters.
    pub conds: Vec<CCond>,
    /// Where those filters are written (an empty sweep blames the first).
    pub where_spans: Vec<(usize, Span)>,
}

/// Read `sweep { ... }` (absent: no axes) and apply `--set`. Returns the sweep and
/// whether everything checked.
pub fn read(
    ctx: &mut Ctx,
    file: usize,
    sweep: Option<&Prop>,
    sets: &[(String, String)],
) -> (Sweep, bool) {
    let mut ok = true;
    let mut axes: Vec<AxisDecl> = Vec::new();
    let mut wheres: Vec<&Cond> = Vec::new();
    if let Some(sw) = sweep {
        match &sw.value.kind {
            ValKind::Record {
                ctor: None,
                entries,
            } => {
                let mut zip_id = 0u32;
                for e in entries {
                    match e {
                        Entry::Where(c) => wheres.push(c),
                        Entry::Prop(p) if p.key.name == "zip" => {
                            let ValKind::Record {
                                ctor: None,
                                entries: zent,
                            } = &p.value.kind
                            else {
                                ctx.err(
                                    file,
                                    p.value.span,
                                    "`zip` expects a block of axes `{ a = [...], b = [...] }`",
                                );
                                ok = false;
                                continue;
                            };
                            let group = zip_id;
                            zip_id += 1;
                            let first = axes.len();
                            for ze in zent {
                                match ze {
                                    Entry::Where(c) => {
                                        ctx.err(file, c.span(), "`where` belongs in the `sweep` block, not inside `zip`");
                                        ok = false;
                                    }
                                    Entry::Prop(zp) => {
                                        ok &= add_axis(ctx, &mut axes, file, zp, Some(group))
                                    }
                                }
                            }
                            let zipped = &axes[first..];
                            if zipped.len() < 2 {
                                ctx.warn(
                                    file,
                                    p.key.span,
                                    "`zip` of fewer than two axes does nothing",
                                );
                            }
                            if let Some(a0) = zipped.first() {
                                let n0 = a0.values.len();
                                for a in &zipped[1..] {
                                    if a.values.len() != n0 {
                                        let (an, as_, a0n, a0s) = (
                                            a.name.name.clone(),
                                            a.name.span,
                                            a0.name.name.clone(),
                                            a0.name.span,
                                        );
                                        let n = a.values.len();
                                        ctx.err(file, as_, format!("zipped axes differ in length: `{an}` has {n} values, `{a0n}` has {n0}"))
                                            .set_label(format!("{n} values"))
                                            .labels
                                            .push(Label { span: a0s, message: format!("{n0} values") });
                                        ok = false;
                                    }
                                }
                            }
                        }
                        Entry::Prop(p) => ok &= add_axis(ctx, &mut axes, file, p, None),
                    }
                }
            }
            _ => {
                ctx.err(
                    file,
                    sw.value.span,
                    "`sweep` expects a block `{ axis = [values], ... }`",
                );
                ok = false;
            }
        }
    }
    ok &= apply_sets(ctx, &mut axes, sets);
    let conds: Vec<Option<CCond>> = wheres
        .iter()
        .map(|c| compile(ctx, file, c, &axes))
        .collect();
    ok &= conds.iter().all(Option::is_some);
    let sweep = Sweep {
        where_spans: wheres.iter().map(|c| (file, c.span())).collect(),
        conds: conds.into_iter().flatten().collect(),
        axes,
    };
    (sweep, ok)
}

/// `--set axis=value[,value...]`: replace an axis's values, checked like the file's.
fn apply_sets(ctx: &mut Ctx, axes: &mut [AxisDecl], sets: &[(String, String)]) -> bool {
    let mut ok = true;
    // (axis, its pseudo file, its text) for each value list applied.
    let mut set: Vec<(usize, usize, String)> = Vec::new();
    for (k, text) in sets {
        let full = format!("{k}={text}");
        let pf = ctx.add_pseudo(format!("--set {k}"), full.clone());
        let Some(ai) = axes.iter().position(|a| a.name.name == *k) else {
            let help = did_you_mean(k, axes.iter().map(|a| a.name.name.as_str()));
            let d = ctx
                .err(
                    pf,
                    Span::new(0, k.len()),
                    format!("unknown sweep axis `{k}`"),
                )
                .set_label("no such axis");
            d.help = help.or(Some(
                "`--set` replaces the values of an axis declared in `sweep`".into(),
            ));
            ok = false;
            continue;
        };
        match parse_set_values(&format!("--set {k}"), &full, k.len() + 1) {
            Err(d) => {
                ctx.diags.push(*d);
                ok = false;
            }
            Ok(vals) => {
                let (vals, values, good) = axis_list(ctx, pf, &k.clone(), &vals);
                if !good {
                    ok = false;
                    continue;
                }
                if !values.is_empty()
                    && !axes[ai].values.is_empty()
                    && !same_type(&values[0], &axes[ai].values[0])
                {
                    let (a, b) = (value_noun(&values[0]), value_noun(&axes[ai].values[0]));
                    ctx.err(
                        pf,
                        Span::new(k.len() + 1, full.len()),
                        format!("`{k}` takes {b}, found {a}"),
                    );
                    ok = false;
                    continue;
                }
                axes[ai].vals = vals;
                axes[ai].values = values;
                axes[ai].file = pf;
                set.push((ai, pf, full));
            }
        }
    }
    // Zipped axes keep equal lengths once every `--set` is applied (setting all of a
    // zip together is how its values change).
    for (ai, pf, full) in &set {
        let (a, n) = (&axes[*ai], axes[*ai].values.len());
        let Some(g) = a.zip else { continue };
        let Some(other) = axes
            .iter()
            .find(|o| o.zip == Some(g) && o.values.len() != n)
        else {
            continue;
        };
        let (k, on, m) = (
            a.name.name.clone(),
            other.name.name.clone(),
            other.values.len(),
        );
        let given_too = set.iter().any(|(i, _, _)| axes[*i].name.name == on);
        ctx.err(
            *pf,
            Span::new(k.len() + 1, full.len()),
            format!("`{k}` is zipped with `{on}` ({m} values) but is given {n}"),
        )
        .help = Some(if given_too {
            format!("give `{k}` and `{on}` the same number of values")
        } else {
            format!("set the axes of the zip together: `--set {on}=...` with {n} values")
        });
        ok = false;
    }
    ok
}

fn add_axis(
    ctx: &mut Ctx,
    axes: &mut Vec<AxisDecl>,
    file: usize,
    p: &Prop,
    zip: Option<u32>,
) -> bool {
    let name = &p.key.name;
    if DIMENSIONS.contains(&name.as_str()) || name == "zip" {
        ctx.err(
            file,
            p.key.span,
            format!("`{name}` cannot name a sweep axis: it is a result dimension"),
        )
        .set_label("reserved name")
        .help = Some(if name == "mode" {
            "modes are chosen in `run { modes = [...] }`; a mode block there can narrow the sweep"
                .into()
        } else {
            "choose another name".into()
        });
        return false;
    }
    if let Some(prev) = axes.iter().find(|a| a.name.name == *name) {
        let ps = prev.name.span;
        ctx.err(file, p.key.span, format!("axis `{name}` is declared twice"))
            .set_label("declared again")
            .labels
            .push(Label {
                span: ps,
                message: "first declared here".into(),
            });
        return false;
    }
    let items = match &p.value.kind {
        ValKind::List(items) => items.clone(),
        _ => vec![p.value.clone()],
    };
    // A broken axis keeps its good values so that later checks do not cascade.
    let (vals, values, good) = axis_list(ctx, file, name, &items);
    if good && values.is_empty() {
        ctx.err(file, p.value.span, format!("axis `{name}` has no values"));
    }
    let broken = !good || values.is_empty();
    axes.push(AxisDecl {
        name: p.key.clone(),
        file,
        vals,
        values,
        zip,
        broken,
    });
    !broken
}

/// Expand ranges, convert to plan values, check one type and no repeats.
pub fn axis_list(
    ctx: &mut Ctx,
    file: usize,
    name: &str,
    items: &[Val],
) -> (Vec<Val>, Vec<Value>, bool) {
    let mut vals = Vec::new();
    let mut ok = true;
    for it in items {
        if vals.len() > MAX_AXIS_VALUES {
            ctx.err(
                file,
                it.span,
                format!("axis `{name}` has more than {MAX_AXIS_VALUES} values"),
            )
            .set_label("too many values")
            .help = Some("narrow the axis, or split the experiment".into());
            return (Vec::new(), Vec::new(), false);
        }
        match &it.kind {
            ValKind::Range { .. } => match expand_range(ctx, file, it) {
                Some(mut v) => vals.append(&mut v),
                None => ok = false,
            },
            ValKind::List(_) => {
                ctx.err(
                    file,
                    it.span,
                    format!("axis `{name}` takes single values, found a nested list"),
                );
                ok = false;
            }
            _ => vals.push(it.clone()),
        }
    }
    let mut values: Vec<Value> = Vec::new();
    // Repeats are found in a set, not by comparing every pair: an axis may be long.
    let mut seen = std::collections::BTreeSet::new();
    let mut first_ty: Option<(Value, Span)> = None;
    let mut kept_vals = Vec::new();
    for v in vals {
        match units::to_plan_value(&v) {
            Err((msg, help)) => {
                let span = match &v.kind {
                    ValKind::Num { unit: Some(u), .. } if msg.starts_with("unknown unit") => u.span,
                    _ => v.span,
                };
                let d = ctx.err(file, span, format!("in axis `{name}`: {msg}"));
                d.help = help;
                ok = false;
            }
            Ok(pv) => {
                if let Some((f, fs)) = &first_ty {
                    if !same_type(f, &pv) {
                        let fs = *fs;
                        ctx.err(
                            file,
                            v.span,
                            format!(
                                "axis `{name}` mixes {} and {}",
                                value_noun(f),
                                value_noun(&pv)
                            ),
                        )
                        .set_label(value_noun(&pv).to_string())
                        .labels
                        .push(Label {
                            span: fs,
                            message: value_noun(f).to_string(),
                        });
                        ok = false;
                        continue;
                    }
                } else {
                    first_ty = Some((pv.clone(), v.span));
                }
                if !seen.insert(Ordered(pv.clone())) {
                    ctx.err(
                        file,
                        v.span,
                        format!("value `{}` appears twice in axis `{name}`", pv.label()),
                    )
                    .set_label("repeated")
                    .help = Some("each point must be unique; remove the repeat".into());
                    ok = false;
                    continue;
                }
                values.push(pv);
                kept_vals.push(v);
            }
        }
    }
    (kept_vals, values, ok)
}

fn expand_range(ctx: &mut Ctx, file: usize, r: &Val) -> Option<Vec<Val>> {
    let ValKind::Range { lo, hi, step } = &r.kind else {
        return None;
    };
    let mk = |v: &Val| -> Option<Scalar> {
        match &v.kind {
            ValKind::Num { text, unit } => {
                units::number(text, unit.as_ref().map(|u| u.name.as_str())).ok()
            }
            _ => None,
        }
    };
    // An end that is a number but not a valid one (`18446744073709551615`, `1KB`)
    // says so.
    for end in [lo, hi] {
        if let ValKind::Num { text, unit } = &end.kind {
            if let Err((msg, help)) = units::number(text, unit.as_ref().map(|u| u.name.as_str())) {
                let d = ctx.err(file, end.span, msg);
                d.help = help;
                return None;
            }
        }
    }
    let (Some(a), Some(b)) = (mk(lo), mk(hi)) else {
        ctx.err(
            file,
            r.span,
            "a range needs numbers at both ends (`1..16`, `10ms..100ms step 10ms`)",
        );
        return None;
    };
    let unit_of = |s: &Scalar| match s {
        Scalar::Unit(d, _) => Some(*d),
        _ => None,
    };
    if std::mem::discriminant(&a) != std::mem::discriminant(&b) || unit_of(&a) != unit_of(&b) {
        ctx.err(
            file,
            r.span,
            format!("a range's ends must agree: {} .. {}", a.noun(), b.noun()),
        );
        return None;
    }
    let (lo_n, hi_n, dim) = match (&a, &b) {
        (Scalar::Int(x), Scalar::Int(y)) => (i128::from(*x), i128::from(*y), None),
        (Scalar::Unit(d, x), Scalar::Unit(_, y)) => (i128::from(*x), i128::from(*y), Some(*d)),
        _ => {
            ctx.err(file, r.span, "ranges take whole numbers or quantities with units; list fractional values explicitly");
            return None;
        }
    };
    if lo_n > hi_n {
        ctx.err(
            file,
            r.span,
            "a range must go upwards (`lo..hi` with lo <= hi)",
        );
        return None;
    }
    let mut out = Vec::new();
    let make = |n: i128| -> Val {
        Val {
            kind: ValKind::Num {
                text: n.to_string(),
                unit: dim.map(|d| Ident {
                    name: match d {
                        Dim::Duration => "ns",
                        Dim::Size => "B",
                        Dim::Freq => "Hz",
                        Dim::Percent => "%",
                    }
                    .into(),
                    span: r.span,
                }),
            },
            span: r.span,
        }
    };
    match step {
        None | Some(Step::Add(_)) => {
            let st = match step {
                None if dim.is_none() => 1i128,
                None => {
                    ctx.err(
                        file,
                        r.span,
                        format!(
                            "a range of {}s needs a `step`",
                            dim.map_or("number", |d| d.noun().trim_start_matches("a "))
                        ),
                    )
                    .help = Some("write e.g. `10ms..100ms step 10ms`".into());
                    return None;
                }
                Some(Step::Add(v)) => match mk(v) {
                    Some(Scalar::Int(s)) if dim.is_none() => i128::from(s),
                    Some(Scalar::Unit(d, s)) if Some(d) == dim => i128::from(s),
                    _ => {
                        ctx.err(
                            file,
                            v.span,
                            format!(
                                "the step must be {} like the range",
                                dim.map_or("a whole number", |d| d.noun())
                            ),
                        );
                        return None;
                    }
                },
                Some(Step::Mul { .. }) => unreachable!(),
            };
            if st <= 0 {
                ctx.err(file, r.span, "a range's step must be positive");
                return None;
            }
            let count = (hi_n - lo_n) / st + 1;
            if count > MAX_RANGE as i128 {
                ctx.err(
                    file,
                    r.span,
                    format!("this range has {count} values (at most {MAX_RANGE})"),
                );
                return None;
            }
            let mut n = lo_n;
            while n <= hi_n {
                out.push(make(n));
                n += st;
            }
        }
        Some(Step::Mul { factor, span }) => {
            let f: u64 = match factor.replace('_', "").parse::<u64>() {
                Ok(f) if f >= 2 => f,
                _ => {
                    ctx.err(
                        file,
                        *span,
                        "a multiplying step must be a whole number >= 2 (`step x2`)",
                    );
                    return None;
                }
            };
            if lo_n <= 0 {
                ctx.err(file, r.span, "a multiplying range must start above 0");
                return None;
            }
            let mut n = lo_n;
            while n <= hi_n {
                out.push(make(n));
                if out.len() > MAX_RANGE {
                    break;
                }
                n = n.saturating_mul(i128::from(f));
            }
        }
    }
    Some(out)
}

pub fn compile(ctx: &mut Ctx, file: usize, c: &Cond, axes: &[AxisDecl]) -> Option<CCond> {
    let find_axis = |ctx: &mut Ctx, a: &Ident| -> Option<usize> {
        match axes.iter().position(|x| x.name.name == a.name) {
            Some(i) => Some(i),
            None => {
                let help = did_you_mean(&a.name, axes.iter().map(|x| x.name.name.as_str()));
                let d = ctx
                    .err(file, a.span, format!("unknown sweep axis `{}`", a.name))
                    .set_label("no such axis");
                d.help = help;
                None
            }
        }
    };
    let typed = |ctx: &mut Ctx, ai: usize, v: &Val| -> Option<Value> {
        let pv = match units::to_plan_value(v) {
            Ok(pv) => pv,
            Err((m, h)) => {
                let d = ctx.err(file, v.span, m);
                d.help = h;
                return None;
            }
        };
        if let Some(f) = axes[ai].values.first() {
            if !same_type(f, &pv) {
                ctx.err(
                    file,
                    v.span,
                    format!(
                        "axis `{}` holds {}, found {}",
                        axes[ai].name.name,
                        value_noun(f),
                        // As written: a string is not called a name.
                        units::kind_noun(&v.kind)
                    ),
                )
                .set_label("wrong kind of value");
                return None;
            }
        }
        Some(pv)
    };
    match c {
        Cond::Or(v) => {
            let parts: Vec<Option<CCond>> = v.iter().map(|c| compile(ctx, file, c, axes)).collect();
            parts.into_iter().collect::<Option<Vec<_>>>().map(CCond::Or)
        }
        Cond::And(v) => {
            let parts: Vec<Option<CCond>> = v.iter().map(|c| compile(ctx, file, c, axes)).collect();
            parts
                .into_iter()
                .collect::<Option<Vec<_>>>()
                .map(CCond::And)
        }
        Cond::Not(c) => compile(ctx, file, c, axes).map(|c| CCond::Not(Box::new(c))),
        Cond::Cmp {
            axis, op, value, ..
        } => {
            let ai = find_axis(ctx, axis)?;
            let pv = typed(ctx, ai, value)?;
            if matches!(pv, Value::Str(_) | Value::Bool(_)) && !matches!(op, CmpOp::Eq | CmpOp::Ne)
            {
                ctx.err(
                    file,
                    value.span,
                    format!(
                        "names cannot be ordered; compare `{}` with `==`, `!=` or `in`",
                        axis.name
                    ),
                );
                return None;
            }
            Some(CCond::Cmp(ai, *op, pv))
        }
        Cond::In {
            axis,
            negated,
            value,
            ..
        } => {
            let ai = find_axis(ctx, axis)?;
            let items = match &value.kind {
                ValKind::List(items) => items.clone(),
                ValKind::Range { .. } => expand_range(ctx, file, value)?,
                _ => {
                    ctx.err(
                        file,
                        value.span,
                        "`in` expects a list `[a, b]` or a range `lo..hi`",
                    );
                    return None;
                }
            };
            let vs: Vec<Option<Value>> = items.iter().map(|v| typed(ctx, ai, v)).collect();
            vs.into_iter()
                .collect::<Option<Vec<_>>>()
                .map(|vs| CCond::In(ai, *negated, vs))
        }
    }
}
