//! Numbers and labels: tick labels, metric and axis labels with their units.

use locklab_model::metrics;
use locklab_model::plan::{Plan, Value};
use locklab_model::units;

/// How numbers on an axis are written.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(super) enum Unit {
    #[default]
    Plain,
    Duration,
    Size,
}

/// `throughput (ops/s)`, `wait p99 (ns)`, `speedup over baseline (×)`: the
/// registry's label and unit. A column the registry does not list (a workload's own
/// diagnostic in `extra`) is labelled from its name and unit suffix.
pub fn metric_label(m: &str) -> String {
    if let Some(metric) = metrics::get(m) {
        return metric.axis_label();
    }
    let (base, unit) = if let Some(b) = m.strip_suffix("_ns") {
        (b, " (ns)")
    } else if let Some(b) = m.strip_suffix("_bytes") {
        (b, " (bytes)")
    } else if let Some(b) = m.strip_suffix("_ops_s") {
        (b, " (ops/s)")
    } else {
        (m, "")
    };
    format!("{}{unit}", base.replace('_', " "))
}

/// How a metric's values are written on an axis: by the registry's unit, else by
/// the column's unit suffix.
pub(super) fn unit_of_metric(m: &str) -> Unit {
    match metrics::get(m).map(|m| m.unit) {
        Some(metrics::Unit::Nanos) => Unit::Duration,
        Some(_) => Unit::Plain,
        None if m.ends_with("_ns") => Unit::Duration,
        None if m.ends_with("_bytes") => Unit::Size,
        None => Unit::Plain,
    }
}

pub(super) fn si(v: f64) -> String {
    if v.abs() < 1e-12 {
        return "0".into();
    }
    let a = v.abs();
    if a < 0.01 {
        // Tail fractions (1e-3, 5e-5): a power of ten reads better than 0.000.
        let e = a.log10().floor();
        let m = v / 10f64.powf(e);
        let m = format!("{m:.1}");
        let m = m.trim_end_matches('0').trim_end_matches('.');
        return format!("{m}e{e}");
    }
    let (d, s) = if a >= 1e9 {
        (1e9, "G")
    } else if a >= 1e6 {
        (1e6, "M")
    } else if a >= 1e3 {
        (1e3, "k")
    } else {
        (1.0, "")
    };
    let x = v / d;
    // Three significant digits, trailing zeros dropped: 1.25M, 950k, 0.05.
    let t = if x.abs() >= 100.0 {
        format!("{x:.0}")
    } else if x.abs() >= 10.0 {
        format!("{x:.1}")
    } else if x.abs() >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    };
    let t = if t.contains('.') {
        t.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        t
    };
    format!("{t}{s}")
}

pub(super) fn fmt_tick(v: f64, unit: Unit) -> String {
    match unit {
        Unit::Duration if v >= 1.0 => units::duration(v),
        Unit::Size if v >= 1.0 && (v.round() as u64).is_power_of_two() => {
            units::size_label(v.round() as u64)
        }
        _ => si(v),
    }
}

/// Tick count for a log axis spanning `width` decades: whole decades when there
/// are several, finer steps otherwise.
pub(super) fn log_ticks(width: f64) -> usize {
    if width < 1.5 {
        8
    } else {
        (width.ceil() as usize + 1).max(4)
    }
}

pub(super) fn axis_unit(plan: &Plan, axis: &str) -> Unit {
    match plan
        .axes
        .iter()
        .find(|a| a.name == axis)
        .and_then(|a| a.values.first())
    {
        Some(Value::Duration(_)) => Unit::Duration,
        Some(Value::Size(_)) => Unit::Size,
        _ => Unit::Plain,
    }
}

pub(super) fn axis_label(plan: &Plan, axis: &str) -> String {
    match axis_unit(plan, axis) {
        Unit::Duration => format!("{axis} (time)"),
        Unit::Size => format!("{axis} (bytes)"),
        Unit::Plain if axis == "threads" => "threads".into(),
        Unit::Plain => axis.replace('_', " "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_labels_read_naturally() {
        assert_eq!(fmt_tick(10_000_000.0, Unit::Duration), "10ms");
        assert_eq!(fmt_tick(158_489.3, Unit::Duration), "158us");
        assert_eq!(fmt_tick(1_584_893.0, Unit::Duration), "1.58ms");
        assert_eq!(fmt_tick(100_000.0, Unit::Duration), "100us");
        assert_eq!(fmt_tick(1_500_000.0, Unit::Plain), "1.5M");
        assert_eq!(fmt_tick(1_250_000.0, Unit::Plain), "1.25M");
        assert_eq!(fmt_tick(-1e-17, Unit::Plain), "0");
        assert_eq!(fmt_tick(1e-4, Unit::Plain), "1e-4");
        assert_eq!(fmt_tick(0.005, Unit::Plain), "5e-3");
        assert_eq!(fmt_tick(131_072.0, Unit::Size), "128KiB");
        assert_eq!(metric_label("wait_p99_ns"), "wait p99 (ns)");
        assert_eq!(metric_label("speedup"), "speedup over baseline (×)");
        assert_eq!(metric_label("refill_per_burst_ns"), "refill per burst (ns)");
        assert_eq!(unit_of_metric("wait_max_ns"), Unit::Duration);
        assert_eq!(unit_of_metric("jain"), Unit::Plain);
    }
}
