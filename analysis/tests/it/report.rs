use crate::common::*;
use locklab_analysis::report::build_report;
use locklab_analysis::{load_results, plots};
use locklab_model::plan::*;

fn plan_with_claims_and_plots() -> Plan {
    let mut p = plan();
    p.claims = vec![
        claim(
            "s10",
            ClaimKind::Band {
                expr: metric(mref(
                    "speedup",
                    &[
                        ("lock", s("cna")),
                        ("threshold", Value::Duration(10 * MS)),
                        ("threads", Value::Int(16)),
                    ],
                    Some("stock"),
                )),
                lo: 1.7,
                hi: 2.7,
                strict: false,
            },
        ),
        claim(
            "edge",
            ClaimKind::Band {
                expr: metric(mref(
                    "throughput_ops_s",
                    &[("lock", s("stock")), ("threads", Value::Int(16))],
                    None,
                )),
                lo: 0.5e6,
                hi: f64::INFINITY,
                strict: false,
            },
        ),
    ];
    p.plots = vec![
        PlotSpec {
            title: Some("Speedup by threshold".into()),
            metric: "speedup".into(),
            x: "threshold".into(),
            group_by: vec!["threads".into()],
            select: vec![],
            baseline: Some("stock".into()),
            log_x: true,
            log_y: false,
            targets: vec![],
            skipped: None,
        },
        PlotSpec {
            title: Some("Wait p99 by CPU".into()),
            metric: "wait_p99_ns".into(),
            x: "cpu".into(),
            group_by: vec![],
            select: vec![("threads".into(), Value::Int(16))],
            baseline: None,
            log_x: false,
            log_y: false,
            targets: vec![],
            skipped: None,
        },
        PlotSpec {
            title: Some("Remote worst wait".into()),
            metric: "wait_max_ns".into(),
            x: "threshold".into(),
            group_by: vec![],
            select: vec![
                ("lock".into(), s("cna")),
                ("cross_node".into(), Value::Bool(true)),
            ],
            baseline: None,
            log_x: true,
            log_y: false,
            targets: vec![],
            skipped: None,
        },
        PlotSpec {
            title: Some("Node to node".into()),
            metric: "wait_p99_ns".into(),
            x: "from_node".into(),
            group_by: vec!["to_node".into()],
            select: vec![
                ("lock".into(), s("cna")),
                ("threshold".into(), Value::Duration(MS)),
                ("threads".into(), Value::Int(16)),
            ],
            baseline: None,
            log_x: false,
            log_y: false,
            targets: vec![],
            skipped: None,
        },
        PlotSpec {
            title: Some("Broken".into()),
            metric: "no_such_metric".into(),
            x: "threads".into(),
            group_by: vec![],
            select: vec![],
            baseline: None,
            log_x: false,
            log_y: false,
            targets: vec![],
            skipped: None,
        },
    ];
    resolve(&mut p);
    p
}

#[test]
fn figures_render_as_svg_and_png() {
    let plan = plan_with_claims_and_plots();
    let dir = results_dir(&plan);
    let r = load_results(dir.path()).unwrap();
    let out = dir.path().join("figs");
    let rendered = plots::render_all(&r, &out).unwrap();
    let names: Vec<&str> = rendered.figures.iter().map(|f| f.name.as_str()).collect();
    for want in [
        "throughput_vs_threads-sim",
        // The plan's plot 1 is speedup vs threshold: it replaces the default figure.
        "plot1-speedup-sim",
        "jain_vs_throughput-sim",
        "wait_ccdf-sim",
        "wait_per_thread-sim",
    ] {
        assert!(names.contains(&want), "{want} missing from {names:?}");
    }
    assert!(
        names.iter().any(|n| n.starts_with("wait_per_thread-")),
        "{names:?}"
    );
    assert!(
        names.iter().any(|n| n.starts_with("wait_per_node-")),
        "{names:?}"
    );
    assert!(
        names.iter().any(|n| n.starts_with("handoff_heatmap-")),
        "{names:?}"
    );
    assert!(
        names.iter().any(|n| n.starts_with("plot1-speedup")),
        "{names:?}"
    );
    assert!(
        names.iter().any(|n| n.starts_with("plot2-wait_p99_ns")),
        "{names:?}"
    );
    // The broken plot is a warning, not a failure.
    assert!(
        rendered
            .warnings
            .iter()
            .any(|w| w.contains("no_such_metric")),
        "{:?}",
        rendered.warnings
    );
    for f in &rendered.figures {
        let title = f.title.replace('\'', "&apos;");
        assert!(
            f.svg.contains(&f.title) || f.svg.contains(&title),
            "{} lacks its title",
            f.name
        );
        let svg = std::fs::read_to_string(&f.svg_path).unwrap();
        assert!(svg.starts_with("<svg") || svg.contains("<svg"));
        let png = std::fs::read(&f.png_path).unwrap();
        assert!(png.len() > 5_000, "{} is {} bytes", f.name, png.len());
        assert_eq!(&png[1..4], b"PNG");
    }
    let t = rendered
        .figures
        .iter()
        .find(|f| f.name == "throughput_vs_threads-sim")
        .unwrap();
    assert!(t.svg.contains("throughput (ops/s)") && t.svg.contains("threads"));
    assert!(t.svg.contains("stock"), "legend names the locks");
}

#[test]
fn figures_follow_the_data() {
    // One thread count, no baseline anywhere: no throughput-vs-threads, no speedup.
    let mut plan = plan();
    plan.points.retain(|p| p.threads == 16);
    for (i, p) in plan.points.iter_mut().enumerate() {
        p.index = i;
    }
    plan.axes.retain(|a| a.name != "threads");
    let dir = results_dir(&plan);
    let r = load_results(dir.path()).unwrap();
    let rendered = plots::render_all(&r, &dir.path().join("figs")).unwrap();
    let names: Vec<&str> = rendered.figures.iter().map(|f| f.name.as_str()).collect();
    assert!(
        !names.iter().any(|n| n.starts_with("throughput_vs_threads")),
        "{names:?}"
    );
    assert!(!names.iter().any(|n| n.starts_with("speedup")), "{names:?}");
    assert!(names.contains(&"jain_vs_throughput-sim"));
}

