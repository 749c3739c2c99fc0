//! `--set` narrowing a sweep: what it leaves out of the claims and plots is skipped
//! with the reason, what the file gets wrong is still an error, and a mode it leaves
//! empty runs nothing.

use crate::show;
use locklab_dsl::{load, Checked, LoadOptions, MemLoader};

const FILE: &str = r#"topology t { sockets = 1, cores = 4, transfer { llc = 40ns } }
workload w = single { critical = $critical, outside = $outside }
experiment e {
  topology = t
  workload = w
  sweep {
    lock    = [tas, ticket, mcs]
    threads = [1, 2, 4]
    zip { critical = [0ns, 200ns], outside = [0ns, 1us] }
    # The baseline runs at 2 threads only.
    where lock != tas || threads == 2
  }
  run {
    modes = [sim, native]
    duration = 10ms
    native { where lock == mcs }
  }
  expect [mode = sim, threads = 2, critical = 0ns] {
    fifo: bypass_max[lock = ticket] <= 1
    faster: speedup[lock = mcs] over tas > 0.5
    throughput_ops_s[lock = mcs] > 0
  }
  expect throughput_ops_s[mode = sim, lock = ticket, critical = 0ns] increasing over threads
  plot throughput_ops_s[mode = sim, lock = ticket] vs threads by critical
}
"#;

fn narrowed(sets: &[(&str, &str)], text: &str) -> Checked {
    let loader = MemLoader([("e.lab".to_string(), text.to_string())].into());
    let opts = LoadOptions {
        overrides: sets
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ..Default::default()
    };
    load("e.lab", &loader, &opts)
}

/// (claim id, why it is skipped) for each claim of the plan.
fn verdicts(c: &Checked) -> Vec<(String, Option<String>)> {
    let plan = c.plan.as_ref().unwrap_or_else(|| panic!("{}", show(c)));
    plan.claims
        .iter()
        .map(|c| (c.id.clone(), c.skipped.clone()))
        .collect()
}

#[test]
fn the_file_as_written_has_no_skipped_claim() {
    let c = narrowed(&[], FILE);
    assert!(c.diagnostics.is_empty(), "{}", show(&c));
    assert!(verdicts(&c).iter().all(|(_, why)| why.is_none()));
}

#[test]
fn a_claim_on_a_value_left_out_is_skipped_with_the_reason() {
    let c = narrowed(&[("lock", "ticket")], FILE);
    assert!(!c.has_errors(), "{}", show(&c));
    let v = verdicts(&c);
    assert_eq!(v[0], ("fifo".into(), None));
    // The speedup's own lock and its baseline are both left out: both are named.
    assert_eq!(
        v[1].1.as_deref(),
        Some("`--set lock=ticket` leaves out `lock = mcs`, `lock = tas`")
    );
    assert_eq!(
        v[2].1.as_deref(),
        Some("`--set lock=ticket` leaves out `lock = mcs`")
    );
    assert_eq!(v[3], ("c4".into(), None));
    // A skipped claim reads nothing: no modes, no resolved reference.
    let plan = c.plan.as_ref().unwrap();
    let skipped = &plan.claims[1];
    assert!(skipped.modes.is_empty());
    let locklab_model::plan::ClaimKind::Band { expr, .. } = &skipped.kind else {
        panic!("a band")
    };
    assert!(expr.metrics().iter().all(|m| m.target.is_unresolved()));
    // The mode that only ran mcs runs nothing, which is said.
    assert!(plan
        .points
        .iter()
        .all(|p| !p.modes.contains(&locklab_model::plan::Mode::Native)));
    let warned = show(&c);
    assert!(
        warned.contains("`--set lock=ticket` leaves no native point"),
        "{warned}"
    );
}

#[test]
fn a_baseline_a_where_kept_at_a_value_left_out_is_named() {
    // `tas` runs at 2 threads only: at 1 thread the speedup has no baseline.
    let c = narrowed(&[("threads", "1")], FILE);
    assert!(!c.has_errors(), "{}", show(&c));
    let v = verdicts(&c);
    let why = "`--set threads=1` leaves out `threads = 2`";
    assert!(
        v[..3].iter().all(|(_, w)| w.as_deref() == Some(why)),
        "{v:?}"
    );
    // The trend over threads is left one value: skipped too.
    assert_eq!(
        v[3].1.as_deref(),
        Some("`--set threads=1` leaves out `threads = 2`, `threads = 4`")
    );
}

#[test]
fn a_trend_left_with_fewer_steps_is_skipped() {
    // Two steps of three still resolve, but that is not the trend written.
    let c = narrowed(&[("threads", "1, 2")], FILE);
    assert!(!c.has_errors(), "{}", show(&c));
    let v = verdicts(&c);
    assert!(v[..3].iter().all(|(_, why)| why.is_none()), "{v:?}");
    assert_eq!(
        v[3].1.as_deref(),
        Some("`--set threads=1, 2` leaves out `threads = 4`")
    );
}

#[test]
fn a_name_may_not_take_the_id_of_an_unnamed_claim() {
    // Claim 3 is unnamed (`c3`): naming claim 1 `c3` would give two claims one id.
    let file = FILE.replace("fifo: bypass_max", "c3: bypass_max");
    let c = narrowed(&[], &file);
    assert!(c.has_errors());
    assert!(
        show(&c).contains("`c3` is the id of the unnamed claim 3"),
        "{}",
        show(&c)
    );
}

