//! The locklab experiment language.
//!
//! [`load`] reads an experiment file (and everything it `use`s) through a
//! [`Loader`], checks it, and expands it into a [`plan::Plan`]: every sweep point
//! with its lock, workload, placement, thread count and seed, every claim and plot
//! with each metric reference resolved to the points it reads, units normalised to
//! ns, bytes and Hz. [`render`] shows the diagnostics.
//!
//! ```
//! use locklab_dsl::{load, render, LoadOptions, MemLoader};
//! let files = MemLoader(
//!     [(
//!         "hot.lab".to_string(),
//!         r#"
//! topology box { sockets = 1, cores = 2, transfer { llc = 40ns } }
//! workload hot = single { critical = 100ns, outside = 200ns }
//! experiment hot {
//!   topology = box
//!   workload = hot
//!   sweep { lock = [ticket, mcs], threads = 1..2 }
//!   run { modes = [sim], duration = 10ms }
//!   expect bypass_max[lock = ticket, threads = 2] <= 1
//! }
//! "#
//!         .to_string(),
//!     )]
//!     .into_iter()
//!     .collect(),
//! );
//! let checked = load("hot.lab", &files, &LoadOptions::default());
//! assert!(!checked.has_errors(), "{}", render(&checked.diagnostics, &checked.sources, false));
//! let plan = checked.plan.unwrap();
//! assert_eq!(plan.points.len(), 4);
//! assert_eq!(plan.points[0].id, "lock=ticket,threads=1");
//! ```
//!
//! Architecture Invariant: this crate does no IO of its own; files come through a
//! loader. Its output is the plain-data [`plan::Plan`]; nothing downstream sees
//! spans or syntax.
//!
//! Architecture Invariant: loading never panics and never stops at the first
//! problem: every diagnostic found is returned.

pub mod diag;
mod expand;
mod loader;
mod resolve;
mod syntax;
mod units;

pub use diag::{Diagnostic, Label, Severity, Span};
pub use loader::{
    FileId, FileKind, FsLoader, Loaded, Loader, MemLoader, ReadError, MAX_MATRIX_BYTES,
    MAX_SOURCE_BYTES,
};
pub use units::value_text;

use locklab_model::plan::{self, Plan, Value};
use resolve::{Ctx, Def};
use std::collections::BTreeMap;
use syntax::{Item, Val};

/// The language reference (`locklab help language`).
pub const LANGUAGE_REFERENCE: &str = include_str!("../../docs/language.md");

pub use locklab_model::plan::{DIMENSIONS, ROW_DIMENSIONS};

/// Comma-separated language values, as `--set` takes them (`10ms, 1ms`), to plan
/// values: units normalised, names as strings.
pub fn parse_values(text: &str) -> Result<Vec<Value>, Box<Diagnostic>> {
    const FILE: &str = "value";
    syntax::parse_set_values(FILE, text, 0)?
        .iter()
        .map(|v| {
            units::to_plan_value(v).map_err(|(message, help)| {
                Box::new(Diagnostic::error(FILE, v.span, message).with_help_opt(help))
            })
        })
        .collect()
}

#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// `--set axis=value[,value...]`: replaces that axis's values (language values,
    /// units allowed).
    pub overrides: Vec<(String, String)>,
    /// The run will use the `quick { ... }` durations (for the estimate of its work).
    pub quick: bool,
    /// Accept a run estimated to take longer than
    /// [`locklab_model::cost::MAX_ESTIMATED_SECS`] in a mode.
    pub allow_huge: bool,
}

#[derive(Debug, Clone)]
pub struct Checked {
    /// `None` iff there is an error, or the file is a library (no experiment).
    pub plan: Option<Plan>,
    /// Errors and warnings, sorted by file (load order) and position.
    pub diagnostics: Vec<Diagnostic>,
    /// Every file read, in load order, plus pseudo files for command-line values;
    /// what [`render`] needs.
    pub sources: Vec<(String, String)>,
}

