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
//! Every Parquet row carries `schema_version`, the point's identity (`point`,
//! `point_id`, `mode`, `rep`, `lock`) and every sweep-axis value of its point as a
//! column named `axis + unit suffix` (`threshold_ns`, `working_set_bytes`), numeric
//! axes as f64 and string axes as str. An axis named like an identity column
//! (`lock`, `threads`, `point`, `mode`, `rep`, `thread`, `cpu`, `node`, ...) is not
//! repeated: the record holds the same value. An axis named like another record
//! field takes the name, and the field moves to `<field>_record` (an axis
//! `workload = [lock2, open1]` is the column `workload`; the record's workload kind
//! becomes `workload_record`). The `extra` map of a point
//! record is flattened into f64 columns (null where a record lacks the key), and
//! `wait_cdf_ns` is a list column at `CDF_QUANTILES`. The files also carry the
//! key-value metadata `locklab_schema_version` and `locklab_table`.
//!
//! Architecture Invariant: `parts/` is the source of truth while a run is going;
//! the Parquet files are derived from it by [`ResultsWriter::finish`] and can be
//! rebuilt at any time. Part files are YAML because it round-trips NaN and ±inf,
//! which mark metrics that do not apply.

use crate::error::{Error, Result};
use crate::util::{self, write_atomic, write_atomic_with};
use locklab_model::manifest::Manifest;
use locklab_model::plan::{Mode, Plan, Value};
use locklab_model::records::{
    HandoffRecord, PointRecord, RunRecord, ThreadRecord, RECORDS_SCHEMA_VERSION,
};
use polars::prelude::*;
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Version of the Parquet tables (the `schema_version` column).
pub const RESULTS_SCHEMA_VERSION: u32 = RECORDS_SCHEMA_VERSION;
pub const MANIFEST_FILE: &str = "manifest.yaml";
pub const PARTS_DIR: &str = "parts";
pub const POINTS_FILE: &str = "points.parquet";
pub const THREADS_FILE: &str = "threads.parquet";
pub const HANDOFFS_FILE: &str = "handoffs.parquet";

/// Identity of one record: (point index, mode, repetition).
pub type RecordKey = (u32, Mode, u32);

/// Writes a results directory record by record, so an interrupted run keeps every
/// record it finished.
#[derive(Debug)]
pub struct ResultsWriter {
    dir: PathBuf,
    finished: BTreeSet<RecordKey>,
}

impl ResultsWriter {
    /// Start a new results directory (created if needed) and write `manifest.yaml`.
    /// Refuses a directory that already holds records of a run.
    pub fn create(dir: &Path, manifest: &Manifest) -> Result<Self> {
        util::create_dir(dir)?;
        let parts = dir.join(PARTS_DIR);
        if !list_parts(&parts)?.is_empty() {
            return Err(Error::Results(format!(
                "results directory {} already holds records of a run; resume it or choose another directory",
                dir.display()
            )));
        }
        util::create_dir(&parts)?;
        write_manifest(dir, manifest)?;
        Ok(ResultsWriter {
            dir: dir.to_path_buf(),
            finished: BTreeSet::new(),
        })
    }

    /// Reopen an interrupted (or finished) results directory. Returns the writer,
    /// the stored manifest and the records already finished, which the caller skips.
    pub fn resume(dir: &Path) -> Result<(Self, Manifest, BTreeSet<RecordKey>)> {
        let manifest = read_manifest(dir)?;
        let parts = dir.join(PARTS_DIR);
        util::create_dir(&parts)?;
        // Leftovers of a write that was cut short never became records.
        if let Ok(entries) = fs::read_dir(&parts) {
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if name.starts_with('.') && name.ends_with(".tmp") {
                    let _ = fs::remove_file(e.path());
                }
            }
        }
        let finished: BTreeSet<RecordKey> =
            list_parts(&parts)?.into_iter().map(|(k, _)| k).collect();
        let w = ResultsWriter {
            dir: dir.to_path_buf(),
            finished: finished.clone(),
        };
        Ok((w, manifest, finished))
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Records finished so far (including those found by `resume`).
    pub fn finished(&self) -> &BTreeSet<RecordKey> {
        &self.finished
    }

