//! How the rows of one repetition that a selection picks (the threads of a node, the
//! hand-offs between remote nodes, the thread on `cpu = 7`) combine into one value:
//! by each metric's [`Combine`] rule in the registry, as polars aggregations for the
//! pipeline's per-node and selected summaries ([`aggs`]) and over plain values for
//! claims ([`values`]). Rows without a value (NaN) are left out.

use crate::stats;
use locklab_model::metrics::{self, Combine, Table};
use polars::prelude::*;

fn rule(metric: &str) -> Combine {
    metrics::get(metric).map_or(Combine::WeightedMean, |m| m.combine)
}

/// Combine the values `v` (with weights `w`, from the table's weight column) of the
/// rows one repetition matched. A weighted mean whose weights sum to zero falls back
/// to the median of the values.
pub(crate) fn values(metric: &str, v: &[f64], w: &[f64]) -> f64 {
    if v.len() == 1 {
        return v[0];
    }
    let finite: Vec<(f64, f64)> = v
        .iter()
        .zip(w)
        .filter(|(x, _)| !x.is_nan())
        .map(|(a, b)| (*a, *b))
        .collect();
    if finite.is_empty() {
        return f64::NAN;
    }
    match rule(metric) {
        Combine::Sum => finite.iter().map(|(x, _)| x).sum(),
        Combine::Max => finite
            .iter()
            .map(|(x, _)| *x)
            .fold(f64::NEG_INFINITY, f64::max),
        Combine::WeightedMean | Combine::Single => {
            let sw: f64 = finite.iter().map(|(_, w)| w).sum();
            if sw > 0.0 {
                finite.iter().map(|(x, w)| x * w).sum::<f64>() / sw
            } else {
                stats::median(&finite.iter().map(|(x, _)| *x).collect::<Vec<_>>())
            }
        }
    }
}

fn nan_to_null(name: &str) -> Expr {
    col(name).cast(DataType::Float64).fill_nan(lit(NULL))
}

/// Row-level helpers for a weighted mean: x·w, and w where x is known. Computed
/// before grouping so the group-by stays on polars' fast aggregation path.
fn weight_cols(metric: &str, weight: &str) -> [Expr; 2] {
    let (x, w) = (nan_to_null(metric), nan_to_null(weight));
    [
        (x.clone() * w.clone()).alias(format!("__wx_{metric}")),
        when(x.is_not_null())
            .then(w)
            .otherwise(lit(0.0))
            .alias(format!("__wv_{metric}")),
    ]
}

fn weighted(metric: &str) -> Expr {
    (col(format!("__wx_{metric}")).sum() / col(format!("__wv_{metric}")).sum()).alias(metric)
}

/// The rows of `table` combined per group, one aggregation per registry metric of the
/// table (in registry order). Returns the row-level columns to add before grouping,
/// and the aggregations. A weighted mean whose weights sum to zero is NaN here.
pub(crate) fn aggs(table: Table) -> (Vec<Expr>, Vec<Expr>) {
    let mut pre = Vec::new();
    let aggs = metrics::in_table(table)
        .map(|m| match m.combine {
            Combine::Sum => nan_to_null(m.name).sum().alias(m.name),
            Combine::Max => nan_to_null(m.name).max().alias(m.name),
            Combine::WeightedMean => {
                pre.extend(weight_cols(m.name, table.weight_column()));
                weighted(m.name)
            }
            Combine::Single => col(m.name).first(),
        })
        .collect();
    (pre, aggs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_combine_by_the_registry_rule() {
        let (v, w) = ([10.0, 30.0, f64::NAN], [1.0, 3.0, 5.0]);
        assert_eq!(values("acquisitions", &v, &w), 40.0);
        assert_eq!(values("wait_p99_ns", &v, &w), 30.0);
        assert_eq!(values("wait_p50_ns", &v, &w), 25.0);
        assert_eq!(values("wait_p50_ns", &v, &[0.0, 0.0, 1.0]), 20.0);
        assert!(values("wait_max_ns", &[f64::NAN, f64::NAN], &w).is_nan());
        let (pre, aggs) = aggs(Table::Handoffs);
        assert_eq!(pre.len(), 2, "one weighted mean: wait_p50_ns");
        assert_eq!(aggs.len(), metrics::in_table(Table::Handoffs).count());
    }
}
