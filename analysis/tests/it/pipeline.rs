use crate::common::*;
use locklab_analysis::load_results;
use locklab_analysis::pipeline::{self, estimates, f64_values, str_values};

#[test]
fn point_summary_gives_median_and_order_statistic_interval() {
    let plan = plan();
    let dir = results_dir(&plan);
    let r = load_results(dir.path()).unwrap();
    let s = pipeline::point_summary(&r).unwrap();
    assert_eq!(s.height(), plan.points.len());
    let tp = estimates(&s, "throughput_ops_s").unwrap();
    let ids = str_values(&s, "point_id").unwrap();
    for (i, id) in ids.iter().enumerate() {
        let p = plan.points.iter().find(|p| &p.id == id).unwrap();
        let e = tp[i];
        assert!((e.value - throughput(p, 2)).abs() < 1e-6, "{id}");
        // Five repetitions: the 95 % interval is [min, max].
        assert!((e.lo - throughput(p, 0)).abs() < 1e-6);
        assert!((e.hi - throughput(p, 4)).abs() < 1e-6);
        assert_eq!(e.n, 5);
    }
    // The infinite max/min of repetition 0 is kept, not averaged away.
    let mm = estimates(&s, "max_min").unwrap();
    assert_eq!(mm[0].value, 1.5);
    assert!(mm[0].hi.is_infinite());
}

#[test]
fn speedup_pairs_each_point_with_its_baseline_by_the_language_rule() {
    let plan = plan();
    let dir = results_dir(&plan); // written in shuffled order
    let r = load_results(dir.path()).unwrap();
    let s = pipeline::speedup(&r, "stock").unwrap();
    assert_eq!(s.height(), plan.points.len());
    let ids = str_values(&s, "point_id").unwrap();
    let sp = estimates(&s, "speedup").unwrap();
    let base = f64_values(&s, "baseline_point").unwrap();
    let pts = f64_values(&s, "point").unwrap();
    assert!(pts.windows(2).all(|w| w[0] < w[1]), "sorted after the join");
    for (i, id) in ids.iter().enumerate() {
        let p = plan.points.iter().find(|p| &p.id == id).unwrap();
        assert!(
            (sp[i].value - speedup_of(p)).abs() < 1e-9,
            "{id}: {}",
            sp[i].value
        );
        assert!(sp[i].lo <= sp[i].value && sp[i].value <= sp[i].hi);
        let b = &plan.points[base[i] as usize];
        assert_eq!(b.lock.name, "stock");
        // The threshold is cna's own parameter: stock runs at 10ms only and is the
        // baseline of every threshold.
        assert_eq!(b.threads, p.threads, "{id} matched {}", b.id);
    }
    let e = pipeline::speedup(&r, "stokc").unwrap_err().to_string();
    assert!(e.contains("stokc") && e.contains("stock"), "{e}");

    // Pairs given by the plan (a pinned baseline): cna at 4 threads over stock at 16.
    let (cna4, stock16) = (
        plan.points
            .iter()
            .find(|p| p.lock.name == "cna" && p.threads == 4)
            .unwrap(),
        plan.points
            .iter()
            .find(|p| p.lock.name == "stock" && p.threads == 16)
            .unwrap(),
    );
    let pair = pipeline::SpeedupPair {
        point: cna4.index as u32,
        baseline: stock16.index as u32,
    };
    let s = pipeline::speedup_of(&r, &[pair]).unwrap();
    assert_eq!(s.height(), 1);
    assert!((estimates(&s, "speedup").unwrap()[0].value - 2.0).abs() < 1e-9);
}

#[test]
fn without_its_own_parameter_a_lock_needs_its_baseline_at_the_same_values() {
    // Had cna not read the threshold, stock (run at 10ms only) would be the baseline
    // of cna at 10ms alone: the other thresholds have none and are left out.
    let mut plan = plan();
    for p in &mut plan.points {
        p.lock.params.clear();
    }
    let pairs = pipeline::baseline_pairs(&plan, "stock").unwrap();
    let thresholds: std::collections::BTreeSet<String> = pairs
        .iter()
        .map(|p| plan.points[p.point as usize].axes["threshold"].label())
        .collect();
    assert_eq!(thresholds.into_iter().collect::<Vec<_>>(), ["10ms"]);
    assert_eq!(pairs.len(), 4, "stock and cna at 10ms, at 4 and 16 threads");
}

#[test]
fn node_thread_and_handoff_tables() {
    let plan = plan();
    let dir = results_dir(&plan);
    let r = load_results(dir.path()).unwrap();
    let nodes = pipeline::node_summary(&r).unwrap();
    assert_eq!(nodes.height(), plan.points.len() * 2);
    let p99 = estimates(&nodes, "wait_p99_ns").unwrap();
    // Point 0 (4 threads): node 1 holds threads 2 and 3, p99 = max = 4000 + rep.
    assert_eq!(p99[1].value, 4002.0);
    let share = estimates(&nodes, "share").unwrap();
    assert!((share[0].value - 0.5).abs() < 1e-12);
    let threads = pipeline::thread_summary(&r).unwrap();
    assert_eq!(
        threads.height(),
        plan.points
            .iter()
            .map(|p| p.threads as usize)
            .sum::<usize>()
    );
    let h = pipeline::handoff_summary(&r).unwrap();
    assert_eq!(h.height(), plan.points.len() * 4);
    let max = estimates(&h, "wait_max_ns").unwrap();
    assert_eq!(max[1].value, 30_002.0);
    let cdfs = pipeline::wait_cdfs(&r).unwrap();
    assert_eq!(cdfs.len(), plan.points.len());
    assert_eq!(
        cdfs[0].quantiles_ns.len(),
        locklab_model::records::CDF_QUANTILES.len()
    );
}

