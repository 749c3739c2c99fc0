//! [`Ns`]: a machine cost in nanoseconds, kept to the picosecond.
//!
//! A measured host's costs are fractions of a nanosecond apart: a compare-and-swap on
//! an owned line of a Zen 4 takes 1.8 ns, a full fence 1.4 ns. Rounded to whole
//! nanoseconds they were simulated 11 % and 29 % off what was measured, and every lock
//! whose one-thread cost is a few such operations with them. A topology's costs are
//! therefore `Ns`, and the simulator's clock counts picoseconds.
//!
//! ```
//! use locklab_model::time::Ns;
//! assert_eq!(Ns::whole(2).ps(), 2_000);
//! assert_eq!(Ns::from_ns_f64(1.8).ps(), 1_800);
//! assert_eq!(Ns::from_ps(1_800).to_string(), "1.8");
//! assert_eq!(Ns::whole(17).to_string(), "17");
//! ```
//!
//! Serialized (a plan, a manifest), an `Ns` is its nanoseconds: an integer when it is
//! whole, so that the plans of topologies with whole costs, and their fingerprints,
//! are those they had before costs could be fractions.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// Picoseconds in a nanosecond.
pub const PS_PER_NS: u64 = 1_000;

/// The most a topology may say one operation costs: 1 s (a futex wake-up's latency is
/// tens of microseconds), far inside the 64 bits of the simulator's picosecond clock,
/// which stops at about 53 days of virtual time.
pub const MAX_COST: Ns = Ns::whole(1_000_000_000);

/// A cost in nanoseconds, to the picosecond.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ns(u64);

impl Ns {
    pub const ZERO: Ns = Ns(0);

    /// `ns` whole nanoseconds.
    pub const fn whole(ns: u64) -> Ns {
        Ns(ns * PS_PER_NS)
    }

    pub const fn from_ps(ps: u64) -> Ns {
        Ns(ps)
    }

    /// `ns` nanoseconds, rounded to the picosecond; negative or not finite is 0.
    pub fn from_ns_f64(ns: f64) -> Ns {
        if ns.is_finite() && ns > 0.0 {
            Ns((ns * PS_PER_NS as f64).round() as u64)
        } else {
            Ns(0)
        }
    }

    pub const fn ps(self) -> u64 {
        self.0
    }

    pub fn as_f64(self) -> f64 {
        self.0 as f64 / PS_PER_NS as f64
    }

    /// The nearest whole number of nanoseconds (half up).
    pub const fn round_ns(self) -> u64 {
        (self.0 + PS_PER_NS / 2) / PS_PER_NS
    }

    pub const fn is_zero(self) -> bool {
        self.0 == 0
    }

    pub const fn is_whole(self) -> bool {
        self.0 % PS_PER_NS == 0
    }

    pub const fn saturating_sub(self, other: Ns) -> Ns {
        Ns(self.0.saturating_sub(other.0))
    }
}

impl std::ops::Add for Ns {
    type Output = Ns;
    fn add(self, other: Ns) -> Ns {
        Ns(self.0 + other.0)
    }
}

impl fmt::Display for Ns {
    /// Nanoseconds, as few decimals as it has (`17`, `1.8`, `0.125`); a width pads.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (whole, frac) = (self.0 / PS_PER_NS, self.0 % PS_PER_NS);
        if frac == 0 {
            return f.pad(&whole.to_string());
        }
        let digits = format!("{frac:03}");
        f.pad(&format!("{whole}.{}", digits.trim_end_matches('0')))
    }
}

impl Serialize for Ns {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.is_whole() {
            s.serialize_u64(self.0 / PS_PER_NS)
        } else {
            s.serialize_f64(self.as_f64())
        }
    }
}

impl<'de> Deserialize<'de> for Ns {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Ns, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Num {
            Whole(u64),
            Frac(f64),
        }
        match Num::deserialize(d)? {
            Num::Whole(ns) => ns
                .checked_mul(PS_PER_NS)
                .map(Ns)
                .ok_or_else(|| serde::de::Error::custom(format!("{ns} ns is too large"))),
            Num::Frac(ns) if ns.is_finite() && ns >= 0.0 && ns < (u64::MAX / PS_PER_NS) as f64 => {
                Ok(Ns::from_ns_f64(ns))
            }
            Num::Frac(ns) => Err(serde::de::Error::custom(format!("{ns} ns is not a cost"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_costs_serialize_as_they_did_and_fractions_round_trip() {
        let whole = serde_json::to_string(&Ns::whole(17)).unwrap();
        assert_eq!(whole, "17");
        let frac = serde_json::to_string(&Ns::from_ps(1_800)).unwrap();
        assert_eq!(frac, "1.8");
        for s in ["17", "1.8", "0.001", "221.3"] {
            let n: Ns = serde_json::from_str(s).unwrap();
            assert_eq!(serde_json::to_string(&n).unwrap(), s);
        }
        assert!(serde_json::from_str::<Ns>("-1").is_err());
        assert!(serde_json::from_str::<Ns>("-1.5").is_err());
    }

    #[test]
    fn display_trims_and_rounds() {
        assert_eq!(Ns::from_ps(125).to_string(), "0.125");
        assert_eq!(Ns::from_ps(2_500).round_ns(), 3);
        assert_eq!(Ns::from_ps(2_499).round_ns(), 2);
        assert_eq!(Ns::from_ns_f64(-3.0), Ns::ZERO);
    }
}
