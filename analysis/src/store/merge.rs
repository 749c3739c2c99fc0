//! Shards of one plan, run apart, merged into one results directory.

use super::parts::{list_parts, part_name};
use super::{load_results, read_manifest, write_manifest, Tables, PARTS_DIR};
use crate::error::{Error, Result};
use crate::util;
use locklab_model::plan::Plan;
use polars::prelude::*;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

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