#[test]
fn report_leads_with_claims_and_inlines_svg() {
    let plan = plan_with_claims_and_plots();
    let dir = results_dir(&plan);
    let summary = build_report(dir.path()).unwrap();
    assert!(summary.index_html.ends_with("report/index.html"));
    let html = std::fs::read_to_string(&summary.index_html).unwrap();
    let md = std::fs::read_to_string(&summary.report_md).unwrap();
    assert!(dir.path().join("claims.json").exists());
    let claims_at = html.find("class=\"claims\"").expect("claims table");
    let svg_at = html.find("<svg").expect("inline svg");
    let hand_at = html.find("Node-to-node").unwrap();
    let manifest_at = html.find("id=\"manifest\"").unwrap();
    assert!(claims_at < svg_at && svg_at < hand_at && hand_at < manifest_at);
    assert!(html.contains("verdict pass") && html.contains("verdict inconclusive"));
    assert!(html.contains("v15 cover letter") && html.contains("cna.lab:10"));
    assert!(
        !html.contains("http://") || html.matches("http://").all(|_| html.contains("xmlns")),
        "no network references"
    );
    assert!(!html.contains("<script") && !html.contains("<link"));
    assert!(
        html.contains("labhost")
            && html.contains("Test CPU")
            && html.contains("locklab run cna.lab")
    );
    assert!(
        html.contains("claim edge"),
        "inconclusive claims are warned about"
    );
    assert!(md.contains("| claim | source | where | expected | measured | verdict |"));
    assert!(md.contains(".png)"));
    assert!(md.contains("node 0 |"), "node-to-node table");
    for f in &summary.figures {
        assert!(f.exists());
    }
}

#[test]
fn too_many_series_become_small_multiples_and_none_is_dropped() {
    // lock × threshold × batch: 24 series against threads, more than one figure
    // holds. The threshold is cna's own parameter, so it stays with the lock (colour:
    // the lock, marker and dash: the threshold); each batch gets its own figure and
    // every series stays.
    let mut plan = plan();
    let base = std::mem::take(&mut plan.points);
    for b in 0..4i64 {
        for p in &base {
            let mut q = p.clone();
            q.index = plan.points.len();
            q.id = format!("{},batch={b}", p.id);
            q.axes.insert("batch".into(), Value::Int(b));
            q.seed += 100 * b as u64;
            plan.points.push(q);
        }
    }
    plan.axes.push(Axis {
        name: "batch".into(),
        values: (0..4).map(Value::Int).collect(),
        zip_group: None,
    });
    let dir = results_dir(&plan);
    let r = load_results(dir.path()).unwrap();
    let rendered = plots::render_all(&r, &dir.path().join("figs")).unwrap();
    let tp: Vec<&plots::Figure> = rendered
        .figures
        .iter()
        .filter(|f| f.name.starts_with("throughput_vs_threads"))
        .collect();
    let names: Vec<&str> = tp.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        names,
        (0..4)
            .map(|b| format!("throughput_vs_threads-batch-{b}-sim"))
            .collect::<Vec<_>>()
    );
    let thresholds: Vec<String> = plan
        .axes
        .iter()
        .find(|a| a.name == "threshold")
        .unwrap()
        .values
        .iter()
        .map(|v| v.label())
        .collect();
    for (b, f) in tp.iter().enumerate() {
        assert!(f.title.contains(&format!("batch={b}")), "{}", f.title);
        for t in &thresholds {
            assert!(
                f.svg.contains(&format!("cna, threshold={t}")),
                "{} lacks cna at {t}",
                f.name
            );
        }
        assert!(f.svg.contains("stock, threshold=10ms"), "{}", f.name);
    }
    // The per-thread figure names the points it shows.
    let per_thread = rendered
        .figures
        .iter()
        .find(|f| f.name == "wait_per_thread-sim")
        .expect("a per-thread figure");
    assert!(per_thread.svg.contains("threads=16"), "{}", per_thread.name);
    assert!(per_thread.svg.contains("batch="), "{}", per_thread.name);
}

/// A plot `--set` left nothing of keeps its place: it is not drawn, it is said, the
/// plots after it keep their numbers, and the default figure it would have replaced
/// is drawn.
#[test]
fn a_plot_the_plan_does_not_draw_keeps_its_number() {
    let mut plan = plan_with_claims_and_plots();
    plan.plots[0].targets.clear();
    plan.plots[0].skipped = Some("`--set lock=cna` leaves out `lock = stock`".into());
    let dir = results_dir(&plan);
    let r = load_results(dir.path()).unwrap();
    let rendered = plots::render_all(&r, &dir.path().join("figs")).unwrap();
    let names: Vec<&str> = rendered.figures.iter().map(|f| f.name.as_str()).collect();
    assert!(!names.iter().any(|n| n.starts_with("plot1-")), "{names:?}");
    // The default figure plot 1 stood in for is drawn again.
    assert!(names.contains(&"speedup_vs_threshold-sim"), "{names:?}");
    assert!(
        names.iter().any(|n| n.starts_with("plot2-wait_p99_ns")),
        "{names:?}"
    );
    assert!(
        rendered
            .warnings
            .iter()
            .any(|w| w == "plot 1 is not drawn: `--set lock=cna` leaves out `lock = stock`"),
        "{:?}",
        rendered.warnings
    );
}
