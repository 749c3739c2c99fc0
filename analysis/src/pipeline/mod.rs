//! The polars pipeline: repetitions aggregated per point × mode (median and a 95 %
//! interval), speedups over baseline points (paired by the plan's targets or by the
//! language's baseline rule), per-thread and per-node aggregates, and node-to-node
//! hand-off tables.
//!
//! polars groups and filters; the median and its order-statistic interval (see
//! [`crate::stats`]) are computed on each group's values, which keeps them exact and
//! deterministic. Every summary holds, for each metric `m`, the columns `m` (median),
//! `m_lo` and `m_hi` (the interval), plus `n_reps`. Summaries are sorted by their
//! keys: group-bys and joins do not keep row order.

use crate::combine;
use crate::error::{Error, Result};
use crate::stats::{self, Estimate};
use crate::store::{AxisColumn, Results, HANDOFF_METRICS, POINT_RECORD_COLUMNS, THREAD_METRICS};
use locklab_model::metrics::Table;
use locklab_model::plan::{Plan, Point, Value};
use locklab_model::records::SkipCause;
use locklab_model::select::{self, BaselineQuery};
use polars::prelude::*;
use rayon::prelude::*;
use std::collections::{BTreeSet, HashMap};

mod speedup;
pub use speedup::{baseline_pairs, speedup, speedup_of, SpeedupPair};

pub(crate) fn perr(ctx: &str) -> impl FnOnce(PolarsError) -> Error + '_ {
    move |source| Error::Polars {
        context: ctx.to_string(),
        source,
    }
}

fn schema_of(lf: &LazyFrame, what: &str) -> Result<SchemaRef> {
    lf.clone().collect_schema().map_err(Error::polars(format!(
        "read the schema of the {what} table"
    )))
}

/// Axis columns present in a table's schema.
pub(crate) fn present_axes(results: &Results, schema: &Schema) -> Vec<AxisColumn> {
    results
        .axis_columns()
        .into_iter()
        .filter(|a| schema.contains(&a.column))
        .collect()
}

/// The metric columns of points.parquet: every numeric column that is neither a
/// record column (`store::POINT_RECORD_COLUMNS`) nor an axis, that is, the registry's
/// points metrics and the flattened `extra` keys.
pub fn point_metrics(results: &Results) -> Result<Vec<String>> {
    let schema = schema_of(&results.points, "points")?;
    let axes: BTreeSet<String> = results
        .axis_columns()
        .into_iter()
        .map(|a| a.column)
        .collect();
    Ok(schema
        .iter()
        .filter(|(name, dt)| {
            dt.is_primitive_numeric()
                && !POINT_RECORD_COLUMNS.contains(&name.as_str())
                && !axes.contains(name.as_str())
        })
        .map(|(n, _)| n.to_string())
        .collect())
}

