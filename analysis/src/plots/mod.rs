//! Figures, drawn with plotters as SVG and PNG (the PNG at twice the size): throughput
//! vs threads by lock (sim and native on one figure when both ran), speedup vs an
//! axis, Jain's index vs throughput, wait p99 per thread, per node and node to node,
//! the wait-time tail as a CCDF, and every `plot` of the plan.
//!
//! Text is drawn with DejaVu Sans, embedded in the binary and registered with
//! plotters at first use, so figures render on machines without system fonts.
//! Every figure has a title, axis labels whose unit is the unit of the ticks, and a
//! legend; error bars are the 95 % intervals of [`crate::pipeline`]. An axis spanning
//! more than a factor of 50 is drawn on a log scale.
//!
//! The default set is small and chosen: which figures appear depends on the data (no
//! threshold-like axis, no speedup-vs-axis figure; one thread per node, no per-node
//! figure), per-node figures and heat maps show two locks (the NUMA-aware one and
//! its baseline first), and a plot of the plan replaces the default figure of the
//! same metric and axis.
//!
//! No series is ever dropped. Colour encodes one grouping key and marker and dash a
//! second; more keys, or more series than a figure can tell apart, become small
//! multiples (`throughput_vs_threads-workload-lock2-sim`), split on keys that do not
//! name the lock. A line never crosses an x value its series was not measured at.
//! Claims' bounds and NUMA-node boundaries are drawn on the figures they concern.
//! Legends sit in a column beside the plot.
//!
//! One file per job: `format` (tick and label text), `figure` (the figure model),
//! `heat` (node-to-node heat maps and their colour bar),
//! `legend` and `draw` (plotters), `facets` (metric vs an axis, as small
//! multiples), `catalogue` (the default figures) and `spec` (the plan's plots).

mod catalogue;
mod draw;
mod facets;
mod figure;
mod format;
mod heat;
mod legend;
mod spec;

pub(crate) use catalogue::point_label;
pub use draw::register_fonts;
pub use figure::Figure;
pub use format::metric_label;

use crate::error::{Error, Result};
use crate::store::Results;
use crate::util;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

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
    let (mut figs, mut warnings) = catalogue::figures(results)?;
    let names = unique_file_names(figs.iter().map(|f| f.name.as_str()));
    for (f, name) in figs.iter_mut().zip(names) {
        f.name = name;
    }
    // Figures are independent: draw and encode them on every core, keep plan order.
    use rayon::prelude::*;
    register_fonts();
    let drawn: Vec<Result<Figure>> = figs.par_iter().map(|f| draw::render(f, dir)).collect();
    let mut figures = Vec::new();
    for r in drawn {
        match r {
            Ok(fig) => figures.push(fig),
            // A figure that cannot be written (a full disk) fails the report; one
            // that cannot be drawn is a warning in it.
            Err(e @ Error::Io { .. }) => return Err(e),
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

/// The file name (without extension) of each figure, in order: its name with the
/// characters a file name cannot hold replaced, and numbered (`-2`, `-3`, ...) where
/// that makes it another figure's, as for facet values that differ only in such
/// characters (`a/b`, `a_b`, `a b`): each figure is written to a file of its own.
fn unique_file_names<'a>(names: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut seen = BTreeSet::new();
    names
        .map(|n| {
            let base = draw::safe_name(n);
            let mut name = base.clone();
            let mut k = 1;
            while !seen.insert(name.clone()) {
                k += 1;
                name = format!("{base}-{k}");
            }
            name
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::unique_file_names;

    #[test]
    fn figures_whose_names_differ_only_in_unsafe_characters_get_files_of_their_own() {
        let names = [
            "plot3-t-a/b-sim",
            "plot3-t-a_b-sim",
            "plot3-t-a b-sim",
            "other",
        ];
        assert_eq!(
            unique_file_names(names.into_iter()),
            [
                "plot3-t-a_b-sim",
                "plot3-t-a_b-sim-2",
                "plot3-t-a_b-sim-3",
                "other"
            ]
        );
        // A name that already looks numbered is not taken by a later duplicate.
        let names = ["x-2", "x", "x"];
        assert_eq!(unique_file_names(names.into_iter()), ["x-2", "x", "x-3"]);
    }
}
