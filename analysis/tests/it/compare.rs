use crate::common::*;
use locklab_analysis::compare::{compare, CompareOptions, CompareVerdict};
use locklab_analysis::ResultsWriter;
use locklab_model::plan::{Mode, Plan};

fn dir_with(scale: f64, hostname: &str, mode: Mode) -> tempfile::TempDir {
    dir_of(&plan(), scale, hostname, mode, |_| {})
}

fn dir_of(
    plan: &Plan,
    scale: f64,
    hostname: &str,
    mode: Mode,
    edit: impl Fn(&mut locklab_model::records::RunRecord),
) -> tempfile::TempDir {
    let plan = plan.clone();
    let mut m = manifest(&plan);
    m.host.hostname = hostname.into();
    let dir = tempfile::tempdir().unwrap();
    let mut w = ResultsWriter::create(dir.path(), &m).unwrap();
    for mut r in all_records(&plan) {
        r.point.mode = mode;
        r.point.throughput_ops_s *= scale;
        r.point.wait_p99_ns /= scale;
        edit(&mut r);
        w.write(&r).unwrap();
    }
    w.finish(&m).unwrap();
    dir
}

#[test]
fn verdicts_are_direction_aware() {
    let a = dir_with(1.0, "labhost", Mode::Sim);
    let b = dir_with(1.2, "labhost", Mode::Sim);
    let c = compare(a.path(), b.path(), &CompareOptions::default()).unwrap();
    let row = |metric: &str| c.rows.iter().find(|r| r.metric == metric).unwrap();
    assert_eq!(row("throughput_ops_s").verdict, CompareVerdict::Better);
    assert!((row("throughput_ops_s").ratio.value - 1.2).abs() < 1e-9);
    assert_eq!(
        row("wait_p99_ns").verdict,
        CompareVerdict::Better,
        "lower wait is better"
    );
    assert_eq!(row("jain").verdict, CompareVerdict::WithinNoise);
    let back = compare(b.path(), a.path(), &CompareOptions::default()).unwrap();
    assert_eq!(back.rows[0].verdict, CompareVerdict::Worse);
    // A 1 % change is inside the ±2 % spread of the repetitions.
    let d = dir_with(1.01, "labhost", Mode::Sim);
    let c2 = compare(a.path(), d.path(), &CompareOptions::default()).unwrap();
    assert_eq!(c2.rows[0].verdict, CompareVerdict::WithinNoise);
    let table = c.table();
    assert!(table.contains("better") && table.contains("B/A"), "{table}");
    let out = tempfile::tempdir().unwrap();
    c.write_report(out.path()).unwrap();
    assert!(std::fs::read_to_string(out.path().join("comparison.html"))
        .unwrap()
        .contains("better"));
    assert!(out.path().join("comparison.md").exists());
}

#[test]
fn different_hosts_are_refused_unless_allowed() {
    let a = dir_with(1.0, "labhost", Mode::Sim);
    let b = dir_with(1.0, "otherhost", Mode::Sim);
    let e = compare(a.path(), b.path(), &CompareOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("different hosts")
            && e.contains("otherhost")
            && e.contains("--allow-cross-host"),
        "{e}"
    );
    let ok = compare(
        a.path(),
        b.path(),
        &CompareOptions {
            allow_cross_host: true,
            sim_vs_native: false,
        },
    )
    .unwrap();
    assert!(ok.warnings.iter().any(|w| w.contains("across hosts")));
    assert_eq!(ok.rows[0].verdict, CompareVerdict::WithinNoise);
}

#[test]
fn sim_against_native_in_one_directory() {
    let plan = plan();
    let m = manifest(&plan);
    let dir = tempfile::tempdir().unwrap();
    let mut w = ResultsWriter::create(dir.path(), &m).unwrap();
    for r in all_records(&plan) {
        w.write(&r).unwrap();
        let mut n = r.clone();
        n.point.mode = Mode::Native;
        n.point.throughput_ops_s *= 0.5;
        for t in &mut n.threads {
            t.mode = Mode::Native;
        }
        for h in &mut n.handoffs {
            h.mode = Mode::Native;
        }
        w.write(&n).unwrap();
    }
    w.finish(&m).unwrap();
    let c = compare(
        dir.path(),
        dir.path(),
        &CompareOptions {
            allow_cross_host: false,
            sim_vs_native: true,
        },
    )
    .unwrap();
    assert_eq!(c.rows.len(), plan.points.len() * 4);
    assert!(c.rows.iter().all(|r| r.mode == "sim"));
    assert_eq!(c.rows[0].verdict, CompareVerdict::Worse);
    assert!((c.rows[0].ratio.value - 0.5).abs() < 1e-9);
}

#[test]
fn diff_records_finds_changed_simulations() {
    let a = dir_with(1.0, "labhost", Mode::Sim);
    let b = dir_with(1.0, "labhost", Mode::Sim);
    assert!(
        locklab_analysis::store::diff_records(a.path(), b.path(), Mode::Sim)
            .unwrap()
            .is_empty()
    );
    let c = dir_with(1.5, "labhost", Mode::Sim);
    let d = locklab_analysis::store::diff_records(a.path(), c.path(), Mode::Sim).unwrap();
    assert_eq!(d.len(), plan().points.len() * REPS as usize);
    assert!(d[0].contains("throughput_ops_s"), "{}", d[0]);
}

#[test]
fn runs_of_different_plans_are_refused() {
    let a = dir_with(1.0, "labhost", Mode::Sim);
    let mut renamed = plan();
    renamed.experiment = "other".into();
    let b = dir_of(&renamed, 1.0, "labhost", Mode::Sim, |_| {});
    let e = compare(a.path(), b.path(), &CompareOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("different experiments (`cna_threshold` and `other`)"),
        "{e}"
    );
    let mut longer = plan();
    longer.run.duration_ns *= 2;
    let c = dir_of(&longer, 1.0, "labhost", Mode::Sim, |_| {});
    let e = compare(a.path(), c.path(), &CompareOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("different plans") && e.contains("fingerprints"),
        "{e}"
    );
    // Claims and plots are not part of what is measured.
    let mut reclaimed = plan();
    reclaimed.claims.clear();
    let d = dir_of(&reclaimed, 1.0, "labhost", Mode::Sim, |_| {});
    assert!(compare(a.path(), d.path(), &CompareOptions::default()).is_ok());
}

#[test]
fn noise_flagged_points_are_marked() {
    let a = dir_with(1.0, "labhost", Mode::Native);
    let b = dir_of(&plan(), 1.0, "labhost", Mode::Native, |r| {
        if r.point.point == 0 && r.point.rep == 1 {
            r.point.noise = "flagged: cpu time 60% of wall".into();
        }
    });
    let c = compare(a.path(), b.path(), &CompareOptions::default()).unwrap();
    let flagged: Vec<&str> = c
        .rows
        .iter()
        .filter(|r| !r.noise.is_empty())
        .map(|r| r.noise.as_str())
        .collect();
    assert!(!flagged.is_empty() && flagged.iter().all(|n| *n == "B"));
    assert!(c.table().contains("noise"));
    assert!(c
        .warnings
        .iter()
        .any(|w| w.contains("1 point(s) had a repetition flagged")));
}
