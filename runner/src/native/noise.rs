//! The noise gate: was a native repetition disturbed?
//!
//! Signals: involuntary context switches per thread over the window (another task
//! took the CPU: meaningful for every lock, sleeping or spinning), per-thread CPU
//! time / wall time (a spinning thread that lost its CPU shows < 1; not used for
//! locks whose waiters sleep), steal time from
//! `/proc/stat` over the run (a hypervisor took the CPU), the work durations each
//! thread achieved before and after the window against what the point asked (see
//! `calibrate`), the transfer between the first two threads' CPUs before and after
//! the window (a host that moved its vCPUs in between changed the machine under the
//! measurement: `records::same_placement`), and the 1-minute load average before the
//! run (reported, and named in a flag as context).

use locklab_model::records::{
    same_placement, PAIR_TRANSFER, PAIR_TRANSFER_AFTER, PAIR_TRANSFER_BEFORE,
};
use std::collections::BTreeMap;

/// Thresholds.
#[derive(Debug, Clone)]
pub struct Gate {
    /// A spinning thread below this CPU/wall ratio lost its CPU (docs/metrics.md: ~0.97).
    pub min_cpu_wall_ratio: f64,
    /// Steal share of all CPU time during the run above this is disturbance.
    pub max_steal_frac: f64,
    /// A thread preempted more often than this per second of window (and more than
    /// twice in all) shared its CPU.
    pub max_preemptions_per_s: f64,
    /// A work duration achieved further than this from its nominal value (a
    /// fraction) makes the repetition's durations wrong.
    pub max_work_error: f64,
    /// Work durations below this (ns) are not checked: they are counted, not timed,
    /// and reported as measured.
    pub min_checked_work_ns: f64,
}

impl Default for Gate {
    fn default() -> Self {
        Gate {
            min_cpu_wall_ratio: 0.97,
            max_steal_frac: 0.01,
            max_preemptions_per_s: 10.0,
            max_work_error: 0.05,
            min_checked_work_ns: 50.0,
        }
    }
}

/// `/proc/stat`'s aggregate CPU line and `/proc/loadavg`, at one instant.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    pub steal: Option<u64>,
    pub total: Option<u64>,
    pub load1: Option<f64>,
}

impl Snapshot {
    pub fn take() -> Snapshot {
        let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
        let (steal, total) = parse_stat(&stat).map_or((None, None), |(s, t)| (Some(s), Some(t)));
        let load1 = std::fs::read_to_string("/proc/loadavg")
            .ok()
            .and_then(|s| parse_loadavg(&s))
            .map(|l| l[0]);
        Snapshot {
            steal,
            total,
            load1,
        }
    }
}

/// (steal, total) jiffies from the `cpu ` line of /proc/stat.
pub fn parse_stat(s: &str) -> Option<(u64, u64)> {
    let line = s.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    if v.len() < 8 {
        return None;
    }
    // user nice system idle iowait irq softirq steal [guest guest_nice]: guest time is
    // already counted in user/nice.
    let total = v.iter().take(8).sum();
    Some((v[7], total))
}

pub fn parse_loadavg(s: &str) -> Option<[f64; 3]> {
    let mut it = s.split_whitespace().map(|x| x.parse::<f64>().ok());
    Some([it.next()??, it.next()??, it.next()??])
}

/// A work duration the point asks for (`critical`, `outside`) and the means each
/// thread measured for it, before and after the window.
#[derive(Debug, Clone)]
pub struct WorkCheck {
    pub name: &'static str,
    pub nominal_ns: f64,
    pub achieved_ns: Vec<f64>,
}

/// What a repetition's threads saw, for the gate.
#[derive(Debug, Clone, Copy)]
pub struct Observed<'a> {
    /// CPU time / wall time of each thread over the window.
    pub ratios: &'a [f64],
    /// Involuntary context switches of each thread in the window.
    pub preempted: &'a [u64],
    pub window_ns: u64,
    /// The lock's waiters may sleep (a low CPU/wall ratio is then the lock's doing).
    pub may_sleep: bool,
    pub work: &'a [WorkCheck],
    /// The transfer between the first two threads' CPUs, ns, measured before and
    /// after the window (two threads or more).
    pub pair_ns: Option<[f64; 2]>,
}

/// The gate's reading of one repetition.
#[derive(Debug, Clone)]
pub struct Judgement {
    /// Why it looks disturbed, if it does.
    pub disturbed: Option<String>,
    /// Values for `RunContext::extra`.
    pub extra: BTreeMap<String, f64>,
}

