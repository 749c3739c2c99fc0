//! The three tables built from records: identity, axis values, metric columns.

use super::columns::{
    metric_columns, Field, Fields, HANDOFF_FIELDS, POINT_FIELDS, POINT_RECORD_COLUMNS,
    THREAD_FIELDS,
};
use super::TABLES_SCHEMA_VERSION;
use crate::error::{Error, Result};
use locklab_model::manifest::Manifest;
use locklab_model::metrics::Table;
use locklab_model::plan::{Mode, Plan, Value};
use locklab_model::records::{HandoffRecord, PointRecord, RunRecord, ThreadRecord};
use polars::prelude::*;
use std::collections::BTreeSet;

/// How a sweep axis appears in the tables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AxisColumn {
    pub axis: String,
    /// `axis` + unit suffix (`threshold` → `threshold_ns`).
    pub column: String,
    /// f64 column when true, str column otherwise.
    pub numeric: bool,
}

/// The column of every sweep axis of `plan`, in axis order.
pub fn axis_columns(plan: &Plan) -> Vec<AxisColumn> {
    plan.axes
        .iter()
        .map(|a| {
            let numeric = !a.values.is_empty() && a.values.iter().all(|v| v.as_f64().is_some());
            let suffix = a.values.first().map(Value::unit_suffix).unwrap_or("");
            let column = if a.name.ends_with(suffix) {
                a.name.clone()
            } else {
                format!("{}{suffix}", a.name)
            };
            AxisColumn {
                axis: a.name.clone(),
                column,
                numeric,
            }
        })
        .collect()
}

/// Columns an axis never replaces: they identify a row, and an axis of that name
/// carries the same value as the record.
const IDENTITY: &[&str] = &[
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
    "threads",
    "thread",
    "cpu",
    "node",
    "class",
    "from_node",
    "to_node",
    "cross_node",
];

/// Frame from record columns and axis columns: a record column whose name an axis
/// took is renamed `<name>_record`.
fn assemble(what: &str, n: usize, cols: Vec<Column>, axis_cols: &[String]) -> Result<DataFrame> {
    let mut seen_axis = BTreeSet::new();
    let cols: Vec<Column> = cols
        .into_iter()
        .map(|c| {
            let name = c.name().to_string();
            if axis_cols.contains(&name) && seen_axis.insert(name.clone()) {
                c
            } else if axis_cols.contains(&name) {
                c.with_name(format!("{name}_record").into())
            } else {
                c
            }
        })
        .collect();
    DataFrame::new(n, cols).map_err(Error::polars(format!("build the {what} table")))
}

/// The columns a row-level table (threads, hand-offs) starts with: the identity of the
/// row's point, mode and repetition, then its point's axis values. Returns the
/// columns and the names of the axis columns.
fn row_identity(
    run: &RunColumns,
    axes: &[AxisColumn],
    rows: &[(&PointRecord, Mode, u32)],
) -> Result<(Vec<Column>, Vec<String>)> {
    let idx: Vec<u32> = rows.iter().map(|(p, ..)| p.point).collect();
    let mut cols = run.columns(&idx);
    cols.extend([
        c("point", idx.clone()),
        c(
            "point_id",
            rows.iter()
                .map(|(p, ..)| p.point_id.as_str())
                .collect::<Vec<_>>(),
        ),
        c(
            "mode",
            rows.iter().map(|(_, m, _)| m.as_str()).collect::<Vec<_>>(),
        ),
        c("rep", rows.iter().map(|(.., r)| *r).collect::<Vec<_>>()),
        c(
            "lock",
            rows.iter()
                .map(|(p, ..)| p.lock.as_str())
                .collect::<Vec<_>>(),
        ),
    ]);
    let axis = axis_value_columns(run.plan, axes, &idx, |n| IDENTITY.contains(&n))?;
    let names = axis.iter().map(|c| c.name().to_string()).collect();
    cols.extend(axis);
    Ok((cols, names))
}

/// Axis columns for rows whose point index is given by `points`.
fn axis_value_columns(
    plan: &Plan,
    axes: &[AxisColumn],
    rows: &[u32],
    taken: impl Fn(&str) -> bool,
) -> Result<Vec<Column>> {
    let mut cols = Vec::new();
    for a in axes {
        if taken(&a.column) {
            continue;
        }
        let value = |p: u32| -> Result<Option<&Value>> {
            let point = plan.points.get(p as usize).ok_or_else(|| {
                Error::Results(format!(
                    "record for point {p} but the plan has {} points",
                    plan.points.len()
                ))
            })?;
            Ok(point.axes.get(&a.axis))
        };
        if a.numeric {
            let v: Vec<Option<f64>> = rows
                .iter()
                .map(|&p| Ok(value(p)?.and_then(Value::as_f64)))
                .collect::<Result<_>>()?;
            cols.push(Column::new(a.column.as_str().into(), v));
        } else {
            let v: Vec<Option<String>> = rows
                .iter()
                .map(|&p| Ok(value(p)?.map(Value::label)))
                .collect::<Result<_>>()?;
            cols.push(Column::new(a.column.as_str().into(), v));
        }
    }
    Ok(cols)
}

