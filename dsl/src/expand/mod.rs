//! An experiment block to a [`Plan`], in the order the parts depend on each other:
//! the sweep (`sweep`: axes, `zip`, `where`, `--set`), the run and its mode blocks
//! (`run`), the points (`points`: every combination in some mode, each resolved in
//! one step), then the claims and plots (`claims`, `plots`), whose metric
//! references are resolved to points, baselines, rows and modes (`refs`). Under
//! `--set`, the file is expanded as written first, so that what the narrowed sweep
//! leaves out is skipped rather than refused (`narrow`).

mod claims;
mod dims;
mod narrow;
mod plots;
mod points;
mod refs;
mod run;
mod sweep;
mod vacuous;

use crate::diag::{Diagnostic, Span};
use crate::resolve::{Ctx, Env, Obj};
use crate::syntax::{Experiment, Stmt};
use crate::LoadOptions;
use locklab_model::cost::{estimate_secs, Timing, MAX_CLAIMS, MAX_ESTIMATED_SECS, MAX_PLOTS};
use locklab_model::plan::{
    Axis, Mode, Plan, Point, RunSpec, SourceFile, Topology, PLAN_SCHEMA_VERSION,
};
use sha2::{Digest, Sha256};

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
    if opts.overrides.is_empty() {
        return expand(ctx, file, exp, opts, None);
    }
    // The experiment as written, quietly (its errors, if any, are the narrowed
    // expansion's too): what `--set` leaves out of it is skipped, not refused.
    let (diags, pseudo) = (ctx.diags.len(), ctx.pseudo.len());
    let as_written = LoadOptions {
        overrides: Vec::new(),
        allow_huge: true,
        ..opts.clone()
    };
    let whole = expand(ctx, file, exp, &as_written, None);
    ctx.diags.truncate(diags);
    ctx.pseudo.truncate(pseudo);
    let narrowing = whole.map(|w| narrow::Narrowing::new(w, &opts.overrides));
    expand(ctx, file, exp, opts, narrowing.as_ref())
}

