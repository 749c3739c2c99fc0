//! Node-to-node heat maps: cells coloured on a log scale (viridis) with their values
//! and hand-off counts, and the colour bar that reads them.

use super::draw::{s, titled, DrawResult, Px, AXIS, TICKS};
use super::figure::HeatFig;
use super::format::{fmt_tick, si, Unit};
use plotters::coord::Shift;
use plotters::prelude::*;

/// A perceptually uniform sequential colour map (viridis, sampled at nine points and
/// interpolated), t in [0, 1]: equal steps look equal, dark to light, and it stays
/// readable in grey and for the common colour-vision deficiencies.
pub(super) fn heat_color(t: f64) -> RGBColor {
    const STOPS: [(u8, u8, u8); 9] = [
        (68, 1, 84),
        (71, 44, 122),
        (59, 81, 139),
        (44, 113, 142),
        (33, 144, 141),
        (39, 173, 129),
        (92, 200, 99),
        (170, 220, 50),
        (253, 231, 37),
    ];
    let t = t.clamp(0.0, 1.0) * (STOPS.len() - 1) as f64;
    let i = (t.floor() as usize).min(STOPS.len() - 2);
    let u = t - i as f64;
    let (a, b) = (STOPS[i], STOPS[i + 1]);
    let lerp = |x: u8, y: u8| (x as f64 + (y as f64 - x as f64) * u).round() as u8;
    RGBColor(lerp(a.0, b.0), lerp(a.1, b.1), lerp(a.2, b.2))
}

/// Where a value sits on the heat map's log colour scale from `lo` to `hi`.
pub(super) fn heat_t(v: f64, lo: f64, hi: f64) -> f64 {
    if hi > lo {
        (v.max(lo).ln() - lo.ln()) / (hi.ln() - lo.ln())
    } else {
        0.5
    }
}

pub(super) fn draw_heat<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    f: &HeatFig,
    k: Px,
) -> DrawResult {
    let root = titled(root, title, k)?;
    let n = f.nodes.len();
    let vals: Vec<f64> = f
        .value
        .iter()
        .flatten()
        .copied()
        .filter(|v| v.is_finite() && *v > 0.0)
        .collect();
    let hi = vals
        .iter()
        .copied()
        .fold(f64::NEG_INFINITY, f64::max)
        .max(1.0);
    // At least a decade of colour: 46 µs against 70 µs is a modest difference and
    // must not look like black against white.
    let lo = vals
        .iter()
        .copied()
        .fold(f64::INFINITY, f64::min)
        .max(1.0)
        .min(hi / 10.0);
    let (w, _) = root.dim_in_pixel();
    let (plot, bar) = root.split_horizontally(w - k.u(170));
    let mut chart = ChartBuilder::on(&plot)
        .margin(k.u(18))
        .x_label_area_size(k.u(60))
        .y_label_area_size(k.u(90))
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
    chart
        .configure_mesh()
        .disable_mesh()
        .x_labels(n * 2 + 1)
        .y_labels(n * 2 + 1)
        .x_desc("next holder's node (to); hand-off counts in brackets")
        .y_desc("previous holder's node (from)")
        .x_label_formatter(&xl)
        .y_label_formatter(&yl)
        .label_style(k.font(TICKS))
        .axis_desc_style(k.font(AXIS - 1))
        .draw()
        .map_err(s)?;
    let font_size = if n > 8 { 11 } else { 16 };
    for i in 0..n {
        for j in 0..n {
            let v = f.value[i][j];
            let t = heat_t(v, lo, hi);
            let fill = if v.is_finite() && v > 0.0 {
                heat_color(t)
            } else {
                RGBColor(235, 235, 235)
            };
            let (x, y) = (j as f64, row(i));
            chart
                .draw_series([Rectangle::new(
                    [(x - 0.5, y - 0.5), (x + 0.5, y + 0.5)],
                    fill.filled(),
                )])
                .map_err(s)?;
            // Dark text on the light end of the map, white on the dark end.
            let ink = if v.is_finite() && v > 0.0 && t < 0.6 {
                WHITE
            } else {
                BLACK
            };
            let text = if v.is_finite() {
                format!("{} ({})", fmt_tick(v, Unit::Duration), si(f.count[i][j]))
            } else {
                "—".into()
            };
            let style = TextStyle::from(k.font(font_size).into_font())
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
    draw_colour_bar(&bar, &f.value_label, lo, hi, k)?;
    root.present().map_err(s)
}

/// The heat map's colour scale: a vertical bar from `lo` (bottom) to `hi` (top), on
/// the same log scale as the cells, with ticks in time units.
fn draw_colour_bar<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    label: &str,
    lo: f64,
    hi: f64,
    k: Px,
) -> DrawResult {
    let (_, h) = area.dim_in_pixel();
    let (top, bottom) = (k.i(40), h as i32 - k.i(90));
    if bottom <= top {
        return Ok(());
    }
    let (x0, x1) = (k.i(20), k.i(44));
    let steps = (bottom - top).max(1);
    for py in top..bottom {
        let t = 1.0 - (py - top) as f64 / steps as f64;
        area.draw(&Rectangle::new(
            [(x0, py), (x1, py + 1)],
            heat_color(t).filled(),
        ))
        .map_err(s)?;
    }
    area.draw(&Rectangle::new(
        [(x0, top), (x1, bottom)],
        BLACK.stroke_width(k.u(1)),
    ))
    .map_err(s)?;
    let font = k.font(TICKS - 1).into_font().color(&BLACK);
    let y_of = |v: f64| bottom - (heat_t(v, lo, hi) * steps as f64).round() as i32;
    let mut ticks: Vec<f64> = vec![lo, hi];
    if hi > lo {
        // Values 1, 2 and 5 times a power of ten between the ends.
        let mut d = 10f64.powf(lo.log10().floor());
        while d <= hi {
            for m in [1.0, 2.0, 5.0] {
                let v = d * m;
                if v > lo * 1.15 && v < hi / 1.15 {
                    ticks.push(v);
                }
            }
            d *= 10.0;
        }
    }
    let mut last_y: Option<i32> = None;
    ticks.sort_by(|a, b| b.total_cmp(a));
    ticks.dedup();
    for v in ticks {
        let y = y_of(v);
        if last_y.is_some_and(|l| (y - l).abs() < k.i(18)) {
            continue;
        }
        last_y = Some(y);
        area.draw(&PathElement::new(
            vec![(x1, y), (x1 + k.i(6), y)],
            BLACK.stroke_width(k.u(1)),
        ))
        .map_err(s)?;
        area.draw(&Text::new(
            fmt_tick(v, Unit::Duration),
            (x1 + k.i(9), y - k.i(8)),
            font.clone(),
        ))
        .map_err(s)?;
    }
    area.draw(&Text::new(
        label.to_string(),
        (x0 - k.i(6), bottom + k.i(20)),
        font.clone(),
    ))
    .map_err(s)?;
    area.draw(&Text::new(
        "(log scale)".to_string(),
        (x0 - k.i(6), bottom + k.i(40)),
        font,
    ))
    .map_err(s)
}
