//! `locklab compare DIR_A DIR_B`: per point, the ratio of each headline metric with a
//! confidence interval and a verdict. Runs of different plans are refused (exit 2).

use crate::cli::Format;
use crate::exit::{self, Failure, Result, WithCode};
use anyhow::anyhow;
use locklab_analysis::compare::{compare, plan_difference, CompareOptions};
use locklab_analysis::store;
use std::path::Path;

pub fn run(
    a: &Path,
    b: Option<&Path>,
    allow_cross_host: bool,
    sim_vs_native: bool,
    out: Option<&Path>,
    format: Format,
) -> Result<i32> {
    let b = match (b, sim_vs_native) {
        (Some(b), false) => b,
        (None, true) => a,
        (Some(_), true) => {
            return Err(Failure::new(
                exit::INVALID_INPUT,
                anyhow!("--sim-vs-native compares the two modes of one directory; give one"),
            ))
        }
        (None, false) => {
            return Err(Failure::new(
                exit::INVALID_INPUT,
                anyhow!("compare needs two results directories"),
            ))
        }
    };
    for d in [a, b] {
        if !d.join("manifest.yaml").is_file() {
            return Err(Failure::new(
                exit::INVALID_INPUT,
                anyhow!(
                    "{} is not a results directory (no manifest.yaml)",
                    d.display()
                ),
            ));
        }
    }
    // Points of the same id in two different plans do not measure the same thing.
    let (ma, mb) = (
        store::read_manifest(a).code(exit::INVALID_INPUT)?,
        store::read_manifest(b).code(exit::INVALID_INPUT)?,
    );
    if let Some(why) = plan_difference(&ma.plan, &mb.plan) {
        return Err(Failure::new(
            exit::INVALID_INPUT,
            anyhow!(
                "refusing to compare {} and {}: {why}",
                a.display(),
                b.display()
            ),
        ));
    }
    let opts = CompareOptions {
        allow_cross_host,
        sim_vs_native,
    };
    let cmp = compare(a, b, &opts).map_err(|e| {
        // Refusing to mix hosts is the environment saying no, not a broken run.
        let code = if format!("{e:#}").contains("host") {
            exit::ENVIRONMENT
        } else {
            exit::RUN_FAILED
        };
        Failure::new(code, e)
    })?;
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
            println!(
                "{}",
                serde_json::to_string_pretty(&serde_json::json!({
                    "compare": 1,
                    "a": cmp.a,
                    "b": cmp.b,
                    "rows": cmp.rows,
                    "counts": counts,
                    "warnings": cmp.warnings,
                }))
                .unwrap_or_default()
            )
        }
    }
    if let Some(out) = out {
        cmp.write_report(out).code(exit::RUN_FAILED)?;
        eprintln!("comparison report: {}", out.display());
    }
    Ok(exit::OK)
}
