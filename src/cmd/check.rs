//! `locklab check FILE...`

use crate::cli::{Format, LoadArgs};
use crate::exit::{self, Result};
use crate::term;
use locklab_dsl::{Checked, Diagnostic, Severity};
use serde_json::{json, Value};
use std::path::PathBuf;

pub fn run(files: &[PathBuf], args: &LoadArgs, format: Format) -> Result<i32> {
    let color = term::colour();
    let mut failed = 0usize;
    let mut reports = Vec::new();
    for file in files {
        let path = file.to_string_lossy().to_string();
        let checked = super::load_checked(file, args, false)?;
        if format == Format::Json {
            reports.push(file_json(&path, &checked));
            failed += usize::from(checked.has_errors());
            continue;
        }
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
            let skipped = plan.claims.iter().filter(|c| c.skipped.is_some()).count();
            println!(
                "{path}: ok — experiment {}, {} point{}, {} claim{}{}",
                plan.experiment,
                plan.points.len(),
                if plan.points.len() == 1 { "" } else { "s" },
                plan.claims.len(),
                if plan.claims.len() == 1 { "" } else { "s" },
                match skipped {
                    0 => String::new(),
                    n => format!(" ({n} skipped by --set: `locklab plan` says why)"),
                }
            );
        } else {
            println!("{path}: ok — library");
        }
    }
    if format == Format::Json {
        let out = json!({ "check": 1, "files": reports, "failed": failed });
        println!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
    }
    Ok(if failed > 0 {
        exit::INVALID_INPUT
    } else {
        exit::OK
    })
}

/// One file's result in `check --format json` (docs/cli.md).
fn file_json(path: &str, checked: &Checked) -> Value {
    let status = if checked.has_errors() {
        "errors"
    } else if checked.plan.is_some() {
        "ok"
    } else {
        "library"
    };
    let mut v = json!({
        "file": path,
        "status": status,
        "diagnostics": checked
            .diagnostics
            .iter()
            .map(|d| diagnostic_json(d, &checked.sources))
            .collect::<Vec<_>>(),
    });
    if let Some(plan) = &checked.plan {
        v["experiment"] = json!(plan.experiment);
        v["points"] = json!(plan.points.len());
        v["claims"] = json!(plan.claims.len());
        v["skipped_claims"] = json!(plan.claims.iter().filter(|c| c.skipped.is_some()).count());
    }
    v
}

fn diagnostic_json(d: &Diagnostic, sources: &[(String, String)]) -> Value {
    let text = sources
        .iter()
        .find(|(p, _)| *p == d.file)
        .map(|(_, t)| t.as_str());
    // 1-based line and column (in characters) of a byte offset.
    let at = |offset: usize| -> Value {
        let Some(text) = text else {
            return Value::Null;
        };
        let before = &text[..floor_char_boundary(text, offset)];
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
        json!({ "line": line, "column": column })
    };
    json!({
        "severity": match d.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        },
        "file": d.file,
        "start": at(d.span.start),
        "end": at(d.span.end),
        "message": d.message,
        "label": d.label,
        "help": d.help,
        "labels": d.labels.iter().map(|l| json!({
            "start": at(l.span.start),
            "end": at(l.span.end),
            "message": l.message,
        })).collect::<Vec<_>>(),
    })
}

fn floor_char_boundary(s: &str, i: usize) -> usize {
    let mut i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}
