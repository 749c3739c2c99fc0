//! `locklab compare DIR_A DIR_B`: per point, the ratio of each headline metric with a
//! confidence interval and a verdict.

use crate::exit::{self, Failure, Result, WithCode};
use anyhow::anyhow;
use locklab_analysis::compare::{compare, CompareOptions};
use std::path::Path;

pub fn run(
    a: &Path,
    b: Option<&Path>,
    allow_cross_host: bool,
    sim_vs_native: bool,
    out: Option<&Path>,
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
    print!("{}", cmp.table());
    if let Some(out) = out {
        cmp.write_report(out).code(exit::RUN_FAILED)?;
        eprintln!("comparison report: {}", out.display());
    }
    Ok(exit::OK)
}
