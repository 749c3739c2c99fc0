//! Locks: one registry of every algorithm the language can name ([`ALGORITHMS`]:
//! its parameters, their types and defaults, and how to build the plan's
//! [`LockAlgo`]), and the readers that check a lock against it.
//!
//! Everything the language says about lock algorithms derives from the registry:
//! which names are algorithms (a definition may not shadow one), which parameters
//! each takes, the "did you mean" candidates, and what is built. A name that is
//! not in it is an error; there is no fallback algorithm.

use super::{Ctx, Env};
use crate::diag::{did_you_mean, Span};
use crate::syntax::{Entry, Step, Val, ValKind};
use locklab_model::plan::{
    Backoff, ClhPredecessor, CnaParams, CnaVariant, LockAlgo, LockSpec, Relax,
};

/// The type of a lock parameter, which says how its value is read and checked.
#[derive(Debug, Clone, Copy)]
pub enum ParamType {
    /// A duration longer than 0.
    Duration,
    /// `min..max` durations with 0 < min <= max, without a step.
    DurationRange,
    /// One of these names.
    Choice(&'static [&'static str]),
    /// A probability, in [0, 1].
    Probability,
    /// A whole number in `0..=max`.
    Count { max: u32 },
}

/// A parameter's value once read.
#[derive(Debug, Clone, PartialEq)]
pub enum Arg {
    Duration(u64),
    DurationRange(u64, u64),
    /// The name, as listed in its [`ParamType::Choice`].
    Choice(&'static str),
    Real(f64),
    Count(u32),
}

#[derive(Debug)]
pub struct Param {
    pub name: &'static str,
    /// How messages name it (`CNA variant`, ``` `threshold` ```).
    pub what: &'static str,
    pub ty: ParamType,
    /// The value when the parameter is not given; `None`: it is optional and
    /// absent.
    pub default: Option<Arg>,
}

/// The parameters of one lock, read and defaulted.
#[derive(Debug, Default)]
pub struct Args(Vec<(&'static str, Arg)>);

impl Args {
    fn get(&self, name: &str) -> Option<&Arg> {
        self.0.iter().find(|(n, _)| *n == name).map(|(_, a)| a)
    }
    pub fn duration(&self, name: &str) -> Option<u64> {
        match self.get(name)? {
            Arg::Duration(ns) => Some(*ns),
            _ => None,
        }
    }
    pub fn range(&self, name: &str) -> Option<(u64, u64)> {
        match self.get(name)? {
            Arg::DurationRange(lo, hi) => Some((*lo, *hi)),
            _ => None,
        }
    }
    pub fn choice(&self, name: &str) -> Option<&'static str> {
        match self.get(name)? {
            Arg::Choice(c) => Some(c),
            _ => None,
        }
    }
    pub fn count(&self, name: &str) -> Option<u32> {
        match self.get(name)? {
            Arg::Count(n) => Some(*n),
            _ => None,
        }
    }
    pub fn real(&self, name: &str) -> Option<f64> {
        match self.get(name)? {
            Arg::Real(f) => Some(*f),
            _ => None,
        }
    }
}

/// One lock algorithm of the language.
#[derive(Debug)]
pub struct Algorithm {
    /// The name a file uses (`cna`), and [`LockAlgo::kind_name`] of what it builds.
    pub name: &'static str,
    pub params: &'static [Param],
    /// The plan's lock from its parameters (optional ones may be absent). `None`
    /// when an argument is missing or of another type than its parameter's, which
    /// reading against `params` rules out.
    pub build: fn(&Args) -> Option<LockAlgo>,
}

const NO_PARAMS: &[Param] = &[];

/// Every lock algorithm the language can name.
pub const ALGORITHMS: &[Algorithm] = &[
    Algorithm {
        name: "tas",
        params: &[Param {
            name: "relax",
            what: "`relax` value",
            ty: ParamType::Choice(&["pause", "none"]),
            default: Some(Arg::Choice("pause")),
        }],
        build: |a| {
            Some(LockAlgo::Tas {
                relax: match a.choice("relax")? {
                    "pause" => Relax::Pause,
                    "none" => Relax::None,
                    _ => return None,
                },
            })
        },
    },
    Algorithm {
        name: "decb",
        params: NO_PARAMS,
        build: |_| Some(LockAlgo::Decb),
    },
    Algorithm {
        name: "ttas",
        params: &[Param {
            name: "backoff",
            what: "`backoff`",
            ty: ParamType::DurationRange,
            default: None,
        }],
        build: |a| {
            Some(LockAlgo::Ttas {
                backoff: a
                    .range("backoff")
                    .map(|(min_ns, max_ns)| Backoff { min_ns, max_ns }),
            })
        },
    },
    Algorithm {
        name: "ticket",
        params: NO_PARAMS,
        build: |_| Some(LockAlgo::Ticket),
    },
    Algorithm {
        name: "mcs",
        params: NO_PARAMS,
        build: |_| Some(LockAlgo::Mcs),
    },
    Algorithm {
        name: "clh",
        params: &[Param {
            name: "predecessor",
            what: "`predecessor` place",
            ty: ParamType::Choice(&["thread", "node"]),
            default: Some(Arg::Choice("thread")),
        }],
        build: |a| {
            Some(LockAlgo::Clh {
                predecessor: match a.choice("predecessor")? {
                    "thread" => ClhPredecessor::Thread,
                    "node" => ClhPredecessor::Node,
                    _ => return None,
                },
            })
        },
    },
    Algorithm {
        name: "qspinlock",
        params: &[Param {
            name: "pending_loops",
            what: "`pending_loops`",
            ty: ParamType::Count { max: 1 << 16 },
            default: None,
        }],
        build: |a| {
            Some(LockAlgo::Qspinlock {
                pending_loops: a.count("pending_loops"),
            })
        },
    },
    Algorithm {
        name: "cna",
        params: &[
            Param {
                name: "threshold",
                what: "`threshold`",
                ty: ParamType::Duration,
                default: Some(Arg::Duration(10_000_000)),
            },
            Param {
                name: "variant",
                what: "CNA variant",
                ty: ParamType::Choice(&["v14", "v15"]),
                default: Some(Arg::Choice("v15")),
            },
            Param {
                name: "shuffle_skip",
                what: "`shuffle_skip` (a probability)",
                ty: ParamType::Probability,
                default: Some(Arg::Real(127.0 / 128.0)),
            },
        ],
        build: |a| {
            Some(LockAlgo::Cna(CnaParams {
                threshold_ns: a.duration("threshold")?,
                variant: match a.choice("variant")? {
                    "v14" => CnaVariant::V14,
                    "v15" => CnaVariant::V15,
                    _ => return None,
                },
                shuffle_skip_prob: a.real("shuffle_skip")?,
            }))
        },
    },
    Algorithm {
        name: "std",
        params: NO_PARAMS,
        build: |_| Some(LockAlgo::Std),
    },
    Algorithm {
        name: "parking_lot",
        params: NO_PARAMS,
        build: |_| Some(LockAlgo::ParkingLot),
    },
    Algorithm {
        name: "pthread",
        params: NO_PARAMS,
        build: |_| Some(LockAlgo::Pthread),
    },
];

/// The algorithm of this name.
pub fn algorithm(name: &str) -> Option<&'static Algorithm> {
    ALGORITHMS.iter().find(|a| a.name == name)
}

/// Every algorithm name, in registry order.
pub fn algorithm_names() -> impl Iterator<Item = &'static str> + Clone {
    ALGORITHMS.iter().map(|a| a.name)
}

