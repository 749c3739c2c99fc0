//! Inputs built to hurt: huge lines, deep nesting, long names, long expressions,
//! floods of errors. Each must give located diagnostics of bounded size, never a
//! panic or a stack overflow.

use crate::load_mem;
use locklab_dsl::render;

const HEAD: &str = "topology t { sockets = 1, cores = 2, transfer { llc = 40ns } }\n\
workload w = single { critical = 100ns, outside = 100ns }\n";

fn experiment(body: &str) -> String {
    format!(
        "{HEAD}experiment e {{\n  topology = t\n  workload = w\n  sweep {{ lock = [tas], threads = 1..2 }}\n  run {{ modes = [sim], duration = 1ms }}\n{body}\n}}\n"
    )
}

/// Check `text` as `f.lab`: it has errors, the first error is located in it, and
/// the rendering stays under `max_bytes`.
fn located(text: &str, message: &str, max_bytes: usize) -> String {
    let c = load_mem(&[("f.lab", text)], "f.lab");
    let shown = render(&c.diagnostics, &c.sources, false);
    assert!(c.has_errors(), "no error");
    let first = c.diagnostics.iter().find(|d| d.is_error()).unwrap();
    assert!(
        first.message.contains(message),
        "{}",
        &shown[..shown.len().min(2000)]
    );
    assert!(
        shown.contains("[f.lab:"),
        "{}",
        &shown[..shown.len().min(2000)]
    );
    assert!(
        shown.len() <= max_bytes,
        "{} bytes of diagnostics:\n{}",
        shown.len(),
        &shown[..shown.len().min(2000)]
    );
    shown
}

#[test]
fn a_column_past_65535_renders_a_window() {
    let text = format!("{}x\n", " ".repeat(70_000));
    let shown = located(&text, "found `x`", 2_000);
    assert!(shown.contains("[f.lab:1:70001]"), "{shown}");
}

#[test]
fn brackets_nested_100000_deep_are_refused_at_the_limit() {
    let text = format!("lock a = {}\n", "[".repeat(100_000));
    located(&text, "nested more than 40 deep", 2_000);
}

#[test]
fn a_megabyte_identifier_gives_a_short_diagnostic() {
    let text = format!("lock {} = mcsx\n", "a".repeat(1_000_000));
    located(&text, "unknown lock algorithm `mcsx`", 2_000);
    let text = experiment(&format!(
        "  expect {}[lock = tas] <= 1",
        "m".repeat(1_000_000)
    ));
    located(&text, "unknown metric", 3_000);
}

#[test]
fn a_claim_of_30000_terms_is_refused_without_recursion() {
    let text = experiment(&format!(
        "  expect bypass_max[lock = tas, threads = 2] <= 1{}",
        " + 1".repeat(30_000)
    ));
    located(&text, "at most 32 arithmetic operators", 3_000);
}

#[test]
fn a_flood_of_errors_is_counted_past_the_first_hundred() {
    let text: String = (0..5_000).map(|i| format!("lock l{i} = nope\n")).collect();
    let shown = located(&text, "unknown lock algorithm", 100_000);
    assert!(shown.contains("and 4900 more (4900 errors, 0 warnings) not shown"));
}

#[test]
fn an_axis_has_at_most_100000_values() {
    let values: Vec<String> = (0..100_001).map(|i| i.to_string()).collect();
    let text = HEAD.to_string()
        + &format!(
            "experiment e {{\n  topology = t\n  workload = w\n  sweep {{ lock = [tas], threads = [1], x = [{}, 1..5] }}\n  run {{ modes = [sim], duration = 1ms }}\n}}\n",
            values.join(",")
        );
    located(&text, "has more than 100000 values", 3_000);
}

#[test]
fn a_span_never_splits_a_character() {
    // A multi-byte character right after the experiment block (the fuzz's find).
    for tail in ["é", "µs", "\u{feff}", "±1"] {
        let text = experiment("") + tail;
        let c = load_mem(&[("f.lab", &text)], "f.lab");
        for d in &c.diagnostics {
            assert!(text.is_char_boundary(d.span.start) && text.is_char_boundary(d.span.end));
        }
        assert!(render(&c.diagnostics, &c.sources, false).contains("after the experiment block"));
    }
}

#[test]
fn claims_are_bounded_in_number_and_in_the_points_they_read() {
    let claims: String = (0..1_001)
        .map(|i| format!("  expect c{i}: bypass_max[lock = tas, threads = 2] <= 1\n"))
        .collect();
    located(&experiment(&claims), "at most 1000 claims", 3_000);
    // 100 trends over a 20,000-value axis: two million steps to resolve.
    let values: Vec<String> = (0..20_000).map(|i| i.to_string()).collect();
    let trends: String = (0..100)
        .map(|_| "  expect bypass_max[lock = tas] increasing over x\n".to_string())
        .collect();
    let text = HEAD.to_string()
        + &format!(
            "experiment e {{\n  topology = t\n  workload = w\n  sweep {{ lock = [tas], threads = [1], x = [{}] }}\n  run {{ modes = [sim], duration = 1ms }}\n{trends}}}\n",
            values.join(",")
        );
    located(&text, "the claims and plots ask for too much", 3_000);
}

