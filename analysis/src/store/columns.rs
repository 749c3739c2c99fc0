//! Which record field holds each column. The metric columns of each table, their
//! order and their tables come from the registry (`locklab_model::metrics`); this
//! file only says how to read each one from a record. A points metric of the registry
//! without a field here is read from the record's `extra` map (the `wakeup`
//! workload's metrics), like every other key of that map.

use locklab_model::metrics::{self, Table};
use locklab_model::records::{HandoffRecord, PointRecord, ThreadRecord};

/// How a metric column is read from a record: counts are whole numbers (u64
/// columns; `None` in the record, null in the table, where a count was not
/// measured), measures f64 (NaN in the record, null in the table, where a metric
/// does not apply).
pub(super) enum Field<R> {
    Count(fn(&R) -> Option<u64>),
    Measure(fn(&R) -> f64),
}

impl<R> Clone for Field<R> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<R> Copy for Field<R> {}

pub(super) type Fields<R> = &'static [(&'static str, Field<R>)];

// Non-capturing closures coerce to fn pointers.
pub(super) const POINT_FIELDS: Fields<PointRecord> = &[
    ("acquisitions", Field::Count(|p| Some(p.acquisitions))),
    ("ops", Field::Count(|p| Some(p.ops))),
    ("waits", Field::Count(|p| p.waits)),
    ("waits_censored", Field::Count(|p| Some(p.waits_censored))),
    ("reacquisitions", Field::Count(|p| p.reacquisitions)),
    ("throughput_ops_s", Field::Measure(|p| p.throughput_ops_s)),
    ("cpu_ns_per_acq", Field::Measure(|p| p.cpu_ns_per_acq)),
    ("overhead_ns", Field::Measure(|p| p.overhead_ns)),
    ("jain", Field::Measure(|p| p.jain)),
    ("cov_acq", Field::Measure(|p| p.cov_acq)),
    ("max_min", Field::Measure(|p| p.max_min)),
    ("fairness_factor", Field::Measure(|p| p.fairness_factor)),
    (
        "window_fairness_factor_max",
        Field::Measure(|p| p.window_fairness_factor_max),
    ),
    ("wait_p50_ns", Field::Measure(|p| p.wait_p50_ns)),
    ("wait_p99_ns", Field::Measure(|p| p.wait_p99_ns)),
    ("wait_p999_ns", Field::Measure(|p| p.wait_p999_ns)),
    ("wait_max_ns", Field::Measure(|p| p.wait_max_ns)),
    ("wait_mean_ns", Field::Measure(|p| p.wait_mean_ns)),
    ("hold_mean_ns", Field::Measure(|p| p.hold_mean_ns)),
    ("bypass_max", Field::Measure(|p| p.bypass_max)),
    ("bypass_mean", Field::Measure(|p| p.bypass_mean)),
    (
        "handoff_local_frac",
        Field::Measure(|p| p.handoff_local_frac),
    ),
    ("cpu_wall_ratio", Field::Measure(|p| p.cpu_wall_ratio)),
    (
        "critical_nominal_ns",
        Field::Measure(|p| p.critical_nominal_ns),
    ),
    (
        "critical_achieved_ns",
        Field::Measure(|p| p.critical_achieved_ns),
    ),
    (
        "outside_nominal_ns",
        Field::Measure(|p| p.outside_nominal_ns),
    ),
    (
        "outside_achieved_ns",
        Field::Measure(|p| p.outside_achieved_ns),
    ),
];

