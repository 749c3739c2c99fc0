//! The layout of the three Parquet tables, described once: the columns a record
//! holds that are no metric (identity and description, with their types, units and
//! meaning), where the axis, metric and `extra` columns go, and the unit of every
//! column (written to each file's key-value metadata). `docs/results.md` is
//! generated from this description and the metric registry, and a test checks that
//! the tables built from records have exactly these columns.

use super::columns::{Field, HANDOFF_FIELDS, POINT_FIELDS, THREAD_FIELDS};
use locklab_model::metrics::{self, Table};

/// A column that is no metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ColumnDoc {
    pub name: &'static str,
    /// The Parquet type as polars reads it: `u32`, `u64`, `f64`, `str`, `bool`,
    /// `list[f64]`.
    pub dtype: &'static str,
    /// Null in some rows (and when).
    pub nullable: bool,
    pub unit: Option<&'static str>,
    pub doc: &'static str,
}

/// One stretch of a table's columns, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    Fixed(&'static [ColumnDoc]),
    /// One column per sweep axis of the plan, in axis order (`axis` + unit suffix).
    Axes,
    /// The registry's metrics of the table, in registry order.
    Metrics,
    /// One column per key of the records' `extra` maps, sorted by name.
    Extra,
}

const fn col(name: &'static str, dtype: &'static str, doc: &'static str) -> ColumnDoc {
    ColumnDoc {
        name,
        dtype,
        nullable: false,
        unit: None,
        doc,
    }
}

const fn ns(name: &'static str, dtype: &'static str, doc: &'static str) -> ColumnDoc {
    ColumnDoc {
        name,
        dtype,
        nullable: false,
        unit: Some("ns"),
        doc,
    }
}

/// Every row's identity: which run, which point, mode and repetition.
const IDENTITY: &[ColumnDoc] = &[
    col("schema_version", "u32", "version of this table layout (`TABLES_SCHEMA_VERSION`); also in the file metadata"),
    col("run_id", "str", "the run: `<start yyyymmdd-hhmmss>-<8 hex digits>`, from the manifest; tells rows of several runs read together apart (a merged run has one id)"),
    col("experiment", "str", "the experiment's name"),
    col("host", "str", "host name of the machine that ran the record (a merged run: its shard's host)"),
    col("point", "u32", "the point's index in the plan"),
    col("point_id", "str", "the point's identity, `axis=value,...` in axis order (`default` without axes); the same in every run of the same file"),
    col("mode", "str", "`sim` or `native`"),
    col("rep", "u32", "repetition, from 0"),
];

const POINT_HEAD: &[ColumnDoc] = &[col(
    "seed",
    "u64",
    "the record's random seed (derived from the master seed and the point's identity)",
)];

const POINT_DESCRIPTION: &[ColumnDoc] = &[
    col("lock", "str", "the lock's name in the experiment"),
    col("lock_algo", "str", "the lock's algorithm (`mcs`, `cna`, `ticket`, ...)"),
    col("workload", "str", "the workload's kind (`single`, `double`, ...); `workload_record` when an axis is named `workload`"),
    col("threads", "u32", "threads of the point"),
    ColumnDoc {
        nullable: true,
        ..col("skipped", "str", "why the point was not run (null when it ran); a skipped row's measures are null, its counts 0")
    },
    ColumnDoc {
        nullable: true,
        ..col("skip_cause", "str", "what kind of reason `skipped` gives (`pinning`, `deadlock`, ...; null when it ran): the exit code reads it")
    },
    ns("window_ns", "u64", "the measured window (wall time natively, virtual time simulated)"),
];

const POINT_TAIL: &[ColumnDoc] = &[
    col("wait_max_censored", "bool", "`wait_max_ns` is a lower bound: the longest wait was still running when the window ended"),
    col("bypass_max_censored", "bool", "`bypass_max` is a lower bound, for the same reason"),
    ns("fairness_window_ns", "u64", "the window of `window_fairness_factor_max` (0 when unused)"),
    col("noise", "str", "the noise gate's verdict: `ok`, `flagged: <reason>` (native), or `sim`"),
    ColumnDoc {
        nullable: true,
        ..ns("wait_cdf_ns", "list[f64]", "the wait-time distribution: 18 wait times, the quantiles at `wait_cdf_quantiles` (file metadata) 0, 0.1, …, 0.9, 0.95, 0.99, 0.995, 0.999, 0.9995, 0.9999, 0.99999, 1 (minimum, every 10 %, then the tail down to one wait in 100,000, maximum); null when nothing waited")
    },
];

const ROW_LOCK: &[ColumnDoc] = &[col(
    "lock",
    "str",
    "the point's lock's name in the experiment",
)];

