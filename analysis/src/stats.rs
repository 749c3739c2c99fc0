//! Deterministic statistics over repetitions: median with an order-statistic
//! confidence interval, a seeded bootstrap for derived quantities, Spearman's ρ.
//!
//! Every interval here is 95 %. NaN samples (a metric that did not apply in one
//! repetition) are dropped before anything is computed.

use serde::{Deserialize, Serialize};

/// Confidence level of every interval.
pub const CONFIDENCE: f64 = 0.95;
/// Bootstrap resamples per estimate.
pub const BOOTSTRAP_RESAMPLES: usize = 2000;
/// Seed of every bootstrap, so the same results always give the same intervals.
pub const BOOTSTRAP_SEED: u64 = 0x6c6f_636b_6c61_6221;

/// A measured value with its 95 % confidence interval. In JSON a value that does
/// not apply (NaN) is `null` and an infinite one (an interval's end over a divisor
/// that is zero in some resamples) the string `"inf"` or `"-inf"`: JSON has no
/// number for either, and both read back as they were written.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    #[serde(with = "json_f64")]
    pub value: f64,
    #[serde(with = "json_f64")]
    pub lo: f64,
    #[serde(with = "json_f64")]
    pub hi: f64,
    /// Samples behind it (repetitions); 0 when nothing was measured.
    pub n: usize,
}

impl Estimate {
    pub fn nan() -> Self {
        Estimate {
            value: f64::NAN,
            lo: f64::NAN,
            hi: f64::NAN,
            n: 0,
        }
    }

    pub fn exact(v: f64, n: usize) -> Self {
        Estimate {
            value: v,
            lo: v,
            hi: v,
            n,
        }
    }

    pub fn is_nan(&self) -> bool {
        self.value.is_nan()
    }

    /// `1.23 [1.20, 1.31]` (the interval omitted when it is a single value).
    pub fn label(&self) -> String {
        use crate::util::fmt_num;
        if self.lo == self.hi || (self.lo.is_nan() && self.hi.is_nan()) {
            fmt_num(self.value)
        } else {
            format!(
                "{} [{}, {}]",
                fmt_num(self.value),
                fmt_num(self.lo),
                fmt_num(self.hi)
            )
        }
    }
}

fn finite_sorted(xs: &[f64]) -> Vec<f64> {
    let mut v: Vec<f64> = xs.iter().copied().filter(|x| !x.is_nan()).collect();
    v.sort_by(f64::total_cmp);
    v
}

fn median_sorted(v: &[f64]) -> f64 {
    let n = v.len();
    match n {
        0 => f64::NAN,
        _ if n % 2 == 1 => v[n / 2],
        _ => {
            let (a, b) = (v[n / 2 - 1], v[n / 2]);
            if a.is_infinite() || b.is_infinite() {
                if a == b {
                    a
                } else {
                    b
                }
            } else {
                (a + b) / 2.0
            }
        }
    }
}

pub fn median(xs: &[f64]) -> f64 {
    median_sorted(&finite_sorted(xs))
}

/// How many order statistics to drop at each end for a 95 % interval on the median
/// of `n` samples: the interval [x₍ₖ₊₁₎, x₍ₙ₋ₖ₎] covers the median with probability
/// 1 − 2·P(Binomial(n, ½) ≤ k), so k is the largest with P(X ≤ k) ≤ 2.5 %. Zero for
/// n ≤ 8: the interval is then [min, max] (coverage 1 − 2^(1−n), below 95 % for
/// n ≤ 5).
pub fn order_stat_trim(n: usize) -> usize {
    if n == 0 {
        return 0;
    }
    let alpha = (1.0 - CONFIDENCE) / 2.0;
    // P(X <= j) accumulated in log space, stable for large n.
    let ln2n = n as f64 * std::f64::consts::LN_2;
    let mut ln_c = 0.0f64; // ln C(n, 0)
    let mut cdf = 0.0f64;
    let mut k = 0;
    for j in 0..n {
        cdf += (ln_c - ln2n).exp();
        if cdf <= alpha {
            k = j;
        } else {
            break;
        }
        ln_c += ((n - j) as f64).ln() - ((j + 1) as f64).ln();
    }
    k
}

