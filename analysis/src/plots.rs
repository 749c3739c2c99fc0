//! Figures, drawn with plotters as SVG and PNG: throughput vs threads by lock,
//! speedup vs an axis, per-thread and per-node waits, wait-time CDFs, fairness vs
//! throughput, node-to-node hand-off heat maps, and every `plot` of the plan.
//!
//! Text is drawn with DejaVu Sans, embedded in the binary and registered with
//! plotters at first use, so figures render on machines without system fonts.
//! Every figure has a title, axis labels with units and a legend; error bars are
//! the 95 % intervals of [`crate::pipeline`]. An axis spanning more than a factor of
//! 50 is drawn on a log scale.
//!
//! Which default figures appear depends on the data: no threshold-like axis, no
//! speedup-vs-axis figure; one NUMA node, no node figures.
//!
//! No series is ever dropped. A default figure with more than ten series becomes
//! small multiples, one figure per value of the first non-lock axis
//! (`throughput_vs_threads-workload-lock2-sim`); past ten series in one figure the
//! marker and dash change with the colour. Legends sit in a column beside the plot.
//! Per-point figures are titled and named by the point's axis values.

use crate::error::{Error, Result};
use crate::pipeline::{self, estimates, f64_values, str_values};
use crate::stats::Estimate;
use crate::store::Results;
use crate::util;
use locklab_model::plan::{ClaimKind, Expr as CExpr, Plan, PlotSpec, Point, Value};
use locklab_model::units as crate_units;
use plotters::coord::Shift;
use plotters::prelude::*;
use polars::prelude::DataFrame;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Once;

static FONT: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");
static REGISTER: Once = Once::new();

/// Register the embedded font as plotters' "sans-serif" (idempotent).
pub fn register_fonts() {
    REGISTER.call_once(|| {
        // The font is compiled in; failing to parse it is a build defect.
        if plotters::style::register_font("sans-serif", FontStyle::Normal, FONT).is_err() {
            panic!("the embedded DejaVu Sans font does not parse");
        }
    });
}

const W: u32 = 960;
const H: u32 = 600;

/// Okabe–Ito, distinguishable with the common colour-vision deficiencies, plus two
/// darker hues: ten colours before any repeats. Beyond ten series the marker shape
/// and the dash pattern change too ([`series_style`]), so no two series look alike.
const COLORS: [RGBColor; 10] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(120, 120, 120),
    RGBColor(0, 0, 0),
    RGBColor(128, 0, 64),
    RGBColor(102, 102, 0),
];

fn color(i: usize) -> RGBColor {
    COLORS[i % COLORS.len()]
}

/// Marker shapes, changed every ten series.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Marker {
    Circle,
    Triangle,
    Square,
    Cross,
}

/// How series `i` is drawn: colour, marker and dash (a dash pattern from the 11th
/// series on).
#[derive(Debug, Clone, Copy, PartialEq)]
struct SeriesStyle {
    color: RGBColor,
    marker: Marker,
    dashed: bool,
}

fn series_style(i: usize) -> SeriesStyle {
    let round = i / COLORS.len();
    SeriesStyle {
        color: color(i),
        marker: [
            Marker::Circle,
            Marker::Triangle,
            Marker::Square,
            Marker::Cross,
        ][round % 4],
        dashed: round % 2 == 1,
    }
}

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

/// How numbers on an axis are written.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Unit {
    Plain,
    Duration,
    Size,
}

#[derive(Debug, Clone)]
struct Line {
    name: String,
    /// (x, y, lo, hi)
    pts: Vec<(f64, f64, f64, f64)>,
}

#[derive(Debug, Clone)]
struct LineFig {
    x_label: String,
    y_label: String,
    x_unit: Unit,
    y_unit: Unit,
    lines: Vec<Line>,
    log_x: bool,
    log_y: bool,
    /// Category names when x is categorical (x = index).
    x_cats: Option<Vec<String>>,
    markers_only: bool,
}

/// A series of bars: its name and, per category, (value, lo, hi).
type BarGroup = (String, Vec<(f64, f64, f64)>);

#[derive(Debug, Clone)]
struct BarFig {
    x_label: String,
    y_label: String,
    cats: Vec<String>,
    /// (series name, per category (y, lo, hi))
    groups: Vec<BarGroup>,
    log_y: bool,
}

#[derive(Debug, Clone)]
struct HeatFig {
    nodes: Vec<u32>,
    /// [from][to]
    value: Vec<Vec<f64>>,
    count: Vec<Vec<f64>>,
    value_label: String,
}

#[derive(Debug, Clone)]
enum Kind {
    Line(LineFig),
    Bar(BarFig),
    Heat(HeatFig),
}

#[derive(Debug, Clone)]
struct Fig {
    name: String,
    title: String,
    caption: String,
    kind: Kind,
}

// ---------------------------------------------------------------------------
// Labels

/// `throughput (ops/s)`, `wait p99 (ns)`, `speedup (×)`.
pub fn metric_label(m: &str) -> String {
    match m {
        "throughput_ops_s" => "throughput (ops/s)".into(),
        "speedup" => "speedup over baseline (×)".into(),
        "jain" => "Jain's fairness index (1 = fair)".into(),
        "fairness_factor" => "fairness factor (0.5 = fair)".into(),
        "share" => "share of acquisitions".into(),
        "cov_acq" => "coefficient of variation of acquisitions".into(),
        "max_min" => "max/min acquisitions".into(),
        _ => {
            let (base, unit) = if let Some(b) = m.strip_suffix("_ns") {
                (b, " (ns)")
            } else if let Some(b) = m.strip_suffix("_bytes") {
                (b, " (bytes)")
            } else if let Some(b) = m.strip_suffix("_ops_s") {
                (b, " (ops/s)")
            } else {
                (m, "")
            };
            format!("{}{unit}", base.replace('_', " "))
        }
    }
}

fn unit_of_metric(m: &str) -> Unit {
    if m.ends_with("_ns") {
        Unit::Duration
    } else if m.ends_with("_bytes") {
        Unit::Size
    } else {
        Unit::Plain
    }
}

fn si(v: f64) -> String {
    if v.abs() < 1e-12 {
        return "0".into();
    }
    let a = v.abs();
    let (d, s) = if a >= 1e9 {
        (1e9, "G")
    } else if a >= 1e6 {
        (1e6, "M")
    } else if a >= 1e3 {
        (1e3, "k")
    } else {
        (1.0, "")
    };
    let x = v / d;
    // Three significant digits, trailing zeros dropped: 1.25M, 950k, 0.05.
    let t = if x.abs() >= 100.0 {
        format!("{x:.0}")
    } else if x.abs() >= 10.0 {
        format!("{x:.1}")
    } else if x.abs() >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    };
    let t = if t.contains('.') {
        t.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        t
    };
    format!("{t}{s}")
}

/// `158us`, `1.58ms`, `10ms`: three significant digits in the largest unit.
pub(crate) fn fmt_duration(v: f64) -> String {
    let (scale, unit) = [(1e9, "s"), (1e6, "ms"), (1e3, "us"), (1.0, "ns")]
        .into_iter()
        .find(|(sc, _)| v >= *sc)
        .unwrap_or((1.0, "ns"));
    let x = v / scale;
    let t = if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    };
    let t = if t.contains('.') {
        t.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        t
    };
    format!("{t}{unit}")
}

fn fmt_tick(v: f64, unit: Unit) -> String {
    match unit {
        Unit::Duration if v >= 1.0 => fmt_duration(v),
        Unit::Size if v >= 1.0 && (v.round() as u64).is_power_of_two() => {
            crate_units::size_label(v.round() as u64)
        }
        _ => si(v),
    }
}

/// Tick count for a log axis spanning `width` decades: whole decades when there
/// are several, finer steps otherwise.
fn log_ticks(width: f64) -> usize {
    if width < 1.5 {
        8
    } else {
        (width.ceil() as usize + 1).max(4)
    }
}

fn axis_unit(plan: &Plan, axis: &str) -> Unit {
    match plan
        .axes
        .iter()
        .find(|a| a.name == axis)
        .and_then(|a| a.values.first())
    {
        Some(Value::Duration(_)) => Unit::Duration,
        Some(Value::Size(_)) => Unit::Size,
        _ => Unit::Plain,
    }
}

