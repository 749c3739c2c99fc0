//! Units, resolved once: every duration becomes nanoseconds, every size bytes,
//! every frequency hertz, every percentage a fraction.

use crate::diag::did_you_mean;
use crate::syntax::{Val, ValKind};
use locklab_model::plan::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dim {
    Duration,
    Size,
    Freq,
    Percent,
}

impl Dim {
    pub fn noun(self) -> &'static str {
        match self {
            Dim::Duration => "a duration",
            Dim::Size => "a size",
            Dim::Freq => "a frequency",
            Dim::Percent => "a percentage",
        }
    }
}

/// (unit, dimension, scale to the base unit)
pub const UNITS: &[(&str, Dim, u64)] = &[
    ("ns", Dim::Duration, 1),
    ("us", Dim::Duration, 1_000),
    ("\u{b5}s", Dim::Duration, 1_000),
    ("ms", Dim::Duration, 1_000_000),
    ("s", Dim::Duration, 1_000_000_000),
    ("B", Dim::Size, 1),
    ("KiB", Dim::Size, 1 << 10),
    ("MiB", Dim::Size, 1 << 20),
    ("GiB", Dim::Size, 1 << 30),
    ("Hz", Dim::Freq, 1),
    ("kHz", Dim::Freq, 1_000),
    ("MHz", Dim::Freq, 1_000_000),
    ("GHz", Dim::Freq, 1_000_000_000),
];

/// A number as written, with its unit resolved.
#[derive(Debug, Clone, PartialEq)]
pub enum Scalar {
    Int(i64),
    Float(f64),
    /// Base units (ns, bytes, Hz).
    Unit(Dim, u64),
    /// A percentage, as a fraction (`2%` = 0.02).
    Percent(f64),
}

impl Scalar {
    pub fn noun(&self) -> &'static str {
        match self {
            Scalar::Int(_) | Scalar::Float(_) => "a plain number",
            Scalar::Unit(d, _) => d.noun(),
            Scalar::Percent(_) => "a percentage",
        }
    }
    pub fn as_f64(&self) -> f64 {
        match *self {
            Scalar::Int(i) => i as f64,
            Scalar::Float(f) | Scalar::Percent(f) => f,
            Scalar::Unit(_, n) => n as f64,
        }
    }
}

/// Parse `text` (digits, `_`, optional fraction and exponent) and apply `unit`.
pub fn number(text: &str, unit: Option<&str>) -> Result<Scalar, (String, Option<String>)> {
    let clean: String = text.chars().filter(|c| *c != '_').collect();
    let is_float = clean.contains(['.', 'e', 'E']);
    let Some(u) = unit else {
        return if is_float {
            match clean.parse::<f64>() {
                Ok(f) if f.is_finite() => Ok(Scalar::Float(f)),
                _ => Err((format!("number `{text}` is out of range"), None)),
            }
        } else {
            clean
                .parse::<i64>()
                .map(Scalar::Int)
                .map_err(|_| (format!("number `{text}` is out of range"), None))
        };
    };
    if u == "%" {
        return match clean.parse::<f64>() {
            Ok(f) if f.is_finite() => Ok(Scalar::Percent(f / 100.0)),
            _ => Err((format!("number `{text}` is out of range"), None)),
        };
    }
    let Some(&(_, dim, scale)) = UNITS.iter().find(|(name, _, _)| *name == u) else {
        let help = match u {
            "KB" | "kB" | "K" | "k" => Some("write `KiB` (1024 bytes)".to_string()),
            "MB" | "M" => Some("write `MiB` (1024 KiB)".to_string()),
            "GB" | "G" => Some("write `GiB` (1024 MiB)".to_string()),
            "b" => Some("write `B` for bytes".to_string()),
            "sec" | "secs" => Some("write `s`".to_string()),
            "msec" => Some("write `ms`".to_string()),
            "usec" => Some("write `us`".to_string()),
            "nsec" => Some("write `ns`".to_string()),
            "ghz" | "Ghz" => Some("write `GHz`".to_string()),
            _ => did_you_mean(u, UNITS.iter().map(|(n, _, _)| *n).chain(["%"])),
        };
        return Err((format!("unknown unit `{u}`"), help));
    };
    if clean.starts_with('-') {
        return Err((
            format!("{} cannot be negative (`{text}{u}`)", dim.noun()),
            None,
        ));
    }
    let base = if is_float {
        let f: f64 = clean
            .parse()
            .map_err(|_| (format!("number `{text}` is out of range"), None))?;
        let v = f * scale as f64;
        if !v.is_finite() || v >= u64::MAX as f64 {
            return Err((format!("`{text}{u}` is too large"), None));
        }
        let r = v.round();
        if (v - r).abs() > 1e-6 * v.abs().max(1.0) {
            let base = match dim {
                Dim::Duration => "nanoseconds",
                Dim::Size => "bytes",
                _ => "hertz",
            };
            return Err((format!("`{text}{u}` is not a whole number of {base}"), None));
        }
        r as u64
    } else {
        let n: u64 = clean
            .parse()
            .map_err(|_| (format!("number `{text}` is out of range"), None))?;
        n.checked_mul(scale)
            .ok_or_else(|| (format!("`{text}{u}` is too large"), None))?
    };
    Ok(Scalar::Unit(dim, base))
}

