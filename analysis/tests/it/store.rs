use crate::common::*;
use locklab_analysis::pipeline::{f64_values, str_values};
use locklab_analysis::store::{self, ResultsWriter, ShardProblem};
use locklab_analysis::{load_results, merge};
use locklab_model::plan::{Mode, Plan};
use polars::prelude::*;

fn collect(lf: &LazyFrame) -> DataFrame {
    lf.clone().collect().unwrap()
}

#[test]
fn round_trip_keeps_every_column_and_row() {
    let plan = plan();
    let dir = results_dir(&plan);
    for f in [
        "manifest.yaml",
        "points.parquet",
        "threads.parquet",
        "handoffs.parquet",
    ] {
        assert!(dir.path().join(f).exists(), "{f} missing");
    }
    let r = load_results(dir.path()).unwrap();
    assert_eq!(r.manifest.status, "complete");
    assert!(r.manifest.finished_utc.is_some());
    let points = collect(&r.points);
    assert_eq!(points.height(), plan.points.len() * REPS as usize);
    for c in [
        "schema_version",
        "point",
        "point_id",
        "mode",
        "rep",
        "lock",
        "threshold_ns",
        "threads",
        "throughput_ops_s",
        "wait_p99_ns",
        "fairness_factor",
        "migrations_per_wakeup",
        "wait_cdf_ns",
        "skipped",
        "waits_censored",
        "reacquisitions",
        "wait_max_censored",
        "bypass_max_censored",
    ] {
        assert!(points.column(c).is_ok(), "points lacks {c}");
    }
    assert_eq!(
        points.column("threshold_ns").unwrap().dtype(),
        &DataType::Float64
    );
    assert_eq!(points.column("lock").unwrap().dtype(), &DataType::String);
    assert!(matches!(
        points.column("wait_cdf_ns").unwrap().dtype(),
        DataType::List(_)
    ));
    // Rows are sorted by (point, mode, rep) whatever the write order.
    let p = f64_values(&points, "point").unwrap();
    assert!(p.windows(2).all(|w| w[0] <= w[1]));
    let thr = f64_values(&points, "threshold_ns").unwrap();
    assert_eq!(thr[0], 10e6);
    // NaN and infinity survive the journal and Parquet.
    let mm = f64_values(&points, "max_min").unwrap();
    assert!(mm[0].is_infinite());
    assert!(f64_values(&points, "cpu_wall_ratio").unwrap()[0].is_nan());
    assert!(f64_values(&points, "schema_version")
        .unwrap()
        .iter()
        .all(|v| *v == locklab_analysis::store::RESULTS_SCHEMA_VERSION as f64));

    let threads = collect(&r.threads);
    let expected: u32 = plan.points.iter().map(|p| p.threads).sum::<u32>() * REPS;
    assert_eq!(threads.height(), expected as usize);
    for c in [
        "threshold_ns",
        "lock",
        "thread",
        "cpu",
        "node",
        "class",
        "wait_p99_ns",
        "share",
        "waits_censored",
        "wait_max_censored",
    ] {
        assert!(threads.column(c).is_ok(), "threads lacks {c}");
    }
    let handoffs = collect(&r.handoffs);
    assert_eq!(handoffs.height(), plan.points.len() * REPS as usize * 4);
    let remote = str_values(&handoffs, "cross_node").unwrap();
    assert_eq!(remote[..4], ["false", "true", "true", "false"]);
}

