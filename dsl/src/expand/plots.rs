//! Plots: a metric against an axis or dimension, one series per value of the `by`
//! axes, over the points the selection resolves to.

use super::refs::{resolve_plot, written, Scope};
use crate::diag::did_you_mean;
use crate::resolve::Ctx;
use crate::syntax::PlotStmt;
use locklab_model::plan::{PlotSpec, DIMENSIONS};

/// A `plot` statement to a plot, its points resolved.
pub fn plot(ctx: &mut Ctx, scope: &Scope, p: &PlotStmt) -> Option<PlotSpec> {
    let file = scope.file;
    let known = |n: &str| scope.axes.iter().any(|a| a.name == n) || DIMENSIONS.contains(&n);
    let mut ok = true;
    for a in std::iter::once(&p.x).chain(&p.by) {
        if !known(&a.name) {
            ok = false;
            if scope.sweep_unparsed {
                continue;
            }
            let cands: Vec<&str> = scope
                .axes
                .iter()
                .map(|a| a.name.as_str())
                .chain(DIMENSIONS.iter().copied())
                .collect();
            let help = did_you_mean(&a.name, cands.iter().copied());
            let d = ctx
                .err(file, a.span, format!("unknown axis `{}` in a plot", a.name))
                .set_label("not an axis");
            d.help = help;
            ok = false;
        }
    }
    let w = written(ctx, scope, &[], &p.metric)?;
    if !ok {
        return None;
    }
    let targets = resolve_plot(ctx, scope, &w)?;
    Some(PlotSpec {
        title: p.title.clone(),
        metric: w.mref.metric,
        x: p.x.name.clone(),
        group_by: p.by.iter().map(|b| b.name.clone()).collect(),
        select: w.mref.select,
        baseline: w.mref.baseline,
        log_x: p.log_x,
        log_y: p.log_y,
        targets,
        skipped: None,
    })
}
