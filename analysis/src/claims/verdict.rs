//! What evaluating a claim gives: its [`Verdict`], the measured value and terms
//! ([`ClaimResult`]), and how many claims reached each verdict ([`VerdictCounts`]).

use crate::stats::Estimate;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Pass,
    Fail,
    Inconclusive,
    Error,
    Skipped,
    Report,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Inconclusive => "inconclusive",
            Verdict::Error => "error",
            Verdict::Skipped => "skipped",
            Verdict::Report => "report",
        }
    }

    /// The worst of several verdicts: error, then fail, then inconclusive, else pass.
    pub(super) fn worst(v: &[Verdict]) -> Verdict {
        for w in [Verdict::Error, Verdict::Fail, Verdict::Inconclusive] {
            if v.contains(&w) {
                return w;
            }
        }
        Verdict::Pass
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One measured term of a claim (`speedup[threads=142] over stock = 2.1 [2.0, 2.2]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Term {
    pub label: String,
    pub value: Estimate,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClaimResult {
    pub id: String,
    pub text: String,
    pub source: Option<String>,
    pub file: String,
    pub line: u32,
    pub gating: bool,
    /// The mode evaluated, when the claim does not name one.
    pub mode: Option<String>,
    /// What the claim expects (`in [1.7, 2.7]`, `ρ ≤ -0.8`, ...).
    pub expectation: String,
    /// The value compared with the expectation, with its interval.
    pub measured: Option<Estimate>,
    /// `measured` as shown in tables (a gap as a percentage); empty: the plain value.
    #[serde(default)]
    pub measured_text: String,
    pub verdict: Verdict,
    pub detail: String,
    pub terms: Vec<Term>,
}

impl ClaimResult {
    pub fn location(&self) -> String {
        format!("{}:{}", self.file, self.line)
    }
    pub fn measured_label(&self) -> String {
        if !self.measured_text.is_empty() {
            return self.measured_text.clone();
        }
        self.measured
            .map(|m| m.label())
            .unwrap_or_else(|| "—".into())
    }
}

/// How many claims reached each verdict. The command line turns the counts of the
/// gating claims into its exit code.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct VerdictCounts {
    pub pass: usize,
    pub fail: usize,
    pub inconclusive: usize,
    pub error: usize,
    pub skipped: usize,
    pub report: usize,
}

impl VerdictCounts {
    pub fn of<'a>(claims: impl IntoIterator<Item = &'a ClaimResult>) -> Self {
        let mut n = VerdictCounts::default();
        for c in claims {
            *match c.verdict {
                Verdict::Pass => &mut n.pass,
                Verdict::Fail => &mut n.fail,
                Verdict::Inconclusive => &mut n.inconclusive,
                Verdict::Error => &mut n.error,
                Verdict::Skipped => &mut n.skipped,
                Verdict::Report => &mut n.report,
            } += 1;
        }
        n
    }

    /// The verdicts of the gating claims only (`expect`, not `report`).
    pub fn gating(claims: &[ClaimResult]) -> Self {
        Self::of(claims.iter().filter(|c| c.gating))
    }
}