fn axis_label(plan: &Plan, axis: &str) -> String {
    match axis_unit(plan, axis) {
        Unit::Duration => format!("{axis} (time)"),
        Unit::Size => format!("{axis} (bytes)"),
        Unit::Plain if axis == "threads" => "threads".into(),
        Unit::Plain => axis.replace('_', " "),
    }
}

// ---------------------------------------------------------------------------
// Drawing

type DrawResult = std::result::Result<(), String>;

fn s<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

/// Axis range with padding; `from_zero` starts a non-negative range at zero when
/// the data is not far from it (honest bars and magnitudes).
fn span(vals: impl Iterator<Item = f64>, log: bool, from_zero: bool) -> (f64, f64) {
    let v: Vec<f64> = vals
        .filter(|x| x.is_finite() && (!log || *x > 0.0))
        .collect();
    if v.is_empty() {
        return (0.0, 1.0);
    }
    let (mut lo, mut hi) = (
        v.iter().copied().fold(f64::INFINITY, f64::min),
        v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    );
    if log {
        let (a, b) = (lo.log10(), hi.log10());
        let pad = ((b - a) * 0.05).max(0.05);
        return (a - pad, b + pad);
    }
    if lo == hi {
        if lo == 0.0 && from_zero {
            return (0.0, 1.0);
        }
        let d = if lo == 0.0 { 1.0 } else { lo.abs() * 0.1 };
        lo -= d;
        hi += d;
    }
    let pad = (hi - lo) * 0.06;
    let lo = if from_zero && lo >= 0.0 && lo < (hi - lo) * 1.5 {
        0.0
    } else {
        lo - pad
    };
    (lo, hi + pad)
}

fn wants_log(vals: impl Iterator<Item = f64>) -> bool {
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

fn tx(v: f64, log: bool) -> f64 {
    if log {
        v.log10()
    } else {
        v
    }
}

/// What a legend entry shows beside its label.
#[derive(Debug, Clone, Copy)]
enum Key {
    Line(SeriesStyle, bool),
    Bar(RGBColor),
}

const LEGEND_FONT: u32 = 14;
const LEGEND_ROW: i32 = 19;
/// Characters per legend line; longer labels wrap at ", ".
const LEGEND_CHARS: usize = 34;

/// A legend label broken into lines of at most [`LEGEND_CHARS`] where it can be (at
/// ", "), so no label is cut.
fn wrap_label(label: &str) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for part in label.split(", ") {
        match lines.last_mut() {
            Some(l) if l.chars().count() + 2 + part.chars().count() <= LEGEND_CHARS => {
                l.push_str(", ");
                l.push_str(part);
            }
            Some(l) => {
                l.push(',');
                lines.push(part.to_string());
            }
            None => lines.push(part.to_string()),
        }
    }
    lines
}

/// Width of the legend column beside the plot (0: no legend, a single unnamed
/// series).
fn legend_width(labels: &[String]) -> u32 {
    if labels.is_empty() || (labels.len() == 1 && labels[0] == "all") {
        return 0;
    }
    let chars = labels
        .iter()
        .flat_map(|l| wrap_label(l))
        .map(|l| l.chars().count())
        .max()
        .unwrap_or(0);
    // DejaVu Sans at 14 px: about 8 px per character; 44 px for the key.
    (chars as u32 * 8 + 60).clamp(110, 340)
}

/// Height a legend of these labels needs, in pixels.
fn legend_height(labels: &[String]) -> u32 {
    let rows: usize = labels.iter().map(|l| wrap_label(l).len()).sum();
    (rows as i32 * LEGEND_ROW + labels.len() as i32 * 4 + 40) as u32
}

/// Figure size: wide enough for the plot and its legend column, tall enough for
/// every legend entry.
fn fig_size(fig: &Fig) -> (u32, u32) {
    let labels = legend_labels(fig);
    (
        W + legend_width(&labels),
        H.max(legend_height(&labels) + 60),
    )
}

fn legend_labels(fig: &Fig) -> Vec<String> {
    match &fig.kind {
        Kind::Line(l) => l.lines.iter().map(|x| x.name.clone()).collect(),
        Kind::Bar(b) => b.groups.iter().map(|g| g.0.clone()).collect(),
        Kind::Heat(_) => Vec::new(),
    }
}

/// Draw a legend in its own column, so it never hides data.
fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    entries: &[(String, Key)],
) -> DrawResult {
    let (w, _) = area.dim_in_pixel();
    if w == 0 || entries.is_empty() {
        return Ok(());
    }
    let mut y = 30i32;
    let font = ("sans-serif", LEGEND_FONT).into_font().color(&BLACK);
    for (label, key) in entries {
        let ky = y + LEGEND_ROW / 2 - 2;
        match *key {
            Key::Line(st, markers_only) => {
                let c = st.color;
                if !markers_only {
                    if st.dashed {
                        for x in [4, 16, 28] {
                            area.draw(&PathElement::new(
                                vec![(x, ky), (x + 8, ky)],
                                c.stroke_width(2),
                            ))
                            .map_err(s)?;
                        }
                    } else {
                        area.draw(&PathElement::new(
                            vec![(4, ky), (36, ky)],
                            c.stroke_width(2),
                        ))
                        .map_err(s)?;
                    }
                }
                draw_marker_px(area, (20, ky), st)?;
            }
            Key::Bar(c) => {
                area.draw(&Rectangle::new([(8, ky - 6), (30, ky + 6)], c.filled()))
                    .map_err(s)?;
            }
        }
        for line in wrap_label(label) {
            area.draw(&Text::new(line, (44, y), font.clone()))
                .map_err(s)?;
            y += LEGEND_ROW;
        }
        y += 4;
    }
    Ok(())
}

fn draw_marker_px<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    p: (i32, i32),
    st: SeriesStyle,
) -> DrawResult {
    let c = st.color;
    match st.marker {
        Marker::Circle => area.draw(&Circle::new(p, 4, c.filled())),
        Marker::Triangle => area.draw(&TriangleMarker::new(p, 5, c.filled())),
        Marker::Square => area.draw(&Rectangle::new(
            [(p.0 - 4, p.1 - 4), (p.0 + 4, p.1 + 4)],
            c.filled(),
        )),
        Marker::Cross => area.draw(&Cross::new(p, 4, c.stroke_width(2))),
    }
    .map_err(s)
}

