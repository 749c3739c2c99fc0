//! Snapshots of rendered diagnostics and of a small plan (`tests/it/snapshots/`).

use crate::load_mem;
use locklab_dsl::{load, print_plan_table, render, LoadOptions, MemLoader};

fn rendered(files: &[(&str, &str)], main: &str) -> String {
    let c = load_mem(files, main);
    render(&c.diagnostics, &c.sources, false)
}

#[test]
fn typo_in_a_lock_algorithm() {
    insta::assert_snapshot!(rendered(
        &[(
            "locks.lab",
            "# Locks for the hot-lock experiments.\nlock fast = mcsx\nlock fair = ticket\n",
        )],
        "locks.lab"
    ));
}

#[test]
fn a_size_where_a_duration_belongs_and_a_syntax_error() {
    insta::assert_snapshot!(rendered(
        &[(
            "hot.lab",
            "workload hot = single {\n  critical = 10KiB\n  outside  = 200ns\n}\n\nlock l = cna { threshold 1ms variant = }\n",
        )],
        "hot.lab"
    ));
}

#[test]
fn claims_that_cannot_be_evaluated() {
    insta::assert_snapshot!(rendered(
        &[(
            "e.lab",
            r#"topology t { sockets = 1, cores = 2, transfer { llc = 40ns } }
workload w = single { critical = 100ns }
experiment e {
  topology = t
  workload = w
  sweep { lock = [ticket, mcs], threads = 1..2 }
  run { modes = [sim], duration = 10ms }
  expect speedup[lock = mcs, threads = 2] over tiket in 0.9..1.1
  expect bypass_max[lock = ticket] <= 1
  expect throughput_ops_s[lock = mcs, threads = 3] > 0
}
"#,
        )],
        "e.lab"
    ));
}

#[test]
fn include_cycle_across_files() {
    insta::assert_snapshot!(rendered(
        &[
            ("lib/a.lab", "use \"b.lab\"\n"),
            ("lib/b.lab", "# b uses a, which uses b.\nuse \"a.lab\"\n"),
            ("main.lab", "use \"lib/a.lab\"\n"),
        ],
        "main.lab"
    ));
}

const SMALL: &str = r#"topology laptop { sockets = 1, cores = 2, transfer { llc = 40ns } }
lock cna = cna { threshold = $threshold, variant = v14 }
workload hot = single { critical = 200ns, lines = 2, outside = exp(400ns) }
placement two_nodes = compact { nodes = [0, 1] }
experiment small {
  description "a small plan"
  topology  = laptop
  seed      = 7
  workload  = hot
  placement = two_nodes
  sweep {
    lock      = [mcs, cna]
    threshold = [100us, 1ms]
    threads   = 1..2
    where lock == cna || threshold == 100us
  }
  run {
    modes = [sim, native]
    duration = 100ms
    native { threads = [1] }
  }
  expect bypass_max[mode = sim, lock = mcs, threshold = 100us, threads = 2] <= 1
    source "FIFO"
  report speedup[mode = sim, lock = cna, threshold = 100us, threads = 2] over mcs in 0.9..
  expect [mode = sim, threshold = 100us, threads = 2] {
    throughput_ops_s[lock = mcs] < throughput_ops_s[lock = cna] gap 2%
  }
  expect wait_p99_ns[mode = sim, lock = cna, threads = 2] decreasing over threshold rho >= 0.5
  plot throughput_ops_s[mode = sim] vs threads by lock, threshold log y
}
"#;

#[test]
fn small_plan() {
    let loader = MemLoader([("small.lab".to_string(), SMALL.to_string())].into());
    let c = load("small.lab", &loader, &LoadOptions::default());
    assert!(
        c.diagnostics.is_empty(),
        "{}",
        render(&c.diagnostics, &c.sources, false)
    );
    let plan = c.plan.unwrap();
    insta::assert_snapshot!("small_plan_table", print_plan_table(&plan));
    insta::assert_snapshot!(
        "small_plan_json",
        serde_json::to_string_pretty(&plan).unwrap()
    );
    // The plan survives a JSON round trip (open band bounds included).
    let back: locklab_model::plan::Plan =
        serde_json::from_str(&serde_json::to_string(&plan).unwrap()).unwrap();
    assert_eq!(back, plan);
}

#[test]
fn set_overrides_an_axis() {
    let loader = MemLoader([("small.lab".to_string(), SMALL.to_string())].into());
    let opts = LoadOptions {
        overrides: vec![("threshold".into(), "10ms, 20ms".into())],
        ..Default::default()
    };
    let c = load("small.lab", &loader, &opts);
    // The claims that read 100us, no longer swept, are skipped with the reason, and
    // so is the trend over the thresholds as written (100us and 1ms).
    let plan = c.plan.expect("narrowed plan");
    let skipped: Vec<(&str, &str)> = plan
        .claims
        .iter()
        .filter_map(|c| Some((c.id.as_str(), c.skipped.as_deref()?)))
        .collect();
    let why = "`--set threshold=10ms, 20ms` leaves out `threshold = 100us`";
    let trend = "`--set threshold=10ms, 20ms` leaves out `threshold = 100us`, `threshold = 1ms`";
    assert_eq!(
        skipped,
        [("c1", why), ("c2", why), ("c3", why), ("c4", trend)]
    );
    let opts = LoadOptions {
        overrides: vec![("threads".into(), "2".into())],
        ..Default::default()
    };
    let c = load("small.lab", &loader, &opts);
    assert!(
        !c.has_errors(),
        "{}",
        render(&c.diagnostics, &c.sources, false)
    );
    let plan = c.plan.unwrap();
    assert!(plan.points.iter().all(|p| p.threads == 2));
    let opts = LoadOptions {
        overrides: vec![
            ("thread".into(), "2".into()),
            ("threads".into(), "1ms".into()),
        ],
        ..Default::default()
    };
    let c = load("small.lab", &loader, &opts);
    insta::assert_snapshot!("set_errors", render(&c.diagnostics, &c.sources, false));
}