/// Group `lf` by `keys`; keep `carry` columns (first value) and, for each column of
/// `first_non_null`, the group's first non-null string; for each metric, the median
/// and interval over the rows of the group that satisfy `valid`.
///
/// polars sorts by the keys and marks where each group starts; the statistics are
/// then computed over contiguous slices, without materialising a list per group.
/// Measured on 3 million thread rows (600 000 groups of 5): 1.1 s, against 5 s for
/// polars' own per-group median/min/max and about ten times that for list
/// aggregation.
pub(crate) fn summarize(
    lf: LazyFrame,
    keys: &[&str],
    carry: &[String],
    metrics: &[String],
    valid: Option<Expr>,
    first_non_null: &[&str],
) -> Result<DataFrame> {
    let ctx = format!("aggregate repetitions by {}", keys.join(", "));
    let valid_e = valid.clone().unwrap_or_else(|| lit(true));
    let mut sel: Vec<Expr> = keys.iter().map(|k| col(*k)).collect();
    sel.extend(
        carry
            .iter()
            .filter(|c| !keys.contains(&c.as_str()))
            .map(|c| col(c.as_str())),
    );
    sel.extend(
        first_non_null
            .iter()
            .map(|c| col(*c).alias(format!("__nn_{c}"))),
    );
    for m in metrics {
        sel.push(
            when(valid_e.clone())
                .then(col(m.as_str()).cast(DataType::Float64))
                .otherwise(lit(f64::NAN))
                .alias(format!("__m_{m}")),
        );
    }
    sel.push(valid_e.alias("__valid"));
    let mut new_group = lit(false);
    for k in keys {
        new_group = new_group.or(col(*k).neq_missing(col(*k).shift(lit(1))));
    }
    let sorted = lf
        .select(sel)
        .sort(
            keys.iter()
                .map(|k| PlSmallStr::from(*k))
                .collect::<Vec<_>>(),
            SortMultipleOptions::default().with_maintain_order(true),
        )
        .with_column(new_group.alias("__new"))
        .collect()
        .map_err(Error::polars(ctx.clone()))?;
    let starts: Vec<usize> = sorted
        .column("__new")
        .and_then(|c| c.bool().cloned())
        .map_err(Error::polars(ctx.clone()))?
        .iter()
        .enumerate()
        .filter(|(_, b)| b.unwrap_or(false))
        .map(|(i, _)| i)
        .collect();
    let n = sorted.height();
    let ranges: Vec<(usize, usize)> = starts
        .iter()
        .enumerate()
        .map(|(g, &a)| (a, starts.get(g + 1).copied().unwrap_or(n)))
        .collect();
    let mut keep: Vec<PlSmallStr> = keys.iter().map(|k| PlSmallStr::from(*k)).collect();
    keep.extend(
        carry
            .iter()
            .filter(|c| !keys.contains(&c.as_str()))
            .map(|c| PlSmallStr::from(c.as_str())),
    );
    let mut out = sorted
        .clone()
        .lazy()
        .filter(col("__new"))
        .select(keep.iter().map(|k| col(k.clone())).collect::<Vec<_>>())
        .collect()
        .map_err(Error::polars(ctx.clone()))?;
    for c in first_non_null {
        let v = sorted
            .column(&format!("__nn_{c}"))
            .and_then(|x| x.cast(&DataType::String))
            .map_err(Error::polars(ctx.clone()))?;
        let v = v.str().map_err(Error::polars(ctx.clone()))?;
        let vals: Vec<Option<String>> = ranges
            .iter()
            .map(|&(a, b)| (a..b).find_map(|i| v.get(i).map(str::to_string)))
            .collect();
        out.with_column(Column::new((*c).into(), vals))
            .map_err(perr("add a summary column"))?;
    }
    for m in metrics {
        let v = f64_values(&sorted, &format!("__m_{m}"))?;
        let est: Vec<Estimate> = ranges
            .par_iter()
            .map(|&(a, b)| stats::median_ci(&v[a..b]))
            .collect();
        for (suffix, get) in [
            ("", (|e: &Estimate| e.value) as fn(&Estimate) -> f64),
            ("_lo", |e| e.lo),
            ("_hi", |e| e.hi),
        ] {
            out.with_column(Column::new(
                format!("{m}{suffix}").into(),
                est.iter().map(get).collect::<Vec<f64>>(),
            ))
            .map_err(perr("add a summary column"))?;
        }
    }
    let valid_col = sorted
        .column("__valid")
        .and_then(|c| c.bool().cloned())
        .map_err(Error::polars(ctx))?;
    let n_reps: Vec<u32> = ranges
        .iter()
        .map(|&(a, b)| {
            (a..b)
                .filter(|&i| valid_col.get(i).unwrap_or(false))
                .count() as u32
        })
        .collect();
    out.with_column(Column::new("n_reps".into(), n_reps))
        .map_err(perr("add a summary column"))?;
    Ok(out)
}

/// The values of a list-of-f64 column, one vector per row (nulls dropped).
pub(crate) fn list_values(df: &DataFrame, name: &str) -> Result<Vec<Vec<f64>>> {
    let ctx = format!("read list column {name}");
    let ca = df
        .column(name)
        .and_then(|c| c.list().cloned())
        .map_err(Error::polars(ctx.clone()))?;
    ca.series_iter()
        .map(|s| match s {
            None => Ok(Vec::new()),
            Some(s) => {
                let s = s
                    .cast(&DataType::Float64)
                    .map_err(Error::polars(ctx.clone()))?;
                let f = s.f64().map_err(Error::polars(ctx.clone()))?;
                Ok(f.iter().flatten().collect())
            }
        })
        .collect()
}

