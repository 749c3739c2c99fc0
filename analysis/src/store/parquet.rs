//! The Parquet files: written atomically with the layout's version and every
//! column's unit in their metadata, scanned lazily.

use super::schema::unit_of;
use super::{Tables, HANDOFFS_FILE, POINTS_FILE, TABLES_SCHEMA_VERSION, THREADS_FILE};
use crate::error::{Error, Result};
use crate::util::{self, write_atomic_with};
use locklab_model::metrics::Table;
use locklab_model::records::CDF_QUANTILES;
use polars::prelude::*;
use std::path::Path;

impl Tables {
    /// Write the three Parquet files atomically.
    pub fn write(&mut self, dir: &Path) -> Result<()> {
        write_parquet(&dir.join(POINTS_FILE), Table::Points, &mut self.points)?;
        write_parquet(&dir.join(THREADS_FILE), Table::Threads, &mut self.threads)?;
        write_parquet(
            &dir.join(HANDOFFS_FILE),
            Table::Handoffs,
            &mut self.handoffs,
        )
    }
}

/// The key-value metadata of a table's file: `locklab_schema_version`,
/// `locklab_table`, `locklab_units` (a JSON object: column → unit, for every column
/// that has one) and, for the points table, `locklab_wait_cdf_quantiles` (a JSON
/// array: the quantile of each element of `wait_cdf_ns`).
pub fn metadata(table: Table, df: &DataFrame) -> Vec<(String, String)> {
    let units: serde_json::Map<String, serde_json::Value> = df
        .get_column_names()
        .iter()
        .filter_map(|c| Some((c.to_string(), unit_of(table, c)?.into())))
        .collect();
    let mut meta = vec![
        (
            "locklab_schema_version".to_string(),
            TABLES_SCHEMA_VERSION.to_string(),
        ),
        ("locklab_table".to_string(), table.as_str().to_string()),
        (
            "locklab_units".to_string(),
            serde_json::Value::Object(units).to_string(),
        ),
    ];
    if table == Table::Points {
        meta.push((
            "locklab_wait_cdf_quantiles".to_string(),
            serde_json::json!(CDF_QUANTILES).to_string(),
        ));
    }
    meta
}

/// Write one table atomically, with its [`metadata`]. A failed write is reported
/// as the file system said it (`No space left on device`), not as the Parquet
/// encoder's view of it ("transport error").
pub fn write_parquet(path: &Path, table: Table, df: &mut DataFrame) -> Result<()> {
    write_atomic_with(path, |f| {
        let meta = KeyValueMetadata::from_static(metadata(table, df));
        let mut out = FirstError {
            inner: f,
            error: None,
        };
        let written = ParquetWriter::new(&mut out)
            .with_key_value_metadata(Some(meta))
            .finish(df);
        match (written, out.error) {
            (_, Some(io)) => Err(Error::io("write", path)(io)),
            (Err(e), None) => Err(Error::polars(format!("write {}", path.display()))(e)),
            (Ok(_), None) => Ok(()),
        }
    })
}

/// A writer that keeps the first IO error it meets, so that it can be reported
/// after an encoder has turned it into its own error.
struct FirstError<W> {
    inner: W,
    error: Option<std::io::Error>,
}

impl<W: std::io::Write> std::io::Write for FirstError<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.inner.write(buf).map_err(|e| self.keep(e))
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush().map_err(|e| self.keep(e))
    }
}

impl<W> FirstError<W> {
    fn keep(&mut self, e: std::io::Error) -> std::io::Error {
        let copy = std::io::Error::new(e.kind(), e.to_string());
        self.error.get_or_insert(e);
        copy
    }
}

pub(super) fn scan(path: &Path) -> Result<LazyFrame> {
    if !path.exists() {
        return Err(Error::Results(format!("{} is missing", path.display())));
    }
    LazyFrame::scan_parquet(
        PlRefPath::new(util::utf8(path)?),
        ScanArgsParquet::default(),
    )
    .map_err(Error::polars(format!("scan {}", path.display())))
}
