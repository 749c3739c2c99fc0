//! Shards of one plan, run apart, merged into one results directory: only the
//! complete set of one run's shards ([`check_shards`]).

use super::parts::{list_parts, part_name};
use super::{load_results, read_manifest, write_manifest, Tables, MERGING, PARTS_DIR};
use crate::error::{Error, Result};
use crate::util;
use locklab_model::manifest::{Manifest, ShardRun};
use locklab_model::plan::Plan;
use polars::prelude::*;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// The first 12 hex digits of the SHA-256 of a plan: equal for shards of one plan.
pub fn plan_fingerprint(plan: &Plan) -> String {
    let json = serde_json::to_vec(plan).unwrap_or_default();
    Sha256::digest(&json)
        .iter()
        .take(6)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Why a set of directories is not the complete shards of one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShardProblem {
    /// They are not shards of one plan (a different plan, shard count or mode, a
    /// shard given twice, a directory that is not a shard).
    Mixed(String),
    /// Shards of one plan, but some are missing or did not finish.
    Incomplete(String),
}

impl std::fmt::Display for ShardProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ShardProblem::Mixed(m) | ShardProblem::Incomplete(m) => f.write_str(m),
        }
    }
}

/// Check that `dirs` are every shard `1..=n` of one `--shard i/n` run, each
/// complete. Returns their manifests in the order given.
pub fn check_shards(dirs: &[PathBuf]) -> Result<std::result::Result<Vec<Manifest>, ShardProblem>> {
    use ShardProblem::*;
    let mut manifests = Vec::new();
    for d in dirs {
        manifests.push(read_manifest(d)?);
    }
    let Some(first) = manifests.first() else {
        return Ok(Err(Mixed(
            "merge needs the shard directories of a run".into(),
        )));
    };
    let fp = plan_fingerprint(&first.plan);
    let mut by_index: BTreeMap<u32, &PathBuf> = BTreeMap::new();
    let mut count = None;
    for (d, m) in dirs.iter().zip(&manifests) {
        let Some((i, n)) = m.shard else {
            return Ok(Err(Mixed(format!(
                "{} is not a shard (it was run without --shard)",
                d.display()
            ))));
        };
        match count {
            None => count = Some((n, d)),
            Some((c, first_dir)) if c != n => {
                return Ok(Err(Mixed(format!(
                    "the shard counts differ: {} is shard {i}/{n}, {} one of {c}",
                    d.display(),
                    first_dir.display()
                ))))
            }
            _ => {}
        }
        let this = plan_fingerprint(&m.plan);
        if this != fp {
            return Ok(Err(Mixed(format!(
                "{} was run from another plan than {} (plan {this}, not {fp}); only shards of one plan can be merged",
                d.display(),
                dirs[0].display()
            ))));
        }
        if m.modes != first.modes {
            return Ok(Err(Mixed(format!(
                "{} ran other modes than {}",
                d.display(),
                dirs[0].display()
            ))));
        }
        if let Some(other) = by_index.insert(i, d) {
            return Ok(Err(Mixed(format!(
                "shard {i}/{n} is given twice: {} and {}",
                other.display(),
                d.display()
            ))));
        }
    }
    let n = count.map_or(0, |(n, _)| n);
    let missing: Vec<String> = (1..=n)
        .filter(|i| !by_index.contains_key(i))
        .map(|i| i.to_string())
        .collect();
    if !missing.is_empty() {
        return Ok(Err(Incomplete(format!(
            "shard{} {} of {n} {} missing; merge needs every shard",
            if missing.len() == 1 { "" } else { "s" },
            missing.join(", "),
            if missing.len() == 1 { "is" } else { "are" },
        ))));
    }
    for (d, m) in dirs.iter().zip(&manifests) {
        if m.status != "complete" {
            let (i, n) = m.shard.unwrap_or_default();
            return Ok(Err(Incomplete(format!(
                "shard {i}/{n} in {} did not finish (status `{}`); finish it with `locklab run --resume {}`",
                d.display(),
                m.status,
                d.display()
            ))));
        }
    }
    Ok(Ok(manifests))
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

/// Merge the complete shards of one run ([`check_shards`]) into `out`; the merged
/// manifest records where and when each shard ran. It is written first, saying
/// [`MERGING`] until the records and tables are all in `out` (an interrupted merge
/// is recognisably one, and is merged again), then `running` until the caller has
/// written its claims and report. Returns the number of records.
pub fn merge(dirs: &[PathBuf], out: &Path) -> Result<usize> {
    let shards = check_shards(dirs)?.map_err(|p| Error::Results(p.to_string()))?;
    let mut manifest = shards[0].clone();
    manifest.shard = None;
    manifest.status = MERGING.into();
    manifest.finished_utc = None;
    manifest.started_utc = shards
        .iter()
        .map(|m| m.started_utc.clone())
        .min()
        .unwrap_or_default();
    manifest.shards = dirs
        .iter()
        .zip(&shards)
        .map(|(d, m)| {
            let (index, count) = m.shard.unwrap_or_default();
            ShardRun {
                index,
                count,
                dir: d.to_string_lossy().into_owned(),
                hostname: m.host.hostname.clone(),
                started_utc: m.started_utc.clone(),
                finished_utc: m.finished_utc.clone(),
            }
        })
        .collect();
    manifest.shards.sort_by_key(|s| s.index);
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
    }
    util::create_dir(out)?;
    write_manifest(out, &manifest)?;
    let parts_out = out.join(PARTS_DIR);
    for d in dirs {
        for (key, path) in list_parts(&d.join(PARTS_DIR))? {
            util::create_dir(&parts_out)?;
            let dst = parts_out.join(part_name(key));
            fs::copy(&path, &dst).map_err(Error::io("copy", &path))?;
        }
    }
    // Every row of the merged run carries its id; each keeps its shard's host.
    let run_id = manifest.run_id();
    let merged_run = |dfs: Vec<DataFrame>| -> Result<DataFrame> {
        stack(dfs)?
            .lazy()
            .with_column(lit(run_id.clone()).alias("run_id"))
            .collect()
            .map_err(Error::polars("mark the merged run"))
    };
    let (points, threads, handoffs) = (
        merged_run(points)?,
        merged_run(threads)?,
        merged_run(handoffs)?,
    );
    let mut tables = Tables {
        points: sort_keys(points, &["point", "mode", "rep"])?,
        threads: sort_keys(threads, &["point", "mode", "rep", "thread", "class"])?,
        handoffs: sort_keys(handoffs, &["point", "mode", "rep", "from_node", "to_node"])?,
    };
    tables.write(out)?;
    manifest.status = "running".into();
    write_manifest(out, &manifest)?;
    Ok(seen.len())
}