    /// Store one record durably (fsync'd before this returns). Writing a key again
    /// replaces the earlier record (a repeated, disturbed repetition).
    pub fn write(&mut self, rec: &RunRecord) -> Result<()> {
        let key = (rec.point.point, rec.point.mode, rec.point.rep);
        let path = self.dir.join(PARTS_DIR).join(part_name(key));
        let text = serde_yaml::to_string(rec).map_err(|source| Error::Yaml {
            path: path.clone(),
            source,
        })?;
        write_atomic(&path, text.as_bytes())?;
        self.finished.insert(key);
        Ok(())
    }

    /// Rewrite `manifest.yaml` (e.g. to record an interruption).
    pub fn write_manifest(&self, manifest: &Manifest) -> Result<()> {
        write_manifest(&self.dir, manifest)
    }

    /// Write the Parquet tables from every finished record, then the manifest.
    /// A manifest whose status is empty or `running` is marked `complete`, and a
    /// missing finish time is set to now; any other status is kept as given.
    pub fn finish(self, manifest: &Manifest) -> Result<()> {
        let records = read_parts(&self.dir)?;
        let mut tables = Tables::from_records(&manifest.plan, &records)?;
        tables.write(&self.dir)?;
        let mut m = manifest.clone();
        if m.status.is_empty() || m.status == "running" {
            m.status = "complete".into();
        }
        if m.finished_utc.is_none() {
            m.finished_utc = Some(util::now_utc());
        }
        write_manifest(&self.dir, &m)
    }
}

fn part_name((point, mode, rep): RecordKey) -> String {
    format!("p{point:06}-{}-r{rep:04}.yaml", mode.as_str())
}

fn parse_part_name(name: &str) -> Option<RecordKey> {
    let stem = name.strip_suffix(".yaml")?.strip_prefix('p')?;
    let mut it = stem.splitn(3, '-');
    let point = it.next()?.parse().ok()?;
    let mode = match it.next()? {
        "sim" => Mode::Sim,
        "native" => Mode::Native,
        _ => return None,
    };
    let rep = it.next()?.strip_prefix('r')?.parse().ok()?;
    Some((point, mode, rep))
}

/// Finished part files, sorted by key. A missing directory has none.
fn list_parts(parts: &Path) -> Result<Vec<(RecordKey, PathBuf)>> {
    let entries = match fs::read_dir(parts) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io("list", parts)(e)),
    };
    let mut out = Vec::new();
    for e in entries {
        let e = e.map_err(Error::io("list", parts))?;
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(k) = parse_part_name(&name) {
            out.push((k, e.path()));
        }
    }
    out.sort();
    Ok(out)
}

/// Every finished record of a results directory, sorted by (point, mode, rep).
pub fn read_parts(dir: &Path) -> Result<Vec<RunRecord>> {
    list_parts(&dir.join(PARTS_DIR))?
        .into_iter()
        .map(|(_, path)| {
            let text = util::read_to_string(&path)?;
            serde_yaml::from_str(&text).map_err(|source| Error::Yaml { path, source })
        })
        .collect()
}

pub fn read_manifest(dir: &Path) -> Result<Manifest> {
    let path = dir.join(MANIFEST_FILE);
    let text = util::read_to_string(&path)?;
    serde_yaml::from_str(&text).map_err(|source| Error::Yaml { path, source })
}

pub fn write_manifest(dir: &Path, manifest: &Manifest) -> Result<()> {
    let path = dir.join(MANIFEST_FILE);
    let text = serde_yaml::to_string(manifest).map_err(|source| Error::Yaml {
        path: path.clone(),
        source,
    })?;
    write_atomic(&path, text.as_bytes())
}

// ---------------------------------------------------------------------------
// Axis columns

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

