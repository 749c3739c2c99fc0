//! `Env::work(ns)` natively: a spin until a clock deadline, corrected for what the
//! clock reads themselves cost, and measured where it runs.
//!
//! A counted loop calibrated once is off by 2× on a busy virtual machine: a loop's
//! speed there follows the host's other hyperthread, switching between two speeds
//! every few hundred milliseconds. A deadline spin on the TSC (spin until
//! `rdtsc() >= deadline`) does not care how fast it loops, but a read of the TSC
//! itself costs 9–17 ns there (and that cost switches too), so a plain deadline spin
//! overshoots by one read and a half, a third of a 50 ns request. So [`WorkLoop`]:
//!
//! - estimates the cost of one read as it goes, from the spacing of its own last two
//!   reads (a running mean that drops outliers: an interrupt is not a read), and
//!   ends `k` reads early: `k` is what a call costs outside the interval its two
//!   reads bracket (the first read's time before it samples, the last one's after,
//!   the loop exit), measured at calibration;
//! - carries each call's error into the next one's deadline (what the reads did
//!   measure exactly: one interval per call), so that the mean is exact even where
//!   the overshoot is not uniform (short requests), while a preemption (an error of
//!   many reads) is not paid back by later calls;
//! - counts a loop instead for requests too short for a deadline (below
//!   [`WorkLoop::short_ns`]: `DEADLINE_READS` reads and `k`), timing one call in [`TIME_EVERY`] to
//!   follow the loop's speed and carrying the error the same way.
//!
//! [`calibrate_for`] runs on the thread that will do the work, pinned, at the start
//! of every repetition, and fits the correction (`k`, or a counted call's `c`) at
//! the request lengths the run asks for, since it depends on the length;
//! [`WorkLoop::achieved_ns`] measures the mean duration of a request against the
//! clock over many calls (the median of rounds, so that a preemption does not
//! count), before and after each repetition: that is what the record reports, and
//! what the noise gate checks.

use super::env::tsc;
use std::cell::Cell;
use std::time::Instant;

/// The clock a deadline is read from.
#[derive(Debug, Clone, Copy)]
enum Source {
    /// The TSC, `ticks_per_ns` ticks per ns (where the kernel trusts it).
    Tsc { ticks_per_ns: f64 },
    /// The monotonic clock, in ns since `base` (elsewhere; a read costs 20–30 ns).
    Mono { base: Instant },
    /// No clock: a counted loop only (tests that time nothing, loom models).
    Count,
}

impl Source {
    #[inline(always)]
    fn read(self) -> u64 {
        match self {
            Source::Tsc { .. } => tsc::read(),
            Source::Mono { base } => base.elapsed().as_nanos() as u64,
            Source::Count => 0,
        }
    }

    fn ticks_per_ns(self) -> f64 {
        match self {
            Source::Tsc { ticks_per_ns } => ticks_per_ns,
            Source::Mono { .. } | Source::Count => 1.0,
        }
    }
}

/// How `Env::work` spins on one thread; [`WorkState`] is what it learns as it runs.
#[derive(Debug, Clone, Copy)]
pub struct WorkLoop {
    source: Source,
    /// One read, ticks: the starting estimate.
    read: f64,
    /// Counted-loop iterations per ns, for requests below `short_ns`: the starting
    /// estimate.
    iters_per_ns: f64,
    /// Requests below this many ns are counted, not timed.
    short_ns: u64,
    /// What a call costs besides what its reads measure, in reads, at the request
    /// lengths it was calibrated at (ascending; the first `points` are set): `k` of a
    /// deadline call (what lies outside the interval its first and last read
    /// bracket), `c` of a counted one (what an untimed call costs besides its loop).
    /// Between two lengths of one kind it is interpolated. It depends on the length:
    /// a long spin's exit is mispredicted where a short one's is not, a read's worth
    /// on a busy VM.
    besides: [(u64, f64); MAX_POINTS],
    points: usize,
}

/// The most request lengths a loop is calibrated at.
const MAX_POINTS: usize = 8;

/// What a thread's work loop learns while it runs.
#[derive(Debug)]
pub struct WorkState {
    /// Running estimate of one clock read, ticks.
    read: Cell<f64>,
    /// The last calls' error still to be made up, ticks.
    carry: Cell<f64>,
    /// Running estimate of the counted loop's iterations per ns.
    iters_per_ns: Cell<f64>,
    /// Counted calls so far (every [`TIME_EVERY`]th is timed).
    counted: Cell<u32>,
    /// What the counted calls took beyond what they were asked, in iterations: the
    /// next counted calls are shortened by it.
    owed: Cell<f64>,
}

