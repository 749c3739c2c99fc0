//! Host discovery against fixture trees (`tests/fixtures/`), never this machine's.

use locklab_model::plan::{Placement, PlacementKind};
use locklab_model::topology::{place, Distance};
use locklab_runner::host::{cpu_map_in, detect_in, parse_cpu_list, topology_as_lab};
use std::path::PathBuf;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

#[test]
fn cpu_lists_parse() {
    assert_eq!(
        parse_cpu_list("0-3,8,10-11"),
        Some(vec![0, 1, 2, 3, 8, 10, 11])
    );
    assert_eq!(parse_cpu_list(""), Some(vec![]));
    assert_eq!(parse_cpu_list("3-1"), None);
    assert_eq!(parse_cpu_list("x"), None);
}

#[test]
fn a_two_socket_smt_host_is_mapped() {
    let m = cpu_map_in(&fixture("xeon_2s2c2t")).unwrap();
    assert_eq!((m.len(), m.sockets, m.cores, m.nodes), (8, 2, 4, 2));
    // CPU 5 is the second hyperthread of core 1 (socket 0, node 0).
    let c5 = &m.cpus[5];
    assert_eq!(
        (c5.os_id, c5.socket, c5.core, c5.smt, c5.node),
        (5, 0, 1, 1, 0)
    );
    assert_eq!(m.distance(1, 5), Distance::Smt);
    assert_eq!(m.distance(0, 1), Distance::Llc);
    assert_eq!(m.distance(0, 2), Distance::Remote);
    // will-it-scale placement: one thread per core across sockets, then siblings.
    let p = Placement {
        policy: PlacementKind::WillItScale,
        virtual_nodes: None,
    };
    let slots = place(&p, &m, 5).unwrap();
    let os: Vec<u32> = slots.iter().map(|s| m.cpus[s.cpu].os_id).collect();
    assert_eq!(os, [0, 1, 2, 3, 4]);
}

#[test]
fn host_facts_come_from_proc_and_sys() {
    let h = detect_in(&fixture("xeon_2s2c2t"));
    assert_eq!(h.hostname, "labbox");
    assert_eq!(h.kernel, "Linux 6.1.0-18-amd64");
    assert_eq!(h.cpu_model, "Intel(R) Xeon(R) CPU E5-2698 v3 @ 2.30GHz");
    // What identifies the design beyond the brand string.
    assert_eq!(
        h.cpu_id.as_deref(),
        Some("GenuineIntel family 6 model 63 stepping 2")
    );
    assert_eq!(
        h.cpu(),
        "Intel(R) Xeon(R) CPU E5-2698 v3 @ 2.30GHz [GenuineIntel family 6 model 63 stepping 2]"
    );
    assert_eq!(h.online_cpus, 8);
    assert_eq!(h.governor.as_deref(), Some("performance"));
    assert_eq!(h.turbo.as_deref(), Some("off (intel_pstate)"));
    assert_eq!(h.isolcpus.as_deref(), Some("2-3,6-7"));
    // The sysfs file is empty; the command line says it.
    assert_eq!(h.nohz_full.as_deref(), Some("2-3,6-7"));
    assert_eq!(h.aslr.as_deref(), Some("0 (off)"));
    assert_eq!(h.virtualization.as_deref(), Some("none"));
    assert_eq!(h.steal_frac, Some(0.0));
    assert_eq!(h.loadavg, Some([0.05, 0.10, 0.20]));

    let vm = detect_in(&fixture("vm_2vcpu"));
    // No vendor, family, model or stepping: the brand string alone.
    assert_eq!(vm.cpu_id, None);
    assert_eq!(vm.cpu(), "AMD EPYC 7B13");
    assert_eq!(vm.virtualization.as_deref(), Some("QEMU"));
    assert_eq!(vm.turbo.as_deref(), Some("on (cpufreq boost)"));
    assert_eq!(vm.governor, None);
    assert_eq!(vm.isolcpus, None);
    assert_eq!(vm.aslr.as_deref(), Some("2 (full)"));
    assert_eq!(vm.steal_frac, Some(0.1));
    let m = vm.topology.unwrap();
    assert_eq!((m.len(), m.sockets, m.cores, m.nodes), (2, 1, 2, 1));
}

