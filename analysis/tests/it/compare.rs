use crate::common::*;
use locklab_analysis::compare::{
    compare, compare_pooled, CompareOptions, CompareVerdict, OFF_CPU_SHARE, REACQUIRED_SHARE,
    WAITED_SHARE,
};
use locklab_analysis::ResultsWriter;
use locklab_model::plan::{Costs, Mode, Plan, Topology};

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
    dir_on(plan, scale, |h| h.hostname = hostname.into(), mode, edit)
}

/// [`dir_of`] on a host `host` edits.
fn dir_on(
    plan: &Plan,
    scale: f64,
    host: impl Fn(&mut locklab_model::manifest::HostInfo),
    mode: Mode,
    edit: impl Fn(&mut locklab_model::records::RunRecord),
) -> tempfile::TempDir {
    let plan = plan.clone();
    let mut m = manifest(&plan);
    host(&mut m.host);
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
            ..CompareOptions::default()
        },
    )
    .unwrap();
    assert!(ok.warnings.iter().any(|w| w.contains("across hosts")));
    assert_eq!(ok.rows[0].verdict, CompareVerdict::WithinNoise);
}

#[test]
fn sim_against_native_in_one_directory_gives_the_residuals() {
    let plan = plan();
    let m = manifest(&plan);
    let dir = tempfile::tempdir().unwrap();
    let mut w = ResultsWriter::create(dir.path(), &m).unwrap();
    for mut r in all_records(&plan) {
        // Simulated threads on their CPUs all window long.
        r.point.cpu_wall_ratio = 1.0;
        w.write(&r).unwrap();
        // Natively: half the throughput, and CPU time per acquisition 10 % below the
        // simulation's threads × window / acquisitions.
        let mut n = r.clone();
        n.point.throughput_ops_s *= 0.5;
        n.point.cpu_ns_per_acq = sim_cpu(&r) / 1.1;
        // And a releaser that never took the lock back, from threads that all queued,
        // off their CPUs a fifth of the window.
        n.point.reacquisitions = Some(0);
        n.point.waits = Some(n.point.acquisitions);
        n.point.cpu_wall_ratio = 0.8;
        mark_native(&mut n);
        w.write(&n).unwrap();
    }
    w.finish(&m).unwrap();
    let c = compare(
        dir.path(),
        dir.path(),
        &CompareOptions {
            sim_vs_native: true,
            ..CompareOptions::default()
        },
    )
    .unwrap();
    // The re-acquired share's residual is a difference, sim − native (here the
    // simulated share itself), within 0.1 whatever `--tolerance` says.
    for r in all_records(&plan) {
        let row = |metric: &str| {
            c.rows
                .iter()
                .find(|x| x.point_id == r.point.point_id && x.metric == metric)
                .unwrap()
        };
        let share = r.point.reacquisitions.unwrap() as f64 / r.point.acquisitions as f64;
        let row_re = row(REACQUIRED_SHARE);
        assert!((row_re.residual.unwrap() - share).abs() < 1e-9, "{share}");
        let within = share <= locklab_analysis::compare::SHARE_TOLERANCE;
        assert_eq!(row_re.verdict == CompareVerdict::WithinTolerance, within);
        // So is the waited share's: the simulated share less the native 1.
        let waited = r.point.waits.unwrap() as f64 / r.point.acquisitions as f64;
        let row_waited = row(WAITED_SHARE);
        assert!(
            (row_waited.residual.unwrap() - (waited - 1.0)).abs() < 1e-9,
            "{waited}"
        );
        assert_eq!(
            row_waited.verdict,
            CompareVerdict::OutsideTolerance,
            "{waited}"
        );
        // The off-CPU share, 1 − cpu_wall_ratio, a difference too: the simulated
        // threads never left their CPUs, the native ones a fifth of the window.
        let row_off = row(OFF_CPU_SHARE);
        assert!((row_off.residual.unwrap() + 0.2).abs() < 1e-9);
        assert_eq!(row_off.verdict, CompareVerdict::OutsideTolerance);
    }
    // Every CPU time within: no point outside to sort by regime.
    let g = c.regimes().expect("the waited share is measured");
    assert!(g.other_regime.is_empty() && g.same_regime == 0, "{g:?}");
    assert_eq!(
        c.rows.len(),
        plan.points.len() * locklab_analysis::compare::VALIDATION.len()
    );
    assert!(c.rows.iter().all(|r| r.mode == "sim"));
    let cpu: Vec<_> = c
        .rows
        .iter()
        .filter(|r| r.metric == "cpu_ns_per_acq")
        .collect();
    for r in &cpu {
        let res = r.residual.unwrap();
        assert!((res - 0.1).abs() < 1e-9, "{res}");
        assert_eq!(r.verdict, CompareVerdict::WithinTolerance);
    }
    let tp = c
        .rows
        .iter()
        .find(|r| r.metric == "throughput_ops_s")
        .unwrap();
    // Sim says twice the hardware: +100 %, outside ±15 %.
    assert!((tp.residual.unwrap() - 1.0).abs() < 1e-9);
    assert_eq!(tp.verdict, CompareVerdict::OutsideTolerance);
    assert!((tp.ratio.value - 0.5).abs() < 1e-9);
    let table = c.table();
    assert!(
        table.contains("sim − native") && table.contains("+10.0 %"),
        "{table}"
    );
    assert!(
        table.contains(&format!(
            "residuals: cpu_ns_per_acq: {n} of {n} points within tolerance, largest +10.0 %, mean |sim − native| 10.0 %\n",
            n = plan.points.len()
        )),
        "{table}"
    );
    let summary = c.residual_summary().unwrap();
    let cpu = summary
        .iter()
        .find(|s| s.metric == "cpu_ns_per_acq")
        .unwrap();
    assert_eq!((cpu.infinite, cpu.n), (0, plan.points.len()));
    assert!((cpu.mean_abs.unwrap() - 0.1).abs() < 1e-9, "{cpu:?}");
    // As `compare --format json` writes it.
    let json = serde_json::to_value(cpu).unwrap();
    assert_eq!(json["metric"], "cpu_ns_per_acq");
    assert_eq!(json["within"], plan.points.len());
    assert!(
        (json["mean_abs"].as_f64().unwrap() - 0.1).abs() < 1e-9,
        "{json}"
    );
    let inf = locklab_analysis::compare::ResidualSummary {
        largest: f64::NEG_INFINITY,
        mean_abs: None,
        ..cpu.clone()
    };
    let json = serde_json::to_value(&inf).unwrap();
    assert_eq!(
        (&json["largest"], &json["mean_abs"]),
        (&serde_json::json!("-inf"), &serde_json::Value::Null)
    );
    // By axis: every point counted once per axis, each within.
    let by = c.residuals_by_axis();
    assert!(!by.is_empty());
    for (axis, counts) in &by {
        let n: usize = counts.iter().map(|c| c.n).sum();
        assert_eq!(n, plan.points.len(), "{axis}: {counts:?}");
        assert!(counts.iter().all(|c| c.within == c.n), "{axis}: {counts:?}");
        assert!(
            table.contains(&format!("cpu_ns_per_acq by {axis}: ")),
            "{table}"
        );
    }
}