const THREAD_ROW: &[ColumnDoc] = &[
    col("thread", "u32", "the thread's index in the point"),
    col("cpu", "u32", "the CPU it was pinned to"),
    col("node", "u32", "that CPU's NUMA node"),
    col("class", "str", "the wait class: `lock` for plain acquisitions; workloads add their own (`outer`, `inner`, ...)"),
];

const THREAD_TAIL: &[ColumnDoc] = &[
    col("wait_max_censored", "bool", "the thread's `wait_max_ns` is a lower bound: its longest wait was still running when the window ended"),
    col("bypass_max_censored", "bool", "the thread's `bypass_max` is a lower bound, for the same reason"),
];

const HANDOFF_ROW: &[ColumnDoc] = &[
    col(
        "from_node",
        "u32",
        "the node of the holder that released the lock",
    ),
    col("to_node", "u32", "the node of the next holder"),
    col(
        "cross_node",
        "bool",
        "`from_node != to_node` (a hand-off between two threads on different nodes)",
    ),
    col(
        "distance",
        "str",
        "the distance class of the two nodes (`local`, `remote`, ...)",
    ),
];

/// The layout of a table, in column order.
pub fn layout(table: Table) -> &'static [Part] {
    use Part::*;
    match table {
        Table::Points => &[
            Fixed(IDENTITY),
            Fixed(POINT_HEAD),
            Axes,
            Fixed(POINT_DESCRIPTION),
            Metrics,
            Fixed(POINT_TAIL),
            Extra,
        ],
        Table::Threads => &[
            Fixed(IDENTITY),
            Fixed(ROW_LOCK),
            Axes,
            Fixed(THREAD_ROW),
            Metrics,
            Fixed(THREAD_TAIL),
        ],
        Table::Handoffs => &[
            Fixed(IDENTITY),
            Fixed(ROW_LOCK),
            Axes,
            Fixed(HANDOFF_ROW),
            Metrics,
        ],
    }
}

/// The columns that are no metric, axis or `extra` key, of a table, in order.
pub fn fixed_columns(table: Table) -> impl Iterator<Item = &'static ColumnDoc> {
    layout(table).iter().flat_map(|p| match p {
        Part::Fixed(cols) => cols.iter(),
        _ => [].iter(),
    })
}

/// How a registry metric is stored in a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stored {
    /// A whole number (u64); null only where it was not measured (`reacquisitions`
    /// without a recorded grant order: native `recording = sampled`).
    Count,
    /// f64, null where it does not apply (a metric the row's mode or workload does
    /// not measure, a wait when nothing waited, a skipped point).
    Measure,
    /// A points metric no record field holds: a key of the record's `extra` map
    /// (f64, a column only when some record of the run has it, null where a record
    /// lacks it).
    Extra,
}

impl Stored {
    /// The column's type as polars reads it.
    pub fn dtype(self) -> &'static str {
        match self {
            Stored::Count => "u64",
            Stored::Measure | Stored::Extra => "f64",
        }
    }
}

/// How the registry metric `name` is stored in `table`.
pub fn stored(table: Table, name: &str) -> Stored {
    let field = |kinds: Vec<(&str, bool)>| match kinds.iter().find(|f| f.0 == name) {
        Some((_, true)) => Stored::Count,
        Some((_, false)) => Stored::Measure,
        None => Stored::Extra,
    };
    match table {
        Table::Points => field(kinds(POINT_FIELDS)),
        Table::Threads => field(kinds(THREAD_FIELDS)),
        Table::Handoffs => field(kinds(HANDOFF_FIELDS)),
    }
}

fn kinds<R>(fields: &[(&'static str, Field<R>)]) -> Vec<(&'static str, bool)> {
    fields
        .iter()
        .map(|(n, f)| (*n, matches!(f, Field::Count(_))))
        .collect()
}

/// The unit of a column of `table`: a metric's from the registry, a fixed column's
/// from its description, an axis or `extra` column's from its suffix (`_ns`,
/// `_bytes`, `_hz`, `_ops_s`). `None` for labels and dimensionless values.
pub fn unit_of(table: Table, column: &str) -> Option<&'static str> {
    if let Some(m) = metrics::get(column).filter(|m| m.in_table(table)) {
        return Some(m.unit.as_str());
    }
    if let Some(c) = fixed_columns(table).find(|c| c.name == column) {
        return c.unit;
    }
    [
        ("_ns", "ns"),
        ("_bytes", "bytes"),
        ("_hz", "Hz"),
        ("_ops_s", "ops/s"),
    ]
    .into_iter()
    .find(|(suffix, _)| column.ends_with(suffix))
    .map(|(_, unit)| unit)
}
