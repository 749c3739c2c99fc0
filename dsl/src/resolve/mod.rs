//! Definitions to plan data: the context every check writes its diagnostics to
//! ([`Ctx`]), the typed readers (`values`: durations, counts, probabilities,
//! distributions) and one module per kind of definition (`topology`, `lock`,
//! `workload`, `placement`).
//!
//! Every reader returns `Option`: `None` means "not usable", and a diagnostic has
//! been recorded unless the value depends on a sweep axis that is not known yet
//! (a library definition checked on its own).

mod lock;
mod placement;
mod topology;
mod values;
mod workload;

use crate::diag::{did_you_mean, Diagnostic, Span};
use crate::syntax::{Entry, Ident, Prop, Val, ValKind};
use crate::units::kind_noun;
use std::collections::BTreeMap;

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
    /// Every file read, by identity: its index in `files`.
    pub loaded: BTreeMap<crate::FileId, usize>,
    /// Bytes of source read so far (experiment and libraries).
    pub source_bytes: u64,
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
    /// Keys given in statements that did not parse (already reported): not missing.
    unparsed: Vec<String>,
}

impl<'v> Obj<'v> {
    /// Keys given in statements that did not parse ([`Ctx::missing`] skips them).
    pub fn given_unparsed(&mut self, keys: &[String]) {
        self.unparsed.extend(keys.iter().cloned());
    }

    pub fn new(file: usize, span: Span, what: &str) -> Obj<'v> {
        Obj {
            file,
            span,
            what: what.to_string(),
            props: BTreeMap::new(),
            multi: Vec::new(),
            unknown: Vec::new(),
            unparsed: Vec::new(),
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

    /// `span` without its trailing whitespace: a statement's span runs on to the next
    /// one, a diagnostic points at its text.
    pub fn trimmed(&self, file: usize, span: Span) -> Span {
        let text = self.text(file).get(span.start..span.end).unwrap_or("");
        Span::new(span.start, span.start + text.trim_end().len())
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
            unparsed: Vec::new(),
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
        if o.unparsed.iter().any(|k| k == key) {
            // Given in a statement whose syntax error was reported.
            return;
        }
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

    pub fn mismatch(
        &mut self,
        file: usize,
        v: &Val,
        what: &str,
        expected: &str,
        help: Option<&str>,
    ) {
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
}
