use crate::common::*;
use locklab_analysis::claims::{self, ClaimResult, Verdict, VerdictCounts};
use locklab_analysis::load_results;
use locklab_model::plan::*;

fn run(kinds: Vec<(&str, ClaimKind)>) -> Vec<ClaimResult> {
    let plan = with_claims(
        plan(),
        kinds.into_iter().map(|(id, k)| claim(id, k)).collect(),
    );
    let dir = results_dir(&plan);
    let r = load_results(dir.path()).unwrap();
    claims::evaluate(&plan, &r)
}

fn sp(threshold: Value, threads: i64) -> Expr {
    metric(mref(
        "speedup",
        &[
            ("lock", s("cna")),
            ("threshold", threshold),
            ("threads", Value::Int(threads)),
        ],
        Some("stock"),
    ))
}

fn one(r: &[ClaimResult], id: &str) -> ClaimResult {
    let v: Vec<&ClaimResult> = r.iter().filter(|c| c.id == id).collect();
    assert_eq!(v.len(), 1, "{id}: {v:?}");
    v[0].clone()
}

#[test]
fn band_pass_fail_and_inconclusive() {
    let tp16 = || {
        metric(mref(
            "throughput_ops_s",
            &[("lock", s("stock")), ("threads", Value::Int(16))],
            None,
        ))
    };
    let r = run(vec![
        (
            "s10",
            ClaimKind::Band {
                expr: sp(Value::Duration(10 * MS), 16),
                lo: 1.7,
                hi: 2.7,
                strict: false,
            },
        ),
        (
            "high",
            ClaimKind::Band {
                expr: sp(Value::Duration(10 * MS), 16),
                lo: 2.5,
                hi: 3.0,
                strict: false,
            },
        ),
        // The median is 0.5e6 exactly; its interval [0.49e6, 0.51e6] straddles 0.5e6.
        (
            "edge",
            ClaimKind::Band {
                expr: tp16(),
                lo: 0.5e6,
                hi: f64::INFINITY,
                strict: false,
            },
        ),
        // A ratio of two speedups shares the baseline: S1/S10 = 0.9.
        (
            "ratio",
            ClaimKind::Band {
                expr: Expr::Binary {
                    op: BinOp::Div,
                    lhs: Box::new(sp(Value::Duration(MS), 16)),
                    rhs: Box::new(sp(Value::Duration(10 * MS), 16)),
                },
                lo: 0.8,
                hi: 1.0,
                strict: false,
            },
        ),
    ]);
    let s10 = one(&r, "s10");
    assert_eq!(s10.verdict, Verdict::Pass, "{s10:?}");
    assert!((s10.measured.unwrap().value - 2.0).abs() < 1e-9);
    assert_eq!(s10.expectation, "in [1.7, 2.7]");
    assert_eq!(s10.mode, None, "one mode in the results: no per-mode label");
    assert_eq!(one(&r, "high").verdict, Verdict::Fail);
    let edge = one(&r, "edge");
    assert_eq!(edge.verdict, Verdict::Inconclusive, "{edge:?}");
    assert!(edge.detail.contains("straddles"));
    let ratio = one(&r, "ratio");
    assert_eq!(ratio.verdict, Verdict::Pass, "{ratio:?}");
    assert!((ratio.measured.unwrap().value - 0.9).abs() < 1e-9);
    assert_eq!(ratio.terms.len(), 2);
}

