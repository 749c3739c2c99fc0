//! `locklab topo` prints what `locklab check` accepts (the runner cannot depend on the
//! language, so this lives here, where every crate is linked).

use locklab_runner::host::{detect_in, topology_as_lab};
use std::path::PathBuf;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("runner/tests/fixtures")
        .join(name)
}

#[test]
fn the_printed_topology_is_valid_experiment_language() {
    for f in ["xeon_2s2c2t", "vm_2vcpu"] {
        let lab = topology_as_lab(&detect_in(&fixture(f)));
        let files = [("host.lab".to_string(), lab.clone())]
            .into_iter()
            .collect();
        let checked = locklab_dsl::load(
            "host.lab",
            &locklab_dsl::MemLoader(files),
            &Default::default(),
        );
        assert!(
            checked.is_library(),
            "{f}: {:?}\n{lab}",
            checked.diagnostics
        );
    }
}
