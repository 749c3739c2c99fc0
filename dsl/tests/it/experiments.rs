//! Every file in `experiments/` and `experiments/lib/` checks without errors; every
//! experiment yields a plan with points and claims.

use crate::show;
use locklab_dsl::{load, FsLoader, LoadOptions};
use std::path::Path;

fn lab_files(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "lab"))
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    out.sort();
    out
}

fn root() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../experiments")
}

#[test]
fn every_experiment_checks_and_plans() {
    let files = lab_files(&root());
    assert!(files.len() >= 5, "{files:?}");
    for f in files {
        let c = load(&f, &FsLoader, &LoadOptions::default());
        assert!(!c.has_errors(), "{f}:\n{}", show(&c));
        assert!(c.diagnostics.is_empty(), "{f} has warnings:\n{}", show(&c));
        let plan = c.plan.unwrap_or_else(|| panic!("{f}: no plan"));
        assert!(!plan.points.is_empty(), "{f}: no points");
        assert!(!plan.claims.is_empty(), "{f}: no claims");
        assert!(!plan.sources.is_empty());
    }
}

#[test]
fn every_library_checks() {
    let files = lab_files(&root().join("lib"));
    assert!(files.len() >= 3, "{files:?}");
    for f in files {
        let c = load(&f, &FsLoader, &LoadOptions::default());
        assert!(c.diagnostics.is_empty(), "{f}:\n{}", show(&c));
        assert!(c.is_library(), "{f} should be a library");
    }
}