impl Checked {
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }
    /// True when the file checked cleanly but runs nothing: a library of
    /// topologies, locks, workloads and placements without an `experiment`.
    pub fn is_library(&self) -> bool {
        self.plan.is_none() && !self.has_errors()
    }
}

pub use diag::render;

/// Resolve `rel` against the directory of `base`, normalising `.` and `..`.
pub fn resolve_path(base: &str, rel: &str) -> String {
    let joined = if rel.starts_with('/') {
        rel.to_string()
    } else {
        match base.rfind('/') {
            Some(i) => format!("{}/{}", &base[..i], rel),
            None => rel.to_string(),
        }
    };
    let absolute = joined.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for p in joined.split('/') {
        match p {
            "" | "." => {}
            ".." => {
                if matches!(parts.last(), Some(l) if *l != "..") {
                    parts.pop();
                } else if !absolute {
                    parts.push("..");
                }
            }
            _ => parts.push(p),
        }
    }
    let s = parts.join("/");
    if absolute {
        format!("/{s}")
    } else {
        s
    }
}

/// Load, check and expand `path`.
pub fn load(path: &str, loader: &dyn Loader, opts: &LoadOptions) -> Checked {
    let mut ctx = Ctx {
        loader,
        files: Vec::new(),
        pseudo: Vec::new(),
        diags: Vec::new(),
        topologies: BTreeMap::new(),
        locks: BTreeMap::new(),
        workloads: BTreeMap::new(),
        placements: BTreeMap::new(),
        broken: Default::default(),
        loaded: BTreeMap::new(),
        source_bytes: 0,
    };
    let mut experiment = None;
    let mut stack = Vec::new();
    let main_ok = load_file(&mut ctx, path, None, &mut stack, &mut experiment);
    let plan = if !main_ok {
        None
    } else {
        check_definitions(&mut ctx);
        match experiment {
            None => {
                for (k, _) in &opts.overrides {
                    let p = format!("--set {k}");
                    ctx.pseudo.push((p.clone(), k.clone()));
                    ctx.diags.push(
                        Diagnostic::error(
                            &p,
                            Span::new(0, k.len()),
                            format!("cannot set `{k}`: the file has no experiment"),
                        )
                        .with_label("no sweep to override"),
                    );
                }
                None
            }
            Some((file, exp)) => expand::experiment(&mut ctx, file, &exp, opts),
        }
    };
    finish(ctx, plan)
}

fn finish(mut ctx: Ctx, plan: Option<Plan>) -> Checked {
    // One diagnostic per (file, span, message): point-by-point checks repeat.
    let order: BTreeMap<String, usize> = ctx
        .files
        .iter()
        .chain(ctx.pseudo.iter())
        .enumerate()
        .map(|(i, f)| (f.0.clone(), i))
        .collect();
    let mut seen = std::collections::BTreeSet::new();
    ctx.diags
        .retain(|d| seen.insert((d.file.clone(), d.span, d.message.clone())));
    ctx.diags.sort_by_key(|d| {
        (
            order.get(&d.file).copied().unwrap_or(usize::MAX),
            d.span.start,
            d.span.end,
        )
    });
    let has_errors = ctx.diags.iter().any(Diagnostic::is_error);
    let mut sources = ctx.files;
    sources.extend(ctx.pseudo);
    Checked {
        plan: if has_errors { None } else { plan },
        diagnostics: ctx.diags,
        sources,
    }
}

/// The most bytes the experiment and every file it `use`s may hold together.
pub const MAX_TOTAL_SOURCE_BYTES: u64 = 8 << 20;