/// A duration with a fraction (`1.8ns`, `0.25us`) in picoseconds, for a machine cost;
/// `None` for anything else (a whole number, another unit), which [`number`] reads.
pub fn picoseconds(text: &str, unit: &str) -> Option<Result<u64, String>> {
    let clean: String = text.chars().filter(|c| *c != '_').collect();
    let &(_, dim, scale) = UNITS.iter().find(|(name, _, _)| *name == unit)?;
    if dim != Dim::Duration || !clean.contains(['.', 'e', 'E']) {
        return None;
    }
    if clean.starts_with('-') {
        return Some(Err(format!(
            "a duration cannot be negative (`{text}{unit}`)"
        )));
    }
    let Ok(f) = clean.parse::<f64>() else {
        return Some(Err(format!("number `{text}` is out of range")));
    };
    let ps = f * scale as f64 * 1_000.0;
    if !ps.is_finite() || ps >= u64::MAX as f64 {
        return Some(Err(format!("`{text}{unit}` is too large")));
    }
    // Within a thousandth of a picosecond of a whole one: exact in a double up to
    // 10¹² ps, a cost's limit (1 s); past that the caller says it is too long.
    let r = ps.round();
    if ps < 1e15 && (ps - r).abs() > 1e-3 {
        return Some(Err(format!(
            "`{text}{unit}` is not a whole number of picoseconds"
        )));
    }
    Some(Ok(r as u64))
}

/// A claim constant in base units as a real number (`77.5ns` is fine here), with
/// its dimension (`None` for plain numbers; percentages are fractions).
pub fn quantity_f64(
    text: &str,
    unit: Option<&str>,
) -> Result<(f64, Option<Dim>), (String, Option<String>)> {
    let clean: String = text.chars().filter(|c| *c != '_').collect();
    let f: f64 = clean
        .parse()
        .map_err(|_| (format!("number `{text}` is out of range"), None))?;
    if !f.is_finite() {
        return Err((format!("number `{text}` is out of range"), None));
    }
    match unit {
        None => Ok((f, None)),
        Some("%") => Ok((f / 100.0, Some(Dim::Percent))),
        Some(u) => match UNITS.iter().find(|(name, _, _)| *name == u) {
            Some(&(_, dim, scale)) => Ok((f * scale as f64, Some(dim))),
            None => number(text, Some(u)).map(|_| (f, None)),
        },
    }
}

