//! The records both executors produce: one `RunRecord` per point × mode × repetition.
//!
//! These are the rows of `points.parquet`, `threads.parquet` and `handoffs.parquet`
//! (written by `locklab-analysis`, so that this crate stays free of polars). Column
//! names carry units. Metric definitions are in `crate::stats` and docs/metrics.md.

use crate::plan::Mode;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Bumped when a column changes meaning or disappears. 3: the wait statistics and
/// bypass count the waits cut off by the end of the window; hand-offs are between
/// different threads only (`reacquisitions` apart); `remote` is `cross_node`.
pub const RECORDS_SCHEMA_VERSION: u32 = 3;

/// Quantiles stored for the wait-time distribution of a point (`wait_cdf_ns`): the
/// body in steps of 0.1, then the tail in finer steps down to one wait in 100,000, then
/// the maximum, so that a CCDF on log axes shows the tail, not two segments.
pub const CDF_QUANTILES: [f64; 18] = [
    0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 0.995, 0.999, 0.9995, 0.9999,
    0.99999, 1.0,
];

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub point: PointRecord,
    pub threads: Vec<ThreadRecord>,
    pub handoffs: Vec<HandoffRecord>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointRecord {
    pub point: u32,
    pub point_id: String,
    pub mode: Mode,
    pub rep: u32,
    pub seed: u64,
    pub lock: String,
    pub lock_algo: String,
    pub workload: String,
    pub threads: u32,
    /// Why the point was not run (e.g. needs 142 CPUs, host has 2); metrics are NaN.
    pub skipped: Option<String>,
    /// What kind of reason `skipped` gives (the command line's exit code depends on
    /// it); `None` when the point ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skip_cause: Option<SkipCause>,
    /// Measured window, ns (wall time natively, virtual time simulated).
    pub window_ns: u64,
    pub acquisitions: u64,
    /// Workload operations (= acquisitions for single-lock; passes, requests, wake-ups
    /// for the others).
    pub ops: u64,
    /// Acquisitions in the window that waited (a wait above zero: in the single-lock
    /// workload, whose first attempt failed; in the others, whose waits run from the
    /// start of `acquire`, nearly all); `None` in records written before 6 December
    /// 2026, which did not count them.
    #[serde(default)]
    pub waits: Option<u64>,
    /// Waits still running at the end of the window, counted in the wait statistics
    /// and bypass with their length up to the end (lower bounds).
    #[serde(default)]
    pub waits_censored: u64,
    /// Grants to the thread that held the lock last (not hand-offs); `None` where the
    /// grant order was not recorded (native `recording = sampled`).
    #[serde(default)]
    pub reacquisitions: Option<u64>,
    pub throughput_ops_s: f64,
    pub cpu_ns_per_acq: f64,
    pub overhead_ns: f64,
    pub jain: f64,
    pub cov_acq: f64,
    pub max_min: f64,
    pub fairness_factor: f64,
    /// Highest fairness factor over windows of `fairness_window_ns` (NaN if unused).
    pub window_fairness_factor_max: f64,
    pub fairness_window_ns: u64,
    pub wait_p50_ns: f64,
    pub wait_p99_ns: f64,
    pub wait_p999_ns: f64,
    pub wait_max_ns: f64,
    pub wait_mean_ns: f64,
    pub hold_mean_ns: f64,
    pub bypass_max: f64,
    /// `wait_max_ns` and `bypass_max` come from a wait cut off by the end of the
    /// window: they are lower bounds.
    #[serde(default)]
    pub wait_max_censored: bool,
    #[serde(default)]
    pub bypass_max_censored: bool,
    pub bypass_mean: f64,
    pub handoff_local_frac: f64,
    /// Σ thread CPU time / (window × threads); simulated, 1 less the share of the
    /// window the threads slept in the kernel (NaN in records written before 6
    /// December 2026, which held no simulated CPU time).
    pub cpu_wall_ratio: f64,
    /// Nominal and achieved (calibrated) critical-section and outside durations.
    pub critical_nominal_ns: f64,
    pub critical_achieved_ns: f64,
    pub outside_nominal_ns: f64,
    pub outside_achieved_ns: f64,
    /// Noise-gate verdict: "ok", "flagged: <reason>", or "sim".
    pub noise: String,
    /// Wait-time quantiles at `CDF_QUANTILES`.
    pub wait_cdf_ns: Vec<f64>,
    /// Workload-specific metrics (`migrations_per_wakeup`, `wake_latency_p99_ns`, ...).
    pub extra: BTreeMap<String, f64>,
}