/// The sweep axes a value reads (`$threshold`), in order of appearance, once each.
fn axis_refs(v: &Val, out: &mut Vec<String>) {
    let mut push = |a: &String| {
        if !out.contains(a) {
            out.push(a.clone());
        }
    };
    match &v.kind {
        ValKind::AxisRef(a) => push(a),
        ValKind::List(items) | ValKind::Call { args: items, .. } => {
            items.iter().for_each(|i| axis_refs(i, out))
        }
        ValKind::Range { lo, hi, step } => {
            axis_refs(lo, out);
            axis_refs(hi, out);
            if let Some(Step::Add(s)) = step {
                axis_refs(s, out);
            }
        }
        ValKind::Record { entries, .. } => {
            for e in entries {
                if let Entry::Prop(p) = e {
                    axis_refs(&p.value, out);
                }
            }
        }
        ValKind::Num { .. }
        | ValKind::Fraction { .. }
        | ValKind::Str(_)
        | ValKind::Bool(_)
        | ValKind::Symbol(_) => {}
    }
}

impl Ctx<'_> {
    /// A lock algorithm with parameters: `mcs`, `cna { threshold = 1ms }`.
    pub fn lock_algo(&mut self, env: Env, file: usize, v: &Val, what: &str) -> Option<LockAlgo> {
        let (v, file) = self.deref(env, file, v)?;
        let (name, span) = match &v.kind {
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
        let Some(algo) = algorithm(&name) else {
            let help = did_you_mean(&name, algorithm_names());
            let d = self
                .err(file, span, format!("unknown lock algorithm `{name}`"))
                .set_label("not a lock algorithm");
            d.help = help;
            return None;
        };
        let keys: Vec<&str> = algo.params.iter().map(|p| p.name).collect();
        let what = format!("{what} ({name})");
        let o = self.obj(file, &v, &what, &keys, &[]);
        if keys.is_empty() {
            if let ValKind::Record { entries, .. } = &v.kind {
                if let Some(Entry::Prop(p)) = entries.first() {
                    // obj() already flagged each key; say why once.
                    if let Some(d) = self.diags.iter_mut().rev().find(|d| d.span == p.key.span) {
                        d.help = Some(format!("`{name}` takes no parameters"));
                    }
                }
            }
        }
        let mut args = Args::default();
        let mut ok = true;
        for p in algo.params {
            let arg = match o.get(p.name) {
                None => p.default.clone(),
                Some(given) => match self.lock_param(env, file, given, p) {
                    Some(a) => Some(a),
                    None => {
                        ok = false;
                        None
                    }
                },
            };
            if let Some(a) = arg {
                args.0.push((p.name, a));
            }
        }
        if !ok {
            return None;
        }
        let built = (algo.build)(&args);
        if built.is_none() {
            self.err(
                file,
                span,
                format!("lock algorithm `{name}` cannot be built from its parameters"),
            );
        }
        built
    }

    fn lock_param(&mut self, env: Env, file: usize, v: &Val, p: &Param) -> Option<Arg> {
        match p.ty {
            ParamType::Duration => self
                .positive_duration(env, file, v, p.what)
                .map(Arg::Duration),
            ParamType::DurationRange => self.duration_range(env, file, v, p.what),
            ParamType::Choice(names) => {
                let c = self.choice(env, file, v, p.what, names)?;
                names.iter().find(|n| **n == c).map(|n| Arg::Choice(n))
            }
            ParamType::Probability => self.real(env, file, v, p.what, 0.0..=1.0).map(Arg::Real),
            ParamType::Count { max } => {
                self.count_in(env, file, v, p.what, 0..=max).map(Arg::Count)
            }
        }
    }

    /// `min..max` of durations, as a backoff takes it.
    fn duration_range(&mut self, env: Env, file: usize, v: &Val, what: &str) -> Option<Arg> {
        let (b, bf) = self.deref(env, file, v)?;
        let ValKind::Range { lo, hi, step } = &b.kind else {
            self.mismatch(
                bf,
                &b,
                what,
                "a range of durations `min..max`",
                Some("write e.g. `backoff = 100ns..10us`"),
            );
            return None;
        };
        if let Some(s) = step {
            let sp = match s {
                Step::Add(v) => v.span,
                Step::Mul { span, .. } => *span,
            };
            self.err(
                bf,
                sp,
                format!("{what} takes no step (it doubles from min to max)"),
            );
        }
        let lo = self.duration(env, bf, lo, &format!("{what} minimum"));
        let hi = self.duration(env, bf, hi, &format!("{what} maximum"));
        let (lo, hi) = (lo?, hi?);
        if lo > hi || lo == 0 {
            self.err(bf, b.span, format!("{what} needs 0 < min <= max"));
            return None;
        }
        Some(Arg::DurationRange(lo, hi))
    }

    /// A lock as the experiment names it: a definition, a bare algorithm (default
    /// parameters), or an inline `cna { ... }`. `axis` is the sweep axis that chose
    /// it, if any.
    pub fn lock_ref(
        &mut self,
        env: Env,
        file: usize,
        v: &Val,
        axis: Option<&str>,
    ) -> Option<LockSpec> {
        let (v, file) = self.deref(env, file, v)?;
        let spec = |name: &str, algo, def: &Val| {
            let mut params = Vec::new();
            axis_refs(def, &mut params);
            LockSpec {
                name: name.to_string(),
                algo,
                axis: axis.map(str::to_string),
                params,
            }
        };
        match &v.kind {
            ValKind::Symbol(name) => {
                if let Some(def) = self.locks.get(name).cloned() {
                    let algo =
                        self.lock_algo(env, def.file, &def.value, &format!("lock `{name}`"))?;
                    Some(spec(name, algo, &def.value))
                } else if self.broken.contains(&("lock".to_string(), name.clone())) {
                    None
                } else if algorithm(name).is_some() {
                    let algo = self.lock_algo(env, file, &v, "lock")?;
                    Some(spec(name, algo, &v))
                } else {
                    let cands: Vec<String> = self
                        .locks
                        .keys()
                        .cloned()
                        .chain(algorithm_names().map(str::to_string))
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
                Some(spec(&c.name, algo, &v))
            }
            _ => {
                self.mismatch(file, &v, "`lock`", "a lock name or algorithm", None);
                None
            }
        }
    }

    /// `lock NAME = ...` may not take the name of another algorithm: `lock mcs = mcs`
    /// is fine, `lock mcs = tas` would confuse every reader.
    pub fn check_lock_name(&mut self, file: usize, name: &str, span: Span, value: &Val) {
        if algorithm(name).is_none() {
            return;
        }
        let same = match &value.kind {
            ValKind::Symbol(s) => s == name,
            ValKind::Record { ctor: Some(c), .. } => c.name == name,
            _ => false,
        };
        if !same {
            self.err(
                file,
                span,
                format!("lock `{name}` shadows the algorithm of the same name"),
            )
            .set_label("an algorithm name")
            .help = Some(format!("choose another name, e.g. `{name}_custom`"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_algorithm_builds_with_its_defaults_and_keeps_its_name() {
        let mut seen = Vec::new();
        for a in ALGORITHMS {
            assert!(!seen.contains(&a.name), "{} twice", a.name);
            seen.push(a.name);
            let defaults = Args(
                a.params
                    .iter()
                    .filter_map(|p| p.default.clone().map(|d| (p.name, d)))
                    .collect(),
            );
            let built = (a.build)(&defaults).unwrap_or_else(|| panic!("{} does not build", a.name));
            assert_eq!(built.kind_name(), a.name);
        }
    }

    #[test]
    fn defaults_have_their_parameters_type() {
        for a in ALGORITHMS {
            for p in a.params {
                let fits = match (&p.ty, &p.default) {
                    (_, None) => true,
                    (ParamType::Duration, Some(Arg::Duration(ns))) => *ns > 0,
                    (ParamType::DurationRange, Some(Arg::DurationRange(lo, hi))) => lo <= hi,
                    (ParamType::Choice(names), Some(Arg::Choice(c))) => names.contains(c),
                    (ParamType::Probability, Some(Arg::Real(f))) => (0.0..=1.0).contains(f),
                    (ParamType::Count { max }, Some(Arg::Count(n))) => n <= max,
                    _ => false,
                };
                assert!(fits, "{}.{}", a.name, p.name);
            }
        }
    }

    #[test]
    fn a_choice_outside_the_known_arms_builds_nothing() {
        let cna = algorithm("cna").unwrap();
        let args = Args(vec![
            ("threshold", Arg::Duration(1)),
            ("variant", Arg::Choice("v99")),
            ("shuffle_skip", Arg::Real(0.5)),
        ]);
        assert_eq!((cna.build)(&args), None);
    }
}
