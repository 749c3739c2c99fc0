//! Every file in `experiments/` and `experiments/lib/` checks without errors; every
//! experiment yields a plan with points and claims.

use crate::show;
use locklab_dsl::{load, FsLoader, LoadOptions};
use std::path::Path;

fn lab_files(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "lab"))
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    out.sort();
    out
}

fn root() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../experiments")
}

#[test]
fn every_experiment_checks_and_plans() {
    let files = lab_files(&root());
    assert!(files.len() >= 5, "{files:?}");
    for f in files {
        let c = load(
            &f,
            &FsLoader::for_experiment(Path::new(&f), &[]),
            &LoadOptions::default(),
        );
        assert!(!c.has_errors(), "{f}:\n{}", show(&c));
        assert!(c.diagnostics.is_empty(), "{f} has warnings:\n{}", show(&c));
        let plan = c.plan.unwrap_or_else(|| panic!("{f}: no plan"));
        assert!(!plan.points.is_empty(), "{f}: no points");
        assert!(!plan.claims.is_empty(), "{f}: no claims");
        assert!(!plan.sources.is_empty());
    }
}

#[test]
fn every_library_checks() {
    let files = lab_files(&root().join("lib"));
    assert!(files.len() >= 3, "{files:?}");
    for f in files {
        let c = load(
            &f,
            &FsLoader::for_experiment(Path::new(&f), &[]),
            &LoadOptions::default(),
        );
        assert!(c.diagnostics.is_empty(), "{f}:\n{}", show(&c));
        assert!(c.is_library(), "{f} should be a library");
    }
}

/// The language reference's complete examples (blocks that start with a top-level
/// item and elide nothing) check without errors.
#[test]
fn reference_examples_check() {
    let doc = locklab_dsl::LANGUAGE_REFERENCE;
    let lib = std::fs::read_to_string(root().join("lib/x5-4.lab")).unwrap();
    let row = vec!["50"; 144].join(",");
    let csv = vec![row; 144].join("\n");
    let mut checked_blocks = 0;
    for (i, block) in doc.split("```lab\n").skip(1).enumerate() {
        let block = block.split("```").next().unwrap();
        let first = block
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.starts_with('#'))
            .unwrap_or("");
        let top = [
            "use ",
            "topology ",
            "lock ",
            "workload ",
            "placement ",
            "experiment ",
        ];
        if block.contains("...") || !top.iter().any(|k| first.starts_with(k)) {
            continue;
        }
        let c = crate::load_mem(
            &[
                ("doc.lab", block),
                ("lib/x5-4.lab", &lib),
                ("x5-4-latency.csv", &csv),
            ],
            "doc.lab",
        );
        assert!(!c.has_errors(), "block {i}:\n{block}\n{}", show(&c));
        checked_blocks += 1;
    }
    assert!(checked_blocks >= 8, "only {checked_blocks} blocks checked");
}

#[test]
fn an_experiments_properties_may_share_a_line() {
    // As in a block: separated by newlines, `,` or `;`.
    let text = "workload w = single { critical = 0ns, outside = 0ns }
experiment c {
  topology = host, workload = w; lock = tas,
  threads = 2
  run { modes = [sim], duration = 1ms }
}
";
    let c = crate::load_mem(&[("e.lab", text)], "e.lab");
    assert!(c.plan.is_some(), "{}", crate::show(&c));
}

#[test]
fn keys_in_a_statement_that_did_not_parse_are_not_also_missing() {
    // A line that does not parse (here two properties without a separator): the
    // keys it gives are not then reported as missing, but a key given nowhere still
    // is.
    let text = "workload w = single { critical = 0ns, outside = 0ns }
experiment c {
  topology = host workload = w, lock = tas
  run { modes = [sim], duration = 1ms }
}
";
    let c = crate::load_mem(&[("e.lab", text)], "e.lab");
    let errors: Vec<&str> = c
        .diagnostics
        .iter()
        .filter(|d| d.is_error())
        .map(|d| d.message.as_str())
        .collect();
    assert_eq!(errors.len(), 2, "{}", crate::show(&c));
    assert!(
        errors.iter().any(|e| e.starts_with("expected")),
        "{}",
        crate::show(&c)
    );
    assert!(errors.contains(&"experiment `c` is missing `threads`"));
}

/// Every axis of every experiment narrowed to each one of its values (`--set
/// axis=value`): the plan keeps every claim of the file, in order, each either read
/// (its references resolved to points of the narrowed plan) or skipped with a reason
/// and reading nothing; every point takes the value (in every mode: `--set` wins
/// over the mode blocks); and whatever fails is said as an error, never a panic.
#[test]
fn narrowing_an_axis_to_one_value_loses_no_claim() {
    use locklab_model::plan::{ClaimKind, Expr, Target, TrendSeries};
    let targets = |k: &ClaimKind| -> Vec<Target> {
        match k {
            ClaimKind::Band { expr, .. } => {
                expr.metrics().iter().map(|m| m.target.clone()).collect()
            }
            ClaimKind::Ordering { exprs, .. } => exprs
                .iter()
                .flat_map(Expr::metrics)
                .map(|m| m.target.clone())
                .collect(),
            ClaimKind::Trend { series, .. } => match series {
                TrendSeries::Steps { steps } => {
                    steps.iter().map(|s| s.metric.target.clone()).collect()
                }
                TrendSeries::Rows { target } => vec![target.clone()],
            },
        }
    };
    let (mut planned, mut refused) = (0, 0);
    for f in lab_files(&root()) {
        let loader = FsLoader::for_experiment(Path::new(&f), &[]);
        let whole = load(&f, &loader, &LoadOptions::default()).plan.unwrap();
        let ids: Vec<&str> = whole.claims.iter().map(|c| c.id.as_str()).collect();
        for axis in &whole.axes {
            for v in &axis.values {
                let opts = LoadOptions {
                    overrides: vec![(axis.name.clone(), v.label())],
                    ..Default::default()
                };
                let c = load(&f, &loader, &opts);
                let what = format!("{f} --set {}={}", axis.name, v.label());
                let Some(plan) = c.plan.as_ref() else {
                    assert!(c.has_errors(), "{what}: no plan and no error");
                    refused += 1;
                    continue;
                };
                planned += 1;
                let got: Vec<&str> = plan.claims.iter().map(|c| c.id.as_str()).collect();
                assert_eq!(got, ids, "{what}: claims lost or reordered");
                for p in &plan.points {
                    assert_eq!(p.axes.get(&axis.name), Some(v), "{what}: point {}", p.id);
                }
                for cl in &plan.claims {
                    let ts = targets(&cl.kind);
                    match &cl.skipped {
                        Some(why) => {
                            assert!(why.starts_with("`--set "), "{what}: {}: {why}", cl.id);
                            assert!(cl.modes.is_empty(), "{what}: {}", cl.id);
                            assert!(ts.iter().all(Target::is_unresolved), "{what}: {}", cl.id);
                        }
                        None => {
                            assert!(!cl.modes.is_empty(), "{what}: {}", cl.id);
                            for t in ts {
                                assert!(
                                    (t.point as usize) < plan.points.len(),
                                    "{what}: {}",
                                    cl.id
                                );
                                assert!(
                                    t.baseline.is_none_or(|b| (b as usize) < plan.points.len()),
                                    "{what}: {}",
                                    cl.id
                                );
                            }
                        }
                    }
                }
            }
        }
    }
    // Refused: one axis of a `zip` set alone, or a native placement of 2 CPUs given
    // more threads (docs/language.md, "Sweeps").
    assert!(
        planned > 4 * refused,
        "{planned} planned, {refused} refused"
    );
}
