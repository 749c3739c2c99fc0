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

/// `trace` of the quick start's two-thread MCS point: a table of requests and grants,
/// the same events in JSON, and a window's events the same whether or not the run
/// goes on past it (nothing before a time depends on when the run ends).
#[test]
fn trace_shows_a_points_requests_and_a_window_does_not_depend_on_its_end() {
    let file = root().join("experiments/quickstart.lab");
    let id = "lock=mcs,threads=2";
    let out = locklab()
        .arg("trace")
        .arg(&file)
        .args(["--point", id, "--from", "1ms", "--for", "1us"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains(&format!("point {id}")), "{text}");
    assert!(text.contains("granted lock 0"), "{text}");
    assert!(text.contains(" rmw ") && text.contains(" miss"), "{text}");

    let events = |span: &str| -> Vec<serde_json::Value> {
        let out = locklab()
            .arg("trace")
            .arg(&file)
            .args([
                "--point", id, "--from", "1ms", "--for", span, "--format", "json",
            ])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(doc["point"], id);
        doc["events"].as_array().unwrap().clone()
    };
    let short = events("1us");
    assert!(short.len() > 10, "{short:?}");
    for e in &short {
        // Virtual ns, to the picosecond: a whole number or a fraction.
        let at = e["at_ns"].as_f64().unwrap();
        assert!((1_000_000.0..1_001_000.0).contains(&at), "{e}");
        assert!(e["done_ns"].as_f64().unwrap() >= at, "{e}");
    }
    let long: Vec<serde_json::Value> = events("3us")
        .into_iter()
        .filter(|e| e["at_ns"].as_f64().unwrap() < 1_001_000.0)
        .collect();
    assert_eq!(short, long);
}

#[test]
fn trace_names_the_point_it_needs_and_refuses_what_it_cannot_trace() {
    let file = root().join("experiments/quickstart.lab");
    let trace = |args: &[&str]| {
        locklab()
            .arg("trace")
            .arg(&file)
            .args(args)
            .output()
            .unwrap()
    };
    // Several points and none named: which one?
    let o = trace(&[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("name one with --point"),
        "{}",
        stderr(&o)
    );
    // A partial id: the points it could mean.
    let o = trace(&["--point", "lock=mcs"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("lock=mcs,threads=2"), "{}", stderr(&o));
    // --set narrowing to one point needs no --point.
    let o = trace(&["--set", "lock=tas", "--set", "threads=1", "--for", "200ns"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("granted lock 0"), "{}", stdout(&o));
    // A repetition the run does not have, a window of nothing, a bad duration, a
    // window past the run's end.
    for args in [
        &["--point", "lock=mcs,threads=2", "--from", "1000s"][..],
        &["--point", "lock=mcs,threads=2", "--rep", "99"],
        &["--point", "lock=mcs,threads=2", "--for", "0ns"],
        &["--point", "lock=mcs,threads=2", "--for", "2 parsecs"],
    ] {
        let o = trace(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
    }
}
