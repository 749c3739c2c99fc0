//! Drawing with plotters: line, bar and heat-map figures as SVG and PNG, with the
//! embedded font.

use super::figure::{BarFig, Fig, Figure, Kind, LineFig};
use super::format::{fmt_tick, log_ticks, si, Unit};
use super::legend::{
    color, draw_legend, fig_size, legend_width, series_style, styled, Key, Marker, SeriesStyle,
};
use crate::error::{Error, Result};
use crate::util;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;
use std::sync::Once;

static FONT: &[u8] = include_bytes!("../../assets/DejaVuSans.ttf");
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

pub(super) type DrawResult = std::result::Result<(), String>;

pub(super) fn s<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

/// Axis range with padding; `from_zero` starts a non-negative range at zero when
/// the data is not far from it (honest bars and magnitudes).
pub(super) fn span(vals: impl Iterator<Item = f64>, log: bool, from_zero: bool) -> (f64, f64) {
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

pub(super) fn tx(v: f64, log: bool) -> f64 {
    if log {
        v.log10()
    } else {
        v
    }
}

/// How one axis writes its numbers, so that the label's unit is the unit of the
/// ticks: a linear time axis is scaled to one unit (`wait p99 (µs)`, ticks `20`, `40`);
/// a log time axis spans several units, so its ticks carry them (`10µs`, `1ms`) and
/// its label does not.
pub(super) struct AxisText {
    pub(super) label: String,
    unit: Unit,
    log: bool,
    divisor: f64,
}

impl AxisText {
    pub(super) fn new(label: &str, unit: Unit, log: bool, max_abs: f64) -> Self {
        if unit != Unit::Duration {
            return AxisText {
                label: label.to_string(),
                unit,
                log,
                divisor: 1.0,
            };
        }
        let base = label
            .strip_suffix(" (ns)")
            .or_else(|| label.strip_suffix(" (time)"))
            .unwrap_or(label);
        if log {
            return AxisText {
                label: base.to_string(),
                unit,
                log,
                divisor: 1.0,
            };
        }
        let (divisor, name) = time_unit(max_abs);
        AxisText {
            label: format!("{base} ({name})"),
            unit,
            log,
            divisor,
        }
    }

    /// The tick text at axis coordinate `v` (a log axis is in decades).
    pub(super) fn tick(&self, v: f64) -> String {
        let x = if self.log { 10f64.powf(v) } else { v };
        match (self.unit, self.log) {
            (Unit::Duration, false) => si(x / self.divisor),
            _ => fmt_tick(x, self.unit),
        }
    }
}

/// The unit a linear time axis reaching `max_ns` is written in.
pub(super) fn time_unit(max_ns: f64) -> (f64, &'static str) {
    match max_ns.abs() {
        m if m >= 1e9 => (1e9, "s"),
        m if m >= 1e6 => (1e6, "ms"),
        m if m >= 1e3 => (1e3, "µs"),
        _ => (1.0, "ns"),
    }
}

fn max_abs(vals: impl Iterator<Item = f64>) -> f64 {
    vals.filter(|v| v.is_finite())
        .fold(0.0, |m: f64, v| m.max(v.abs()))
}

/// The runs of a series to join with lines: consecutive points with no x value of
/// the figure between them. A series that skips an x another series measured is not
/// drawn across it (cna14 at 16 and 72 threads is not joined across 18, 36, 54).
pub(super) fn segments(pts: &[(f64, f64)], all_x: &[f64]) -> Vec<Vec<(f64, f64)>> {
    let mut out: Vec<Vec<(f64, f64)>> = Vec::new();
    let mut cur: Vec<(f64, f64)> = Vec::new();
    for &p in pts {
        if let Some(&(px, _)) = cur.last() {
            let skipped = all_x.iter().any(|&x| x > px && x < p.0);
            if skipped {
                out.push(std::mem::take(&mut cur));
            }
        }
        cur.push(p);
    }
    out.push(cur);
    out.retain(|s| s.len() > 1);
    out
}

pub(super) fn style_of(i: usize, l: &super::figure::Line) -> SeriesStyle {
    match l.style {
        Some((c, v)) => styled(c, v),
        None => series_style(i),
    }
}

/// Sizes of a drawing at scale `k` (1: the SVG, 2: the PNG).
#[derive(Clone, Copy)]
pub(super) struct Px(pub(super) i32);

impl Px {
    pub(super) fn u(self, n: u32) -> u32 {
        n * self.0 as u32
    }
    pub(super) fn i(self, n: i32) -> i32 {
        n * self.0
    }
    pub(super) fn font(self, n: u32) -> (&'static str, u32) {
        ("sans-serif", self.u(n))
    }
}

pub(super) const TITLE: u32 = 24;
pub(super) const TICKS: u32 = 16;
pub(super) const AXIS: u32 = 18;

/// A white figure with its title on top: the area left for the plot (and legend).
pub(super) fn titled<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    k: Px,
) -> std::result::Result<DrawingArea<DB, Shift>, String> {
    root.fill(&WHITE).map_err(s)?;
    root.margin(k.u(10), 0, 0, 0)
        .titled(title, k.font(TITLE))
        .map_err(s)
}

