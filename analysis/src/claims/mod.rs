//! Claims: each `expect` of the plan evaluated against stored results, on the
//! confidence interval rather than on the median alone.
//!
//! Verdicts ([`Verdict`]):
//!
//! * `pass`: the whole 95 % interval satisfies the claim;
//! * `fail`: the whole interval contradicts it;
//! * `inconclusive`: the interval straddles the boundary (more repetitions, or a
//!   quieter machine, would decide), or the metric has no value in any repetition
//!   because the run was too short to measure it (shorter than one fairness window);
//! * `error`: the claim could not be evaluated (a metric this mode never measures,
//!   rows the point does not have, a plan whose references are not resolved); the
//!   detail says what;
//! * `skipped`: the points the claim needs are in the plan but were not run in these
//!   results (another mode, or skipped for a stated reason), or the plan itself
//!   skips the claim (`--set` narrowed the sweep and left out what it reads);
//! * `report`: a non-gating claim; the detail says what the verdict would be.
//!
//! What a claim reads was decided by the language: every metric reference carries
//! its [`Target`] (point, baseline, rows, modes) and the claim the modes it is
//! evaluated in ([`Claim::modes`]), one result each; a reference that names its
//! `mode` is read in that one. The analysis finds those rows in the results, says
//! when they are missing, combines the selected rows of each repetition
//! ([`crate::combine`]) and estimates; it never selects points again.
//!
//! Intervals: a bare metric uses the order-statistic interval of its median
//! ([`crate::stats::median_ci`]); anything derived from several measurements
//! (`speedup`, ratios, orderings, trends) uses a seeded percentile bootstrap in
//! which each underlying set of repetitions is resampled once per draw, so a term
//! that appears twice (the baseline of S1/S10) moves together, and the sets of one
//! point in one mode are resampled by repetition together (paired: two threads of
//! one run share what the run did to both; `stats::bootstrap_paired`).
//!
//! One file per job: `context` reads the results by point and mode, `terms` reads a
//! reference at its target, `band`, `ordering` and `trend` judge one kind each,
//! `verdict` holds the result types, `json` the `claims.json` file and `table` the
//! terminal table. [`VerdictCounts`] counts the verdicts; the command line decides
//! its exit code from the gating claims' counts. The report lists `inconclusive` and
//! `skipped` claims as warnings.
//!
//! [`Target`]: locklab_model::plan::Target

mod band;
mod context;
mod json;
mod ordering;
mod table;
mod terms;
mod trend;
mod verdict;

pub use json::{read_claims_json, write_claims_json};
pub use table::claims_table;
pub use terms::{expr_label, metric_label};
pub use verdict::{ClaimResult, Term, Verdict, VerdictCounts};

use crate::stats::{self, Estimate};
use context::Ctx;
use locklab_model::plan::{Claim, ClaimKind, Expr, MetricRef, Mode, Plan, TrendSeries};
use std::collections::BTreeSet;
use terms::{names_mode, Reading, Res, Why};

/// What evaluating a claim in one mode gave.
struct Outcome {
    expectation: String,
    measured: Option<Estimate>,
    measured_text: String,
    verdict: Verdict,
    detail: String,
    terms: Vec<Term>,
}

impl Outcome {
    /// A verdict without a measurement (an error, a skipped claim).
    fn plain(claim: &Claim, verdict: Verdict, detail: String) -> Self {
        Outcome {
            expectation: expectation_of(claim),
            measured: None,
            measured_text: String::new(),
            verdict,
            detail,
            terms: Vec::new(),
        }
    }
}

fn expectation_of(c: &Claim) -> String {
    match &c.kind {
        ClaimKind::Band {
            expr,
            lo,
            hi,
            strict,
            ..
        } => band::expectation(expr, *lo, *hi, *strict),
        ClaimKind::Ordering {
            op,
            min_gap,
            or_equal,
            ..
        } => ordering::expectation(*op, *min_gap, or_equal),
        ClaimKind::Trend {
            axis,
            direction,
            min_rho,
            ..
        } => trend::expectation(axis, *direction, *min_rho),
    }
}