#[test]
fn ordering_with_gap_and_spread() {
    let t = |ms: u64| Value::Duration(ms);
    let r = run(vec![
        (
            "order",
            ClaimKind::Ordering {
                exprs: vec![sp(t(100_000), 16), sp(t(MS), 16), sp(t(10 * MS), 16)],
                op: OrderOp::Less,
                min_gap: 0.02,
                or_equal: Vec::new(),
            },
        ),
        (
            "reversed",
            ClaimKind::Ordering {
                exprs: vec![sp(t(10 * MS), 16), sp(t(MS), 16)],
                op: OrderOp::Less,
                min_gap: 0.02,
                or_equal: Vec::new(),
            },
        ),
        (
            // 1.8 vs 2.0 is an 11 % gap: a 20 % minimum cannot be met.
            "toosmall",
            ClaimKind::Ordering {
                exprs: vec![sp(t(10 * MS), 16), sp(t(MS), 16)],
                op: OrderOp::Greater,
                min_gap: 0.2,
                or_equal: Vec::new(),
            },
        ),
        (
            // Equal speedups at 4 threads: neither order holds beyond noise.
            "tied",
            ClaimKind::Ordering {
                exprs: vec![
                    metric(mref(
                        "throughput_ops_s",
                        &[
                            ("lock", s("cna")),
                            ("threshold", t(MS)),
                            ("threads", Value::Int(4)),
                        ],
                        None,
                    )),
                    metric(mref(
                        "throughput_ops_s",
                        &[("lock", s("stock")), ("threads", Value::Int(4))],
                        None,
                    )),
                ],
                op: OrderOp::Less,
                min_gap: 0.0,
                or_equal: Vec::new(),
            },
        ),
        (
            // Equal values in every repetition (bypass 3 everywhere): an exact tie
            // is no strict ordering, so `<` fails (neither an error nor undecided).
            "equal",
            ClaimKind::Ordering {
                exprs: vec![
                    metric(mref(
                        "bypass_max",
                        &[("lock", s("stock")), ("threads", Value::Int(4))],
                        None,
                    )),
                    metric(mref(
                        "bypass_max",
                        &[
                            ("lock", s("cna")),
                            ("threshold", t(MS)),
                            ("threads", Value::Int(4)),
                        ],
                        None,
                    )),
                ],
                op: OrderOp::Less,
                min_gap: 0.0,
                or_equal: Vec::new(),
            },
        ),
        (
            // The same tie holds `<=`.
            "at_most",
            ClaimKind::Ordering {
                exprs: vec![
                    metric(mref(
                        "bypass_max",
                        &[("lock", s("stock")), ("threads", Value::Int(4))],
                        None,
                    )),
                    metric(mref(
                        "bypass_max",
                        &[
                            ("lock", s("cna")),
                            ("threshold", t(MS)),
                            ("threads", Value::Int(4)),
                        ],
                        None,
                    )),
                ],
                op: OrderOp::Less,
                min_gap: 0.0,
                or_equal: vec![true],
            },
        ),
    ]);
    let eq = one(&r, "equal");
    assert_eq!(eq.verdict, Verdict::Fail, "{eq:?}");
    assert_eq!(eq.measured.unwrap().value, 0.0);
    let at_most = one(&r, "at_most");
    assert_eq!(at_most.verdict, Verdict::Pass, "{at_most:?}");
    let o = one(&r, "order");
    assert_eq!(o.verdict, Verdict::Pass, "{o:?}");
    assert!(
        (o.measured.unwrap().value - (2.0 / 1.8 - 1.0)).abs() < 1e-9,
        "smallest gap: 2.0 over 1.8"
    );
    assert_eq!(one(&r, "reversed").verdict, Verdict::Fail);
    assert_eq!(one(&r, "toosmall").verdict, Verdict::Fail);
    let tied = one(&r, "tied");
    assert_eq!(tied.verdict, Verdict::Inconclusive, "{tied:?}");
}

/// CNA's speedup over stock at 16 threads falls as the threshold grows.
fn cna_speedup_falls_with_the_threshold() -> ClaimKind {
    ClaimKind::Trend {
        metric: mref(
            "speedup",
            &[("lock", s("cna")), ("threads", Value::Int(16))],
            Some("stock"),
        ),
        axis: "threshold".into(),
        values: thresholds(),
        direction: TrendDirection::Decreasing,
        min_rho: 0.8,
        series: Default::default(),
    }
}

#[test]
fn trends_over_axes_and_cpus() {
    let r = run(vec![
        ("thr", cna_speedup_falls_with_the_threshold()),
        (
            "thr_up",
            ClaimKind::Trend {
                metric: mref(
                    "speedup",
                    &[("lock", s("cna")), ("threads", Value::Int(16))],
                    Some("stock"),
                ),
                axis: "threshold".into(),
                values: vec![],
                direction: TrendDirection::Increasing,
                min_rho: 0.8,
                series: Default::default(),
            },
        ),
        (
            "cpu",
            ClaimKind::Trend {
                metric: mref(
                    "wait_p99_ns",
                    &[("lock", s("stock")), ("threads", Value::Int(4))],
                    None,
                ),
                axis: "cpu".into(),
                values: vec![],
                direction: TrendDirection::Increasing,
                min_rho: 0.8,
                series: Default::default(),
            },
        ),
        (
            "flat",
            ClaimKind::Trend {
                metric: mref(
                    "speedup",
                    &[("lock", s("cna")), ("threads", Value::Int(4))],
                    Some("stock"),
                ),
                axis: "threshold".into(),
                values: vec![],
                direction: TrendDirection::Increasing,
                min_rho: 0.8,
                series: Default::default(),
            },
        ),
    ]);
    let thr = one(&r, "thr");
    assert_eq!(thr.verdict, Verdict::Pass, "{thr:?}");
    assert_eq!(thr.measured.unwrap().value, -1.0);
    // Ascending threshold order (100us, 1ms, 10ms): speedup rises.
    assert_eq!(one(&r, "thr_up").verdict, Verdict::Pass);
    let cpu = one(&r, "cpu");
    assert_eq!(cpu.verdict, Verdict::Pass, "{cpu:?}");
    assert_eq!(cpu.terms.len(), 4);
    let flat = one(&r, "flat");
    assert_ne!(flat.verdict, Verdict::Pass, "{flat:?}");
}

