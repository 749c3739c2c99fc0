//! The figure model: what a figure shows, before it is drawn.

use super::format::Unit;
use std::path::PathBuf;

/// A rendered figure.
#[derive(Debug, Clone)]
pub struct Figure {
    /// File stem (`throughput_vs_threads-sim`).
    pub name: String,
    pub title: String,
    /// What the figure shows, for the report.
    pub caption: String,
    pub svg: String,
    pub svg_path: PathBuf,
    pub png_path: PathBuf,
}

#[derive(Debug, Clone, Default)]
pub(super) struct Line {
    pub(super) name: String,
    /// (x, y, lo, hi)
    pub(super) pts: Vec<(f64, f64, f64, f64)>,
    /// (colour, variant): series that share the first grouping key share a colour, the
    /// second key changes marker and dash. `None`: one style per series, in order.
    pub(super) style: Option<(usize, usize)>,
}

impl Line {
    pub(super) fn new(name: String, pts: Vec<(f64, f64, f64, f64)>) -> Self {
        Line {
            name,
            pts,
            style: None,
        }
    }
}

/// A claim's bound drawn on a figure: a horizontal mark at `y`, across the figure, or
/// only over the x range `x` of the points the claims are about.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Bound {
    pub(super) y: f64,
    pub(super) x: Option<(f64, f64)>,
    /// `s10_lock2 ≥ 1.7`.
    pub(super) label: String,
}

/// A vertical marker on a thread axis: where the threads first reach a new NUMA node.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Boundary {
    pub(super) x: f64,
    pub(super) label: String,
}

#[derive(Debug, Clone, Default)]
pub(super) struct LineFig {
    pub(super) x_label: String,
    pub(super) y_label: String,
    pub(super) x_unit: Unit,
    pub(super) y_unit: Unit,
    pub(super) lines: Vec<Line>,
    pub(super) log_x: bool,
    pub(super) log_y: bool,
    /// Category names when x is categorical (x = index).
    pub(super) x_cats: Option<Vec<String>>,
    pub(super) markers_only: bool,
    /// Claims' bounds on the y values shown.
    pub(super) bounds: Vec<Bound>,
    /// Node boundaries on a thread axis.
    pub(super) boundaries: Vec<Boundary>,
    /// x is a swept axis: a series is not joined across an x value it was not
    /// measured at but another series was.
    pub(super) swept_x: bool,
}

/// A series of bars: its name and, per category, (value, lo, hi).
pub(super) type BarGroup = (String, Vec<(f64, f64, f64)>);

#[derive(Debug, Clone)]
pub(super) struct BarFig {
    pub(super) x_label: String,
    pub(super) y_label: String,
    pub(super) cats: Vec<String>,
    /// (series name, per category (y, lo, hi))
    pub(super) groups: Vec<BarGroup>,
    pub(super) log_y: bool,
}

#[derive(Debug, Clone)]
pub(super) struct HeatFig {
    /// Row (from) and column (to) labels: node ids.
    pub(super) nodes: Vec<u32>,
    /// [from][to]
    pub(super) value: Vec<Vec<f64>>,
    pub(super) count: Vec<Vec<f64>>,
    pub(super) value_label: String,
}

#[derive(Debug, Clone)]
pub(super) enum Kind {
    Line(LineFig),
    Bar(BarFig),
    Heat(HeatFig),
}

#[derive(Debug, Clone)]
pub(super) struct Fig {
    pub(super) name: String,
    pub(super) title: String,
    pub(super) caption: String,
    pub(super) kind: Kind,
}

pub(super) fn wants_log(vals: impl Iterator<Item = f64>) -> bool {
    let v: Vec<f64> = vals.filter(|x| x.is_finite()).collect();
    if v.is_empty() || v.iter().any(|x| *x <= 0.0) {
        return false;
    }
    let (lo, hi) = (
        v.iter().copied().fold(f64::INFINITY, f64::min),
        v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    );
    hi / lo > 50.0
}