impl Gate {
    pub fn judge(&self, before: &Snapshot, after: &Snapshot, seen: &Observed) -> Judgement {
        let Observed {
            ratios,
            preempted,
            window_ns,
            may_sleep,
            work,
            pair_ns,
        } = *seen;
        let mut extra = BTreeMap::new();
        let mut why = Vec::new();
        if let Some((t, &most)) = preempted.iter().enumerate().max_by_key(|(_, &p)| p) {
            extra.insert("preemptions_max".into(), most as f64);
            let allowed = (self.max_preemptions_per_s * window_ns as f64 / 1e9).max(2.0);
            if most as f64 > allowed {
                why.push(format!("thread {t} was preempted {most} times"));
            }
        }
        let min_ratio = ratios.iter().copied().fold(f64::INFINITY, f64::min);
        if min_ratio.is_finite() {
            extra.insert("cpu_wall_ratio_min".into(), min_ratio);
            if !may_sleep && min_ratio < self.min_cpu_wall_ratio {
                let t = ratios.iter().position(|&r| r == min_ratio).unwrap_or(0);
                why.push(format!(
                    "thread {t} ran {:.0}% of the window (cpu/wall {min_ratio:.2} < {:.2})",
                    min_ratio * 100.0,
                    self.min_cpu_wall_ratio
                ));
            }
        }
        if let (Some(s0), Some(t0), Some(s1), Some(t1)) =
            (before.steal, before.total, after.steal, after.total)
        {
            if t1 > t0 {
                let (stolen, total) = (s1.saturating_sub(s0), (t1 - t0) as f64);
                let f = stolen as f64 / total;
                extra.insert("steal_frac".into(), f);
                // The kernel keeps steal in ns and /proc/stat shows it floored to
                // clock ticks (10 ms), so a difference of one tick may be a few µs of
                // steal that crossed a tick: over a repetition of half a second on two
                // CPUs one tick is 1 % by itself. Flag only steal that certainly
                // exceeds the limit: the difference less one tick.
                if stolen.saturating_sub(1) as f64 / total > self.max_steal_frac {
                    why.push(format!("steal {:.1}% of CPU time", f * 100.0));
                }
            }
        }
        for w in work {
            if w.nominal_ns < self.min_checked_work_ns {
                continue;
            }
            let worst = w.achieved_ns.iter().copied().max_by(|a, b| {
                (a / w.nominal_ns - 1.0)
                    .abs()
                    .total_cmp(&(b / w.nominal_ns - 1.0).abs())
            });
            if let Some(a) = worst {
                let err = a / w.nominal_ns - 1.0;
                if err.abs() > self.max_work_error || !err.is_finite() {
                    why.push(format!(
                        "{} work took {a:.0} ns for {:.0} ns ({:+.1}%, more than {:.0}% off)",
                        w.name,
                        w.nominal_ns,
                        err * 100.0,
                        self.max_work_error * 100.0
                    ));
                }
            }
        }
        if let Some([b, a]) = pair_ns {
            extra.insert(PAIR_TRANSFER_BEFORE.into(), b);
            extra.insert(PAIR_TRANSFER_AFTER.into(), a);
            extra.insert(PAIR_TRANSFER.into(), (b + a) / 2.0);
            if !same_placement(b, a) {
                why.push(format!(
                    "the CPUs moved: a transfer between threads 0 and 1 took {b:.0} ns before the window and {a:.0} ns after"
                ));
            }
        }
        if let Some(l) = before.load1 {
            extra.insert("loadavg_1m".into(), l);
            if !why.is_empty() {
                why.push(format!("load {l:.2} before the run"));
            }
        }
        Judgement {
            disturbed: if why.is_empty() {
                None
            } else {
                Some(why.join("; "))
            },
            extra,
        }
    }
}

