//! A topology's memory model and jitter: defaults derived from the transfers, every
//! key overridable, an unknown model named in the error.

use crate::demo_plan;
use locklab_model::plan::{Costs, Futex, Memory, MemoryOrder, Topology, DEFAULT_JITTER_PPM};
use locklab_model::time::Ns;

fn ns(n: u64) -> Ns {
    Ns::whole(n)
}

fn costs_of(topology: &str) -> Result<Costs, String> {
    match demo_plan(topology, "tas")?.topology {
        Topology::Machine(m) => Ok(m.costs),
        Topology::Host { .. } => unreachable!("a machine was given"),
    }
}

#[test]
fn without_a_memory_block_the_model_is_x86_tso_derived_from_the_transfers() {
    let c =
        costs_of("topology t { sockets = 1, cores = 4, transfer { llc = 50ns }, atomic = 7ns }")
            .unwrap();
    assert_eq!(c.memory, Memory::x86_tso(ns(50), ns(7)));
    assert_eq!(c.memory.order, MemoryOrder::X86Tso);
    assert_eq!(c.memory.llc_hit_ns, ns(20));
    assert_eq!(c.memory.read_occupancy_ns, ns(5));
    assert_eq!(c.memory.fence_ns, ns(14));
    assert_eq!(c.memory.upgrade_ppm, 1_000_000);
    assert_eq!(c.memory.run_ahead_ns, ns(0));
    assert_eq!(c.memory.rmw_run_ahead_ppm, 1_000_000);
    assert_eq!(c.memory.reread_overlap_ppm, 0);
    assert_eq!(c.memory.request_arrival_ppm, 0);
    assert_eq!(c.memory.drain_overlap_ppm, 0);
    assert!(!c.memory.migratory);
    assert_eq!(c.overhead_ns, ns(0));
    assert_eq!(c.work_overhead_ns, ns(0));
    assert_eq!(c.jitter_ppm, DEFAULT_JITTER_PPM);
    assert!(!c.work_carry);
    assert_eq!(c.futex, Futex::DEFAULT);
}

#[test]
fn every_memory_key_and_the_jitter_can_be_given() {
    let c = costs_of(
        "topology t {
  sockets = 1, cores = 4, transfer { llc = 50ns }
  memory { model = x86_tso, llc_hit = 18ns, read_occupancy = 3ns, store_buffer = 42, fence = 13ns, misses_in_flight = 6, upgrade = 0.12, run_ahead = 160ns, rmw_run_ahead = 0.25, reread_overlap = 0.75, request_arrival = 0.5, drain_overlap = 0.9, migratory = true, forward_stall = 4ns, steal = 44ns }
  jitter = 0.05
  work_carry = true
  overhead = 8ns
  work_overhead = 10ns
}",
    )
    .unwrap();
    let m = &c.memory;
    assert_eq!(
        (
            m.llc_hit_ns,
            m.read_occupancy_ns,
            m.store_buffer,
            m.fence_ns,
            m.misses_in_flight
        ),
        (ns(18), ns(3), 42, ns(13), 6)
    );
    assert_eq!(m.upgrade_ppm, 120_000);
    assert_eq!(m.run_ahead_ns, ns(160));
    assert_eq!(m.rmw_run_ahead_ppm, 250_000);
    assert_eq!(m.reread_overlap_ppm, 750_000);
    assert_eq!(m.request_arrival_ppm, 500_000);
    assert_eq!(m.drain_overlap_ppm, 900_000);
    assert!(m.migratory);
    assert_eq!(m.forward_stall_ns, ns(4));
    assert_eq!(m.steal_ns, ns(44));
    assert_eq!(c.overhead_ns, ns(8));
    assert_eq!(c.work_overhead_ns, ns(10));
    assert_eq!(c.jitter_ppm, 50_000);
    assert!(c.work_carry);
    let off =
        costs_of("topology t { sockets = 1, cores = 4, transfer { llc = 50ns }, jitter = 0 }")
            .unwrap();
    assert_eq!(off.jitter_ppm, 0);
}

