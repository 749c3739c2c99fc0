//! `--set` narrows a sweep (`--set lock=ticket` to rerun one lock). A claim or plot
//! of the file that reads what the narrowed sweep leaves out is then skipped, with
//! the reason, rather than refused; a mode left without points runs nothing.
//!
//! Which ones those are is decided by expanding the file as written too: a claim
//! that reads there a point whose value of a `--set` axis is left out is skipped,
//! whatever that does to it in the narrowed sweep (a value it selects is gone, a
//! baseline a `where` only kept at a value left out, a trend left with fewer
//! steps). Any other failure is an error, told as such: the file's (it fails as
//! written too) or the `--set`'s (a value added that a selector does not pin).
//! Claims are matched by their place in the file, plots likewise.

use super::refs::example;
use crate::units::cmp_values;
use locklab_model::plan::{
    Axis, Claim, ClaimKind, Expr, MetricRef, Mode, Plan, PlotSpec, Target, TrendSeries, Value,
};

/// The experiment as written, beside the `--set` that narrows it.
pub struct Narrowing {
    whole: Plan,
    /// `--set` as given: (axis, values as written).
    sets: Vec<(String, String)>,
}

/// At most this many left-out values are named in a reason.
const MAX_NAMED: usize = 4;

impl Narrowing {
    pub fn new(whole: Plan, sets: &[(String, String)]) -> Narrowing {
        Narrowing {
            whole,
            sets: sets.to_vec(),
        }
    }

    /// Whether the experiment as written runs any point in `mode`.
    pub fn runs_in(&self, mode: Mode) -> bool {
        self.whole.points.iter().any(|p| p.modes.contains(&mode))
    }

    /// The `--set` options as the user wrote them (those of `axes`, or all), with
    /// the verb: "`--set lock=ticket` leaves", "`--set a=1` and `--set b=2` leave".
    pub fn leave(&self, axes: Option<&[String]>) -> String {
        let sets: Vec<String> = self
            .sets
            .iter()
            .filter(|(k, _)| axes.is_none_or(|a| a.contains(k)))
            .map(|(k, v)| format!("`--set {k}={}`", shortened(v)))
            .collect();
        let verb = if sets.len() == 1 { "leaves" } else { "leave" };
        format!("{} {verb}", sets.join(" and "))
    }

    /// The claim at `index` (in file order) as written, skipped: its references
    /// unresolved, no modes, and why (what of it the narrowed `axes` leave out).
    /// `resolves`: whether the narrowed sweep could read it. If so, it is skipped
    /// only when it names a value left out (a trend's step): a claim that does not
    /// name the axis is judged at the axis's new values. If not, when a point it
    /// reads as written has a value left out; `None` otherwise (the failure is then
    /// the file's, or the `--set`'s, e.g. a value added that a selector does not
    /// pin).
    pub fn skipped_claim(&self, index: usize, axes: &[Axis], resolves: bool) -> Option<Claim> {
        let c = self.whole.claims.get(index)?;
        let mut kind = c.kind.clone();
        let mut refs: Vec<&MetricRef> = Vec::new();
        let mut rows = None;
        match &kind {
            ClaimKind::Band { expr, .. } => refs.extend(expr.metrics()),
            ClaimKind::Ordering { exprs, .. } => refs.extend(exprs.iter().flat_map(Expr::metrics)),
            ClaimKind::Trend { series, .. } => match series {
                TrendSeries::Steps { steps } => refs.extend(steps.iter().map(|s| &s.metric)),
                TrendSeries::Rows { target } => rows = Some(target),
            },
        }
        let why = if resolves {
            let named = refs
                .iter()
                .flat_map(|m| m.select.iter().chain(&m.baseline_select))
                .map(|(k, v)| (k.as_str(), v));
            self.reason(named, axes)
        } else {
            let targets = refs.iter().map(|m| &m.target).chain(rows);
            self.reason(self.values_read(targets), axes)
        }?;
        // Nothing is read for a skipped claim.
        match &mut kind {
            ClaimKind::Band { expr, .. } => unresolve(expr),
            ClaimKind::Ordering { exprs, .. } => exprs.iter_mut().for_each(unresolve),
            ClaimKind::Trend { metric, series, .. } => {
                metric.target = Target::default();
                *series = TrendSeries::default();
            }
        }
        Some(Claim {
            kind,
            modes: Vec::new(),
            skipped: Some(why),
            ..c.clone()
        })
    }

    /// Plot `index` (in file order) as written, not drawn: no targets, and why (what
    /// of it the narrowed `axes` leave out). `None`: nothing it shows is left out.
    pub fn skipped_plot(&self, index: usize, axes: &[Axis]) -> Option<PlotSpec> {
        let p = self.whole.plots.get(index)?;
        let why = self.reason(self.values_read(p.targets.iter()), axes)?;
        Some(PlotSpec {
            targets: Vec::new(),
            skipped: Some(why),
            ..p.clone()
        })
    }

    /// The axis values of the points `targets` read as written, baselines included.
    fn values_read<'a>(
        &'a self,
        targets: impl Iterator<Item = &'a Target> + 'a,
    ) -> impl Iterator<Item = (&'a str, &'a Value)> + 'a {
        targets
            .flat_map(|t| [Some(t.point), t.baseline])
            .flatten()
            .filter_map(|i| self.whole.points.get(i as usize))
            .flat_map(|p| p.axes.iter().map(|(k, v)| (k.as_str(), v)))
    }

    /// Which of `values` (axis, value) the narrowed `axes` leave out: those of `--set`
    /// axes no longer swept, said as the reason. `None` when there are none.
    fn reason<'v>(
        &self,
        values: impl Iterator<Item = (&'v str, &'v Value)>,
        axes: &[Axis],
    ) -> Option<String> {
        let swept = |axis: &str, v: &Value| {
            axes.iter().find(|a| a.name == axis).is_some_and(|a| {
                a.values
                    .iter()
                    .any(|x| cmp_values(x, v) == Some(std::cmp::Ordering::Equal))
            })
        };
        let mut left_out: Vec<(&str, String)> = Vec::new();
        for (axis, v) in values {
            let Some((set, _)) = self.sets.iter().find(|(k, _)| k == axis) else {
                continue;
            };
            let text = example(axis, v);
            if !swept(axis, v) && !left_out.iter().any(|(_, t)| *t == text) {
                left_out.push((set, text));
            }
        }
        if left_out.is_empty() {
            return None;
        }
        let named: Vec<String> = self
            .sets
            .iter()
            .map(|(k, _)| k.clone())
            .filter(|k| left_out.iter().any(|(a, _)| a == k))
            .collect();
        let values: Vec<&str> = left_out.iter().map(|(_, t)| t.as_str()).collect();
        let shown = if values.len() > MAX_NAMED {
            format!(
                "`{}` and {} more",
                values[..MAX_NAMED].join("`, `"),
                values.len() - MAX_NAMED
            )
        } else {
            format!("`{}`", values.join("`, `"))
        };
        Some(format!("{} out {shown}", self.leave(Some(&named))))
    }
}

fn unresolve(e: &mut Expr) {
    for m in e.metrics_mut() {
        m.target = Target::default();
    }
}

/// A `--set` value list as a reason quotes it: long lists cut (every skipped claim
/// repeats it).
fn shortened(values: &str) -> String {
    const MAX: usize = 40;
    match values.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", &values[..cut]),
        None => values.to_string(),
    }
}