#[test]
fn thread_and_handoff_selectors() {
    fn sel(extra: &[(&'static str, Value)]) -> Vec<(&'static str, Value)> {
        let mut v = vec![
            ("lock", s("cna")),
            ("threshold", Value::Duration(MS)),
            ("threads", Value::Int(16)),
        ];
        v.extend(extra.iter().cloned());
        v
    }
    let r = run(vec![
        (
            "cpu7",
            ClaimKind::Band {
                expr: metric(mref("wait_p99_ns", &sel(&[("cpu", Value::Int(7))]), None)),
                lo: 7900.0,
                hi: 8100.0,
                strict: false,
            },
        ),
        (
            "node1",
            ClaimKind::Band {
                expr: metric(mref("share", &sel(&[("node", Value::Int(1))]), None)),
                lo: 0.49,
                hi: 0.51,
                strict: false,
            },
        ),
        (
            "remote",
            ClaimKind::Band {
                expr: metric(mref(
                    "wait_max_ns",
                    &sel(&[("cross_node", Value::Bool(true))]),
                    None,
                )),
                lo: 0.0,
                hi: 3.0 * 1e6 + 1e6,
                strict: false,
            },
        ),
        (
            "hcount",
            ClaimKind::Band {
                expr: metric(mref(
                    "count",
                    &sel(&[("cross_node", Value::Bool(false))]),
                    None,
                )),
                lo: 1800.0,
                hi: 1800.0,
                strict: false,
            },
        ),
    ]);
    for id in ["cpu7", "node1", "remote", "hcount"] {
        let c = one(&r, id);
        assert_eq!(c.verdict, Verdict::Pass, "{c:?}");
    }
    assert_eq!(one(&r, "remote").measured.unwrap().value, 30_002.0);
}

#[test]
fn what_the_results_cannot_give_errs_or_skips() {
    // Selections the language rejects never reach the analysis; what remains is
    // what only the results can tell.
    let stock4 = |extra: &[(&'static str, Value)]| {
        let mut v = vec![("lock", s("stock")), ("threads", Value::Int(4))];
        v.extend(extra.iter().cloned());
        v
    };
    let r = run(vec![
        (
            "nan",
            ClaimKind::Band {
                expr: metric(mref("cpu_wall_ratio", &stock4(&[]), None)),
                lo: 0.97,
                hi: f64::INFINITY,
                strict: false,
            },
        ),
        (
            "nocpu",
            ClaimKind::Band {
                expr: metric(mref(
                    "wait_p99_ns",
                    &stock4(&[("cpu", Value::Int(99))]),
                    None,
                )),
                lo: 0.0,
                hi: 1.0,
                strict: false,
            },
        ),
        (
            "native",
            ClaimKind::Band {
                expr: metric(mref(
                    "throughput_ops_s",
                    &stock4(&[("mode", s("native"))]),
                    None,
                )),
                lo: 0.0,
                hi: 1.0,
                strict: false,
            },
        ),
    ]);
    let d = |id: &str| one(&r, id);
    assert_eq!(d("nan").verdict, Verdict::Error);
    assert!(
        d("nan").detail.contains("not measured in simulation"),
        "{}",
        d("nan").detail
    );
    assert_eq!(d("nocpu").verdict, Verdict::Error);
    assert!(
        d("nocpu").detail.contains("no thread rows") && d("nocpu").detail.contains("cpu=99"),
        "{}",
        d("nocpu").detail
    );
    let native = d("native");
    assert_eq!(native.verdict, Verdict::Skipped, "{native:?}");
    assert!(
        native.detail.contains("has no records in mode native"),
        "{}",
        native.detail
    );
    let gating = VerdictCounts::gating(&r);
    assert!(gating.error > 0 && gating.skipped > 0, "{gating:?}");
}

#[test]
fn a_pinned_baseline_is_the_point_the_plan_names() {
    // cna at 4 threads over stock at 16 threads (`over stock[threads = 16]`):
    // 1e6 / 0.5e6. The baseline rule alone would pick stock at 4 threads (1.0).
    let mut m = mref(
        "speedup",
        &[
            ("lock", s("cna")),
            ("threshold", Value::Duration(MS)),
            ("threads", Value::Int(4)),
        ],
        Some("stock"),
    );
    m.baseline_select = vec![("threads".into(), Value::Int(16))];
    let plan = with_claims(
        plan(),
        vec![
            claim(
                "pinned",
                ClaimKind::Band {
                    expr: metric(m),
                    lo: 1.9,
                    hi: 2.1,
                    strict: false,
                },
            ),
            claim(
                "rule",
                ClaimKind::Band {
                    expr: sp(Value::Duration(MS), 4),
                    lo: 0.9,
                    hi: 1.1,
                    strict: false,
                },
            ),
        ],
    );
    let ClaimKind::Band {
        expr: Expr::Metric(m),
        ..
    } = &plan.claims[0].kind
    else {
        unreachable!()
    };
    let base = &plan.points[m.target.baseline.unwrap() as usize];
    assert_eq!((base.lock.name.as_str(), base.threads), ("stock", 16));
    let dir = results_dir(&plan);
    let r = claims::evaluate(&plan, &load_results(dir.path()).unwrap());
    let pinned = one(&r, "pinned");
    assert_eq!(pinned.verdict, Verdict::Pass, "{pinned:?}");
    assert!((pinned.measured.unwrap().value - 2.0).abs() < 1e-9);
    assert_eq!(
        pinned.terms[0].label,
        "speedup[lock=cna, threshold=1ms, threads=4] over stock[threads=16]"
    );
    assert_eq!(one(&r, "rule").verdict, Verdict::Pass);
    // Without pins the label is as written before pins existed.
    assert_eq!(
        one(&r, "rule").terms[0].label,
        "speedup[lock=cna, threshold=1ms, threads=4] over stock"
    );
}

#[test]
fn a_trend_over_cpus_reads_the_rows_the_point_has() {
    let p99 = || {
        mref(
            "wait_p99_ns",
            &[
                ("lock", s("cna")),
                ("threshold", Value::Duration(MS)),
                ("threads", Value::Int(16)),
            ],
            None,
        )
    };
    let trend = |values: Vec<Value>, direction| ClaimKind::Trend {
        metric: p99(),
        axis: "cpu".into(),
        values,
        direction,
        min_rho: 0.8,
        series: Default::default(),
    };
    let down: Vec<Value> = [12, 8, 4, 0].map(Value::Int).to_vec();
    let plan = with_claims(
        plan(),
        vec![
            claim("rows", trend(vec![], TrendDirection::Increasing)),
            claim("listed", trend(down, TrendDirection::Decreasing)),
        ],
    );
    let ClaimKind::Trend { series, .. } = &plan.claims[0].kind else {
        unreachable!()
    };
    assert!(
        matches!(series, TrendSeries::Rows { target } if target.rows.is_empty()),
        "{series:?}"
    );
    let dir = results_dir(&plan);
    let r = claims::evaluate(&plan, &load_results(dir.path()).unwrap());
    // The point's 16 CPUs, ascending: p99 rises with the CPU id.
    let rows = one(&r, "rows");
    assert_eq!(rows.verdict, Verdict::Pass, "{rows:?}");
    assert_eq!(rows.measured.unwrap().value, 1.0);
    assert_eq!(rows.terms.len(), 16);
    assert_eq!(
        rows.terms[3].label,
        "wait_p99_ns[lock=cna, threshold=1ms, threads=16, cpu=3]"
    );
    assert_eq!(rows.terms[3].value.value, 4002.0);
    let listed = one(&r, "listed");
    assert_eq!(listed.verdict, Verdict::Pass, "{listed:?}");
    assert_eq!(listed.terms.len(), 4);
    assert!(
        listed.detail.contains("over cpu = 12: "),
        "{}",
        listed.detail
    );
}

#[test]
fn a_plan_without_resolved_references_is_an_error() {
    // As a plan written before references were resolved reads.
    let mut plan = plan();
    plan.claims = vec![claim(
        "old",
        ClaimKind::Band {
            expr: sp(Value::Duration(MS), 16),
            lo: 1.0,
            hi: 2.0,
            strict: false,
        },
    )];
    let dir = results_dir(&plan);
    let r = claims::evaluate(&plan, &load_results(dir.path()).unwrap());
    assert_eq!(r[0].verdict, Verdict::Error, "{:?}", r[0]);
    assert!(r[0].detail.contains("not resolved"), "{}", r[0].detail);
}

#[test]
fn non_gating_claims_report_and_do_not_gate() {
    let mut plan = plan();
    let mut c = claim(
        "s100",
        ClaimKind::Band {
            expr: sp(Value::Duration(100_000), 16),
            lo: 1.14,
            hi: 1.14,
            strict: false,
        },
    );
    c.gating = false;
    let mut ok = claim(
        "s10",
        ClaimKind::Band {
            expr: sp(Value::Duration(10 * MS), 16),
            lo: 1.7,
            hi: 2.7,
            strict: false,
        },
    );
    ok.line = 12;
    plan.claims = vec![c, ok];
    resolve(&mut plan);
    let dir = results_dir(&plan);
    let r = load_results(dir.path()).unwrap();
    let res = claims::evaluate(&plan, &r);
    assert_eq!(res[0].verdict, Verdict::Report);
    assert!(res[0].detail.contains("would be fail"), "{}", res[0].detail);
    // The failing claim does not gate: the gating ones all pass.
    let gating = VerdictCounts::gating(&res);
    assert_eq!((gating.pass, gating.fail, gating.error), (1, 0, 0));
    assert_eq!(VerdictCounts::of(&res).report, 1);

    let table = claims::claims_table(&res, 100);
    assert!(
        table.contains("s10") && table.contains("cna.lab:12") && table.contains("pass"),
        "{table}"
    );
    assert!(table.contains("report (would fail"), "{table}");

    claims::write_claims_json(dir.path(), &res).unwrap();
    let back = claims::read_claims_json(dir.path()).unwrap();
    assert_eq!(back.len(), 2);
    assert_eq!(back[1].verdict, Verdict::Pass);
}

#[test]
fn a_metric_the_run_was_too_short_to_measure_is_inconclusive() {
    let mut plan = plan();
    let m = |id: &str, metric: &str| {
        claim(
            id,
            ClaimKind::Band {
                expr: super::common::metric(mref(
                    metric,
                    &[
                        ("lock", s("cna")),
                        ("threshold", Value::Duration(MS)),
                        ("threads", Value::Int(4)),
                    ],
                    None,
                )),
                lo: f64::NEG_INFINITY,
                hi: 0.6,
                strict: false,
            },
        )
    };
    let mut no_cpu = m("nocpu", "wait_p99_ns");
    if let ClaimKind::Band {
        expr: Expr::Metric(r),
        ..
    } = &mut no_cpu.kind
    {
        r.select.push(("cpu".into(), Value::Int(99)));
    }
    plan.claims = vec![
        m("short", "window_fairness_factor_max"),
        m("measured", "fairness_factor"),
        no_cpu,
    ];
    resolve(&mut plan);
    // Every repetition of every point measured 20 ms against 100 ms fairness windows:
    // no full window, so the windowed fairness factor is NaN throughout.
    let dir = tempfile::tempdir().unwrap();
    let man = manifest(&plan);
    let mut w = locklab_analysis::ResultsWriter::create(dir.path(), &man).unwrap();
    for mut r in all_records(&plan) {
        r.point.window_ns = 20 * MS;
        r.point.fairness_window_ns = 100 * MS;
        r.point.window_fairness_factor_max = f64::NAN;
        w.write(&r).unwrap();
    }
    w.finish(&man).unwrap();
    let res = load_results(dir.path()).unwrap();
    let r = claims::evaluate(&plan, &res);
    let short = one(&r, "short");
    assert_eq!(short.verdict, Verdict::Inconclusive, "{short:?}");
    assert!(short.detail.contains("not measured"), "{}", short.detail);
    assert!(
        short.detail.contains("shorter than one fairness window"),
        "{}",
        short.detail
    );
    assert!(
        short.detail.contains("20ms") && short.detail.contains("100ms"),
        "{}",
        short.detail
    );
    assert_ne!(one(&r, "measured").verdict, Verdict::Error);
    // Rows the point does not have still err.
    assert_eq!(one(&r, "nocpu").verdict, Verdict::Error);
    // They are the only error among the gating claims.
    let gating = VerdictCounts::gating(&r);
    assert_eq!(gating.error, 1, "{gating:?}");
    assert!(gating.inconclusive > 0, "{gating:?}");
}

/// A claim says how many repetitions its verdict rests on (`n = 1` marked in every
/// label), and which of the points it reads the noise gate flagged.
#[test]
fn one_repetition_and_noise_flagged_points_are_marked() {
    let mut plan = plan();
    let at = |threads: i64| {
        metric(mref(
            "throughput_ops_s",
            &[("lock", s("stock")), ("threads", Value::Int(threads))],
            None,
        ))
    };
    let band = |id: &str, threads: i64| {
        claim(
            id,
            ClaimKind::Band {
                expr: at(threads),
                lo: 0.0,
                hi: f64::INFINITY,
                strict: true,
            },
        )
    };
    plan.claims = vec![band("quiet", 4), band("noisy", 16)];
    resolve(&mut plan);
    let noisy_point = plan
        .points
        .iter()
        .position(|p| p.id.contains("stock") && p.id.contains("threads=16"))
        .unwrap();
    let evaluate = |reps: u32| {
        let dir = tempfile::tempdir().unwrap();
        let man = manifest(&plan);
        let mut w = locklab_analysis::ResultsWriter::create(dir.path(), &man).unwrap();
        for mut r in all_records(&plan)
            .into_iter()
            .filter(|r| r.point.rep < reps)
        {
            if r.point.point as usize == noisy_point && r.point.rep == 0 {
                r.point.noise = "flagged: cpu/wall 0.41 on thread 3".into();
            }
            w.write(&r).unwrap();
        }
        w.finish(&man).unwrap();
        claims::evaluate(&plan, &load_results(dir.path()).unwrap())
    };
    let all = evaluate(REPS);
    let quiet = one(&all, "quiet");
    assert_eq!(quiet.repetitions, REPS as usize);
    assert!(quiet.noisy_points.is_empty(), "{quiet:?}");
    assert!(!quiet.measured_label().contains("n = 1"));
    let noisy = one(&all, "noisy");
    assert_eq!(noisy.noisy_points, [plan.points[noisy_point].id.clone()]);
    assert_eq!(noisy.verdict_label(), "pass (noisy)");
    let table = claims::claims_table(&all, 200);
    assert!(
        table.contains("noisy (noisy): reads points the noise gate flagged"),
        "{table}"
    );

    let single = evaluate(1);
    for c in &single {
        assert_eq!(c.repetitions, 1, "{c:?}");
        assert!(
            c.measured_label().ends_with("(n = 1)"),
            "{}",
            c.measured_label()
        );
    }
    let table = claims::claims_table(&single, 200);
    assert_eq!(table.matches("(n = 1)").count(), 2, "{table}");
}

/// A maximum from a wait cut off by the end of the window is a lower bound: a claim
/// that it stays below a bound cannot pass on it (the true value may be higher), but
/// one it already exceeds fails, and a claim that it exceeds a bound passes.
#[test]
fn a_maximum_that_is_a_lower_bound_decides_only_what_it_can() {
    let mut plan = plan();
    let wait_max = || {
        metric(mref(
            "wait_max_ns",
            &[("lock", s("stock")), ("threads", Value::Int(4))],
            None,
        ))
    };
    let band = |id: &str, lo: f64, hi: f64| {
        claim(
            id,
            ClaimKind::Band {
                expr: wait_max(),
                lo,
                hi,
                strict: false,
            },
        )
    };
    // Every repetition measured wait_max_ns = 20 us.
    plan.claims = vec![
        band("below", f64::NEG_INFINITY, 1e6),
        band("exceeded", f64::NEG_INFINITY, 1e3),
        band("above", 1e3, f64::INFINITY),
        band("not_yet", 1e6, f64::INFINITY),
    ];
    resolve(&mut plan);
    let dir = tempfile::tempdir().unwrap();
    let man = manifest(&plan);
    let mut w = locklab_analysis::ResultsWriter::create(dir.path(), &man).unwrap();
    for mut r in all_records(&plan) {
        r.point.waits_censored = 1;
        r.point.wait_max_censored = true;
        w.write(&r).unwrap();
    }
    w.finish(&man).unwrap();
    let r = claims::evaluate(&plan, &load_results(dir.path()).unwrap());
    let below = one(&r, "below");
    assert_eq!(below.verdict, Verdict::Inconclusive, "{below:?}");
    assert!(below.detail.contains("lower bound"), "{}", below.detail);
    assert!(below.measured_label().contains("(lower bound)"));
    assert_eq!(one(&r, "exceeded").verdict, Verdict::Fail);
    assert_eq!(one(&r, "above").verdict, Verdict::Pass);
    assert_eq!(one(&r, "not_yet").verdict, Verdict::Inconclusive);
}

/// A claim whose arithmetic divides by zero has no value: `error`, as `0 / 0` is,
/// never a verdict on an infinity (`x / 0 > 1` failing, `1 / (x / 0) < 1` passing).
#[test]
fn a_division_by_zero_is_an_error_not_a_verdict_on_infinity() {
    let tp = || {
        metric(mref(
            "throughput_ops_s",
            &[("lock", s("stock")), ("threads", Value::Int(16))],
            None,
        ))
    };
    let bin = |op: BinOp, lhs: Expr, rhs: Expr| Expr::Binary {
        op,
        lhs: Box::new(lhs),
        rhs: Box::new(rhs),
    };
    let zero = || bin(BinOp::Sub, tp(), tp());
    let band = |expr: Expr, lo: f64, hi: f64| ClaimKind::Band {
        expr,
        lo,
        hi,
        strict: true,
    };
    let inf = f64::INFINITY;
    let r = run(vec![
        ("over", band(bin(BinOp::Div, tp(), zero()), 1.0, inf)),
        (
            "inverse",
            band(
                bin(
                    BinOp::Div,
                    Expr::Const { value: 1.0 },
                    bin(BinOp::Div, tp(), zero()),
                ),
                -inf,
                1.0,
            ),
        ),
        (
            "minus",
            band(
                bin(
                    BinOp::Sub,
                    Expr::Const { value: 0.0 },
                    bin(BinOp::Div, tp(), Expr::Const { value: 0.0 }),
                ),
                -inf,
                1.0,
            ),
        ),
        ("fine", band(bin(BinOp::Div, tp(), tp()), 0.5, 1.5)),
    ]);
    for id in ["over", "inverse", "minus"] {
        let c = one(&r, id);
        assert_eq!(c.verdict, Verdict::Error, "{id}: {c:?}");
        assert!(c.detail.contains("division by zero"), "{id}: {}", c.detail);
        assert!(
            c.measured.is_none_or(|m| m.value.is_finite()),
            "{id}: {c:?}"
        );
    }
    assert_eq!(one(&r, "fine").verdict, Verdict::Pass);
}

/// A divisor that is 0 in some repetitions only. Its median is not 0, so the claim
/// has a value, but a resample whose divisor's median is 0 divides by zero: that
/// draw is +inf (or, for 0 / 0, has no value) and is kept, not dropped. Dropping
/// them judged the claim on the resamples that happened to miss the zeros: the
/// reviewer's `wait_p99_ns[...] / wait_p99_ns[...] < 3`, divisor [0, 273, 272],
/// passed at 1.471 [1.465, 1.471] although about 26 % (7/27) of the resamples
/// divide by zero. A divisor 0 in every repetition is an error; one never 0
/// behaves as before. Bands, orderings and trends alike.
#[test]
fn a_divisor_zero_in_some_repetitions_leaves_the_claim_undecided() {
    let at = |metric: &str, lock: &str, threshold: Option<u64>, threads: i64| {
        let mut sel = vec![("lock", s(lock))];
        if let Some(t) = threshold {
            sel.push(("threshold", Value::Duration(t)));
        }
        sel.push(("threads", Value::Int(threads)));
        super::common::metric(mref(metric, &sel, None))
    };
    let p99 = |lock: &str, threshold: Option<u64>, threads: i64| {
        at("wait_p99_ns", lock, threshold, threads)
    };
    let div = |a: Expr, b: Expr| Expr::Binary {
        op: BinOp::Div,
        lhs: Box::new(a),
        rhs: Box::new(b),
    };
    let band = |expr: Expr, lo: f64, hi: f64| ClaimKind::Band {
        expr,
        lo,
        hi,
        strict: true,
    };
    let inf = f64::INFINITY;
    // num = stock at 4 threads, [400, 401, 402]; the divisor, stock at 16 threads,
    // as each case sets it; cna at 10ms, 4 threads, [0, 0, 400]; cna at 1ms, 4
    // threads, [3000, 3001, 3002].
    let num = || p99("stock", None, 4);
    let den = || p99("stock", None, 16);
    let zeroish = || p99("cna", Some(10 * MS), 4);
    let big = || p99("cna", Some(MS), 4);
    let claims = vec![
        ("below", band(div(num(), den()), -inf, 3.0)),
        // A ratio that is unbounded above in some draws is above 1 in all of them.
        ("above", band(div(num(), den()), 1.0, inf)),
        (
            "order",
            ClaimKind::Ordering {
                exprs: vec![div(num(), den()), div(big(), num())],
                op: OrderOp::Less,
                min_gap: 0.0,
                or_equal: vec![],
            },
        ),
        // 0 / 0 in about 19 % of the draws (20/27 × 7/27): no value there, so no
        // lower end, though every draw with a value is at least 0.
        ("nan", band(div(zeroish(), den()), -1.0, inf)),
        // Speedups over a baseline whose throughput is 0 in some repetitions.
        ("trend", cna_speedup_falls_with_the_threshold()),
    ];
    let plan = with_claims(
        plan(),
        claims.into_iter().map(|(id, k)| claim(id, k)).collect(),
    );
    let is = |i: usize, lock: &str, threads: u32, threshold: Option<u64>| {
        let p = &plan.points[i];
        p.lock.name == lock
            && p.threads == threads
            && threshold.is_none_or(|t| p.axes["threshold"] == Value::Duration(t))
    };
    // Three repetitions; the divisor point's p99 and throughput as given (0 or not).
    let evaluate = |divisor: [f64; 3], tp_zero: [bool; 3]| {
        let dir = tempfile::tempdir().unwrap();
        let man = manifest(&plan);
        let mut w = locklab_analysis::ResultsWriter::create(dir.path(), &man).unwrap();
        for mut r in all_records(&plan).into_iter().filter(|r| r.point.rep < 3) {
            let (i, rep) = (r.point.point as usize, r.point.rep as usize);
            let p = &mut r.point;
            if is(i, "stock", 4, None) {
                p.wait_p99_ns = 400.0 + rep as f64;
            } else if is(i, "stock", 16, None) {
                p.wait_p99_ns = divisor[rep];
                if tp_zero[rep] {
                    p.throughput_ops_s = 0.0;
                }
            } else if is(i, "cna", 4, Some(10 * MS)) {
                p.wait_p99_ns = [0.0, 0.0, 400.0][rep];
            } else if is(i, "cna", 4, Some(MS)) {
                p.wait_p99_ns = 3000.0 + rep as f64;
            }
            w.write(&r).unwrap();
        }
        w.finish(&man).unwrap();
        claims::evaluate(&plan, &load_results(dir.path()).unwrap())
    };

    // Zero in one repetition of three: undecided where a zero could decide.
    let r = evaluate([0.0, 273.0, 272.0], [true, false, false]);
    let below = one(&r, "below");
    assert_eq!(below.verdict, Verdict::Inconclusive, "{below:?}");
    let m = below.measured.unwrap();
    assert!((m.value - 401.0 / 272.0).abs() < 1e-9, "{m:?}");
    assert!(m.lo.is_finite() && m.hi == inf, "{m:?}");
    assert!(below.detail.contains("straddles"), "{}", below.detail);
    let above = one(&r, "above");
    assert_eq!(above.verdict, Verdict::Pass, "{above:?}");
    let order = one(&r, "order");
    assert_eq!(order.verdict, Verdict::Inconclusive, "{order:?}");
    let nan = one(&r, "nan");
    assert_eq!(nan.verdict, Verdict::Inconclusive, "{nan:?}");
    let m = nan.measured.unwrap();
    assert_eq!((m.value, m.lo, m.hi), (0.0, -inf, inf), "{m:?}");
    let trend = one(&r, "trend");
    assert_eq!(trend.verdict, Verdict::Inconclusive, "{trend:?}");
    for c in &r {
        assert!(!c.detail.contains("division by zero"), "{c:?}");
    }
    // An infinite end survives claims.json (JSON has no number for it).
    assert!(reads_back(&r) > 0, "nothing infinite to read back");

    // Zero in every repetition: the claim has no value.
    let r = evaluate([0.0; 3], [true; 3]);
    reads_back(&r);
    for id in ["below", "above", "order", "nan", "trend"] {
        let c = one(&r, id);
        assert_eq!(c.verdict, Verdict::Error, "{id}: {c:?}");
        assert!(c.detail.contains("division by zero"), "{id}: {}", c.detail);
    }
    assert!(
        one(&r, "trend")
            .detail
            .contains("the throughput of the baseline stock is 0"),
        "{:?}",
        one(&r, "trend")
    );

    // Never zero: decided, as before.
    let r = evaluate([274.0, 273.0, 272.0], [false; 3]);
    for id in ["below", "above", "order", "nan", "trend"] {
        let c = one(&r, id);
        assert_eq!(c.verdict, Verdict::Pass, "{id}: {c:?}");
        let m = c.measured.unwrap();
        assert!(m.lo.is_finite() && m.hi.is_finite(), "{id}: {m:?}");
    }
    let m = one(&r, "below").measured.unwrap();
    assert!(m.lo >= 400.0 / 274.0 && m.hi <= 402.0 / 272.0, "{m:?}");
}

/// Asserts that `claims` written to claims.json and read back are the same, every
/// estimate's infinities and NaNs included; returns how many values were not finite.
fn reads_back(claims: &[ClaimResult]) -> usize {
    let dir = tempfile::tempdir().unwrap();
    claims::write_claims_json(dir.path(), claims).unwrap();
    let back = claims::read_claims_json(dir.path()).unwrap();
    let same = |a: f64, b: f64| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
    let estimates = |c: &ClaimResult| {
        c.measured
            .iter()
            .chain(c.terms.iter().map(|t| &t.value))
            .flat_map(|e| [e.value, e.lo, e.hi])
            .collect::<Vec<_>>()
    };
    assert_eq!(back.len(), claims.len());
    let mut non_finite = 0;
    for (a, b) in claims.iter().zip(&back) {
        let (ea, eb) = (estimates(a), estimates(b));
        assert_eq!(ea.len(), eb.len(), "{}", a.id);
        for (x, y) in ea.iter().zip(&eb) {
            assert!(same(*x, *y), "{}: wrote {x}, read {y}", a.id);
            non_finite += usize::from(!x.is_finite());
        }
        assert_eq!((a.verdict, &a.detail), (b.verdict, &b.detail));
    }
    non_finite
}

#[test]
fn a_claim_the_plan_skips_is_skipped_with_its_reason_and_reads_nothing() {
    let band = || ClaimKind::Band {
        expr: sp(Value::Duration(MS), 4),
        lo: 0.0,
        hi: f64::INFINITY,
        strict: false,
    };
    let mut plan = with_claims(
        plan(),
        vec![claim("narrowed", band()), claim("kept", band())],
    );
    // What the language writes for a claim `--set` narrowed away (the results hold
    // the points, so only the plan's word can skip it).
    let why = "`--set lock=stock` leaves out `lock = cna`";
    plan.claims[0].skipped = Some(why.into());
    plan.claims[0].modes.clear();
    assert!(claims::points_read(&plan.claims[0]).is_empty());
    assert!(!claims::points_read(&plan.claims[1]).is_empty());
    let dir = results_dir(&plan);
    let r = claims::evaluate(&plan, &load_results(dir.path()).unwrap());
    let skipped = one(&r, "narrowed");
    assert_eq!(skipped.verdict, Verdict::Skipped);
    assert_eq!(skipped.detail, why);
    assert_eq!(one(&r, "kept").verdict, Verdict::Pass);
    // Undecided: it counts against the exit code like any skipped gating claim.
    assert_eq!(VerdictCounts::gating(&r).skipped, 1);
}
