//! Drawing with plotters: line, bar and heat-map figures as SVG and PNG, with the
//! embedded font.

use super::figure::{BarFig, Fig, Figure, HeatFig, Kind, LineFig};
use super::format::{fmt_tick, log_ticks, si, Unit};
use super::legend::{color, draw_legend, fig_size, legend_width, series_style, Key, Marker};
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

pub(super) fn draw_line<DB: DrawingBackend>(
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

pub(super) fn draw_bars<DB: DrawingBackend>(
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

pub(super) fn heat_color(t: f64) -> RGBColor {
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

pub(super) fn draw_heat<DB: DrawingBackend>(
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

pub(super) fn draw_any<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, fig: &Fig) -> DrawResult {
    match &fig.kind {
        Kind::Line(l) => draw_line(root, &fig.title, l),
        Kind::Bar(b) => draw_bars(root, &fig.title, b),
        Kind::Heat(h) => draw_heat(root, &fig.title, h),
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
