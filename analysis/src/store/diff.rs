//! The records of two results directories compared, field by field: what
//! `reproduce` prints.

use super::{read_parts, RecordKey, PARTS_DIR};
use crate::error::{Error, Result};
use locklab_model::plan::Mode;
use locklab_model::records::RunRecord;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// What [`diff_records`] finds between the records of two runs.
#[derive(Debug, Default)]
pub struct RecordDiff {
    /// One line per record whose values differ: a value changed, or one the first
    /// run recorded is missing from the second.
    pub differences: Vec<String>,
    /// Fields the first run left empty (null) in every record where the second
    /// recorded a value: a newer build measuring more, not a change in anything
    /// the first run stored (`threads.` for a thread row's field).
    pub newly_recorded: BTreeSet<String>,
}

/// The fields of one table as [`RecordDiff::newly_recorded`] names them, and those
/// of them the first run recorded somewhere.
struct Fields<'a> {
    /// `""` or `"threads."`: before the field's own key.
    family: &'a str,
    recorded: &'a BTreeSet<String>,
}

/// Every field (named as [`RecordDiff::newly_recorded`] names it) that holds a
/// value in some record of `recs`.
fn recorded_fields(recs: &BTreeMap<RecordKey, RunRecord>) -> BTreeSet<String> {
    let mut set = BTreeSet::new();
    let mut add = |family: &str, v: serde_json::Value| {
        if let serde_json::Value::Object(m) = v {
            for (k, x) in m {
                if !x.is_null() {
                    set.insert(format!("{family}{k}"));
                }
            }
        }
    };
    for r in recs.values() {
        add("", serde_json::to_value(&r.point).unwrap_or_default());
        for t in &r.threads {
            add("threads.", serde_json::to_value(t).unwrap_or_default());
        }
        for h in &r.handoffs {
            add("handoffs.", serde_json::to_value(h).unwrap_or_default());
        }
    }
    set
}

fn field_diffs(
    what: &str,
    fields: &Fields<'_>,
    a: &serde_json::Value,
    b: &serde_json::Value,
    out: &mut Vec<String>,
    newly: &mut BTreeSet<String>,
) {
    match (a, b) {
        (serde_json::Value::Object(x), serde_json::Value::Object(y)) => {
            for (k, va) in x {
                let vb = y.get(k).unwrap_or(&serde_json::Value::Null);
                let name = format!("{}{k}", fields.family);
                if va.is_null() && !vb.is_null() && !fields.recorded.contains(&name) {
                    newly.insert(name);
                } else if va != vb {
                    out.push(format!("{what}{k}: {va} vs {vb}"));
                }
            }
        }
        _ if a != b => out.push(format!("{what}: {a} vs {b}")),
        _ => {}
    }
}

fn rows_diff<T: serde::Serialize>(
    what: &str,
    recorded: &BTreeSet<String>,
    a: &[T],
    b: &[T],
    out: &mut Vec<String>,
    newly: &mut BTreeSet<String>,
) {
    if a.len() != b.len() {
        out.push(format!("{what}: {} rows vs {}", a.len(), b.len()));
        return;
    }
    let family = format!("{what}.");
    let fields = Fields {
        family: &family,
        recorded,
    };
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        let (x, y) = (
            serde_json::to_value(x).unwrap_or_default(),
            serde_json::to_value(y).unwrap_or_default(),
        );
        let before = out.len();
        field_diffs(&format!("{what}[{i}]."), &fields, &x, &y, out, newly);
        if out.len() > before {
            return; // the first differing row says enough
        }
    }
}

/// Differences between the records of `mode` in two results directories (the
/// journal in `parts/`), one line each, and the fields only the second recorded:
/// what `reproduce` prints for simulations, which must be identical. No
/// differences when every value the first run recorded is the same in the second.
pub fn diff_records(a: &Path, b: &Path, mode: Mode) -> Result<RecordDiff> {
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
    let recorded = recorded_fields(&ra);
    let points = Fields {
        family: "",
        recorded: &recorded,
    };
    let mut out = Vec::new();
    let mut newly = BTreeSet::new();
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
        field_diffs("", &points, &px, &py, &mut d, &mut newly);
        rows_diff(
            "threads", &recorded, &x.threads, &y.threads, &mut d, &mut newly,
        );
        rows_diff(
            "handoffs",
            &recorded,
            &x.handoffs,
            &y.handoffs,
            &mut d,
            &mut newly,
        );
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
    Ok(RecordDiff {
        differences: out,
        newly_recorded: newly,
    })
}
