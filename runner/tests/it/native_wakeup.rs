//! Wake-up placement points natively: the calibration (wake-up latency same-CPU vs
//! cross-CPU, refill after migrating) runs and yields a well-formed record. No timing
//! thresholds: CI is a noisy 2-core VM.

use crate::common::{one_socket, plan, point};
use locklab_model::plan::*;
use locklab_runner::native::{pin, run_point, NativeOptions};

fn volano(working_set_bytes: u64) -> Workload {
    Workload::Wakeup(WakeupSpec {
        policy: PlacementPolicy::Old,
        scenario: WakeupScenario::Messaging,
        workers: 800,
        worker_weight: 1024,
        hogs: 0,
        hog_groups: 4,
        hog_group_weight: 1024,
        burst: Dist::Uniform {
            lo_ns: 20_000,
            hi_ns: 50_000,
        },
        sleep: Dist::Exp { mean_ns: 50_000 },
        working_set_bytes,
        sched: SchedParams {
            wakeup_granularity_ns: 4_000_000,
            latency_ns: 24_000_000,
            min_slice_ns: 3_000_000,
            migration_cost_ns: 500_000,
            idle_exit_ns: 3_000,
            smt_corun_factor: 0.6,
        },
    })
}

fn finite(r: &locklab_model::records::RunRecord, key: &str) -> f64 {
    let v = r.point.extra.get(key).copied().unwrap_or(f64::NAN);
    assert!(v.is_finite(), "{key} = {v}");
    v
}

#[test]
fn a_wakeup_point_runs_natively_on_two_cpus() {
    let allowed = pin::allowed_cpus().unwrap_or_else(|| vec![0]);
    let m = one_socket(&allowed);
    let opts = NativeOptions {
        cpu_map: Some(m.clone()),
        noise_retries: 0,
        ..NativeOptions::default()
    };
    for same in [true, false] {
        let cpus = if m.len() >= 2 && !same {
            vec![m.cpus[0].os_id, m.cpus[1].os_id]
        } else {
            vec![m.cpus[0].os_id, m.cpus[0].os_id]
        };
        let p = point(
            LockAlgo::Qspinlock {
                pending_loops: None,
            },
            volano(64 * 1024),
            2,
            Some(cpus),
        );
        // On a loaded box a 20 ms window can pass without the two threads being
        // scheduled at all: try a few windows, each longer, before calling it broken.
        let mut r = run_point(&plan(vec![p.clone()]), &p, 0, 20_000_000, 2_000_000, &opts);
        for window_ms in [100, 500] {
            if r.point.skipped.is_some() || r.point.ops > 0 {
                break;
            }
            r = run_point(
                &plan(vec![p.clone()]),
                &p,
                0,
                window_ms * 1_000_000,
                2_000_000,
                &opts,
            );
        }
        if m.len() < 2 {
            let why = r.point.skipped.as_deref().unwrap_or("");
            assert!(why.contains("needs 2 CPUs"), "{why}");
            return;
        }
        assert!(r.point.skipped.is_none(), "{:?}", r.point.skipped);
        assert_eq!(r.point.mode, Mode::Native);
        assert_eq!(r.point.workload, "wakeup");
        assert!(r.point.ops > 0, "no wake-ups (same CPU: {same})");
        assert_eq!(r.point.ops, r.point.acquisitions);
        assert!(r.point.throughput_ops_s > 0.0);
        assert!(r.point.wait_p50_ns.is_finite() && r.point.wait_p99_ns.is_finite());
        assert_eq!(r.threads.len(), 2);
        assert!(r.threads.iter().all(|t| t.class == "wakeup"));
        let p50 = finite(&r, "wake_latency_p50_ns");
        let p99 = finite(&r, "wake_latency_p99_ns");
        assert!(p50 > 0.0 && p99 >= p50);
        assert_eq!(p50, r.point.wait_p50_ns);
        let own = if same { "same" } else { "cross" };
        assert_eq!(finite(&r, &format!("wake_latency_{own}_cpu_p50_ns")), p50);
        // The other arrangement ran for a fifth of the window; on a loaded box it may
        // see no wake-up, so only its presence is required.
        let other = if same { "cross" } else { "same" };
        assert!(r
            .point
            .extra
            .contains_key(&format!("wake_latency_{other}_cpu_p50_ns")));
        finite(&r, "refill_ns");
        finite(&r, "refill_ns_per_line");
        assert!(finite(&r, "refill_passes") >= 3.0);
        assert_eq!(finite(&r, "refill_lines"), 1024.0);
    }
}

#[test]
fn a_wakeup_point_is_skipped_with_a_reason_on_one_cpu() {
    let allowed = pin::allowed_cpus().unwrap_or_else(|| vec![0]);
    let m = one_socket(&allowed[..1]);
    let opts = NativeOptions {
        cpu_map: Some(m.clone()),
        ..NativeOptions::default()
    };
    let p = point(
        LockAlgo::Qspinlock {
            pending_loops: None,
        },
        volano(4096),
        2,
        Some(vec![m.cpus[0].os_id, m.cpus[0].os_id]),
    );
    let r = run_point(&plan(vec![p.clone()]), &p, 0, 5_000_000, 0, &opts);
    let why = r.point.skipped.as_deref().unwrap_or("");
    assert!(why.contains("needs 2 CPUs"), "{why}");
}
