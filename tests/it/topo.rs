//! `locklab topo` prints what `locklab check` accepts (the runner cannot depend on the
//! language, so this lives here, where every crate is linked).

use locklab_runner::host::{detect_in, topology_as_lab};
use std::path::PathBuf;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("runner/tests/fixtures")
        .join(name)
}

/// `lab` checked as the file `host.lab`, in memory.
fn check(lab: &str) -> locklab_dsl::Checked {
    let files = [("host.lab".to_string(), lab.to_string())]
        .into_iter()
        .collect();
    locklab_dsl::load(
        "host.lab",
        &locklab_dsl::MemLoader(files),
        &Default::default(),
    )
}

#[test]
fn the_printed_topology_is_valid_experiment_language() {
    for f in ["xeon_2s2c2t", "vm_2vcpu"] {
        let lab = topology_as_lab(&detect_in(&fixture(f)));
        let checked = check(&lab);
        assert!(!lab.contains("measured_on"), "nothing was measured: {lab}");
        assert!(
            checked.is_library(),
            "{f}: {:?}\n{lab}",
            checked.diagnostics
        );
    }
}

/// What `topo --measure` prints on this machine is one valid topology item, which
/// `check` accepts as a library; one pass (of the default five) is enough to see it.
#[test]
fn the_measured_topology_passes_check() {
    use crate::{locklab, machine, stderr, stdout};
    let _m = machine();
    let out = locklab()
        .args(["topo", "--measure", "--passes", "1", "--name", "measured"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lab = stdout(&out);
    assert!(lab.contains("topology measured {"), "{lab}");
    assert!(lab.contains("median of 1 pass"), "{lab}");
    // Measured costs (where a pair of CPUs could be measured: the fit's header says
    // so) say where they hold, so that a comparison on another CPU can say it
    // compares two machines, and carry the measured pause.
    if lab.contains("# fitted") {
        assert!(lab.contains("  measured_on = \""), "{lab}");
        assert!(lab.contains("  pause   = "), "{lab}");
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("measured.lab");
    std::fs::write(&file, &lab).unwrap();
    let checked = locklab().arg("check").arg(&file).output().unwrap();
    assert_eq!(
        checked.status.code(),
        Some(0),
        "{}\n{lab}",
        stderr(&checked)
    );
    let zero = locklab()
        .args(["topo", "--measure", "--passes", "0"])
        .output()
        .unwrap();
    assert_eq!(zero.status.code(), Some(2), "{}", stderr(&zero));
}

/// Every constant `topo --measure` writes into the topology item is experiment
/// language `check` accepts: the memory block's keys (`migratory` a boolean among
/// shares and durations, `request_arrival` and `drain_overlap` shares), the futex
/// block, `overhead`, `work_overhead`, `pause`.
#[test]
fn a_topology_with_every_measured_constant_is_valid_experiment_language() {
    use locklab_runner::calibrate::FutexCosts;
    use locklab_runner::host::{topology_as_lab_with, Measured, Transfer};
    let measured = Measured {
        transfer: Transfer {
            smt_ns: 9.0,
            llc_ns: 20.1,
            socket_ns: 20.1,
            remote_ns: 20.1,
        },
        atomic_ns: 1.8,
        fence_ns: Some(1.5),
        pause_ns: Some(24.2),
        upgrade: Some(1.62),
        run_ahead_ns: Some(223.4),
        rmw_run_ahead: Some(0.99),
        reread_overlap: Some(0.97),
        request_arrival: Some(0.64),
        drain_overlap: Some(0.91),
        migratory: Some(true),
        forward_stall_ns: Some(3.8),
        steal_ns: Some(43.7),
        overhead_ns: Some(2.0),
        work_overhead_ns: Some(10.2),
        futex: Some(FutexCosts {
            wait: 450.0,
            wake: 234.0,
            wake_sleeper: 6080.0,
            latency: 19055.0,
        }),
        pthread_call_ns: Some(2.4),
        transfer_from: "a load of a line the other CPU modified",
    };
    let lab = topology_as_lab_with(
        &detect_in(&fixture("vm_2vcpu")),
        Some(measured),
        Some("measured"),
    );
    assert!(
        lab.contains("upgrade = 1.62,")
            && lab.contains(
                "reread_overlap = 0.97, request_arrival = 0.64, drain_overlap = 0.91, migratory = true, forward_stall = 3.8ns, steal = 43.7ns }"
            )
            && lab.contains("  overhead = 2ns\n  work_overhead = 10.2ns\n")
            && lab.contains("  atomic  = 1.8ns\n")
            && lab.contains(
                "futex { wait = 450ns, wake = 234ns, wake_sleeper = 6080ns, latency = 19055ns, pthread_call = 2.4ns }"
            ),
        "{lab}"
    );
    let checked = check(&lab);
    assert!(checked.is_library(), "{:?}\n{lab}", checked.diagnostics);
    // A host where the writer kept its copy says nothing: the default.
    let kept = topology_as_lab_with(
        &detect_in(&fixture("vm_2vcpu")),
        Some(Measured {
            migratory: Some(false),
            forward_stall_ns: Some(0.4),
            ..measured
        }),
        None,
    );
    assert!(!kept.contains("migratory = true"), "{kept}");
    // Nor does one where a narrow store costs nothing to speak of.
    let memory = kept
        .lines()
        .find(|l| l.trim_start().starts_with("memory {"));
    let memory = memory.expect("a memory block");
    assert!(!memory.contains("forward_stall"), "{kept}");
}