// Record fields, in column order. Non-capturing closures coerce to fn pointers.
type F64Field<R> = (&'static str, fn(&R) -> f64);

const POINT_F64: &[F64Field<PointRecord>] = &[
    ("throughput_ops_s", |p| p.throughput_ops_s),
    ("cpu_ns_per_acq", |p| p.cpu_ns_per_acq),
    ("overhead_ns", |p| p.overhead_ns),
    ("jain", |p| p.jain),
    ("cov_acq", |p| p.cov_acq),
    ("max_min", |p| p.max_min),
    ("fairness_factor", |p| p.fairness_factor),
    ("window_fairness_factor_max", |p| {
        p.window_fairness_factor_max
    }),
    ("wait_p50_ns", |p| p.wait_p50_ns),
    ("wait_p99_ns", |p| p.wait_p99_ns),
    ("wait_p999_ns", |p| p.wait_p999_ns),
    ("wait_max_ns", |p| p.wait_max_ns),
    ("wait_mean_ns", |p| p.wait_mean_ns),
    ("hold_mean_ns", |p| p.hold_mean_ns),
    ("bypass_max", |p| p.bypass_max),
    ("bypass_mean", |p| p.bypass_mean),
    ("handoff_local_frac", |p| p.handoff_local_frac),
    ("cpu_wall_ratio", |p| p.cpu_wall_ratio),
    ("critical_nominal_ns", |p| p.critical_nominal_ns),
    ("critical_achieved_ns", |p| p.critical_achieved_ns),
    ("outside_nominal_ns", |p| p.outside_nominal_ns),
    ("outside_achieved_ns", |p| p.outside_achieved_ns),
];

const THREAD_F64: &[F64Field<ThreadRecord>] = &[
    ("share", |t| t.share),
    ("wait_p50_ns", |t| t.wait_p50_ns),
    ("wait_p99_ns", |t| t.wait_p99_ns),
    ("wait_p999_ns", |t| t.wait_p999_ns),
    ("wait_max_ns", |t| t.wait_max_ns),
    ("wait_mean_ns", |t| t.wait_mean_ns),
    ("hold_mean_ns", |t| t.hold_mean_ns),
    ("bypass_max", |t| t.bypass_max),
    ("cpu_ns", |t| t.cpu_ns),
];

const HANDOFF_F64: &[F64Field<HandoffRecord>] = &[
    ("wait_p50_ns", |h| h.wait_p50_ns),
    ("wait_p99_ns", |h| h.wait_p99_ns),
    ("wait_max_ns", |h| h.wait_max_ns),
];

/// f64 metric columns of points.parquet (besides the flattened `extra` map).
pub fn point_metric_columns() -> impl Iterator<Item = &'static str> {
    ["acquisitions", "ops"]
        .into_iter()
        .chain(POINT_F64.iter().map(|(n, _)| *n))
}

/// Metric columns of threads.parquet.
pub const THREAD_METRICS: &[&str] = &[
    "acquisitions",
    "share",
    "wait_p50_ns",
    "wait_p99_ns",
    "wait_p999_ns",
    "wait_max_ns",
    "wait_mean_ns",
    "hold_mean_ns",
    "bypass_max",
    "cpu_ns",
];

/// Metric columns of handoffs.parquet.
pub const HANDOFF_METRICS: &[&str] = &["count", "wait_p50_ns", "wait_p99_ns", "wait_max_ns"];

const POINT_FIELDS: &[&str] = &[
    "schema_version",
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
    "window_ns",
    "acquisitions",
    "ops",
    "fairness_window_ns",
    "noise",
    "wait_cdf_ns",
];

fn f64_names<R>(fields: &[F64Field<R>]) -> Vec<&'static str> {
    fields.iter().map(|(n, _)| *n).collect()
}

fn is_field(name: &str, fields: &[&str], f64s: &[&str]) -> bool {
    fields.contains(&name) || f64s.contains(&name)
}