/// A column as f64 values (nulls become NaN).
pub fn f64_values(df: &DataFrame, name: &str) -> Result<Vec<f64>> {
    let s = df
        .column(name)
        .and_then(|c| c.cast(&DataType::Float64))
        .map_err(Error::polars(format!("read column {name}")))?;
    let f = s
        .f64()
        .map_err(Error::polars(format!("read column {name}")))?;
    Ok(f.iter().map(|v| v.unwrap_or(f64::NAN)).collect())
}

/// A column as strings (numbers formatted, nulls empty).
pub fn str_values(df: &DataFrame, name: &str) -> Result<Vec<String>> {
    let s = df
        .column(name)
        .and_then(|c| c.cast(&DataType::String))
        .map_err(Error::polars(format!("read column {name}")))?;
    let f = s
        .str()
        .map_err(Error::polars(format!("read column {name}")))?;
    Ok(f.iter().map(|v| v.unwrap_or("").to_string()).collect())
}

/// An estimate read back from a summary's `m`, `m_lo`, `m_hi` columns.
pub fn estimates(df: &DataFrame, metric: &str) -> Result<Vec<Estimate>> {
    let v = f64_values(df, metric)?;
    let lo = f64_values(df, &format!("{metric}_lo"))?;
    let hi = f64_values(df, &format!("{metric}_hi"))?;
    let n = f64_values(df, "n_reps").unwrap_or_else(|_| vec![0.0; v.len()]);
    Ok((0..v.len())
        .map(|i| Estimate {
            value: v[i],
            lo: lo[i],
            hi: hi[i],
            n: n[i] as usize,
        })
        .collect())
}

fn identity_carry(axes: &[AxisColumn], schema: &Schema, ids: &[&str]) -> Vec<String> {
    let mut carry: Vec<String> = ids
        .iter()
        .filter(|c| schema.contains(c))
        .map(|c| c.to_string())
        .collect();
    for a in axes {
        if !carry.contains(&a.column) {
            carry.push(a.column.clone());
        }
    }
    carry
}

/// One row per point × mode: identity, axes, `n_reps` (repetitions that ran),
/// `skipped` (the reason, when no repetition ran) and every metric's median and
/// interval over the repetitions.
pub fn point_summary(results: &Results) -> Result<DataFrame> {
    let schema = schema_of(&results.points, "points")?;
    let axes = present_axes(results, &schema);
    let carry = identity_carry(
        &axes,
        &schema,
        &[
            "point_id",
            "lock",
            "lock_algo",
            "workload",
            "threads",
            "noise",
        ],
    );
    let metrics = point_metrics(results)?;
    summarize(
        results.points.clone(),
        &["point", "mode"],
        &carry,
        &metrics,
        Some(col("skipped").is_null()),
        &["skipped"],
    )
}

/// A point skipped in a mode (in at least one repetition), and why.
#[derive(Debug, Clone, PartialEq)]
pub struct SkippedPoint {
    pub point: u32,
    pub point_id: String,
    pub mode: String,
    pub lock: String,
    /// The kind of reason; `None` in results written before causes were recorded.
    pub cause: Option<SkipCause>,
    pub reason: String,
}

/// Every (point, mode) with a skipped repetition, once per reason, in point order.
pub fn skipped_points(results: &Results) -> Result<Vec<SkippedPoint>> {
    let mut cols = vec![
        col("point"),
        col("point_id"),
        col("mode"),
        col("lock"),
        col("skipped"),
    ];
    let schema = schema_of(&results.points, "points")?;
    let has_cause = schema.contains("skip_cause");
    if has_cause {
        cols.push(col("skip_cause"));
    }
    let df = results
        .points
        .clone()
        .filter(col("skipped").is_not_null())
        .select(cols)
        .unique_stable(None, UniqueKeepStrategy::First)
        .sort(
            ["point", "mode"],
            SortMultipleOptions::default().with_maintain_order(true),
        )
        .collect()
        .map_err(Error::polars("read skipped points"))?;
    let (points, ids, modes, locks, why) = (
        f64_values(&df, "point")?,
        str_values(&df, "point_id")?,
        str_values(&df, "mode")?,
        str_values(&df, "lock")?,
        str_values(&df, "skipped")?,
    );
    let causes = if has_cause {
        str_values(&df, "skip_cause")?
    } else {
        vec![String::new(); df.height()]
    };
    Ok((0..df.height())
        .map(|i| SkippedPoint {
            point: points[i] as u32,
            point_id: ids[i].clone(),
            mode: modes[i].clone(),
            lock: locks[i].clone(),
            cause: SkipCause::parse(&causes[i]),
            reason: why[i].clone(),
        })
        .collect())
}

