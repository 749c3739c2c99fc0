//! A results directory read back: the manifest and lazy frames over its tables.

use super::parquet::scan;
use super::{
    axis_columns, read_manifest, read_parts, AxisColumn, Tables, HANDOFFS_FILE, PARTS_DIR,
    POINTS_FILE, THREADS_FILE,
};
use crate::error::{Error, Result};
use locklab_model::manifest::Manifest;
use locklab_model::plan::Plan;
use locklab_model::records::RunRecord;
use polars::prelude::*;
use std::path::{Path, PathBuf};

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
        let t = Tables::from_records(&manifest, records)?;
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
        let table = |file: &str| upgrade(scan(&dir.join(file))?, &dir.join(file), &manifest);
        return Ok(Results {
            dir: dir.to_path_buf(),
            points: table(POINTS_FILE)?,
            threads: table(THREADS_FILE)?,
            handoffs: table(HANDOFFS_FILE)?,
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

/// A table written before layout 2 (no `run_id` column) read as layout 2: the run's
/// columns from the manifest, NaN (which marked values that do not apply) as null.
/// Readers then meet one layout whatever wrote the file.
fn upgrade(lf: LazyFrame, path: &Path, manifest: &Manifest) -> Result<LazyFrame> {
    let mut lf = lf;
    // A damaged file (cut short, overwritten) fails here: name it.
    let schema = lf
        .collect_schema()
        .map_err(Error::polars(format!("read {}", path.display())))?;
    if schema.contains("run_id") {
        return Ok(lf);
    }
    let mut exprs: Vec<Expr> = schema
        .iter()
        .filter(|(_, dtype)| matches!(dtype, DataType::Float64 | DataType::Float32))
        .map(|(name, _)| col(name.clone()).fill_nan(lit(NULL)))
        .collect();
    exprs.extend([
        lit(manifest.run_id()).alias("run_id"),
        lit(manifest.plan.experiment.clone()).alias("experiment"),
        lit(manifest.host.hostname.clone()).alias("host"),
    ]);
    Ok(lf.with_columns(exprs))
}