/// Every reference the claim reads (a trend: each step's), and whether each
/// reference as written names its mode.
fn read_refs(c: &Claim) -> (Vec<&MetricRef>, bool) {
    let mut out = Vec::new();
    match &c.kind {
        ClaimKind::Band { expr, .. } => out.extend(expr.metrics()),
        ClaimKind::Ordering { exprs, .. } => out.extend(exprs.iter().flat_map(Expr::metrics)),
        ClaimKind::Trend { metric, series, .. } => {
            if let TrendSeries::Steps { steps } = series {
                out.extend(steps.iter().map(|s| &s.metric));
            }
            return (out, names_mode(metric));
        }
    }
    let named = out.iter().all(|m| names_mode(m));
    (out, named)
}

/// The indices of the points a claim reads (baselines included), as the plan resolved
/// them; none for a claim the plan skips.
pub fn points_read(c: &Claim) -> BTreeSet<u32> {
    if c.skipped.is_some() {
        return BTreeSet::new();
    }
    let (refs, _) = read_refs(c);
    let mut out: BTreeSet<u32> = refs
        .iter()
        .flat_map(|m| [Some(m.target.point), m.target.baseline])
        .flatten()
        .collect();
    if let ClaimKind::Trend {
        series: TrendSeries::Rows { target },
        ..
    } = &c.kind
    {
        out.insert(target.point);
    }
    out
}

/// Does the plan say what the claim reads? A plan written before references were
/// resolved does not; nothing can be read from it.
fn resolved(plan: &Plan, c: &Claim) -> std::result::Result<(), String> {
    let stale = || {
        "this claim's references are not resolved in the plan (a plan written by an older locklab); run the experiment again".to_string()
    };
    let (refs, _) = read_refs(c);
    let empty_trend = matches!(
        &c.kind,
        ClaimKind::Trend { series: TrendSeries::Steps { steps }, .. } if steps.is_empty()
    );
    if c.modes.is_empty() || empty_trend {
        return Err(stale());
    }
    let rows = match &c.kind {
        ClaimKind::Trend {
            metric,
            series: TrendSeries::Rows { target },
            ..
        } => Some((metric, target)),
        _ => None,
    };
    let n = plan.points.len() as u32;
    for (m, t) in refs.iter().map(|m| (*m, &m.target)).chain(rows) {
        if t.is_unresolved() {
            return Err(stale());
        }
        if let Some(p) = [Some(t.point), t.baseline]
            .into_iter()
            .flatten()
            .find(|p| *p >= n)
        {
            return Err(format!(
                "{} reads point {p}, which the plan does not have",
                metric_label(m)
            ));
        }
    }
    Ok(())
}

/// What a verdict rests on: the fewest repetitions behind a term, and the points read
/// that the noise gate flagged.
#[derive(Default)]
struct Basis {
    repetitions: usize,
    noisy_points: Vec<String>,
    lower_bounds: Vec<String>,
}

fn evaluate_in(ctx: &Ctx, claim: &Claim, mode: Mode) -> Res<(Outcome, Basis)> {
    let seed = stats::seed_for(&format!("{}|{}|{}", claim.id, claim.text, mode.as_str()));
    let mut r = Reading::new(ctx, mode, seed);
    let outcome = judge(&mut r, claim)?;
    let basis = Basis {
        repetitions: r.repetitions(),
        noisy_points: r.noisy_points(),
        lower_bounds: r.lower_bounds(),
    };
    Ok((outcome, basis))
}