/// One row per thread and wait class (`lock` for plain acquisitions; workloads add
/// classes such as `pass`, `single`, `batch`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadRecord {
    pub point: u32,
    pub mode: Mode,
    pub rep: u32,
    pub thread: u32,
    pub cpu: u32,
    pub node: u32,
    pub class: String,
    pub acquisitions: u64,
    // These three as in [`PointRecord`], for this thread and class.
    #[serde(default)]
    pub waits: Option<u64>,
    #[serde(default)]
    pub waits_censored: u64,
    #[serde(default)]
    pub reacquisitions: Option<u64>,
    pub share: f64,
    pub wait_p50_ns: f64,
    pub wait_p99_ns: f64,
    pub wait_p999_ns: f64,
    pub wait_max_ns: f64,
    pub wait_mean_ns: f64,
    pub hold_mean_ns: f64,
    pub bypass_max: f64,
    #[serde(default)]
    pub wait_max_censored: bool,
    #[serde(default)]
    pub bypass_max_censored: bool,
    pub cpu_ns: f64,
}

/// Why a point was skipped, as a kind: the exit code of a run depends on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SkipCause {
    /// The host cannot hold the point (too few CPUs or nodes for its placement).
    Host,
    /// The point's threads cannot be pinned where the placement puts them.
    Pinning,
    /// The simulated threads deadlocked: every one waits on a line no one will write.
    Deadlock,
}

impl SkipCause {
    pub const ALL: [SkipCause; 3] = [SkipCause::Host, SkipCause::Pinning, SkipCause::Deadlock];

    pub fn as_str(self) -> &'static str {
        match self {
            SkipCause::Host => "host",
            SkipCause::Pinning => "pinning",
            SkipCause::Deadlock => "deadlock",
        }
    }

    /// The cause [`SkipCause::as_str`] names.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.as_str() == s)
    }
}

/// Hand-offs between two different threads by (previous holder's node, next holder's
/// node), with the next holder's wait. A thread taking the lock again after holding it
/// last is no hand-off (`reacquisitions`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HandoffRecord {
    pub point: u32,
    pub mode: Mode,
    pub rep: u32,
    pub from_node: u32,
    pub to_node: u32,
    /// "self", "smt", "llc", "socket", "remote" when known, else "node".
    pub distance: String,
    pub count: u64,
    pub wait_p50_ns: f64,
    pub wait_p99_ns: f64,
    pub wait_max_ns: f64,
}

/// Extra columns of a point with two threads or more: the transfer between its first
/// two threads' CPUs, ns (a load by thread 0's CPU of a line thread 1's CPU modified).
/// Simulated: the topology's value for their distance (`PAIR_TRANSFER`). Natively:
/// measured just before and just after the window (`PAIR_TRANSFER_BEFORE`, `_AFTER`),
/// and their mean (`PAIR_TRANSFER`). On a virtual machine whose host moves its vCPUs
/// this says which machine a repetition measured.
pub const PAIR_TRANSFER: &str = "pair_transfer_ns";
pub const PAIR_TRANSFER_BEFORE: &str = "pair_transfer_before_ns";
pub const PAIR_TRANSFER_AFTER: &str = "pair_transfer_after_ns";

/// Whether two values of the transfer between one pair of CPUs (two measurements, or
/// a measurement and a topology's value) describe the same placement: apart by no
/// more than 40 % of the larger or 8 ns. One measurement varies by a few ns, passes
/// of `topo --measure` in a slow spell by up to 1.4 times (47–65 ns on the Ice Lake
/// guest); the placements a virtual machine's host moves its vCPUs between differ
/// several-fold (0, 22 and 122 ns on the Zen 4 guest: one core's two hyperthreads,
/// two cores of one CCX, two CCDs).
pub fn same_placement(a: f64, b: f64) -> bool {
    within(a, b, 0.4)
}

/// Whether a transfer measured around a repetition's window is the placement a
/// topology models, whose transfer `topo --measure` took as the median of its passes:
/// apart by no more than 30 % of the larger or 8 ns. Tighter than [`same_placement`],
/// which compares two single measurements, each off by its own noise: against a
/// median only the measurement's own noise counts. On the Intel Xeon guest (family 6
/// model 167) one placement's measurements spread over 61–94 ns around a modelled
/// 79, another's (the two vCPUs on two dies, as it seems) over 116–146: 40 % kept the
/// second as the first.
pub fn modelled_placement(modelled: f64, measured: f64) -> bool {
    within(modelled, measured, 0.3)
}