/// One counted call in this many is timed against the clock.
const TIME_EVERY: u32 = 8;

impl WorkLoop {
    /// A counted loop of one iteration per ns: for tests that time nothing.
    pub fn uncalibrated() -> Self {
        WorkLoop {
            source: Source::Count,
            read: 1.0,
            iters_per_ns: 1.0,
            short_ns: u64::MAX,
            besides: [(0, 0.0); MAX_POINTS],
            points: 0,
        }
    }

    /// A fresh state for one thread.
    pub fn state(&self) -> WorkState {
        WorkState {
            read: Cell::new(self.read),
            carry: Cell::new(0.0),
            iters_per_ns: Cell::new(self.iters_per_ns),
            counted: Cell::new(0),
            owed: Cell::new(0.0),
        }
    }

    /// Whether durations are timed against a clock (else counted).
    pub fn is_timed(&self) -> bool {
        !matches!(self.source, Source::Count)
    }

    /// One clock read as calibrated, ns.
    pub fn read_ns(&self) -> f64 {
        self.read / self.source.ticks_per_ns()
    }

    /// What a call of `ns` costs besides what its reads measure, in reads (`k` of a
    /// deadline call, `c` of a counted one): interpolated between the calibrated
    /// lengths of its kind, the nearest one's beyond them, 0 where there is none.
    pub fn besides(&self, ns: u64) -> f64 {
        let counted = ns < self.short_ns;
        let mut below: Option<(u64, f64)> = None;
        for &(at, v) in &self.besides[..self.points] {
            if (at < self.short_ns) != counted {
                continue;
            }
            if at >= ns {
                return match below {
                    Some((a, va)) => va + (v - va) * (ns - a) as f64 / (at - a) as f64,
                    None => v,
                };
            }
            below = Some((at, v));
        }
        below.map_or(0.0, |(_, v)| v)
    }

    /// The calibrated lengths and what a call of each costs besides its reads.
    pub fn calibrated(&self) -> &[(u64, f64)] {
        &self.besides[..self.points]
    }

    /// Requests shorter than this are counted, not timed.
    pub fn short_ns(&self) -> u64 {
        self.short_ns
    }

    /// Spin for `ns`.
    #[inline]
    pub fn spin(&self, ns: u64, state: &WorkState) {
        if ns == 0 {
            return;
        }
        if ns < self.short_ns {
            self.counted(ns, state);
            return;
        }
        self.until_deadline(ns, state);
    }

    /// A request too short for a deadline: a counted loop, whose speed (which
    /// switches on a busy machine) one call in [`TIME_EVERY`] measures, and whose
    /// error (the timed calls' reads, a speed change) the next calls make up. The
    /// books are kept in iterations, so that an untimed call is a multiply and adds.
    #[inline(never)]
    fn counted(&self, ns: u64, state: &WorkState) {
        let ipn = state.iters_per_ns.get();
        let owed = state.owed.get();
        let c = self.besides(ns);
        let asked = ns as f64 * ipn;
        let n = (asked - owed).max(0.0) as u64;
        let calls = state.counted.get().wrapping_add(1);
        state.counted.set(calls);
        if calls % TIME_EVERY != 0 || !self.is_timed() {
            spin_iters(n);
            // What the call costs besides its loop, `c` reads.
            let besides = c * state.read.get() / self.source.ticks_per_ns() * ipn;
            state.owed.set(owed + n as f64 + besides - asked);
            return;
        }
        let source = self.source;
        let t0 = source.read();
        spin_iters(n);
        let t1 = source.read();
        let tpn = source.ticks_per_ns();
        let read_ns = state.read.get() / tpn;
        // The two reads bracket the loop and one read.
        let interval = t1.wrapping_sub(t0) as f64 / tpn;
        let loop_ns = interval - read_ns;
        let expected = n as f64 / ipn;
        let ipn = if n > 0 && loop_ns > 0.25 * expected && loop_ns < 4.0 * expected + read_ns {
            let ipn = ipn + (n as f64 / loop_ns.max(1.0) - ipn) / 4.0;
            state.iters_per_ns.set(ipn);
            ipn
        } else {
            ipn
        };
        // The whole call: the interval and what lies outside the reads, as a deadline
        // call's (the same two reads around a loop).
        let took = (interval + self.besides(self.short_ns) * read_ns) * ipn;
        let asked = ns as f64 * ipn;
        state
            .owed
            .set((owed + took - asked).clamp(-asked, 4.0 * asked + read_ns * ipn));
    }

