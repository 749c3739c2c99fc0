//! Metric references (`speedup[threads = 142] over stock`): names and selector
//! values checked against the plan's axes and dimensions ([`written`]), then
//! resolved to the point, baseline, rows and modes they read ([`Target`]) with
//! `locklab_model::select`, so that the analysis never selects again.

use crate::diag::{did_you_mean, suggestion, Label, Span};
use crate::resolve::Ctx;
use crate::syntax::{Ident, MetricAst, Val};
use crate::units::{self, cmp_values, value_text};
use locklab_model::metrics::{self, Table};
use locklab_model::plan::{
    Axis, MetricRef, Mode, Point, Target, TrendSeries, TrendStep, Value, Workload, DIMENSIONS,
};
use locklab_model::select::{self, BaselineQuery, NoBaseline, NoTable};
use std::collections::{BTreeMap, BTreeSet};

/// What references are checked and resolved against.
pub struct Scope<'a> {
    pub file: usize,
    /// The plan's axes, with every value they take in some mode.
    pub axes: &'a [Axis],
    /// Axes whose declaration had errors: a value missing from them is not news.
    pub broken: BTreeSet<String>,
    /// The sweep did not parse (its error is told): a name that is not an axis is
    /// not news either.
    pub sweep_unparsed: bool,
    /// Every point, when all of them resolved; `None`: references are checked for
    /// names and values only (the plan fails anyway).
    pub points: Option<&'a [Point]>,
    /// The axis that chooses the lock (`lock = $lock`).
    pub lock_axis: Option<String>,
    /// The described machine's CPUs, where the topology is one (not `host`): where
    /// simulated threads run is then known before the run.
    pub sim_cpus: Option<locklab_model::topology::CpuMap>,
    /// The points by axis value, to narrow a selection before it is applied.
    pub index: PointIndex,
    /// Work left for resolving references ([`MAX_RESOLVE_WORK`]), and whether it
    /// ran out (said once).
    pub budget: std::cell::Cell<u64>,
    pub exhausted: std::cell::Cell<bool>,
    /// The experiment as written, where `--set` narrowed its sweep.
    pub narrowing: Option<&'a super::narrow::Narrowing>,
}

impl Scope<'_> {
    /// The help for a selection whose values are swept but never together.
    fn apart(&self) -> String {
        let by = if self.narrowing.is_some() {
            "a `where`, a mode block or `--set` (it also pairs a `zip`'s axes anew)"
        } else {
            "a `where` or a mode block"
        };
        format!("the values exist but not together: {by} removed them")
    }

    /// The claim at `index` (in file order) skipped, where `--set` left out what it
    /// reads ([`super::narrow::Narrowing::skipped_claim`]; `resolves`: whether the
    /// narrowed sweep could read it).
    pub fn narrowed_away_claim(
        &self,
        index: usize,
        resolves: bool,
    ) -> Option<locklab_model::plan::Claim> {
        // Out of budget, nothing resolves: that is said, not skipped.
        if self.exhausted.get() {
            return None;
        }
        self.narrowing?.skipped_claim(index, self.axes, resolves)
    }

    /// Plot `index` not drawn, where it failed here because `--set` left out what
    /// it shows.
    pub fn narrowed_away_plot(&self, index: usize) -> Option<locklab_model::plan::PlotSpec> {
        if self.exhausted.get() {
            return None;
        }
        self.narrowing?.skipped_plot(index, self.axes)
    }
}

/// The most work resolving an experiment's references may take, in points read: a
/// target costs [`TARGET_COST`] (what it holds in the plan), and finding its
/// baseline one per point of the plan (the baseline rule reads them all). Past it,
/// a located error: an experiment this large in claims and plots should be split.
pub const MAX_RESOLVE_WORK: u64 = 20_000_000;
const TARGET_COST: u64 = 40;

/// Points by (axis, value). A selection is applied ([`select::matches`]) only to
/// the points that take the value of its rarest axis: a claim costs what it
/// selects, not the whole sweep.
#[derive(Default)]
pub struct PointIndex(BTreeMap<(String, String), Vec<usize>>);

impl PointIndex {
    pub fn new(points: &[Point]) -> PointIndex {
        let mut m: BTreeMap<(String, String), Vec<usize>> = BTreeMap::new();
        for (i, p) in points.iter().enumerate() {
            for (axis, v) in &p.axes {
                m.entry((axis.clone(), index_key(v))).or_default().push(i);
            }
        }
        PointIndex(m)
    }