/// A sweep or selector value as plan data; `Err` says why it cannot be one.
pub fn to_plan_value(v: &Val) -> Result<Value, (String, Option<String>)> {
    match &v.kind {
        ValKind::Num { text, unit } => Ok(
            match number(text, unit.as_ref().map(|u| u.name.as_str()))? {
                Scalar::Int(i) => Value::Int(i),
                Scalar::Float(f) | Scalar::Percent(f) => Value::Float(f),
                Scalar::Unit(Dim::Duration, n) => Value::Duration(n),
                Scalar::Unit(Dim::Size, n) => Value::Size(n),
                Scalar::Unit(Dim::Freq, n) => Value::Freq(n),
                Scalar::Unit(Dim::Percent, n) => Value::Float(n as f64 / 100.0),
            },
        ),
        ValKind::Fraction { num, den } => Ok(Value::Float(fraction(num, den)?)),
        ValKind::Str(s) | ValKind::Symbol(s) => Ok(Value::Str(s.clone())),
        ValKind::Bool(b) => Ok(Value::Bool(*b)),
        ValKind::AxisRef(a) => Err((
            format!("`${a}` cannot be used here: an axis value must be written out"),
            None,
        )),
        other => Err((
            format!("expected a single value, found {}", kind_noun(other)),
            None,
        )),
    }
}

pub fn fraction(num: &str, den: &str) -> Result<f64, (String, Option<String>)> {
    let n: f64 = num
        .replace('_', "")
        .parse()
        .map_err(|_| (format!("number `{num}` is out of range"), None))?;
    let d: f64 = den
        .replace('_', "")
        .parse()
        .map_err(|_| (format!("number `{den}` is out of range"), None))?;
    if d == 0.0 {
        return Err((format!("`{num}/{den}` divides by zero"), None));
    }
    let f = n / d;
    if !f.is_finite() {
        return Err((format!("`{num}/{den}` is out of range"), None));
    }
    Ok(f)
}

/// What a value is, for messages ("found a size").
pub fn kind_noun(k: &ValKind) -> String {
    match k {
        ValKind::Num { text, unit } => match number(text, unit.as_ref().map(|u| u.name.as_str())) {
            Ok(s) => format!(
                "{} (`{text}{}`)",
                s.noun(),
                unit.as_ref().map_or("", |u| u.name.as_str())
            ),
            Err(_) => format!("`{text}`"),
        },
        ValKind::Fraction { num, den } => format!("a fraction (`{num}/{den}`)"),
        ValKind::Str(s) => format!("a string (\"{s}\")"),
        ValKind::Bool(b) => format!("`{b}`"),
        ValKind::Symbol(s) => format!("the name `{s}`"),
        ValKind::AxisRef(a) => format!("`${a}`"),
        ValKind::List(_) => "a list".into(),
        ValKind::Range { .. } => "a range".into(),
        ValKind::Call { name, .. } => format!("`{}(...)`", name.name),
        ValKind::Record { ctor: Some(c), .. } => format!("`{} {{ ... }}`", c.name),
        ValKind::Record { ctor: None, .. } => "a block `{ ... }`".into(),
    }
}

/// The noun for a plan value's type, for mismatches between axis values.
pub fn value_noun(v: &Value) -> &'static str {
    match v {
        Value::Int(_) | Value::Float(_) => "a number",
        Value::Duration(_) => "a duration",
        Value::Size(_) => "a size",
        Value::Freq(_) => "a frequency",
        Value::Str(_) => "a name",
        Value::Bool(_) => "`true` or `false`",
    }
}

