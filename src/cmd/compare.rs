//! `locklab compare DIR_A DIR_B`: per point, the ratio of each headline metric with a
//! confidence interval and a verdict. Runs of different plans are refused (exit 2).
//! `--sim-vs-native DIR [NATIVE_DIR...]`: the simulator's residuals against A's own
//! native points or against native runs of the same experiment, pooled.

use crate::cli::Format;
use crate::exit::{self, Failure, Result, WithCode};
use anyhow::anyhow;
use locklab_analysis::compare::{compare_pooled, CompareOptions};
use locklab_analysis::error::Error;
use locklab_analysis::store;
use std::path::{Path, PathBuf};

pub fn run(
    a: &Path,
    b: &[PathBuf],
    opts: CompareOptions,
    out: Option<&Path>,
    format: Format,
) -> Result<i32> {
    let b: Vec<PathBuf> = match (b.len(), opts.sim_vs_native) {
        (1, false) => b.to_vec(),
        (0, true) => vec![a.to_path_buf()],
        (_, true) => b.to_vec(),
        (_, false) => {
            return Err(Failure::new(
                exit::INVALID_INPUT,
                anyhow!(
                    "compare needs two results directories (several only with --sim-vs-native, whose native runs are pooled)"
                ),
            ))
        }
    };
    let mut manifests = Vec::new();
    for d in std::iter::once(a).chain(b.iter().map(PathBuf::as_path)) {
        if !d.join("manifest.yaml").is_file() {
            return Err(Failure::new(
                exit::INVALID_INPUT,
                anyhow!(
                    "{} is not a results directory (no manifest.yaml)",
                    d.display()
                ),
            ));
        }
        // A manifest that does not read is bad input, before anything is loaded.
        let m = store::read_manifest(d).code(exit::INVALID_INPUT)?;
        // An interrupted run (or one still running) is compared by what it has not
        // measured yet: refused, as `report` refuses it.
        if m.status != "complete" {
            return Err(Failure::new(
                exit::INVALID_INPUT,
                anyhow!(
                    "{} is an incomplete run (status `{}`); finish it with `locklab run --resume {}` (or `locklab report {}` if its records are all there), then compare",
                    d.display(),
                    m.status,
                    d.display(),
                    d.display()
                ),
            ));
        }
        manifests.push(m);
    }
    if opts.sim_vs_native {
        use locklab_model::plan::Mode;
        let why = if !manifests[0].modes.contains(&Mode::Sim) {
            Some(format!("{} has no simulated points", a.display()))
        } else if !manifests[1..]
            .iter()
            .any(|m| m.modes.contains(&Mode::Native))
        {
            Some(if b.len() == 1 && b[0] == a {
                format!(
                    "{} has no native points; name native runs of the experiment after it",
                    a.display()
                )
            } else {
                "none of the native directories has native points".to_string()
            })
        } else {
            None
        };
        if let Some(why) = why {
            return Err(Failure::new(
                exit::INVALID_INPUT,
                anyhow!("nothing to compare: {why} (--sim-vs-native compares simulated points with native ones)"),
            ));
        }
    }
    let cmp = compare_pooled(a, &b, &opts).map_err(|e| {
        // Points of different plans do not measure the same thing: bad input.
        // Refusing to mix hosts is the environment saying no, not a broken run.
        let code = match &e {
            Error::CrossHost(_) => exit::ENVIRONMENT,
            Error::Incompatible(_) => exit::INVALID_INPUT,
            _ => exit::RUN_FAILED,
        };
        Failure::new(code, e)
    })?;
    if cmp.rows.is_empty() {
        let why = if cmp.warnings.is_empty() {
            "no point has a value in both".to_string()
        } else {
            cmp.warnings.join("; ")
        };
        return Err(Failure::new(
            exit::INVALID_INPUT,
            anyhow!("nothing to compare: {why}"),
        ));
    }
    match format {
        Format::Text => print!("{}", cmp.table()),
        // The table's rows, each estimate as value, interval and repetitions
        // (docs/cli.md).
        Format::Json => {
            // Counted under the verdicts' names as the rows spell them.
            let mut counts = std::collections::BTreeMap::<String, usize>::new();
            for r in &cmp.rows {
                let name = serde_json::to_value(r.verdict)
                    .ok()
                    .and_then(|v| v.as_str().map(String::from))
                    .unwrap_or_default();
                *counts.entry(name).or_default() += 1;
            }
            let mut doc = serde_json::json!({
                "compare": 1,
                "a": cmp.a,
                "b": cmp.b,
                "rows": cmp.rows,
                "counts": counts,
                "warnings": cmp.warnings,
            });
            // Per metric: within the tolerance, the largest and the mean residual.
            if let Some(r) = cmp.residual_summary() {
                doc["residuals"] = serde_json::json!(r);
            }
            // The points outside in CPU time: another regime, or the same.
            if let Some(g) = cmp.regimes() {
                doc["regimes"] = serde_json::json!(g);
            }
            // Only a pooled comparison has more than one B.
            if !cmp.b_more.is_empty() {
                doc["b_more"] = serde_json::json!(cmp.b_more);
            }
            println!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default())
        }
    }
    if let Some(out) = out {
        cmp.write_report(out).code(exit::RUN_FAILED)?;
        eprintln!("comparison report: {}", out.display());
    }
    Ok(exit::OK)
}