pub(super) fn draw_line<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    f: &LineFig,
    k: Px,
) -> DrawResult {
    let root = titled(root, title, k)?;
    let labels: Vec<String> = f.lines.iter().map(|l| l.name.clone()).collect();
    let (w, _) = root.dim_in_pixel();
    let (plot, legend) = root.split_horizontally(w - k.u(legend_width(&labels)));
    let xs = f.lines.iter().flat_map(|l| l.pts.iter().map(|p| p.0));
    let ys = f
        .lines
        .iter()
        .flat_map(|l| l.pts.iter().flat_map(|p| [p.1, p.2, p.3]))
        .chain(f.bounds.iter().map(|b| b.y));
    let (x0, x1) = match &f.x_cats {
        Some(c) => (-0.5, c.len() as f64 - 0.5),
        None => span(xs.clone(), f.log_x, false),
    };
    let ymax = max_abs(ys.clone());
    let (y0, y1) = span(ys, f.log_y, true);
    let mut chart = ChartBuilder::on(&plot)
        .margin(k.u(18))
        .x_label_area_size(k.u(60))
        .y_label_area_size(k.u(80))
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(s)?;
    let (log_x, log_y) = (f.log_x, f.log_y);
    let xt = AxisText::new(&f.x_label, f.x_unit, log_x, max_abs(xs));
    let yt = AxisText::new(&f.y_label, f.y_unit, log_y, ymax);
    let cats = f.x_cats.clone();
    let int_x = cats.is_none()
        && !log_x
        && f.lines
            .iter()
            .all(|l| l.pts.iter().all(|p| p.0.fract() == 0.0))
        && x1 - x0 <= 40.0;
    let xfmt = |v: &f64| match &cats {
        None if int_x && (v - v.round()).abs() > 1e-6 => String::new(),
        Some(c) => {
            let i = v.round();
            if (v - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < c.len() {
                c[i as usize].clone()
            } else {
                String::new()
            }
        }
        None => xt.tick(*v),
    };
    let yfmt = |v: &f64| yt.tick(*v);
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(xt.label.as_str())
        .y_desc(yt.label.as_str())
        .x_label_formatter(&xfmt)
        .y_label_formatter(&yfmt)
        .label_style(k.font(TICKS))
        .axis_desc_style(k.font(AXIS))
        .light_line_style(RGBColor(240, 240, 240))
        .bold_line_style(RGBColor(215, 215, 215));
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
    // Node boundaries first, under the data.
    let grey = RGBColor(120, 120, 120);
    for b in &f.boundaries {
        let x = tx(b.x, log_x);
        if x <= x0 || x >= x1 {
            continue;
        }
        chart
            .draw_series(DashedLineSeries::new(
                vec![(x, y0), (x, y1)],
                k.u(4),
                k.u(4),
                grey.stroke_width(k.u(1)),
            ))
            .map_err(s)?;
        let style = TextStyle::from(k.font(13).into_font()).color(&grey);
        chart
            .draw_series([Text::new(
                b.label.clone(),
                (x, y1 - (y1 - y0) * 0.02),
                style,
            )])
            .map_err(s)?;
    }
    // Claims' bounds: a thin dashed red line, labelled at the right.
    let red = RGBColor(190, 30, 45);
    for b in &f.bounds {
        if log_y && b.y <= 0.0 {
            continue;
        }
        let y = tx(b.y, log_y);
        // A claim about one point: a short mark at its x; else across the figure.
        let (a, z) = match b.x {
            Some((lo, hi)) if lo.is_finite() && (!log_x || lo > 0.0) => {
                let half = (x1 - x0) * 0.035;
                (
                    (tx(lo, log_x) - half).max(x0),
                    (tx(hi, log_x) + half).min(x1),
                )
            }
            _ => (x0, x1),
        };
        chart
            .draw_series([PathElement::new(
                vec![(a, y), (z, y)],
                red.stroke_width(k.u(2)),
            )])
            .map_err(s)?;
        let style = TextStyle::from(k.font(13).into_font()).color(&red).pos(
            plotters::style::text_anchor::Pos::new(
                plotters::style::text_anchor::HPos::Right,
                plotters::style::text_anchor::VPos::Bottom,
            ),
        );
        chart
            .draw_series([Text::new(b.label.clone(), (z, y), style)])
            .map_err(s)?;
    }
    let all_x: Vec<f64> = if !f.swept_x {
        Vec::new()
    } else {
        let mut v: Vec<f64> = f
            .lines
            .iter()
            .flat_map(|l| l.pts.iter().map(|p| tx(p.0, log_x)))
            .collect();
        v.sort_by(f64::total_cmp);
        v.dedup();
        v
    };
    for (i, l) in f.lines.iter().enumerate() {
        let st = style_of(i, l);
        let c = st.color;
        let pts: Vec<(f64, f64)> = l
            .pts
            .iter()
            .filter(|p| p.1.is_finite() && (!log_y || p.1 > 0.0))
            .map(|p| (tx(p.0, log_x), tx(p.1, log_y)))
            .collect();
        if !f.markers_only {
            for seg in segments(&pts, &all_x) {
                if st.dashed {
                    chart
                        .draw_series(DashedLineSeries::new(
                            seg,
                            k.u(9),
                            k.u(5),
                            c.stroke_width(k.u(2)),
                        ))
                        .map_err(s)?;
                } else {
                    chart
                        .draw_series(LineSeries::new(seg, c.stroke_width(k.u(2))))
                        .map_err(s)?;
                }
            }
        }
        let r = k.i(4);
        match st.marker {
            Marker::Circle => chart
                .draw_series(pts.iter().map(|&p| Circle::new(p, r, c.filled())))
                .map(|_| ()),
            Marker::Triangle => chart
                .draw_series(
                    pts.iter()
                        .map(|&p| TriangleMarker::new(p, k.i(5), c.filled())),
                )
                .map(|_| ()),
            Marker::Square => {
                chart
                    .draw_series(pts.iter().map(|&p| {
                        EmptyElement::at(p) + Rectangle::new([(-r, -r), (r, r)], c.filled())
                    }))
                    .map(|_| ())
            }
            Marker::Cross => chart
                .draw_series(
                    pts.iter()
                        .map(|&p| Cross::new(p, r, c.stroke_width(k.u(2)))),
                )
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
            let st = c.stroke_width(k.u(1));
            chart
                .draw_series([
                    PathElement::new(vec![(x, a), (x, b)], st),
                    PathElement::new(vec![(x - cap, a), (x + cap, a)], st),
                    PathElement::new(vec![(x - cap, b), (x + cap, b)], st),
                ])
                .map_err(s)?;
        }
    }
    let entries: Vec<(String, Key)> = f
        .lines
        .iter()
        .enumerate()
        .map(|(i, l)| (l.name.clone(), Key::Line(style_of(i, l), f.markers_only)))
        .collect();
    if legend.dim_in_pixel().0 > 0 {
        draw_legend(&legend, &entries, k.0)?;
    }
    root.present().map_err(s)
}

pub(super) fn draw_bars<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    f: &BarFig,
    k: Px,
) -> DrawResult {
    let root = titled(root, title, k)?;
    let labels: Vec<String> = f.groups.iter().map(|g| g.0.clone()).collect();
    let (w, _) = root.dim_in_pixel();
    let (plot, legend) = root.split_horizontally(w - k.u(legend_width(&labels)));
    let ys = f
        .groups
        .iter()
        .flat_map(|g| g.1.iter().flat_map(|p| [p.0, p.1, p.2]));
    let ymax = max_abs(ys.clone());
    let (y0, y1) = span(ys, f.log_y, true);
    let y0 = if f.log_y { y0 } else { y0.min(0.0) };
    let n = f.cats.len();
    let mut chart = ChartBuilder::on(&plot)
        .margin(k.u(18))
        .x_label_area_size(k.u(60))
        .y_label_area_size(k.u(80))
        .build_cartesian_2d(-0.5..(n as f64 - 0.5), y0..y1)
        .map_err(s)?;
    let log_y = f.log_y;
    let yt = AxisText::new(&f.y_label, Unit::Duration, log_y, ymax);
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
    let yfmt = |v: &f64| yt.tick(*v);
    chart
        .configure_mesh()
        .y_labels(if log_y { log_ticks(y1 - y0) } else { 10 })
        .disable_x_mesh()
        .x_labels((n * 2 + 1).min(97))
        .x_desc(f.x_label.as_str())
        .y_desc(yt.label.as_str())
        .x_label_formatter(&xfmt)
        .y_label_formatter(&yfmt)
        .label_style(k.font(TICKS))
        .axis_desc_style(k.font(AXIS))
        .light_line_style(RGBColor(240, 240, 240))
        .bold_line_style(RGBColor(215, 215, 215))
        .draw()
        .map_err(s)?;
    let groups = f.groups.len().max(1) as f64;
    let width = 0.8 / groups;
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
                    BLACK.stroke_width(k.u(1)),
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
        draw_legend(&legend, &entries, k.0)?;
    }
    root.present().map_err(s)
}