    #[inline(never)]
    fn until_deadline(&self, ns: u64, state: &WorkState) {
        let source = self.source;
        let target = ns as f64 * source.ticks_per_ns();
        let read = state.read.get();
        let carry = state.carry.get();
        let t0 = source.read();
        let k = self.besides(ns);
        let goal = (target - k * read - carry).max(0.0) as u64;
        let deadline = t0.wrapping_add(goal);
        let mut prev = t0;
        let mut t = source.read();
        while t < deadline {
            prev = t;
            t = source.read();
        }
        // The last step is one read, unless something interrupted it.
        let step = t.wrapping_sub(prev) as f64;
        if step < 4.0 * read {
            state.read.set(read + (step - read) / 16.0);
        }
        let err = t.wrapping_sub(t0) as f64 + k * read + carry - target;
        if err.abs() < 8.0 * read {
            state.carry.set(err.clamp(-target, target));
        }
    }

    /// The mean wall time of `spin(ns)` on this thread, ns: rounds of calls lasting
    /// about `round_ns` each, timed against the clock as a whole (its two reads
    /// spread over the round), the median round. Starts from a fresh state, as a
    /// run's thread does.
    pub fn achieved_ns(&self, ns: u64, rounds: usize, round_ns: u64) -> f64 {
        if ns == 0 {
            return 0.0;
        }
        let state = self.state();
        let calls = (round_ns / ns).clamp(16, 1_000_000);
        for _ in 0..calls.min(256) {
            self.spin(ns, &state); // settle the estimates
        }
        let clock = Instant::now();
        let mut means: Vec<f64> = (0..rounds.max(1))
            .map(|_| {
                let t = clock.elapsed();
                for _ in 0..calls {
                    self.spin(ns, &state);
                }
                (clock.elapsed() - t).as_nanos() as f64 / calls as f64
            })
            .collect();
        means.sort_by(f64::total_cmp);
        means[means.len() / 2]
    }
}

#[inline(never)]
fn spin_iters(n: u64) {
    let mut i = 0u64;
    while i < n {
        // black_box keeps the loop from being folded away.
        i = std::hint::black_box(i) + 1;
    }
}

/// The request lengths every loop is calibrated at, ns: one deadline length at
/// each end, and (half the shortest deadline request) a counted one.
const DEFAULT_AT: [u64; 2] = [100, 1_000];

/// The largest correction a calibration sets, either way, in reads: a long spin's
/// exit can cost more than four (1 µs needed 4.3–5.3 on one vCPU of a Xeon guest).
const BESIDES_MAX: f64 = 8.0;

/// The shortest request a deadline spin serves, in reads besides what a call costs
/// outside them: its shortest call is two reads (and that), but within two reads
/// more of it what a call takes does not follow the correction smoothly (the loop's
/// exit, taken after one count of reads or the next, is predicted or not): on one
/// vCPU of a Xeon guest a 50 ns request (5.4 reads) took 50.9 ns at a correction of
/// 1.375 reads and 44.7 at 1.5, and the calibration ended 12 % long. Shorter requests
/// are counted.
const DEADLINE_READS: f64 = 4.0;

