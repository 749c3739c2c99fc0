//! Resolved references: every metric reference of a claim or plot names the point,
//! baseline, rows and modes it reads, and they agree with `locklab_model::select`
//! applied to the plan alone.

use crate::{load_mem, show};
use locklab_dsl::{load, FsLoader, LoadOptions};
use locklab_model::plan::{
    ClaimKind, Expr, MetricRef, Mode, Plan, Target, TrendSeries, Value, ROW_DIMENSIONS,
};
use locklab_model::select::{self, BaselineQuery};
use std::path::Path;

fn experiment(name: &str) -> Plan {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../experiments")
        .join(name);
    let c = load(
        &path.to_string_lossy(),
        &FsLoader::for_experiment(&path, &[]),
        &LoadOptions::default(),
    );
    c.plan
        .clone()
        .unwrap_or_else(|| panic!("{name}:\n{}", show(&c)))
}

fn plan_of(text: &str) -> Plan {
    let c = load_mem(&[("e.lab", text)], "e.lab");
    c.plan.clone().unwrap_or_else(|| panic!("{}", show(&c)))
}

/// Every reference of the plan's claims (trend steps included), in order.
fn refs(plan: &Plan) -> Vec<&MetricRef> {
    let mut out = Vec::new();
    for c in &plan.claims {
        match &c.kind {
            ClaimKind::Band { expr, .. } => out.extend(expr.metrics()),
            ClaimKind::Ordering { exprs, .. } => out.extend(exprs.iter().flat_map(Expr::metrics)),
            ClaimKind::Trend { series, .. } => match series {
                TrendSeries::Steps { steps } => out.extend(steps.iter().map(|s| &s.metric)),
                TrendSeries::Rows { .. } => {}
            },
        }
    }
    out
}

/// The target is what the selection and the baseline rule give, from the plan.
fn check_target(plan: &Plan, m: &MetricRef, t: &Target, what: &str) {
    let p = &plan.points[t.point as usize];
    assert!(
        select::matches(p, &m.select),
        "{what}: {} vs {:?}",
        p.id,
        m.select
    );
    let rows: Vec<_> = m
        .select
        .iter()
        .filter(|(k, _)| ROW_DIMENSIONS.contains(&k.as_str()))
        .cloned()
        .collect();
    assert!(
        rows.iter().all(|r| t.rows.contains(r)),
        "{what}: rows {:?}",
        t.rows
    );
    assert!(!t.modes.is_empty(), "{what}: no mode");
    assert!(t.modes.iter().all(|md| p.modes.contains(md)), "{what}");
    match &m.baseline {
        None => assert_eq!(t.baseline, None, "{what}"),
        Some(lock) => {
            let q = BaselineQuery {
                lock,
                pinned: &m.baseline_select,
            };
            let b = select::baseline(&plan.axes, &plan.points, p, &q).unwrap();
            assert_eq!(t.baseline, Some(b as u32), "{what}");
            assert!(t.modes.iter().all(|md| plan.points[b].modes.contains(md)));
        }
    }
}

#[test]
fn every_shipped_reference_agrees_with_the_selection_rules() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../experiments");
    let mut checked = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        if !name.ends_with(".lab") {
            continue;
        }
        let plan = experiment(&name);
        for m in refs(&plan) {
            check_target(&plan, m, &m.target, &name);
            checked += 1;
        }
        for c in &plan.claims {
            assert!(!c.modes.is_empty(), "{name}: claim {} has no mode", c.id);
        }
        for pl in &plan.plots {
            assert!(!pl.targets.is_empty(), "{name}: plot {:?}", pl.title);
            let m = MetricRef {
                metric: pl.metric.clone(),
                select: pl.select.clone(),
                baseline: pl.baseline.clone(),
                baseline_select: Vec::new(),
                target: Target::default(),
            };
            for t in &pl.targets {
                check_target(&plan, &m, t, &name);
                checked += 1;
            }
        }
    }
    assert!(checked > 100, "only {checked} targets");
}

const TAS_AT_FOUR: &str = r#"topology tiny { sockets = 1, cores = 4, transfer { llc = 40ns } }
workload hot = single { critical = 100ns, outside = 200ns }
experiment demo {
  topology = tiny
  workload = hot
  sweep {
    lock = [tas, ticket]
    threads = [1, 4]
    where lock != tas || threads == 4
  }
  run { modes = [sim], duration = 10ms }
  expect speedup[lock = ticket, threads = 1] over tas[threads = 4] in 0.5..2
  expect speedup[lock = ticket, threads = 4] over tas in 0.5..2
}
"#;

