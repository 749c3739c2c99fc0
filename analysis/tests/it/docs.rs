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

const RESULTS_DOC: &str = include_str!("../../../docs/results.md");
const COLUMNS_BEGIN: &str =
    "<!-- column tables: generated from the store's schema; a test checks it -->\n";
const COLUMNS_END: &str = "<!-- end of column tables -->";

/// The column tables of `docs/results.md` as `store::schema` and the registry define
/// them: one table per file, every column in order.
fn column_tables() -> String {
    use locklab_analysis::store::schema::{layout, stored, Part, Stored};
    use locklab_analysis::store::TABLES_SCHEMA_VERSION;
    use locklab_model::metrics::{self, Table};
    let mut out = format!("Layout version {TABLES_SCHEMA_VERSION}.\n");
    for table in [Table::Points, Table::Threads, Table::Handoffs] {
        out.push_str(&format!(
            "\n### `{}.parquet`\n\n| column | type | unit | null | meaning |\n| --- | --- | --- | --- | --- |\n",
            table.as_str()
        ));
        let mut row = |name: &str, dtype: &str, unit: Option<&str>, null: &str, doc: &str| {
            out.push_str(&format!(
                "| {name} | {dtype} | {} | {null} | {} |\n",
                unit.unwrap_or(""),
                doc.replace('|', "\\|")
            ));
        };
        for part in layout(table) {
            match part {
                Part::Fixed(cols) => {
                    for c in *cols {
                        let null = if c.nullable { "yes" } else { "" };
                        row(&format!("`{}`", c.name), c.dtype, c.unit, null, c.doc);
                    }
                }
                Part::Axes => row(
                    "*axis*`_ns`, *axis*`_bytes`, *axis*",
                    "f64 or str",
                    Some("from the suffix"),
                    "",
                    "one column per sweep axis of the plan, in axis order: the axis's name and its unit's suffix; numbers as f64, names as str (an axis named like an identity column is not repeated)",
                ),
                Part::Metrics => {
                    for m in metrics::in_table(table) {
                        let s = stored(table, m.name);
                        if s == Stored::Extra {
                            continue;
                        }
                        let null = if s == Stored::Measure { "n/a" } else { "" };
                        row(&format!("`{}`", m.name), s.dtype(), Some(m.unit.as_str()), null, m.label);
                    }
                }
                Part::Extra => {
                    let from_extra: Vec<String> = metrics::in_table(table)
                        .filter(|m| stored(table, m.name) == Stored::Extra)
                        .map(|m| format!("`{}`", m.name))
                        .collect();
                    row(
                        "*key*",
                        "f64",
                        Some("from the suffix"),
                        "yes",
                        &format!(
                            "one column per key of the records' `extra` map, sorted by name: workload-specific metrics ({}) and diagnostics; null where a record lacks the key",
                            from_extra.join(", ")
                        ),
                    );
                }
            }
        }
    }
    out
}

#[test]
fn the_column_tables_of_the_results_docs_are_the_schema() {
    let start = RESULTS_DOC
        .find(COLUMNS_BEGIN)
        .expect("docs/results.md has the tables' opening marker")
        + COLUMNS_BEGIN.len();
    let len = RESULTS_DOC[start..]
        .find(COLUMNS_END)
        .expect("docs/results.md has the tables' closing marker");
    let expected = column_tables();
    assert!(
        RESULTS_DOC[start..start + len] == expected,
        "docs/results.md's column tables differ from the schema; they should read:\n\n{expected}"
    );
}