fn expand(
    ctx: &mut Ctx,
    file: usize,
    exp: &Experiment,
    opts: &LoadOptions,
    narrowing: Option<&narrow::Narrowing>,
) -> Option<Plan> {
    let mut entries = Vec::new();
    let mut expects = Vec::new();
    let mut plot_stmts = Vec::new();
    for s in &exp.body {
        match s {
            Stmt::Entry(e) => entries.push(e),
            Stmt::Expect(e) => expects.push(e),
            Stmt::Plot(p) => plot_stmts.push(p),
        }
    }
    let what = format!("experiment `{}`", exp.name.name);
    let mut o = Obj::new(file, exp.name.span, &what);
    o.given_unparsed(&exp.unparsed_keys);
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
    let topology = match o.get("topology") {
        None => {
            ctx.missing(&o, "topology", "host");
            None
        }
        Some(v) => ctx.topology_ref(file, v, &exp.name),
    };
    ok &= topology.is_some();
    let cpus = match &topology {
        Some(Topology::Machine(m)) => Some(m.cpus()),
        _ => None,
    };

    let (sweep, sweep_ok) = sweep::read(ctx, file, o.prop("sweep"), &opts.overrides);
    ok &= sweep_ok;
    let (run, modes) = match o.get("run") {
        None => {
            ctx.missing(&o, "run", "{ modes = [sim], duration = 200ms }");
            (None, Vec::new())
        }
        Some(v) => run::read(ctx, file, v, &sweep.axes, &opts.overrides),
    };
    ok &= run.is_some();

    let (combos, combos_ok) = points::enumerate(ctx, &sweep, &modes, narrowing);
    let (inputs, inputs_ok) = points::Inputs::read(ctx, &o, &sweep, master_seed.unwrap_or(0), cpus);
    let (points, points_ok) = points::resolve(ctx, &inputs, &sweep, combos);
    ok &= combos_ok && inputs_ok && points_ok;

    // Plan axes: every value an axis takes in some mode.
    let mut plan_axes: Vec<Axis> = sweep
        .axes
        .iter()
        .map(|a| Axis {
            name: a.name.name.clone(),
            values: a.values.clone(),
            zip_group: a.zip,
        })
        .collect();
    for ms in &modes {
        for (ai, _, values) in &ms.overrides {
            // Values are told apart by label (what a point's id holds) in a set: axes
            // may be long.
            let mut seen: std::collections::BTreeSet<String> =
                plan_axes[*ai].values.iter().map(|v| v.label()).collect();
            for v in values {
                if seen.insert(v.label()) {
                    plan_axes[*ai].values.push(v.clone());
                }
            }
        }
    }

    let scope = refs::Scope {
        file,
        axes: &plan_axes,
        broken: sweep
            .axes
            .iter()
            .filter(|a| a.broken)
            .map(|a| a.name.name.clone())
            .collect(),
        sweep_unparsed: exp.unparsed_keys.iter().any(|k| k == "sweep"),
        // References resolve against the complete sweep only.
        points: (run.is_some() && combos_ok && points_ok && !points.is_empty())
            .then_some(points.as_slice()),
        lock_axis: inputs.lock_axis(),
        sim_cpus: match &topology {
            Some(Topology::Machine(m)) => Some(locklab_model::topology::CpuMap::from_machine(m)),
            _ => None,
        },
        index: refs::PointIndex::new(&points),
        budget: std::cell::Cell::new(refs::MAX_RESOLVE_WORK),
        exhausted: std::cell::Cell::new(false),
        narrowing,
    };
    // Each claim and plot is resolved against every point: their number is bounded
    // so that checking stays near linear in the file.
    let claim_spans: Vec<Span> = expects
        .iter()
        .flat_map(|e| e.claims.iter().map(|c| c.span))
        .collect();
    let plot_spans: Vec<Span> = plot_stmts.iter().map(|p| p.span).collect();
    for (spans, max, what) in [
        (&claim_spans, MAX_CLAIMS, "claims"),
        (&plot_spans, MAX_PLOTS, "plots"),
    ] {
        if let Some(&extra) = spans.get(max) {
            ctx.err(
                file,
                extra,
                format!("an experiment has at most {max} {what}"),
            )
            .set_label("one too many")
            .help = Some("split the experiment".into());
            return None;
        }
    }
    let (claims, claims_ok) = claims::claims(ctx, &scope, &expects);
    ok &= claims_ok;
    let mut plots = Vec::new();
    for (i, p) in plot_stmts.iter().enumerate() {
        let told = ctx.diags.len();
        match plots::plot(ctx, &scope, p) {
            Some(pl) => plots.push(pl),
            None => match scope.narrowed_away_plot(i) {
                Some(skipped) => {
                    ctx.diags.truncate(told);
                    let why = skipped.skipped.as_deref().unwrap_or_default();
                    let span = ctx.trimmed(file, p.span);
                    ctx.warn(file, span, format!("this plot is not drawn: {why}"))
                        .set_label("narrowed away");
                    plots.push(skipped);
                }
                None => ok = false,
            },
        }
    }

    if let (Some(r), false) = (&run, opts.allow_huge) {
        ok &= within_budget(ctx, &o, r, &points, opts.quick);
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
        run: RunSpec {
            // Only `--set` can leave a mode without points (said): it runs nothing.
            modes: run
                .as_ref()?
                .modes
                .iter()
                .copied()
                .filter(|m| points.iter().any(|p| p.modes.contains(m)))
                .collect(),
            ..run?
        },
        axes: plan_axes,
        points,
        claims,
        plots,
        sources,
    })
}

/// The run's estimated work in each mode (`locklab_model::cost`) stays under the
/// cap, or the `run` block is told so.
fn within_budget(ctx: &mut Ctx, o: &Obj, run: &RunSpec, points: &[Point], quick: bool) -> bool {
    let t = Timing::of(run, quick);
    for &mode in &run.modes {
        let secs = estimate_secs(points, t, mode);
        if secs > MAX_ESTIMATED_SECS {
            let span = o.prop("run").map_or(o.span, |p| p.key.span);
            let how = match mode {
                Mode::Sim => "simulated on one core",
                Mode::Native => "natively",
            };
            ctx.err(
                o.file,
                span,
                format!(
                    "this run would take about {:.0} h {how}, more than the {:.0} h allowed",
                    secs / 3600.0,
                    MAX_ESTIMATED_SECS / 3600.0
                ),
            )
            .set_label(format!(
                "{} points × {} repetitions",
                points.len(),
                t.repetitions
            ))
            .help = Some(
                "lower `repetitions`, `duration` or the points, or pass --allow-huge to run it anyway"
                    .into(),
            );
            return false;
        }
    }
    true
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    let d = Sha256::digest(bytes);
    d.iter().map(|b| format!("{b:02x}")).collect()
}