fn c<T, P: ?Sized>(name: &str, v: T) -> Column
where
    Series: NamedFrom<T, P>,
{
    Column::new(name.into(), v)
}

/// The metric columns of `table` that record fields hold, for these rows. A measure
/// that does not apply (NaN in the record) is null.
fn metric_values<R>(table: Table, fields: Fields<R>, rows: &[&R]) -> Vec<Column> {
    metric_columns(table, fields)
        .map(|(name, field)| match field {
            Field::Count(get) => c(
                name,
                rows.iter().map(|r| get(r)).collect::<Vec<Option<u64>>>(),
            ),
            Field::Measure(get) => c(
                name,
                rows.iter().map(|r| applicable(get(r))).collect::<Vec<_>>(),
            ),
        })
        .collect()
}

/// Records mark a value that does not apply with NaN (it round-trips through the
/// YAML parts); the tables say so with null, which every reader understands.
/// Infinities stay: they are values (`max_min` when a thread never acquired).
fn applicable(v: f64) -> Option<f64> {
    (!v.is_nan()).then_some(v)
}

/// The columns that say which run a row belongs to: its table layout's version,
/// the run's id, the experiment and the host that ran the row's point.
struct RunColumns<'a> {
    plan: &'a Plan,
    run_id: String,
    /// The host of each shard of a merged run (point i ran in shard i mod n + 1),
    /// else of the run.
    hosts: Vec<&'a str>,
}

impl<'a> RunColumns<'a> {
    fn of(manifest: &'a Manifest) -> Self {
        let mut hosts: Vec<&str> = Vec::new();
        if let Some(count) = manifest.shards.first().map(|s| s.count) {
            hosts = (1..=count)
                .map(|i| {
                    manifest
                        .shards
                        .iter()
                        .find(|s| s.index == i)
                        .map_or(manifest.host.hostname.as_str(), |s| s.hostname.as_str())
                })
                .collect();
        }
        if hosts.is_empty() {
            hosts.push(&manifest.host.hostname);
        }
        RunColumns {
            plan: &manifest.plan,
            run_id: manifest.run_id(),
            hosts,
        }
    }

    fn columns(&self, points: &[u32]) -> Vec<Column> {
        let n = points.len();
        let host = |p: &u32| self.hosts[*p as usize % self.hosts.len()];
        vec![
            c("schema_version", vec![TABLES_SCHEMA_VERSION; n]),
            c("run_id", vec![self.run_id.as_str(); n]),
            c("experiment", vec![self.plan.experiment.as_str(); n]),
            c("host", points.iter().map(host).collect::<Vec<_>>()),
        ]
    }
}

/// The three tables of a results directory, in memory.
#[derive(Debug, Clone)]
pub struct Tables {
    pub points: DataFrame,
    pub threads: DataFrame,
    pub handoffs: DataFrame,
}