/// Language text for a plan value (parses back to the same value).
pub fn value_text(v: &Value) -> String {
    match v {
        Value::Int(i) => i.to_string(),
        Value::Float(f) => {
            let s = format!("{f:?}");
            if s.contains(['.', 'e', 'E']) {
                s
            } else {
                format!("{s}.0")
            }
        }
        // Exact, in the largest unit that divides it: `10ms`, `128KiB`.
        Value::Duration(n) => locklab_model::units::duration_label(*n),
        Value::Size(n) => locklab_model::units::size_label(*n),
        Value::Freq(n) => format!("{n}Hz"),
        Value::Str(s) => {
            if is_plain_name(s) {
                s.clone()
            } else {
                format!(
                    "\"{}\"",
                    s.replace('\\', "\\\\")
                        .replace('"', "\\\"")
                        .replace('\n', "\\n")
                        .replace('\t', "\\t")
                )
            }
        }
        Value::Bool(b) => b.to_string(),
    }
}

fn is_plain_name(s: &str) -> bool {
    let mut c = s.chars();
    matches!(c.next(), Some(ch) if ch.is_ascii_alphabetic() || ch == '_')
        && c.all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
        && s != "true"
        && s != "false"
}

/// Compare two plan values of compatible types.
pub fn cmp_values(a: &Value, b: &Value) -> Option<std::cmp::Ordering> {
    use Value::*;
    match (a, b) {
        (Int(x), Int(y)) => Some(x.cmp(y)),
        (Int(_) | Float(_), Int(_) | Float(_)) => a.as_f64()?.partial_cmp(&b.as_f64()?),
        (Duration(x), Duration(y)) | (Size(x), Size(y)) | (Freq(x), Freq(y)) => Some(x.cmp(y)),
        (Str(x), Str(y)) => Some(x.cmp(y)),
        (Bool(x), Bool(y)) => Some(x.cmp(y)),
        _ => None,
    }
}

pub fn same_type(a: &Value, b: &Value) -> bool {
    use Value::*;
    matches!(
        (a, b),
        (Int(_) | Float(_), Int(_) | Float(_))
            | (Duration(_), Duration(_))
            | (Size(_), Size(_))
            | (Freq(_), Freq(_))
            | (Str(_), Str(_))
            | (Bool(_), Bool(_))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_normalise_to_base() {
        assert_eq!(
            number("10", Some("ms")),
            Ok(Scalar::Unit(Dim::Duration, 10_000_000))
        );
        assert_eq!(
            number("1.5", Some("us")),
            Ok(Scalar::Unit(Dim::Duration, 1_500))
        );
        assert_eq!(
            number("128", Some("KiB")),
            Ok(Scalar::Unit(Dim::Size, 131_072))
        );
        assert_eq!(
            number("2.5", Some("GHz")),
            Ok(Scalar::Unit(Dim::Freq, 2_500_000_000))
        );
        assert_eq!(number("2", Some("%")), Ok(Scalar::Percent(0.02)));
        assert_eq!(number("1_000", None), Ok(Scalar::Int(1000)));
    }

    #[test]
    fn strings_are_written_with_their_escapes() {
        let v = Value::Str("a\"b\\c\nd\te".into());
        assert_eq!(value_text(&v), "\"a\\\"b\\\\c\\nd\\te\"");
    }

    #[test]
    fn bad_numbers_are_errors_not_panics() {
        assert!(number("0.5", Some("ns")).is_err());
        assert!(number("-1", Some("ms")).is_err());
        assert!(number("99999999999999999999", Some("s")).is_err());
        assert!(number("18446744073709551615", Some("s")).is_err());
        let (msg, help) = number("256", Some("KB")).unwrap_err();
        assert!(msg.contains("unknown unit `KB`"));
        assert!(help.unwrap().contains("KiB"));
    }

    #[test]
    fn values_order_within_a_type() {
        use std::cmp::Ordering::*;
        assert_eq!(cmp_values(&Value::Int(2), &Value::Float(2.0)), Some(Equal));
        assert_eq!(
            cmp_values(&Value::Duration(1), &Value::Duration(2)),
            Some(Less)
        );
        assert_eq!(cmp_values(&Value::Duration(1), &Value::Size(1)), None);
    }
}
