//! Definitions to plan data: topologies, locks, workloads, placements, and the
//! typed readers (durations, counts, probabilities, distributions) they share.
//!
//! Every reader returns `Option`: `None` means "not usable", and a diagnostic has
//! been recorded unless the value depends on a sweep axis that is not known yet
//! (a library definition checked on its own).

use crate::diag::{did_you_mean, Diagnostic, Span};
use crate::syntax::{Entry, Ident, Prop, Val, ValKind};
use crate::units::{self, kind_noun, Dim, Scalar};
use locklab_model::plan::*;
use std::collections::BTreeMap;

pub const LOCK_ALGOS: &[&str] = &[
    "tas",
    "ttas",
    "ticket",
    "mcs",
    "clh",
    "qspinlock",
    "cna",
    "std",
    "parking_lot",
    "pthread",
];
pub const WORKLOAD_KINDS: &[&str] = &["single", "double", "bulk", "wakeup"];
pub const PLACEMENT_POLICIES: &[&str] = &["compact", "scatter", "will_it_scale", "list"];

/// The longest duration a value may have (2^53 ns, about 104 days): sums and
/// conversions to f64 downstream stay exact and cannot overflow.
pub const MAX_DURATION_NS: u64 = 1 << 53;

/// File indices from here on name pseudo files (command-line values), so that real
/// files read later (a matrix CSV) do not shift them.
pub const PSEUDO_BASE: usize = 1 << 40;

/// A named definition (`lock cna15 = cna { ... }`) and the file it came from.
#[derive(Debug, Clone)]
pub struct Def {
    pub file: usize,
    pub name: Ident,
    pub value: Val,
}

/// How `$axis` references resolve while reading a value.
#[derive(Clone, Copy)]
pub enum Env<'a> {
    /// A definition checked on its own: references are not known yet (no error).
    Library,
    /// References are not allowed here (a topology, a run block).
    NoAxes,
    /// One sweep point: axis name → (value as written, file of the sweep).
    Point(&'a BTreeMap<String, (Val, usize)>),
}

pub struct Ctx<'l> {
    pub loader: &'l dyn crate::Loader,
    /// Real files in load order: (path, text). Diagnostics name them by index.
    pub files: Vec<(String, String)>,
    /// Pseudo files (command-line values) for rendering only.
    pub pseudo: Vec<(String, String)>,
    pub diags: Vec<Diagnostic>,
    pub topologies: BTreeMap<String, Def>,
    pub locks: BTreeMap<String, Def>,
    pub workloads: BTreeMap<String, Def>,
    pub placements: BTreeMap<String, Def>,
    /// Definitions that did not parse, by (kind, name): not reported again.
    pub broken: std::collections::BTreeSet<(String, String)>,
}

/// The properties of one `{ ... }` block, checked for unknown and repeated keys.
pub struct Obj<'v> {
    pub file: usize,
    pub span: Span,
    pub what: String,
    props: BTreeMap<String, &'v Prop>,
    multi: Vec<&'v Prop>,
    /// Keys that were not recognised (a missing key they resemble is not reported).
    unknown: Vec<String>,
}

impl<'v> Obj<'v> {
    pub fn new(file: usize, span: Span, what: &str) -> Obj<'v> {
        Obj {
            file,
            span,
            what: what.to_string(),
            props: BTreeMap::new(),
            multi: Vec::new(),
            unknown: Vec::new(),
        }
    }
    pub fn get(&self, key: &str) -> Option<&'v Val> {
        self.props.get(key).map(|p| &p.value)
    }
    pub fn prop(&self, key: &str) -> Option<&'v Prop> {
        self.props.get(key).copied()
    }
    pub fn repeated(&self) -> &[&'v Prop] {
        &self.multi
    }
}

impl<'l> Ctx<'l> {
    fn file_entry(&self, file: usize) -> Option<&(String, String)> {
        if file >= PSEUDO_BASE {
            self.pseudo.get(file - PSEUDO_BASE)
        } else {
            self.files.get(file)
        }
    }

    pub fn path(&self, file: usize) -> String {
        self.file_entry(file)
            .map(|f| f.0.clone())
            .unwrap_or_default()
    }

    pub fn text(&self, file: usize) -> &str {
        self.file_entry(file).map_or("", |f| f.1.as_str())
    }

    /// Register a pseudo file (command-line text) and return its index.
    pub fn add_pseudo(&mut self, path: String, text: String) -> usize {
        self.pseudo.push((path, text));
        PSEUDO_BASE + self.pseudo.len() - 1
    }

    pub fn err(&mut self, file: usize, span: Span, msg: impl Into<String>) -> &mut Diagnostic {
        let path = self.path(file);
        self.diags.push(Diagnostic::error(&path, span, msg));
        self.diags.last_mut().expect("just pushed")
    }

    pub fn warn(&mut self, file: usize, span: Span, msg: impl Into<String>) -> &mut Diagnostic {
        let path = self.path(file);
        self.diags.push(Diagnostic::warning(&path, span, msg));
        self.diags.last_mut().expect("just pushed")
    }

    /// `file:line:col` of a span, for help texts that point into another file.
    pub fn loc(&self, file: usize, span: Span) -> String {
        let (l, c) = crate::diag::line_col(self.text(file), span.start);
        format!("{}:{l}:{c}", self.path(file))
    }