/// The points whose `wait_max_ns` or `bypass_max` is a lower bound in some
/// repetition (it came from a wait still running at the end of the window):
/// (`point_id`, `mode`, the metrics so marked), in point order. Results written before
/// waits were censored have no such columns and give none.
pub fn lower_bound_maxima(results: &Results) -> Result<Vec<(String, String, Vec<&'static str>)>> {
    let schema = schema_of(&results.points, "points")?;
    let marks = [
        ("wait_max_censored", "wait_max_ns"),
        ("bypass_max_censored", "bypass_max"),
    ];
    if marks.iter().any(|(c, _)| !schema.contains(c)) {
        return Ok(Vec::new());
    }
    let df = results
        .points
        .clone()
        .group_by_stable([col("point"), col("point_id"), col("mode")])
        .agg([
            col("wait_max_censored").any(true),
            col("bypass_max_censored").any(true),
        ])
        .filter(col("wait_max_censored").or(col("bypass_max_censored")))
        .sort(["point", "mode"], SortMultipleOptions::default())
        .collect()
        .map_err(Error::polars("read the censored maxima"))?;
    let (ids, modes) = (str_values(&df, "point_id")?, str_values(&df, "mode")?);
    let flags: Vec<Vec<String>> = marks
        .iter()
        .map(|(c, _)| str_values(&df, c))
        .collect::<Result<_>>()?;
    Ok((0..df.height())
        .map(|i| {
            let which = marks
                .iter()
                .zip(&flags)
                .filter(|(_, f)| f[i] == "true")
                .map(|((_, m), _)| *m)
                .collect();
            (ids[i].clone(), modes[i].clone(), which)
        })
        .collect())
}

/// Noise-gate flags: (`point_id`, `mode`, `rep`, `noise`) of each flagged
/// repetition.
pub fn noise_flags(results: &Results) -> Result<Vec<(String, String, u32, String)>> {
    // A skipped repetition never reached the gate: it was not run, not disturbed.
    let ran = if schema_of(&results.points, "points")?.contains("skipped") {
        col("skipped").is_null()
    } else {
        lit(true)
    };
    let df = results
        .points
        .clone()
        .filter(
            col("noise")
                .neq(lit("ok"))
                .and(col("noise").neq(lit("sim")))
                .and(ran),
        )
        .select([col("point_id"), col("mode"), col("rep"), col("noise")])
        .sort(["point_id", "mode", "rep"], SortMultipleOptions::default())
        .collect()
        .map_err(Error::polars("read noise flags"))?;
    let (ids, modes, reps, noise) = (
        str_values(&df, "point_id")?,
        str_values(&df, "mode")?,
        f64_values(&df, "rep")?,
        str_values(&df, "noise")?,
    );
    Ok((0..df.height())
        .map(|i| {
            (
                ids[i].clone(),
                modes[i].clone(),
                reps[i] as u32,
                noise[i].clone(),
            )
        })
        .collect())
}

/// The placements of the CPUs a native run's repetitions measured, by the transfer
/// between their first two threads' CPUs (`records::PAIR_TRANSFER_BEFORE` and
/// `_AFTER`). Empty where no record has the measurement (one thread, simulation,
/// unpinned threads, runs written before it existed).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Placements {
    /// Over the whole run, one entry per group of repetitions whose values all
    /// agree (`records::same_placement`), as (the group's median transfer, ns; its
    /// repetitions), the largest group first. Points that sweep the placement
    /// differ here by design.
    pub groups: Vec<(f64, usize)>,
    /// Repetitions whose CPUs moved during their window.
    pub moved: usize,
    /// Points whose own repetitions measured more than one placement
    /// (`records::several_placements`): where the host moved the CPUs between
    /// repetitions of one point.
    pub mixed_points: usize,
    /// Points with the measurement.
    pub points: usize,
}