/// Read and parse one file and, depth first, everything it `use`s. Returns false
/// when the file itself could not be read. `stack` holds the files being read
/// (identity and path), to tell an include cycle from a diamond.
fn load_file(
    ctx: &mut Ctx,
    path: &str,
    from: Option<(usize, Span)>,
    stack: &mut Vec<(FileId, String)>,
    experiment: &mut Option<(usize, syntax::Experiment)>,
) -> bool {
    let kind = match from {
        Some(_) => FileKind::Library,
        None => FileKind::Experiment,
    };
    let loaded = ctx.loader.read(path, kind).and_then(|l| {
        if ctx.source_bytes + l.text.len() as u64 > MAX_TOTAL_SOURCE_BYTES
            && !ctx.loaded.contains_key(&l.id)
        {
            Err(ReadError::from(format!(
                "the experiment and its `use`d files would exceed {} MiB in all",
                MAX_TOTAL_SOURCE_BYTES >> 20
            )))
        } else {
            Ok(l)
        }
    });
    let loaded = match loaded {
        Ok(l) => l,
        Err(e) => {
            let message = format!("cannot read `{path}`: {}", e.reason);
            match from {
                Some((f, span)) => {
                    let d = ctx.err(f, span, message).set_label("included here");
                    d.help = e.help;
                }
                None => ctx
                    .diags
                    .push(Diagnostic::error(path, Span::default(), message).with_help_opt(e.help)),
            }
            return false;
        }
    };
    if let Some(pos) = stack.iter().position(|(id, _)| *id == loaded.id) {
        let (f, span) = from.expect("the first file is not on the stack yet");
        let mut cycle: Vec<&str> = stack[pos..].iter().map(|(_, p)| p.as_str()).collect();
        cycle.push(path);
        let cycle = cycle.join(" -> ");
        ctx.err(f, span, format!("include cycle: {cycle}"))
            .set_label("closes the cycle")
            .help = Some("a library must not `use` a file that uses it".into());
        return true;
    }
    if ctx.loaded.contains_key(&loaded.id) {
        // Already loaded through another path (a diamond): nothing to do.
        return true;
    }
    let file = ctx.files.len();
    ctx.loaded.insert(loaded.id, file);
    ctx.source_bytes += loaded.text.len() as u64;
    let text = loaded.text;
    ctx.files.push((path.to_string(), text.clone()));
    stack.push((loaded.id, path.to_string()));
    let parsed = syntax::parse_file(path, &text);
    ctx.diags.extend(parsed.diagnostics);
    ctx.broken.extend(parsed.broken);
    for item in parsed.items {
        match item {
            Item::Use { path: rel, span } => {
                if !rel.ends_with(".lab") {
                    ctx.err(
                        file,
                        span,
                        format!("`use` names a `.lab` file, not `{rel}`"),
                    )
                    .set_label("not an experiment-language file")
                    .help = Some(
                        "libraries are `.lab` files of topologies, locks, workloads and placements"
                            .into(),
                    );
                    continue;
                }
                let target = resolve_path(path, &rel);
                load_file(ctx, &target, Some((file, span)), stack, experiment);
            }
            Item::Topology { name, value, .. } => define(ctx, file, "topology", name, value),
            Item::Def {
                kind, name, value, ..
            } => define(ctx, file, kind.word(), name, value),
            Item::Experiment(exp) => {
                if stack.len() > 1 {
                    ctx.err(file, exp.name.span, format!("experiment `{}` in an included file", exp.name.name))
                        .set_label("only the file given to locklab may hold an experiment")
                        .help = Some("move it to its own file; libraries hold topologies, locks, workloads and placements".into());
                } else if let Some((f0, first)) = experiment {
                    let loc = ctx.loc(*f0, first.name.span);
                    ctx.err(
                        file,
                        exp.name.span,
                        format!("a second experiment `{}` in one file", exp.name.name),
                    )
                    .set_label("second experiment")
                    .help = Some(format!(
                        "the first is at {loc}; give each experiment its own file"
                    ));
                } else {
                    *experiment = Some((file, exp));
                }
            }
        }
    }
    stack.pop();
    true
}

