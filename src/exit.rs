//! Exit codes: documented and stable (README, `locklab --help`). Chosen here only.
//!
//! When several apply, the first of this order wins: 3 (the run could not complete, a
//! simulated deadlock), 4 (the environment refused, pinning impossible for a gating
//! point), 1 (a gating claim failed), 5 (a gating claim left undecided), 0.

use locklab_analysis::pipeline::SkippedPoint;
use locklab_analysis::{ClaimResult, Verdict};
use locklab_model::records::SkipCause;
use std::collections::BTreeSet;

/// Every gating claim was decided and holds (or there were none), or the command
/// succeeded.
pub const OK: i32 = 0;
/// At least one gating claim failed (or could not be evaluated: an error in the claim).
pub const CLAIM_FAILED: i32 = 1;
/// Invalid input or usage: a parse or semantic error, a bad flag, a missing file,
/// nothing to run in the requested mode.
pub const INVALID_INPUT: i32 = 2;
/// The run could not complete (an executor error, a simulated deadlock, an unwritable
/// results directory).
pub const RUN_FAILED: i32 = 3;
/// The environment refused (pinning impossible for a point a gating claim reads, a
/// cross-host comparison).
pub const ENVIRONMENT: i32 = 4;
/// No gating claim failed, but at least one was left undecided: inconclusive, skipped
/// (its point not run, or left out by `--set`), or reading points the noise gate
/// flagged.
pub const UNDECIDED: i32 = 5;

/// What the user accepts in place of a decided, clean verdict.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Accept {
    /// `--accept-undecided`: undecided gating claims do not change the exit code.
    pub undecided: bool,
    /// `--accept-noisy`: claims over noise-flagged points count with their verdict.
    pub noisy: bool,
}

/// Is this gating claim decided, given what the user accepts?
fn decided(c: &ClaimResult, accept: Accept) -> bool {
    let clean = c.noisy_points.is_empty() || accept.noisy;
    clean && matches!(c.verdict, Verdict::Pass | Verdict::Fail | Verdict::Error)
}

/// The exit code the claims call for: [`CLAIM_FAILED`] when a decided gating claim
/// failed or could not be evaluated, else [`UNDECIDED`] when a gating claim is left
/// undecided (unless accepted), else [`OK`]. A claim that does not gate never counts.
pub fn for_claims(claims: &[ClaimResult], accept: Accept) -> i32 {
    let gating: Vec<&ClaimResult> = claims.iter().filter(|c| c.gating).collect();
    let failed = gating
        .iter()
        .any(|c| c.verdict == Verdict::Error || (c.verdict == Verdict::Fail && decided(c, accept)));
    if failed {
        CLAIM_FAILED
    } else if !accept.undecided && gating.iter().any(|c| !decided(c, accept)) {
        UNDECIDED
    } else {
        OK
    }
}

/// Why a run's records alone call for an exit code: a simulated deadlock, or pinning
/// impossible for a point a gating claim reads (or for every point that was run).
#[derive(Debug, Clone, PartialEq)]
pub struct RecordsVerdict {
    pub code: i32,
    /// One line per point that calls for it.
    pub lines: Vec<String>,
    /// Every (point, mode) of the run was refused, not only gating ones.
    pub all: bool,
}

/// Did the machine refuse to run this point where its placement puts it: pinning
/// impossible, or a native point this host cannot hold (a CPU or node it does not
/// have)? A simulated point the model cannot hold is the file's doing, not the
/// environment's.
fn refused_by_environment(s: &SkippedPoint) -> bool {
    match s.cause {
        Some(SkipCause::Pinning) => true,
        Some(SkipCause::Host) => s.mode == "native",
        _ => false,
    }
}

/// The exit code the skipped records call for, if any: [`RUN_FAILED`] for a simulated
/// deadlock, [`ENVIRONMENT`] when the machine refused a point (pinning impossible, or
/// a native point the host cannot hold) in `gating_points` or every one of the
/// `pairs` (point, mode) pairs the run covered.
pub fn for_skips(
    skips: &[SkippedPoint],
    gating_points: &BTreeSet<u32>,
    pairs: usize,
) -> Option<RecordsVerdict> {
    let line = |s: &SkippedPoint| {
        format!(
            "point {} [{}] lock {}: {}",
            s.point_id, s.mode, s.lock, s.reason
        )
    };
    let of = |cause: SkipCause| skips.iter().filter(move |s| s.cause == Some(cause));
    let deadlocks: Vec<String> = of(SkipCause::Deadlock).map(line).collect();
    if !deadlocks.is_empty() {
        return Some(RecordsVerdict {
            code: RUN_FAILED,
            lines: deadlocks,
            all: false,
        });
    }
    let refused = || skips.iter().filter(|s| refused_by_environment(s));
    let pinned: BTreeSet<(u32, &str)> = refused().map(|s| (s.point, s.mode.as_str())).collect();
    let all_pinning = pairs > 0 && pinned.len() >= pairs;
    let pinning: Vec<String> = refused()
        .filter(|s| all_pinning || gating_points.contains(&s.point))
        .map(line)
        .collect();
    (!pinning.is_empty()).then_some(RecordsVerdict {
        code: ENVIRONMENT,
        lines: pinning,
        all: all_pinning,
    })
}

/// An error that carries the exit code it should produce.
#[derive(Debug)]
pub struct Failure {
    pub code: i32,
    pub error: anyhow::Error,
}

impl Failure {
    pub fn new(code: i32, error: impl Into<anyhow::Error>) -> Self {
        Failure {
            code,
            error: error.into(),
        }
    }
}

impl<E: Into<anyhow::Error>> From<E> for Failure {
    fn from(e: E) -> Self {
        Failure {
            code: RUN_FAILED,
            error: e.into(),
        }
    }
}