/// Median and its distribution-free 95 % interval from order statistics.
pub fn median_ci(xs: &[f64]) -> Estimate {
    let v = finite_sorted(xs);
    let n = v.len();
    if n == 0 {
        return Estimate::nan();
    }
    let k = order_stat_trim(n);
    Estimate {
        value: median_sorted(&v),
        lo: v[k],
        hi: v[n - 1 - k],
        n,
    }
}

/// splitmix64: small, fast, and the same on every platform.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: usize) -> usize {
        ((self.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * n as f64) as usize % n.max(1)
    }
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Seed derived from a text key, so each estimate has its own stream regardless of
/// evaluation order.
pub fn seed_for(key: &str) -> u64 {
    // FNV-1a
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in key.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h ^ BOOTSTRAP_SEED
}

/// Percentile bootstrap of statistics computed from the medians of several sample
/// sets. Each resample draws every set with replacement (once per resample, so a set
/// shared by several terms moves them together), takes each set's median and hands
/// the medians to `stats`. Returns, per statistic, the value on the original data
/// and its 95 % interval. The sets are independent (see [`bootstrap_paired`]).
/// Resamples where a statistic is infinite or NaN are kept, not dropped (see
/// [`percentile_interval`]).
pub fn bootstrap(
    sets: &[Vec<f64>],
    seed: u64,
    stats: impl Fn(&[f64]) -> Vec<f64>,
) -> Vec<Estimate> {
    let samples: Vec<Samples> = sets
        .iter()
        .enumerate()
        .map(|(i, s)| Samples {
            values: s,
            reps: &[],
            group: i,
        })
        .collect();
    bootstrap_paired(&samples, seed, stats)
}

/// One set of repetition values for [`bootstrap_paired`]: `values[i]` was measured
/// in repetition `reps[i]` of the run `group` names.
#[derive(Debug, Clone, Copy)]
pub struct Samples<'a> {
    pub values: &'a [f64],
    pub reps: &'a [u32],
    pub group: usize,
}

/// [`bootstrap`], with the sets of one group paired: sets measured in the same
/// repetitions of one run (two threads of a point, a point's throughput and one of
/// its threads' waits) are resampled by repetition together, so what a repetition
/// did to all of them (a slow spell of the machine, a different seed) moves them
/// together and a ratio between them sees only how they differ within repetitions.
/// A set alone in its group is resampled on its own, exactly as `bootstrap` does.
pub fn bootstrap_paired(
    sets: &[Samples],
    seed: u64,
    stats: impl Fn(&[f64]) -> Vec<f64>,
) -> Vec<Estimate> {
    let finite: Vec<Vec<f64>> = sets.iter().map(|s| finite_sorted(s.values)).collect();
    let medians: Vec<f64> = finite.iter().map(|s| median_sorted(s)).collect();
    let point = stats(&medians);
    let n = finite.iter().map(Vec::len).min().unwrap_or(0);
    // Groups of more than one set: the repetitions any of their sets has a value
    // for, and each set's values by repetition.
    let groups = sets.iter().map(|s| s.group + 1).max().unwrap_or(0);
    let mut members = vec![0usize; groups];
    for s in sets {
        members[s.group] += 1;
    }
    let by_rep: Vec<Vec<(u32, f64)>> = sets
        .iter()
        .map(|s| {
            if members[s.group] < 2 {
                return Vec::new();
            }
            debug_assert_eq!(s.reps.len(), s.values.len(), "a paired set's repetitions");
            // NaN is missing; an infinite value (`max_min` of a starved thread) is not.
            let mut v: Vec<(u32, f64)> = s
                .reps
                .iter()
                .copied()
                .zip(s.values.iter().copied())
                .filter(|(_, x)| !x.is_nan())
                .collect();
            v.sort_by_key(|&(r, _)| r);
            v
        })
        .collect();
    let mut universe: Vec<Vec<u32>> = vec![Vec::new(); groups];
    for (s, v) in sets.iter().zip(&by_rep) {
        universe[s.group].extend(v.iter().map(|&(r, _)| r));
    }
    for u in &mut universe {
        u.sort_unstable();
        u.dedup();
    }
    let mut draws: Vec<Vec<f64>> = vec![Vec::with_capacity(BOOTSTRAP_RESAMPLES); point.len()];
    let mut rng = Rng::new(seed);
    let mut buf = Vec::new();
    let mut drawn: Vec<Option<Vec<u32>>> = vec![None; groups];
    let mut m = vec![0.0; sets.len()];
    for _ in 0..BOOTSTRAP_RESAMPLES {
        drawn.iter_mut().for_each(|d| *d = None);
        for (i, s) in finite.iter().enumerate() {
            buf.clear();
            let g = sets[i].group;
            if members[g] < 2 {
                if s.len() <= 1 {
                    m[i] = medians[i];
                    continue;
                }
                buf.extend((0..s.len()).map(|_| s[rng.below(s.len())]));
            } else {
                let u = &universe[g];
                if u.len() <= 1 {
                    m[i] = medians[i];
                    continue;
                }
                let reps = drawn[g]
                    .get_or_insert_with(|| (0..u.len()).map(|_| u[rng.below(u.len())]).collect());
                let v = &by_rep[i];
                buf.extend(reps.iter().filter_map(|r| {
                    v.binary_search_by_key(r, |&(rep, _)| rep)
                        .ok()
                        .map(|k| v[k].1)
                }));
                if buf.is_empty() {
                    m[i] = medians[i];
                    continue;
                }
            }
            buf.sort_by(f64::total_cmp);
            m[i] = median_sorted(&buf);
        }
        for (d, v) in draws.iter_mut().zip(stats(&m)) {
            d.push(v);
        }
    }
    point
        .into_iter()
        .zip(draws)
        .map(|(value, d)| {
            if value.is_nan() {
                return Estimate {
                    value,
                    lo: f64::NAN,
                    hi: f64::NAN,
                    n,
                };
            }
            let (lo, hi) = percentile_interval(d);
            Estimate {
                value,
                lo: lo.min(value),
                hi: hi.max(value),
                n,
            }
        })
        .collect()
}