    /// Indices of the points that may match `select`, ascending; `None`: any may.
    fn candidates(&self, select: &[(String, Value)]) -> Option<&[usize]> {
        select
            .iter()
            .filter(|(k, _)| k != "mode" && !select::is_row_key(k))
            .map(|(k, v)| {
                self.0
                    .get(&(k.clone(), index_key(v)))
                    .map_or(&[][..], Vec::as_slice)
            })
            .min_by_key(|c| c.len())
    }
}

/// Equal for values `select::same_value` calls the same (`4` and `4.0`).
fn index_key(v: &Value) -> String {
    match v.as_f64() {
        Some(f) if matches!(v, Value::Int(_) | Value::Float(_)) => format!("{f}"),
        _ => format!("{v:?}"),
    }
}

/// A reference whose names and values check, not yet resolved.
pub struct Written<'a> {
    pub ast: &'a MetricAst,
    /// The reference as the plan shows it; its target is still empty.
    pub mref: MetricRef,
}

impl Written<'_> {
    fn name(&self) -> &str {
        &self.mref.metric
    }

    /// The `mode` the selection names.
    fn mode(&self) -> Option<Mode> {
        mode_of(&self.mref.select)
    }

    /// The row-dimension selectors: what the target keeps of the selection.
    fn rows(&self) -> Vec<(String, Value)> {
        self.mref
            .select
            .iter()
            .filter(|(k, _)| select::is_row_key(k))
            .cloned()
            .collect()
    }
}

pub fn mode_of(select: &[(String, Value)]) -> Option<Mode> {
    select.iter().find(|(k, _)| k == "mode").and_then(|(_, v)| {
        [Mode::Sim, Mode::Native]
            .into_iter()
            .find(|m| *v == Value::Str(m.as_str().into()))
    })
}

/// A value as an example in a help text (`threshold = 10ms`).
pub fn example(key: &str, v: &Value) -> String {
    format!("{key} = {}", value_text(v))
}