/// The simulation's CPU time per acquisition of `r`: threads × window / acquisitions
/// (a simulated thread is on its CPU all window long).
fn sim_cpu(r: &locklab_model::records::RunRecord) -> f64 {
    f64::from(r.point.threads) * r.point.window_ns as f64 / r.point.acquisitions as f64
}

/// `r`'s point, threads and hand-offs marked native.
fn mark_native(r: &mut locklab_model::records::RunRecord) {
    r.point.mode = Mode::Native;
    for t in &mut r.threads {
        t.mode = Mode::Native;
    }
    for h in &mut r.handoffs {
        h.mode = Mode::Native;
    }
}

/// A native run of `plan` whose CPU time per acquisition is the simulation's
/// (threads × window / acquisitions) divided by `by`.
fn native_dir(plan: &Plan, by: f64) -> tempfile::TempDir {
    native_dir_on(plan, by, "labhost")
}

/// [`native_dir`] on host `hostname`.
fn native_dir_on(plan: &Plan, by: f64, hostname: &str) -> tempfile::TempDir {
    dir_of(plan, 1.0, hostname, Mode::Native, |r| {
        let sim_cpu = sim_cpu(r);
        r.point.cpu_ns_per_acq = sim_cpu / by;
        mark_native(r);
    })
}