#[test]
fn the_host_prints_as_a_topology_item() {
    let lab = topology_as_lab(&detect_in(&fixture("xeon_2s2c2t")));
    assert!(lab.contains("topology host_labbox {"), "{lab}");
    for line in [
        "sockets = 2",
        "cores   = 2",
        "smt     = 2",
        "transfer { smt = ",
    ] {
        assert!(lab.contains(line), "{line} missing from\n{lab}");
    }
    assert!(lab.contains("NOT measured"));
    let vm = topology_as_lab(&detect_in(&fixture("vm_2vcpu")));
    assert!(
        vm.contains("topology host_ci_vm_example {") && vm.contains("smt     = 1"),
        "{vm}"
    );
}

#[test]
fn transfer_latency_is_not_measured_on_a_cpu_we_cannot_pin_to() {
    let cpu = locklab_runner::native::pin::allowed_cpus()
        .and_then(|l| l.first().copied())
        .unwrap_or(0);
    use locklab_runner::calibrate::{transfer_latency, Handoff};
    for how in [Handoff::Cas, Handoff::Flags] {
        assert_eq!(transfer_latency(cpu, 100_000, how), None);
    }
}

/// The owned-line costs come out positive and finite (no timing thresholds: CI is a
/// noisy VM).
#[test]
fn owned_line_costs_are_measured_on_an_allowed_cpu() {
    let cpu = locklab_runner::native::pin::allowed_cpus()
        .and_then(|l| l.first().copied())
        .unwrap_or(0);
    let one = locklab_runner::calibrate::one_cpu_costs(cpu).expect("pinning works");
    for x in [one.atomic, one.fence, one.pause] {
        assert!(x.is_finite() && x > 0.0, "{one:?}");
    }
}

/// The futex costs come out positive and finite between two allowed CPUs (one CPU
/// twice where only one is allowed: the ping-pong sleeps, it does not spin), and are
/// not measured on a CPU that cannot be pinned to (no timing thresholds).
#[test]
fn futex_costs_are_measured_between_allowed_cpus() {
    use locklab_runner::calibrate::futex_costs;
    let cpus = locklab_runner::native::pin::allowed_cpus().unwrap_or_else(|| vec![0]);
    let (a, b) = (cpus[0], *cpus.get(1).unwrap_or(&cpus[0]));
    let f = futex_costs(a, b).expect("pinning works");
    for (what, x) in [
        ("wait", f.wait),
        ("wake", f.wake),
        ("wake_sleeper", f.wake_sleeper),
        ("latency", f.latency),
    ] {
        assert!(x.is_finite() && x > 0.0, "{what} {x}");
    }
    assert!(futex_costs(a, 100_000).is_none());
}

/// The futex race between two allowed CPUs gives a wait and, where the share of
/// sleeping waits crosses a half, a delay within the ones tried; it needs two CPUs and
/// the TSC (the two agree on an instant by it), and is not measured on a CPU that
/// cannot be pinned to. No timing thresholds.
#[test]
fn the_futex_race_is_measured_between_two_cpus() {
    use locklab_runner::calibrate::futex_check;
    let cpus = locklab_runner::native::pin::allowed_cpus().unwrap_or_else(|| vec![0]);
    let a = cpus[0];
    assert!(futex_check(a, a).is_none());
    assert!(futex_check(a, 100_000).is_none());
    let Some(&b) = cpus.get(1) else {
        return;
    };
    match futex_check(a, b) {
        Some(c) => {
            assert!(c.wait_written.is_finite() && c.wait_written > 0.0, "{c:?}");
            if let Some(h) = c.half_asleep {
                assert!((-150.0..=500.0).contains(&h), "{c:?}");
            }
        }
        None => assert!(
            locklab_runner::native::env::tsc::ns_per_tick().is_none(),
            "a trusted TSC and two CPUs, but no race measured"
        ),
    }
}
