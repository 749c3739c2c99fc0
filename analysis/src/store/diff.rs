//! The records of two results directories compared, field by field: what
//! `reproduce` prints.

use super::{read_parts, RecordKey, PARTS_DIR};
use crate::error::{Error, Result};
use locklab_model::plan::Mode;
use locklab_model::records::RunRecord;
use std::collections::BTreeMap;
use std::path::Path;

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
