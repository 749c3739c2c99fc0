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

#[derive(Debug, Clone)]
pub(super) struct Line {
    pub(super) name: String,
    /// (x, y, lo, hi)
    pub(super) pts: Vec<(f64, f64, f64, f64)>,
}

#[derive(Debug, Clone)]
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
