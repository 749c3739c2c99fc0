//! An experiment block to a [`Plan`]: sweep axes (ranges, lists, `zip`, `where`),
//! run modes, one fully resolved point per combination, claims and plots.

use crate::diag::{did_you_mean, Diagnostic, Label, Span};
use crate::resolve::{Ctx, Def, Env, Obj};
use crate::syntax::{
    BandAst, ClaimAst, ClaimBody, CmpOp, Cond, Entry, Experiment, ExprAst, Ident, MetricAst, OrdOp,
    PlotStmt, Step, Stmt, Val, ValKind,
};
use crate::units::{self, cmp_values, same_type, value_noun, Dim, Scalar};
use crate::{LoadOptions, DIMENSIONS};
use locklab_model::plan::*;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};

/// A sweep may not expand to more points than this (per mode).
pub const MAX_POINTS: u64 = 100_000;
/// A range may not expand to more values than this.
pub const MAX_RANGE: usize = 10_000;

struct AxisDecl {
    name: Ident,
    file: usize,
    vals: Vec<Val>,
    values: Vec<Value>,
    zip: Option<u32>,
    /// Some values did not check: skip follow-on errors that would only repeat it.
    broken: bool,
}

struct ModeSpec {
    mode: Mode,
    /// (axis index, values as written, values)
    overrides: Vec<(usize, Vec<Val>, Vec<Value>)>,
    wheres: Vec<CCond>,
    where_spans: Vec<(usize, Span)>,
    span: (usize, Span),
}

enum CCond {
    Or(Vec<CCond>),
    And(Vec<CCond>),
    Not(Box<CCond>),
    Cmp(usize, CmpOp, Value),
    In(usize, bool, Vec<Value>),
}