fn draw_line<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    f: &LineFig,
) -> DrawResult {
    root.fill(&WHITE).map_err(s)?;
    let root = root
        .margin(10, 0, 0, 0)
        .titled(title, ("sans-serif", 22))
        .map_err(s)?;
    let labels: Vec<String> = f.lines.iter().map(|l| l.name.clone()).collect();
    let (w, _) = root.dim_in_pixel();
    let (plot, legend) = root.split_horizontally(w - legend_width(&labels));
    let xs = f.lines.iter().flat_map(|l| l.pts.iter().map(|p| p.0));
    let ys = f
        .lines
        .iter()
        .flat_map(|l| l.pts.iter().flat_map(|p| [p.1, p.2, p.3]));
    let (x0, x1) = match &f.x_cats {
        Some(c) => (-0.5, c.len() as f64 - 0.5),
        None => span(xs, f.log_x, false),
    };
    let (y0, y1) = span(ys, f.log_y, true);
    let mut chart = ChartBuilder::on(&plot)
        .margin(18)
        .x_label_area_size(56)
        .y_label_area_size(86)
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(s)?;
    let (log_x, log_y) = (f.log_x, f.log_y);
    let (xu, yu) = (f.x_unit, f.y_unit);
    let cats = f.x_cats.clone();
    let int_x = cats.is_none()
        && !log_x
        && f.lines
            .iter()
            .all(|l| l.pts.iter().all(|p| p.0.fract() == 0.0))
        && x1 - x0 <= 40.0;
    let xfmt = move |v: &f64| match &cats {
        None if int_x && (v - v.round()).abs() > 1e-6 => String::new(),
        Some(c) => {
            let i = v.round();
            if (v - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < c.len() {
                c[i as usize].clone()
            } else {
                String::new()
            }
        }
        None => fmt_tick(if log_x { 10f64.powf(*v) } else { *v }, xu),
    };
    let yfmt = move |v: &f64| fmt_tick(if log_y { 10f64.powf(*v) } else { *v }, yu);
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(f.x_label.as_str())
        .y_desc(f.y_label.as_str())
        .x_label_formatter(&xfmt)
        .y_label_formatter(&yfmt)
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 16))
        .light_line_style(RGBColor(235, 235, 235));
    if let Some(c) = &f.x_cats {
        mesh.x_labels(c.len().max(2) * 2 + 1);
    } else if int_x {
        mesh.x_labels(((x1 - x0).ceil() as usize + 1).clamp(2, 21));
    } else if log_x {
        mesh.x_labels(log_ticks(x1 - x0));
    }
    if log_y {
        mesh.y_labels(log_ticks(y1 - y0));
    }
    mesh.draw().map_err(s)?;
    for (i, l) in f.lines.iter().enumerate() {
        let st = series_style(i);
        let c = st.color;
        let pts: Vec<(f64, f64)> = l
            .pts
            .iter()
            .filter(|p| p.1.is_finite() && (!log_y || p.1 > 0.0))
            .map(|p| (tx(p.0, log_x), tx(p.1, log_y)))
            .collect();
        if !f.markers_only {
            if st.dashed {
                chart
                    .draw_series(DashedLineSeries::new(pts.clone(), 9, 5, c.stroke_width(2)))
                    .map_err(s)?;
            } else {
                chart
                    .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))
                    .map_err(s)?;
            }
        }
        match st.marker {
            Marker::Circle => chart
                .draw_series(pts.iter().map(|&p| Circle::new(p, 4, c.filled())))
                .map(|_| ()),
            Marker::Triangle => chart
                .draw_series(pts.iter().map(|&p| TriangleMarker::new(p, 5, c.filled())))
                .map(|_| ()),
            Marker::Square => {
                chart
                    .draw_series(pts.iter().map(|&p| {
                        EmptyElement::at(p) + Rectangle::new([(-4, -4), (4, 4)], c.filled())
                    }))
                    .map(|_| ())
            }
            Marker::Cross => chart
                .draw_series(pts.iter().map(|&p| Cross::new(p, 4, c.stroke_width(2))))
                .map(|_| ()),
        }
        .map_err(s)?;
        // Error bars: the 95 % interval.
        let cap = (x1 - x0) * 0.006;
        for p in &l.pts {
            if !(p.2.is_finite() && p.3.is_finite()) || p.2 == p.3 || (log_y && p.2 <= 0.0) {
                continue;
            }
            let x = tx(p.0, log_x);
            let (a, b) = (tx(p.2, log_y), tx(p.3, log_y));
            chart
                .draw_series([
                    PathElement::new(vec![(x, a), (x, b)], c.stroke_width(1)),
                    PathElement::new(vec![(x - cap, a), (x + cap, a)], c.stroke_width(1)),
                    PathElement::new(vec![(x - cap, b), (x + cap, b)], c.stroke_width(1)),
                ])
                .map_err(s)?;
        }
    }
    let entries: Vec<(String, Key)> = f
        .lines
        .iter()
        .enumerate()
        .map(|(i, l)| (l.name.clone(), Key::Line(series_style(i), f.markers_only)))
        .collect();
    if legend.dim_in_pixel().0 > 0 {
        draw_legend(&legend, &entries)?;
    }
    root.present().map_err(s)
}

fn draw_bars<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    f: &BarFig,
) -> DrawResult {
    root.fill(&WHITE).map_err(s)?;
    let root = root
        .margin(10, 0, 0, 0)
        .titled(title, ("sans-serif", 22))
        .map_err(s)?;
    let labels: Vec<String> = f.groups.iter().map(|g| g.0.clone()).collect();
    let (w, _) = root.dim_in_pixel();
    let (plot, legend) = root.split_horizontally(w - legend_width(&labels));
    let ys = f
        .groups
        .iter()
        .flat_map(|g| g.1.iter().flat_map(|p| [p.0, p.1, p.2]));
    let (y0, y1) = span(ys, f.log_y, true);
    let y0 = if f.log_y { y0 } else { y0.min(0.0) };
    let n = f.cats.len();
    let mut chart = ChartBuilder::on(&plot)
        .margin(18)
        .x_label_area_size(56)
        .y_label_area_size(86)
        .build_cartesian_2d(-0.5..(n as f64 - 0.5), y0..y1)
        .map_err(s)?;
    let log_y = f.log_y;
    let cats = f.cats.clone();
    let step = (n / 24).max(1);
    let xfmt = move |v: &f64| {
        let i = v.round();
        if (v - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < cats.len() && (i as usize) % step == 0
        {
            cats[i as usize].clone()
        } else {
            String::new()
        }
    };
    let yfmt = move |v: &f64| fmt_tick(if log_y { 10f64.powf(*v) } else { *v }, Unit::Duration);
    chart
        .configure_mesh()
        .y_labels(if log_y { log_ticks(y1 - y0) } else { 10 })
        .disable_x_mesh()
        .x_labels((n * 2 + 1).min(97))
        .x_desc(f.x_label.as_str())
        .y_desc(f.y_label.as_str())
        .x_label_formatter(&xfmt)
        .y_label_formatter(&yfmt)
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 16))
        .light_line_style(RGBColor(235, 235, 235))
        .draw()
        .map_err(s)?;
    let k = f.groups.len().max(1) as f64;
    let width = 0.8 / k;
    for (gi, (_, vals)) in f.groups.iter().enumerate() {
        let c = color(gi);
        let bars: Vec<Rectangle<(f64, f64)>> = vals
            .iter()
            .enumerate()
            .filter(|(_, v)| v.0.is_finite() && (!log_y || v.0 > 0.0))
            .map(|(i, v)| {
                let x = i as f64 - 0.4 + width * gi as f64;
                Rectangle::new([(x, y0), (x + width * 0.92, tx(v.0, log_y))], c.filled())
            })
            .collect();
        chart.draw_series(bars).map_err(s)?;
        for (i, v) in vals.iter().enumerate() {
            if !(v.1.is_finite() && v.2.is_finite()) || v.1 == v.2 || (log_y && v.1 <= 0.0) {
                continue;
            }
            let x = i as f64 - 0.4 + width * (gi as f64 + 0.46);
            chart
                .draw_series([PathElement::new(
                    vec![(x, tx(v.1, log_y)), (x, tx(v.2, log_y))],
                    BLACK.stroke_width(1),
                )])
                .map_err(s)?;
        }
    }
    let entries: Vec<(String, Key)> = f
        .groups
        .iter()
        .enumerate()
        .map(|(i, g)| (g.0.clone(), Key::Bar(color(i))))
        .collect();
    if legend.dim_in_pixel().0 > 0 {
        draw_legend(&legend, &entries)?;
    }
    root.present().map_err(s)
}

fn heat_color(t: f64) -> RGBColor {
    // White → blue → dark red, t in [0, 1].
    let t = t.clamp(0.0, 1.0);
    let lerp = |a: f64, b: f64, u: f64| (a + (b - a) * u) as u8;
    if t < 0.5 {
        let u = t * 2.0;
        RGBColor(
            lerp(247.0, 66.0, u),
            lerp(251.0, 146.0, u),
            lerp(255.0, 198.0, u),
        )
    } else {
        let u = (t - 0.5) * 2.0;
        RGBColor(
            lerp(66.0, 165.0, u),
            lerp(146.0, 15.0, u),
            lerp(198.0, 21.0, u),
        )
    }
}

