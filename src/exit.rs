//! Exit codes: documented and stable (README, `locklab --help`). Chosen here only.

use locklab_analysis::{ClaimResult, VerdictCounts};

/// Every gating claim holds (or there were none), or the command succeeded.
pub const OK: i32 = 0;
/// At least one gating claim failed.
pub const CLAIM_FAILED: i32 = 1;
/// Invalid input or usage: a parse or semantic error, a bad flag, a missing file.
pub const INVALID_INPUT: i32 = 2;
/// The run could not complete (an executor error, an unwritable results directory).
pub const RUN_FAILED: i32 = 3;
/// The environment refused (e.g. pinning impossible, cross-host comparison refused).
pub const ENVIRONMENT: i32 = 4;

/// The exit code the claims call for: [`CLAIM_FAILED`] when a gating claim failed or
/// could not be evaluated, else [`OK`]. Inconclusive and skipped claims do not fail a
/// run (the report lists them as warnings), and a claim that does not gate never does.
pub fn for_claims(claims: &[ClaimResult]) -> i32 {
    let gating = VerdictCounts::gating(claims);
    if gating.fail + gating.error > 0 {
        CLAIM_FAILED
    } else {
        OK
    }
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
    use locklab_analysis::Verdict;

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
        }
    }

    #[test]
    fn only_a_failed_or_erroneous_gating_claim_fails_the_run() {
        use Verdict::*;
        assert_eq!(for_claims(&[]), OK);
        for v in [Pass, Inconclusive, Skipped] {
            assert_eq!(for_claims(&[claim(true, Pass), claim(true, v)]), OK, "{v}");
        }
        for v in [Fail, Error] {
            assert_eq!(
                for_claims(&[claim(true, Pass), claim(true, v)]),
                CLAIM_FAILED
            );
            assert_eq!(for_claims(&[claim(false, v)]), OK, "{v} not gating");
        }
        assert_eq!(for_claims(&[claim(false, Report)]), OK);
    }
}
