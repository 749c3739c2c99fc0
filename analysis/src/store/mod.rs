//! The results directory: the durable journal written during a run, the Parquet
//! tables written at its end, and loading them back.
//!
//! ```text
//! <dir>/manifest.yaml      the Manifest (atomic: temporary file + rename)
//! <dir>/parts/*.yaml       one finished RunRecord per file, fsync'd: the journal
//! <dir>/points.parquet     one row per point × mode × repetition
//! <dir>/threads.parquet    one row per thread × wait class × repetition
//! <dir>/handoffs.parquet   one row per (from node, to node) × repetition
//! ```
//!
//! Every Parquet row carries `schema_version`, the run (`run_id`, `experiment`,
//! `host`), the point's identity (`point`, `point_id`, `mode`, `rep`, `lock`) and
//! every sweep-axis value of its point as a column named `axis + unit suffix`
//! (`threshold_ns`, `working_set_bytes`), numeric axes as f64 and string axes as
//! str. An axis named like an identity column (`lock`, `threads`, `point`, `mode`,
//! `rep`, `thread`, `cpu`, `node`, ...) is not repeated: the record holds the same
//! value. An axis named like another record field takes the name, and the field
//! moves to `<field>_record` (an axis `workload = [lock2, open1]` is the column
//! `workload`; the record's workload kind becomes `workload_record`). The `extra`
//! map of a point record is flattened into f64 columns (null where a record lacks
//! the key), and `wait_cdf_ns` is a list column at `CDF_QUANTILES`. A value that
//! does not apply is null. The files also carry key-value metadata: the layout's
//! version, the table, the run, every column's unit and the CDF's quantiles.
//! `schema` describes every column; `docs/results.md` is generated from it.

//! Architecture Invariant: `parts/` is the source of truth while a run is going;
//! the Parquet files are derived from it by [`ResultsWriter::write_tables`] and can
//! be rebuilt at any time. A run is `complete` in its manifest only once its
//! tables, claims and report are written: the status is the last thing written. Part files are YAML because it round-trips NaN and ±inf,
//! which mark metrics that do not apply.
//!
//! One file per job: `parts` (the journal: record parts and the manifest on disk),
//! `columns` (which record field holds each column; the metric columns come from
//! the registry, `locklab_model::metrics`), `schema` (every column described, with
//! its type and unit), `tables` (the frames built from
//! records), `parquet` (writing and scanning the files), `load` (a results
//! directory read back), `merge` (shards into one directory) and `diff` (records
//! of two directories compared).

mod columns;
mod diff;
mod load;
mod merge;
mod parquet;
mod parts;
pub mod schema;
mod tables;

pub use columns::{HANDOFF_METRICS, POINT_RECORD_COLUMNS, THREAD_METRICS};
pub use diff::{diff_records, RecordDiff};
pub use load::{load_results, Results};
pub(crate) use merge::stack;
pub use merge::{check_shards, merge, plan_fingerprint, ShardProblem};
pub use parquet::write_parquet;
pub use parts::{
    check_parts, finished_records, read_manifest, read_parts, set_status, write_manifest,
    CheckedParts, ResultsWriter,
};
pub use tables::{axis_columns, AxisColumn, Tables};

use locklab_model::plan::Mode;
use locklab_model::records::RECORDS_SCHEMA_VERSION;

/// Version of the shape of `claims.json`.
pub const RESULTS_SCHEMA_VERSION: u32 = RECORDS_SCHEMA_VERSION;
/// Version of the Parquet tables' layout (the `schema_version` column and the
/// `locklab_schema_version` metadata). 2: `run_id`, `experiment` and `host` in
/// every table, null (not NaN) where a value does not apply, units in the metadata;
/// 3: censored waits and re-acquisitions, `cross_node` for `remote`, the tail grid of
/// `wait_cdf_ns`.
/// Version 1 files still load: [`load_results`] adds the run columns from the
/// manifest and reads NaN as null.
pub const TABLES_SCHEMA_VERSION: u32 = 3;
pub const MANIFEST_FILE: &str = "manifest.yaml";
pub const PARTS_DIR: &str = "parts";
pub const POINTS_FILE: &str = "points.parquet";
pub const THREADS_FILE: &str = "threads.parquet";
pub const HANDOFFS_FILE: &str = "handoffs.parquet";
/// The status of a merged directory until its records and tables are all written:
/// an interrupted merge is finished by merging again (`merge --force`).
pub const MERGING: &str = "merging";

/// Identity of one record: (point index, mode, repetition).
pub type RecordKey = (u32, Mode, u32);