pub(super) fn draw_any<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    fig: &Fig,
    k: Px,
) -> DrawResult {
    match &fig.kind {
        Kind::Line(l) => draw_line(root, &fig.title, l, k),
        Kind::Bar(b) => draw_bars(root, &fig.title, b, k),
        Kind::Heat(h) => super::heat::draw_heat(root, &fig.title, h, k),
    }
}

pub(super) fn safe_name(s: &str) -> String {
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
pub(super) fn encode_png(rgb: &[u8], w: u32, h: u32) -> std::result::Result<Vec<u8>, String> {
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

/// The PNG's scale over the SVG's pixel size.
pub(super) const PNG_SCALE: i32 = 2;

pub(super) fn render(fig: &Fig, dir: &Path) -> Result<Figure> {
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
        draw_any(&root, fig, Px(1)).map_err(err)?;
    }
    let svg_path = dir.join(format!("{name}.svg"));
    util::write_atomic(&svg_path, svg.as_bytes())?;
    // The PNG at twice the size, every length doubled: print resolution, same layout.
    let png_path = dir.join(format!("{name}.png"));
    let (pw, ph) = (w * PNG_SCALE as u32, h * PNG_SCALE as u32);
    let mut rgb = vec![0u8; (pw * ph * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (pw, ph)).into_drawing_area();
        draw_any(&root, fig, Px(PNG_SCALE)).map_err(err)?;
    }
    let png = encode_png(&rgb, pw, ph).map_err(err)?;
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

#[cfg(test)]
mod tests {
    use super::*;

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
