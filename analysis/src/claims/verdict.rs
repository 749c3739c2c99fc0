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
    /// The fewest repetitions behind any term (0: nothing was read). With one, every
    /// interval has zero width and the verdict rests on one seed: labels say `n = 1`.
    #[serde(default)]
    pub repetitions: usize,
    /// The points read whose repetitions the noise gate flagged (native runs that lost
    /// their CPU), by id. The command line treats a gating claim over them as undecided
    /// unless noisy points are accepted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub noisy_points: Vec<String>,
    /// The terms whose value is a lower bound: a `wait_max_ns` or `bypass_max` from a
    /// wait still running at the end of the window. Labels mark it `(lower bound)`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lower_bounds: Vec<String>,
}

impl ClaimResult {
    pub fn location(&self) -> String {
        format!("{}:{}", self.file, self.line)
    }
    /// The measured value as shown in tables, marked `(n = 1)` when it rests on one
    /// repetition (its interval has zero width whatever the noise).
    pub fn measured_label(&self) -> String {
        let text = if !self.measured_text.is_empty() {
            self.measured_text.clone()
        } else {
            match self.measured {
                Some(m) => m.label(),
                None => return "—".into(),
            }
        };
        let mut marks = Vec::new();
        if !self.lower_bounds.is_empty() {
            marks.push("lower bound");
        }
        if self.repetitions == 1 {
            marks.push("n = 1");
        }
        if marks.is_empty() {
            text
        } else {
            format!("{text} ({})", marks.join(", "))
        }
    }

    /// The verdict as shown in tables: `(not gating)`, `(noisy)` marked.
    pub fn verdict_label(&self) -> String {
        let mut v = self.verdict.as_str().to_string();
        if !self.gating && self.verdict != Verdict::Error {
            v.push_str(" (not gating)");
        }
        if !self.noisy_points.is_empty() {
            v.push_str(" (noisy)");
        }
        v
    }

    /// Why the verdict is marked noisy, when it is.
    pub fn noise_note(&self) -> Option<String> {
        (!self.noisy_points.is_empty()).then(|| {
            format!(
                "reads points the noise gate flagged: {}",
                self.noisy_points.join(", ")
            )
        })
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