/// Two transfers apart by no more than `share` of the larger or 8 ns (what a single
/// measurement of a few ns varies by).
fn within(a: f64, b: f64, share: f64) -> bool {
    const SLACK_NS: f64 = 8.0;
    (a - b).abs() <= (share * a.abs().max(b.abs())).max(SLACK_NS)
}

/// Values of the transfer between one pair of CPUs grouped by placement: indices
/// into `values` of each group, a value joining (in ascending order) the group whose
/// least value it agrees with ([`same_placement`]); the largest group first (of two
/// as large, the one of lower values). Values that are not finite are left out.
pub fn placement_groups(values: &[f64]) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..values.len())
        .filter(|&i| values[i].is_finite())
        .collect();
    order.sort_by(|&i, &j| values[i].total_cmp(&values[j]));
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for i in order {
        match groups.last_mut() {
            Some(g) if same_placement(values[g[0]], values[i]) => g.push(i),
            _ => groups.push(vec![i]),
        }
    }
    // Stable: of two groups as large, the lower values stay first.
    groups.sort_by_key(|g| std::cmp::Reverse(g.len()));
    groups
}

/// Whether the transfers between one pair of CPUs measured before and after each
/// repetition of a point, `(before, after)`, name more than one placement: one
/// moved during its window, or two repetitions disagree ([`placement_groups`]).
/// Pairs not both finite are left out.
pub fn several_placements(measured: &[(f64, f64)]) -> bool {
    let finite = || {
        measured
            .iter()
            .filter(|(b, a)| b.is_finite() && a.is_finite())
    };
    finite().any(|&(b, a)| !same_placement(b, a))
        || placement_groups(&finite().map(|(b, a)| (b + a) / 2.0).collect::<Vec<_>>()).len() > 1
}

#[cfg(test)]
mod tests {
    use super::{modelled_placement, placement_groups, same_placement, several_placements};

    #[test]
    fn a_point_names_several_placements_if_its_repetitions_disagree_or_one_moved() {
        assert!(!several_placements(&[
            (22.0, 21.0),
            (23.0, 24.5),
            (f64::NAN, 120.0)
        ]));
        assert!(several_placements(&[(22.0, 21.0), (120.0, 118.0)]));
        assert!(several_placements(&[(22.0, 118.0)]));
        assert!(!several_placements(&[]));
    }

    #[test]
    fn values_group_by_placement_the_largest_group_first() {
        let v = [22.0, 121.0, f64::NAN, 0.5, 21.0, 118.0, 23.5];
        assert_eq!(
            placement_groups(&v),
            vec![vec![4, 0, 6], vec![5, 1], vec![3]]
        );
        assert_eq!(placement_groups(&[120.0, 20.0]), vec![vec![1], vec![0]]);
        assert!(placement_groups(&[]).is_empty());
    }

    #[test]
    fn a_measured_transfer_is_the_modelled_placement_within_its_own_noise() {
        // The Intel Xeon guest: 79 ns modelled; one placement measured at 61–94 ns,
        // another at 116–146 (which `same_placement` would keep).
        for x in [61.0, 79.0, 94.0, 110.0] {
            assert!(modelled_placement(79.0, x), "{x}");
        }
        for x in [116.0, 146.0, 50.0] {
            assert!(!modelled_placement(79.0, x), "{x}");
        }
        assert!(same_placement(79.0, 116.0));
        // Small values: the slack.
        assert!(modelled_placement(0.0, 8.0));
        assert!(!modelled_placement(0.0, 9.0));
    }

    #[test]
    fn placements_are_told_apart_by_their_transfer() {
        // Measured on the Zen 4 guest: the same CCX twice, then a move.
        assert!(same_placement(21.8, 23.4));
        assert!(same_placement(23.0, 20.8));
        assert!(!same_placement(23.0, 122.3));
        assert!(!same_placement(23.0, 0.0));
        // Small values: the slack, not the share.
        assert!(same_placement(0.0, 6.0));
        assert!(!same_placement(0.0, 9.0));
        // The Ice Lake guest's 51–56 ns, and its shared-core rounds.
        assert!(same_placement(51.0, 56.0));
        assert!(!same_placement(52.0, 1.0));
    }
}