/// The 2.5 % and 97.5 % points of the bootstrap draws `d` (the draw at index
/// ⌊q·m⌋ of m, sorted). An infinite draw (a resample whose divisor's median is 0)
/// is a value, and sorts at its end. A draw with no value (NaN: 0 / 0, inf − inf in
/// a resample) is not dropped, which would judge the claim on the resamples that
/// happen to have one: it could be anything, so it counts as −inf for the lower end
/// and +inf for the upper one. More than 2.5 % of them make the interval unbounded
/// at both ends, and every claim on it inconclusive.
fn percentile_interval(mut d: Vec<f64>) -> (f64, f64) {
    let alpha = (1.0 - CONFIDENCE) / 2.0;
    let m = d.len();
    if m == 0 {
        return (f64::NAN, f64::NAN);
    }
    d.retain(|v| !v.is_nan());
    d.sort_by(f64::total_cmp);
    let none = m - d.len();
    let at = |q: f64| ((q * m as f64).floor() as usize).min(m - 1);
    // Lower end: the NaN draws first (as −inf), then the values.
    let lo = match at(alpha).checked_sub(none) {
        Some(i) => d[i],
        None => f64::NEG_INFINITY,
    };
    // Upper end: the values, then the NaN draws (as +inf).
    let hi = d.get(at(1.0 - alpha)).copied().unwrap_or(f64::INFINITY);
    (lo, hi)
}

/// Ranks with ties averaged (1-based).
fn ranks(xs: &[f64]) -> Vec<f64> {
    let mut idx: Vec<usize> = (0..xs.len()).collect();
    idx.sort_by(|&a, &b| xs[a].total_cmp(&xs[b]));
    let mut r = vec![0.0; xs.len()];
    let mut i = 0;
    while i < idx.len() {
        let mut j = i;
        while j + 1 < idx.len() && xs[idx[j + 1]] == xs[idx[i]] {
            j += 1;
        }
        let avg = (i + j) as f64 / 2.0 + 1.0;
        for &k in &idx[i..=j] {
            r[k] = avg;
        }
        i = j + 1;
    }
    r
}

