//! What `run` says once its claims are evaluated, besides the claims table: the
//! noise gate's flags in one line, and the whole outcome as JSON (`--format json`,
//! its shape in docs/cli.md).

use locklab_analysis::store::Results;
use locklab_analysis::{ClaimResult, VerdictCounts};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::path::Path;

/// The repetitions the noise gate flagged: (`point_id`, `mode`, `rep`, why).
pub fn noise_flags(results: &Results) -> Vec<(String, String, u32, String)> {
    locklab_analysis::pipeline::noise_flags(results).unwrap_or_default()
}

/// `2 of 16 native points flagged by the noise gate: lock=mcs,threads=2 (rep 0:
/// flagged: steal 12%), ...`; `None` when nothing was flagged.
pub fn noise_line(results: &Results, flags: &[(String, String, u32, String)]) -> Option<String> {
    if flags.is_empty() {
        return None;
    }
    let native: BTreeSet<String> = results
        .manifest
        .plan
        .points
        .iter()
        .filter(|p| p.modes.is_empty() || p.modes.contains(&locklab_model::plan::Mode::Native))
        .map(|p| p.id.clone())
        .collect();
    let flagged: BTreeSet<&str> = flags.iter().map(|f| f.0.as_str()).collect();
    const SHOWN: usize = 3;
    let mut listed: Vec<String> = flags
        .iter()
        .take(SHOWN)
        .map(|(id, _, rep, why)| format!("{id} (rep {rep}: {why})"))
        .collect();
    if flags.len() > SHOWN {
        listed.push(format!("and {} more (column `noise`)", flags.len() - SHOWN));
    }
    Some(format!(
        "{} of {} native point{} flagged by the noise gate: {}",
        flagged.len(),
        native.len(),
        if native.len() == 1 { "" } else { "s" },
        listed.join(", ")
    ))
}

/// `run --format json`: the run, its records, the noise gate's flags, the claims
/// and the exit code they call for.
pub fn run_json(dir: &Path, results: &Results, claims: &[ClaimResult], exit_code: i32) -> Value {
    let points = results.points.clone().collect().ok();
    let total = points.as_ref().map_or(0, |p| p.height());
    let skipped = points
        .as_ref()
        .and_then(|p| p.column("skipped").ok())
        .map_or(0, |c| total - c.null_count());
    let m = &results.manifest;
    json!({
        "run": 1,
        "dir": dir,
        "run_id": m.run_id(),
        "experiment": m.plan.experiment,
        "status": "complete",
        "exit_code": exit_code,
        "records": { "total": total, "skipped": skipped },
        "noise_flagged": noise_flags(results)
            .into_iter()
            .map(|(point_id, mode, rep, noise)| json!({
                "point_id": point_id, "mode": mode, "rep": rep, "noise": noise,
            }))
            .collect::<Vec<_>>(),
        "counts": {
            "all": VerdictCounts::of(claims),
            "gating": VerdictCounts::gating(claims),
        },
        "claims": claims,
    })
}
