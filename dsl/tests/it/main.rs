//! The one integration-test binary of the language crate.

mod corpus;
mod experiments;
mod files;
mod fuzz;
mod hostile;
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

/// The rendered diagnostics, for assertion messages.
pub fn show(c: &Checked) -> String {
    locklab_dsl::render(&c.diagnostics, &c.sources, false)
}