/// The median of `samples` runs of `f`.
fn median(samples: usize, mut f: impl FnMut() -> f64) -> f64 {
    let mut v: Vec<f64> = (0..samples).map(|_| f()).collect();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// [`calibrate_for`] with no particular requests.
pub fn calibrate() -> WorkLoop {
    calibrate_for(&[])
}

/// Calibrate on the calling thread (pin it first) for `requests` (ns; a run's
/// `critical` and `outside` means) besides the default lengths: the clock, the cost
/// of one read, the counted loop's speed, and at each length what a call costs
/// besides what its reads measure (its duration measured as a whole, against the
/// clock, with the current correction; the error, in reads, is what it was
/// missing). Takes 5–10 ms per length.
pub fn calibrate_for(requests: &[u64]) -> WorkLoop {
    let source = match tsc::ns_per_tick() {
        Some(ns_per_tick) if !cfg!(loom) => Source::Tsc {
            ticks_per_ns: 1.0 / ns_per_tick,
        },
        _ if cfg!(loom) => return WorkLoop::uncalibrated(),
        _ => Source::Mono {
            base: Instant::now(),
        },
    };
    let read = median(201, || {
        let a = source.read();
        let b = source.read();
        b.wrapping_sub(a) as f64
    })
    .max(1.0);
    let iters_per_ns = {
        let n = 1u64 << 16;
        spin_iters(n); // warm up
        let ns = median(5, || {
            let t = Instant::now();
            spin_iters(n);
            t.elapsed().as_nanos() as f64
        });
        n as f64 / ns.max(1.0)
    };
    let read_ns = read / source.ticks_per_ns();
    let mut wl = WorkLoop {
        source,
        read,
        iters_per_ns,
        short_ns: 0,
        besides: [(0, 0.0); MAX_POINTS],
        points: 0,
    };
    // Converge, then keep the median of five more estimates: one is off by most of a
    // read whenever the loop's speed changes while it measures.
    let calibrate_at = |wl: &mut WorkLoop, ns: u64| {
        let i = wl.points;
        wl.besides[i] = (ns, 1.0);
        wl.points += 1;
        wl.besides[..wl.points].sort_by_key(|&(at, _)| at);
        let i = wl.besides.iter().position(|&(at, _)| at == ns).unwrap_or(i);
        let estimate = |wl: &WorkLoop| {
            let achieved = wl.achieved_ns(ns, 5, 200_000);
            (wl.besides(ns) + (achieved - ns as f64) / read_ns).clamp(-BESIDES_MAX, BESIDES_MAX)
        };
        for _ in 0..3 {
            wl.besides[i].1 = estimate(wl);
        }
        wl.besides[i].1 = median(5, || estimate(wl));
    };
    // The shortest deadline length first: with it, the shortest request a deadline
    // spin serves (`DEADLINE_READS` reads and what lies outside them).
    calibrate_at(&mut wl, DEFAULT_AT[0]);
    wl.short_ns = ((DEADLINE_READS + wl.besides(DEFAULT_AT[0])) * read_ns).ceil() as u64;
    if wl.short_ns > DEFAULT_AT[0] {
        // Reads so dear that the first length is a counted one: start again.
        wl.points = 0;
        let shortest = wl.short_ns;
        calibrate_at(&mut wl, shortest);
    }
    let mut lengths: Vec<u64> = requests.iter().copied().filter(|&ns| ns > 0).collect();
    lengths.extend(DEFAULT_AT);
    lengths.push((wl.short_ns / 2).max(1));
    lengths.sort_unstable();
    lengths.dedup();
    for ns in lengths {
        if wl.points == MAX_POINTS {
            break;
        }
        if !wl.calibrated().iter().any(|&(at, _)| at == ns) {
            calibrate_at(&mut wl, ns);
        }
    }
    wl
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_uncalibrated_loop_counts_and_times_nothing() {
        let wl = WorkLoop::uncalibrated();
        assert!(!wl.is_timed());
        wl.spin(1_000, &wl.state());
        assert_eq!(wl.achieved_ns(0, 3, 1_000), 0.0);
    }

    #[test]
    fn the_correction_is_interpolated_within_its_kind() {
        let mut wl = WorkLoop::uncalibrated();
        wl.short_ns = 60;
        for (i, p) in [(30, 0.5), (100, 1.0), (200, 2.0), (1_000, 4.0)]
            .into_iter()
            .enumerate()
        {
            wl.besides[i] = p;
        }
        wl.points = 4;
        // Counted requests take the counted point, whatever the deadline ones say.
        assert_eq!(wl.besides(10), 0.5);
        assert_eq!(wl.besides(59), 0.5);
        // Deadline requests: the nearest below 100, interpolated between, the last
        // beyond.
        assert_eq!(wl.besides(60), 1.0);
        assert_eq!(wl.besides(150), 1.5);
        assert_eq!(wl.besides(600), 3.0);
        assert_eq!(wl.besides(5_000), 4.0);
        // No point of a kind: no correction.
        wl.points = 1;
        assert_eq!(wl.besides(500), 0.0);
    }

    #[test]
    fn a_loop_is_calibrated_at_the_lengths_asked_for() {
        let wl = calibrate_for(&[70, 0, 3_000]);
        let at: Vec<u64> = wl.calibrated().iter().map(|&(ns, _)| ns).collect();
        for ns in [70, 100, 1_000, 3_000] {
            assert!(at.contains(&ns), "{ns} ns not among {at:?}");
        }
        assert!(!at.contains(&0));
        assert!(at.windows(2).all(|w| w[0] < w[1]), "{at:?}");
    }

    #[test]
    fn a_calibrated_loop_takes_about_what_it_is_asked() {
        // Only a coarse check (the machine may be busy): the measurements we report
        // come from `locklab bench native` and the records.
        let wl = calibrate();
        assert!(wl.is_timed());
        assert!(wl.read_ns() > 0.0 && wl.besides(200) >= 0.0);
        let a = wl.achieved_ns(20_000, 5, 200_000);
        assert!(a >= 10_000.0, "work(20us) took {a} ns");
    }
}