#[test]
fn sim_against_native_runs_pools_their_repetitions() {
    let sim = dir_with(1.0, "labhost", Mode::Sim);
    let (n1, n2, n3) = (
        native_dir(&plan(), 1.1),
        native_dir(&plan(), 1.1),
        native_dir(&plan(), 2.0),
    );
    let opts = CompareOptions {
        sim_vs_native: true,
        ..CompareOptions::default()
    };
    let cpu_residuals = |c: &locklab_analysis::compare::Comparison| -> Vec<f64> {
        c.rows
            .iter()
            .filter(|r| r.metric == "cpu_ns_per_acq")
            .map(|r| r.residual.unwrap())
            .collect()
    };
    // One run alone: the simulation says twice the hardware.
    let alone = compare(sim.path(), n3.path(), &opts).unwrap();
    assert!(cpu_residuals(&alone).iter().all(|r| (r - 1.0).abs() < 1e-9));
    // Pooled, 10 of 15 repetitions say sim / 1.1: the median is one of theirs (the
    // repetitions spread by ±2 %, so not exactly the median repetition's).
    let dirs = [n1.path(), n2.path(), n3.path()].map(|p| p.to_path_buf());
    let pooled = compare_pooled(sim.path(), &dirs, &opts).unwrap();
    let res = cpu_residuals(&pooled);
    assert_eq!(res.len(), plan().points.len());
    assert!(res.iter().all(|r| (r - 0.1).abs() < 0.05), "{res:?}");
    // The same run twice counts once.
    let twice = [n3.path(), n3.path()].map(|p| p.to_path_buf());
    let once = compare_pooled(sim.path(), &twice, &opts).unwrap();
    assert_eq!(cpu_residuals(&once), cpu_residuals(&alone));
    assert!(once.b_more.is_empty());
    let row = pooled
        .rows
        .iter()
        .find(|r| r.metric == "cpu_ns_per_acq")
        .unwrap();
    assert_eq!(row.b.n, 3 * REPS as usize, "every repetition of every run");
    let table = pooled.table();
    assert!(table.contains(" + "), "B names every pooled run: {table}");
    // Only a sim-vs-native comparison pools.
    let e = compare_pooled(sim.path(), &dirs, &CompareOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("pools"), "{e}");
}

#[test]
fn sim_against_native_allows_other_costs_but_not_other_points() {
    let sim = dir_with(1.0, "labhost", Mode::Sim);
    let opts = CompareOptions {
        sim_vs_native: true,
        ..CompareOptions::default()
    };
    // The constants the native run's plan carried are not what the hardware ran on.
    let mut measured = plan();
    measured.topology = Topology::Host {
        costs: Some(Costs::levels(2, 45, 45, 45, 6)),
    };
    let other_costs = native_dir(&measured, 1.1);
    let c = compare(sim.path(), other_costs.path(), &opts).unwrap();
    assert!(
        c.warnings
            .iter()
            .any(|w| w.contains("machine costs differ")),
        "{:?}",
        c.warnings
    );
    // A simulation of `topology host` simulated the machine it ran on: natively
    // another host is another machine.
    let elsewhere = native_dir_on(&plan(), 1.1, "otherhost");
    let e = compare(sim.path(), elsewhere.path(), &opts).unwrap_err();
    assert!(
        matches!(e, locklab_analysis::error::Error::CrossHost(_)),
        "{e}"
    );
    // Other durations are other measurements.
    let mut longer = plan();
    longer.run.duration_ns *= 2;
    let e = compare(sim.path(), native_dir(&longer, 1.1).path(), &opts)
        .unwrap_err()
        .to_string();
    assert!(e.contains("different plans"), "{e}");
}

