//! `locklab check FILE...`

use crate::cli::LoadArgs;
use crate::exit::{self, Result};
use std::path::PathBuf;

pub fn run(files: &[PathBuf], args: &LoadArgs) -> Result<i32> {
    let color = crate::util::stderr_is_terminal();
    let mut failed = 0usize;
    for file in files {
        let path = file.to_string_lossy().to_string();
        let checked = super::load_checked(file, args, false)?;
        if !checked.diagnostics.is_empty() {
            eprint!(
                "{}",
                locklab_dsl::render(&checked.diagnostics, &checked.sources, color)
            );
        }
        if checked.has_errors() {
            failed += 1;
            let n = checked.diagnostics.iter().filter(|d| d.is_error()).count();
            eprintln!("{path}: {n} error{}", if n == 1 { "" } else { "s" });
        } else if let Some(plan) = &checked.plan {
            println!(
                "{path}: ok — experiment {}, {} point{}, {} claim{}",
                plan.experiment,
                plan.points.len(),
                if plan.points.len() == 1 { "" } else { "s" },
                plan.claims.len(),
                if plan.claims.len() == 1 { "" } else { "s" }
            );
        } else {
            println!("{path}: ok — library");
        }
    }
    Ok(if failed > 0 {
        exit::INVALID_INPUT
    } else {
        exit::OK
    })
}