pub(super) const THREAD_FIELDS: Fields<ThreadRecord> = &[
    ("acquisitions", Field::Count(|t| Some(t.acquisitions))),
    ("waits", Field::Count(|t| t.waits)),
    ("waits_censored", Field::Count(|t| Some(t.waits_censored))),
    ("reacquisitions", Field::Count(|t| t.reacquisitions)),
    ("share", Field::Measure(|t| t.share)),
    ("wait_p50_ns", Field::Measure(|t| t.wait_p50_ns)),
    ("wait_p99_ns", Field::Measure(|t| t.wait_p99_ns)),
    ("wait_p999_ns", Field::Measure(|t| t.wait_p999_ns)),
    ("wait_max_ns", Field::Measure(|t| t.wait_max_ns)),
    ("wait_mean_ns", Field::Measure(|t| t.wait_mean_ns)),
    ("hold_mean_ns", Field::Measure(|t| t.hold_mean_ns)),
    ("bypass_max", Field::Measure(|t| t.bypass_max)),
    ("cpu_ns", Field::Measure(|t| t.cpu_ns)),
];

pub(super) const HANDOFF_FIELDS: Fields<HandoffRecord> = &[
    ("count", Field::Count(|h| Some(h.count))),
    ("wait_p50_ns", Field::Measure(|h| h.wait_p50_ns)),
    ("wait_p99_ns", Field::Measure(|h| h.wait_p99_ns)),
    ("wait_max_ns", Field::Measure(|h| h.wait_max_ns)),
];

/// The metric columns of `table` that record fields hold, in registry order (the
/// stored column order), each with its field.
pub(super) fn metric_columns<R>(
    table: Table,
    fields: Fields<R>,
) -> impl Iterator<Item = (&'static str, Field<R>)> {
    metrics::in_table(table).filter_map(move |m| {
        fields
            .iter()
            .find(|(name, _)| *name == m.name)
            .map(|(_, f)| (m.name, *f))
    })
}

/// Metric columns of threads.parquet, in column order.
pub const THREAD_METRICS: &[&str] =
    &metrics::names_in::<{ metrics::count_in(Table::Threads) }>(Table::Threads);

/// Metric columns of handoffs.parquet, in column order.
pub const HANDOFF_METRICS: &[&str] =
    &metrics::names_in::<{ metrics::count_in(Table::Handoffs) }>(Table::Handoffs);

/// The columns of points.parquet that a record holds but that are no metric: its
/// identity and description (axis values and the `extra` map aside).
pub const POINT_RECORD_COLUMNS: &[&str] = &[
    "schema_version",
    "run_id",
    "experiment",
    "host",
    "point",
    "point_id",
    "mode",
    "rep",
    "seed",
    "lock",
    "lock_algo",
    "workload",
    "threads",
    "skipped",
    "skip_cause",
    "window_ns",
    "wait_max_censored",
    "bypass_max_censored",
    "fairness_window_ns",
    "noise",
    "wait_cdf_ns",
];

#[cfg(test)]
mod tests {
    use super::*;

    fn names<R>(fields: Fields<R>) -> Vec<&'static str> {
        fields.iter().map(|(n, _)| *n).collect()
    }

    #[test]
    fn every_field_is_a_registry_metric_of_its_table() {
        for (table, fields) in [
            (Table::Points, names(POINT_FIELDS)),
            (Table::Threads, names(THREAD_FIELDS)),
            (Table::Handoffs, names(HANDOFF_FIELDS)),
        ] {
            let registry: Vec<&str> = metrics::in_table(table).map(|m| m.name).collect();
            for f in &fields {
                assert!(
                    registry.contains(f),
                    "{f} is a field of the {} table but not a registry metric of it",
                    table.as_str()
                );
            }
            // Every registry metric of the row tables is a record field; a points
            // metric without one is read from the record's `extra` map (a new point
            // metric needs no record field, see ARCHITECTURE.md).
            for m in metrics::in_table(table) {
                if !fields.contains(&m.name) {
                    assert!(
                        table == Table::Points,
                        "{} is a registry metric of the {} table without a record field",
                        m.name,
                        table.as_str()
                    );
                }
            }
        }
        for c in POINT_RECORD_COLUMNS {
            assert!(metrics::get(c).is_none(), "{c} is a metric");
        }
    }
}