/// Costs measured by `topo --measure` say on which CPU: checked against native runs
/// on another, the residuals compare two machines, and the comparison says so.
#[test]
fn costs_measured_on_another_cpu_are_named_in_a_sim_against_native_comparison() {
    let opts = CompareOptions {
        sim_vs_native: true,
        ..CompareOptions::default()
    };
    let measured_on = |cpu: &str| {
        let mut p = plan();
        let mut costs = Costs::levels(2, 45, 45, 45, 6);
        costs.measured_on = Some(cpu.into());
        p.topology = Topology::Host { costs: Some(costs) };
        p
    };
    let elsewhere = |c: &locklab_analysis::compare::Comparison| {
        c.warnings.iter().any(|w| w.contains("measured on CPU"))
    };
    let native = native_dir(&plan(), 1.1);
    let other = measured_on("Another CPU @ 1.00GHz");
    let sim = dir_of(&other, 1.0, "labhost", Mode::Sim, |_| {});
    let c = compare(sim.path(), native.path(), &opts).unwrap();
    assert!(elsewhere(&c), "{:?}", c.warnings);
    assert!(
        c.warnings
            .iter()
            .any(|w| w.contains("Another CPU @ 1.00GHz") && w.contains("Test CPU")),
        "both CPUs are named: {:?}",
        c.warnings
    );
    // Measured on the CPU the native runs used: nothing to say about it.
    let here = measured_on("Test CPU");
    let sim = dir_of(&here, 1.0, "labhost", Mode::Sim, |_| {});
    let c = compare(sim.path(), native.path(), &opts).unwrap();
    assert!(!elsewhere(&c), "{:?}", c.warnings);
}

#[test]
fn diff_records_finds_changed_simulations() {
    let a = dir_with(1.0, "labhost", Mode::Sim);
    let b = dir_with(1.0, "labhost", Mode::Sim);
    let same = locklab_analysis::store::diff_records(a.path(), b.path(), Mode::Sim).unwrap();
    assert!(same.differences.is_empty() && same.newly_recorded.is_empty());
    let c = dir_with(1.5, "labhost", Mode::Sim);
    let d = locklab_analysis::store::diff_records(a.path(), c.path(), Mode::Sim)
        .unwrap()
        .differences;
    assert_eq!(d.len(), plan().points.len() * REPS as usize);
    assert!(d[0].contains("throughput_ops_s"), "{}", d[0]);
}