pub fn check_dup_keys(ctx: &mut Ctx, file: usize, items: &[(Ident, Val)]) -> bool {
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
pub fn select_value(ctx: &mut Ctx, scope: &Scope, key: &Ident, v: &Val) -> Option<(String, Value)> {
    let file = scope.file;
    if let Some(axis) = scope.axes.iter().find(|a| a.name == key.name) {
        let pv = match units::to_plan_value(v) {
            Ok(pv) => pv,
            Err((m, h)) => {
                let d = ctx.err(file, v.span, m);
                d.help = h;
                return None;
            }
        };
        // Use the axis's own spelling (e.g. Int vs Float) so that lookups match.
        let Some(canon) = axis
            .values
            .iter()
            .find(|x| cmp_values(x, &pv) == Some(std::cmp::Ordering::Equal))
        else {
            if scope.broken.contains(&key.name) {
                return None;
            }
            let labels: Vec<String> = axis.values.iter().map(Value::label).collect();
            // Edit distance helps with names, not with numbers.
            let help = match &pv {
                Value::Str(s) => suggestion(s, labels.iter().map(|s| s.as_str())),
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
        };
        return Some((key.name.clone(), canon.clone()));
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
        "cross_node" => match &pv {
            Some(Value::Bool(b)) => Some((key.name.clone(), Value::Bool(*b))),
            _ => {
                bad(ctx, "`true` or `false`");
                None
            }
        },
        _ if scope.sweep_unparsed => None,
        other => {
            let cands: Vec<&str> = scope
                .axes
                .iter()
                .map(|a| a.name.as_str())
                .chain(DIMENSIONS.iter().copied())
                .collect();
            let help = if other == "remote" {
                // The old name said where a waiter sat, not what the rows are.
                Some("`remote` is now `cross_node`: hand-offs whose previous and next holder are on different nodes".into())
            } else {
                did_you_mean(other, cands.iter().copied())
            };
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

/// Check `m`, with the group's keys merged in (a metric's own keys win): the
/// metric's name, the selector's keys and values, and the baseline.
pub fn written<'a>(
    ctx: &mut Ctx,
    scope: &Scope,
    group: &[(Ident, Val)],
    m: &'a MetricAst,
) -> Option<Written<'a>> {
    let file = scope.file;
    let mut ok = true;
    let name = &m.name.name;
    if metrics::get(name).is_none() {
        let help = did_you_mean(name, metrics::names());
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
        match select_value(ctx, scope, k, v) {
            Some(kv) => select.push(kv),
            None => ok = false,
        }
    }
    let mut baseline_select = Vec::new();
    let baseline = match (&m.baseline, name.as_str()) {
        (Some(b), "speedup") => {
            ok &= check_baseline_lock(ctx, scope, &b.lock);
            ok &= check_dup_keys(ctx, file, &b.select);
            for (k, v) in &b.select {
                match pinned_value(ctx, scope, k, v) {
                    Some(kv) => baseline_select.push(kv),
                    None => ok = false,
                }
            }
            if let Some((k, _)) = items.iter().find(|(k, _)| select::is_row_key(&k.name)) {
                ctx.err(
                    file,
                    k.span,
                    format!("`speedup` compares whole points; `{}` selects rows", k.name),
                )
                .set_label("not a point selector")
                .help = Some("divide two metrics of the rows instead".into());
                ok = false;
            }
            Some(b.lock.name.clone())
        }
        (Some(b), _) => {
            ctx.err(
                file,
                b.lock.span,
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
    if ok && baseline.is_none() {
        let rows: Vec<(String, Value)> = select
            .iter()
            .filter(|(k, _)| select::is_row_key(k))
            .cloned()
            .collect();
        let span_of = |key: &str| {
            items
                .iter()
                .find(|(k, _)| k.name == key)
                .map_or(m.span, |(k, _)| k.span)
        };
        ok &= check_table(ctx, file, name, &rows, span_of);
    }
    ok.then(|| Written {
        ast: m,
        mref: MetricRef {
            metric: name.clone(),
            select,
            baseline,
            baseline_select,
            target: Target::default(),
        },
    })
}

/// The rows a reference selects must be of one table that measures its metric
/// (`select::table`): `throughput_ops_s[cpu = 1]` names thread rows, which have no
/// throughput. `span_of` locates a selector key.
pub fn check_table(
    ctx: &mut Ctx,
    file: usize,
    metric: &str,
    rows: &[(String, Value)],
    span_of: impl Fn(&str) -> Span,
) -> bool {
    let Some(m) = metrics::get(metric) else {
        return true;
    };
    let err = match select::table(m, rows) {
        Ok(_) => return true,
        Err(e) => e,
    };
    match err {
        NoTable::Mixed { thread, handoff } => {
            ctx.err(
                file,
                span_of(&handoff),
                format!("`{thread}` selects thread rows and `{handoff}` hand-off rows"),
            )
            .set_label("another table")
            .help = Some("a reference reads one table: select threads or hand-offs".into());
        }
        NoTable::NotIn { metric, table, key } => {
            let (rows, per) = match table {
                Table::Threads => ("thread", "per thread"),
                Table::Handoffs => ("hand-off", "per hand-off pair"),
                Table::Points => ("point", "per point"),
            };
            let names: Vec<&str> = metrics::in_table(table).map(|m| m.name).collect();
            ctx.err(
                file,
                span_of(&key),
                format!("`{key}` selects {rows} rows, which do not measure `{metric}`"),
            )
            .set_label(format!("no `{metric}` here"))
            .help = Some(format!("measured {per}: {}", names.join(", ")));
        }
    }
    false
}

/// The baseline of `over LOCK` must be a value of the lock axis.
fn check_baseline_lock(ctx: &mut Ctx, scope: &Scope, b: &Ident) -> bool {
    let file = scope.file;
    let Some(la) = &scope.lock_axis else {
        ctx.err(file, b.span, "`speedup` needs a lock axis to compare against")
            .help = Some(
            "sweep the locks (`lock = [stock, cna]` in `sweep`) and write `speedup[...] over stock`"
                .into(),
        );
        return false;
    };
    let vals: Vec<String> = scope
        .axes
        .iter()
        .find(|a| a.name == *la)
        .map(|a| a.values.iter().map(Value::label).collect())
        .unwrap_or_default();
    if vals.contains(&b.name) {
        return true;
    }
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
    false
}

/// `over stock[threads = 4]`: a sweep axis other than the lock's, and one of its
/// values.
fn pinned_value(ctx: &mut Ctx, scope: &Scope, key: &Ident, v: &Val) -> Option<(String, Value)> {
    let is_axis = scope.axes.iter().any(|a| a.name == key.name);
    if !is_axis || scope.lock_axis.as_deref() == Some(key.name.as_str()) {
        let why = if is_axis {
            "the baseline's lock is named after `over`".to_string()
        } else if DIMENSIONS.contains(&key.name.as_str()) {
            format!("`{}` is a result dimension, not a sweep axis", key.name)
        } else {
            return select_value(ctx, scope, key, v);
        };
        ctx.err(
            scope.file,
            key.span,
            format!("`{}` cannot pin a baseline: {why}", key.name),
        )
        .set_label("not a sweep axis of the baseline")
        .help = Some("pin sweep axes only, e.g. `over stock[threads = 4]`".into());
        return None;
    }
    select_value(ctx, scope, key, v)
}

/// A scope whose points are complete: what references resolve against.
struct Resolver<'a> {
    scope: &'a Scope<'a>,
    points: &'a [Point],
}

impl<'a> Resolver<'a> {
    /// `None` when references are not resolved (no complete points).
    fn new(scope: &'a Scope<'a>) -> Option<Resolver<'a>> {
        scope.points.map(|points| Resolver { scope, points })
    }

    /// The budget is spent (said once, where it ran out): nothing more resolves.
    fn spent(&self) -> bool {
        self.scope.exhausted.get()
    }

    /// The points the selection matches; an error when there are none, or when
    /// they differ in an axis other than `free` (a trend's own axis).
    fn pinned(&self, ctx: &mut Ctx, w: &Written, free: Option<&str>) -> Option<Vec<&'a Point>> {
        let file = self.scope.file;
        let matched: Vec<&Point> = match self.scope.index.candidates(&w.mref.select) {
            Some(c) => c.iter().map(|&i| &self.points[i]).collect::<Vec<_>>(),
            None => self.points.iter().collect(),
        }
        .into_iter()
        .filter(|p| select::matches(p, &w.mref.select))
        .collect();
        if matched.is_empty() {
            ctx.err(
                file,
                w.ast.span,
                "this selection matches no point of the plan",
            )
            .set_label("no point")
            .help = Some(self.scope.apart());
            return None;
        }
        let varying: Vec<&str> = select::varying_axes(self.scope.axes, &matched)
            .into_iter()
            .filter(|a| Some(*a) != free)
            .collect();
        if varying.is_empty() {
            return Some(matched);
        }
        let pin: Vec<String> = varying
            .iter()
            .filter_map(|a| matched[0].axes.get(*a).map(|v| example(a, v)))
            .collect();
        ctx.err(
            file,
            w.ast.span,
            format!(
                "`{}` here matches {} points that differ in {}",
                w.name(),
                matched.len(),
                varying.join(", ")
            ),
        )
        .set_label("must select one point")
        .help = Some(format!(
            "pin them in the selector, e.g. [{}]",
            pin.join(", ")
        ));
        None
    }

    /// What `w` reads at point `p`: its baseline (for `speedup`), its rows and its
    /// modes (the selection's, else the point's, that its baseline runs in too).
    fn target(&self, ctx: &mut Ctx, w: &Written, p: &Point) -> Option<Target> {
        let cost = TARGET_COST
            + w.mref
                .baseline
                .as_ref()
                .map_or(0, |_| self.points.len() as u64);
        let left = self.scope.budget.get();
        if left < cost {
            if !self.spent() {
                self.scope.exhausted.set(true);
                ctx.err(
                    self.scope.file,
                    w.ast.span,
                    format!(
                        "the claims and plots ask for too much: more than {MAX_RESOLVE_WORK} points read in all (with their baselines)"
                    ),
                )
                .set_label("here the limit is reached")
                .help = Some("pin the selections, shorten the trends or split the experiment".into());
            }
            return None;
        }
        self.scope.budget.set(left - cost);
        let mode = w.mode();
        let mut modes: Vec<Mode> = [Mode::Sim, Mode::Native]
            .into_iter()
            .filter(|m| mode.is_none_or(|s| s == *m) && select::runs_in(p, *m))
            .collect();
        let mut baseline = None;
        if let Some(lock) = &w.mref.baseline {
            let q = &self.points[self.baseline_point(ctx, w, p, lock)?];
            let before = modes.clone();
            modes.retain(|m| select::runs_in(q, *m));
            if modes.is_empty() {
                let names: Vec<&str> = before.iter().map(|m| m.as_str()).collect();
                ctx.err(
                    self.scope.file,
                    baseline_span(w),
                    format!(
                        "the baseline of point {} is point {}, which never runs in {}",
                        p.id,
                        q.id,
                        names.join(", ")
                    ),
                )
                .set_label("baseline in another mode")
                .help = Some(format!(
                    "run `{lock}` in that mode too, or pin a baseline that does, e.g. `over {lock}[...]`"
                ));
                return None;
            }
            baseline = Some(q.index as u32);
        }
        if !self.rows_can_match(ctx, w, p, &modes) {
            return None;
        }
        Some(Target {
            point: p.index as u32,
            baseline,
            rows: w.rows(),
            modes,
        })
    }

    /// The row selectors that the plan shows can pick no row of `p` (`thread = 100`
    /// at 4 threads, `class = batch` in a workload without that class, and where
    /// only simulated rows are read on a described machine, a CPU or node no thread
    /// of the point runs on): an error now, rather than an `error` verdict after the
    /// run. Native CPUs are the host's, known only when it runs.
    fn rows_can_match(&self, ctx: &mut Ctx, w: &Written, p: &Point, modes: &[Mode]) -> bool {
        let lock_workload = !matches!(p.workload, Workload::Wakeup(_));
        let span_of = |key: &str| {
            w.ast
                .select
                .iter()
                .find(|(k, _)| k.name == key)
                .map_or(w.ast.span, |(k, v)| Span::new(k.span.start, v.span.end))
        };
        // Placed once, and only if a CPU or node is selected.
        let mut placed = None;
        for (key, v) in &w.mref.select {
            match (key.as_str(), v) {
                ("thread", Value::Int(t)) if lock_workload && *t >= i64::from(p.threads) => {
                    ctx.err(
                        self.scope.file,
                        span_of(key),
                        format!(
                            "point {} runs {} thread{}: `thread = {t}` selects none",
                            p.id,
                            p.threads,
                            if p.threads == 1 { "" } else { "s" }
                        ),
                    )
                    .set_label("no such thread")
                    .help = Some(format!(
                        "threads are numbered from 0: pick one below {}",
                        p.threads
                    ));
                    return false;
                }
                ("class", Value::Str(c)) => {
                    let classes: Vec<&str> = match &p.workload {
                        Workload::SingleLock { .. } => vec!["lock"],
                        Workload::DoubleLock { .. } => vec!["pass"],
                        Workload::Bulk { mix, .. } => mix.iter().map(|m| m.name.as_str()).collect(),
                        Workload::Wakeup(_) => continue,
                    };
                    if !classes.contains(&c.as_str()) {
                        ctx.err(
                            self.scope.file,
                            span_of(key),
                            format!(
                                "the `{}` workload of point {} has no class `{c}`",
                                p.workload.kind_name(),
                                p.id
                            ),
                        )
                        .set_label("no such class")
                        .help = Some(format!("its classes: {}", classes.join(", ")));
                        return false;
                    }
                }
                ("cpu" | "node" | "from_node" | "to_node", Value::Int(want)) => {
                    let used =
                        placed.get_or_insert_with(|| self.simulated_cpus_and_nodes(p, modes));
                    let Some((cpus, nodes)) = used.as_ref() else {
                        continue;
                    };
                    let (what, have) = if key == "cpu" {
                        ("CPU", cpus)
                    } else {
                        ("node", nodes)
                    };
                    if !have.contains(want) {
                        let list: Vec<String> = have.iter().map(|v| v.to_string()).collect();
                        let shown = if list.len() > 12 {
                            format!(
                                "{} … {} ({} in all)",
                                list[..6].join(", "),
                                list[list.len() - 3..].join(", "),
                                list.len()
                            )
                        } else {
                            list.join(", ")
                        };
                        ctx.err(
                            self.scope.file,
                            span_of(key),
                            format!(
                                "point {} is simulated with no thread on {what} {want}: `{key} = {want}` selects none",
                                p.id
                            ),
                        )
                        .set_label(if key == "cpu" { "no thread on this CPU" } else { "no thread on this node" })
                        .help = Some(format!("its threads' {what}s: {shown}"));
                        return false;
                    }
                }
                _ => {}
            }
        }
        true
    }

    /// The CPUs (their ids) and nodes the threads of `p` run on when the rows read are
    /// only simulated ones on a described machine; `None` where that is not known
    /// before the run (a native row, the `host` topology, a point that cannot be
    /// placed, a wake-up workload, whose rows are not its lock threads').
    fn simulated_cpus_and_nodes(
        &self,
        p: &Point,
        modes: &[Mode],
    ) -> Option<(BTreeSet<i64>, BTreeSet<i64>)> {
        if modes != [Mode::Sim] || matches!(p.workload, Workload::Wakeup(_)) {
            return None;
        }
        let map = self.scope.sim_cpus.as_ref()?;
        let slots = locklab_model::topology::place(&p.placement, map, p.threads).ok()?;
        let cpus = slots
            .iter()
            .map(|s| i64::from(map.cpus[s.cpu].os_id))
            .collect();
        let nodes = slots.iter().map(|s| i64::from(s.node)).collect();
        Some((cpus, nodes))
    }

    /// The baseline rule (`select::baseline`), with located errors.
    fn baseline_point(&self, ctx: &mut Ctx, w: &Written, p: &Point, lock: &str) -> Option<usize> {
        let query = BaselineQuery {
            lock,
            pinned: &w.mref.baseline_select,
        };
        let err = match select::baseline(self.scope.axes, self.points, p, &query) {
            Ok(b) => return Some(b),
            Err(e) => e,
        };
        // The hint names the baseline explicitly: `over tas[threads = 4]`, with the
        // pins already written and the axes that differ, at the values of `like`.
        let hint = |like: &Point, differ: &[String]| {
            let mut pins: Vec<String> = w
                .mref
                .baseline_select
                .iter()
                .map(|(k, v)| example(k, v))
                .collect();
            pins.extend(
                differ
                    .iter()
                    .filter(|a| !w.mref.baseline_select.iter().any(|(k, _)| k == *a))
                    .filter_map(|a| like.axes.get(a).map(|v| example(a, v))),
            );
            format!(
                "name the baseline explicitly, e.g. `over {lock}[{}]`",
                pins.join(", ")
            )
        };
        let (message, label, help) = match err {
            NoBaseline::NoLock => (
                format!("no point runs the baseline lock `{lock}`"),
                "never runs",
                "a `where` or a mode block removed every one of its points".to_string(),
            ),
            NoBaseline::NoMatch { nearest, differ } => (
                format!(
                    "no `{lock}` point is the baseline of point {}: the nearest differ in {}",
                    p.id,
                    differ.join(", ")
                ),
                "no baseline",
                hint(&self.points[nearest[0]], &differ),
            ),
            NoBaseline::Ambiguous { candidates, differ } => (
                format!(
                    "{} `{lock}` points could be the baseline of point {}: they differ in {}",
                    candidates.len(),
                    p.id,
                    differ.join(", ")
                ),
                "ambiguous baseline",
                hint(&self.points[candidates[0]], &differ),
            ),
        };
        ctx.err(self.scope.file, baseline_span(w), message)
            .set_label(label)
            .help = Some(help);
        None
    }
}

/// `over LOCK[...]` in the file, else the whole reference.
fn baseline_span(w: &Written) -> Span {
    w.ast.baseline.as_ref().map_or(w.ast.span, |b| b.span)
}

/// Resolve a claim's term: the one point its selection pins.
pub fn resolve_one(ctx: &mut Ctx, scope: &Scope, w: Written) -> Option<MetricRef> {
    let Some(r) = Resolver::new(scope) else {
        return Some(w.mref);
    };
    if r.spent() {
        return None;
    }
    let p = r.pinned(ctx, &w, None)?[0];
    let target = r.target(ctx, &w, p)?;
    Some(MetricRef { target, ..w.mref })
}

/// Resolve a trend over `axis` (a sweep axis, or `thread`, `cpu`, `node`) at the
/// `listed` values, or at every value. A value whose point does not run in the
/// selection's mode is left out; one without any point is an error.
pub fn resolve_trend(
    ctx: &mut Ctx,
    scope: &Scope,
    w: &Written,
    axis: &Ident,
    listed: &[Value],
) -> Option<TrendSeries> {
    let Some(r) = Resolver::new(scope) else {
        return Some(TrendSeries::default());
    };
    if r.spent() {
        return None;
    }
    let matched = r.pinned(ctx, w, Some(&axis.name))?;
    let step = |value: &Value, target: Target| {
        let mut metric = w.mref.clone();
        metric.select.push((axis.name.clone(), value.clone()));
        metric.target = target;
        TrendStep {
            value: value.clone(),
            metric,
        }
    };
    let Some(plan_axis) = scope.axes.iter().find(|a| a.name == axis.name) else {
        // A result dimension: one point, whose rows vary.
        let mut rows = w.rows();
        rows.push((axis.name.clone(), Value::Int(0)));
        if !check_table(ctx, scope.file, w.name(), &rows, |_| axis.span) {
            return None;
        }
        let target = r.target(ctx, w, matched[0])?;
        if listed.is_empty() {
            return Some(TrendSeries::Rows { target });
        }
        let steps = listed
            .iter()
            .map(|v| {
                let mut t = target.clone();
                t.rows.push((axis.name.clone(), v.clone()));
                step(v, t)
            })
            .collect();
        return Some(TrendSeries::Steps { steps });
    };
    let values = if listed.is_empty() {
        ascending(&plan_axis.values)
    } else {
        listed.to_vec()
    };
    // The first matched point at each value of the axis, found once.
    let mut at: BTreeMap<String, &Point> = BTreeMap::new();
    for p in &matched {
        if let Some(x) = p.axes.get(&axis.name) {
            at.entry(index_key(x)).or_insert(p);
        }
    }
    let mut steps = Vec::new();
    for v in &values {
        if let Some(p) = at.get(&index_key(v)) {
            steps.push(step(v, r.target(ctx, w, p)?));
            continue;
        }
        let mut sel = w.mref.select.clone();
        sel.retain(|(k, _)| k != "mode");
        sel.push((axis.name.clone(), v.clone()));
        if r.points.iter().any(|p| select::matches(p, &sel)) {
            continue; // runs, but not in the selection's mode
        }
        let at = example(&axis.name, v);
        ctx.err(
            scope.file,
            w.ast.span,
            format!("`{}` has no point at {at}", w.name()),
        )
        .set_label(format!("no point at {at}"))
        .help = Some(format!(
            "a `where` or a mode block removed it; list the values the trend runs over, e.g. `over {} [...]`",
            axis.name
        ));
        return None;
    }
    if steps.len() < 2 {
        let mode = w.mode().map_or("any", Mode::as_str);
        ctx.err(
            scope.file,
            axis.span,
            format!(
                "a trend over `{}` needs at least two values with a point in {mode} mode; it has {}",
                axis.name,
                steps.len()
            ),
        );
        return None;
    }
    Some(TrendSeries::Steps { steps })
}

/// A trend's default order: ascending when every value is a number (as the axis
/// lists them otherwise).
fn ascending(values: &[Value]) -> Vec<Value> {
    let mut v = values.to_vec();
    if v.iter().all(|x| x.as_f64().is_some()) {
        v.sort_by(|a, b| {
            a.as_f64()
                .unwrap_or(0.0)
                .total_cmp(&b.as_f64().unwrap_or(0.0))
        });
    }
    v
}

/// Resolve a plot: every point its selection matches, in plan order (for
/// `speedup`, all but the baseline lock's), each with its baseline.
pub fn resolve_plot(ctx: &mut Ctx, scope: &Scope, w: &Written) -> Option<Vec<Target>> {
    let Some(r) = Resolver::new(scope) else {
        return Some(Vec::new());
    };
    if r.spent() {
        return None;
    }
    let shown: Vec<&Point> = match scope.index.candidates(&w.mref.select) {
        Some(c) => c.iter().map(|&i| &r.points[i]).collect::<Vec<_>>(),
        None => r.points.iter().collect(),
    }
    .into_iter()
    .filter(|p| select::matches(p, &w.mref.select))
    .filter(|p| w.mref.baseline.as_ref() != Some(&p.lock.name))
    .collect();
    if shown.is_empty() {
        ctx.err(
            scope.file,
            w.ast.span,
            "this selection matches no point of the plan",
        )
        .set_label("nothing to plot")
        .help = Some(scope.apart());
        return None;
    }
    // One error is enough: the first point without a baseline.
    shown.into_iter().map(|p| r.target(ctx, w, p)).collect()
}