pub type Result<T> = std::result::Result<T, Failure>;

/// Attach an exit code to any error.
pub trait WithCode<T> {
    fn code(self, code: i32) -> Result<T>;
}

impl<T, E: Into<anyhow::Error>> WithCode<T> for std::result::Result<T, E> {
    fn code(self, code: i32) -> Result<T> {
        self.map_err(|e| Failure::new(code, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim(gating: bool, verdict: Verdict) -> ClaimResult {
        ClaimResult {
            id: "c1".into(),
            text: String::new(),
            source: None,
            file: "x.lab".into(),
            line: 1,
            gating,
            mode: None,
            expectation: String::new(),
            measured: None,
            measured_text: String::new(),
            verdict,
            detail: String::new(),
            terms: Vec::new(),
            repetitions: 3,
            noisy_points: Vec::new(),
            lower_bounds: Vec::new(),
        }
    }

    fn noisy(verdict: Verdict) -> ClaimResult {
        ClaimResult {
            noisy_points: vec!["threads=2".into()],
            ..claim(true, verdict)
        }
    }

    const STRICT: Accept = Accept {
        undecided: false,
        noisy: false,
    };

    #[test]
    fn only_decided_holding_gating_claims_give_zero() {
        use Verdict::*;
        assert_eq!(for_claims(&[], STRICT), OK);
        assert_eq!(for_claims(&[claim(true, Pass)], STRICT), OK);
        for v in [Inconclusive, Skipped] {
            let cs = [claim(true, Pass), claim(true, v)];
            assert_eq!(for_claims(&cs, STRICT), UNDECIDED, "{v}");
            let accept = Accept {
                undecided: true,
                ..STRICT
            };
            assert_eq!(for_claims(&cs, accept), OK, "{v} accepted");
            assert_eq!(for_claims(&[claim(false, v)], STRICT), OK, "{v} not gating");
        }
        for v in [Fail, Error] {
            let cs = [claim(true, Pass), claim(true, Inconclusive), claim(true, v)];
            assert_eq!(for_claims(&cs, STRICT), CLAIM_FAILED, "{v}");
            assert_eq!(for_claims(&[claim(false, v)], STRICT), OK, "{v} not gating");
        }
        assert_eq!(for_claims(&[claim(false, Report)], STRICT), OK);
    }

    #[test]
    fn a_claim_over_noisy_points_is_undecided_unless_noise_is_accepted() {
        use Verdict::*;
        for v in [Pass, Fail] {
            assert_eq!(for_claims(&[noisy(v)], STRICT), UNDECIDED, "{v}");
        }
        let accept = Accept {
            noisy: true,
            ..STRICT
        };
        assert_eq!(for_claims(&[noisy(Pass)], accept), OK);
        assert_eq!(for_claims(&[noisy(Fail)], accept), CLAIM_FAILED);
        let mut quiet = noisy(Pass);
        quiet.gating = false;
        assert_eq!(for_claims(&[quiet], STRICT), OK);
    }

    fn skip(point: u32, cause: SkipCause) -> SkippedPoint {
        SkippedPoint {
            point,
            point_id: format!("threads={point}"),
            mode: "native".into(),
            lock: "tas".into(),
            cause: Some(cause),
            reason: "why".into(),
        }
    }

    #[test]
    fn a_deadlock_fails_the_run_and_pinning_refused_for_a_gating_point_is_the_environment() {
        let gating: BTreeSet<u32> = [1].into();
        assert_eq!(for_skips(&[], &gating, 4), None);
        assert_eq!(for_skips(&[skip(0, SkipCause::Host)], &gating, 4), None);
        let d = for_skips(&[skip(0, SkipCause::Deadlock)], &gating, 4).unwrap();
        assert_eq!(d.code, RUN_FAILED);
        assert_eq!(d.lines, ["point threads=0 [native] lock tas: why"]);
        assert_eq!(for_skips(&[skip(0, SkipCause::Pinning)], &gating, 4), None);
        let p = for_skips(&[skip(1, SkipCause::Pinning)], &gating, 4).unwrap();
        assert_eq!(p.code, ENVIRONMENT);
        // Every record refused: nothing was measured at all.
        let all = [skip(0, SkipCause::Pinning), skip(2, SkipCause::Pinning)];
        assert_eq!(
            for_skips(&all, &BTreeSet::new(), 2).unwrap().code,
            ENVIRONMENT
        );
        let both = [skip(1, SkipCause::Pinning), skip(0, SkipCause::Deadlock)];
        assert_eq!(for_skips(&both, &gating, 4).unwrap().code, RUN_FAILED);
    }

    #[test]
    fn a_native_point_the_host_cannot_hold_is_the_environment_a_simulated_one_is_not() {
        let gating: BTreeSet<u32> = [1].into();
        // `placement = [4095]` natively: "CPU 4095 is not on this machine".
        let host = skip(1, SkipCause::Host);
        let v = for_skips(std::slice::from_ref(&host), &gating, 4).unwrap();
        assert_eq!((v.code, v.all), (ENVIRONMENT, false));
        // Not read by a gating claim, but every point of the run refused.
        let v = for_skips(&[skip(0, SkipCause::Host)], &BTreeSet::new(), 1).unwrap();
        assert_eq!((v.code, v.all), (ENVIRONMENT, true));
        assert_eq!(
            for_skips(&[skip(0, SkipCause::Host)], &BTreeSet::new(), 2),
            None
        );
        let sim = SkippedPoint {
            mode: "sim".into(),
            ..host
        };
        assert_eq!(for_skips(&[sim], &gating, 4), None);
    }
}