/// A field the stored run left empty and a newer build records (CPU time in
/// simulated records since 6 December 2026) is listed as newly recorded, not as a
/// difference; a value the stored run had and the new one lacks is a difference.
#[test]
fn diff_records_tells_a_field_newly_recorded_from_a_changed_one() {
    let old = dir_of(&plan(), 1.0, "labhost", Mode::Sim, |r| {
        r.point.cpu_ns_per_acq = f64::NAN;
        for t in &mut r.threads {
            t.cpu_ns = f64::NAN;
        }
    });
    let new = dir_of(&plan(), 1.0, "labhost", Mode::Sim, |r| {
        r.point.cpu_ns_per_acq = 123.0;
        for t in &mut r.threads {
            t.cpu_ns = 1e8;
        }
    });
    let found = locklab_analysis::store::diff_records(old.path(), new.path(), Mode::Sim).unwrap();
    assert!(found.differences.is_empty(), "{:?}", found.differences);
    assert_eq!(
        found
            .newly_recorded
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
        ["cpu_ns_per_acq", "threads.cpu_ns"]
    );
    // The other way round a value is lost: a difference.
    let lost = locklab_analysis::store::diff_records(new.path(), old.path(), Mode::Sim).unwrap();
    assert_eq!(lost.differences.len(), plan().points.len() * REPS as usize);
    assert!(lost.newly_recorded.is_empty());
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

/// A plan whose machine is this host as `topo --measure` found it (23 ns between
/// threads 0 and 1), and its simulated run, which records that transfer.
fn simulated_as_measured_here() -> (Plan, tempfile::TempDir) {
    use locklab_model::records::PAIR_TRANSFER;
    let mut plan = plan();
    let mut costs = Costs::levels(0, 23, 23, 23, 10);
    costs.measured_on = Some(manifest(&plan).host.cpu());
    plan.topology = Topology::Host { costs: Some(costs) };
    let sim = dir_of(&plan, 1.0, "labhost", Mode::Sim, |r| {
        r.point.extra.insert(PAIR_TRANSFER.into(), 23.0);
    });
    (plan, sim)
}

#[test]
fn native_repetitions_on_another_placement_of_the_cpus_are_left_out() {
    use locklab_model::records::{PAIR_TRANSFER, PAIR_TRANSFER_AFTER, PAIR_TRANSFER_BEFORE};
    let (plan, sim) = simulated_as_measured_here();
    // The host moved the vCPUs to two CCDs (122 ns) for three repetitions of five,
    // and for every repetition of point 0; there a hand-off costs twice the
    // simulation, on the simulated machine 1/1.1 of it.
    let native = dir_of(&plan, 1.0, "labhost", Mode::Native, |r| {
        let moved = r.point.rep < 3 || r.point.point == 0;
        let sim_cpu = sim_cpu(r);
        r.point.cpu_ns_per_acq = if moved { sim_cpu * 2.0 } else { sim_cpu / 1.1 };
        let (before, after) = if moved { (121.0, 123.0) } else { (22.0, 23.5) };
        r.point.extra.insert(PAIR_TRANSFER_BEFORE.into(), before);
        r.point.extra.insert(PAIR_TRANSFER_AFTER.into(), after);
        r.point
            .extra
            .insert(PAIR_TRANSFER.into(), (before + after) / 2.0);
        mark_native(r);
    });
    let cpu_rows = |c: &locklab_analysis::compare::Comparison| {
        c.rows
            .iter()
            .filter(|r| r.metric == "cpu_ns_per_acq")
            .map(|r| (r.point_id.clone(), r.residual, r.b.n, r.verdict))
            .collect::<Vec<_>>()
    };
    let opts = CompareOptions {
        sim_vs_native: true,
        ..CompareOptions::default()
    };
    let c = compare(sim.path(), native.path(), &opts).unwrap();
    let rows = cpu_rows(&c);
    let n = plan.points.len();
    assert_eq!(rows.len(), n);
    // Point 0 ran on the other placement only: not measured on this machine; the
    // others keep their two repetitions on the simulated machine.
    let (gone, kept): (Vec<_>, Vec<_>) = rows.iter().partition(|r| r.2 == 0);
    assert_eq!(gone.len(), 1, "{rows:?}");
    assert_eq!(gone[0].0, plan.points[0].id);
    assert_eq!((gone[0].1, gone[0].3), (None, CompareVerdict::NotMeasured));
    for (id, residual, kept, _) in kept {
        assert_eq!(*kept, 2, "{id}");
        assert!((residual.unwrap() - 0.1).abs() < 0.05, "{id}: {residual:?}");
    }
    let left = 5 + 3 * (n - 1);
    let warning = format!(
        "{left} of {} native repetitions ran where a transfer between threads 0 and 1 took 121–123 ns, not the 23 ns that `topo --measure` found on this host and the simulated machine has",
        5 * n
    );
    assert!(
        c.warnings.iter().any(|w| w.contains(&warning)),
        "{:?}",
        c.warnings
    );
    assert!(
        c.warnings
            .iter()
            .any(|w| w.contains("1 point(s) have none left")),
        "{:?}",
        c.warnings
    );
    // Pooled whatever the placement, the moved repetitions make the median.
    let any = CompareOptions {
        any_placement: true,
        ..opts
    };
    let all = cpu_rows(&compare(sim.path(), native.path(), &any).unwrap());
    for (id, residual, kept, _) in &all {
        assert_eq!(*kept, 5, "{id}");
        assert!((residual.unwrap() + 0.5).abs() < 0.05, "{id}: {residual:?}");
    }
    // The noise gate flagged only repetitions that are left out: no point is
    // marked.
    let flagged_moved = dir_of(&plan, 1.0, "labhost", Mode::Native, |r| {
        let moved = r.point.rep < 3 && r.point.point != 0;
        let (before, after) = if moved { (22.0, 121.0) } else { (22.0, 23.5) };
        if moved {
            r.point.noise = "flagged: the CPUs moved".into();
        }
        r.point.extra.insert(PAIR_TRANSFER_BEFORE.into(), before);
        r.point.extra.insert(PAIR_TRANSFER_AFTER.into(), after);
    });
    let c = compare(sim.path(), flagged_moved.path(), &opts).unwrap();
    assert!(c.rows.iter().all(|r| r.noise.is_empty()), "{:?}", c.rows);
    let any_c = compare(sim.path(), flagged_moved.path(), &any).unwrap();
    assert!(any_c.rows.iter().any(|r| r.noise == "B"));
    // Costs that were not measured on this host name none of its placements:
    // nothing is left out, and the mixed points are said to be pooled.
    let mut described = plan.clone();
    described.topology = Topology::Host {
        costs: Some(Costs::levels(0, 23, 23, 23, 10)),
    };
    let sim = dir_of(&described, 1.0, "labhost", Mode::Sim, |r| {
        r.point.extra.insert(PAIR_TRANSFER.into(), 23.0);
    });
    let c = compare(sim.path(), native.path(), &opts).unwrap();
    assert!(cpu_rows(&c).iter().all(|r| r.2 == 5), "{:?}", cpu_rows(&c));
    assert!(
        c.warnings.iter().any(|w| w.contains(&format!(
            "{} point(s) have native repetitions on more than one placement",
            n - 1
        )) && w
            .contains("not measured (`topo --measure`) on the host of every")),
        "{:?}",
        c.warnings
    );
}

#[test]
fn a_pooled_run_of_another_cpu_keeps_every_placement() {
    use locklab_model::records::{PAIR_TRANSFER_AFTER, PAIR_TRANSFER_BEFORE};
    let (plan, sim) = simulated_as_measured_here();
    // Two native runs, one on this host's CPU and one on another, each with one
    // repetition of five on another placement: the measured transfer names no
    // placement of the other CPU, so nothing is left out of either.
    let run = |cpu: &'static str| {
        dir_on(
            &plan,
            1.0,
            move |h| {
                if !cpu.is_empty() {
                    h.cpu_model = cpu.into();
                }
            },
            Mode::Native,
            |r| {
                r.point.cpu_ns_per_acq = 100.0;
                let ns = if r.point.rep == 0 { 120.0 } else { 23.0 };
                r.point.extra.insert(PAIR_TRANSFER_BEFORE.into(), ns);
                r.point.extra.insert(PAIR_TRANSFER_AFTER.into(), ns);
            },
        )
    };
    let (here, there) = (run(""), run("Other CPU"));
    let opts = CompareOptions {
        sim_vs_native: true,
        allow_cross_host: true,
        ..CompareOptions::default()
    };
    let c = compare_pooled(
        sim.path(),
        &[here.path().to_path_buf(), there.path().to_path_buf()],
        &opts,
    )
    .unwrap();
    for r in c.rows.iter().filter(|r| r.metric == "cpu_ns_per_acq") {
        assert_eq!(r.b.n, 10, "{r:?}");
    }
    assert!(
        c.warnings
            .iter()
            .any(|w| w.contains("on the host of every native run pooled")),
        "{:?}",
        c.warnings
    );
    // This host's run alone: the repetition on the other placement is left out.
    let c = compare(sim.path(), here.path(), &opts).unwrap();
    for r in c.rows.iter().filter(|r| r.metric == "cpu_ns_per_acq") {
        assert_eq!(r.b.n, 4, "{r:?}");
    }
}

