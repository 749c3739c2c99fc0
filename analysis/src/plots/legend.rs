//! Series styles (colour, marker, dash) and the legend column beside the plot.

use super::draw::{s, DrawResult};
use super::figure::{Fig, Kind};
use plotters::coord::Shift;
use plotters::prelude::*;

pub(super) const W: u32 = 960;
pub(super) const H: u32 = 600;

/// Okabe–Ito, distinguishable with the common colour-vision deficiencies, plus two
/// darker hues: ten colours before any repeats. Beyond ten series the marker shape
/// and the dash pattern change too ([`series_style`]), so no two series look alike.
pub(super) const COLORS: [RGBColor; 10] = [
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

pub(super) fn color(i: usize) -> RGBColor {
    COLORS[i % COLORS.len()]
}

/// Marker shapes, changed every ten series.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Marker {
    Circle,
    Triangle,
    Square,
    Cross,
}

/// How series `i` is drawn: colour, marker and dash (a dash pattern from the 11th
/// series on).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct SeriesStyle {
    pub(super) color: RGBColor,
    pub(super) marker: Marker,
    pub(super) dashed: bool,
}

pub(super) fn series_style(i: usize) -> SeriesStyle {
    styled(i, i / COLORS.len())
}

/// Colour `colour` with marker and dash `variant`: a second grouping key changes the
/// marker and the dash, so colour never encodes two variables at once.
pub(super) fn styled(colour: usize, variant: usize) -> SeriesStyle {
    SeriesStyle {
        color: color(colour),
        marker: [
            Marker::Circle,
            Marker::Triangle,
            Marker::Square,
            Marker::Cross,
        ][variant % 4],
        dashed: variant % 2 == 1,
    }
}

/// What a legend entry shows beside its label.
#[derive(Debug, Clone, Copy)]
pub(super) enum Key {
    Line(SeriesStyle, bool),
    Bar(RGBColor),
}

pub(super) const LEGEND_FONT: u32 = 15;
pub(super) const LEGEND_ROW: i32 = 20;
/// Characters per legend line; longer labels wrap at ", ".
pub(super) const LEGEND_CHARS: usize = 34;

/// A legend label broken into lines of at most [`LEGEND_CHARS`] where it can be (at
/// ", "), so no label is cut.
pub(super) fn wrap_label(label: &str) -> Vec<String> {
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
pub(super) fn legend_width(labels: &[String]) -> u32 {
    if labels.is_empty() || (labels.len() == 1 && labels[0] == "all") {
        return 0;
    }
    let chars = labels
        .iter()
        .flat_map(|l| wrap_label(l))
        .map(|l| l.chars().count())
        .max()
        .unwrap_or(0);
    // DejaVu Sans at 15 px: about 8.5 px per character; 44 px for the key.
    (chars as u32 * 17 / 2 + 60).clamp(110, 360)
}

/// Height a legend of these labels needs, in pixels.
pub(super) fn legend_height(labels: &[String]) -> u32 {
    let rows: usize = labels.iter().map(|l| wrap_label(l).len()).sum();
    (rows as i32 * LEGEND_ROW + labels.len() as i32 * 4 + 40) as u32
}

/// Figure size: wide enough for the plot and its legend column, tall enough for
/// every legend entry.
pub(super) fn fig_size(fig: &Fig) -> (u32, u32) {
    let labels = legend_labels(fig);
    (
        W + legend_width(&labels),
        H.max(legend_height(&labels) + 60),
    )
}

pub(super) fn legend_labels(fig: &Fig) -> Vec<String> {
    match &fig.kind {
        Kind::Line(l) => l.lines.iter().map(|x| x.name.clone()).collect(),
        Kind::Bar(b) => b.groups.iter().map(|g| g.0.clone()).collect(),
        Kind::Heat(_) => Vec::new(),
    }
}

/// Draw a legend in its own column, so it never hides data; `k` scales every size
/// (2 for the PNG, 1 for the SVG).
pub(super) fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    entries: &[(String, Key)],
    k: i32,
) -> DrawResult {
    let (w, _) = area.dim_in_pixel();
    if w == 0 || entries.is_empty() {
        return Ok(());
    }
    let mut y = 30 * k;
    let font = ("sans-serif", LEGEND_FONT * k as u32)
        .into_font()
        .color(&BLACK);
    let stroke = 2 * k as u32;
    for (label, key) in entries {
        let ky = y + (LEGEND_ROW / 2 - 1) * k;
        match *key {
            Key::Line(st, markers_only) => {
                let c = st.color;
                if !markers_only {
                    if st.dashed {
                        for x in [4, 16, 28] {
                            area.draw(&PathElement::new(
                                vec![(x * k, ky), ((x + 8) * k, ky)],
                                c.stroke_width(stroke),
                            ))
                            .map_err(s)?;
                        }
                    } else {
                        area.draw(&PathElement::new(
                            vec![(4 * k, ky), (36 * k, ky)],
                            c.stroke_width(stroke),
                        ))
                        .map_err(s)?;
                    }
                }
                draw_marker_px(area, (20 * k, ky), st, k)?;
            }
            Key::Bar(c) => {
                area.draw(&Rectangle::new(
                    [(8 * k, ky - 6 * k), (30 * k, ky + 6 * k)],
                    c.filled(),
                ))
                .map_err(s)?;
            }
        }
        for line in wrap_label(label) {
            area.draw(&Text::new(line, (44 * k, y), font.clone()))
                .map_err(s)?;
            y += LEGEND_ROW * k;
        }
        y += 4 * k;
    }
    Ok(())
}

pub(super) fn draw_marker_px<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    p: (i32, i32),
    st: SeriesStyle,
    k: i32,
) -> DrawResult {
    let c = st.color;
    let r = 4 * k;
    match st.marker {
        Marker::Circle => area.draw(&Circle::new(p, r, c.filled())),
        Marker::Triangle => area.draw(&TriangleMarker::new(p, 5 * k, c.filled())),
        Marker::Square => area.draw(&Rectangle::new(
            [(p.0 - r, p.1 - r), (p.0 + r, p.1 + r)],
            c.filled(),
        )),
        Marker::Cross => area.draw(&Cross::new(p, r, c.stroke_width(2 * k as u32))),
    }
    .map_err(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

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
}