/// Columns an axis never replaces: they identify a row, and an axis of that name
/// carries the same value as the record.
const IDENTITY: &[&str] = &[
    "schema_version",
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
    "remote",
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
    plan: &Plan,
    axes: &[AxisColumn],
    rows: &[(&PointRecord, Mode, u32)],
) -> Result<(Vec<Column>, Vec<String>)> {
    let n = rows.len();
    let idx: Vec<u32> = rows.iter().map(|(p, ..)| p.point).collect();
    let mut cols = vec![
        c("schema_version", vec![RESULTS_SCHEMA_VERSION; n]),
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
    ];
    let axis = axis_value_columns(plan, axes, &idx, |n| IDENTITY.contains(&n))?;
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

/// The three tables of a results directory, in memory.
#[derive(Debug, Clone)]
pub struct Tables {
    pub points: DataFrame,
    pub threads: DataFrame,
    pub handoffs: DataFrame,
}

impl Tables {
    /// Build the tables from records (in the order given).
    pub fn from_records(plan: &Plan, records: &[RunRecord]) -> Result<Tables> {
        let axes = axis_columns(plan);
        let point_f64 = f64_names(POINT_F64);
        let mode = |m: Mode| m.as_str();

        // points
        let ps: Vec<&PointRecord> = records.iter().map(|r| &r.point).collect();
        let idx: Vec<u32> = ps.iter().map(|p| p.point).collect();
        let n = ps.len();
        let mut cols = vec![
            c("schema_version", vec![RESULTS_SCHEMA_VERSION; n]),
            c("point", idx.clone()),
            c(
                "point_id",
                ps.iter().map(|p| p.point_id.as_str()).collect::<Vec<_>>(),
            ),
            c("mode", ps.iter().map(|p| mode(p.mode)).collect::<Vec<_>>()),
            c("rep", ps.iter().map(|p| p.rep).collect::<Vec<_>>()),
            c("seed", ps.iter().map(|p| p.seed).collect::<Vec<_>>()),
        ];
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
                "window_ns",
                ps.iter().map(|p| p.window_ns).collect::<Vec<_>>(),
            ),
            c(
                "acquisitions",
                ps.iter().map(|p| p.acquisitions).collect::<Vec<_>>(),
            ),
            c("ops", ps.iter().map(|p| p.ops).collect::<Vec<_>>()),
        ]);
        for (name, get) in POINT_F64 {
            cols.push(c(name, ps.iter().map(|p| get(p)).collect::<Vec<f64>>()));
        }
        cols.push(c(
            "fairness_window_ns",
            ps.iter().map(|p| p.fairness_window_ns).collect::<Vec<_>>(),
        ));
        cols.push(c(
            "noise",
            ps.iter().map(|p| p.noise.as_str()).collect::<Vec<_>>(),
        ));
        let cdf: ListChunked = ps
            .iter()
            .map(|p| Some(Series::new(PlSmallStr::EMPTY, &p.wait_cdf_ns)))
            .collect();
        let cdf = cdf
            .into_series()
            .with_name("wait_cdf_ns".into())
            .cast(&DataType::List(Box::new(DataType::Float64)))
            .map_err(Error::polars("build the wait_cdf_ns column"))?;
        cols.push(cdf.into_column());
        let extra_keys: BTreeSet<&str> = ps
            .iter()
            .flat_map(|p| p.extra.keys().map(String::as_str))
            .filter(|k| !is_field(k, POINT_FIELDS, &point_f64))
            .collect();
        for k in extra_keys {
            cols.push(c(
                k,
                ps.iter()
                    .map(|p| p.extra.get(k).copied())
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
        let (mut cols, axis_names) = row_identity(plan, &axes, &ids)?;
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
            c(
                "acquisitions",
                ts.iter().map(|(_, t)| t.acquisitions).collect::<Vec<_>>(),
            ),
        ]);
        for (name, get) in THREAD_F64 {
            cols.push(c(
                name,
                ts.iter().map(|(_, t)| get(t)).collect::<Vec<f64>>(),
            ));
        }
        let threads = assemble("threads", n, cols, &axis_names)?;

        // hand-offs
        let hs: Vec<(&PointRecord, &HandoffRecord)> = records
            .iter()
            .flat_map(|r| r.handoffs.iter().map(move |h| (&r.point, h)))
            .collect();
        let n = hs.len();
        let ids: Vec<_> = hs.iter().map(|(p, h)| (*p, h.mode, h.rep)).collect();
        let (mut cols, axis_names) = row_identity(plan, &axes, &ids)?;
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
                "remote",
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
            c("count", hs.iter().map(|(_, h)| h.count).collect::<Vec<_>>()),
        ]);
        for (name, get) in HANDOFF_F64 {
            cols.push(c(
                name,
                hs.iter().map(|(_, h)| get(h)).collect::<Vec<f64>>(),
            ));
        }
        let handoffs = assemble("handoffs", n, cols, &axis_names)?;
        Ok(Tables {
            points,
            threads,
            handoffs,
        })
    }

    /// Write the three Parquet files atomically.
    pub fn write(&mut self, dir: &Path) -> Result<()> {
        write_parquet(&dir.join(POINTS_FILE), "points", &mut self.points)?;
        write_parquet(&dir.join(THREADS_FILE), "threads", &mut self.threads)?;
        write_parquet(&dir.join(HANDOFFS_FILE), "handoffs", &mut self.handoffs)
    }
}