#[test]
fn a_chain_of_100000_negations_neither_overflows_nor_is_refused() {
    // `!` and `not` repeat without recursion: the parser, the tree, the sweep's
    // filter and the plan see at most one negation per bracket level.
    for (op, n, kept) in [("!", 100_001, 2), ("!", 100_000, 1), ("not ", 100_001, 2)] {
        let text = HEAD.to_string()
            + &format!(
                "experiment e {{\n  topology = t\n  workload = w\n  sweep {{ lock = [tas], threads = [1, 2] where {}threads == 1 }}\n  run {{ modes = [sim], duration = 1ms }}\n}}\n",
                op.repeat(n)
            );
        let c = load_mem(&[("f.lab", &text)], "f.lab");
        let plan = c
            .plan
            .as_ref()
            .unwrap_or_else(|| panic!("{}", crate::show(&c)));
        assert_eq!(plan.points.len(), 1, "{op} x {n}");
        assert_eq!(plan.points[0].threads, kept, "{op} x {n}");
    }
    // Inside brackets, each level holds a chain of its own.
    let deep = format!("{}threads == 1{}", "!!(".repeat(30), ")".repeat(30));
    let text = experiment("").replace(
        "threads = 1..2 }",
        &format!("threads = 1..2 where {deep} }}"),
    );
    let c = load_mem(&[("f.lab", &text)], "f.lab");
    assert!(c.plan.is_some(), "{}", crate::show(&c));
}

#[test]
fn crlf_and_lone_cr_keep_line_numbers() {
    let text = "lock a = mcs\r\nlock b = tas\r\nlock c = nosuch\r\nlock d = ticket\r\n";
    let c = load_mem(&[("f.lab", text)], "f.lab");
    let shown = render(&c.diagnostics, &c.sources, false);
    assert!(shown.contains("[f.lab:3:10]"), "{shown}");
    assert!(shown.contains(" 4 │ lock d = ticket"), "{shown}");
    assert!(!shown.contains(" 3 │ lock d"), "{shown}");
    assert!(!shown.contains('\r'), "{shown:?}");
    // A lone `\r` is no line break: said once, and the line is shown as one.
    let text = "lock a = mcs\rlock b = tas\r";
    let c = load_mem(&[("f.lab", text)], "f.lab");
    let shown = render(&c.diagnostics, &c.sources, false);
    assert!(
        shown.contains("carriage return (U+000D) without a line feed"),
        "{shown}"
    );
    assert!(!shown.contains(" 0 │"), "{shown}");
    assert!(!shown.contains('\r'), "{shown:?}");
    assert_eq!(
        c.diagnostics
            .iter()
            .filter(|d| d.message.contains("carriage return"))
            .count(),
        1
    );
}

#[test]
fn a_misspelt_400000_character_name_is_checked_at_once() {
    // "Did you mean" compared the two names cell by cell: quadratic in their length.
    let n = 400_000;
    let text = format!(
        "lock {} = mcs\n{}",
        "n".repeat(n),
        experiment("").replace(
            "lock = [tas]",
            &format!("lock = [tas, {}m]", "n".repeat(n - 1))
        )
    );
    let start = std::time::Instant::now();
    let c = load_mem(&[("f.lab", &text)], "f.lab");
    assert!(c.has_errors());
    assert!(
        start.elapsed() < std::time::Duration::from_secs(20),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn an_unknown_escape_in_a_set_value_is_an_error() {
    use locklab_dsl::{load, LoadOptions, MemLoader};
    let text = experiment("").replace("lock = [tas]", "lock = [tas], tag = [\"a\"]");
    let loader = MemLoader([("f.lab".to_string(), text)].into());
    let opts = LoadOptions {
        overrides: vec![("tag".into(), "\"a\\qb\"".into())],
        ..Default::default()
    };
    let c = load("f.lab", &loader, &opts);
    assert!(
        c.diagnostics
            .iter()
            .any(|d| d.message.contains("unknown escape `\\q`")),
        "{}",
        render(&c.diagnostics, &c.sources, false)
    );
    // The escapes a string knows are read, and written back the same way.
    let opts = LoadOptions {
        overrides: vec![("tag".into(), "\"a\\n\\t\\\"\\\\b\"".into())],
        ..Default::default()
    };
    let c = load("f.lab", &loader, &opts);
    let plan = c
        .plan
        .unwrap_or_else(|| panic!("{}", render(&c.diagnostics, &c.sources, false)));
    assert_eq!(
        plan.points[0].axes["tag"],
        locklab_model::plan::Value::Str("a\n\t\"\\b".into())
    );
}

/// A sweep of many points of a microsecond each is not estimated at nothing: every
/// record costs its set-up and its write (`SIM_SECS_PER_RECORD`), which is what the
/// 24-hour guard of `check` must count for a sweep of 100,000 such points.
#[test]
fn many_tiny_points_cost_their_records() {
    use locklab_model::cost::{estimate_secs, Timing, SIM_SECS_PER_RECORD};
    let text = "topology tiny { sockets = 1, cores = 4, transfer { llc = 40ns } }
experiment many {
  topology = tiny
  workload = single { critical = 100ns }
  sweep { lock = [tas, mcs], threads = [1, 2], t = 1..500 }
  run { modes = [sim], duration = 1us, warmup = 0ns, repetitions = 3 }
}
";
    let c = load_mem(&[("e.lab", text)], "e.lab");
    let plan = c.plan.expect("a valid experiment");
    assert_eq!(plan.points.len(), 2_000);
    let t = Timing::of(&plan.run, false);
    let secs = estimate_secs(&plan.points, t, locklab_model::plan::Mode::Sim);
    assert!(secs >= 6_000.0 * SIM_SECS_PER_RECORD, "{secs} s");
    assert!(secs < 6_000.0 * SIM_SECS_PER_RECORD + 1.0, "{secs} s");
}