impl CCond {
    fn eval(&self, vals: &[&Value]) -> bool {
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

const EXPERIMENT_KEYS: &[&str] = &[
    "description",
    "topology",
    "seed",
    "threads",
    "lock",
    "workload",
    "placement",
    "sweep",
    "run",
];

pub fn experiment(
    ctx: &mut Ctx,
    file: usize,
    exp: &Experiment,
    opts: &LoadOptions,
) -> Option<Plan> {
    let mut entries = Vec::new();
    let mut expects = Vec::new();
    let mut plots = Vec::new();
    for s in &exp.body {
        match s {
            Stmt::Entry(e) => entries.push(e),
            Stmt::Expect(e) => expects.push(e),
            Stmt::Plot(p) => plots.push(p),
        }
    }
    let what = format!("experiment `{}`", exp.name.name);
    let mut o = Obj::new(file, exp.name.span, &what);
    ctx.obj_entries(&mut o, entries.into_iter(), EXPERIMENT_KEYS, &[]);
    let mut ok = true;

    let description = o
        .get("description")
        .and_then(|v| ctx.string(Env::NoAxes, file, v, "`description`"));
    let master_seed = match o.get("seed") {
        Some(v) => ctx.u64_value(Env::NoAxes, file, v, "`seed`"),
        None => Some(0),
    };
    ok &= master_seed.is_some();

    // Topology
    let topology = match o.get("topology") {
        None => {
            ctx.missing(&o, "topology", "host");
            None
        }
        Some(v) => match &v.kind {
            ValKind::Symbol(name) => match ctx.topologies.get(name).cloned() {
                Some(def) => ctx.topology(&def),
                None if name == "host" => Some(Topology::Host { costs: None }),
                None if ctx.broken.contains(&("topology".to_string(), name.clone())) => None,
                None => {
                    let cands: Vec<String> = ctx
                        .topologies
                        .keys()
                        .cloned()
                        .chain(["host".to_string()])
                        .collect();
                    let help = did_you_mean(name, cands.iter().map(|s| s.as_str()));
                    let no_use = ctx_has_no_use(ctx);
                    let d = ctx
                        .err(file, v.span, format!("unknown topology `{name}`"))
                        .set_label("no topology of this name");
                    d.help = help.map(|h| {
                        if no_use {
                            format!("{h} (shared topologies come in with `use \"lib/NAME.lab\"`)")
                        } else {
                            h
                        }
                    });
                    None
                }
            },
            _ => ctx.topology(&Def {
                file,
                name: Ident {
                    name: exp.name.name.clone(),
                    span: exp.name.span,
                },
                value: v.clone(),
            }),
        },
    };
    ok &= topology.is_some();
    let cpus = match &topology {
        Some(Topology::Machine(m)) => Some(m.cpus()),
        _ => None,
    };

    // Sweep
    let mut axes: Vec<AxisDecl> = Vec::new();
    let mut base_wheres: Vec<(usize, &Cond)> = Vec::new();
    if let Some(sw) = o.prop("sweep") {
        match &sw.value.kind {
            ValKind::Record {
                ctor: None,
                entries,
            } => {
                let mut zip_id = 0u32;
                for e in entries {
                    match e {
                        Entry::Where(c) => base_wheres.push((file, c)),
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

    // --set axis=value[,value...]
    for (k, text) in &opts.overrides {
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
        match crate::syntax::parse_set_values(&format!("--set {k}"), &full, k.len() + 1) {
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
                if let Some(g) = axes[ai].zip {
                    if let Some(other) = axes.iter().find(|a| a.zip == Some(g) && a.name.name != *k)
                    {
                        if other.values.len() != values.len() {
                            let (n, on, m) =
                                (values.len(), other.name.name.clone(), other.values.len());
                            ctx.err(
                                pf,
                                Span::new(k.len() + 1, full.len()),
                                format!(
                                    "`{k}` is zipped with `{on}` ({m} values) but is given {n}"
                                ),
                            );
                            ok = false;
                            continue;
                        }
                    }
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
            }
        }
    }

    let base_conds: Vec<Option<CCond>> = base_wheres
        .iter()
        .map(|(f, c)| compile(ctx, *f, c, &axes))
        .collect();
    ok &= base_conds.iter().all(Option::is_some);
    let base_conds: Vec<CCond> = base_conds.into_iter().flatten().collect();

    // Run
    let (run, mut modes) = match o.get("run") {
        None => {
            ctx.missing(&o, "run", "{ modes = [sim], duration = 200ms }");
            (None, Vec::new())
        }
        Some(v) => run_block(ctx, file, v, &axes, &opts.overrides),
    };
    ok &= run.is_some();

    // Points
    let lock_axis = o.get("lock").and_then(axis_ref_name).or_else(|| {
        (o.get("lock").is_none() && axes.iter().any(|a| a.name.name == "lock"))
            .then(|| "lock".to_string())
    });
    let mut points: Vec<Point> = Vec::new();
    let mut by_id: BTreeMap<String, usize> = BTreeMap::new();
    let mut combos: Vec<Vec<(Val, usize)>> = Vec::new();
    for ms in &mut modes {
        let mut vals_per_axis: Vec<(Vec<Val>, Vec<Value>, usize)> = axes
            .iter()
            .map(|a| (a.vals.clone(), a.values.clone(), a.file))
            .collect();
        for (ai, vals, values) in &ms.overrides {
            vals_per_axis[*ai] = (vals.clone(), values.clone(), ms.span.0);
        }
        // Groups: an axis alone, or all axes of one zip.
        let mut groups: Vec<Vec<usize>> = Vec::new();
        let mut zip_of: BTreeMap<u32, usize> = BTreeMap::new();
        for (i, a) in axes.iter().enumerate() {
            match a.zip {
                Some(z) => match zip_of.get(&z) {
                    Some(&g) => groups[g].push(i),
                    None => {
                        zip_of.insert(z, groups.len());
                        groups.push(vec![i]);
                    }
                },
                None => groups.push(vec![i]),
            }
        }
        let lens: Vec<usize> = groups
            .iter()
            .map(|g| {
                g.iter()
                    .map(|&i| vals_per_axis[i].1.len())
                    .min()
                    .unwrap_or(0)
            })
            .collect();
        let total = lens
            .iter()
            .try_fold(1u64, |acc, &l| acc.checked_mul(l as u64));
        match total {
            Some(t) if t <= MAX_POINTS => {}
            _ => {
                let (f, sp) = ms.span;
                ctx.err(
                    f,
                    sp,
                    format!(
                        "the {} sweep expands to more than {MAX_POINTS} points",
                        ms.mode.as_str()
                    ),
                )
                .help = Some("narrow an axis, or split the experiment".into());
                ok = false;
                continue;
            }
        }
        let mut idx = vec![0usize; groups.len()];
        let mut kept = 0usize;
        let empty = lens.contains(&0);
        let mut done = empty;
        while !done {
            let mut pick = vec![0usize; axes.len()];
            for (g, members) in groups.iter().enumerate() {
                for &m in members {
                    pick[m] = idx[g];
                }
            }
            let vals: Vec<&Value> = (0..axes.len())
                .map(|i| &vals_per_axis[i].1[pick[i]])
                .collect();
            if base_conds.iter().all(|c| c.eval(&vals)) && ms.wheres.iter().all(|c| c.eval(&vals)) {
                kept += 1;
                let id = if axes.is_empty() {
                    "default".to_string()
                } else {
                    axes.iter()
                        .zip(&vals)
                        .map(|(a, v)| format!("{}={}", a.name.name, v.label()))
                        .collect::<Vec<_>>()
                        .join(",")
                };
                match by_id.get(&id) {
                    Some(&pi) => {
                        if !points[pi].modes.contains(&ms.mode) {
                            points[pi].modes.push(ms.mode);
                        }
                    }
                    None => {
                        by_id.insert(id.clone(), points.len());
                        let axes_map: BTreeMap<String, Value> = axes
                            .iter()
                            .zip(&vals)
                            .map(|(a, v)| (a.name.name.clone(), (*v).clone()))
                            .collect();
                        combos.push(
                            (0..axes.len())
                                .map(|i| (vals_per_axis[i].0[pick[i]].clone(), vals_per_axis[i].2))
                                .collect(),
                        );
                        points.push(Point {
                            index: points.len(),
                            seed: point_seed(master_seed.unwrap_or(0), &id),
                            id,
                            axes: axes_map,
                            threads: 0,
                            lock: LockSpec {
                                name: String::new(),
                                algo: LockAlgo::Tas,
                                axis: None,
                                params: Vec::new(),
                            },
                            workload: Workload::SingleLock {
                                critical: Dist::Fixed { ns: 0 },
                                outside: Dist::Fixed { ns: 0 },
                                lines: 0,
                            },
                            placement: Placement {
                                policy: PlacementKind::Compact,
                                virtual_nodes: None,
                            },
                            modes: vec![ms.mode],
                        });
                    }
                }
            }
            // Odometer: the last group varies fastest.
            let mut g = groups.len();
            loop {
                if g == 0 {
                    done = true;
                    break;
                }
                g -= 1;
                idx[g] += 1;
                if idx[g] < lens[g] {
                    break;
                }
                idx[g] = 0;
            }
        }
        if kept == 0 && axes.iter().any(|a| a.broken) {
            ok = false;
        } else if kept == 0 {
            ok = false;
            let (f, sp) = ms
                .where_spans
                .first()
                .copied()
                .or_else(|| base_wheres.first().map(|(f, c)| (*f, c.span())))
                .unwrap_or(ms.span);
            let msg = if empty {
                format!(
                    "the {} sweep has no points: an axis has no values",
                    ms.mode.as_str()
                )
            } else {
                format!("no {} point is left after `where`", ms.mode.as_str())
            };
            ctx.err(f, sp, msg)
                .set_label("filters out every point")
                .help = Some("loosen the condition or add axis values".into());
        }
    }
    for p in &mut points {
        p.modes.sort();
    }

    // Resolve every point.
    let sweep_names: BTreeSet<String> = axes.iter().map(|a| a.name.name.clone()).collect();
    let default_ref = |key: &str| -> Option<Val> {
        sweep_names.contains(key).then(|| Val {
            kind: ValKind::AxisRef(key.to_string()),
            span: o.span,
        })
    };
    let threads_v = o.get("threads").cloned().or_else(|| default_ref("threads"));
    let lock_v = o.get("lock").cloned().or_else(|| default_ref("lock"));
    let workload_v = o
        .get("workload")
        .cloned()
        .or_else(|| default_ref("workload"));
    let placement_v = o
        .get("placement")
        .cloned()
        .or_else(|| default_ref("placement"))
        .unwrap_or(Val {
            kind: ValKind::Symbol("compact".into()),
            span: o.span,
        });
    for (key, v, ex) in [
        ("threads", &threads_v, "$threads"),
        ("lock", &lock_v, "mcs"),
        ("workload", &workload_v, "hot"),
    ] {
        if v.is_none() {
            ctx.missing(&o, key, ex);
            ok = false;
        }
    }
    // Resolve what is there even when something is missing, so that an unknown lock
    // is reported beside a missing `workload` rather than after it is fixed.
    if threads_v.is_some() || lock_v.is_some() || workload_v.is_some() {
        for (p, combo) in points.iter_mut().zip(&combos) {
            let env_map: BTreeMap<String, (Val, usize)> = axes
                .iter()
                .zip(combo)
                .map(|(a, c)| (a.name.name.clone(), c.clone()))
                .collect();
            let env = Env::Point(&env_map);
            let threads = threads_v
                .as_ref()
                .and_then(|tv| ctx.count(env, file, tv, "`threads`", 1));
            let lock = lock_v.as_ref().and_then(|lv| ctx.lock_ref(env, file, lv));
            let workload = workload_v
                .as_ref()
                .and_then(|wv| ctx.workload_ref(env, file, wv));
            let placement = ctx.placement_ref(env, file, &placement_v);
            let (Some(tv), Some(threads), Some(lock), Some(workload), Some(placement)) =
                (&threads_v, threads, lock, workload, placement)
            else {
                ok = false;
                continue;
            };
            let (tval, tfile) = ctx.deref(env, file, tv).unwrap_or((tv.clone(), file));
            if let (Some(c), true) = (cpus, p.modes.contains(&Mode::Sim)) {
                if threads > c {
                    ctx.err(tfile, tval.span, format!("{threads} threads do not fit the {c} CPUs of the simulated topology"))
                        .set_label(format!("point {}", p.id))
                        .help = Some("simulated runs place one thread per CPU; lower the thread count or narrow the sim sweep".into());
                    ok = false;
                }
            }
            if let PlacementKind::List(list) = &placement.policy {
                let (pval, pfile) = ctx
                    .deref(env, file, &placement_v)
                    .unwrap_or((placement_v.clone(), file));
                if (list.len() as u64) < u64::from(threads) {
                    ctx.err(
                        pfile,
                        pval.span,
                        format!(
                            "the placement lists {} CPU{} but {threads} threads need one each",
                            list.len(),
                            if list.len() == 1 { "" } else { "s" }
                        ),
                    )
                    .set_label("too few CPUs");
                    ok = false;
                }
                if let (Some(c), true) = (cpus, p.modes.contains(&Mode::Sim)) {
                    if let Some(bad) = list.iter().find(|&&x| x >= c) {
                        ctx.err(
                            pfile,
                            pval.span,
                            format!(
                                "CPU {bad} does not exist in the simulated topology ({c} CPUs)"
                            ),
                        );
                        ok = false;
                    }
                }
            }
            p.threads = threads;
            p.lock = lock;
            p.workload = workload;
            p.placement = placement;
        }
    }

    // Plan axes: every value an axis takes in some mode.
    let mut plan_axes: Vec<Axis> = axes
        .iter()
        .map(|a| Axis {
            name: a.name.name.clone(),
            values: a.values.clone(),
            zip_group: a.zip,
        })
        .collect();
    for ms in &modes {
        for (ai, _, values) in &ms.overrides {
            for v in values {
                if !plan_axes[*ai].values.contains(v) {
                    plan_axes[*ai].values.push(v.clone());
                }
            }
        }
    }

    // Claims and plots.
    let cx = ClaimCx {
        broken: axes
            .iter()
            .filter(|a| a.broken)
            .map(|a| a.name.name.clone())
            .collect(),
        axes: &plan_axes,
        points: &points,
        lock_axis: lock_axis.clone(),
        file,
    };
    let mut claims = Vec::new();
    let mut names: BTreeMap<String, Span> = BTreeMap::new();
    for e in &expects {
        let group: Vec<(Ident, Val)> = e
            .group
            .as_ref()
            .map(|g| g.items.clone())
            .unwrap_or_default();
        if let Some(g) = &e.group {
            ok &= check_dup_keys(ctx, file, &g.items);
        }
        for c in &e.claims {
            let n = claims.len() + 1;
            let id = match &c.name {
                Some(name) => {
                    if let Some(first) = names.get(&name.name) {
                        let first = *first;
                        ctx.err(
                            file,
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
                None => format!("c{n}"),
            };
            match claim(
                ctx,
                &cx,
                &group,
                e.group.as_ref().map(|g| g.span),
                c,
                id,
                !(e.report || c.report),
            ) {
                Some(cl) => claims.push(cl),
                None => ok = false,
            }
        }
    }
    let mut plan_plots = Vec::new();
    for p in &plots {
        match plot(ctx, &cx, p) {
            Some(pl) => plan_plots.push(pl),
            None => ok = false,
        }
    }

    if !ok || ctx.diags.iter().any(Diagnostic::is_error) {
        return None;
    }
    let sources = ctx
        .files
        .iter()
        .map(|(p, t)| SourceFile {
            path: p.clone(),
            sha256: sha256_hex(t.as_bytes()),
        })
        .collect();
    Some(Plan {
        schema_version: PLAN_SCHEMA_VERSION,
        experiment: exp.name.name.clone(),
        description,
        master_seed: master_seed?,
        topology: topology?,
        run: run?,
        axes: plan_axes,
        points,
        claims,
        plots: plan_plots,
        sources,
    })
}

fn ctx_has_no_use(ctx: &Ctx) -> bool {
    ctx.files.len() <= 1
}

fn axis_ref_name(v: &Val) -> Option<String> {
    match &v.kind {
        ValKind::AxisRef(a) => Some(a.clone()),
        _ => None,
    }
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    let d = Sha256::digest(bytes);
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// The seed of a point: SHA-256 of its id, folded to 64 bits, xor the master seed,
/// through SplitMix64's finaliser. Depends on nothing but the two.
pub fn point_seed(master: u64, id: &str) -> u64 {
    let d = Sha256::digest(id.as_bytes());
    let mut h = [0u8; 8];
    h.copy_from_slice(&d[..8]);
    let mut z = u64::from_le_bytes(h) ^ master;
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn add_axis(
    ctx: &mut Ctx,
    axes: &mut Vec<AxisDecl>,
    file: usize,
    p: &crate::syntax::Prop,
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
fn axis_list(
    ctx: &mut Ctx,
    file: usize,
    name: &str,
    items: &[Val],
) -> (Vec<Val>, Vec<Value>, bool) {
    let mut vals = Vec::new();
    let mut ok = true;
    for it in items {
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
                if values
                    .iter()
                    .any(|x| cmp_values(x, &pv) == Some(std::cmp::Ordering::Equal))
                {
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

fn compile(ctx: &mut Ctx, file: usize, c: &Cond, axes: &[AxisDecl]) -> Option<CCond> {
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
                        value_noun(&pv)
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

fn run_block(
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
    let reps = o
        .get("repetitions")
        .map_or(Some(1), |r| ctx.count(env, file, r, "`repetitions`", 1));
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
        qw = qo
            .get("warmup")
            .map(|d| ctx.duration(env, file, d, "quick `warmup`"));
        if let Some(r) = qo.get("repetitions") {
            qr = ctx.count(env, file, r, "quick `repetitions`", 1);
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
    let Some(qr) = qr else {
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
        }),
        specs,
    )
}

// ---------------------------------------------------------------------------
// Claims and plots

struct ClaimCx<'a> {
    axes: &'a [Axis],
    /// Axes whose declaration had errors: a value missing from them is not news.
    broken: BTreeSet<String>,
    points: &'a [Point],
    lock_axis: Option<String>,
    file: usize,
}

fn metric_names() -> impl Iterator<Item = &'static str> + Clone {
    locklab_model::metrics::names()
}

fn check_dup_keys(ctx: &mut Ctx, file: usize, items: &[(Ident, Val)]) -> bool {
    let mut ok = true;
    for (i, (k, _)) in items.iter().enumerate() {
        if let Some((first, _)) = items[..i].iter().find(|(k0, _)| k0.name == k.name) {
            let fs = first.span;
            ctx.err(file, k.span, format!("`{}` is selected twice", k.name))
                .labels
                .push(Label {
                    span: fs,
                    message: "first here".into(),
                });
            ok = false;
        }
    }
    ok
}

/// A selector value, checked against the axis or dimension it names.
fn select_value(ctx: &mut Ctx, cx: &ClaimCx, key: &Ident, v: &Val) -> Option<(String, Value)> {
    let file = cx.file;
    if let Some(axis) = cx.axes.iter().find(|a| a.name == key.name) {
        let pv = match units::to_plan_value(v) {
            Ok(pv) => pv,
            Err((m, h)) => {
                let d = ctx.err(file, v.span, m);
                d.help = h;
                return None;
            }
        };
        if !axis
            .values
            .iter()
            .any(|x| cmp_values(x, &pv) == Some(std::cmp::Ordering::Equal))
        {
            if cx.broken.contains(&key.name) {
                return None;
            }
            let labels: Vec<String> = axis.values.iter().map(Value::label).collect();
            // Edit distance helps with names, not with numbers.
            let help = match &pv {
                Value::Str(s) => crate::diag::suggest(s, labels.iter().map(|s| s.as_str()))
                    .map(|s| format!("did you mean `{s}`?")),
                _ => None,
            };
            let d = ctx
                .err(
                    file,
                    v.span,
                    format!("`{}` is not a value of axis `{}`", pv.label(), key.name),
                )
                .set_label("not swept");
            d.help = help.or(Some(format!("`{}` takes {}", key.name, labels.join(", "))));
            return None;
        }
        // Use the axis's own spelling (e.g. Int vs Float) so that lookups match.
        let canon = axis
            .values
            .iter()
            .find(|x| cmp_values(x, &pv) == Some(std::cmp::Ordering::Equal))
            .cloned()
            .unwrap_or(pv);
        return Some((key.name.clone(), canon));
    }
    let pv = units::to_plan_value(v).ok();
    let bad = |ctx: &mut Ctx, expected: &str| {
        ctx.err(
            file,
            v.span,
            format!(
                "`{}` selects {expected}, found {}",
                key.name,
                units::kind_noun(&v.kind)
            ),
        )
        .set_label(format!("expected {expected}"));
    };
    match key.name.as_str() {
        "mode" => match &pv {
            Some(Value::Str(s)) if s == "sim" || s == "native" => {
                Some((key.name.clone(), Value::Str(s.clone())))
            }
            _ => {
                bad(ctx, "`sim` or `native`");
                None
            }
        },
        "thread" | "cpu" | "node" | "from_node" | "to_node" => match &pv {
            Some(Value::Int(i)) if *i >= 0 => Some((key.name.clone(), Value::Int(*i))),
            _ => {
                bad(ctx, "a whole number >= 0");
                None
            }
        },
        "class" => match &pv {
            Some(Value::Str(s)) => Some((key.name.clone(), Value::Str(s.clone()))),
            _ => {
                bad(ctx, "a class name");
                None
            }
        },
        "remote" => match &pv {
            Some(Value::Bool(b)) => Some((key.name.clone(), Value::Bool(*b))),
            _ => {
                bad(ctx, "`true` or `false`");
                None
            }
        },
        other => {
            let cands: Vec<&str> = cx
                .axes
                .iter()
                .map(|a| a.name.as_str())
                .chain(DIMENSIONS.iter().copied())
                .collect();
            let help = did_you_mean(other, cands.iter().copied());
            let d = ctx
                .err(
                    file,
                    key.span,
                    format!("unknown axis or dimension `{other}`"),
                )
                .set_label("not an axis");
            d.help = help;
            None
        }
    }
}

fn matches_point(p: &Point, sel: &[(String, Value)]) -> bool {
    sel.iter().all(|(k, v)| match k.as_str() {
        "mode" => p.modes.iter().any(|m| Value::Str(m.as_str().into()) == *v),
        _ => match p.axes.get(k) {
            Some(x) => cmp_values(x, v) == Some(std::cmp::Ordering::Equal),
            None => true,
        },
    })
}

/// `metric[sel] over base`, with the group's selector merged in. `free` names an
/// axis the claim varies (a trend); `single` asks that the rest pin one point.
fn metric_ref(
    ctx: &mut Ctx,
    cx: &ClaimCx,
    group: &[(Ident, Val)],
    m: &MetricAst,
    free: Option<&str>,
    single: bool,
) -> Option<MetricRef> {
    let file = cx.file;
    let mut ok = true;
    let name = &m.name.name;
    if !metric_names().any(|n| n == name) {
        let help = did_you_mean(name, metric_names());
        let d = ctx
            .err(file, m.name.span, format!("unknown metric `{name}`"))
            .set_label("not a metric");
        d.help = help;
        ok = false;
    }
    ok &= check_dup_keys(ctx, file, &m.select);
    let mut items: Vec<(Ident, Val)> = group
        .iter()
        .filter(|(k, _)| !m.select.iter().any(|(k2, _)| k2.name == k.name))
        .cloned()
        .collect();
    items.extend(m.select.iter().cloned());
    let mut select = Vec::new();
    for (k, v) in &items {
        match select_value(ctx, cx, k, v) {
            Some(kv) => select.push(kv),
            None => ok = false,
        }
    }
    let baseline = match (&m.baseline, name.as_str()) {
        (Some(b), "speedup") => {
            match &cx.lock_axis {
                None => {
                    ctx.err(file, b.span, "`speedup` needs a lock axis to compare against")
                        .help = Some("sweep the locks (`lock = [stock, cna]` in `sweep`) and write `speedup[...] over stock`".into());
                    ok = false;
                }
                Some(la) => {
                    let in_axis = cx
                        .axes
                        .iter()
                        .find(|a| a.name == *la)
                        .is_some_and(|a| a.values.contains(&Value::Str(b.name.clone())));
                    if !in_axis {
                        let vals: Vec<String> = cx
                            .axes
                            .iter()
                            .find(|a| a.name == *la)
                            .map(|a| a.values.iter().map(Value::label).collect())
                            .unwrap_or_default();
                        let help = did_you_mean(&b.name, vals.iter().map(|s| s.as_str()));
                        let d = ctx
                            .err(
                                file,
                                b.span,
                                format!(
                                    "baseline `{}` is not a value of the lock axis `{la}`",
                                    b.name
                                ),
                            )
                            .set_label("not a swept lock");
                        d.help = help.or(Some(format!("`{la}` takes {}", vals.join(", "))));
                        ok = false;
                    }
                }
            }
            Some(b.name.clone())
        }
        (Some(b), _) => {
            ctx.err(
                file,
                b.span,
                format!("only `speedup` takes a baseline; `{name}` does not"),
            )
            .help = Some("write `speedup[...] over LOCK`, or divide two metrics".into());
            ok = false;
            None
        }
        (None, "speedup") => {
            ctx.err(file, m.span, "`speedup` needs a baseline")
                .set_label("over which lock?")
                .help = Some("write `speedup[...] over LOCK`".into());
            ok = false;
            None
        }
        (None, _) => None,
    };
    if !ok {
        return None;
    }
    if single && !cx.points.is_empty() {
        let matched: Vec<&Point> = cx
            .points
            .iter()
            .filter(|p| matches_point(p, &select))
            .collect();
        if matched.is_empty() {
            ctx.err(file, m.span, "this selection matches no point of the plan")
                .set_label("no point")
                .help = Some(
                "the values exist but not together (a `where` or a mode block removed them)".into(),
            );
            return None;
        }
        let mut varying = Vec::new();
        for a in cx.axes {
            if Some(a.name.as_str()) == free {
                continue;
            }
            let distinct: BTreeSet<String> = matched
                .iter()
                .filter_map(|p| p.axes.get(&a.name))
                .map(Value::label)
                .collect();
            if distinct.len() > 1 {
                varying.push(a.name.clone());
            }
        }
        if !varying.is_empty() {
            let example: Vec<String> = varying
                .iter()
                .map(|a| {
                    format!(
                        "{a} = {}",
                        matched[0]
                            .axes
                            .get(a)
                            .map(units::value_text)
                            .unwrap_or_default()
                    )
                })
                .collect();
            ctx.err(
                file,
                m.span,
                format!(
                    "`{name}` here matches {} points that differ in {}",
                    matched.len(),
                    varying.join(", ")
                ),
            )
            .set_label("must select one point")
            .help = Some(format!(
                "pin them in the selector, e.g. [{}]",
                example.join(", ")
            ));
            return None;
        }
        if let (Some(b), Some(la)) = (&baseline, &cx.lock_axis) {
            // A point shares with its baseline every axis along which the baseline
            // itself varies; an axis on which the baseline has one value (a CNA
            // threshold for qspinlock, run once) does not constrain the match. The
            // analysis joins the same way.
            let is_base = |q: &&Point| q.axes.get(la) == Some(&Value::Str(b.clone()));
            let varying: Vec<&String> = cx
                .points
                .iter()
                .filter(is_base)
                .flat_map(|q| q.axes.keys())
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .filter(|k| *k != la)
                .filter(|k| {
                    let mut vals = cx
                        .points
                        .iter()
                        .filter(is_base)
                        .filter_map(|q| q.axes.get(*k));
                    let first = vals.next();
                    vals.any(|v| Some(v) != first)
                })
                .collect();
            for p in &matched {
                let modes: Vec<Mode> = p.modes.clone();
                let found = cx.points.iter().filter(is_base).any(|q| {
                    varying.iter().all(|k| q.axes.get(*k) == p.axes.get(*k))
                        && modes.iter().any(|m| q.modes.contains(m))
                });
                if !found {
                    ctx.err(
                        file,
                        m.span,
                        format!("no baseline point with {la}={b} for point {}", p.id),
                    )
                    .set_label("baseline missing")
                    .help =
                        Some("the baseline must run at the same values of every axis along which it varies".into());
                    return None;
                }
            }
        }
    }
    Some(MetricRef {
        target: Default::default(),
        metric: name.clone(),
        select,
        baseline,
        baseline_select: Vec::new(),
    })
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

fn expr(ctx: &mut Ctx, cx: &ClaimCx, group: &[(Ident, Val)], e: &ExprAst) -> Option<Expr> {
    match e {
        ExprAst::Metric(m) => metric_ref(ctx, cx, group, m, None, true).map(Expr::Metric),
        ExprAst::Const(v) => const_f64(ctx, cx.file, v).map(|value| Expr::Const { value }),
        ExprAst::Bin { op, lhs, rhs, .. } => {
            let l = expr(ctx, cx, group, lhs);
            let r = expr(ctx, cx, group, rhs);
            let op = match op {
                '+' => BinOp::Add,
                '-' => BinOp::Sub,
                '*' => BinOp::Mul,
                _ => BinOp::Div,
            };
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

fn has_metric(e: &ExprAst) -> bool {
    match e {
        ExprAst::Metric(_) => true,
        ExprAst::Const(_) => false,
        ExprAst::Bin { lhs, rhs, .. } => has_metric(lhs) || has_metric(rhs),
    }
}

fn claim(
    ctx: &mut Ctx,
    cx: &ClaimCx,
    group: &[(Ident, Val)],
    group_span: Option<Span>,
    c: &ClaimAst,
    id: String,
    gating: bool,
) -> Option<Claim> {
    let file = cx.file;
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
    if let Some(gs) = group_span {
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
            let is_axis = cx.axes.iter().any(|a| a.name == axis.name);
            let is_dim = ["thread", "cpu", "node"].contains(&axis.name.as_str());
            if !is_axis && !is_dim {
                let cands: Vec<&str> = cx
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
            let m = metric_ref(ctx, cx, group, metric, Some(&axis.name), true)?;
            if m.select.iter().any(|(k, _)| *k == axis.name) {
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
                        let (_, v) = select_value(ctx, cx, axis, it)?;
                        vals.push(v);
                    }
                }
                if vals.len() < 2 {
                    ctx.err(file, list.span, "a trend needs at least two values");
                    return None;
                }
            } else if is_axis {
                let n = cx
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
                Some(r) => ctx.real(Env::NoAxes, file, r, "`rho`", -1.0, 1.0)?,
                None => 0.8,
            };
            ClaimKind::Trend {
                metric: m,
                axis: axis.name.clone(),
                values: vals,
                direction: if *increasing {
                    TrendDirection::Increasing
                } else {
                    TrendDirection::Decreasing
                },
                min_rho,
                series: Default::default(),
            }
        }
        ClaimBody::Band { expr: e, band } => {
            if !has_metric(e) {
                ctx.err(file, e.span(), "a claim needs a metric")
                    .set_label("only constants");
                return None;
            }
            let ex = expr(ctx, cx, group, e);
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
                BandAst::PlusMinus { center, tol, span } => {
                    let (c, cd) = const_dim(ctx, file, center)?;
                    let (t, td) = const_dim(ctx, file, tol)?;
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
                    if t < 0.0 {
                        ctx.err(file, *span, "a tolerance cannot be negative");
                        return None;
                    }
                    (c - t, c + t)
                }
            };
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
            let exprs: Vec<Option<Expr>> = all.iter().map(|e| expr(ctx, cx, group, e)).collect();
            let exprs: Vec<Expr> = exprs.into_iter().collect::<Option<_>>()?;
            let min_gap = match gap {
                Some(g) => Some(ctx.real(Env::NoAxes, file, g, "`gap`", 0.0, 1.0)?),
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
                ClaimKind::Ordering {
                    exprs,
                    op: if up { OrderOp::Less } else { OrderOp::Greater },
                    min_gap: min_gap.unwrap_or(0.0),
                }
            }
        }
    };
    let (line, _) = crate::diag::line_col(ctx.text(file), c.span.start);
    Some(Claim {
        id,
        text,
        source: c.source.clone(),
        file: ctx.path(file),
        line: line as u32,
        gating,
        kind,
        modes: Vec::new(),
    })
}

fn plot(ctx: &mut Ctx, cx: &ClaimCx, p: &PlotStmt) -> Option<PlotSpec> {
    let file = cx.file;
    let known = |n: &str| cx.axes.iter().any(|a| a.name == n) || DIMENSIONS.contains(&n);
    let mut ok = true;
    for a in std::iter::once(&p.x).chain(&p.by) {
        if !known(&a.name) {
            let cands: Vec<&str> = cx
                .axes
                .iter()
                .map(|a| a.name.as_str())
                .chain(DIMENSIONS.iter().copied())
                .collect();
            let help = did_you_mean(&a.name, cands.iter().copied());
            let d = ctx
                .err(file, a.span, format!("unknown axis `{}` in a plot", a.name))
                .set_label("not an axis");
            d.help = help;
            ok = false;
        }
    }
    let m = metric_ref(ctx, cx, &[], &p.metric, None, false)?;
    ok.then(|| PlotSpec {
        title: p.title.clone(),
        metric: m.metric,
        x: p.x.name.clone(),
        group_by: p.by.iter().map(|b| b.name.clone()).collect(),
        select: m.select,
        baseline: m.baseline,
        log_x: p.log_x,
        log_y: p.log_y,
        targets: Vec::new(),
    })
}
