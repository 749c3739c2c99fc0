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
        "run_id",
        "experiment",
        "host",
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
    // Infinity survives the journal and Parquet; a value that does not apply (NaN
    // in the record) is null in the table.
    let mm = f64_values(&points, "max_min").unwrap();
    assert!(mm[0].is_infinite());
    let cwr = points.column("cpu_wall_ratio").unwrap();
    assert_eq!(cwr.null_count(), points.height());
    assert!(f64_values(&points, "schema_version")
        .unwrap()
        .iter()
        .all(|v| *v == f64::from(store::TABLES_SCHEMA_VERSION)));
    let run_id = r.manifest.run_id();
    for df in [&points, &collect(&r.threads), &collect(&r.handoffs)] {
        assert!(str_values(df, "run_id")
            .unwrap()
            .iter()
            .all(|v| *v == run_id));
        assert!(str_values(df, "experiment")
            .unwrap()
            .iter()
            .all(|v| *v == plan.experiment));
        assert!(str_values(df, "host")
            .unwrap()
            .iter()
            .all(|v| *v == r.manifest.host.hostname));
    }

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
    // One run: every row carries the merged run's id, and the host it ran on.
    let points = collect(&r.points);
    let ids = str_values(&points, "run_id").unwrap();
    assert!(ids.iter().all(|v| *v == r.manifest.run_id()), "{ids:?}");
    let mut ran_on = str_values(&points, "host").unwrap();
    ran_on.sort();
    ran_on.dedup();
    assert_eq!(ran_on, ["node1", "node2"]);

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
    let t = store::Tables::from_records(&manifest(&plan), &recs).unwrap();
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
    let bare = names(
        &store::Tables::from_records(&manifest(&plan), &records)
            .unwrap()
            .points,
    );
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
    let tables = store::Tables::from_records(&manifest(&plan), &records).unwrap();
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

/// Every column of every table is where `store::schema` says, with its type: the
/// description `docs/results.md` is generated from cannot drift from the files.
#[test]
fn tables_follow_the_documented_layout() {
    use locklab_analysis::store::schema::{layout, stored, Part, Stored};
    use locklab_model::metrics::{self, Table};
    let plan = plan();
    let records = all_records(&plan);
    let tables = store::Tables::from_records(&manifest(&plan), &records).unwrap();
    let axes: Vec<String> = store::axis_columns(&plan)
        .into_iter()
        .map(|a| a.column)
        .filter(|c| c != "threads" && c != "lock")
        .collect();
    let extra: Vec<String> = records[0].point.extra.keys().cloned().collect();
    let dtype = |d: &DataType| match d {
        DataType::UInt32 => "u32".to_string(),
        DataType::UInt64 => "u64".to_string(),
        DataType::Float64 => "f64".to_string(),
        DataType::String => "str".to_string(),
        DataType::Boolean => "bool".to_string(),
        DataType::List(inner) if **inner == DataType::Float64 => "list[f64]".to_string(),
        other => format!("{other:?}"),
    };
    for (table, df) in [
        (Table::Points, &tables.points),
        (Table::Threads, &tables.threads),
        (Table::Handoffs, &tables.handoffs),
    ] {
        let mut expected: Vec<(String, String)> = Vec::new();
        for part in layout(table) {
            match part {
                Part::Fixed(cols) => expected.extend(
                    cols.iter()
                        .map(|c| (c.name.to_string(), c.dtype.to_string())),
                ),
                Part::Axes => expected.extend(axes.iter().map(|a| (a.clone(), "f64".to_string()))),
                Part::Metrics => expected.extend(
                    metrics::in_table(table)
                        .map(|m| (m, stored(table, m.name)))
                        .filter(|(_, s)| *s != Stored::Extra)
                        .map(|(m, s)| (m.name.to_string(), s.dtype().to_string())),
                ),
                Part::Extra => {
                    // Every key of `extra` (a registry metric without a record field
                    // among them), sorted by name.
                    let mut names = extra.clone();
                    names.sort();
                    expected.extend(names.into_iter().map(|n| (n, "f64".to_string())));
                }
            }
        }
        let actual: Vec<(String, String)> = df
            .columns()
            .iter()
            .map(|c| (c.name().to_string(), dtype(c.dtype())))
            .collect();
        assert_eq!(actual, expected, "{} table", table.as_str());
    }
}