#[test]
fn pooled_runs_with_and_without_the_placement_columns_keep_one_value_per_repetition() {
    use locklab_model::records::{PAIR_TRANSFER_AFTER, PAIR_TRANSFER_BEFORE};
    let (plan, sim) = simulated_as_measured_here();
    // An older native run without the columns, then one on another placement
    // throughout: the old run's repetitions stay, the other's are left out, and
    // each remaining value belongs to its repetition.
    let old = dir_of(&plan, 1.0, "labhost", Mode::Native, |r| {
        r.point.cpu_ns_per_acq = 100.0;
    });
    let moved = dir_of(&plan, 1.0, "labhost", Mode::Native, |r| {
        r.point.cpu_ns_per_acq = 300.0;
        r.point.extra.insert(PAIR_TRANSFER_BEFORE.into(), 120.0);
        r.point.extra.insert(PAIR_TRANSFER_AFTER.into(), 121.0);
    });
    let opts = CompareOptions {
        sim_vs_native: true,
        ..CompareOptions::default()
    };
    let c = compare_pooled(
        sim.path(),
        &[old.path().to_path_buf(), moved.path().to_path_buf()],
        &opts,
    )
    .unwrap();
    for r in c.rows.iter().filter(|r| r.metric == "cpu_ns_per_acq") {
        assert_eq!((r.b.n, r.b.value), (5, 100.0), "{r:?}");
    }
}

