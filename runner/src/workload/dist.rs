//! Durations drawn from a plan's [`Dist`]: one sampler for every workload and both
//! executors. A random stream supplies the uniform draws ([`Uniform`]); the sampler
//! turns them into a duration.
//!
//! Two streams feed it, each with its own (long-standing, record-defining) uniform
//! draws: a thread's `Env::random` ([`EnvDraws`]: an integer by modulo, a real as
//! `(k + 1) / 2^53`) and the scheduler model's SplitMix64 (an integer by
//! multiply-shift, a real as `1 - k / 2^53`). Both reals lie in (0, 1], so the logarithms
//! below are finite.

use crate::env::Env;
use crate::rng::SplitMix64;
use locklab_model::plan::Dist;

/// A source of uniform draws.
pub trait Uniform {
    /// Uniform in `[lo, hi]`, `lo <= hi`.
    fn int_in(&mut self, lo: u64, hi: u64) -> u64;
    /// Uniform in (0, 1].
    fn unit(&mut self) -> f64;
}

/// Draw a duration (ns) from `d`. Normal draws are clamped at 0.
pub fn sample(d: &Dist, u: &mut impl Uniform) -> u64 {
    match *d {
        Dist::Fixed { ns } => ns,
        Dist::Uniform { lo_ns, hi_ns } => u.int_in(lo_ns.min(hi_ns), lo_ns.max(hi_ns)),
        Dist::Exp { mean_ns } => (-(mean_ns as f64) * u.unit().ln()).round() as u64,
        Dist::Normal { mean_ns, sd_ns } => {
            // Box-Muller.
            let (u1, u2) = (u.unit(), u.unit());
            let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
            (mean_ns as f64 + sd_ns as f64 * z).max(0.0).round() as u64
        }
    }
}

/// [`sample`] from a thread's `Env::random`. Inline for a fixed duration (it draws
/// nothing): the native measured loop calls it twice per acquisition.
#[inline]
pub fn sample_env<E: Env>(d: &Dist, env: &E) -> u64 {
    if let Dist::Fixed { ns } = *d {
        return ns;
    }
    sample(d, &mut EnvDraws(env))
}

/// The uniform draws of a thread's `Env::random`.
pub struct EnvDraws<'a, E>(pub &'a E);

impl<E: Env> Uniform for EnvDraws<'_, E> {
    fn int_in(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.0.random() % (hi - lo + 1)
    }

    fn unit(&mut self) -> f64 {
        ((self.0.random() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }
}

impl Uniform for SplitMix64 {
    fn int_in(&mut self, lo: u64, hi: u64) -> u64 {
        self.range(lo, hi)
    }

    fn unit(&mut self) -> f64 {
        1.0 - self.next_f64()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_stay_in_range_and_means_come_out_right() {
        let mut r = SplitMix64::new(7);
        let n = 20_000;
        let mean = |d: &Dist, r: &mut SplitMix64| {
            (0..n).map(|_| sample(d, r) as f64).sum::<f64>() / n as f64
        };
        assert_eq!(sample(&Dist::Fixed { ns: 5 }, &mut r), 5);
        for _ in 0..1_000 {
            let v = sample(
                &Dist::Uniform {
                    lo_ns: 30,
                    hi_ns: 10,
                },
                &mut r,
            );
            assert!((10..=30).contains(&v), "{v}");
        }
        let exp = mean(&Dist::Exp { mean_ns: 1_000 }, &mut r);
        assert!((950.0..1_050.0).contains(&exp), "{exp}");
        let normal = mean(
            &Dist::Normal {
                mean_ns: 1_000,
                sd_ns: 100,
            },
            &mut r,
        );
        assert!((990.0..1_010.0).contains(&normal), "{normal}");
    }
}