/// Null, never NaN: no float column and no `wait_cdf_ns` element holds NaN, and a
/// metric that does not apply is null.
#[test]
fn values_that_do_not_apply_are_null_not_nan() {
    let plan = plan();
    let dir = results_dir(&plan);
    let r = load_results(dir.path()).unwrap();
    for lf in [&r.points, &r.threads, &r.handoffs] {
        let df = collect(lf);
        for c in df.columns() {
            let s = c.as_materialized_series();
            let values = match s.dtype() {
                DataType::Float64 => s.clone(),
                DataType::List(_) => s
                    .explode(ExplodeOptions {
                        empty_as_null: true,
                        keep_nulls: true,
                    })
                    .unwrap(),
                _ => continue,
            };
            let nan = values.is_nan().unwrap().sum().unwrap_or(0);
            assert_eq!(nan, 0, "{} holds NaN", c.name());
        }
    }
    let points = collect(&r.points);
    assert!(points.column("cpu_wall_ratio").unwrap().null_count() > 0);
}

/// The metadata of each file: layout version, table, every column's unit (from the
/// registry for metrics) and the CDF's quantiles.
#[test]
fn files_carry_their_version_and_units() {
    let plan = plan();
    let dir = results_dir(&plan);
    let file = std::fs::File::open(dir.path().join(store::POINTS_FILE)).unwrap();
    let mut reader = ParquetReader::new(file);
    let meta = reader.get_metadata().unwrap().clone();
    let kv: std::collections::BTreeMap<String, String> = meta
        .key_value_metadata()
        .clone()
        .unwrap_or_default()
        .into_iter()
        .map(|k| (k.key, k.value.unwrap_or_default()))
        .collect();
    assert_eq!(
        kv["locklab_schema_version"],
        store::TABLES_SCHEMA_VERSION.to_string()
    );
    assert_eq!(kv["locklab_table"], "points");
    let units: serde_json::Value = serde_json::from_str(&kv["locklab_units"]).unwrap();
    assert_eq!(units["wait_p99_ns"], "ns");
    assert_eq!(units["throughput_ops_s"], "ops/s");
    assert_eq!(units["threshold_ns"], "ns");
    assert_eq!(units["wait_cdf_ns"], "ns");
    assert!(units.get("point_id").is_none());
    let q: Vec<f64> = serde_json::from_str(&kv["locklab_wait_cdf_quantiles"]).unwrap();
    assert_eq!(q, locklab_model::records::CDF_QUANTILES);
}

/// Files of layout 1 (NaN for values that do not apply, no run columns) still load,
/// read as layout 2.
#[test]
fn layout_1_files_load_as_layout_2() {
    let plan = plan();
    let dir = results_dir(&plan);
    for (file, table) in [
        (store::POINTS_FILE, locklab_model::metrics::Table::Points),
        (store::THREADS_FILE, locklab_model::metrics::Table::Threads),
        (
            store::HANDOFFS_FILE,
            locklab_model::metrics::Table::Handoffs,
        ),
    ] {
        let path = dir.path().join(file);
        let df = LazyFrame::scan_parquet(
            PlRefPath::new(path.to_str().unwrap()),
            ScanArgsParquet::default(),
        )
        .unwrap()
        .collect()
        .unwrap();
        let floats: Vec<Expr> = df
            .columns()
            .iter()
            .filter(|c| c.dtype() == &DataType::Float64)
            .map(|c| col(c.name().clone()).fill_null(lit(f64::NAN)))
            .collect();
        let mut old = df
            .lazy()
            .with_columns(floats)
            .drop(cols(["run_id", "experiment", "host"]))
            .collect()
            .unwrap();
        store::write_parquet(&path, table, &mut old).unwrap();
    }
    let r = load_results(dir.path()).unwrap();
    let points = collect(&r.points);
    assert!(str_values(&points, "run_id")
        .unwrap()
        .iter()
        .all(|v| *v == r.manifest.run_id()));
    assert_eq!(
        points.column("cpu_wall_ratio").unwrap().null_count(),
        points.height()
    );
    // The analysis reads them as before.
    let summary = locklab_analysis::pipeline::point_summary(&r).unwrap();
    assert_eq!(summary.height(), plan.points.len());
}

/// A run's id tells runs apart by their nonce too (two started in one microsecond),
/// and a manifest written before the nonce (empty) keeps the id it had.
#[test]
fn a_run_id_includes_the_nonce_and_an_old_manifest_keeps_its_id() {
    let plan = plan();
    let mut m = manifest(&plan);
    let old = m.run_id();
    assert_eq!(old, "20260101-000000-781850ec");
    m.nonce = "0123456789abcdef".into();
    let a = m.run_id();
    m.nonce = "fedcba9876543210".into();
    let b = m.run_id();
    assert!(a != old && b != old && a != b, "{old} {a} {b}");
    assert!(a.starts_with("20260101-000000-"), "{a}");
}
