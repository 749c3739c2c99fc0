//! The `run` block: modes, durations, repetitions, `quick`, and the mode blocks
//! that narrow the sweep for one mode.

use super::sweep::{axis_list, compile, AxisDecl, CCond};
use crate::diag::{did_you_mean, Span};
use crate::resolve::{Ctx, Env};
use crate::syntax::{Entry, Val, ValKind};
use crate::units::{same_type, value_noun};
use locklab_model::cost::MAX_REPETITIONS;
use locklab_model::plan::{Mode, Recording, RunSpec, Value};
use std::collections::BTreeMap;

/// How one mode narrows the sweep.
pub struct ModeSpec {
    pub mode: Mode,
    /// (axis index, values as written, values)
    pub overrides: Vec<(usize, Vec<Val>, Vec<Value>)>,
    pub wheres: Vec<CCond>,
    pub where_spans: Vec<(usize, Span)>,
    pub span: (usize, Span),
}

/// Read `run { ... }`: the run settings (when they check) and one [`ModeSpec`] per
/// mode.
pub fn read(
    ctx: &mut Ctx,
    file: usize,
    v: &Val,
    axes: &[AxisDecl],
    sets: &[(String, String)],
) -> (Option<RunSpec>, Vec<ModeSpec>) {
    if !matches!(v.kind, ValKind::Record { ctor: None, .. }) {
        ctx.err(
            file,
            v.span,
            "`run` expects a block `{ modes = [sim], duration = 200ms, ... }`",
        );
        return (None, Vec::new());
    }
    let env = Env::NoAxes;
    let o = ctx.obj(
        file,
        v,
        "`run`",
        &[
            "modes",
            "duration",
            "warmup",
            "repetitions",
            "recording",
            "quick",
            "sim",
            "native",
        ],
        &[],
    );
    let mut ok = true;
    // Modes: listed, or those with a block, or both.
    let mut modes: Vec<Mode> = Vec::new();
    if let Some(mv) = o.get("modes") {
        let items = match &mv.kind {
            ValKind::List(items) => items.clone(),
            _ => vec![mv.clone()],
        };
        for it in &items {
            match ctx.choice(env, file, it, "run mode", &["sim", "native"]) {
                Some(m) => {
                    let m = if m == "sim" { Mode::Sim } else { Mode::Native };
                    if modes.contains(&m) {
                        ctx.err(
                            file,
                            it.span,
                            format!("mode `{}` is listed twice", m.as_str()),
                        );
                        ok = false;
                    }
                    modes.push(m);
                }
                None => ok = false,
            }
        }
        if items.is_empty() {
            ctx.err(
                file,
                mv.span,
                "`modes` must name at least one of sim, native",
            );
            ok = false;
        }
    } else {
        for (k, m) in [("sim", Mode::Sim), ("native", Mode::Native)] {
            if o.get(k).is_some() {
                modes.push(m);
            }
        }
        if modes.is_empty() {
            modes = vec![Mode::Sim, Mode::Native];
        }
    }
    let duration = match o.get("duration") {
        Some(d) => ctx.duration(env, file, d, "`duration`"),
        None => {
            ctx.missing(&o, "duration", "200ms");
            None
        }
    };
    if duration == Some(0) {
        ctx.err(
            file,
            o.get("duration").map_or(v.span, |d| d.span),
            "`duration` must be longer than 0ns",
        );
        ok = false;
    }
    let warmup = match o.get("warmup") {
        Some(d) => ctx.duration(env, file, d, "`warmup`"),
        None => duration.map(|d| d / 10),
    };
    let reps = o.get("repetitions").map_or(Some(1), |r| {
        ctx.count_in(env, file, r, "`repetitions`", 1..=MAX_REPETITIONS)
    });
    let names = Recording::ALL.map(Recording::as_str);
    let recording = o.get("recording").map_or(Some(Recording::Exact), |r| {
        ctx.choice(env, file, r, "recording", &names)
            .and_then(|c| Recording::ALL.into_iter().find(|x| x.as_str() == c))
    });
    let (mut qd, mut qw, mut qr) = (None, None, Some(1));
    if let Some(q) = o.get("quick") {
        if !matches!(q.kind, ValKind::Record { ctor: None, .. }) {
            ctx.err(
                file,
                q.span,
                "`quick` expects a block `{ duration = 20ms, warmup = 2ms, repetitions = 1 }`",
            );
            ok = false;
        }
        let qo = ctx.obj(
            file,
            q,
            "`quick`",
            &["duration", "warmup", "repetitions"],
            &[],
        );
        qd = qo
            .get("duration")
            .map(|d| ctx.duration(env, file, d, "quick `duration`"));
        if qd == Some(Some(0)) {
            ctx.err(
                file,
                qo.get("duration").map_or(q.span, |d| d.span),
                "quick `duration` must be longer than 0ns",
            )
            .set_label("no measured window")
            .help = Some("write a short window such as `duration = 20ms`".into());
            ok = false;
        }
        qw = qo
            .get("warmup")
            .map(|d| ctx.duration(env, file, d, "quick `warmup`"));
        if let Some(r) = qo.get("repetitions") {
            qr = ctx.count_in(env, file, r, "quick `repetitions`", 1..=MAX_REPETITIONS);
        }
    }
    let mut specs = Vec::new();
    for m in &modes {
        let key = m.as_str();
        let mut spec = ModeSpec {
            mode: *m,
            overrides: Vec::new(),
            wheres: Vec::new(),
            where_spans: Vec::new(),
            span: (file, v.span),
        };
        if let Some(p) = o.prop(key) {
            spec.span = (file, p.key.span);
            match &p.value.kind {
                ValKind::Record {
                    ctor: None,
                    entries,
                } => {
                    for e in entries {
                        match e {
                            Entry::Where(c) => {
                                spec.where_spans.push((file, c.span()));
                                match compile(ctx, file, c, axes) {
                                    Some(cc) => spec.wheres.push(cc),
                                    None => ok = false,
                                }
                            }
                            Entry::Prop(ap) => {
                                let Some(ai) = axes.iter().position(|a| a.name.name == ap.key.name)
                                else {
                                    let help = did_you_mean(
                                        &ap.key.name,
                                        axes.iter().map(|a| a.name.name.as_str()),
                                    );
                                    let d = ctx
                                        .err(
                                            file,
                                            ap.key.span,
                                            format!(
                                                "unknown sweep axis `{}` in the {key} block",
                                                ap.key.name
                                            ),
                                        )
                                        .set_label("no such axis");
                                    d.help = help.or(Some(format!("a {key} block replaces the values of sweep axes and filters with `where`")));
                                    ok = false;
                                    continue;
                                };
                                if sets.iter().any(|(k, _)| *k == ap.key.name) {
                                    // `--set` wins over the file, in every mode.
                                    continue;
                                }
                                if spec.overrides.iter().any(|(i, _, _)| *i == ai) {
                                    ctx.err(
                                        file,
                                        ap.key.span,
                                        format!(
                                            "axis `{}` is given twice in the {key} block",
                                            ap.key.name
                                        ),
                                    );
                                    ok = false;
                                    continue;
                                }
                                let items = match &ap.value.kind {
                                    ValKind::List(items) => items.clone(),
                                    _ => vec![ap.value.clone()],
                                };
                                match axis_list(ctx, file, &ap.key.name, &items) {
                                    (vals, values, true) => {
                                        if let (Some(a), Some(b)) =
                                            (values.first(), axes[ai].values.first())
                                        {
                                            if !same_type(a, b) {
                                                ctx.err(
                                                    file,
                                                    ap.value.span,
                                                    format!(
                                                        "axis `{}` holds {}, found {}",
                                                        ap.key.name,
                                                        value_noun(b),
                                                        value_noun(a)
                                                    ),
                                                );
                                                ok = false;
                                                continue;
                                            }
                                        }
                                        if values.is_empty() {
                                            ctx.err(
                                                file,
                                                ap.value.span,
                                                format!("axis `{}` has no values", ap.key.name),
                                            );
                                            ok = false;
                                            continue;
                                        }
                                        spec.overrides.push((ai, vals, values));
                                    }
                                    _ => ok = false,
                                }
                            }
                        }
                    }
                }
                _ => {
                    ctx.err(
                        file,
                        p.value.span,
                        format!("`{key}` expects a block of axis values and `where` filters"),
                    );
                    ok = false;
                }
            }
        }
        // Zipped axes must keep equal lengths after this mode's replacements.
        let mut zips: BTreeMap<u32, Vec<(usize, usize, Option<Span>)>> = BTreeMap::new();
        for (i, a) in axes.iter().enumerate() {
            if let Some(z) = a.zip {
                let over = spec.overrides.iter().find(|(ai, _, _)| *ai == i);
                let n = over.map_or(a.values.len(), |o| o.2.len());
                let sp = over.and_then(|o| o.1.first().map(|v| v.span));
                zips.entry(z).or_default().push((i, n, sp));
            }
        }
        for members in zips.values() {
            if members.iter().all(|m| m.2.is_none()) {
                continue;
            }
            let n0 = members[0].1;
            if let Some(&(i, n, sp)) = members.iter().find(|m| m.1 != n0) {
                let (a0, an) = (
                    axes[members[0].0].name.name.clone(),
                    axes[i].name.name.clone(),
                );
                let sp = sp.or(members[0].2).unwrap_or(spec.span.1);
                ctx.err(file, sp, format!("in the {key} block, zipped axes differ in length: `{an}` has {n} values, `{a0}` has {n0}"))
                    .help = Some("replace every axis of a `zip` together, with the same number of values".into());
                ok = false;
            }
        }
        specs.push(spec);
    }
    for k in ["sim", "native"] {
        if let Some(p) = o.prop(k) {
            if !modes.iter().any(|m| m.as_str() == k) {
                ctx.err(
                    file,
                    p.key.span,
                    format!("a `{k}` block, but `{k}` is not among the run's modes"),
                )
                .set_label("never used")
                .help = Some(format!("add `{k}` to `modes`, or remove the block"));
                ok = false;
            }
        }
    }
    let (Some(duration), Some(warmup), Some(reps)) = (duration, warmup, reps) else {
        return (None, specs);
    };
    let quick_duration = match qd {
        Some(Some(d)) => d,
        Some(None) => return (None, specs),
        None => duration.min(20_000_000),
    };
    let quick_warmup = match qw {
        Some(Some(d)) => d,
        Some(None) => return (None, specs),
        None => quick_duration / 10,
    };
    let (Some(qr), Some(recording)) = (qr, recording) else {
        return (None, specs);
    };
    if !ok {
        return (None, specs);
    }
    (
        Some(RunSpec {
            modes,
            duration_ns: duration,
            warmup_ns: warmup,
            repetitions: reps,
            quick_duration_ns: quick_duration,
            quick_warmup_ns: quick_warmup,
            quick_repetitions: qr,
            recording,
        }),
        specs,
    )
}
