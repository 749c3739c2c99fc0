//! The one integration-test binary of the language crate.

mod corpus;
mod experiments;
mod files;
mod fuzz;
mod hostile;
mod locks;
mod narrow;
mod props;
mod snapshots;
mod targets;
mod topology;

use locklab_dsl::{load, Checked, LoadOptions, MemLoader};

/// Load `main` from in-memory files.
pub fn load_mem(files: &[(&str, &str)], main: &str) -> Checked {
    let loader = MemLoader(
        files
            .iter()
            .map(|(p, t)| (p.to_string(), t.to_string()))
            .collect(),
    );
    load(main, &loader, &LoadOptions::default())
}

/// The plan of a small simulated experiment over topology `t` and lock `lock`,
/// after the definitions `defs` (which must define `t`); the rendered diagnostics
/// when it has errors.
pub fn demo_plan(defs: &str, lock: &str) -> Result<locklab_model::plan::Plan, String> {
    let text = format!(
        "{defs}
workload hot = single {{ critical = 100ns, outside = 200ns }}
experiment demo {{
  topology = t
  workload = hot
  lock = {lock}
  threads = 2
  run {{ modes = [sim], duration = 1ms }}
}}
"
    );
    let c = load_mem(&[("e.lab", &text)], "e.lab");
    match c.plan {
        Some(p) => Ok(p),
        None => Err(show(&c)),
    }
}

/// The rendered diagnostics, for assertion messages.
pub fn show(c: &Checked) -> String {
    locklab_dsl::render(&c.diagnostics, &c.sources, false)
}
