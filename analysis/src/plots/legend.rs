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

/// What a legend entry shows beside its label.
#[derive(Debug, Clone, Copy)]
pub(super) enum Key {
    Line(SeriesStyle, bool),
    Bar(RGBColor),
}

pub(super) const LEGEND_FONT: u32 = 14;
pub(super) const LEGEND_ROW: i32 = 19;
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
    // DejaVu Sans at 14 px: about 8 px per character; 44 px for the key.
    (chars as u32 * 8 + 60).clamp(110, 340)
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

/// Draw a legend in its own column, so it never hides data.
pub(super) fn draw_legend<DB: DrawingBackend>(
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

pub(super) fn draw_marker_px<DB: DrawingBackend>(
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