pub fn placements(results: &Results) -> Result<Placements> {
    use locklab_model::records::{
        placement_groups, same_placement, several_placements, PAIR_TRANSFER_AFTER,
        PAIR_TRANSFER_BEFORE,
    };
    let schema = schema_of(&results.points, "points")?;
    if !(schema.contains(PAIR_TRANSFER_BEFORE) && schema.contains(PAIR_TRANSFER_AFTER)) {
        return Ok(Placements::default());
    }
    let df = results
        .points
        .clone()
        .filter(col("mode").eq(lit("native")))
        .select([
            col("point_id"),
            col(PAIR_TRANSFER_BEFORE),
            col(PAIR_TRANSFER_AFTER),
        ])
        .collect()
        .map_err(Error::polars("read the measured transfers"))?;
    let ids = str_values(&df, "point_id")?;
    let (before, after) = (
        f64_values(&df, PAIR_TRANSFER_BEFORE)?,
        f64_values(&df, PAIR_TRANSFER_AFTER)?,
    );
    let mut out = Placements::default();
    let mut stayed: Vec<f64> = Vec::new();
    let mut by_point: std::collections::BTreeMap<&str, Vec<(f64, f64)>> = Default::default();
    for ((id, b), a) in ids.iter().zip(before).zip(after) {
        if !(b.is_finite() && a.is_finite()) {
            continue;
        }
        by_point.entry(id).or_default().push((b, a));
        if same_placement(b, a) {
            stayed.push((b + a) / 2.0);
        } else {
            out.moved += 1;
        }
    }
    out.points = by_point.len();
    out.mixed_points = by_point.values().filter(|m| several_placements(m)).count();
    out.groups = placement_groups(&stayed)
        .into_iter()
        .map(|g| {
            let values: Vec<f64> = g.iter().map(|&i| stayed[i]).collect();
            (crate::stats::median(&values), g.len())
        })
        .collect();
    Ok(out)
}

/// `the host moved the CPUs between repetitions of 12 of 44 points: ...`, when
/// repetitions of one point of a native run measured more than one placement of
/// their CPUs, or moved during their window ([`placements`]); `None` otherwise
/// (also when points differ by design, sweeping the placement).
pub fn placement_note(results: &Results) -> Result<Option<String>> {
    let p = placements(results)?;
    if p.mixed_points == 0 {
        return Ok(None);
    }
    let listed: Vec<String> = p
        .groups
        .iter()
        .enumerate()
        .map(|(i, (ns, n))| {
            let reps = if *n == 1 { "repetition" } else { "repetitions" };
            if i == 0 {
                format!("threads 0 and 1 were a transfer of {ns:.0} ns apart in {n} {reps}")
            } else {
                format!("{ns:.0} ns in {n}")
            }
        })
        .chain((p.moved > 0).then(|| format!("{} moved during their window (flagged)", p.moved)))
        .collect();
    Ok(Some(format!(
        "the host moved the CPUs: the repetitions of {} of {} points measured more than one \
         placement ({}). Each placement is another machine: such a point mixes them (columns \
         pair_transfer_before_ns, pair_transfer_after_ns; docs/native.md)",
        p.mixed_points,
        p.points,
        listed.join(", ")
    )))
}

/// One row per thread and wait class of each point × mode.
pub fn thread_summary(results: &Results) -> Result<DataFrame> {
    thread_summary_of(results, results.threads.clone())
}

pub(crate) fn thread_summary_of(results: &Results, threads: LazyFrame) -> Result<DataFrame> {
    let metrics: Vec<String> = THREAD_METRICS.iter().map(|s| s.to_string()).collect();
    let keys = ["point", "mode", "thread", "class"];
    let df = summarize(
        threads,
        &keys,
        &["cpu".to_string(), "node".to_string()],
        &metrics,
        None,
        &[],
    )?;
    attach_identity(results, df, &keys)
}