/// Spearman's rank correlation (Pearson on tie-averaged ranks). 0 when either side
/// is constant; NaN with fewer than two pairs or any NaN.
pub fn spearman(x: &[f64], y: &[f64]) -> f64 {
    if x.len() != y.len() || x.len() < 2 || x.iter().chain(y).any(|v| v.is_nan()) {
        return f64::NAN;
    }
    let (rx, ry) = (ranks(x), ranks(y));
    let n = x.len() as f64;
    let (mx, my) = (rx.iter().sum::<f64>() / n, ry.iter().sum::<f64>() / n);
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in rx.iter().zip(&ry) {
        sxy += (a - mx) * (b - my);
        sxx += (a - mx).powi(2);
        syy += (b - my).powi(2);
    }
    if sxx == 0.0 || syy == 0.0 {
        0.0
    } else {
        sxy / (sxx * syy).sqrt()
    }
}

/// An `f64` in JSON: a number when finite, `null` for NaN, `"inf"` / `"-inf"` for the
/// infinities (serde_json alone writes all three as `null`, which it then refuses to
/// read back as an `f64`).
pub(crate) mod json_f64 {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        if v.is_finite() {
            s.serialize_f64(*v)
        } else if v.is_nan() {
            s.serialize_none()
        } else if *v > 0.0 {
            s.serialize_str("inf")
        } else {
            s.serialize_str("-inf")
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Repr {
            Number(f64),
            Text(String),
        }
        match Option::<Repr>::deserialize(d)? {
            None => Ok(f64::NAN),
            Some(Repr::Number(v)) => Ok(v),
            Some(Repr::Text(t)) => match t.as_str() {
                "inf" | "+inf" | "infinity" => Ok(f64::INFINITY),
                "-inf" | "-infinity" => Ok(f64::NEG_INFINITY),
                "nan" | "NaN" => Ok(f64::NAN),
                other => Err(serde::de::Error::custom(format!(
                    "expected a number, null, \"inf\" or \"-inf\", found \"{other}\""
                ))),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trim_matches_binomial_tables() {
        // Known values for the 95 % interval of the median.
        assert_eq!(order_stat_trim(5), 0);
        assert_eq!(order_stat_trim(8), 0);
        assert_eq!(order_stat_trim(9), 1);
        assert_eq!(order_stat_trim(25), 7);
        assert_eq!(order_stat_trim(100), 39);
    }

    #[test]
    fn median_ci_drops_nan_and_orders() {
        let e = median_ci(&[3.0, f64::NAN, 1.0, 2.0]);
        assert_eq!((e.value, e.lo, e.hi, e.n), (2.0, 1.0, 3.0, 3));
        assert!(median_ci(&[]).is_nan());
    }

    #[test]
    fn bootstrap_is_deterministic_and_brackets_the_value() {
        let sets = vec![
            vec![10.0, 11.0, 9.0, 10.5, 9.5],
            vec![5.0, 5.1, 4.9, 5.05, 4.95],
        ];
        let f = |m: &[f64]| vec![m[0] / m[1]];
        let a = bootstrap(&sets, 7, f);
        let b = bootstrap(&sets, 7, f);
        assert_eq!(a, b);
        assert_eq!(a[0].value, 2.0);
        assert!(a[0].lo < 2.0 && a[0].hi > 2.0);
    }

    #[test]
    fn paired_sets_move_together_by_repetition() {
        // Two threads of one point: every repetition ran at its own speed (a factor
        // common to both), and thread 0 waited 1.00-1.04 x thread 1 in each.
        let t1 = [1_000.0, 1_900.0, 1_300.0, 2_100.0, 1_600.0];
        let t0: Vec<f64> = t1
            .iter()
            .zip([1.0, 1.02, 1.04, 1.01, 1.03])
            .map(|(a, k)| a * k)
            .collect();
        let reps = [0, 1, 2, 3, 4];
        let ratio = |m: &[f64]| vec![m[0] / m[1]];
        // Thread 0 against `other`, in the same run (group 0) or apart (group 1).
        let against = |other: &[f64], group| {
            let sets = [
                Samples {
                    values: &t0,
                    reps: &reps,
                    group: 0,
                },
                Samples {
                    values: other,
                    reps: &reps,
                    group,
                },
            ];
            bootstrap_paired(&sets, 7, ratio)[0]
        };
        let (paired, apart) = (against(&t1, 0), against(&t1, 1));
        // Paired: the interval is that of the per-repetition ratios.
        assert!(paired.lo >= 0.95 && paired.hi <= 1.1, "{paired:?}");
        // Independent: the repetitions' speeds swamp the difference.
        assert!(apart.lo < 0.8 && apart.hi > 1.25, "{apart:?}");
        assert_eq!(paired.value, apart.value);
        // Independent sets give exactly `bootstrap`'s answer.
        assert_eq!(apart, bootstrap(&[t0.clone(), t1.to_vec()], 7, ratio)[0]);
        // A repetition missing from one set (not measured there) is left out of that
        // set's resample only; the others stay paired.
        let short = [t1[0], t1[1], f64::NAN, t1[3], t1[4]];
        let (paired, apart) = (against(&short, 0), against(&short, 1));
        assert!(paired.lo.is_finite() && paired.hi.is_finite(), "{paired:?}");
        assert!(
            paired.hi - paired.lo < apart.hi - apart.lo,
            "{paired:?} {apart:?}"
        );
        // An infinite value is a value (a thread that never acquired), not a gap:
        // a resample drawing it in three repetitions of five has an infinite median.
        let starved = [f64::INFINITY, f64::INFINITY, 3.0, 3.0, 3.0];
        let e = against(&starved, 0);
        assert!(e.value > 100.0, "{e:?}");
        assert_eq!(e.lo, 0.0, "{e:?}");
    }

    #[test]
    fn draws_that_divide_by_zero_are_kept() {
        // The divisor is 0 in one repetition of three: 7 resamples in 27 draw it at
        // least twice, and their ratio is +inf. Kept, they reach the upper end.
        let sets = vec![vec![400.0, 401.0, 402.0], vec![0.0, 273.0, 272.0]];
        let e = bootstrap(&sets, 7, |m| vec![m[0] / m[1]])[0];
        assert_eq!(e.value, 401.0 / 272.0);
        assert!(e.lo >= 400.0 / 273.0 && e.hi == f64::INFINITY, "{e:?}");
        // 0 / 0 has no value: counted against both ends, not dropped.
        let sets = vec![vec![0.0, 0.0, 400.0], vec![0.0, 273.0, 272.0]];
        let e = bootstrap(&sets, 7, |m| vec![m[0] / m[1]])[0];
        assert_eq!(
            (e.value, e.lo, e.hi),
            (0.0, f64::NEG_INFINITY, f64::INFINITY)
        );
    }

    #[test]
    fn draws_without_a_value_count_against_both_ends() {
        let values = |nan: usize| -> Vec<f64> {
            (0..2000 - nan)
                .map(|i| i as f64)
                .chain((0..nan).map(|_| f64::NAN))
                .collect()
        };
        // None: the 2.5 % and 97.5 % points, the draws at 50 and 1950.
        assert_eq!(percentile_interval(values(0)), (50.0, 1950.0));
        // 20 (1 %): as many below the lower end and above the upper one.
        assert_eq!(percentile_interval(values(20)), (30.0, 1950.0));
        // 50 (2.5 %): the lower end is the last finite before them.
        assert_eq!(percentile_interval(values(50)), (0.0, f64::INFINITY));
        // More than 2.5 %: unbounded at both ends.
        assert_eq!(
            percentile_interval(values(51)),
            (f64::NEG_INFINITY, f64::INFINITY)
        );
        let inf = vec![1.0; 1900].into_iter().chain(vec![f64::INFINITY; 100]);
        assert_eq!(percentile_interval(inf.collect()), (1.0, f64::INFINITY));
    }

    #[test]
    fn spearman_with_ties() {
        assert_eq!(spearman(&[1.0, 2.0, 3.0], &[10.0, 20.0, 30.0]), 1.0);
        assert_eq!(spearman(&[1.0, 2.0, 3.0], &[3.0, 2.0, 1.0]), -1.0);
        assert_eq!(spearman(&[1.0, 2.0, 3.0], &[5.0, 5.0, 5.0]), 0.0);
        let r = spearman(&[1.0, 2.0, 3.0, 4.0], &[1.0, 3.0, 2.0, 4.0]);
        assert!((r - 0.8).abs() < 1e-12);
    }
}