#[test]
fn a_pinned_baseline_is_the_point_it_names() {
    let plan = plan_of(TAS_AT_FOUR);
    let id = |t: u32| plan.points[t as usize].id.as_str();
    let ts: Vec<&MetricRef> = refs(&plan);
    assert_eq!(id(ts[0].target.point), "lock=ticket,threads=1");
    assert_eq!(id(ts[0].target.baseline.unwrap()), "lock=tas,threads=4");
    assert_eq!(ts[0].baseline_select, [("threads".into(), Value::Int(4))]);
    assert_eq!(ts[0].target.modes, [Mode::Sim]);
    // Unpinned, the baseline agrees with the point on every axis but the lock.
    assert_eq!(id(ts[1].target.point), "lock=ticket,threads=4");
    assert_eq!(id(ts[1].target.baseline.unwrap()), "lock=tas,threads=4");
}

#[test]
fn a_stock_lock_run_at_one_threshold_serves_cna_at_every_threshold() {
    let plan = experiment("cna_threshold.lab");
    let plot = plan
        .plots
        .iter()
        .find(|p| p.metric == "speedup")
        .expect("a speedup plot");
    assert!(plot.targets.len() >= 30, "{}", plot.targets.len());
    for t in &plot.targets {
        let p = &plan.points[t.point as usize];
        let b = &plan.points[t.baseline.unwrap() as usize];
        assert_eq!(p.lock.name, "cna15");
        assert_eq!(p.lock.params, ["threshold"]);
        assert_eq!(b.lock.name, "stock");
        assert_eq!(b.axes["threshold"], Value::Duration(10_000_000), "{}", p.id);
        for axis in ["workload", "threads", "placement"] {
            assert_eq!(b.axes[axis], p.axes[axis], "{} vs {}", p.id, b.id);
        }
        assert_eq!(t.modes, [Mode::Sim]);
    }
}

#[test]
fn a_trend_holds_one_reference_per_value_in_order() {
    let plan = experiment("cna_threshold.lab");
    let (metric, steps) = plan
        .claims
        .iter()
        .find_map(|c| match &c.kind {
            ClaimKind::Trend {
                metric,
                series: TrendSeries::Steps { steps },
                ..
            } => Some((metric, steps)),
            _ => None,
        })
        .expect("a trend over threshold");
    assert!(metric.target.is_unresolved());
    let values: Vec<String> = steps.iter().map(|s| s.value.label()).collect();
    assert_eq!(values, ["100us", "1ms", "10ms"]);
    for s in steps {
        let p = &plan.points[s.metric.target.point as usize];
        assert_eq!(p.axes["threshold"], s.value);
        assert_eq!(p.axes["threads"], Value::Int(142));
        assert_eq!(
            s.metric.select.last(),
            Some(&("threshold".into(), s.value.clone()))
        );
        let b = &plan.points[s.metric.target.baseline.unwrap() as usize];
        assert_eq!(
            b.id,
            "workload=lock2,lock=stock,threshold=10ms,threads=142,placement=will_it_scale"
        );
    }
}

#[test]
fn a_trend_over_a_dimension_reads_the_rows_of_one_point() {
    let plan = experiment("double_lock_balance.lab");
    let rows: Vec<&Target> = plan
        .claims
        .iter()
        .filter_map(|c| match &c.kind {
            ClaimKind::Trend {
                series: TrendSeries::Rows { target },
                axis,
                ..
            } if axis == "cpu" => Some(target),
            _ => None,
        })
        .collect();
    assert!(!rows.is_empty());
    for t in rows {
        assert_eq!(
            plan.points[t.point as usize].axes["policy"],
            Value::Str("ordered".into())
        );
    }
}

#[test]
fn claims_are_evaluated_in_the_modes_all_their_terms_run_in() {
    let plan = plan_of(
        r#"topology tiny { sockets = 1, cores = 4, transfer { llc = 40ns } }
workload hot = single { critical = 100ns, outside = 200ns }
experiment demo {
  topology = tiny
  workload = hot
  sweep { lock = [ticket, mcs], threads = [1, 2] }
  run { modes = [sim, native], duration = 10ms, native { threads = [1] } }
  expect throughput_ops_s[lock = mcs, threads = 1] > 0
  expect throughput_ops_s[lock = mcs, threads = 1] < throughput_ops_s[lock = ticket, threads = 2]
  expect throughput_ops_s[mode = native, lock = mcs, threads = 1] < throughput_ops_s[mode = sim, lock = ticket, threads = 2]
  expect throughput_ops_s[mode = native, lock = mcs, threads = 1] < throughput_ops_s[lock = ticket, threads = 1]
  expect throughput_ops_s[lock = mcs] increasing over threads
}
"#,
    );
    let modes: Vec<&[Mode]> = plan.claims.iter().map(|c| c.modes.as_slice()).collect();
    assert_eq!(
        modes,
        [
            &[Mode::Sim, Mode::Native][..],
            &[Mode::Sim],
            &[Mode::Native],
            &[Mode::Sim, Mode::Native],
            // Natively the trend has one value: it is evaluated in simulation only.
            &[Mode::Sim],
        ]
    );
}