/// Write one table atomically, with the schema version in the file's metadata.
pub fn write_parquet(path: &Path, table: &str, df: &mut DataFrame) -> Result<()> {
    write_atomic_with(path, |f| {
        let meta = KeyValueMetadata::from_static(vec![
            (
                "locklab_schema_version".to_string(),
                RESULTS_SCHEMA_VERSION.to_string(),
            ),
            ("locklab_table".to_string(), table.to_string()),
        ]);
        ParquetWriter::new(f)
            .with_key_value_metadata(Some(meta))
            .finish(df)
            .map_err(Error::polars(format!("write {}", path.display())))?;
        Ok(())
    })
}

fn scan(path: &Path) -> Result<LazyFrame> {
    if !path.exists() {
        return Err(Error::Results(format!("{} is missing", path.display())));
    }
    LazyFrame::scan_parquet(
        PlRefPath::new(util::utf8(path)?),
        ScanArgsParquet::default(),
    )
    .map_err(Error::polars(format!("scan {}", path.display())))
}

// ---------------------------------------------------------------------------
// Loading

/// A results directory, loaded: the manifest and lazy frames over the tables.
#[derive(Clone)]
pub struct Results {
    pub dir: PathBuf,
    pub manifest: Manifest,
    pub points: LazyFrame,
    pub threads: LazyFrame,
    pub handoffs: LazyFrame,
}

impl std::fmt::Debug for Results {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Results")
            .field("dir", &self.dir)
            .field("experiment", &self.manifest.plan.experiment)
            .finish_non_exhaustive()
    }
}

impl Results {
    /// Results held in memory (a run that has not written Parquet yet, or tests).
    pub fn from_records(dir: &Path, manifest: Manifest, records: &[RunRecord]) -> Result<Self> {
        let t = Tables::from_records(&manifest.plan, records)?;
        Ok(Results {
            dir: dir.to_path_buf(),
            manifest,
            points: t.points.lazy(),
            threads: t.threads.lazy(),
            handoffs: t.handoffs.lazy(),
        })
    }

    pub fn plan(&self) -> &Plan {
        &self.manifest.plan
    }

    pub fn axis_columns(&self) -> Vec<AxisColumn> {
        axis_columns(self.plan())
    }
}

/// Load a results directory. Without Parquet files (an interrupted run), the
/// tables are built from the finished records in `parts/`.
pub fn load_results(dir: &Path) -> Result<Results> {
    let manifest = read_manifest(dir)?;
    if dir.join(POINTS_FILE).exists() {
        return Ok(Results {
            dir: dir.to_path_buf(),
            points: scan(&dir.join(POINTS_FILE))?,
            threads: scan(&dir.join(THREADS_FILE))?,
            handoffs: scan(&dir.join(HANDOFFS_FILE))?,
            manifest,
        });
    }
    let records = read_parts(dir)?;
    if records.is_empty() {
        return Err(Error::Results(format!(
            "results directory {} has neither {POINTS_FILE} nor finished records in {PARTS_DIR}/",
            dir.display()
        )));
    }
    Results::from_records(dir, manifest, &records)
}

// ---------------------------------------------------------------------------
// Merging shards

fn plan_fingerprint(plan: &Plan) -> String {
    serde_json::to_string(plan).unwrap_or_default()
}