#[test]
fn resume_keeps_finished_records() {
    let plan = plan();
    let m = manifest(&plan);
    let dir = tempfile::tempdir().unwrap();
    let recs = all_records(&plan);
    let (first, rest) = recs.split_at(7);
    {
        let mut w = ResultsWriter::create(dir.path(), &m).unwrap();
        for r in first {
            w.write(r).unwrap();
        }
        // Dropped without finish: an interrupted run.
    }
    // A write cut short leaves a temporary file, which resume ignores.
    std::fs::write(dir.path().join("parts/.p000009-sim-r0000.yaml.tmp"), "half").unwrap();
    // An interrupted run can still be loaded from its journal.
    let partial = load_results(dir.path()).unwrap();
    assert_eq!(collect(&partial.points).height(), 7);

    assert!(
        ResultsWriter::create(dir.path(), &m).is_err(),
        "create must refuse a started run"
    );
    let (mut w, m2, done) = ResultsWriter::resume(dir.path()).unwrap();
    assert_eq!(m2, m);
    assert_eq!(done.len(), 7);
    assert!(done.contains(&(0, Mode::Sim, 0)));
    for r in rest {
        if !done.contains(&(r.point.point, r.point.mode, r.point.rep)) {
            w.write(r).unwrap();
        }
    }
    w.finish(&m2).unwrap();
    let r = load_results(dir.path()).unwrap();
    assert_eq!(collect(&r.points).height(), recs.len());
    assert!(!dir
        .path()
        .join("parts/.p000009-sim-r0000.yaml.tmp")
        .exists());
}

#[test]
fn merge_joins_the_shards_of_a_run_and_refuses_any_other_set() {
    let plan = plan();
    let recs = all_records(&plan);
    let mk = |part: &[locklab_model::records::RunRecord], shard: u32, plan: &Plan| {
        let d = tempfile::tempdir().unwrap();
        let mut m = manifest(plan);
        m.shard = Some((shard, 2));
        m.host.hostname = format!("node{shard}");
        let mut w = ResultsWriter::create(d.path(), &m).unwrap();
        for r in part {
            w.write(r).unwrap();
        }
        w.finish(&m).unwrap();
        d
    };
    let (a, b) = recs.split_at(recs.len() / 2);
    let (da, db) = (mk(a, 1, &plan), mk(b, 2, &plan));
    let out = tempfile::tempdir().unwrap();
    let n = merge(
        &[db.path().to_path_buf(), da.path().to_path_buf()],
        &out.path().join("m"),
    )
    .unwrap();
    assert_eq!(n, recs.len());
    let r = load_results(&out.path().join("m")).unwrap();
    assert_eq!(collect(&r.points).height(), recs.len());
    assert_eq!(r.manifest.shard, None);
    // Complete only once its claims and report are written (by the caller).
    assert_eq!(r.manifest.status, "running");
    let hosts: Vec<(u32, &str)> = r
        .manifest
        .shards
        .iter()
        .map(|s| (s.index, s.hostname.as_str()))
        .collect();
    assert_eq!(hosts, [(1, "node1"), (2, "node2")]);

    let err = |dirs: &[&tempfile::TempDir]| {
        let dirs: Vec<_> = dirs.iter().map(|d| d.path().to_path_buf()).collect();
        let problem = store::check_shards(&dirs).unwrap().unwrap_err();
        let merged = merge(&dirs, &out.path().join("x")).unwrap_err().to_string();
        assert_eq!(merged, problem.to_string());
        problem
    };
    let missing = err(&[&da]);
    assert!(
        matches!(&missing, ShardProblem::Incomplete(m) if m.contains("shard 2 of 2 is missing")),
        "{missing:?}"
    );
    let twice = err(&[&da, &mk(b, 1, &plan)]);
    assert!(
        matches!(&twice, ShardProblem::Mixed(m) if m.contains("shard 1/2 is given twice")),
        "{twice:?}"
    );
    let mut other = plan.clone();
    other.run.duration_ns *= 2;
    let mixed = err(&[&da, &mk(b, 2, &other)]);
    assert!(
        matches!(&mixed, ShardProblem::Mixed(m) if m.contains("another plan")),
        "{mixed:?}"
    );
    // Shards that overlap in records (not made by --shard) are refused too.
    let e = merge(
        &[
            da.path().to_path_buf(),
            mk(&recs[..3], 2, &plan).path().to_path_buf(),
        ],
        &out.path().join("y"),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("in both"), "{e}");
}