/// `1s / throughput_ops_s[...]` is the time per operation in ns, as the docs say:
/// the plan divides 10⁹ (one second in ns, however it is spelt) by the rate, so a
/// rate of 5 M operations a second reads 200 (ns), and the shipped break costs
/// compare that with bands in ns.
#[test]
fn the_time_per_operation_is_in_nanoseconds() {
    use locklab_model::plan::BinOp;
    /// The expression's value with every metric read as `rate`.
    fn at(e: &Expr, rate: f64) -> f64 {
        match e {
            Expr::Metric(m) => {
                assert_eq!(m.metric, "throughput_ops_s");
                rate
            }
            Expr::Const { value } => *value,
            Expr::Binary { op, lhs, rhs } => {
                let (a, b) = (at(lhs, rate), at(rhs, rate));
                match op {
                    BinOp::Add => a + b,
                    BinOp::Sub => a - b,
                    BinOp::Mul => a * b,
                    BinOp::Div => a / b,
                }
            }
        }
    }
    let band = |c: &locklab_model::plan::Claim| match &c.kind {
        ClaimKind::Band { expr, lo, hi, .. } => (expr.clone(), *lo, *hi),
        k => panic!("{}: {k:?}", c.id),
    };
    let plan = plan_of(
        r#"topology tiny { sockets = 1, cores = 4, transfer { llc = 40ns } }
workload hot = single { critical = 100ns, outside = 200ns }
experiment demo {
  topology = tiny
  workload = hot
  sweep { lock = [tas, mcs], threads = 1..2 }
  run { modes = [sim], duration = 10ms }
  expect 1s / throughput_ops_s[lock = mcs, threads = 2] in 100ns..300ns
  expect 1000ms / throughput_ops_s[lock = mcs, threads = 2] < 1us
  expect 2 * (1s / throughput_ops_s[lock = mcs, threads = 2]) < 1us
}
"#,
    );
    let values: Vec<f64> = plan.claims.iter().map(|c| at(&band(c).0, 5e6)).collect();
    assert_eq!(values, [200.0, 200.0, 400.0]);
    assert_eq!(
        (band(&plan.claims[0]).1, band(&plan.claims[0]).2),
        (100.0, 300.0)
    );
    assert_eq!(band(&plan.claims[1]).2, 1000.0);

    // The shipped break costs: 1s / rate − 1s / rate, in ns, against 697 ns ± 25 %.
    let plan = experiment("zone_lock_break.lab");
    let c = plan
        .claims
        .iter()
        .find(|c| c.id == "break_cost_tas_e2e")
        .expect("break_cost_tas_e2e");
    let (e, lo, hi) = band(c);
    assert_eq!(at(&e, 1e6), 0.0);
    assert!((lo - 697.0 * 0.75).abs() < 1e-9 && (hi - 697.0 * 1.25).abs() < 1e-9);
    let Expr::Binary { lhs, .. } = &e else {
        panic!("{e:?}")
    };
    assert_eq!(
        at(lhs, 1e6),
        1_000.0,
        "1 M operations a second: 1000 ns each"
    );
}

/// A CPU or node no simulated thread runs on is an error only where the rows read are
/// all simulated ones on a described machine: a native row may come from any CPU of
/// the host, and `host`'s CPUs are known only when it runs.
#[test]
fn a_cpu_selector_is_judged_before_the_run_only_where_every_row_is_simulated() {
    let text = |topology: &str, modes: &str, selector: &str| {
        format!(
            "topology two {{ sockets = 2, cores = 2, transfer {{ llc = 40ns, socket = 100ns }} }}\n\
             workload hot = single {{ critical = 100ns, outside = 200ns }}\n\
             experiment e {{\n  topology = {topology}\n  workload = hot\n  \
             sweep {{ lock = [tas], threads = [2] }}\n  run {{ modes = [{modes}], duration = 10ms }}\n  \
             expect wait_p99_ns[{selector}] < 1ms\n}}\n"
        )
    };
    let errors = |t: &str| {
        let c = load_mem(&[("e.lab", t)], "e.lab");
        c.diagnostics
            .iter()
            .filter(|d| d.message.contains("selects none"))
            .count()
    };
    assert_eq!(errors(&text("two", "sim", "cpu = 3")), 1);
    assert_eq!(errors(&text("two", "sim", "node = 1")), 1);
    assert_eq!(errors(&text("two", "sim", "cpu = 1, node = 0")), 0);
    // Native rows too: any CPU of the host may hold a thread.
    assert_eq!(errors(&text("two", "sim, native", "cpu = 3")), 0);
    // Only the native rows read: the same.
    assert_eq!(
        errors(&text("two", "sim, native", "mode = native, cpu = 3")),
        0
    );
    // Simulated on the host: its CPUs are known when it runs.
    assert_eq!(errors(&text("host", "sim", "cpu = 3")), 0);
}
