//! The Parquet files: written atomically with the schema version in their metadata,
//! scanned lazily.

use super::{Tables, HANDOFFS_FILE, POINTS_FILE, RESULTS_SCHEMA_VERSION, THREADS_FILE};
use crate::error::{Error, Result};
use crate::util::{self, write_atomic_with};
use polars::prelude::*;
use std::path::Path;

impl Tables {
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