    /// Open a block: `allowed` keys once each, `repeatable` keys any number of times.
    pub fn obj<'v>(
        &mut self,
        file: usize,
        val: &'v Val,
        what: &str,
        allowed: &[&str],
        repeatable: &[&str],
    ) -> Obj<'v> {
        let mut o = Obj {
            file,
            span: val.span,
            what: what.to_string(),
            props: BTreeMap::new(),
            multi: Vec::new(),
            unknown: Vec::new(),
        };
        let ValKind::Record { entries, .. } = &val.kind else {
            return o;
        };
        self.obj_entries(&mut o, entries.iter(), allowed, repeatable);
        o
    }

    pub fn obj_entries<'v>(
        &mut self,
        o: &mut Obj<'v>,
        entries: impl Iterator<Item = &'v Entry>,
        allowed: &[&str],
        repeatable: &[&str],
    ) {
        let file = o.file;
        for e in entries {
            match e {
                Entry::Where(c) => {
                    let what = o.what.clone();
                    self.err(file, c.span(), format!("`where` is not allowed in {what}"))
                        .set_label("not allowed here")
                        .help = Some(
                        "`where` filters belong in `sweep { ... }` or in a run's mode block".into(),
                    );
                }
                Entry::Prop(p) => {
                    let k = p.key.name.as_str();
                    if repeatable.contains(&k) {
                        o.multi.push(p);
                    } else if !allowed.contains(&k) {
                        o.unknown.push(k.to_string());
                        let help = did_you_mean(k, allowed.iter().chain(repeatable).copied());
                        let what = o.what.clone();
                        let d = self
                            .err(
                                file,
                                p.key.span,
                                format!("unknown property `{k}` in {what}"),
                            )
                            .set_label("unknown property");
                        d.help = help;
                    } else if let Some(first) = o.props.get(k) {
                        let first = first.key.span;
                        self.err(file, p.key.span, format!("`{k}` is given twice"))
                            .set_label("given again here")
                            .labels
                            .push(crate::diag::Label {
                                span: first,
                                message: "first given here".into(),
                            });
                    } else {
                        o.props.insert(k.to_string(), p);
                    }
                }
            }
        }
    }

    pub fn missing(&mut self, o: &Obj, key: &str, example: &str) {
        if o.unknown
            .iter()
            .any(|u| crate::diag::suggest(u, [key]).is_some())
        {
            // `critcal = ...` was already reported with "did you mean `critical`?".
            return;
        }
        let what = o.what.clone();
        self.err(o.file, o.span, format!("{what} is missing `{key}`"))
            .set_label(format!("needs `{key}`"))
            .help = Some(format!("add `{key} = {example}`"));
    }

    // -----------------------------------------------------------------------
    // Typed readers

    /// Follow `$axis` to the value the current point gives it.
    pub fn deref(&mut self, env: Env, file: usize, v: &Val) -> Option<(Val, usize)> {
        let ValKind::AxisRef(name) = &v.kind else {
            return Some((v.clone(), file));
        };
        match env {
            Env::Library => None,
            Env::NoAxes => {
                self.err(
                    file,
                    v.span,
                    format!(
                        "`${name}` cannot be used here: this value cannot vary with a sweep axis"
                    ),
                )
                .set_label("sweep axis reference");
                None
            }
            Env::Point(axes) => match axes.get(name) {
                Some((val, f)) => Some((val.clone(), *f)),
                None => {
                    let help = did_you_mean(name, axes.keys().map(|s| s.as_str()));
                    let d = self
                        .err(file, v.span, format!("unknown sweep axis `${name}`"))
                        .set_label("no such axis");
                    d.help = help.or(Some(
                        "declare it in the experiment's `sweep { ... }`".into(),
                    ));
                    None
                }
            },
        }
    }

    fn mismatch(&mut self, file: usize, v: &Val, what: &str, expected: &str, help: Option<&str>) {
        let found = kind_noun(&v.kind);
        let d = self
            .err(
                file,
                v.span,
                format!("{what} expects {expected}, found {found}"),
            )
            .set_label(format!("expected {expected}"));
        d.help = help.map(str::to_string);
    }

    pub fn scalar(
        &mut self,
        env: Env,
        file: usize,
        v: &Val,
        what: &str,
    ) -> Option<(Scalar, Val, usize)> {
        let (v, file) = self.deref(env, file, v)?;
        match &v.kind {
            ValKind::Num { text, unit } => {
                match units::number(text, unit.as_ref().map(|u| u.name.as_str())) {
                    Ok(s) => Some((s, v.clone(), file)),
                    Err((msg, help)) => {
                        let span = unit
                            .as_ref()
                            .filter(|_| msg.starts_with("unknown unit"))
                            .map_or(v.span, |u| u.span);
                        let d = self.err(file, span, msg);
                        d.help = help;
                        None
                    }
                }
            }
            ValKind::Fraction { num, den } => match units::fraction(num, den) {
                Ok(f) => Some((Scalar::Float(f), v.clone(), file)),
                Err((msg, _)) => {
                    self.err(file, v.span, msg);
                    None
                }
            },
            _ => {
                self.mismatch(file, &v, what, "a number", None);
                None
            }
        }
    }

    fn dim_value(&mut self, env: Env, file: usize, v: &Val, what: &str, dim: Dim) -> Option<u64> {
        let (s, v, file) = self.scalar(env, file, v, what)?;
        match s {
            Scalar::Unit(Dim::Duration, n) if dim == Dim::Duration && n > MAX_DURATION_NS => {
                self.err(
                    file,
                    v.span,
                    format!(
                        "{what} is too long (at most {} days)",
                        MAX_DURATION_NS / 86_400_000_000_000
                    ),
                )
                .set_label("too long");
                None
            }
            Scalar::Unit(d, n) if d == dim => Some(n),
            Scalar::Int(0) => Some(0),
            _ => {
                let (example, units) = match dim {
                    Dim::Duration => ("`10ms`", "ns, us, ms or s"),
                    Dim::Size => ("`128KiB`", "B, KiB, MiB or GiB"),
                    Dim::Freq => ("`2.5GHz`", "Hz, kHz, MHz or GHz"),
                    Dim::Percent => ("`5%`", "%"),
                };
                let help = if matches!(s, Scalar::Int(_) | Scalar::Float(_)) {
                    format!("add a unit: {units}")
                } else {
                    format!("write {} such as {example}", dim.noun())
                };
                self.mismatch(file, &v, what, dim.noun(), Some(&help));
                None
            }
        }
    }

    pub fn duration(&mut self, env: Env, file: usize, v: &Val, what: &str) -> Option<u64> {
        self.dim_value(env, file, v, what, Dim::Duration)
    }
    pub fn size(&mut self, env: Env, file: usize, v: &Val, what: &str) -> Option<u64> {
        self.dim_value(env, file, v, what, Dim::Size)
    }
    pub fn freq(&mut self, env: Env, file: usize, v: &Val, what: &str) -> Option<u64> {
        self.dim_value(env, file, v, what, Dim::Freq)
    }

    /// A whole number in `min..=u32::MAX`.
    pub fn count(&mut self, env: Env, file: usize, v: &Val, what: &str, min: u32) -> Option<u32> {
        let (s, v, file) = self.scalar(env, file, v, what)?;
        match s {
            Scalar::Int(i) if i >= i64::from(min) && i <= i64::from(u32::MAX) => Some(i as u32),
            Scalar::Int(i) if i < i64::from(min) => {
                self.err(
                    file,
                    v.span,
                    format!("{what} must be at least {min}, found {i}"),
                )
                .set_label(format!("at least {min}"));
                None
            }
            Scalar::Int(i) => {
                self.err(file, v.span, format!("{what} is too large ({i})"));
                None
            }
            _ => {
                self.mismatch(file, &v, what, "a whole number", None);
                None
            }
        }
    }

    pub fn u64_value(&mut self, env: Env, file: usize, v: &Val, what: &str) -> Option<u64> {
        // Seeds use the whole u64 range, beyond i64.
        if let ValKind::Num { text, unit: None } = &v.kind {
            if let Ok(n) = text.replace('_', "").parse::<u64>() {
                return Some(n);
            }
        }
        let (s, v, file) = self.scalar(env, file, v, what)?;
        match s {
            Scalar::Int(i) if i >= 0 => Some(i as u64),
            Scalar::Int(i) => {
                self.err(
                    file,
                    v.span,
                    format!("{what} must not be negative, found {i}"),
                );
                None
            }
            _ => {
                self.mismatch(file, &v, what, "a whole number", None);
                None
            }
        }
    }

    /// A plain number, fraction or percentage within `lo..=hi`.
    pub fn real(
        &mut self,
        env: Env,
        file: usize,
        v: &Val,
        what: &str,
        lo: f64,
        hi: f64,
    ) -> Option<f64> {
        let (s, v, file) = self.scalar(env, file, v, what)?;
        let f = match s {
            Scalar::Int(i) => i as f64,
            Scalar::Float(f) | Scalar::Percent(f) => f,
            Scalar::Unit(..) => {
                self.mismatch(file, &v, what, "a plain number", None);
                return None;
            }
        };
        if !(lo..=hi).contains(&f) {
            self.err(
                file,
                v.span,
                format!("{what} must lie in [{lo}, {hi}], found {f}"),
            )
            .set_label("out of range");
            return None;
        }
        Some(f)
    }

    /// A name from a fixed set (`v14`, `fair`, ...).
    pub fn choice(
        &mut self,
        env: Env,
        file: usize,
        v: &Val,
        what: &str,
        allowed: &[&str],
    ) -> Option<String> {
        let (v, file) = self.deref(env, file, v)?;
        match &v.kind {
            ValKind::Symbol(s) | ValKind::Str(s) => {
                if allowed.contains(&s.as_str()) {
                    Some(s.clone())
                } else {
                    let help = did_you_mean(s, allowed.iter().copied());
                    let d = self
                        .err(file, v.span, format!("unknown {what} `{s}`"))
                        .set_label(format!("not a {what}"));
                    d.help = help;
                    None
                }
            }
            _ => {
                let expected = format!("one of {}", allowed.join(", "));
                self.mismatch(file, &v, what, &expected, None);
                None
            }
        }
    }

    pub fn string(&mut self, env: Env, file: usize, v: &Val, what: &str) -> Option<String> {
        let (v, file) = self.deref(env, file, v)?;
        match &v.kind {
            ValKind::Str(s) => Some(s.clone()),
            _ => {
                self.mismatch(file, &v, what, "a string (\"...\")", None);
                None
            }
        }
    }

    pub fn list_items(
        &mut self,
        env: Env,
        file: usize,
        v: &Val,
        what: &str,
    ) -> Option<(Vec<Val>, usize)> {
        let (v, file) = self.deref(env, file, v)?;
        match v.kind {
            ValKind::List(items) => Some((items, file)),
            _ => {
                self.mismatch(file, &v, what, "a list `[...]`", None);
                None
            }
        }
    }

    pub fn u32_list(&mut self, env: Env, file: usize, v: &Val, what: &str) -> Option<Vec<u32>> {
        let (items, file) = self.list_items(env, file, v, what)?;
        if items.is_empty() {
            self.err(file, v.span, format!("{what} must not be empty"));
            return None;
        }
        let mut out = Vec::new();
        let mut ok = true;
        for it in &items {
            match self.count(env, file, it, what, 0) {
                Some(n) => out.push(n),
                None => ok = false,
            }
        }
        ok.then_some(out)
    }

    /// A duration, fixed or drawn: `90ns`, `uniform(5us, 20us)`, `exp(5us)`,
    /// `normal(1us, 100ns)`.
    pub fn dist(&mut self, env: Env, file: usize, v: &Val, what: &str) -> Option<Dist> {
        let (v, file) = self.deref(env, file, v)?;
        let ValKind::Call { name, args } = &v.kind else {
            return self
                .duration(env, file, &v, what)
                .map(|ns| Dist::Fixed { ns });
        };
        let arity = match name.name.as_str() {
            "fixed" | "exp" => 1,
            "uniform" | "normal" => 2,
            other => {
                let help = did_you_mean(other, ["fixed", "uniform", "exp", "normal"]);
                let d = self
                    .err(file, name.span, format!("unknown distribution `{other}`"))
                    .set_label("not a distribution");
                d.help = help;
                return None;
            }
        };
        if args.len() != arity {
            self.err(
                file,
                v.span,
                format!(
                    "`{}` takes {arity} argument{}, found {}",
                    name.name,
                    if arity == 1 { "" } else { "s" },
                    args.len()
                ),
            )
            .help = Some(
                "write `uniform(lo, hi)`, `exp(mean)`, `normal(mean, sd)` or `fixed(x)`".into(),
            );
            return None;
        }
        let a = self.duration(env, file, &args[0], what);
        let b = if arity == 2 {
            self.duration(env, file, &args[1], what)
        } else {
            Some(0)
        };
        let (a, b) = (a?, b?);
        Some(match name.name.as_str() {
            "fixed" => Dist::Fixed { ns: a },
            "exp" => Dist::Exp { mean_ns: a },
            "normal" => Dist::Normal {
                mean_ns: a,
                sd_ns: b,
            },
            _ => {
                if a > b {
                    self.err(
                        file,
                        v.span,
                        format!(
                            "`uniform` needs lo <= hi, found {} > {}",
                            locklab_model::units::duration_label(a),
                            locklab_model::units::duration_label(b)
                        ),
                    );
                    return None;
                }
                Dist::Uniform { lo_ns: a, hi_ns: b }
            }
        })
    }

    // -----------------------------------------------------------------------
    // Topologies

    pub fn topology(&mut self, def: &Def) -> Option<Topology> {
        let env = Env::NoAxes;
        let file = def.file;
        let v = &def.value;
        match &v.kind {
            ValKind::Symbol(s) if s == "host" => Some(Topology::Host { costs: None }),
            ValKind::Record { ctor: Some(c), .. } if c.name == "host" => {
                let o = self.obj(
                    file,
                    v,
                    &format!("topology `{}`", def.name.name),
                    &["transfer", "atomic", "matrix"],
                    &[],
                );
                let costs = self.costs(env, &o, 0, false)?;
                Some(Topology::Host { costs })
            }
            ValKind::Record { ctor: None, .. } => self.machine(def),
            ValKind::Record { ctor: Some(c), .. } => {
                self.err(file, c.span, format!("unknown topology kind `{}`", c.name))
                    .help = Some(
                    "write `topology NAME { sockets = ..., ... }` or `topology NAME = host`".into(),
                );
                None
            }
            _ => {
                self.mismatch(
                    file,
                    v,
                    &format!("topology `{}`", def.name.name),
                    "`{ sockets = ..., ... }` or `host`",
                    None,
                );
                None
            }
        }
    }

    fn machine(&mut self, def: &Def) -> Option<Topology> {
        let env = Env::NoAxes;
        let file = def.file;
        let what = format!("topology `{}`", def.name.name);
        let o = self.obj(
            file,
            &def.value,
            &what,
            &[
                "sockets", "cores", "smt", "nodes", "llcs", "transfer", "matrix", "atomic",
                "cache", "freq",
            ],
            &[],
        );
        let sockets = match o.get("sockets") {
            Some(v) => self.count(env, file, v, "`sockets`", 1),
            None => {
                self.missing(&o, "sockets", "2");
                None
            }
        };
        let cores = match o.get("cores") {
            Some(v) => self.count(env, file, v, "`cores` (per socket)", 1),
            None => {
                self.missing(&o, "cores", "4");
                None
            }
        };
        let smt = o
            .get("smt")
            .map_or(Some(1), |v| self.count(env, file, v, "`smt`", 1));
        let nodes = o.get("nodes").map_or(Some(1), |v| {
            self.count(env, file, v, "`nodes` (per socket)", 1)
        });
        let llcs = o.get("llcs").map_or(Some(1), |v| {
            self.count(env, file, v, "`llcs` (per socket)", 1)
        });
        let (sockets, cores, smt, nodes, llcs) = (sockets?, cores?, smt?, nodes?, llcs?);
        let Some(cpus) = sockets
            .checked_mul(cores)
            .and_then(|c| c.checked_mul(smt))
            .filter(|c| *c <= 1 << 16)
        else {
            self.err(
                file,
                def.value.span,
                format!("{what} has too many CPUs (at most 65536)"),
            );
            return None;
        };
        for (n, key) in [(nodes, "nodes"), (llcs, "llcs")] {
            if cores % n != 0 {
                let p = o.prop(key).map_or(def.value.span, |p| p.span);
                self.err(
                    file,
                    p,
                    format!("{cores} cores per socket cannot be split evenly into {n} {key}"),
                )
                .set_label("does not divide the cores");
            }
        }
        if llcs % nodes != 0 && nodes % llcs != 0 {
            let p = o.prop("llcs").map_or(def.value.span, |p| p.span);
            self.err(
                file,
                p,
                format!("{llcs} LLCs per socket do not nest with {nodes} NUMA nodes per socket"),
            );
        }
        let costs = self.costs(env, &o, cpus, true)?;
        let mut l2 = None;
        let mut llc = None;
        if let Some(c) = o.get("cache") {
            let co = self.obj(file, c, "`cache`", &["l2", "llc"], &[]);
            if !matches!(c.kind, ValKind::Record { ctor: None, .. }) {
                self.mismatch(
                    file,
                    c,
                    "`cache`",
                    "a block `{ l2 = ..., llc = ... }`",
                    None,
                );
            }
            l2 = co.get("l2").and_then(|v| self.size(env, file, v, "`l2`"));
            llc = co.get("llc").and_then(|v| self.size(env, file, v, "`llc`"));
        }
        let freq_hz = o
            .get("freq")
            .and_then(|v| self.freq(env, file, v, "`freq`"));
        Some(Topology::Machine(Machine {
            name: def.name.name.clone(),
            sockets,
            cores_per_socket: cores,
            smt,
            nodes_per_socket: nodes,
            llcs_per_socket: llcs,
            costs: costs?,
            l2_bytes: l2,
            llc_bytes: llc,
            freq_hz,
        }))
    }

    /// `transfer { smt, llc, socket, remote }`, `atomic`, `matrix`. For a machine
    /// `transfer` is required; for `host` the costs are optional.
    fn costs(&mut self, env: Env, o: &Obj, cpus: u32, required: bool) -> Option<Option<Costs>> {
        let file = o.file;
        let Some(t) = o.get("transfer") else {
            if required {
                self.missing(
                    o,
                    "transfer",
                    "{ smt = 10ns, llc = 50ns, socket = 50ns, remote = 190ns }",
                );
                return None;
            }
            return Some(None);
        };
        if !matches!(t.kind, ValKind::Record { ctor: None, .. }) {
            self.mismatch(
                file,
                t,
                "`transfer`",
                "a block `{ smt = ..., llc = ..., socket = ..., remote = ... }`",
                None,
            );
            return None;
        }
        let to = self.obj(
            file,
            t,
            "`transfer`",
            &["smt", "llc", "socket", "remote"],
            &[],
        );
        let llc = match to.get("llc") {
            Some(v) => self.duration(env, file, v, "`llc` transfer latency"),
            None => {
                self.missing(&to, "llc", "50ns");
                None
            }
        };
        let smt = to
            .get("smt")
            .map(|v| self.duration(env, file, v, "`smt` transfer latency"));
        let socket = to
            .get("socket")
            .map(|v| self.duration(env, file, v, "`socket` transfer latency"));
        let remote = to
            .get("remote")
            .map(|v| self.duration(env, file, v, "`remote` transfer latency"));
        let atomic = o
            .get("atomic")
            .map_or(Some(5), |v| self.duration(env, file, v, "`atomic`"));
        let matrix = match o.get("matrix") {
            Some(v) => Some(self.matrix(file, v, cpus)?),
            None => None,
        };
        let llc = llc?;
        let smt = smt.unwrap_or(Some(llc))?;
        let socket = socket.unwrap_or(Some(llc))?;
        let remote = remote.unwrap_or(Some(socket))?;
        Some(Some(Costs {
            smt_ns: smt,
            llc_ns: llc,
            socket_ns: socket,
            remote_ns: remote,
            matrix_ns: matrix,
            atomic_ns: atomic?,
        }))
    }

    /// A CSV of one-way transfer latencies in ns, one row per CPU, read through the
    /// loader relative to the file that names it.
    fn matrix(&mut self, file: usize, v: &Val, cpus: u32) -> Option<Vec<Vec<u64>>> {
        let rel = self.string(Env::NoAxes, file, v, "`matrix`")?;
        let path = crate::resolve_path(&self.path(file), &rel);
        let text = match self.files.iter().find(|f| f.0 == path) {
            Some(f) => f.1.clone(),
            None => match self.loader.read(&path) {
                Ok(t) => {
                    self.files.push((path.clone(), t.clone()));
                    t
                }
                Err(e) => {
                    self.err(
                        file,
                        v.span,
                        format!("cannot read matrix file `{path}`: {e}"),
                    )
                    .set_label("named here");
                    return None;
                }
            },
        };
        let mut rows = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let t = line.trim();
            if t.is_empty() || t.starts_with('#') {
                continue;
            }
            let mut row = Vec::new();
            for cell in t.split([',', ';', ' ', '\t']).filter(|c| !c.is_empty()) {
                match cell.parse::<f64>() {
                    Ok(f) if (0.0..1e15).contains(&f) => row.push(f.round() as u64),
                    _ => {
                        self.err(
                            file,
                            v.span,
                            format!("`{path}` line {}: `{cell}` is not a latency in ns", i + 1),
                        );
                        return None;
                    }
                }
            }
            rows.push(row);
        }
        let n = rows.len();
        if rows.iter().any(|r| r.len() != n) {
            self.err(
                file,
                v.span,
                format!("`{path}` is not a square matrix ({n} rows)"),
            );
            return None;
        }
        if cpus > 0 && n != cpus as usize {
            self.err(
                file,
                v.span,
                format!("`{path}` has {n} rows but the topology has {cpus} CPUs"),
            );
            return None;
        }
        Some(rows)
    }

    // -----------------------------------------------------------------------
    // Locks

    /// A lock algorithm with parameters: `mcs`, `cna { threshold = 1ms }`.
    pub fn lock_algo(&mut self, env: Env, file: usize, v: &Val, what: &str) -> Option<LockAlgo> {
        let (v, file) = self.deref(env, file, v)?;
        let (algo, span) = match &v.kind {
            ValKind::Symbol(s) => (s.clone(), v.span),
            ValKind::Record { ctor: Some(c), .. } => (c.name.clone(), c.span),
            _ => {
                self.mismatch(
                    file,
                    &v,
                    what,
                    "a lock algorithm (`mcs`, `cna { threshold = 1ms }`, ...)",
                    None,
                );
                return None;
            }
        };
        if !LOCK_ALGOS.contains(&algo.as_str()) {
            let help = did_you_mean(&algo, LOCK_ALGOS.iter().copied());
            let d = self
                .err(file, span, format!("unknown lock algorithm `{algo}`"))
                .set_label("not a lock algorithm");
            d.help = help;
            return None;
        }
        let allowed: &[&str] = match algo.as_str() {
            "ttas" => &["backoff"],
            "cna" => &["threshold", "variant", "shuffle_skip"],
            _ => &[],
        };
        let what = format!("{what} ({algo})");
        let o = self.obj(file, &v, &what, allowed, &[]);
        if allowed.is_empty() {
            if let ValKind::Record { entries, .. } = &v.kind {
                if let Some(Entry::Prop(p)) = entries.first() {
                    // obj() already flagged each key; say why once.
                    if let Some(d) = self.diags.iter_mut().rev().find(|d| d.span == p.key.span) {
                        d.help = Some(format!("`{algo}` takes no parameters"));
                    }
                }
            }
        }
        Some(match algo.as_str() {
            "tas" => LockAlgo::Tas,
            "ticket" => LockAlgo::Ticket,
            "mcs" => LockAlgo::Mcs,
            "clh" => LockAlgo::Clh,
            "qspinlock" => LockAlgo::Qspinlock,
            "std" => LockAlgo::Std,
            "parking_lot" => LockAlgo::ParkingLot,
            "pthread" => LockAlgo::Pthread,
            "ttas" => {
                let backoff = match o.get("backoff") {
                    None => None,
                    Some(b) => {
                        let (b, bf) = self.deref(env, file, b)?;
                        let ValKind::Range { lo, hi, step } = &b.kind else {
                            self.mismatch(
                                bf,
                                &b,
                                "`backoff`",
                                "a range of durations `min..max`",
                                Some("write e.g. `backoff = 100ns..10us`"),
                            );
                            return None;
                        };
                        if let Some(s) = step {
                            let sp = match s {
                                crate::syntax::Step::Add(v) => v.span,
                                crate::syntax::Step::Mul { span, .. } => *span,
                            };
                            self.err(
                                bf,
                                sp,
                                "`backoff` takes no step (it doubles from min to max)",
                            );
                        }
                        let lo = self.duration(env, bf, lo, "`backoff` minimum");
                        let hi = self.duration(env, bf, hi, "`backoff` maximum");
                        let (lo, hi) = (lo?, hi?);
                        if lo > hi || lo == 0 {
                            self.err(bf, b.span, "`backoff` needs 0 < min <= max");
                            return None;
                        }
                        Some(Backoff {
                            min_ns: lo,
                            max_ns: hi,
                        })
                    }
                };
                LockAlgo::Ttas { backoff }
            }
            _ => {
                let threshold = o.get("threshold").map_or(Some(10_000_000), |t| {
                    self.duration(env, file, t, "`threshold`")
                });
                let variant = o.get("variant").map_or(Some("v15".to_string()), |t| {
                    self.choice(env, file, t, "CNA variant", &["v14", "v15"])
                });
                let skip = o.get("shuffle_skip").map_or(Some(127.0 / 128.0), |t| {
                    self.real(env, file, t, "`shuffle_skip` (a probability)", 0.0, 1.0)
                });
                let threshold = threshold?;
                if threshold == 0 {
                    let sp = o.get("threshold").map_or(v.span, |t| t.span);
                    self.err(file, sp, "`threshold` must be longer than 0ns");
                    return None;
                }
                LockAlgo::Cna(CnaParams {
                    threshold_ns: threshold,
                    variant: if variant? == "v14" {
                        CnaVariant::V14
                    } else {
                        CnaVariant::V15
                    },
                    shuffle_skip_prob: skip?,
                })
            }
        })
    }

    /// A lock as the experiment names it: a definition, a bare algorithm (default
    /// parameters), or an inline `cna { ... }`.
    pub fn lock_ref(&mut self, env: Env, file: usize, v: &Val) -> Option<LockSpec> {
        let (v, file) = self.deref(env, file, v)?;
        match &v.kind {
            ValKind::Symbol(name) => {
                if let Some(def) = self.locks.get(name).cloned() {
                    let algo =
                        self.lock_algo(env, def.file, &def.value, &format!("lock `{name}`"))?;
                    Some(LockSpec {
                        name: name.clone(),
                        algo,
                        axis: None,
                        params: Vec::new(),
                    })
                } else if self.broken.contains(&("lock".to_string(), name.clone())) {
                    None
                } else if LOCK_ALGOS.contains(&name.as_str()) {
                    let algo = self.lock_algo(env, file, &v, "lock")?;
                    Some(LockSpec {
                        name: name.clone(),
                        algo,
                        axis: None,
                        params: Vec::new(),
                    })
                } else {
                    let cands: Vec<String> = self
                        .locks
                        .keys()
                        .cloned()
                        .chain(LOCK_ALGOS.iter().map(|s| s.to_string()))
                        .collect();
                    let help = did_you_mean(name, cands.iter().map(|s| s.as_str()));
                    let d = self
                        .err(file, v.span, format!("unknown lock `{name}`"))
                        .set_label("no lock or lock algorithm of this name");
                    d.help = help;
                    None
                }
            }
            ValKind::Record { ctor: Some(c), .. } => {
                let algo = self.lock_algo(env, file, &v, "lock")?;
                Some(LockSpec {
                    name: c.name.clone(),
                    algo,
                    axis: None,
                    params: Vec::new(),
                })
            }
            _ => {
                self.mismatch(file, &v, "`lock`", "a lock name or algorithm", None);
                None
            }
        }
    }

    // -----------------------------------------------------------------------
    // Workloads

    pub fn workload_ref(&mut self, env: Env, file: usize, v: &Val) -> Option<Workload> {
        let (v, file) = self.deref(env, file, v)?;
        match &v.kind {
            ValKind::Symbol(name) => {
                if let Some(def) = self.workloads.get(name).cloned() {
                    self.workload(env, def.file, &def.value, &format!("workload `{name}`"))
                } else if self
                    .broken
                    .contains(&("workload".to_string(), name.clone()))
                {
                    None
                } else {
                    let cands: Vec<String> = self.workloads.keys().cloned().collect();
                    let help = did_you_mean(name, cands.iter().map(|s| s.as_str()));
                    let mut d = Diagnostic::error(
                        &self.path(file),
                        v.span,
                        format!("unknown workload `{name}`"),
                    )
                    .with_label("no workload of this name");
                    d.help = help.or_else(|| {
                        WORKLOAD_KINDS.contains(&name.as_str()).then(|| format!("`{name}` is a workload kind: give its parameters, e.g. `workload hot = {name} {{ ... }}`"))
                    });
                    self.diags.push(d);
                    None
                }
            }
            ValKind::Record { ctor: Some(_), .. } => self.workload(env, file, &v, "workload"),
            _ => {
                self.mismatch(
                    file,
                    &v,
                    "`workload`",
                    "a workload name or `single { ... }`",
                    None,
                );
                None
            }
        }
    }

    pub fn workload(&mut self, env: Env, file: usize, v: &Val, what: &str) -> Option<Workload> {
        let (v, file) = self.deref(env, file, v)?;
        let ValKind::Record {
            ctor: Some(kind), ..
        } = &v.kind
        else {
            self.mismatch(file, &v, what, "a workload (`single { ... }`, `double { ... }`, `bulk { ... }` or `wakeup { ... }`)", None);
            return None;
        };
        let kind = kind.clone();
        let what = format!("{what} ({})", kind.name);
        match kind.name.as_str() {
            "single" => {
                let o = self.obj(file, &v, &what, &["critical", "outside", "lines"], &[]);
                let critical = self.req_dist(env, &o, "critical", "90ns");
                let outside = o.get("outside").map_or(Some(Dist::Fixed { ns: 0 }), |x| {
                    self.dist(env, file, x, "`outside`")
                });
                let lines = o
                    .get("lines")
                    .map_or(Some(1), |x| self.count(env, file, x, "`lines`", 0));
                Some(Workload::SingleLock {
                    critical: critical?,
                    outside: outside?,
                    lines: lines?,
                })
            }
            "double" => {
                let o = self.obj(
                    file,
                    &v,
                    &what,
                    &["policy", "interval", "own_hold", "pair_hold", "lines"],
                    &[],
                );
                let policy = match o.get("policy") {
                    Some(p) => {
                        self.choice(env, file, p, "double-lock policy", &["ordered", "fair"])
                    }
                    None => {
                        self.missing(&o, "policy", "ordered");
                        None
                    }
                };
                let interval = self.req_dist(env, &o, "interval", "exp(5us)");
                let own = self.req_dist(env, &o, "own_hold", "1us");
                let pair = self.req_dist(env, &o, "pair_hold", "1us");
                let lines = o
                    .get("lines")
                    .map_or(Some(1), |x| self.count(env, file, x, "`lines`", 0));
                Some(Workload::DoubleLock {
                    policy: if policy? == "fair" {
                        DoubleLockPolicy::Fair
                    } else {
                        DoubleLockPolicy::Ordered
                    },
                    interval: interval?,
                    own_hold: own?,
                    pair_hold: pair?,
                    lines: lines?,
                })
            }
            "bulk" => {
                let o = self.obj(
                    file,
                    &v,
                    &what,
                    &["policy", "per_item", "think", "lines"],
                    &["class"],
                );
                let policy = match o.get("policy") {
                    Some(p) => self.choice(
                        env,
                        file,
                        p,
                        "lock-break policy",
                        &["never", "always", "when_contended"],
                    ),
                    None => {
                        self.missing(&o, "policy", "when_contended");
                        None
                    }
                };
                let per_item = self.req_dist(env, &o, "per_item", "100ns");
                let think = o.get("think").map_or(Some(Dist::Fixed { ns: 0 }), |x| {
                    self.dist(env, file, x, "`think`")
                });
                let lines = o
                    .get("lines")
                    .map_or(Some(1), |x| self.count(env, file, x, "`lines`", 0));
                let mut mix = Vec::new();
                let mut ok = true;
                let classes: Vec<&Prop> = o.repeated().to_vec();
                if classes.is_empty() {
                    self.err(file, v.span, format!("{what} has no request class"))
                        .set_label("needs at least one `class`")
                        .help = Some("add e.g. `class single { weight = 1, items = 1 }`".into());
                    ok = false;
                }
                for c in classes {
                    match self.bulk_class(env, file, c) {
                        Some(bc) => {
                            if mix.iter().any(|m: &BulkClass| m.name == bc.name) {
                                self.err(
                                    file,
                                    c.value.span,
                                    format!("request class `{}` is given twice", bc.name),
                                );
                                ok = false;
                            }
                            mix.push(bc)
                        }
                        None => ok = false,
                    }
                }
                if ok && mix.iter().all(|m| m.weight == 0) {
                    self.err(file, v.span, "every request class has weight 0");
                    ok = false;
                }
                let w = Workload::Bulk {
                    policy: match policy?.as_str() {
                        "never" => BreakPolicy::Never,
                        "always" => BreakPolicy::Always,
                        _ => BreakPolicy::WhenContended,
                    },
                    mix,
                    per_item: per_item?,
                    think: think?,
                    lines: lines?,
                };
                ok.then_some(w)
            }
            "wakeup" => self.wakeup(env, file, &v, &what),
            other => {
                let help = did_you_mean(other, WORKLOAD_KINDS.iter().copied());
                let d = self
                    .err(file, kind.span, format!("unknown workload kind `{other}`"))
                    .set_label("not a workload kind");
                d.help = help;
                None
            }
        }
    }

    fn req_dist(&mut self, env: Env, o: &Obj, key: &str, example: &str) -> Option<Dist> {
        match o.get(key) {
            Some(x) => self.dist(env, o.file, x, &format!("`{key}`")),
            None => {
                self.missing(o, key, example);
                None
            }
        }
    }

    fn bulk_class(&mut self, env: Env, file: usize, p: &Prop) -> Option<BulkClass> {
        let ValKind::Record {
            ctor: Some(name), ..
        } = &p.value.kind
        else {
            self.mismatch(
                file,
                &p.value,
                "`class`",
                "`NAME { weight = ..., items = ... }`",
                Some("write e.g. `class batch { weight = 1, items = 31 }`"),
            );
            return None;
        };
        let o = self.obj(
            file,
            &p.value,
            &format!("request class `{}`", name.name),
            &["weight", "items"],
            &[],
        );
        let weight = o
            .get("weight")
            .map_or(Some(1), |x| self.count(env, file, x, "`weight`", 0));
        let items = match o.get("items") {
            Some(x) => self.count(env, file, x, "`items`", 1),
            None => {
                self.missing(&o, "items", "31");
                None
            }
        };
        Some(BulkClass {
            name: name.name.clone(),
            weight: weight?,
            items: items?,
        })
    }

    fn wakeup(&mut self, env: Env, file: usize, v: &Val, what: &str) -> Option<Workload> {
        let o = self.obj(
            file,
            v,
            what,
            &[
                "policy",
                "scenario",
                "workers",
                "worker_weight",
                "hogs",
                "hog_groups",
                "hog_group_weight",
                "burst",
                "sleep",
                "working_set",
                "sched",
            ],
            &[],
        );
        let policy = match o.get("policy") {
            Some(p) => self.choice(
                env,
                file,
                p,
                "wake-up placement policy",
                &["old", "patched"],
            ),
            None => {
                self.missing(&o, "policy", "patched");
                None
            }
        };
        let scenario = match o.get("scenario") {
            Some(p) => self.choice(env, file, p, "wake-up scenario", &["trade", "messaging"]),
            None => {
                self.missing(&o, "scenario", "trade");
                None
            }
        };
        let workers = match o.get("workers") {
            Some(x) => self.count(env, file, x, "`workers`", 1),
            None => {
                self.missing(&o, "workers", "8");
                None
            }
        };
        let worker_weight = o.get("worker_weight").map_or(Some(1024), |x| {
            self.count(env, file, x, "`worker_weight`", 1)
        });
        let hogs = o
            .get("hogs")
            .map_or(Some(0), |x| self.count(env, file, x, "`hogs`", 0));
        let hog_groups = o
            .get("hog_groups")
            .map_or(Some(1), |x| self.count(env, file, x, "`hog_groups`", 1));
        let hog_group_weight = o.get("hog_group_weight").map_or(Some(1024), |x| {
            self.count(env, file, x, "`hog_group_weight`", 1)
        });
        let burst = self.req_dist(env, &o, "burst", "uniform(20us, 50us)");
        let sleep = self.req_dist(env, &o, "sleep", "exp(100us)");
        let working_set = match o.get("working_set") {
            Some(x) => self.size(env, file, x, "`working_set`"),
            None => {
                self.missing(&o, "working_set", "128KiB");
                None
            }
        };
        let sched = match o.get("sched") {
            None => Some(default_sched()),
            Some(s) => self.sched(env, file, s),
        };
        if let (Some(h), Some(g)) = (hogs, hog_groups) {
            if h > 0 && g > h {
                let sp = o.get("hog_groups").map_or(v.span, |x| x.span);
                self.err(
                    file,
                    sp,
                    format!("{g} hog groups for {h} hogs: some groups would be empty"),
                );
            }
        }
        Some(Workload::Wakeup(WakeupSpec {
            policy: if policy? == "old" {
                PlacementPolicy::Old
            } else {
                PlacementPolicy::Patched
            },
            scenario: if scenario? == "trade" {
                WakeupScenario::Trade
            } else {
                WakeupScenario::Messaging
            },
            workers: workers?,
            worker_weight: worker_weight?,
            hogs: hogs?,
            hog_groups: hog_groups?,
            hog_group_weight: hog_group_weight?,
            burst: burst?,
            sleep: sleep?,
            working_set_bytes: working_set?,
            sched: sched?,
        }))
    }

    fn sched(&mut self, env: Env, file: usize, v: &Val) -> Option<SchedParams> {
        if !matches!(v.kind, ValKind::Record { ctor: None, .. }) {
            self.mismatch(
                file,
                v,
                "`sched`",
                "a block `{ latency = 24ms, ... }`",
                None,
            );
            return None;
        }
        let o = self.obj(
            file,
            v,
            "`sched`",
            &[
                "wakeup_granularity",
                "latency",
                "min_slice",
                "migration_cost",
                "idle_exit",
                "smt_corun",
            ],
            &[],
        );
        let d = default_sched();
        let dur = |this: &mut Self, key: &str, default: u64| {
            o.get(key).map_or(Some(default), |x| {
                this.duration(env, file, x, &format!("`{key}`"))
            })
        };
        let g = dur(self, "wakeup_granularity", d.wakeup_granularity_ns);
        let l = dur(self, "latency", d.latency_ns);
        let m = dur(self, "min_slice", d.min_slice_ns);
        let c = dur(self, "migration_cost", d.migration_cost_ns);
        let i = dur(self, "idle_exit", d.idle_exit_ns);
        let s = o.get("smt_corun").map_or(Some(d.smt_corun_factor), |x| {
            self.real(env, file, x, "`smt_corun` (throughput factor)", 0.0, 1.0)
        });
        Some(SchedParams {
            wakeup_granularity_ns: g?,
            latency_ns: l?,
            min_slice_ns: m?,
            migration_cost_ns: c?,
            idle_exit_ns: i?,
            smt_corun_factor: s?,
        })
    }

    // -----------------------------------------------------------------------
    // Placement

    pub fn placement_ref(&mut self, env: Env, file: usize, v: &Val) -> Option<Placement> {
        let (v, file) = self.deref(env, file, v)?;
        match &v.kind {
            ValKind::Symbol(name) => {
                if let Some(def) = self.placements.get(name).cloned() {
                    self.placement(env, def.file, &def.value, &format!("placement `{name}`"))
                } else if self
                    .broken
                    .contains(&("placement".to_string(), name.clone()))
                {
                    None
                } else if PLACEMENT_POLICIES.contains(&name.as_str()) && name != "list" {
                    self.placement(env, file, &v, "placement")
                } else {
                    let cands: Vec<String> = self
                        .placements
                        .keys()
                        .cloned()
                        .chain(["compact", "scatter", "will_it_scale"].map(String::from))
                        .collect();
                    let help = did_you_mean(name, cands.iter().map(|s| s.as_str()));
                    let d = self
                        .err(file, v.span, format!("unknown placement `{name}`"))
                        .set_label("no placement of this name");
                    d.help = help;
                    None
                }
            }
            _ => self.placement(env, file, &v, "placement"),
        }
    }

    pub fn placement(&mut self, env: Env, file: usize, v: &Val, what: &str) -> Option<Placement> {
        let (v, file) = self.deref(env, file, v)?;
        match &v.kind {
            ValKind::List(_) => {
                let cpus = self.u32_list(env, file, &v, "explicit CPU list")?;
                Some(Placement {
                    policy: PlacementKind::List(cpus),
                    virtual_nodes: None,
                })
            }
            ValKind::Symbol(p)
            | ValKind::Record {
                ctor: Some(Ident { name: p, .. }),
                ..
            } => {
                let p = p.clone();
                let pspan = match &v.kind {
                    ValKind::Record { ctor: Some(c), .. } => c.span,
                    _ => v.span,
                };
                if !PLACEMENT_POLICIES.contains(&p.as_str()) {
                    let help = did_you_mean(&p, PLACEMENT_POLICIES.iter().copied());
                    let d = self
                        .err(file, pspan, format!("unknown placement policy `{p}`"))
                        .set_label("not a placement policy");
                    d.help = help;
                    return None;
                }
                let allowed: &[&str] = if p == "list" {
                    &["cpus", "nodes"]
                } else {
                    &["nodes"]
                };
                let o = self.obj(file, &v, &format!("{what} ({p})"), allowed, &[]);
                let nodes = match o.get("nodes") {
                    Some(n) => Some(self.u32_list(
                        env,
                        file,
                        n,
                        "`nodes` (virtual NUMA node per thread)",
                    )?),
                    None => None,
                };
                let policy = match p.as_str() {
                    "compact" => PlacementKind::Compact,
                    "scatter" => PlacementKind::Scatter,
                    "will_it_scale" => PlacementKind::WillItScale,
                    _ => match o.get("cpus") {
                        Some(c) => PlacementKind::List(self.u32_list(env, file, c, "`cpus`")?),
                        None => {
                            self.missing(&o, "cpus", "[0, 1]");
                            return None;
                        }
                    },
                };
                Some(Placement {
                    policy,
                    virtual_nodes: nodes,
                })
            }
            _ => {
                self.mismatch(
                    file,
                    &v,
                    "`placement`",
                    "a placement (`compact`, `scatter`, `will_it_scale`, a CPU list)",
                    None,
                );
                None
            }
        }
    }
}

/// CFS of the 2.6.3x era on 16 CPUs (CLAIMS.md, seed 003).
pub fn default_sched() -> SchedParams {
    SchedParams {
        wakeup_granularity_ns: 4_000_000,
        latency_ns: 24_000_000,
        min_slice_ns: 3_000_000,
        migration_cost_ns: 500_000,
        idle_exit_ns: 3_000,
        smt_corun_factor: 0.6,
    }
}