/// Thread rows combined per repetition (the threads of a node, or those a selector
/// picks) as claims combine them ([`crate::combine`]), with the number of rows
/// (`threads_in_node`). Returns the row-level columns to add before grouping, and
/// the aggregations.
pub(crate) fn node_aggs() -> (Vec<Expr>, Vec<Expr>) {
    let (pre, mut aggs) = combine::aggs(Table::Threads);
    aggs.push(len().cast(DataType::UInt32).alias("threads_in_node"));
    (pre, aggs)
}

/// For a selection naming thread or hand-off dimensions (`cpu=7`, `cross_node=true`):
/// the selected rows combined per repetition (`node_aggs`, `combine::aggs`) and
/// summarised per point × mode, like [`point_summary`]. `None` when the selection
/// names no such dimension.
pub fn selected_summary(
    results: &Results,
    select: &[(String, Value)],
) -> Result<Option<DataFrame>> {
    let dims: Vec<&(String, Value)> = select
        .iter()
        .filter(|(k, _)| select::row_table(k).is_some())
        .collect();
    if dims.is_empty() {
        return Ok(None);
    }
    let handoffs = dims
        .iter()
        .any(|(k, _)| select::row_table(k) == Some(Table::Handoffs));
    let mut pred = lit(true);
    for (k, v) in &dims {
        pred = pred.and(match (k.as_str(), v.as_f64()) {
            ("class", _) | (_, None) => col(k.as_str()).cast(DataType::String).eq(lit(v.label())),
            ("cross_node", Some(f)) => col("cross_node").eq(lit(f != 0.0)),
            (_, Some(f)) => col(k.as_str()).cast(DataType::Float64).eq(lit(f)),
        });
    }
    #[allow(clippy::type_complexity)]
    let (lf, (pre, aggs), metrics): (LazyFrame, (Vec<Expr>, Vec<Expr>), Vec<&str>) = if handoffs {
        (
            results.handoffs.clone(),
            combine::aggs(Table::Handoffs),
            HANDOFF_METRICS.to_vec(),
        )
    } else {
        (
            results.threads.clone(),
            node_aggs(),
            THREAD_METRICS.to_vec(),
        )
    };
    let schema = schema_of(&lf, "selected rows")?;
    let axes = present_axes(results, &schema);
    let carry = identity_carry(&axes, &schema, &["point_id", "lock"]);
    let mut all: Vec<Expr> = carry.iter().map(|c| col(c.as_str()).first()).collect();
    all.extend(aggs);
    let per_rep = lf
        .filter(pred)
        .with_columns(pre)
        .group_by([col("point"), col("mode"), col("rep")])
        .agg(all);
    let metrics: Vec<String> = metrics.iter().map(|s| s.to_string()).collect();
    summarize(per_rep, &["point", "mode"], &carry, &metrics, None, &[]).map(Some)
}

/// One row per NUMA node and wait class of each point × mode: every thread metric of
/// the node's threads combined per repetition (`node_aggs`), then summarised over
/// the repetitions, and `threads_in_node`.
pub fn node_summary(results: &Results) -> Result<DataFrame> {
    let (pre, aggs) = node_aggs();
    let per_rep = results
        .threads
        .clone()
        .with_columns(pre)
        .group_by([
            col("point"),
            col("mode"),
            col("rep"),
            col("node"),
            col("class"),
        ])
        .agg(aggs);
    let metrics: Vec<String> = THREAD_METRICS.iter().map(|s| s.to_string()).collect();
    let keys = ["point", "mode", "node", "class"];
    let df = summarize(
        per_rep,
        &keys,
        &["threads_in_node".to_string()],
        &metrics,
        None,
        &[],
    )?;
    attach_identity(results, df, &keys)
}

