//! Unit formatting: one place that writes durations and sizes for people.
//!
//! ```
//! use locklab_model::units;
//! assert_eq!(units::duration_label(10_000_000), "10ms");
//! assert_eq!(units::duration_label(1_500), "1500ns");
//! assert_eq!(units::duration(1_580_000.0), "1.58ms");
//! assert_eq!(units::size_label(128 << 10), "128KiB");
//! ```

/// Exact, in the largest unit that divides it (`10ms`, `1500ns`): the language's own spelling.
pub fn duration_label(ns: u64) -> String {
    const UNITS: [(u64, &str); 4] = [
        (1_000_000_000, "s"),
        (1_000_000, "ms"),
        (1_000, "us"),
        (1, "ns"),
    ];
    for (scale, unit) in UNITS {
        if ns >= scale && ns % scale == 0 {
            return format!("{}{unit}", ns / scale);
        }
    }
    if ns == 0 {
        return "0ns".into();
    }
    for (scale, unit) in UNITS {
        if ns >= scale {
            return format!("{}{unit}", ns as f64 / scale as f64);
        }
    }
    format!("{ns}ns")
}

pub fn size_label(b: u64) -> String {
    const UNITS: [(u64, &str); 4] = [
        (1 << 30, "GiB"),
        (1 << 20, "MiB"),
        (1 << 10, "KiB"),
        (1, "B"),
    ];
    for (scale, unit) in UNITS {
        if b >= scale && b % scale == 0 {
            return format!("{}{unit}", b / scale);
        }
    }
    format!("{b}B")
}

/// `158us`, `1.58ms`, `10ms`: three significant digits in the largest unit that
/// keeps the value at or above 1 (figures, tables, measured values).
pub fn duration(ns: f64) -> String {
    if !ns.is_finite() {
        return if ns.is_nan() {
            "n/a".into()
        } else {
            format!("{ns}")
        };
    }
    let (scale, unit) = [(1e9, "s"), (1e6, "ms"), (1e3, "us"), (1.0, "ns")]
        .into_iter()
        .find(|(sc, _)| ns.abs() >= *sc)
        .unwrap_or((1.0, "ns"));
    let x = ns / scale;
    let t = if x.abs() >= 100.0 {
        format!("{x:.0}")
    } else if x.abs() >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    };
    let t = if t.contains('.') {
        t.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        t
    };
    format!("{t}{unit}")
}