/// Stack frames whose columns may differ (extra metrics): missing columns are
/// filled with nulls of the other frames' type.
pub(crate) fn stack(frames: Vec<DataFrame>) -> Result<DataFrame> {
    let mut order: Vec<(PlSmallStr, DataType)> = Vec::new();
    for f in &frames {
        for (name, dt) in f.schema().iter() {
            if !order.iter().any(|(n, _)| n == name) {
                order.push((name.clone(), dt.clone()));
            }
        }
    }
    let mut out: Option<DataFrame> = None;
    for mut f in frames {
        let h = f.height();
        for (name, dt) in &order {
            if f.column(name.as_str()).is_err() {
                f.with_column(Column::full_null(name.clone(), h, dt))
                    .map_err(Error::polars("align shard columns"))?;
            }
        }
        let f = f
            .select(order.iter().map(|(n, _)| n.clone()))
            .map_err(Error::polars("align shard columns"))?;
        match &mut out {
            None => out = Some(f),
            Some(o) => {
                o.vstack_mut_owned(f)
                    .map_err(Error::polars("stack shard tables"))?;
            }
        }
    }
    Ok(out.unwrap_or_default())
}

fn record_keys(points: &DataFrame) -> Result<Vec<(u32, String, u32)>> {
    let err = Error::polars("read record keys");
    let p = points.column("point").and_then(|c| c.u32().cloned());
    let m = points.column("mode").and_then(|c| c.str().cloned());
    let r = points.column("rep").and_then(|c| c.u32().cloned());
    let (p, m, r) = match (p, m, r) {
        (Ok(p), Ok(m), Ok(r)) => (p, m, r),
        (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => return Err(err(e)),
    };
    Ok(p.iter()
        .zip(m.iter())
        .zip(r.iter())
        .map(|((p, m), r)| (p.unwrap_or(0), m.unwrap_or("").to_string(), r.unwrap_or(0)))
        .collect())
}

/// Merge shard results directories (same plan, disjoint records) into `out`.
/// Returns the number of records merged.
pub fn merge(dirs: &[PathBuf], out: &Path) -> Result<usize> {
    let first = dirs
        .first()
        .ok_or_else(|| Error::Results("merge needs at least one results directory".into()))?;
    let mut manifest = read_manifest(first)?;
    let fp = plan_fingerprint(&manifest.plan);
    let mut seen: BTreeMap<(u32, String, u32), PathBuf> = BTreeMap::new();
    let (mut points, mut threads, mut handoffs) = (Vec::new(), Vec::new(), Vec::new());
    let sort_keys = |df: DataFrame, keys: &[&str]| -> Result<DataFrame> {
        df.lazy()
            .sort(
                keys.iter()
                    .map(|k| PlSmallStr::from(*k))
                    .collect::<Vec<_>>(),
                SortMultipleOptions::default().with_maintain_order(true),
            )
            .collect()
            .map_err(Error::polars("sort merged table"))
    };
    for d in dirs {
        let r = load_results(d)?;
        if plan_fingerprint(&r.manifest.plan) != fp {
            return Err(Error::Results(format!(
                "{} was run from a different plan than {}; only shards of one plan can be merged",
                d.display(),
                first.display()
            )));
        }
        if r.manifest.status != "complete" {
            manifest.status = format!("merged from incomplete shard {}", d.display());
        }
        let p = r
            .points
            .collect()
            .map_err(Error::polars(format!("read {}", d.display())))?;
        for k in record_keys(&p)? {
            if let Some(other) = seen.insert(k.clone(), d.clone()) {
                return Err(Error::Results(format!(
                    "point {} mode {} rep {} is in both {} and {}; shards must not overlap",
                    k.0,
                    k.1,
                    k.2,
                    other.display(),
                    d.display()
                )));
            }
        }
        points.push(p);
        threads.push(
            r.threads
                .collect()
                .map_err(Error::polars(format!("read {}", d.display())))?,
        );
        handoffs.push(
            r.handoffs
                .collect()
                .map_err(Error::polars(format!("read {}", d.display())))?,
        );
        manifest.finished_utc = match (manifest.finished_utc.take(), r.manifest.finished_utc) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
    }
    util::create_dir(out)?;
    let parts_out = out.join(PARTS_DIR);
    for d in dirs {
        for (key, path) in list_parts(&d.join(PARTS_DIR))? {
            util::create_dir(&parts_out)?;
            let dst = parts_out.join(part_name(key));
            fs::copy(&path, &dst).map_err(Error::io("copy", &path))?;
        }
    }
    let mut tables = Tables {
        points: sort_keys(stack(points)?, &["point", "mode", "rep"])?,
        threads: sort_keys(
            stack(threads)?,
            &["point", "mode", "rep", "thread", "class"],
        )?,
        handoffs: sort_keys(
            stack(handoffs)?,
            &["point", "mode", "rep", "from_node", "to_node"],
        )?,
    };
    tables.write(out)?;
    manifest.shard = None;
    write_manifest(out, &manifest)?;
    Ok(seen.len())
}

// ---------------------------------------------------------------------------
// Reproduction

fn field_diffs(what: &str, a: &serde_json::Value, b: &serde_json::Value, out: &mut Vec<String>) {
    match (a, b) {
        (serde_json::Value::Object(x), serde_json::Value::Object(y)) => {
            for (k, va) in x {
                let vb = y.get(k).unwrap_or(&serde_json::Value::Null);
                if va != vb {
                    out.push(format!("{what}{k}: {va} vs {vb}"));
                }
            }
        }
        _ if a != b => out.push(format!("{what}: {a} vs {b}")),
        _ => {}
    }
}

fn rows_diff<T: serde::Serialize>(what: &str, a: &[T], b: &[T], out: &mut Vec<String>) {
    if a.len() != b.len() {
        out.push(format!("{what}: {} rows vs {}", a.len(), b.len()));
        return;
    }
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        let (x, y) = (
            serde_json::to_value(x).unwrap_or_default(),
            serde_json::to_value(y).unwrap_or_default(),
        );
        let before = out.len();
        field_diffs(&format!("{what}[{i}]."), &x, &y, out);
        if out.len() > before {
            return; // the first differing row says enough
        }
    }
}

