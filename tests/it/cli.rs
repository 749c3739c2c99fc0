use super::*;

#[test]
fn check_accepts_every_shipped_experiment_and_library() {
    let mut files = lab_files(&root().join("experiments"));
    files.extend(lab_files(&root().join("experiments/lib")));
    assert!(
        files.len() >= 8,
        "experiments and libraries are shipped: {files:?}"
    );
    let out = locklab().arg("check").args(&files).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stdout(&out).lines().filter(|l| l.contains(": ok")).count(),
        files.len()
    );
}

#[test]
fn check_reports_every_error_with_location_and_excerpt_and_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.lab");
    std::fs::write(
        &bad,
        "experiment broken {\n  lock a = mcsx\n  lock b = ticket { threshold = 10ms }\n}\n",
    )
    .unwrap();
    let out = locklab().arg("check").arg(&bad).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("bad.lab:2:"),
        "location of the first error: {err}"
    );
    assert!(err.contains("mcsx"), "names the offending value: {err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn check_of_a_missing_file_is_invalid_input() {
    let out = locklab()
        .args(["check", "no/such/file.lab"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no/such/file.lab"));
}

#[test]
fn usage_errors_exit_2() {
    let out = locklab()
        .args(["run", "--mode", "sideways"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = locklab().args(["run", "--shard", "3/2"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn plan_json_lists_every_point_with_axis_values_and_seed() {
    let out = locklab()
        .args(["plan", "experiments/cna_threshold.lab", "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let points = doc["plan"]["points"].as_array().unwrap();
    assert_eq!(points.len() as u64, doc["point_count"].as_u64().unwrap());
    assert!(points.len() > 10);
    let mut seeds = std::collections::BTreeSet::new();
    for p in points {
        assert!(p["axes"].as_object().is_some_and(|a| !a.is_empty()));
        seeds.insert(p["seed"].as_u64().unwrap());
    }
    assert_eq!(seeds.len(), points.len(), "per-point seeds are unique");
}

#[test]
fn help_language_shows_the_reference() {
    let out = locklab().args(["help", "language"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout(&out).contains("expect"));
}