/// Add each point's identity (`point_id`, `lock`, axis columns) to a summary keyed
/// by point, from the small points table rather than carrying strings through a
/// group-by over millions of rows. Sorted by `keys` again (joins do not keep order).
pub(crate) fn attach_identity(
    results: &Results,
    df: DataFrame,
    keys: &[&str],
) -> Result<DataFrame> {
    let schema = schema_of(&results.points, "points")?;
    let axes = present_axes(results, &schema);
    let mut cols: Vec<Expr> = vec![col("point"), col("point_id"), col("lock")];
    for a in &axes {
        if a.column != "lock" && df.column(&a.column).is_err() {
            cols.push(col(a.column.as_str()));
        }
    }
    let ids = results
        .points
        .clone()
        .select(cols)
        .unique(Some(cols_selector(&["point"])), UniqueKeepStrategy::First);
    df.lazy()
        .join(
            ids,
            [col("point")],
            [col("point")],
            JoinArgs::new(JoinType::Left),
        )
        .sort(
            keys.iter()
                .map(|k| PlSmallStr::from(*k))
                .collect::<Vec<_>>(),
            SortMultipleOptions::default(),
        )
        .collect()
        .map_err(Error::polars("attach point identity"))
}

fn cols_selector(names: &[&str]) -> Selector {
    cols(names.iter().map(|s| s.to_string()).collect::<Vec<_>>())
}

/// Node-to-node hand-off table: one row per (from node, to node) of each point ×
/// mode, with counts and the next holder's wait.
pub fn handoff_summary(results: &Results) -> Result<DataFrame> {
    let schema = schema_of(&results.handoffs, "handoffs")?;
    let axes = present_axes(results, &schema);
    let carry = identity_carry(
        &axes,
        &schema,
        &["point_id", "lock", "distance", "cross_node"],
    );
    let metrics: Vec<String> = HANDOFF_METRICS.iter().map(|s| s.to_string()).collect();
    summarize(
        results.handoffs.clone(),
        &["point", "mode", "from_node", "to_node"],
        &carry,
        &metrics,
        None,
        &[],
    )
}

/// Median wait-time CDF of one point × mode (quantile by quantile over the
/// repetitions), at `locklab_model::records::CDF_QUANTILES`.
#[derive(Debug, Clone)]
pub struct CdfRow {
    pub point: u32,
    pub point_id: String,
    pub mode: String,
    pub lock: String,
    pub quantiles_ns: Vec<f64>,
}

pub fn wait_cdfs(results: &Results) -> Result<Vec<CdfRow>> {
    let df = results
        .points
        .clone()
        .filter(col("skipped").is_null())
        .select([
            col("point"),
            col("point_id"),
            col("mode"),
            col("lock"),
            col("wait_cdf_ns"),
        ])
        .sort(["point", "mode"], SortMultipleOptions::default())
        .collect()
        .map_err(Error::polars("read wait-time CDFs"))?;
    let points = f64_values(&df, "point")?;
    let ids = str_values(&df, "point_id")?;
    let modes = str_values(&df, "mode")?;
    let locks = str_values(&df, "lock")?;
    let lists = list_values(&df, "wait_cdf_ns")?;
    let mut out: Vec<CdfRow> = Vec::new();
    let mut reps: Vec<Vec<f64>> = Vec::new();
    let flush = |out: &mut Vec<CdfRow>, reps: &mut Vec<Vec<f64>>| {
        if let Some(last) = out.last_mut() {
            let k = reps.iter().map(Vec::len).max().unwrap_or(0);
            last.quantiles_ns = (0..k)
                .map(|q| {
                    stats::median(
                        &reps
                            .iter()
                            .filter_map(|r| r.get(q).copied())
                            .collect::<Vec<_>>(),
                    )
                })
                .collect();
        }
        reps.clear();
    };
    for i in 0..df.height() {
        let same = out
            .last()
            .is_some_and(|r| r.point == points[i] as u32 && r.mode == modes[i]);
        if !same {
            flush(&mut out, &mut reps);
            out.push(CdfRow {
                point: points[i] as u32,
                point_id: ids[i].clone(),
                mode: modes[i].clone(),
                lock: locks[i].clone(),
                quantiles_ns: Vec::new(),
            });
        }
        reps.push(lists[i].clone());
    }
    flush(&mut out, &mut reps);
    out.retain(|r| r.quantiles_ns.iter().any(|v| !v.is_nan()));
    Ok(out)
}

// ---------------------------------------------------------------------------
// Speedup