fn judge(r: &mut Reading, claim: &Claim) -> Res<Outcome> {
    let r = &mut *r;
    match &claim.kind {
        ClaimKind::Band {
            expr,
            lo,
            hi,
            strict,
        } => band::evaluate(
            r,
            &band::Band {
                expr,
                lo: *lo,
                hi: *hi,
                strict: *strict,
            },
        ),
        ClaimKind::Ordering {
            exprs,
            op,
            min_gap,
            or_equal,
        } => ordering::evaluate(
            r,
            &ordering::Order {
                exprs,
                op: *op,
                min_gap: *min_gap,
                or_equal,
            },
        ),
        ClaimKind::Trend {
            metric,
            axis,
            direction,
            min_rho,
            series,
            ..
        } => trend::evaluate(
            r,
            &trend::Trend {
                metric,
                axis,
                direction: *direction,
                min_rho: *min_rho,
                series,
            },
        ),
    }
}

/// The result of `claim` in `mode` (`None`: not labelled by mode); a non-gating
/// claim reports what its verdict would be.
fn result(claim: &Claim, mode: Option<Mode>, o: Outcome, basis: Basis) -> ClaimResult {
    let (verdict, detail) = if !claim.gating && o.verdict != Verdict::Error {
        (
            Verdict::Report,
            format!("not gating; would be {}: {}", o.verdict, o.detail),
        )
    } else {
        (o.verdict, o.detail)
    };
    ClaimResult {
        id: claim.id.clone(),
        text: claim.text.clone(),
        source: claim.source.clone(),
        file: claim.file.clone(),
        line: claim.line,
        gating: claim.gating,
        mode: mode.map(|m| m.as_str().to_string()),
        expectation: o.expectation,
        measured: o.measured,
        measured_text: o.measured_text,
        verdict,
        detail,
        terms: o.terms,
        repetitions: basis.repetitions,
        noisy_points: basis.noisy_points,
        lower_bounds: basis.lower_bounds,
    }
}

fn evaluate_claim(ctx: &Ctx, claim: &Claim) -> Vec<ClaimResult> {
    if let Some(why) = &claim.skipped {
        let o = Outcome::plain(claim, Verdict::Skipped, why.clone());
        return vec![result(claim, None, o, Basis::default())];
    }
    if let Err(why) = resolved(ctx.plan, claim) {
        return vec![result(
            claim,
            None,
            Outcome::plain(claim, Verdict::Error, why),
            Basis::default(),
        )];
    }
    // A claim whose every reference names its mode has one mode here: its first
    // reference's.
    let (_, explicit) = read_refs(claim);
    let mut done = Vec::new();
    let mut not_run = Vec::new();
    for &mode in &claim.modes {
        let plain = |v: Verdict, why: String| Outcome::plain(claim, v, why);
        match evaluate_in(ctx, claim, mode) {
            Ok((o, basis)) => done.push((mode, o, basis)),
            Err(Why::Error(e)) => done.push((mode, plain(Verdict::Error, e), Basis::default())),
            Err(Why::NotRun(why)) => not_run.push(why),
            Err(Why::NotMeasured(why)) => {
                done.push((mode, plain(Verdict::Inconclusive, why), Basis::default()))
            }
        }
    }
    if done.is_empty() {
        let why = not_run.join("; ");
        return vec![result(
            claim,
            None,
            Outcome::plain(claim, Verdict::Skipped, why),
            Basis::default(),
        )];
    }
    let per_mode = !explicit && (done.len() > 1 || ctx.modes.len() > 1);
    done.into_iter()
        .map(|(mode, o, basis)| result(claim, per_mode.then_some(mode), o, basis))
        .collect()
}

/// Evaluate every claim of `plan` against `results`, in plan order.
pub fn evaluate(plan: &Plan, results: &crate::store::Results) -> Vec<ClaimResult> {
    if plan.claims.is_empty() {
        return Vec::new();
    }
    let ctx = match Ctx::new(plan, results) {
        Ok(c) => c,
        Err(e) => {
            let why = format!("cannot read the results: {e}");
            return plan
                .claims
                .iter()
                .map(|c| {
                    let o = Outcome::plain(c, Verdict::Error, why.clone());
                    result(c, None, o, Basis::default())
                })
                .collect();
        }
    };
    plan.claims
        .iter()
        .flat_map(|c| evaluate_claim(&ctx, c))
        .collect()
}
