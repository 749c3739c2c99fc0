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
//!   reads bracket (the first read's time before it samples, the last one's after),
//!   measured at calibration;
//! - carries each call's error into the next one's deadline (what the reads did
//!   measure exactly: one interval per call), so that the mean is exact even where
//!   the overshoot is not uniform (short requests), while a preemption (an error of
//!   many reads) is not paid back by later calls;
//! - counts a loop instead for requests too short for two reads (below
//!   [`WorkLoop::short_ns`], 20–40 ns), where a deadline cannot be met anyway.
//!
//! [`calibrate`] runs on the thread that will do the work, pinned, at the start of
//! every repetition; [`WorkLoop::achieved_ns`] measures the mean duration of a
//! request against the clock over many calls (the median of rounds, so that a
//! preemption does not count), before and after each repetition: that is what the
//! record reports, and what the noise gate checks.

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
    /// Ticks a call spends outside the interval its first and last read bracket, in
    /// units of one read.
    k: f64,
    /// One read, ticks: the starting estimate.
    read: f64,
    /// Counted-loop iterations per ns, for requests below `short_ns`.
    iters_per_ns: f64,
    /// Requests below this many ns are counted, not timed.
    short_ns: u64,
}

/// What a thread's work loop learns while it runs.
#[derive(Debug)]
pub struct WorkState {
    /// Running estimate of one clock read, ticks.
    read: Cell<f64>,
    /// The last calls' error still to be made up, ticks.
    carry: Cell<f64>,
}

impl WorkLoop {
    /// A counted loop of one iteration per ns: for tests that time nothing.
    pub fn uncalibrated() -> Self {
        WorkLoop {
            source: Source::Count,
            k: 0.0,
            read: 1.0,
            iters_per_ns: 1.0,
            short_ns: u64::MAX,
        }
    }

    /// A fresh state for one thread.
    pub fn state(&self) -> WorkState {
        WorkState {
            read: Cell::new(self.read),
            carry: Cell::new(0.0),
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

    /// The calibrated outside-the-reads cost of a call, in reads.
    pub fn k(&self) -> f64 {
        self.k
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
            spin_iters((ns as f64 * self.iters_per_ns) as u64);
            return;
        }
        self.until_deadline(ns, state);
    }

    #[inline(never)]
    fn until_deadline(&self, ns: u64, state: &WorkState) {
        let source = self.source;
        let target = ns as f64 * source.ticks_per_ns();
        let read = state.read.get();
        let carry = state.carry.get();
        let t0 = source.read();
        let goal = (target - self.k * read - carry).max(0.0) as u64;
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
        let err = t.wrapping_sub(t0) as f64 + self.k * read + carry - target;
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

/// The request `k` is calibrated on, ns.
const CALIBRATION_NS: u64 = 50;

/// The median of `samples` runs of `f`.
fn median(samples: usize, mut f: impl FnMut() -> f64) -> f64 {
    let mut v: Vec<f64> = (0..samples).map(|_| f()).collect();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Calibrate on the calling thread (pin it first): the clock, the cost of one read,
/// the counted loop's speed, and `k` (the duration of short calls measured as a
/// whole, against the clock, with the deadline corrected by the current `k`; the
/// error, in reads, is what `k` was missing). Takes about 10 ms.
pub fn calibrate() -> WorkLoop {
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
        k: 1.0,
        read,
        iters_per_ns,
        short_ns: 0,
    };
    // Measured on the shortest request the gate checks (50 ns), where an error in `k`
    // weighs most (a read is a fifth of it). Converge, then keep the median of five
    // more estimates: one is off by most of a read whenever the loop's speed changes
    // while it measures.
    let estimate = |wl: &WorkLoop| {
        let achieved = wl.achieved_ns(CALIBRATION_NS, 5, 200_000);
        (wl.k + (achieved - CALIBRATION_NS as f64) / read_ns).clamp(0.0, 4.0)
    };
    for _ in 0..3 {
        wl.k = estimate(&wl);
    }
    wl.k = median(5, || estimate(&wl));
    // Two reads and what lies outside them: the least a deadline spin takes.
    wl.short_ns = ((2.0 + wl.k) * read_ns).ceil().min(40.0) as u64;
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
    fn a_calibrated_loop_takes_about_what_it_is_asked() {
        // Only a coarse check (the machine may be busy): the measurements we report
        // come from `locklab bench native` and the records.
        let wl = calibrate();
        assert!(wl.is_timed());
        assert!(wl.read_ns() > 0.0 && wl.k() >= 0.0);
        let a = wl.achieved_ns(20_000, 5, 200_000);
        assert!(a >= 10_000.0, "work(20us) took {a} ns");
    }
}