#[test]
fn an_unknown_memory_model_or_key_is_an_error_naming_it() {
    let e = costs_of(
        "topology t { sockets = 1, cores = 4, transfer { llc = 50ns }, memory { model = arm_lse } }",
    )
    .unwrap_err();
    assert!(e.contains("arm_lse"), "{e}");
    let e = costs_of(
        "topology t { sockets = 1, cores = 4, transfer { llc = 50ns }, memory { stor_buffer = 4 } }",
    )
    .unwrap_err();
    assert!(e.contains("stor_buffer"), "{e}");
    let e =
        costs_of("topology t { sockets = 1, cores = 4, transfer { llc = 50ns }, jitter = 0.9 }")
            .unwrap_err();
    assert!(e.contains("jitter"), "{e}");
    let e = costs_of(
        "topology t { sockets = 1, cores = 4, transfer { llc = 50ns }, memory { migratory = 1 } }",
    )
    .unwrap_err();
    assert!(
        e.contains("migratory") && e.contains("`true` or `false`"),
        "{e}"
    );
    let e =
        costs_of("topology t { sockets = 1, cores = 4, transfer { llc = 50ns }, work_carry = 1 }")
            .unwrap_err();
    assert!(
        e.contains("work_carry") && e.contains("`true` or `false`"),
        "{e}"
    );
    // Shares of at most 1: a locked operation's stall hides at most all of it, a
    // re-read overlaps at most the whole request, a request reaches the holder at
    // most a whole transfer after it leaves. An upgrade may cost more than a
    // transfer (1.5 measured on a Zen 4), up to 4.
    let c = costs_of(
        "topology t { sockets = 1, cores = 4, transfer { llc = 50ns }, memory { upgrade = 1.5 } }",
    )
    .unwrap();
    assert_eq!(c.memory.upgrade_ppm, 1_500_000);
    for (key, value) in [
        ("upgrade", "4.5"),
        ("rmw_run_ahead", "2"),
        ("reread_overlap", "1.5"),
        ("request_arrival", "1.5"),
        ("drain_overlap", "1.5"),
    ] {
        let e = costs_of(&format!(
            "topology t {{ sockets = 1, cores = 4, transfer {{ llc = 50ns }}, memory {{ {key} = {value} }} }}"
        ))
        .unwrap_err();
        assert!(e.contains(key), "{e}");
    }
}

#[test]
fn the_futex_costs_can_be_given_key_by_key_and_a_misspelt_key_is_named() {
    let c = costs_of(
        "topology t { sockets = 1, cores = 4, transfer { llc = 50ns }, futex { wait = 300ns, wake_sleeper = 9us, latency = 25us } }",
    )
    .unwrap();
    assert_eq!(
        c.futex,
        Futex {
            wait_ns: ns(300),
            wake_ns: Futex::DEFAULT.wake_ns,
            wake_sleeper_ns: ns(9_000),
            latency_ns: ns(25_000),
            pthread_call_ns: Ns::ZERO,
        }
    );
    let c = costs_of(
        "topology t { sockets = 1, cores = 4, transfer { llc = 50ns }, futex { pthread_call = 3ns } }",
    )
    .unwrap();
    assert_eq!(
        c.futex,
        Futex {
            pthread_call_ns: ns(3),
            ..Futex::DEFAULT
        }
    );
    let e = costs_of(
        "topology t { sockets = 1, cores = 4, transfer { llc = 50ns }, futex { wakeup = 1us } }",
    )
    .unwrap_err();
    assert!(e.contains("wakeup"), "{e}");
    let e = costs_of("topology t { sockets = 1, cores = 4, transfer { llc = 50ns }, futex = 1us }")
        .unwrap_err();
    assert!(e.contains("futex"), "{e}");
}

