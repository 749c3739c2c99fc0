//! Typed readers: a value as written to a duration, a count, a probability, a name
//! from a set, a list or a distribution, following `$axis` references.

use super::{Ctx, Env, MAX_DURATION_NS};
use crate::diag::did_you_mean;
use crate::syntax::{Val, ValKind};
use crate::units::{self, Dim, Scalar};
use locklab_model::plan::Dist;
use locklab_model::time::{Ns, MAX_COST};

impl Ctx<'_> {
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
    /// A duration longer than 0.
    pub fn positive_duration(&mut self, env: Env, file: usize, v: &Val, what: &str) -> Option<u64> {
        let ns = self.duration(env, file, v, what)?;
        if ns == 0 {
            self.err(file, v.span, format!("{what} must be longer than 0ns"));
            return None;
        }
        Some(ns)
    }
    /// A machine cost: a duration to the picosecond (`1.8ns`). A measured host's costs
    /// are fractions of a nanosecond apart (`locklab_model::time`); every other
    /// duration is whole nanoseconds.
    pub fn cost(&mut self, env: Env, file: usize, v: &Val, what: &str) -> Option<Ns> {
        let (val, f) = self.deref(env, file, v)?;
        let fraction = match &val.kind {
            ValKind::Num {
                text,
                unit: Some(unit),
            } => units::picoseconds(text, &unit.name),
            _ => None,
        };
        let ns = match fraction {
            Some(Ok(ps)) => Ns::from_ps(ps),
            Some(Err(msg)) => {
                self.err(f, val.span, msg);
                return None;
            }
            None => Ns::whole(self.duration(env, file, v, what)?),
        };
        if ns > MAX_COST {
            self.err(
                f,
                val.span,
                format!("{what} is too long for a machine cost (at most 1s)"),
            )
            .set_label("too long");
            return None;
        }
        Some(ns)
    }
    /// A cost longer than 0.
    pub fn positive_cost(&mut self, env: Env, file: usize, v: &Val, what: &str) -> Option<Ns> {
        let ns = self.cost(env, file, v, what)?;
        if ns.is_zero() {
            self.err(file, v.span, format!("{what} must be longer than 0ns"));
            return None;
        }
        Some(ns)
    }
    pub fn size(&mut self, env: Env, file: usize, v: &Val, what: &str) -> Option<u64> {
        self.dim_value(env, file, v, what, Dim::Size)
    }
    pub fn freq(&mut self, env: Env, file: usize, v: &Val, what: &str) -> Option<u64> {
        self.dim_value(env, file, v, what, Dim::Freq)
    }

    /// A whole number in `min..=u32::MAX`.
    pub fn count(&mut self, env: Env, file: usize, v: &Val, what: &str, min: u32) -> Option<u32> {
        self.count_in(env, file, v, what, min..=u32::MAX)
    }

    /// A whole number in `range`; the limits of `locklab_model::cost` come in here.
    pub fn count_in(
        &mut self,
        env: Env,
        file: usize,
        v: &Val,
        what: &str,
        range: std::ops::RangeInclusive<u32>,
    ) -> Option<u32> {
        let (min, max) = (*range.start(), *range.end());
        let (s, v, file) = self.scalar(env, file, v, what)?;
        match s {
            Scalar::Int(i) if i >= i64::from(min) && i <= i64::from(max) => Some(i as u32),
            Scalar::Int(i) if i < i64::from(min) => {
                self.err(
                    file,
                    v.span,
                    format!("{what} must be at least {min}, found {i}"),
                )
                .set_label(format!("at least {min}"));
                None
            }
            Scalar::Int(i) if max == u32::MAX => {
                self.err(file, v.span, format!("{what} is too large ({i})"));
                None
            }
            Scalar::Int(i) => {
                self.err(
                    file,
                    v.span,
                    format!("{what} must be at most {max}, found {i}"),
                )
                .set_label(format!("at most {max}"));
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
        range: std::ops::RangeInclusive<f64>,
    ) -> Option<f64> {
        let (lo, hi) = (*range.start(), *range.end());
        let (s, v, file) = self.scalar(env, file, v, what)?;
        let f = match s {
            Scalar::Int(i) => i as f64,
            Scalar::Float(f) | Scalar::Percent(f) => f,
            Scalar::Unit(..) => {
                self.mismatch(file, &v, what, "a plain number", None);
                return None;
            }
        };
        if !range.contains(&f) {
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

    /// A non-empty list of whole numbers below `below`.
    pub fn u32_list(
        &mut self,
        env: Env,
        file: usize,
        v: &Val,
        what: &str,
        below: u32,
    ) -> Option<Vec<u32>> {
        let (items, file) = self.list_items(env, file, v, what)?;
        if items.is_empty() {
            self.err(file, v.span, format!("{what} must not be empty"));
            return None;
        }
        let mut out = Vec::new();
        let mut ok = true;
        for it in &items {
            match self.count_in(env, file, it, what, 0..=below - 1) {
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
}