fn draw_heat<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    f: &HeatFig,
) -> DrawResult {
    root.fill(&WHITE).map_err(s)?;
    let n = f.nodes.len();
    let vals: Vec<f64> = f
        .value
        .iter()
        .flatten()
        .copied()
        .filter(|v| v.is_finite() && *v > 0.0)
        .collect();
    let (lo, hi) = (
        vals.iter().copied().fold(f64::INFINITY, f64::min).max(1.0),
        vals.iter()
            .copied()
            .fold(f64::NEG_INFINITY, f64::max)
            .max(1.0),
    );
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 22))
        .margin(18)
        .x_label_area_size(56)
        .y_label_area_size(86)
        .build_cartesian_2d(-0.5..(n as f64 - 0.5), -0.5..(n as f64 - 0.5))
        .map_err(s)?;
    // Rows top to bottom in node order, as in the tables.
    let row = |i: usize| (n - 1 - i) as f64;
    let nodes = f.nodes.clone();
    let xl = move |v: &f64| {
        let i = v.round();
        if (v - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < nodes.len() {
            format!("node {}", nodes[i as usize])
        } else {
            String::new()
        }
    };
    let nodes = f.nodes.clone();
    let yl = move |v: &f64| {
        let i = v.round();
        if (v - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < nodes.len() {
            format!("node {}", nodes[nodes.len() - 1 - i as usize])
        } else {
            String::new()
        }
    };
    let x_desc = format!(
        "next holder's node (to); colour: {} from {} (light) to {} (dark); hand-offs in brackets",
        f.value_label,
        fmt_tick(lo, Unit::Duration),
        fmt_tick(hi, Unit::Duration)
    );
    chart
        .configure_mesh()
        .disable_mesh()
        .x_labels(n * 2 + 1)
        .y_labels(n * 2 + 1)
        .x_desc(x_desc.as_str())
        .y_desc("previous holder's node (from)")
        .x_label_formatter(&xl)
        .y_label_formatter(&yl)
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 15))
        .draw()
        .map_err(s)?;
    let font_size = if n > 8 { 10 } else { 15 };
    for i in 0..n {
        for j in 0..n {
            let v = f.value[i][j];
            let t = if v.is_finite() && v > 0.0 && hi > lo {
                (v.ln() - lo.ln()) / (hi.ln() - lo.ln())
            } else if v.is_finite() {
                0.5
            } else {
                0.0
            };
            let fill = if v.is_finite() {
                heat_color(t)
            } else {
                RGBColor(230, 230, 230)
            };
            let (x, y) = (j as f64, row(i));
            chart
                .draw_series([Rectangle::new(
                    [(x - 0.5, y - 0.5), (x + 0.5, y + 0.5)],
                    fill.filled(),
                )])
                .map_err(s)?;
            let ink = if t > 0.55 { WHITE } else { BLACK };
            let text = if v.is_finite() {
                format!("{} ({})", fmt_tick(v, Unit::Duration), si(f.count[i][j]))
            } else {
                "—".into()
            };
            let style = TextStyle::from(("sans-serif", font_size).into_font())
                .color(&ink)
                .pos(plotters::style::text_anchor::Pos::new(
                    plotters::style::text_anchor::HPos::Center,
                    plotters::style::text_anchor::VPos::Center,
                ));
            chart
                .draw_series([Text::new(text, (x, y), style)])
                .map_err(s)?;
        }
    }
    root.present().map_err(s)
}

fn draw_any<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, fig: &Fig) -> DrawResult {
    match &fig.kind {
        Kind::Line(l) => draw_line(root, &fig.title, l),
        Kind::Bar(b) => draw_bars(root, &fig.title, b),
        Kind::Heat(h) => draw_heat(root, &fig.title, h),
    }
}

fn safe_name(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// PNG bytes of an RGB buffer, with the Up filter on every row. A figure is mostly
/// flat colour, so this is smaller than plotters' adaptive default (which tries
/// every filter on every row) and several times cheaper to encode.
fn encode_png(rgb: &[u8], w: u32, h: u32) -> std::result::Result<Vec<u8>, String> {
    let mut out = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut out, w, h);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        enc.set_compression(png::Compression::Default);
        enc.set_filter(png::FilterType::Up);
        enc.set_adaptive_filter(png::AdaptiveFilterType::NonAdaptive);
        let mut wr = enc.write_header().map_err(s)?;
        wr.write_image_data(rgb).map_err(s)?;
        wr.finish().map_err(s)?;
    }
    Ok(out)
}

fn render(fig: &Fig, dir: &Path) -> Result<Figure> {
    register_fonts();
    let name = safe_name(&fig.name);
    let err = |message: String| Error::Plot {
        plot: fig.name.clone(),
        message,
    };
    let (w, h) = fig_size(fig);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (w, h)).into_drawing_area();
        draw_any(&root, fig).map_err(err)?;
    }
    let svg_path = dir.join(format!("{name}.svg"));
    util::write_atomic(&svg_path, svg.as_bytes())?;
    let png_path = dir.join(format!("{name}.png"));
    let mut rgb = vec![0u8; (w * h * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (w, h)).into_drawing_area();
        draw_any(&root, fig).map_err(err)?;
    }
    let png = encode_png(&rgb, w, h).map_err(err)?;
    util::write_atomic(&png_path, &png)?;
    Ok(Figure {
        name,
        title: fig.title.clone(),
        caption: fig.caption.clone(),
        svg,
        svg_path,
        png_path,
    })
}

// ---------------------------------------------------------------------------
// Data → figures

/// A point × mode row of a summary, with its plan point.
struct Row<'a> {
    point: &'a Point,
    mode: String,
    i: usize,
}

fn rows<'a>(plan: &'a Plan, df: &DataFrame) -> Result<Vec<Row<'a>>> {
    let p = f64_values(df, "point")?;
    let m = str_values(df, "mode")?;
    Ok((0..df.height())
        .filter_map(|i| {
            plan.points.get(p[i] as usize).map(|point| Row {
                point,
                mode: m[i].clone(),
                i,
            })
        })
        .collect())
}

/// Value of `key` for a point: a sweep axis, or `threads` / `lock`.
fn key_value(p: &Point, key: &str) -> Option<Value> {
    if let Some(v) = p.axes.get(key) {
        return Some(v.clone());
    }
    match key {
        "threads" => Some(Value::Int(p.threads as i64)),
        "lock" => Some(Value::Str(p.lock.name.clone())),
        "workload" => Some(Value::Str(p.workload.kind_name().into())),
        _ => None,
    }
}

fn matches_select(p: &Point, mode: &str, select: &[(String, Value)]) -> bool {
    select.iter().all(|(k, v)| {
        if k == "mode" {
            return v.label() == mode;
        }
        match key_value(p, k) {
            Some(pv) => match (pv.as_f64(), v.as_f64()) {
                (Some(a), Some(b)) => a == b,
                _ => pv.label() == v.label(),
            },
            None => true, // result dimensions are applied by the caller
        }
    })
}

/// Axes (plus lock) that vary among the given points, except `x`.
fn varying(plan: &Plan, pts: &[&Point], x: &str) -> Vec<String> {
    let mut keys: Vec<String> = plan.axes.iter().map(|a| a.name.clone()).collect();
    for k in ["lock", "threads"] {
        if !keys.iter().any(|a| a == k) {
            keys.push(k.into());
        }
    }
    keys.into_iter()
        .filter(|k| k != x)
        .filter(|k| {
            let vals: BTreeSet<String> = pts
                .iter()
                .map(|p| key_value(p, k).map(|v| v.label()).unwrap_or_default())
                .collect();
            vals.len() > 1
        })
        .collect()
}