#[test]
fn where_the_costs_were_measured_is_kept_verbatim_and_must_be_a_string() {
    let c = costs_of(
        r#"topology t { sockets = 1, cores = 4, transfer { llc = 50ns }, measured_on = "Intel(R) Xeon(R) \"X\" @ 2.80GHz" }"#,
    )
    .unwrap();
    assert_eq!(
        c.measured_on.as_deref(),
        Some(r#"Intel(R) Xeon(R) "X" @ 2.80GHz"#)
    );
    let by_hand =
        costs_of("topology t { sockets = 1, cores = 4, transfer { llc = 50ns } }").unwrap();
    assert_eq!(by_hand.measured_on, None);
    let e = costs_of(
        "topology t { sockets = 1, cores = 4, transfer { llc = 50ns }, measured_on = 2.8 }",
    )
    .unwrap_err();
    assert!(e.contains("measured_on") && e.contains("string"), "{e}");
}

#[test]
fn a_pause_costs_20ns_unless_the_topology_says_and_never_nothing() {
    let c = costs_of("topology t { sockets = 1, cores = 4, transfer { llc = 50ns } }").unwrap();
    assert_eq!(c.pause_ns, locklab_model::plan::DEFAULT_PAUSE_NS);
    assert_eq!(c.pause_ns, ns(20));
    let c =
        costs_of("topology t { sockets = 1, cores = 4, transfer { llc = 50ns }, pause = 43ns }")
            .unwrap();
    assert_eq!(c.pause_ns, ns(43));
    for (bad, says) in [("0ns", "longer than 0ns"), ("2", "duration")] {
        let e = costs_of(&format!(
            "topology t {{ sockets = 1, cores = 4, transfer {{ llc = 50ns }}, pause = {bad} }}"
        ))
        .unwrap_err();
        assert!(e.contains("pause") && e.contains(says), "{bad}: {e}");
    }
}

#[test]
fn a_cost_is_kept_to_the_picosecond_and_every_other_duration_is_whole_ns() {
    let c = costs_of(
        "topology t {
  sockets = 1, cores = 4, transfer { llc = 17.1ns, remote = 0.25us }, atomic = 1.8ns, overhead = 2.9ns
  pause = 24.2ns
  memory { fence = 1.4ns, forward_stall = 3.8ns, run_ahead = 221.3ns }
  futex { pthread_call = 1.25ns }
}",
    )
    .unwrap();
    let ps = Ns::from_ps;
    assert_eq!(
        (c.llc_ns, c.smt_ns, c.remote_ns),
        (ps(17_100), ps(17_100), ps(250_000))
    );
    assert_eq!(
        (c.atomic_ns, c.overhead_ns, c.pause_ns),
        (ps(1_800), ps(2_900), ps(24_200))
    );
    let m = &c.memory;
    assert_eq!(
        (m.fence_ns, m.forward_stall_ns, m.run_ahead_ns),
        (ps(1_400), ps(3_800), ps(221_300))
    );
    assert_eq!(c.futex.pthread_call_ns, ps(1_250));
    // Derived from the fractional transfer, to the picosecond: 0.4 and 0.1 of it;
    // from a whole one, whole ns as before costs could be fractions (17 → 7 and 1).
    assert_eq!((m.llc_hit_ns, m.read_occupancy_ns), (ps(6_840), ps(1_710)));
    let whole = Memory::x86_tso(ns(17), ns(2));
    assert_eq!((whole.llc_hit_ns, whole.read_occupancy_ns), (ns(7), ns(1)));

    let e = costs_of(
        "topology t { sockets = 1, cores = 4, transfer { llc = 50ns }, atomic = 1.0005ns }",
    )
    .unwrap_err();
    assert!(e.contains("whole number of picoseconds"), "{e}");
    for bad in ["1000.0005ns", "0.0000000005ms"] {
        let e = costs_of(&format!(
            "topology t {{ sockets = 1, cores = 4, transfer {{ llc = 50ns }}, atomic = {bad} }}"
        ))
        .unwrap_err();
        assert!(e.contains("whole number of picoseconds"), "{bad}: {e}");
    }
    let e =
        costs_of("topology t { sockets = 1, cores = 4, transfer { llc = 50ns }, atomic = -0.0ns }")
            .unwrap_err();
    assert!(e.contains("negative"), "{e}");
    let e = costs_of("topology t { sockets = 1, cores = 4, transfer { llc = 2s } }").unwrap_err();
    assert!(e.contains("too long for a machine cost"), "{e}");
    let e =
        costs_of("topology t { sockets = 1, cores = 4, transfer { llc = 50ns }, pause = 0.0ns }")
            .unwrap_err();
    assert!(e.contains("longer than 0ns"), "{e}");
    // A workload's durations stay whole nanoseconds.
    let text = "topology t { sockets = 1, cores = 2, transfer { llc = 50ns } }
experiment demo {
  topology = t
  workload = single { critical = 1.5ns, outside = 0ns }
  lock = tas
  threads = 2
  run { modes = [sim], duration = 1ms }
}
";
    let c = crate::load_mem(&[("e.lab", text)], "e.lab");
    let e = crate::show(&c);
    assert!(
        c.plan.is_none() && e.contains("whole number of nanoseconds"),
        "{e}"
    );
}