/// Differences between the records of `mode` in two results directories (the
/// journal in `parts/`), one line each: what `reproduce` prints for simulations,
/// which must be identical. Empty when every record matches.
pub fn diff_records(a: &Path, b: &Path, mode: Mode) -> Result<Vec<String>> {
    let load = |d: &Path| -> Result<BTreeMap<RecordKey, RunRecord>> {
        let recs = read_parts(d)?;
        if recs.is_empty() {
            return Err(Error::Results(format!(
                "{} holds no records in {PARTS_DIR}/",
                d.display()
            )));
        }
        Ok(recs
            .into_iter()
            .filter(|r| r.point.mode == mode)
            .map(|r| ((r.point.point, r.point.mode, r.point.rep), r))
            .collect())
    };
    let (ra, rb) = (load(a)?, load(b)?);
    let mut out = Vec::new();
    for (k, x) in &ra {
        let label = format!("{} [{}] rep {}", x.point.point_id, mode.as_str(), k.2);
        let Some(y) = rb.get(k) else {
            out.push(format!("{label}: only in {}", a.display()));
            continue;
        };
        let mut d = Vec::new();
        let (px, py) = (
            serde_json::to_value(&x.point).unwrap_or_default(),
            serde_json::to_value(&y.point).unwrap_or_default(),
        );
        field_diffs("", &px, &py, &mut d);
        rows_diff("threads", &x.threads, &y.threads, &mut d);
        rows_diff("handoffs", &x.handoffs, &y.handoffs, &mut d);
        if !d.is_empty() {
            let more = if d.len() > 4 {
                format!(" (+{} more)", d.len() - 4)
            } else {
                String::new()
            };
            d.truncate(4);
            out.push(format!("{label}: {}{more}", d.join("; ")));
        }
    }
    for (k, y) in &rb {
        if !ra.contains_key(k) {
            out.push(format!(
                "{} [{}] rep {}: only in {}",
                y.point.point_id,
                mode.as_str(),
                k.2,
                b.display()
            ));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn part_names_round_trip() {
        for key in [(0, Mode::Sim, 0), (123_456, Mode::Native, 42)] {
            assert_eq!(parse_part_name(&part_name(key)), Some(key));
        }
        assert_eq!(parse_part_name(".p000001-sim-r0001.yaml.tmp"), None);
        assert_eq!(parse_part_name("p1-gpu-r1.yaml"), None);
    }
}