#[test]
fn more_than_eight_repetitions_use_trimmed_order_statistics() {
    // Ten repetitions: the 95 % interval of the median drops one value at each end.
    let plan = plan();
    let dir = tempfile::tempdir().unwrap();
    let m = manifest(&plan);
    let mut w = locklab_analysis::ResultsWriter::create(dir.path(), &m).unwrap();
    for r in 0..10 {
        w.write(&record(&plan, 0, locklab_model::plan::Mode::Sim, r))
            .unwrap();
    }
    w.finish(&m).unwrap();
    let r = load_results(dir.path()).unwrap();
    let s = pipeline::point_summary(&r).unwrap();
    let e = estimates(&s, "throughput_ops_s").unwrap()[0];
    let p = &plan.points[0];
    assert_eq!(e.n, 10);
    assert!((e.lo - throughput(p, 1)).abs() < 1e-6, "{e:?}");
    assert!((e.hi - throughput(p, 8)).abs() < 1e-6, "{e:?}");
    assert!((e.value - (throughput(p, 4) + throughput(p, 5)) / 2.0).abs() < 1e-6);
    // The same holds for thread rows.
    let t = pipeline::thread_summary(&r).unwrap();
    let p99 = estimates(&t, "wait_p99_ns").unwrap()[0];
    assert_eq!((p99.lo, p99.hi), (1001.0, 1008.0));
    assert_eq!(
        str_values(&t, "lock").unwrap()[0],
        "stock",
        "identity attached"
    );
}

#[test]
fn a_native_run_says_which_placements_of_its_cpus_it_measured() {
    use locklab_analysis::ResultsWriter;
    use locklab_model::plan::Mode;
    use locklab_model::records::{PAIR_TRANSFER_AFTER, PAIR_TRANSFER_BEFORE};
    // (before, after) of each repetition, ns: one CCX, two CCDs, one that moved.
    let pairs = |point: u32, rep: u32| match (point + rep) % 5 {
        0..=2 => (21.0 + rep as f64, 22.0),
        3 => (118.0, 121.0),
        _ => (22.0, 117.0),
    };
    let write = |edit: &dyn Fn(&mut locklab_model::records::RunRecord)| {
        let plan = plan();
        let m = manifest(&plan);
        let dir = tempfile::tempdir().unwrap();
        let mut w = ResultsWriter::create(dir.path(), &m).unwrap();
        for mut r in all_records(&plan) {
            r.point.mode = Mode::Native;
            edit(&mut r);
            w.write(&r).unwrap();
        }
        w.finish(&m).unwrap();
        dir
    };
    let dir = write(&|r| {
        let (b, a) = pairs(r.point.point, r.point.rep);
        r.point.extra.insert(PAIR_TRANSFER_BEFORE.into(), b);
        r.point.extra.insert(PAIR_TRANSFER_AFTER.into(), a);
    });
    let r = load_results(dir.path()).unwrap();
    let points = plan().points.len();
    let n = points * REPS as usize;
    let p = pipeline::placements(&r).unwrap();
    let groups = &p.groups;
    assert_eq!(p.moved, n / 5, "{p:?}");
    assert_eq!((p.mixed_points, p.points), (points, points), "{p:?}");
    assert_eq!(groups.len(), 2, "{groups:?}");
    assert_eq!(groups[0].1, 3 * n / 5);
    assert!((21.0..=25.0).contains(&groups[0].0), "{groups:?}");
    assert_eq!(groups[1].1, n / 5);
    assert!((119.0..=120.0).contains(&groups[1].0), "{groups:?}");
    let note = pipeline::placement_note(&r).unwrap().unwrap();
    assert!(
        note.contains(&format!(
            "the repetitions of {points} of {points} points measured more than one placement (threads 0 and 1 were a transfer of {:.0} ns apart in {} repetitions, {:.0} ns in {}, {} moved during their window (flagged))",
            groups[0].0, 3 * n / 5, groups[1].0, n / 5, n / 5
        )),
        "{note}"
    );
    // One placement throughout, or no measurement: nothing to say.
    let calm = write(&|r| {
        r.point.extra.insert(PAIR_TRANSFER_BEFORE.into(), 22.0);
        r.point.extra.insert(PAIR_TRANSFER_AFTER.into(), 21.0);
    });
    let calm = load_results(calm.path()).unwrap();
    assert_eq!(pipeline::placement_note(&calm).unwrap(), None);
    // Points that differ by design (a sweep of the placement), each on one: nothing
    // moved.
    let swept = write(&|r| {
        let ns = if r.point.point % 2 == 0 { 22.0 } else { 120.0 };
        r.point.extra.insert(PAIR_TRANSFER_BEFORE.into(), ns);
        r.point.extra.insert(PAIR_TRANSFER_AFTER.into(), ns + 1.0);
    });
    let swept = load_results(swept.path()).unwrap();
    assert_eq!(pipeline::placements(&swept).unwrap().groups.len(), 2);
    assert_eq!(pipeline::placement_note(&swept).unwrap(), None);
    let old = write(&|_| {});
    let old = load_results(old.path()).unwrap();
    assert_eq!(
        pipeline::placements(&old).unwrap(),
        pipeline::Placements::default()
    );
}