impl Judgement {
    /// Write the verdict into a run's context: `ctx.noise` ("ok" or "flagged: ..."),
    /// the number of attempts, and the gate's measurements as extra columns.
    pub fn record(self, ctx: &mut crate::stats::RunContext, pinned: bool, attempts: u32) {
        let mut why = Vec::new();
        if !pinned {
            why.push("threads not pinned".to_string());
        }
        if let Some(d) = &self.disturbed {
            why.push(format!("{d} (after {attempts} attempts)"));
        }
        ctx.noise = if why.is_empty() {
            "ok".into()
        } else {
            format!("flagged: {}", why.join("; "))
        };
        ctx.extra.insert("noise_attempts".into(), attempts as f64);
        ctx.extra.extend(self.extra);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_and_loadavg_parse() {
        let s = "cpu  10 0 5 100 1 0 0 4 0 0\ncpu0 5 0 2 50 0 0 0 2 0 0\n";
        assert_eq!(parse_stat(s), Some((4, 120)));
        assert_eq!(
            parse_loadavg("0.50 1.25 2.00 1/234 5678\n"),
            Some([0.5, 1.25, 2.0])
        );
    }

    #[test]
    fn the_gate_flags_lost_cpu_and_steal_but_not_sleeping_locks() {
        let g = Gate::default();
        let b = Snapshot {
            steal: Some(0),
            total: Some(1000),
            load1: Some(0.1),
        };
        let a = Snapshot {
            steal: Some(50),
            total: Some(2000),
            load1: None,
        };
        let seen = |ratios: &'static [f64], preempted: &'static [u64], may_sleep| Observed {
            ratios,
            preempted,
            window_ns: 1_000_000_000,
            may_sleep,
            work: &[],
            pair_ns: None,
        };
        let j = g.judge(&b, &a, &seen(&[0.99, 0.5], &[0, 0], false));
        let why = j.disturbed.unwrap();
        assert!(
            why.contains("thread 1") && why.contains("steal 5.0%"),
            "{why}"
        );
        // One tick of steal may be none (the count is floored to ticks): over 96
        // ticks, one is not flagged (1.04 % read, perhaps 0), two are (at least one
        // tick, 1.04 %).
        let ticks = |steal| Snapshot {
            steal: Some(steal),
            total: Some(1096),
            load1: None,
        };
        for (steal, flagged) in [(1, false), (2, true), (3, true)] {
            let j = g.judge(&b, &ticks(steal), &seen(&[0.99, 0.99], &[0, 0], false));
            assert_eq!(j.disturbed.is_some(), flagged, "{steal} ticks: {j:?}");
            assert!(j.extra["steal_frac"] > 0.01 * steal as f64 - 1e-9);
        }
        let quiet = Snapshot {
            steal: Some(0),
            total: Some(2000),
            load1: None,
        };
        assert!(g
            .judge(&b, &quiet, &seen(&[0.5, 0.5], &[1, 2], true))
            .disturbed
            .is_none());
        let busy = g.judge(&b, &quiet, &seen(&[0.5, 0.5], &[0, 40], true));
        assert!(busy
            .disturbed
            .unwrap()
            .contains("thread 1 was preempted 40 times"));
    }

    #[test]
    fn the_gate_flags_work_that_missed_its_duration() {
        let g = Gate::default();
        let snap = Snapshot::default();
        let work = [
            WorkCheck {
                name: "critical",
                nominal_ns: 200.0,
                achieved_ns: vec![201.0, 212.0],
            },
            WorkCheck {
                name: "outside",
                nominal_ns: 20.0,
                achieved_ns: vec![40.0],
            },
        ];
        let seen = Observed {
            ratios: &[1.0, 1.0],
            preempted: &[0, 0],
            window_ns: 1_000_000_000,
            may_sleep: false,
            work: &work,
            pair_ns: None,
        };
        let why = g.judge(&snap, &snap, &seen).disturbed.unwrap();
        assert!(
            why.contains("critical work took 212 ns for 200 ns (+6.0%"),
            "{why}"
        );
        assert!(!why.contains("outside"), "{why}");
        let good = [WorkCheck {
            name: "critical",
            nominal_ns: 200.0,
            achieved_ns: vec![199.0, 204.0],
        }];
        let seen = Observed {
            work: &good,
            ..seen
        };
        assert!(g.judge(&snap, &snap, &seen).disturbed.is_none());
    }

    #[test]
    fn the_gate_flags_cpus_that_moved_during_the_window() {
        let g = Gate::default();
        let snap = Snapshot::default();
        let seen = |pair_ns| Observed {
            ratios: &[1.0, 1.0],
            preempted: &[0, 0],
            window_ns: 100_000_000,
            may_sleep: false,
            work: &[],
            pair_ns,
        };
        // Measured on the Zen 4 guest: one CCX, then two CCDs.
        let moved = g.judge(&snap, &snap, &seen(Some([22.4, 121.8])));
        let why = moved.disturbed.unwrap();
        assert!(
            why.contains("the CPUs moved: a transfer between threads 0 and 1 took 22 ns before the window and 122 ns after"),
            "{why}"
        );
        assert!((moved.extra[PAIR_TRANSFER] - 72.1).abs() < 1e-9);
        let stayed = g.judge(&snap, &snap, &seen(Some([21.8, 23.4])));
        assert!(stayed.disturbed.is_none(), "{stayed:?}");
        assert_eq!(stayed.extra[PAIR_TRANSFER_BEFORE], 21.8);
        assert_eq!(stayed.extra[PAIR_TRANSFER_AFTER], 23.4);
        let alone = g.judge(&snap, &snap, &seen(None));
        assert!(!alone.extra.contains_key(PAIR_TRANSFER));
    }
}
