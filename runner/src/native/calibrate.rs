//! Calibrated spin delays for `Env::work`: a counted loop whose speed is measured
//! against the monotonic clock once per process, and the achieved duration of a
//! nominal one reported next to it.

use std::sync::OnceLock;
use std::time::Instant;

/// A counted busy loop; `iters_per_ns` from calibration.
#[derive(Debug, Clone, Copy)]
pub struct WorkLoop {
    iters_per_ns: f64,
}

impl WorkLoop {
    /// One iteration per ns (for tests that do not time anything).
    pub fn uncalibrated() -> Self {
        WorkLoop { iters_per_ns: 1.0 }
    }

    pub fn iters_per_ns(&self) -> f64 {
        self.iters_per_ns
    }

    #[inline]
    pub fn spin(&self, ns: u64) {
        if ns == 0 {
            return;
        }
        let n = (ns as f64 * self.iters_per_ns) as u64;
        spin_iters(n);
    }

    /// Mean wall time of `spin(ns)`, measured over enough calls to last ~2 ms (best
    /// of three rounds, so that a preemption does not count).
    pub fn achieved_ns(&self, ns: u64) -> f64 {
        if ns == 0 {
            return 0.0;
        }
        let calls = (2_000_000 / ns.max(1)).clamp(1, 100_000);
        let mut best = f64::INFINITY;
        for _ in 0..3 {
            let t = Instant::now();
            for _ in 0..calls {
                self.spin(ns);
            }
            best = best.min(t.elapsed().as_nanos() as f64 / calls as f64);
        }
        best
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

/// Measure the loop: best of five 2 ms rounds.
pub fn calibrate() -> WorkLoop {
    let n = 1u64 << 20;
    spin_iters(n); // warm up (frequency ramp, caches)
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        let t = Instant::now();
        spin_iters(n);
        best = best.min(t.elapsed().as_nanos() as f64);
    }
    WorkLoop {
        iters_per_ns: n as f64 / best.max(1.0),
    }
}

/// The process's calibration, measured on first use.
pub fn work_loop() -> WorkLoop {
    static CAL: OnceLock<WorkLoop> = OnceLock::new();
    *CAL.get_or_init(calibrate)
}