impl Tables {
    /// Build the tables of the run `manifest` describes from its records (in the
    /// order given).
    pub fn from_records(manifest: &Manifest, records: &[RunRecord]) -> Result<Tables> {
        let run = RunColumns::of(manifest);
        let plan = run.plan;
        let axes = axis_columns(plan);
        let mode = |m: Mode| m.as_str();

        // points
        let ps: Vec<&PointRecord> = records.iter().map(|r| &r.point).collect();
        let idx: Vec<u32> = ps.iter().map(|p| p.point).collect();
        let n = ps.len();
        let mut cols = run.columns(&idx);
        cols.extend([
            c("point", idx.clone()),
            c(
                "point_id",
                ps.iter().map(|p| p.point_id.as_str()).collect::<Vec<_>>(),
            ),
            c("mode", ps.iter().map(|p| mode(p.mode)).collect::<Vec<_>>()),
            c("rep", ps.iter().map(|p| p.rep).collect::<Vec<_>>()),
            c("seed", ps.iter().map(|p| p.seed).collect::<Vec<_>>()),
        ]);
        let axis_p = axis_value_columns(plan, &axes, &idx, |n| IDENTITY.contains(&n))?;
        let axis_names: Vec<String> = axis_p.iter().map(|c| c.name().to_string()).collect();
        cols.extend(axis_p);
        cols.extend([
            c(
                "lock",
                ps.iter().map(|p| p.lock.as_str()).collect::<Vec<_>>(),
            ),
            c(
                "lock_algo",
                ps.iter().map(|p| p.lock_algo.as_str()).collect::<Vec<_>>(),
            ),
            c(
                "workload",
                ps.iter().map(|p| p.workload.as_str()).collect::<Vec<_>>(),
            ),
            c("threads", ps.iter().map(|p| p.threads).collect::<Vec<_>>()),
            c(
                "skipped",
                ps.iter().map(|p| p.skipped.as_deref()).collect::<Vec<_>>(),
            ),
            c(
                "skip_cause",
                ps.iter()
                    .map(|p| p.skip_cause.map(|c| c.as_str()))
                    .collect::<Vec<_>>(),
            ),
            c(
                "window_ns",
                ps.iter().map(|p| p.window_ns).collect::<Vec<_>>(),
            ),
        ]);
        cols.extend(metric_values(Table::Points, POINT_FIELDS, &ps));
        cols.extend([
            c(
                "wait_max_censored",
                ps.iter().map(|p| p.wait_max_censored).collect::<Vec<_>>(),
            ),
            c(
                "bypass_max_censored",
                ps.iter().map(|p| p.bypass_max_censored).collect::<Vec<_>>(),
            ),
        ]);
        cols.push(c(
            "fairness_window_ns",
            ps.iter().map(|p| p.fairness_window_ns).collect::<Vec<_>>(),
        ));
        cols.push(c(
            "noise",
            ps.iter().map(|p| p.noise.as_str()).collect::<Vec<_>>(),
        ));
        // Null when nothing waited (every quantile NaN), else the 21 wait times.
        let cdf: ListChunked = ps
            .iter()
            .map(|p| {
                let q: Vec<Option<f64>> = p.wait_cdf_ns.iter().map(|&v| applicable(v)).collect();
                q.iter()
                    .any(Option::is_some)
                    .then(|| Series::new(PlSmallStr::EMPTY, &q))
            })
            .collect();
        let cdf = cdf
            .into_series()
            .with_name("wait_cdf_ns".into())
            .cast(&DataType::List(Box::new(DataType::Float64)))
            .map_err(Error::polars("build the wait_cdf_ns column"))?;
        cols.push(cdf.into_column());
        // A key of `extra` named like a record column never shadows it.
        let point_columns: BTreeSet<&str> = POINT_RECORD_COLUMNS
            .iter()
            .copied()
            .chain(metric_columns(Table::Points, POINT_FIELDS).map(|(n, _)| n))
            .collect();
        let extra_keys: BTreeSet<&str> = ps
            .iter()
            .flat_map(|p| p.extra.keys().map(String::as_str))
            .filter(|k| !point_columns.contains(k))
            .collect();
        for k in extra_keys {
            cols.push(c(
                k,
                ps.iter()
                    .map(|p| p.extra.get(k).copied().and_then(applicable))
                    .collect::<Vec<_>>(),
            ));
        }
        let points = assemble("points", n, cols, &axis_names)?;

        // threads: each row also carries its point's identity and axes.
        let ts: Vec<(&PointRecord, &ThreadRecord)> = records
            .iter()
            .flat_map(|r| r.threads.iter().map(move |t| (&r.point, t)))
            .collect();
        let n = ts.len();
        let ids: Vec<_> = ts.iter().map(|(p, t)| (*p, t.mode, t.rep)).collect();
        let (mut cols, axis_names) = row_identity(&run, &axes, &ids)?;
        cols.extend([
            c(
                "thread",
                ts.iter().map(|(_, t)| t.thread).collect::<Vec<_>>(),
            ),
            c("cpu", ts.iter().map(|(_, t)| t.cpu).collect::<Vec<_>>()),
            c("node", ts.iter().map(|(_, t)| t.node).collect::<Vec<_>>()),
            c(
                "class",
                ts.iter().map(|(_, t)| t.class.as_str()).collect::<Vec<_>>(),
            ),
        ]);
        let rows: Vec<&ThreadRecord> = ts.iter().map(|(_, t)| *t).collect();
        cols.extend(metric_values(Table::Threads, THREAD_FIELDS, &rows));
        cols.extend([
            c(
                "wait_max_censored",
                rows.iter().map(|t| t.wait_max_censored).collect::<Vec<_>>(),
            ),
            c(
                "bypass_max_censored",
                rows.iter()
                    .map(|t| t.bypass_max_censored)
                    .collect::<Vec<_>>(),
            ),
        ]);
        let threads = assemble("threads", n, cols, &axis_names)?;

        // hand-offs
        let hs: Vec<(&PointRecord, &HandoffRecord)> = records
            .iter()
            .flat_map(|r| r.handoffs.iter().map(move |h| (&r.point, h)))
            .collect();
        let n = hs.len();
        let ids: Vec<_> = hs.iter().map(|(p, h)| (*p, h.mode, h.rep)).collect();
        let (mut cols, axis_names) = row_identity(&run, &axes, &ids)?;
        cols.extend([
            c(
                "from_node",
                hs.iter().map(|(_, h)| h.from_node).collect::<Vec<_>>(),
            ),
            c(
                "to_node",
                hs.iter().map(|(_, h)| h.to_node).collect::<Vec<_>>(),
            ),
            c(
                "cross_node",
                hs.iter()
                    .map(|(_, h)| h.from_node != h.to_node)
                    .collect::<Vec<_>>(),
            ),
            c(
                "distance",
                hs.iter()
                    .map(|(_, h)| h.distance.as_str())
                    .collect::<Vec<_>>(),
            ),
        ]);
        let rows: Vec<&HandoffRecord> = hs.iter().map(|(_, h)| *h).collect();
        cols.extend(metric_values(Table::Handoffs, HANDOFF_FIELDS, &rows));
        let handoffs = assemble("handoffs", n, cols, &axis_names)?;
        Ok(Tables {
            points,
            threads,
            handoffs,
        })
    }
}
