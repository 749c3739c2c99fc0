//! `cargo run -p locklab-dsl --example check -- FILE [axis=values...]`: check a file
//! and print its diagnostics and plan table, without building the whole CLI.

use locklab_dsl::{load, print_plan_table, render, FsLoader, LoadOptions};

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: check FILE [axis=values...]");
        std::process::exit(2);
    };
    let overrides = args
        .filter_map(|a| {
            a.split_once('=')
                .map(|(k, v)| (k.to_string(), v.to_string()))
        })
        .collect();
    let checked = load(
        &path,
        &FsLoader::for_experiment(std::path::Path::new(&path), &[]),
        &LoadOptions {
            overrides,
            ..Default::default()
        },
    );
    if std::env::var_os("DIAG_LINES").is_some() {
        // One line per diagnostic: `file:line:col: severity: message`.
        for d in &checked.diagnostics {
            let text = checked
                .sources
                .iter()
                .find(|(p, _)| *p == d.file)
                .map_or("", |(_, t)| t.as_str());
            let (l, c) = d.line_col(text);
            println!("{}:{l}:{c}: {d}", d.file);
        }
    } else {
        print!("{}", render(&checked.diagnostics, &checked.sources, false));
    }
    if let Some(plan) = &checked.plan {
        print!("{}", print_plan_table(plan));
        if std::env::var_os("PLAN_JSON").is_some() {
            println!("{}", serde_json::to_string_pretty(plan).unwrap());
        }
    }
    std::process::exit(i32::from(checked.has_errors()) * 2);
}
