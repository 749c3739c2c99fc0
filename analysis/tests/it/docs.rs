//! `docs/metrics.md` states the metric registry: its metric table is exactly the one
//! generated here from `locklab_model::metrics::METRICS`.

use locklab_model::metrics::{Metric, METRICS};

const DOC: &str = include_str!("../../../docs/metrics.md");
const BEGIN: &str = "<!-- metric table: generated from the registry; a test checks it -->\n";
const END: &str = "<!-- end of metric table -->";

fn values(m: &Metric) -> String {
    let num = |x: f64| locklab_analysis::fmt_num(x);
    match m.range {
        (lo, hi) if hi.is_infinite() => format!("≥ {}", num(lo)),
        (lo, hi) => format!("{} to {}", num(lo), num(hi)),
    }
}

/// The table as the registry defines it, one row per metric in registry order.
fn table() -> String {
    let mut out = String::from(
        "| metric | tables | unit | rows combine | better | values | definition |\n\
         | --- | --- | --- | --- | --- | --- | --- |\n",
    );
    for m in METRICS {
        let tables = if m.is_derived() {
            "derived".to_string()
        } else {
            m.tables
                .iter()
                .map(|t| t.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        out.push_str(&format!(
            "| `{}`{} | {tables} | {} | {} | {} | {} | {} |\n",
            m.name,
            if m.optional { " †" } else { "" },
            m.unit.as_str(),
            m.combine.as_str(),
            m.better.as_str(),
            values(m),
            m.doc.replace('|', "\\|"),
        ));
    }
    out
}

#[test]
fn the_metric_table_of_the_docs_is_the_registry() {
    let start = DOC
        .find(BEGIN)
        .expect("docs/metrics.md has the table's opening marker")
        + BEGIN.len();
    let len = DOC[start..]
        .find(END)
        .expect("docs/metrics.md has the table's closing marker");
    let expected = table();
    assert!(
        DOC[start..start + len] == expected,
        "docs/metrics.md's metric table differs from the registry; it should read:\n\n{expected}"
    );
}
