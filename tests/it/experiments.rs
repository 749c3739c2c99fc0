//! Every shipped experiment runs in `--quick` mode, and the quick start writes the
//! whole results directory.

use super::*;

#[test]
fn quickstart_writes_the_full_results_directory() {
    let dir = quickstart_run();
    for f in [
        "manifest.yaml",
        "points.parquet",
        "threads.parquet",
        "handoffs.parquet",
        "claims.json",
        "report/index.html",
        "report/report.md",
    ] {
        assert!(dir.join(f).is_file(), "{f} is written");
    }
    let manifest = std::fs::read_to_string(dir.join("manifest.yaml")).unwrap();
    for key in [
        "schema_version",
        "git_commit",
        "rustc",
        "master_seed",
        "host",
        "plan",
        "command_line",
    ] {
        assert!(manifest.contains(key), "manifest records {key}");
    }
    let claims: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("claims.json")).unwrap()).unwrap();
    let text = claims.to_string();
    assert!(
        text.contains("verdict"),
        "every claim has a verdict: {text}"
    );
}

#[test]
fn report_rebuilds_from_stored_results() {
    let dir = quickstart_run();
    let out = locklab().arg("report").arg(dir).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let html = std::fs::read_to_string(dir.join("report/index.html")).unwrap();
    assert!(html.contains("<svg"), "plots are inline");
    // The SVG namespace is a URL; what the report must not do is load anything.
    for external in ["src=\"http", "href=\"http", "<script src", "<link "] {
        assert!(!html.contains(external), "the report needs no network: {external}");
    }
}

#[test]
fn compare_a_run_with_itself_is_within_noise() {
    let dir = quickstart_run();
    let out = locklab().arg("compare").arg(dir).arg(dir).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("within noise"), "{}", stdout(&out));
}

/// Each experiment file (the four seeds and the quick start), simulated, quick.
#[test]
fn every_experiment_passes_its_claims_in_quick_simulation() {
    let tmp = tempfile::tempdir().unwrap();
    for file in lab_files(&root().join("experiments")) {
        let name = file.file_stem().unwrap().to_string_lossy().to_string();
        let out = locklab()
            .args(["run", "--mode", "sim", "--quick", "--no-report", "--out"])
            .arg(tmp.path().join(&name))
            .arg(&file)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{name}:\n{}\n{}",
            stdout(&out),
            stderr(&out)
        );
    }
}