#[test]
fn no_wait_on_either_side_is_agreement() {
    // Uncontended points: no thread waited, simulated or native (both time a wait
    // from the first failed attempt), so the wait tail is 0 on both sides.
    let zero = |r: &mut locklab_model::records::RunRecord| r.point.wait_p99_ns = 0.0;
    let sim = dir_of(&plan(), 1.0, "labhost", Mode::Sim, zero);
    let native = dir_of(&plan(), 1.0, "labhost", Mode::Native, |r| {
        zero(r);
        mark_native(r);
    });
    let opts = CompareOptions {
        sim_vs_native: true,
        ..CompareOptions::default()
    };
    let c = compare(sim.path(), native.path(), &opts).unwrap();
    let waits: Vec<_> = c
        .rows
        .iter()
        .filter(|r| r.metric == "wait_p99_ns")
        .collect();
    assert!(!waits.is_empty());
    for r in waits {
        assert_eq!(r.residual, Some(0.0), "{r:?}");
        assert_eq!(r.verdict, CompareVerdict::WithinTolerance, "{r:?}");
    }
}

/// Sim against native in one directory: every simulated record of `plan` as `sim`
/// edits it, and beside it a native one at half its CPU time per acquisition (+100 %,
/// outside), as `native` edits it.
fn half_the_cpu_natively(
    plan: &Plan,
    sim: impl Fn(&mut locklab_model::records::RunRecord),
    native: impl Fn(&mut locklab_model::records::RunRecord),
) -> locklab_analysis::compare::Comparison {
    let dir = tempfile::tempdir().unwrap();
    let m = manifest(plan);
    let mut w = ResultsWriter::create(dir.path(), &m).unwrap();
    for mut r in all_records(plan) {
        sim(&mut r);
        w.write(&r).unwrap();
        let mut n = r.clone();
        n.point.cpu_ns_per_acq = sim_cpu(&r) / 2.0;
        native(&mut n);
        mark_native(&mut n);
        w.write(&n).unwrap();
    }
    w.finish(&m).unwrap();
    let opts = CompareOptions {
        sim_vs_native: true,
        ..CompareOptions::default()
    };
    compare(dir.path(), dir.path(), &opts).unwrap()
}

#[test]
fn points_outside_in_cpu_time_are_sorted_by_whether_the_threads_queue_alike() {
    // Natively every point costs half the simulated CPU time (+100 %, outside); at
    // the first point the native threads all waited, in every repetition (the
    // simulated half: another regime), at the others as many as simulated (the same
    // regime, a cost).
    let plan = plan();
    let c = half_the_cpu_natively(
        &plan,
        |_| {},
        |n| {
            if n.point.point == 0 {
                n.point.waits = Some(n.point.acquisitions);
            }
        },
    );
    let g = c.regimes().unwrap();
    let first = all_records(&plan)[0].point.point_id.clone();
    assert_eq!(g.other_regime, vec![first.clone()]);
    assert_eq!(g.same_regime, plan.points.len() - 1);
    assert!(c.table().contains(&format!(
        "outside tolerance at {} points: 1 where the threads queue or sleep otherwise than natively (waited_share or off_cpu_share outside too: {first}), {} in the same regime",
        plan.points.len(),
        plan.points.len() - 1
    )));
}

#[test]
fn points_outside_in_cpu_time_whose_threads_sleep_otherwise_are_another_regime() {
    // As above, without a waits count on either side (records before 6 December
    // 2026): at the first point the native threads were off their CPUs a third of
    // the window (they slept), at the others never, as simulated.
    let plan = plan();
    let c = half_the_cpu_natively(
        &plan,
        |r| {
            r.point.waits = None;
            r.point.cpu_wall_ratio = 1.0;
        },
        |n| {
            if n.point.point == 0 {
                n.point.cpu_wall_ratio = 0.67;
            }
        },
    );
    let g = c.regimes().expect("the off-CPU share is measured");
    let first = all_records(&plan)[0].point.point_id.clone();
    assert_eq!(g.other_regime, vec![first]);
    // The others: outside in cost, their waited share not measured.
    assert_eq!((g.same_regime, g.unmeasured), (0, plan.points.len() - 1));
}
