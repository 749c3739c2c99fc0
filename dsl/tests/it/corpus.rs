//! `tests/corpus/*.lab`: small broken files, each naming the diagnostics it must
//! produce in comments:
//!
//! ```text
//! # error: 4:13 unknown lock algorithm `mcsx`
//! # error: @lib/cycle_b.lab 1:5 include cycle
//! # help: a library must not `use` a file that uses it
//! ```
//!
//! `LINE:COL` is where the diagnostic points, the rest a substring of its message;
//! a `help:` line asks the diagnostic above it for a help containing the text.
//! Every expected diagnostic must appear, and no other error or warning may.

use locklab_dsl::{load, render, FsLoader, LoadOptions, Severity};
use std::path::Path;

struct Expected {
    severity: Severity,
    file: Option<String>,
    line: usize,
    col: usize,
    message: String,
    help: Option<String>,
}

fn expectations(text: &str) -> Vec<Expected> {
    let mut out = Vec::new();
    for line in text.lines() {
        let t = line.trim_start();
        let Some(rest) = t.strip_prefix('#').or_else(|| t.strip_prefix("//")) else {
            continue;
        };
        let rest = rest.trim_start();
        if let Some(help) = rest.strip_prefix("help:") {
            let last: &mut Expected = out
                .last_mut()
                .expect("`help:` after an expected diagnostic");
            last.help = Some(help.trim().to_string());
            continue;
        }
        let (severity, rest) = if let Some(r) = rest.strip_prefix("error:") {
            (Severity::Error, r)
        } else if let Some(r) = rest.strip_prefix("warning:") {
            (Severity::Warning, r)
        } else {
            continue;
        };
        let mut rest = rest.trim_start();
        let mut file = None;
        if let Some(r) = rest.strip_prefix('@') {
            let (f, r) = r.split_once(' ').expect("@file then position");
            file = Some(f.to_string());
            rest = r.trim_start();
        }
        let (pos, message) = rest.split_once(' ').expect("position then message");
        let (l, c) = pos.split_once(':').expect("LINE:COL");
        out.push(Expected {
            severity,
            file,
            line: l.parse().expect("line"),
            col: c.parse().expect("column"),
            message: message.trim().to_string(),
            help: None,
        });
    }
    out
}

#[test]
fn corpus() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "lab"))
        .collect();
    files.sort();
    assert!(files.len() >= 45, "only {} corpus files", files.len());
    let prefix = format!("{}/", dir.display());
    let mut failures = Vec::new();
    for path in &files {
        let main = path.to_string_lossy().into_owned();
        let text = std::fs::read_to_string(path).unwrap();
        let expected = expectations(&text);
        assert!(!expected.is_empty(), "{main} names no expected diagnostic");
        let checked = load(
            &main,
            &FsLoader::for_experiment(path, &[]),
            &LoadOptions::default(),
        );
        let rel = |f: &str| f.strip_prefix(&prefix).unwrap_or(f).to_string();
        let main_rel = rel(&main);
        let found: Vec<(Severity, String, usize, usize, String, String)> = checked
            .diagnostics
            .iter()
            .map(|d| {
                let src = checked
                    .sources
                    .iter()
                    .find(|(p, _)| *p == d.file)
                    .map_or("", |(_, t)| t.as_str());
                let (l, c) = d.line_col(src);
                (
                    d.severity,
                    rel(&d.file),
                    l,
                    c,
                    d.message.replace(&prefix, ""),
                    d.help.clone().unwrap_or_default(),
                )
            })
            .collect();
        let mut used = vec![false; found.len()];
        for e in &expected {
            let file = e.file.clone().unwrap_or_else(|| main_rel.clone());
            let hit = found.iter().enumerate().position(|(i, f)| {
                !used[i]
                    && f.0 == e.severity
                    && f.1 == file
                    && f.2 == e.line
                    && f.3 == e.col
                    && f.4.contains(&e.message)
                    && e.help.as_ref().is_none_or(|h| f.5.contains(h))
            });
            match hit {
                Some(i) => used[i] = true,
                None => failures.push(format!(
                    "{main_rel}: expected {:?} at {file}:{}:{} containing {:?}{}",
                    e.severity,
                    e.line,
                    e.col,
                    e.message,
                    e.help
                        .as_ref()
                        .map_or(String::new(), |h| format!(" with help {h:?}"))
                )),
            }
        }
        for (i, f) in found.iter().enumerate() {
            if !used[i] {
                failures.push(format!(
                    "{main_rel}: unexpected {:?} at {}:{}:{}: {} (help: {})",
                    f.0, f.1, f.2, f.3, f.4, f.5
                ));
            }
        }
        assert!(
            checked.plan.is_none(),
            "{main_rel}: an erroneous file gave a plan"
        );
        // Rendering every corpus file must work and name the file and position.
        let shown = render(&checked.diagnostics, &checked.sources, false);
        assert!(
            shown.contains(&format!("{}:", checked.diagnostics[0].file)),
            "{shown}"
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