fn define(ctx: &mut Ctx, file: usize, kind: &str, name: syntax::Ident, value: Val) {
    let table = match kind {
        "topology" => &ctx.topologies,
        "lock" => &ctx.locks,
        "workload" => &ctx.workloads,
        _ => &ctx.placements,
    };
    if let Some(prev) = table.get(&name.name) {
        let (pf, ps) = (prev.file, prev.name.span);
        let loc = ctx.loc(pf, ps);
        let same_file = pf == file;
        let d = ctx
            .err(
                file,
                name.span,
                format!("{kind} `{}` is defined twice", name.name),
            )
            .set_label("defined again here");
        if same_file {
            d.labels.push(Label {
                span: ps,
                message: "first defined here".into(),
            });
        } else {
            d.help = Some(format!("first defined at {loc}"));
        }
        return;
    }
    if kind == "lock" {
        ctx.check_lock_name(file, &name.name, name.span, &value);
    }
    let def = Def {
        file,
        name: name.clone(),
        value,
    };
    match kind {
        "topology" => ctx.topologies.insert(name.name, def),
        "lock" => ctx.locks.insert(name.name, def),
        "workload" => ctx.workloads.insert(name.name, def),
        _ => ctx.placements.insert(name.name, def),
    };
}

/// Check every definition on its own (values that depend on sweep axes are
/// checked again per point).
fn check_definitions(ctx: &mut Ctx) {
    let env = resolve::Env::Library;
    for def in ctx.topologies.values().cloned().collect::<Vec<_>>() {
        ctx.topology(&def);
    }
    for def in ctx.locks.values().cloned().collect::<Vec<_>>() {
        ctx.lock_algo(
            env,
            def.file,
            &def.value,
            &format!("lock `{}`", def.name.name),
        );
    }
    for def in ctx.workloads.values().cloned().collect::<Vec<_>>() {
        ctx.workload(
            env,
            def.file,
            &def.value,
            &format!("workload `{}`", def.name.name),
        );
    }
    for def in ctx.placements.values().cloned().collect::<Vec<_>>() {
        ctx.placement(
            env,
            def.file,
            &def.value,
            &format!("placement `{}`", def.name.name),
        );
    }
}

/// A plain-text table of the plan's points (one line per point).
pub fn print_plan_table(plan: &Plan) -> String {
    let mut rows: Vec<Vec<String>> = vec![vec![
        "#".into(),
        "id".into(),
        "modes".into(),
        "threads".into(),
        "lock".into(),
        "workload".into(),
        "placement".into(),
        "seed".into(),
    ]];
    for p in &plan.points {
        let modes: Vec<&str> = if p.modes.is_empty() {
            plan.run.modes.iter().map(|m| m.as_str()).collect()
        } else {
            p.modes.iter().map(|m| m.as_str()).collect()
        };
        let placement = match &p.placement.policy {
            plan::PlacementKind::Compact => "compact".to_string(),
            plan::PlacementKind::Scatter => "scatter".to_string(),
            plan::PlacementKind::WillItScale => "will_it_scale".to_string(),
            plan::PlacementKind::List(c) => format!("cpus {c:?}"),
        };
        let placement = match &p.placement.virtual_nodes {
            Some(n) => format!("{placement} nodes {n:?}"),
            None => placement,
        };
        rows.push(vec![
            p.index.to_string(),
            p.id.clone(),
            modes.join("+"),
            p.threads.to_string(),
            format!("{} ({})", p.lock.name, p.lock.algo.kind_name()),
            p.workload.kind_name().to_string(),
            placement,
            format!("{:016x}", p.seed),
        ]);
    }
    let widths: Vec<usize> = (0..rows[0].len())
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for r in &rows {
        let line: Vec<String> = r
            .iter()
            .zip(&widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out.push_str(&format!(
        "{} points, {} claims, {} plots\n",
        plan.points.len(),
        plan.claims.len(),
        plan.plots.len()
    ));
    out
}