#[test]
fn a_plot_left_without_points_is_not_drawn_and_said() {
    let c = narrowed(&[("lock", "mcs, tas")], FILE);
    assert!(!c.has_errors(), "{}", show(&c));
    // It keeps its place (the plots after it keep their numbers), drawing nothing.
    let plots = &c.plan.as_ref().unwrap().plots;
    assert_eq!(plots.len(), 1);
    assert!(plots[0].targets.is_empty());
    assert_eq!(
        plots[0].skipped.as_deref(),
        Some("`--set lock=mcs, tas` leaves out `lock = ticket`")
    );
    let warned = show(&c);
    assert!(
        warned.contains("this plot is not drawn: `--set lock=mcs, tas` leaves out `lock = ticket`"),
        "{warned}"
    );
}

#[test]
fn the_files_own_mistake_is_still_an_error() {
    let broken = FILE.replace("bypass_max[lock = ticket]", "bypass_max[lock = tickt]");
    let c = narrowed(&[("lock", "ticket")], &broken);
    assert!(c.has_errors());
    assert!(show(&c).contains("`tickt` is not a value of axis `lock`"));
}

#[test]
fn a_narrowing_that_leaves_no_point_is_an_error() {
    // tas runs at 2 threads only.
    let c = narrowed(&[("lock", "tas"), ("threads", "1")], FILE);
    assert!(c.has_errors());
    let said = show(&c);
    assert!(
        said.contains("`--set lock=tas` and `--set threads=1` leave no point to run"),
        "{said}"
    );
}

#[test]
fn zipped_axes_are_set_together() {
    let c = narrowed(&[("critical", "0ns"), ("outside", "0ns")], FILE);
    assert!(!c.has_errors(), "{}", show(&c));
    let c = narrowed(&[("critical", "0ns")], FILE);
    assert!(c.has_errors());
    let said = show(&c);
    assert!(said.contains("`critical` is zipped with `outside` (2 values) but is given 1"));
    assert!(said.contains("set the axes of the zip together"), "{said}");
}

#[test]
fn a_set_that_adds_a_value_a_selector_does_not_pin_is_an_error() {
    // As written the claim reads the one point of `ticket`; with a second thread
    // count it matches two. Nothing it read is left out: the error is told.
    let file = r#"topology t { sockets = 1, cores = 2, transfer { llc = 40ns } }
workload w = single { critical = 100ns }
experiment e {
  topology = t
  workload = w
  sweep { lock = [tas, ticket], threads = [2] }
  run { modes = [sim], duration = 10ms }
  expect bypass_max[lock = ticket] <= 1
}
"#;
    assert!(!narrowed(&[], file).has_errors());
    let c = narrowed(&[("threads", "1, 2")], file);
    assert!(c.has_errors());
    let said = show(&c);
    assert!(
        said.contains("matches 2 points that differ in threads"),
        "{said}"
    );
}

#[test]
fn a_claim_that_does_not_name_a_replaced_axis_is_judged_at_its_new_values() {
    // `crit` has one value and no claim names it: replacing it reruns the claims at
    // the new value. The claim that names the old one is skipped.
    let file = r#"topology t { sockets = 1, cores = 2, transfer { llc = 40ns } }
workload w = single { critical = $crit }
experiment e {
  topology = t
  workload = w
  sweep { lock = [tas, ticket], threads = [1, 2], crit = [100ns] }
  run { modes = [sim], duration = 10ms }
  expect bypass_max[lock = ticket, threads = 2] <= 1
  expect critical_achieved_ns[lock = ticket, threads = 1, crit = 100ns] in 100ns ± 5%
}
"#;
    let c = narrowed(&[("crit", "400ns")], file);
    assert!(!c.has_errors(), "{}", show(&c));
    let v = verdicts(&c);
    assert_eq!(v[0], ("c1".into(), None));
    assert_eq!(
        v[1].1.as_deref(),
        Some("`--set crit=400ns` leaves out `crit = 100ns`")
    );
    assert!(!c.plan.as_ref().unwrap().claims[0].modes.is_empty());
}

#[test]
fn a_zip_paired_anew_by_set_is_named_when_a_selection_finds_no_point() {
    // Both values are still swept, but no longer together: the help says `--set` may
    // be why.
    let file = r#"topology t { sockets = 1, cores = 2, transfer { llc = 40ns } }
workload w = single { critical = $crit }
experiment e {
  topology = t
  workload = w
  sweep { lock = [ticket], zip { threads = [1, 2], crit = [100ns, 400ns] } }
  run { modes = [sim], duration = 10ms }
  expect bypass_max[threads = 2, crit = 400ns] <= 1
}
"#;
    let c = narrowed(&[("threads", "2, 1"), ("crit", "100ns, 400ns")], file);
    assert!(c.has_errors());
    let said = show(&c);
    assert!(
        said.contains("this selection matches no point of the plan"),
        "{said}"
    );
    assert!(
        c.diagnostics.iter().any(|d| d
            .help
            .as_deref()
            .is_some_and(|h| h.contains("`--set` (it also pairs a `zip`'s axes anew)"))),
        "{said}"
    );
}