#[test]
fn axis_columns_carry_unit_suffixes() {
    let cols = store::axis_columns(&plan());
    let names: Vec<&str> = cols.iter().map(|c| c.column.as_str()).collect();
    assert_eq!(names, ["lock", "threshold_ns", "threads"]);
    assert!(!cols[0].numeric && cols[1].numeric);
}

#[test]
fn an_axis_named_like_a_record_field_takes_the_column() {
    // `workload = [lock2]` names a workload definition; the record's field is its kind.
    let mut plan = plan();
    plan.axes.push(locklab_model::plan::Axis {
        name: "workload".into(),
        values: vec![s("lock2")],
        zip_group: None,
    });
    for p in &mut plan.points {
        p.axes.insert("workload".into(), s("lock2"));
    }
    let recs = all_records(&plan);
    let t = store::Tables::from_records(&plan, &recs).unwrap();
    assert_eq!(str_values(&t.points, "workload").unwrap()[0], "lock2");
    assert_eq!(
        str_values(&t.points, "workload_record").unwrap()[0],
        "single"
    );
    assert_eq!(str_values(&t.threads, "workload").unwrap()[0], "lock2");
    // Identity columns are never displaced: `lock` and `threads` stay the record's.
    assert_eq!(
        t.points.column("threads").unwrap().dtype(),
        &DataType::UInt32
    );
    assert!(t.points.column("lock_record").is_err());
}

/// The metric columns of each table are exactly the registry's metrics of that table,
/// in registry order; every other column is the row's identity, a result dimension,
/// an axis or (points) a key of the record's `extra` map.
#[test]
fn metric_columns_are_the_registry_metrics_of_each_table() {
    use locklab_model::metrics::{self, Table};
    let plan = plan();
    let mut records = all_records(&plan);
    for r in &mut records {
        r.point.extra.clear();
    }
    let names = |df: &DataFrame| -> Vec<String> {
        df.get_column_names()
            .iter()
            .map(|c| c.to_string())
            .collect()
    };
    let bare = names(&store::Tables::from_records(&plan, &records).unwrap().points);
    // A points metric that no record field holds is read from `extra`; only a
    // workload-specific metric may be.
    let from_extra: Vec<&str> = metrics::in_table(Table::Points)
        .filter(|m| !bare.iter().any(|c| c == m.name))
        .map(|m| {
            assert!(m.optional, "{} has no column", m.name);
            m.name
        })
        .collect();
    for r in &mut records {
        for n in &from_extra {
            r.point.extra.insert(n.to_string(), 1.0);
        }
    }
    let tables = store::Tables::from_records(&plan, &records).unwrap();
    let axes: Vec<String> = store::axis_columns(&plan)
        .into_iter()
        .map(|a| a.column)
        .collect();
    let not_metrics: Vec<&str> = store::POINT_RECORD_COLUMNS
        .iter()
        .chain(locklab_model::plan::ROW_DIMENSIONS)
        .chain(&["distance"])
        .copied()
        .collect();
    for (table, df) in [
        (Table::Points, &tables.points),
        (Table::Threads, &tables.threads),
        (Table::Handoffs, &tables.handoffs),
    ] {
        let columns: Vec<String> = names(df)
            .into_iter()
            .filter(|c| !not_metrics.contains(&c.as_str()) && !axes.contains(c))
            .collect();
        let mut expected: Vec<&str> = metrics::in_table(table).map(|m| m.name).collect();
        if table == Table::Points {
            // The `extra` keys follow the record's columns, sorted by name.
            expected.retain(|n| !from_extra.contains(n));
            let mut extra = from_extra.clone();
            extra.sort_unstable();
            expected.extend(extra);
        }
        assert_eq!(columns, expected, "{} table", table.as_str());
    }
}
