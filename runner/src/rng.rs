//! Deterministic random numbers: SplitMix64 (Steele, Lea, Flood 2014), small, fast and
//! good enough for think times and coin flips; plus the seed mixing used for reps and
//! threads. Every random stream of both executors is one of these.
//!
//! ```
//! use locklab_runner::rng::mix;
//! // A repetition's seed: the same for a given point seed and rep, on any machine.
//! assert_eq!(mix(42, 0), mix(42, 0));
//! ```

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        finalize(self.state)
    }

    /// Uniform in [0, 1).
    #[inline]
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in [lo, hi] (inclusive).
    #[inline]
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            return lo;
        }
        let span = hi - lo + 1;
        lo + ((self.next_u64() as u128 * span as u128) >> 64) as u64
    }
}

#[inline]
fn finalize(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Mix two values into a seed (order matters): the repetition seed is
/// `mix(point.seed, rep)`, a thread's is `mix(rep_seed, thread)`.
pub fn mix(a: u64, b: u64) -> u64 {
    finalize(a ^ finalize(b.wrapping_add(0x9E37_79B9_7F4A_7C15)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix_matches_the_reference_sequence() {
        // First outputs for seed 1234567 from the reference C implementation.
        let mut r = SplitMix64::new(1234567);
        assert_eq!(r.next_u64(), 6457827717110365317);
        assert_eq!(r.next_u64(), 3203168211198807973);
    }

    #[test]
    fn mix_separates_reps_and_threads() {
        assert_ne!(mix(1, 0), mix(1, 1));
        assert_ne!(mix(1, 2), mix(2, 1));
        let mut r = SplitMix64::new(9);
        for _ in 0..1000 {
            let v = r.range(3, 7);
            assert!((3..=7).contains(&v));
        }
    }
}