fn series_name(p: &Point, keys: &[String]) -> String {
    if keys.is_empty() {
        return "all".into();
    }
    keys.iter()
        .map(|k| {
            let v = key_value(p, k)
                .map(|v| v.label())
                .unwrap_or_else(|| "—".into());
            if k == "lock" {
                v
            } else {
                format!("{k}={v}")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Series per figure before a default figure is split into small multiples.
const MAX_SERIES: usize = 10;

/// One figure of a set of small multiples: the values of the facet axes it shows
/// (empty: the only figure) and its lines.
#[derive(Debug, Clone)]
struct Facet {
    /// `workload=lock2`; empty when the figure is not split.
    label: String,
    fig: LineFig,
    /// Thread counts of the points shown.
    threads: BTreeSet<u32>,
}

/// Split `keys` (the series grouping) into facet keys and series keys: while some
/// figure would hold more than [`MAX_SERIES`] series, the first key (in the plan's
/// axis order) other than `lock` becomes a facet: one figure per value. Locks stay
/// together, as they are what a figure compares.
fn split_facets(rows: &[Row], keys: &[String]) -> (Vec<String>, Vec<String>) {
    let mut facet: Vec<String> = Vec::new();
    let mut series: Vec<String> = keys.to_vec();
    loop {
        let mut per: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for r in rows {
            per.entry(series_name(r.point, &facet))
                .or_default()
                .insert(series_name(r.point, &series));
        }
        let most = per.values().map(BTreeSet::len).max().unwrap_or(0);
        if most <= MAX_SERIES {
            break;
        }
        let Some(i) = series.iter().position(|k| k != "lock") else {
            break;
        };
        facet.push(series.remove(i));
    }
    (facet, series)
}

/// Metric vs x (a sweep axis, `threads` or `lock`) from a point-level summary, one
/// series per combination of `group` keys (default: every other varying axis).
///
/// Axes that vary among the selected points but are neither `x` nor in `group`
/// split the figure into small multiples, one per value; so does a default grouping
/// with more than [`MAX_SERIES`] series. No series is ever dropped.
///
/// `at_most_threads`: keep only the points with the most threads among those that
/// share every other axis value (speedup vs threshold where it matters).
#[allow(clippy::too_many_arguments)]
fn metric_vs(
    plan: &Plan,
    df: &DataFrame,
    metric: &str,
    x: &str,
    group: Option<&[String]>,
    select: &[(String, Value)],
    mode: &str,
    log: (Option<bool>, Option<bool>),
    skip_lock: Option<&str>,
    at_most_threads: bool,
) -> Result<Vec<Facet>> {
    let est: Vec<Estimate> = estimates(df, metric)?;
    let mut rows: Vec<Row> = rows(plan, df)?
        .into_iter()
        .filter(|r| r.mode == mode && matches_select(r.point, mode, select) && !est[r.i].is_nan())
        .filter(|r| Some(r.point.lock.name.as_str()) != skip_lock)
        .filter(|r| key_value(r.point, x).is_some())
        .collect();
    if at_most_threads && x != "threads" {
        let pts: Vec<&Point> = rows.iter().map(|r| r.point).collect();
        let others: Vec<String> = varying(plan, &pts, x)
            .into_iter()
            .filter(|k| k != "threads")
            .collect();
        let mut most: BTreeMap<String, u32> = BTreeMap::new();
        for r in &rows {
            let e = most.entry(series_name(r.point, &others)).or_insert(0);
            *e = (*e).max(r.point.threads);
        }
        rows.retain(|r| most.get(&series_name(r.point, &others)) == Some(&r.point.threads));
    }
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    let pts: Vec<&Point> = rows.iter().map(|r| r.point).collect();
    let all_varying = varying(plan, &pts, x);
    let (facet_keys, keys): (Vec<String>, Vec<String>) = match group {
        Some(g) => (
            all_varying
                .iter()
                .filter(|k| !g.contains(k))
                .cloned()
                .collect(),
            g.to_vec(),
        ),
        None => split_facets(&rows, &all_varying),
    };
    let xv: Vec<Value> = rows.iter().filter_map(|r| key_value(r.point, x)).collect();
    let numeric = xv.iter().all(|v| v.as_f64().is_some());
    let cats: Option<Vec<String>> = (!numeric).then(|| {
        let mut seen = Vec::new();
        for v in &xv {
            if !seen.contains(&v.label()) {
                seen.push(v.label());
            }
        }
        seen
    });
    // facet label → (series name → points), both in first-seen order.
    type Series = Vec<(String, Vec<(f64, f64, f64, f64)>)>;
    let mut facets: Vec<(String, Series)> = Vec::new();
    let mut threads: BTreeMap<String, BTreeSet<u32>> = BTreeMap::new();
    for r in &rows {
        let flabel = series_name(r.point, &facet_keys);
        let flabel = if facet_keys.is_empty() {
            String::new()
        } else {
            flabel
        };
        threads
            .entry(flabel.clone())
            .or_default()
            .insert(r.point.threads);
        let name = series_name(r.point, &keys);
        let v = key_value(r.point, x).unwrap_or(Value::Int(0));
        let xf = match &cats {
            Some(c) => c.iter().position(|s| *s == v.label()).unwrap_or(0) as f64,
            None => v.as_f64().unwrap_or(0.0),
        };
        let e = est[r.i];
        let fi = match facets.iter().position(|f| f.0 == flabel) {
            Some(i) => i,
            None => {
                facets.push((flabel, Vec::new()));
                facets.len() - 1
            }
        };
        let series = &mut facets[fi].1;
        let si = match series.iter().position(|s| s.0 == name) {
            Some(i) => i,
            None => {
                series.push((name, Vec::new()));
                series.len() - 1
            }
        };
        series[si].1.push((xf, e.value, e.lo, e.hi));
    }
    let mut out = Vec::new();
    for (label, series) in facets {
        let lines: Vec<Line> = series
            .into_iter()
            .map(|(name, mut pts)| {
                pts.sort_by(|a, b| a.0.total_cmp(&b.0));
                Line { name, pts }
            })
            .collect();
        let log_x = log.0.unwrap_or_else(|| {
            cats.is_none() && wants_log(lines.iter().flat_map(|l| l.pts.iter().map(|p| p.0)))
        });
        let log_y = log
            .1
            .unwrap_or_else(|| wants_log(lines.iter().flat_map(|l| l.pts.iter().map(|p| p.1))));
        out.push(Facet {
            threads: threads.remove(&label).unwrap_or_default(),
            label,
            fig: LineFig {
                x_label: if x == "lock" {
                    "lock".into()
                } else {
                    axis_label(plan, x)
                },
                y_label: metric_label(metric),
                x_unit: axis_unit(plan, x),
                y_unit: unit_of_metric(metric),
                lines,
                log_x,
                log_y,
                x_cats: cats.clone(),
                markers_only: false,
            },
        });
    }
    Ok(out)
}

/// `throughput_vs_threads-sim`, or `throughput_vs_threads-workload-lock2-sim` for
/// one figure of a set of small multiples.
fn facet_name(stem: &str, facet: &str, mode: &str) -> String {
    if facet.is_empty() {
        format!("{stem}-{mode}")
    } else {
        format!("{stem}-{}-{mode}", slug(facet))
    }
}

/// `workload=lock2, threshold=10ms` → `workload-lock2_threshold-10ms`.
fn slug(label: &str) -> String {
    label
        .replace(", ", "_")
        .replace('=', "-")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// ` (sim)` or `, workload=lock2 (sim)`.
fn facet_suffix(facet: &str, mode: &str) -> String {
    if facet.is_empty() {
        format!(" ({mode})")
    } else {
        format!(", {facet} ({mode})")
    }
}

/// The baseline lock named by the plan's claims or plots, if any.
fn known_baseline(plan: &Plan) -> Option<String> {
    fn walk(e: &CExpr) -> Option<String> {
        match e {
            CExpr::Metric(m) => m.baseline.clone(),
            CExpr::Const { .. } => None,
            CExpr::Binary { lhs, rhs, .. } => walk(lhs).or_else(|| walk(rhs)),
        }
    }
    plan.plots
        .iter()
        .find_map(|p| p.baseline.clone())
        .or_else(|| {
            plan.claims.iter().find_map(|c| match &c.kind {
                ClaimKind::Band { expr, .. } => walk(expr),
                ClaimKind::Ordering { exprs, .. } => exprs.iter().find_map(walk),
                ClaimKind::Trend { metric, .. } => metric.baseline.clone(),
            })
        })
}

/// What a per-point figure is about: its lock, then every other axis that varies
/// among `pts` (`cna15, workload=lock2, threshold=10ms, threads=142`).
pub(crate) fn point_label(p: &Point, pts: &[&Point]) -> String {
    let mut keys = vec!["lock".to_string()];
    keys.extend(varying_in(pts, &p.axes).into_iter().filter(|k| k != "lock"));
    if !keys.iter().any(|k| k == "threads") {
        keys.push("threads".into());
    }
    series_name(p, &keys)
}

/// Axes of `axes` (plus threads) whose value differs among `pts`, in sweep order.
fn varying_in(pts: &[&Point], axes: &BTreeMap<String, Value>) -> Vec<String> {
    let mut keys: Vec<String> = Vec::new();
    let order: Vec<String> = pts
        .first()
        .map(|p| {
            p.id.split(',')
                .filter_map(|kv| kv.split('=').next())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    for k in order
        .iter()
        .chain(axes.keys())
        .chain(["threads".to_string()].iter())
    {
        if keys.contains(k) {
            continue;
        }
        let vals: BTreeSet<String> = pts
            .iter()
            .map(|q| key_value(q, k).map(|v| v.label()).unwrap_or_default())
            .collect();
        if vals.len() > 1 {
            keys.push(k.clone());
        }
    }
    keys
}

/// Points to show in per-thread, per-node, CDF and heat-map figures: per lock,
/// the point with the most threads (then the first in plan order), at most `max`.
fn showcase(plan: &Plan, df: &DataFrame, mode: &str, max: usize) -> Result<Vec<u32>> {
    let rows = rows(plan, df)?;
    let mut best: BTreeMap<&str, &Point> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.mode == mode) {
        let e = best.entry(r.point.lock.name.as_str()).or_insert(r.point);
        if r.point.threads > e.threads {
            *e = r.point;
        }
    }
    let mut v: Vec<u32> = best.values().map(|p| p.index as u32).collect();
    v.sort_unstable();
    v.truncate(max);
    Ok(v)
}

/// Figures drawn, and what could not be drawn.
#[derive(Debug, Clone, Default)]
pub struct Rendered {
    pub figures: Vec<Figure>,
    pub warnings: Vec<String>,
}

/// Render every figure that applies to `results` into `dir`. A figure that cannot
/// be drawn (a plot naming an unknown metric) becomes a warning, not a failure.
pub fn render_all(results: &Results, dir: &Path) -> Result<Rendered> {
    util::create_dir(dir)?;
    let (figs, mut warnings) = figures(results)?;
    // Figures are independent: draw and encode them on every core, keep plan order.
    use rayon::prelude::*;
    register_fonts();
    let drawn: Vec<Result<Figure>> = figs.par_iter().map(|f| render(f, dir)).collect();
    let mut figures = Vec::new();
    for r in drawn {
        match r {
            Ok(fig) => figures.push(fig),
            Err(e) => warnings.push(e.to_string()),
        }
    }
    // Figures of an earlier report that this one does not draw (renamed, or data
    // since changed) would linger beside the new ones: remove them.
    let keep: BTreeSet<PathBuf> = figures
        .iter()
        .flat_map(|f| [f.png_path.clone(), f.svg_path.clone()])
        .collect();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let path = e.path();
            let ext = path.extension().and_then(|x| x.to_str());
            if matches!(ext, Some("png" | "svg")) && !keep.contains(&path) {
                let _ = std::fs::remove_file(&path);
            }
        }
    }
    Ok(Rendered { figures, warnings })
}

fn modes_of(df: &DataFrame) -> Result<Vec<String>> {
    let mut m: Vec<String> = str_values(df, "mode")?
        .into_iter()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    m.sort_by_key(|x| (x != "sim", x.clone()));
    Ok(m)
}

fn figures(results: &Results) -> Result<(Vec<Fig>, Vec<String>)> {
    let mut warnings = Vec::new();
    let plan = results.plan();
    let summary = pipeline::point_summary(results)?;
    let modes = modes_of(&summary)?;
    let mut figs = Vec::new();
    let threads_vary = plan
        .points
        .iter()
        .map(|p| p.threads)
        .collect::<BTreeSet<_>>()
        .len()
        > 1;
    let baseline = known_baseline(plan);
    let speed = match &baseline {
        Some(b) => match pipeline::speedup(results, b) {
            Ok(df) => Some(df),
            Err(e) => {
                warnings.push(format!("no speedup figures: {e}"));
                None
            }
        },
        None => None,
    };
    let thread_sum = pipeline::thread_summary(results)?;
    let node_sum = pipeline::node_summary(results)?;
    let hand = pipeline::handoff_summary(results)?;
    let cdfs = pipeline::wait_cdfs(results)?;

    for mode in &modes {
        // Throughput vs threads, one line per lock (and other axes).
        if threads_vary {
            for facet in metric_vs(
                plan,
                &summary,
                "throughput_ops_s",
                "threads",
                None,
                &[],
                mode,
                (None, None),
                None,
                false,
            )? {
                figs.push(Fig {
                    name: facet_name("throughput_vs_threads", &facet.label, mode),
                    title: format!("Throughput vs threads{}", facet_suffix(&facet.label, mode)),
                    caption: "Median throughput over repetitions; bars: 95 % interval.".into(),
                    kind: Kind::Line(facet.fig),
                });
            }
        }
        // Speedup vs each non-lock axis with several values.
        if let (Some(b), Some(sp)) = (&baseline, &speed) {
            let lock_cols = lock_axis_names(plan);
            // Numeric axes only: a speedup against a list of names says little.
            for a in plan.axes.iter().filter(|a| {
                a.values.len() > 1
                    && !lock_cols.contains(&a.name)
                    && a.values.iter().all(|v| v.as_f64().is_some())
            }) {
                // Against any axis but threads: at the most threads of each series,
                // where the axis matters (one socket's points all sit at 1.0).
                let most = a.name != "threads" && threads_vary;
                for facet in metric_vs(
                    plan,
                    sp,
                    "speedup",
                    &a.name,
                    None,
                    &[],
                    mode,
                    (None, Some(false)),
                    Some(b),
                    most,
                )? {
                    let at = match (most, facet.threads.len()) {
                        (false, _) => String::new(),
                        (true, 1) => format!(
                            " at {} threads",
                            facet.threads.iter().next().copied().unwrap_or(0)
                        ),
                        (true, _) => " at the most threads".to_string(),
                    };
                    figs.push(Fig {
                        name: facet_name(&format!("speedup_vs_{}", a.name), &facet.label, mode),
                        title: format!(
                            "Speedup over {b} vs {}{at}{}",
                            a.name,
                            facet_suffix(&facet.label, mode)
                        ),
                        caption: if most {
                            format!("Throughput ÷ throughput of {b} at the same values of the other axes, at the largest thread count of each series; bars: 95 % bootstrap interval. Speedup vs threads shows every thread count.")
                        } else {
                            format!("Throughput ÷ throughput of {b} at the same values of the other axes; bars: 95 % bootstrap interval.")
                        },
                        kind: Kind::Line(facet.fig),
                    });
                }
            }
        }
        // Fairness vs throughput.
        for (metric, what) in [
            ("jain", "Jain's index"),
            ("fairness_factor", "fairness factor"),
        ] {
            if let Some(f) = scatter(plan, &summary, metric, mode)? {
                figs.push(Fig {
                    name: format!("{metric}_vs_throughput-{mode}"),
                    title: format!("{what} vs throughput ({mode})"),
                    caption: "Each marker is one point (median over repetitions); colour = lock."
                        .into(),
                    kind: Kind::Line(f),
                });
            }
        }
        let show = showcase(plan, &summary, mode, 4)?;
        let in_mode: Vec<&Point> = rows(plan, &summary)?
            .into_iter()
            .filter(|r| r.mode == *mode)
            .map(|r| r.point)
            .collect();
        for p in &show {
            let point = &plan.points[*p as usize];
            let label = point_label(point, &in_mode);
            let file = slug(&label);
            if let Some(f) = thread_bars(&thread_sum, *p, mode)? {
                figs.push(Fig {
                    name: format!("wait_per_thread-{file}-{mode}"),
                    title: format!("Wait per thread: {label} ({mode})"),
                    caption: format!("Point {}: wait p50 / p99 / max per thread (CPU in brackets), medians over repetitions.", point.id),
                    kind: Kind::Bar(f),
                });
            }
            if let Some(f) = node_bars(&node_sum, *p, mode)? {
                figs.push(Fig {
                    name: format!("wait_per_node-{file}-{mode}"),
                    title: format!("Wait per node: {label} ({mode})"),
                    caption: format!("Point {}: per node, p50 = median of its threads' p50, p99 and max = largest of its threads'.", point.id),
                    kind: Kind::Bar(f),
                });
            }
            if let Some(f) = heat(&hand, *p, mode)? {
                figs.push(Fig {
                    name: format!("handoff_heatmap-{file}-{mode}"),
                    title: format!("Node-to-node wait p99: {label} ({mode})"),
                    caption: format!("Point {}: the next holder's wait p99 by (previous holder's node, next holder's node); hand-off counts in brackets.", point.id),
                    kind: Kind::Heat(f),
                });
            }
        }
        if let Some(f) = cdf_fig(plan, &cdfs, &show, mode) {
            figs.push(Fig {
                name: format!("wait_cdf-{mode}"),
                title: format!("Wait-time CDF ({mode})"),
                caption: "Fraction of acquisitions that waited at most x (median over repetitions, per quantile).".into(),
                kind: Kind::Line(f),
            });
        }
    }
    // The plan's own plots.
    for (i, spec) in plan.plots.iter().enumerate() {
        for mode in &modes {
            let kinds = match spec_fig(
                results,
                plan,
                &summary,
                &thread_sum,
                &node_sum,
                &hand,
                spec,
                mode,
            ) {
                Ok(k) => k,
                Err(e) => {
                    warnings.push(format!("plot {} ({mode}): {e}", i + 1));
                    Vec::new()
                }
            };
            for (facet, kind) in kinds {
                let title = spec
                    .title
                    .clone()
                    .unwrap_or_else(|| format!("{} vs {}", metric_label(&spec.metric), spec.x));
                figs.push(Fig {
                    name: facet_name(
                        &format!("plot{}-{}", i + 1, safe_name(&spec.metric)),
                        &facet,
                        mode,
                    ),
                    title: format!("{title}{}", facet_suffix(&facet, mode)),
                    caption: format!(
                        "Plot {} of the experiment: {} against {}.",
                        i + 1,
                        spec.metric,
                        spec.x
                    ),
                    kind,
                });
            }
        }
    }
    Ok((figs, warnings))
}

fn lock_axis_names(plan: &Plan) -> BTreeSet<String> {
    let locks: BTreeSet<&str> = plan.points.iter().map(|p| p.lock.name.as_str()).collect();
    plan.axes
        .iter()
        .filter(|a| {
            a.name == "lock"
                || a.values
                    .iter()
                    .any(|v| matches!(v, Value::Str(s) if locks.contains(s.as_str())))
        })
        .map(|a| a.name.clone())
        .collect()
}

fn scatter(plan: &Plan, df: &DataFrame, metric: &str, mode: &str) -> Result<Option<LineFig>> {
    let tp = estimates(df, "throughput_ops_s")?;
    let y = estimates(df, metric)?;
    let mut by_lock: BTreeMap<String, Vec<(f64, f64, f64, f64)>> = BTreeMap::new();
    for r in rows(plan, df)?.into_iter().filter(|r| r.mode == mode) {
        if tp[r.i].is_nan() || y[r.i].is_nan() {
            continue;
        }
        by_lock.entry(r.point.lock.name.clone()).or_default().push((
            tp[r.i].value,
            y[r.i].value,
            y[r.i].lo,
            y[r.i].hi,
        ));
    }
    if by_lock.is_empty() {
        return Ok(None);
    }
    let lines: Vec<Line> = by_lock
        .into_iter()
        .map(|(name, pts)| Line { name, pts })
        .collect();
    let log_x = wants_log(lines.iter().flat_map(|l| l.pts.iter().map(|p| p.0)));
    Ok(Some(LineFig {
        x_label: metric_label("throughput_ops_s"),
        y_label: metric_label(metric),
        x_unit: Unit::Plain,
        y_unit: Unit::Plain,
        lines,
        log_x,
        log_y: false,
        x_cats: None,
        markers_only: true,
    }))
}

fn filter_point(df: &DataFrame, p: u32, mode: &str) -> Result<Vec<usize>> {
    let pts = f64_values(df, "point")?;
    let modes = str_values(df, "mode")?;
    Ok((0..df.height())
        .filter(|&i| pts[i] as u32 == p && modes[i] == mode)
        .collect())
}

fn wait_groups(df: &DataFrame, idx: &[usize]) -> Result<Vec<BarGroup>> {
    let mut groups = Vec::new();
    for (m, name) in [
        ("wait_p50_ns", "p50"),
        ("wait_p99_ns", "p99"),
        ("wait_max_ns", "max"),
    ] {
        let e = estimates(df, m)?;
        groups.push((
            name.to_string(),
            idx.iter()
                .map(|&i| (e[i].value, e[i].lo, e[i].hi))
                .collect(),
        ));
    }
    Ok(groups)
}

fn thread_bars(df: &DataFrame, p: u32, mode: &str) -> Result<Option<BarFig>> {
    let mut idx = filter_point(df, p, mode)?;
    let classes = str_values(df, "class")?;
    // The main wait class only: the first one of the point.
    if let Some(&first) = idx.first() {
        let c = classes[first].clone();
        idx.retain(|&i| classes[i] == c);
    }
    if idx.len() < 2 || idx.len() > 160 {
        return Ok(None);
    }
    let thread = f64_values(df, "thread")?;
    let cpu = f64_values(df, "cpu")?;
    let cats = idx
        .iter()
        .map(|&i| format!("{} ({})", thread[i], cpu[i]))
        .collect();
    let groups = wait_groups(df, &idx)?;
    let log_y = wants_log(groups.iter().flat_map(|g| g.1.iter().map(|v| v.0)));
    Ok(Some(BarFig {
        x_label: "thread (cpu)".into(),
        y_label: "wait (ns)".into(),
        cats,
        groups,
        log_y,
    }))
}

fn node_bars(df: &DataFrame, p: u32, mode: &str) -> Result<Option<BarFig>> {
    let mut idx = filter_point(df, p, mode)?;
    let classes = str_values(df, "class")?;
    if let Some(&first) = idx.first() {
        let c = classes[first].clone();
        idx.retain(|&i| classes[i] == c);
    }
    if idx.len() < 2 {
        return Ok(None);
    }
    let node = f64_values(df, "node")?;
    let cats = idx.iter().map(|&i| format!("node {}", node[i])).collect();
    let groups = wait_groups(df, &idx)?;
    let log_y = wants_log(groups.iter().flat_map(|g| g.1.iter().map(|v| v.0)));
    Ok(Some(BarFig {
        x_label: "NUMA node".into(),
        y_label: "wait (ns)".into(),
        cats,
        groups,
        log_y,
    }))
}

fn heat(df: &DataFrame, p: u32, mode: &str) -> Result<Option<HeatFig>> {
    let idx = filter_point(df, p, mode)?;
    let from = f64_values(df, "from_node")?;
    let to = f64_values(df, "to_node")?;
    let nodes: Vec<u32> = idx
        .iter()
        .flat_map(|&i| [from[i] as u32, to[i] as u32])
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if nodes.len() < 2 {
        return Ok(None);
    }
    let p99 = estimates(df, "wait_p99_ns")?;
    let count = estimates(df, "count")?;
    let n = nodes.len();
    let mut value = vec![vec![f64::NAN; n]; n];
    let mut counts = vec![vec![0.0; n]; n];
    for &i in &idx {
        let a = nodes.iter().position(|&x| x == from[i] as u32).unwrap_or(0);
        let b = nodes.iter().position(|&x| x == to[i] as u32).unwrap_or(0);
        value[a][b] = p99[i].value;
        counts[a][b] = count[i].value;
    }
    Ok(Some(HeatFig {
        nodes,
        value,
        count: counts,
        value_label: "wait p99".into(),
    }))
}

fn cdf_fig(plan: &Plan, cdfs: &[pipeline::CdfRow], show: &[u32], mode: &str) -> Option<LineFig> {
    let q = locklab_model::records::CDF_QUANTILES;
    let lines: Vec<Line> = cdfs
        .iter()
        .filter(|c| c.mode == mode && show.contains(&c.point))
        .map(|c| Line {
            name: format!(
                "{} ({} threads)",
                c.lock,
                plan.points
                    .get(c.point as usize)
                    .map(|p| p.threads)
                    .unwrap_or(0)
            ),
            pts: c
                .quantiles_ns
                .iter()
                .zip(q)
                .filter(|(v, _)| v.is_finite())
                .map(|(v, q)| (*v, q, q, q))
                .collect(),
        })
        .filter(|l| l.pts.len() > 1)
        .collect();
    if lines.is_empty() {
        return None;
    }
    let log_x = wants_log(lines.iter().flat_map(|l| l.pts.iter().map(|p| p.0)));
    Some(LineFig {
        x_label: "wait (ns)".into(),
        y_label: "fraction of acquisitions".into(),
        x_unit: Unit::Duration,
        y_unit: Unit::Plain,
        lines,
        log_x,
        log_y: false,
        x_cats: None,
        markers_only: false,
    })
}

#[allow(clippy::too_many_arguments)]
/// A value of `key` for row `i` of a thread/node/hand-off summary: a row dimension
/// read from the frame, else the point's axis.
fn row_key(df: &DataFrame, i: usize, p: &Point, key: &str) -> String {
    if ROW_DIMS.contains(&key) {
        if let Ok(v) = str_values(df, key) {
            return format!("{key}={}", v[i]);
        }
    }
    series_name(p, &[key.to_string()])
}

const ROW_DIMS: &[&str] = locklab_model::plan::ROW_DIMENSIONS;

/// Rows of a row-level summary that satisfy the row dimensions of `select`.
fn row_dims_match(df: &DataFrame, select: &[(String, Value)]) -> Result<Vec<bool>> {
    let mut ok = vec![true; df.height()];
    for (k, v) in select
        .iter()
        .filter(|(k, _)| ROW_DIMS.contains(&k.as_str()))
    {
        if df.column(k).is_err() {
            continue;
        }
        let vals = str_values(df, k)?;
        for (i, x) in vals.iter().enumerate() {
            let want = match v {
                Value::Bool(b) => b.to_string(),
                other => other.label(),
            };
            let same = match (x.parse::<f64>(), v.as_f64()) {
                (Ok(a), Some(b)) if !matches!(v, Value::Bool(_)) => a == b,
                _ => *x == want,
            };
            ok[i] &= same;
        }
    }
    Ok(ok)
}

#[allow(clippy::too_many_arguments)]
fn spec_fig(
    results: &Results,
    plan: &Plan,
    summary: &DataFrame,
    threads: &DataFrame,
    nodes: &DataFrame,
    handoffs: &DataFrame,
    spec: &PlotSpec,
    mode: &str,
) -> Result<Vec<(String, Kind)>> {
    let log = (Some(spec.log_x), Some(spec.log_y));
    let group = (!spec.group_by.is_empty()).then_some(spec.group_by.as_slice());
    if ROW_DIMS.contains(&spec.x.as_str()) && spec.x != "class" && spec.x != "remote" {
        // A thread or hand-off metric against thread, cpu, node, from_node or to_node:
        // one line per point (or per group value) among the selected points.
        let df = match spec.x.as_str() {
            "node" => nodes,
            "from_node" | "to_node" => handoffs,
            _ => threads,
        };
        if df.column(&spec.metric).is_err() {
            return Err(Error::Plot {
                plot: spec.title.clone().unwrap_or_else(|| spec.metric.clone()),
                message: format!("no metric named \"{}\" per {}", spec.metric, spec.x),
            });
        }
        let est = estimates(df, &spec.metric)?;
        let xs = f64_values(df, &spec.x)?;
        let keep = row_dims_match(df, &spec.select)?;
        let mut series: BTreeMap<String, Vec<(f64, f64, f64, f64)>> = BTreeMap::new();
        let pts_sel: Vec<&Point> = plan
            .points
            .iter()
            .filter(|p| matches_select(p, mode, &spec.select))
            .collect();
        let keys = match group {
            Some(g) => g.to_vec(),
            None => varying(plan, &pts_sel, &spec.x),
        };
        for r in rows(plan, df)? {
            if r.mode != mode
                || !keep[r.i]
                || !matches_select(r.point, mode, &spec.select)
                || est[r.i].is_nan()
            {
                continue;
            }
            let e = est[r.i];
            let name = if keys.is_empty() {
                "all".to_string()
            } else {
                keys.iter()
                    .map(|k| row_key(df, r.i, r.point, k))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            series
                .entry(name)
                .or_default()
                .push((xs[r.i], e.value, e.lo, e.hi));
        }
        if series.is_empty() {
            return Ok(Vec::new());
        }
        let lines: Vec<Line> = series
            .into_iter()
            .map(|(name, mut pts)| {
                pts.sort_by(|a, b| a.0.total_cmp(&b.0));
                Line { name, pts }
            })
            .collect();
        return Ok(vec![(
            String::new(),
            Kind::Line(LineFig {
                x_label: spec.x.replace('_', " "),
                y_label: metric_label(&spec.metric),
                x_unit: Unit::Plain,
                y_unit: unit_of_metric(&spec.metric),
                lines,
                log_x: spec.log_x,
                log_y: spec.log_y,
                x_cats: None,
                markers_only: false,
            }),
        )]);
    }
    let df;
    let source = if spec.metric == "speedup" {
        let Some(b) = spec.baseline.clone().or_else(|| known_baseline(plan)) else {
            return Ok(Vec::new());
        };
        df = pipeline::speedup(results, &b)?;
        &df
    } else if let Some(sel) = pipeline::selected_summary(results, &spec.select)? {
        // `remote = true`, `cpu = 7`, ...: the selected rows, combined per repetition.
        df = sel;
        &df
    } else {
        summary
    };
    if source.column(&spec.metric).is_err() {
        return Err(Error::Plot {
            plot: spec.title.clone().unwrap_or_else(|| spec.metric.clone()),
            message: format!("no metric named \"{}\" in these results", spec.metric),
        });
    }
    let skip = if spec.metric == "speedup" {
        spec.baseline.as_deref()
    } else {
        None
    };
    Ok(metric_vs(
        plan,
        source,
        &spec.metric,
        &spec.x,
        group,
        &spec.select,
        mode,
        log,
        skip,
        false,
    )?
    .into_iter()
    .map(|f| (f.label, Kind::Line(f.fig)))
    .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_labels_read_naturally() {
        assert_eq!(fmt_tick(10_000_000.0, Unit::Duration), "10ms");
        assert_eq!(fmt_tick(158_489.3, Unit::Duration), "158us");
        assert_eq!(fmt_tick(1_584_893.0, Unit::Duration), "1.58ms");
        assert_eq!(fmt_tick(100_000.0, Unit::Duration), "100us");
        assert_eq!(fmt_tick(1_500_000.0, Unit::Plain), "1.5M");
        assert_eq!(fmt_tick(1_250_000.0, Unit::Plain), "1.25M");
        assert_eq!(fmt_tick(-1e-17, Unit::Plain), "0");
        assert_eq!(fmt_tick(131_072.0, Unit::Size), "128KiB");
        assert_eq!(metric_label("wait_p99_ns"), "wait p99 (ns)");
    }

    #[test]
    fn series_styles_do_not_repeat() {
        let styles: Vec<SeriesStyle> = (0..40).map(series_style).collect();
        let colours: BTreeSet<(u8, u8, u8)> = COLORS.iter().map(|c| (c.0, c.1, c.2)).collect();
        assert!(colours.len() >= 10);
        for (i, a) in styles.iter().enumerate() {
            for b in &styles[i + 1..] {
                assert!(a != b, "series {i} repeats a style");
            }
        }
        assert_eq!(
            wrap_label("workload=lock2, cna15, threshold=10ms, placement=will_it_scale"),
            [
                "workload=lock2, cna15,",
                "threshold=10ms,",
                "placement=will_it_scale"
            ]
        );
    }

    #[test]
    fn the_embedded_font_registers() {
        register_fonts();
        register_fonts();
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, (200, 100)).into_drawing_area();
            root.fill(&WHITE).unwrap();
            root.draw(&Text::new("locklab", (10, 10), ("sans-serif", 12)))
                .unwrap();
        }
        assert!(svg.contains("locklab"));
    }
}
