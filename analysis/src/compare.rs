//! Two results directories side by side: per point and mode, the ratio B/A of each
//! headline metric with a bootstrap interval, and a direction-aware verdict.
//!
//! Results of different plans (another experiment, or other points, durations or
//! machine) are refused: points of the same id would not measure the same thing.
//! Results from different hosts (hostname or CPU model) are refused unless the
//! caller allows it: native numbers of two machines are not comparable by default.
//! A point with a repetition the noise gate flagged is marked in the table.
//! With `sim_vs_native`, the simulated records of A are compared with the native
//! records of B (usually the same directory), point by point.

use crate::error::{Error, Result};
use crate::pipeline::{f64_values, str_values};
use crate::stats::{self, Estimate};
use crate::store::{load_results, Results};
use crate::util::{create_dir, write_atomic};
use locklab_model::metrics::{self, Better};
use locklab_model::plan::Plan;
use polars::prelude::*;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CompareOptions {
    /// Compare results of different hosts anyway (noted as a warning).
    pub allow_cross_host: bool,
    /// Compare A's simulated records with B's native ones.
    pub sim_vs_native: bool,
}

/// The headline metrics: points metrics whose better direction (the registry's
/// [`Better`]) decides each verdict.
pub const HEADLINE: &[&str] = &["throughput_ops_s", "wait_p99_ns", "fairness_factor", "jain"];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CompareVerdict {
    Better,
    Worse,
    WithinNoise,
    NotMeasured,
}

impl CompareVerdict {
    pub fn as_str(self) -> &'static str {
        match self {
            CompareVerdict::Better => "better",
            CompareVerdict::Worse => "worse",
            CompareVerdict::WithinNoise => "within noise",
            CompareVerdict::NotMeasured => "not measured",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct CompareRow {
    pub point_id: String,
    /// Mode of A's records (B's is the same, or native with `sim_vs_native`).
    pub mode: String,
    pub metric: String,
    pub a: Estimate,
    pub b: Estimate,
    /// B / A, with its interval.
    pub ratio: Estimate,
    /// B relative to A.
    pub verdict: CompareVerdict,
    /// Which side had a repetition of this point flagged by the noise gate: "",
    /// "A", "B" or "A+B".
    pub noise: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub a: PathBuf,
    pub b: PathBuf,
    pub a_label: String,
    pub b_label: String,
    pub rows: Vec<CompareRow>,
    pub warnings: Vec<String>,
}

type Samples = BTreeMap<(String, String), BTreeMap<String, Vec<f64>>>;

/// What two plans must share for their points to be compared, and how they
/// differ if they do not: the experiment's name, then the fingerprint of what
/// produces the records (topology, run, points). Claims and plots may differ.
pub fn plan_difference(a: &Plan, b: &Plan) -> Option<String> {
    if a.experiment != b.experiment {
        return Some(format!(
            "they are runs of different experiments (`{}` and `{}`)",
            a.experiment, b.experiment
        ));
    }
    let (fa, fb) = (measured_fingerprint(a), measured_fingerprint(b));
    (fa != fb).then(|| {
        format!(
            "they ran different plans of experiment `{}` (fingerprints {fa} and {fb}: other points, durations, repetitions or machine)",
            a.experiment
        )
    })
}

/// SHA-256 (12 hex digits) of the topology, run and points of a plan.
pub fn measured_fingerprint(plan: &Plan) -> String {
    use sha2::{Digest, Sha256};
    let json = serde_json::to_vec(&(&plan.topology, &plan.run, &plan.points)).unwrap_or_default();
    Sha256::digest(&json)
        .iter()
        .take(6)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// (point_id, mode) pairs with a repetition the noise gate flagged.
fn flagged(r: &Results) -> Result<std::collections::BTreeSet<(String, String)>> {
    let df = r
        .points
        .clone()
        .select([col("point_id"), col("mode"), col("noise")])
        .collect()
        .map_err(Error::polars(format!("read {}", r.dir.display())))?;
    let ids = str_values(&df, "point_id")?;
    let modes = str_values(&df, "mode")?;
    let noise = str_values(&df, "noise")?;
    Ok(ids
        .into_iter()
        .zip(modes)
        .zip(noise)
        .filter(|(_, n)| n.starts_with("flagged"))
        .map(|(k, _)| k)
        .collect())
}

/// Per (point_id, mode): repetition values of each headline metric.
fn samples(r: &Results) -> Result<Samples> {
    let mut sel = vec![col("point_id"), col("mode")];
    sel.extend(HEADLINE.iter().map(|m| col(*m)));
    let df = r
        .points
        .clone()
        .filter(col("skipped").is_null())
        .select(sel)
        .collect()
        .map_err(Error::polars(format!("read {}", r.dir.display())))?;
    let ids = str_values(&df, "point_id")?;
    let modes = str_values(&df, "mode")?;
    let mut out: Samples = BTreeMap::new();
    for m in HEADLINE {
        let v = f64_values(&df, m)?;
        for i in 0..df.height() {
            out.entry((ids[i].clone(), modes[i].clone()))
                .or_default()
                .entry(m.to_string())
                .or_default()
                .push(v[i]);
        }
    }
    Ok(out)
}

fn check_hosts(a: &Results, b: &Results, opts: &CompareOptions) -> Result<Vec<String>> {
    let (ha, hb) = (&a.manifest.host, &b.manifest.host);
    if ha.hostname == hb.hostname && ha.cpu_model == hb.cpu_model {
        return Ok(Vec::new());
    }
    let what = format!(
        "{} ran on host \"{}\" ({}) and {} on host \"{}\" ({})",
        a.dir.display(),
        ha.hostname,
        ha.cpu_model,
        b.dir.display(),
        hb.hostname,
        hb.cpu_model
    );
    if opts.allow_cross_host {
        Ok(vec![format!("comparing across hosts: {what}")])
    } else {
        Err(Error::Incompatible(format!(
            "refusing to compare results from different hosts: {what}; pass --allow-cross-host to compare anyway"
        )))
    }
}

/// B against A from the interval of B/A: better or worse when the whole interval
/// lies on one side of 1. A metric with no better direction is never a change.
fn verdict(ratio: &Estimate, better: Better) -> CompareVerdict {
    let up = match better {
        Better::Higher => CompareVerdict::Better,
        Better::Lower => CompareVerdict::Worse,
        Better::Neither => CompareVerdict::WithinNoise,
    };
    let down = match better {
        Better::Higher => CompareVerdict::Worse,
        Better::Lower => CompareVerdict::Better,
        Better::Neither => CompareVerdict::WithinNoise,
    };
    if ratio.value.is_nan() || ratio.lo.is_nan() {
        CompareVerdict::NotMeasured
    } else if ratio.lo > 1.0 {
        up
    } else if ratio.hi < 1.0 {
        down
    } else {
        CompareVerdict::WithinNoise
    }
}

pub fn compare(a: &Path, b: &Path, opts: &CompareOptions) -> Result<Comparison> {
    let ra = load_results(a)?;
    let rb = if a == b { ra.clone() } else { load_results(b)? };
    if let Some(why) = plan_difference(ra.plan(), rb.plan()) {
        return Err(Error::Incompatible(format!(
            "refusing to compare {} and {}: {why}",
            a.display(),
            b.display()
        )));
    }
    let mut warnings = if opts.sim_vs_native {
        Vec::new()
    } else {
        check_hosts(&ra, &rb, opts)?
    };
    let (sa, sb) = (samples(&ra)?, samples(&rb)?);
    let (na, nb) = (flagged(&ra)?, flagged(&rb)?);
    let (a_label, b_label) = if opts.sim_vs_native {
        ("A (sim)".to_string(), "B (native)".to_string())
    } else {
        ("A".to_string(), "B".to_string())
    };
    let mut rows = Vec::new();
    let mut only_a = 0;
    for ((id, mode), ma) in &sa {
        if opts.sim_vs_native && mode != "sim" {
            continue;
        }
        let bmode = if opts.sim_vs_native {
            "native"
        } else {
            mode.as_str()
        };
        let Some(mb) = sb.get(&(id.clone(), bmode.to_string())) else {
            only_a += 1;
            continue;
        };
        for metric in HEADLINE {
            let better = metrics::get(metric).map_or(Better::Neither, |m| m.better);
            let (xa, xb) = (&ma[*metric], &mb[*metric]);
            let seed = stats::seed_for(&format!("compare/{id}/{mode}/{metric}"));
            let ratio = stats::bootstrap(&[xa.clone(), xb.clone()], seed, |m| vec![m[1] / m[0]])[0];
            let verdict = verdict(&ratio, better);
            let noise = match (
                na.contains(&(id.clone(), mode.clone())),
                nb.contains(&(id.clone(), bmode.to_string())),
            ) {
                (true, true) => "A+B",
                (true, false) => "A",
                (false, true) => "B",
                (false, false) => "",
            };
            rows.push(CompareRow {
                point_id: id.clone(),
                mode: mode.clone(),
                metric: metric.to_string(),
                a: stats::median_ci(xa),
                b: stats::median_ci(xb),
                ratio,
                verdict,
                noise: noise.to_string(),
            });
        }
    }
    let only_b = sb
        .keys()
        .filter(|(id, mode)| {
            let amode = if opts.sim_vs_native {
                if mode != "native" {
                    return false;
                }
                "sim"
            } else {
                mode.as_str()
            };
            !sa.contains_key(&(id.clone(), amode.to_string()))
        })
        .count();
    if only_a > 0 {
        warnings.push(format!("{only_a} point(s) only in {a_label}"));
    }
    if only_b > 0 {
        warnings.push(format!("{only_b} point(s) only in {b_label}"));
    }
    if rows.is_empty() {
        warnings.push("no point is present in both".into());
    }
    let noisy: std::collections::BTreeSet<&str> = rows
        .iter()
        .filter(|r| !r.noise.is_empty())
        .map(|r| r.point_id.as_str())
        .collect();
    if !noisy.is_empty() {
        warnings.push(format!(
            "{} point(s) had a repetition flagged by the noise gate (column `noise`); their verdicts rest on disturbed measurements",
            noisy.len()
        ));
    }
    Ok(Comparison {
        a: a.to_path_buf(),
        b: b.to_path_buf(),
        a_label,
        b_label,
        rows,
        warnings,
    })
}

impl Comparison {
    /// Counts of each verdict.
    pub fn counts(&self) -> BTreeMap<&'static str, usize> {
        let mut m = BTreeMap::new();
        for r in &self.rows {
            *m.entry(r.verdict.as_str()).or_insert(0) += 1;
        }
        m
    }

    fn cells(&self) -> (Vec<&'static str>, Vec<Vec<String>>) {
        let header = vec![
            "point", "mode", "metric", "A", "B", "B/A", "verdict", "noise",
        ];
        let rows = self
            .rows
            .iter()
            .map(|r| {
                vec![
                    r.point_id.clone(),
                    r.mode.clone(),
                    r.metric.clone(),
                    r.a.label(),
                    r.b.label(),
                    r.ratio.label(),
                    r.verdict.as_str().to_string(),
                    r.noise.clone(),
                ]
            })
            .collect();
        (header, rows)
    }

    /// Plain-text table for the terminal.
    pub fn table(&self) -> String {
        let (header, rows) = self.cells();
        let mut w: Vec<usize> = header.iter().map(|h| h.len()).collect();
        for r in &rows {
            for (i, c) in r.iter().enumerate() {
                w[i] = w[i].max(c.chars().count());
            }
        }
        let line = |cells: Vec<&str>| {
            let mut s = String::new();
            for (i, c) in cells.iter().enumerate() {
                s.push_str(c);
                s.push_str(&" ".repeat(w[i] - c.chars().count() + 2));
            }
            s.trim_end().to_string() + "\n"
        };
        let mut out = format!(
            "A = {}\nB = {}\n",
            self.a.display(),
            if self.a == self.b {
                "(same directory)".to_string()
            } else {
                self.b.display().to_string()
            }
        );
        out.push_str(&line(header.clone()));
        out.push_str(&line(
            w.iter()
                .map(|n| "-".repeat(*n))
                .collect::<Vec<_>>()
                .iter()
                .map(String::as_str)
                .collect(),
        ));
        for r in &rows {
            out.push_str(&line(r.iter().map(String::as_str).collect()));
        }
        let counts: Vec<String> = self
            .counts()
            .iter()
            .map(|(k, v)| format!("{v} {k}"))
            .collect();
        out.push_str(&format!("summary: {}\n", counts.join(", ")));
        for w in &self.warnings {
            out.push_str(&format!("warning: {w}\n"));
        }
        out
    }

    /// `comparison.md` and `comparison.html` in `out_dir`.
    pub fn write_report(&self, out_dir: &Path) -> Result<()> {
        create_dir(out_dir)?;
        let (header, rows) = self.cells();
        let mut md = format!(
            "# Comparison\n\n- A: `{}`\n- B: `{}`\n\nB/A is the ratio of medians with a 95 % bootstrap interval; \"better\" and \"worse\" need the whole interval on one side of 1.\n\n",
            self.a.display(),
            self.b.display()
        );
        md.push_str(&format!("| {} |\n", header.join(" | ")));
        md.push_str(&format!("|{}\n", " --- |".repeat(header.len())));
        for r in &rows {
            md.push_str(&format!("| {} |\n", r.join(" | ")));
        }
        for w in &self.warnings {
            md.push_str(&format!("\n> warning: {w}\n"));
        }
        write_atomic(&out_dir.join("comparison.md"), md.as_bytes())?;

        let esc = crate::report::html_escape;
        let mut html = String::from("<!doctype html><html><head><meta charset=\"utf-8\"><title>locklab comparison</title><style>");
        html.push_str(crate::report::CSS);
        html.push_str("</style></head><body><h1>Comparison</h1>");
        html.push_str(&format!(
            "<p>A: <code>{}</code><br>B: <code>{}</code></p><table><tr>",
            esc(&self.a.display().to_string()),
            esc(&self.b.display().to_string())
        ));
        for h in &header {
            html.push_str(&format!("<th>{h}</th>"));
        }
        html.push_str("</tr>");
        for (r, row) in self.rows.iter().zip(&rows) {
            let class = match r.verdict {
                CompareVerdict::Better => "pass",
                CompareVerdict::Worse => "fail",
                CompareVerdict::WithinNoise => "neutral",
                CompareVerdict::NotMeasured => "error",
            };
            html.push_str("<tr>");
            for (i, c) in row.iter().enumerate() {
                if i == row.len() - 2 {
                    html.push_str(&format!("<td class=\"verdict {class}\">{}</td>", esc(c)));
                } else {
                    html.push_str(&format!("<td>{}</td>", esc(c)));
                }
            }
            html.push_str("</tr>");
        }
        html.push_str("</table>");
        for w in &self.warnings {
            html.push_str(&format!("<p class=\"warning\">warning: {}</p>", esc(w)));
        }
        html.push_str("</body></html>\n");
        write_atomic(&out_dir.join("comparison.html"), html.as_bytes())
    }
}

impl std::fmt::Display for Comparison {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.table())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use locklab_model::metrics::Table;

    #[test]
    fn headline_metrics_are_points_metrics_with_a_direction() {
        for m in HEADLINE {
            let metric = metrics::get(m).unwrap_or_else(|| panic!("{m} is not a metric"));
            assert!(metric.in_table(Table::Points), "{m}");
            assert_ne!(metric.better, Better::Neither, "{m}");
        }
        let up = Estimate {
            value: 1.2,
            lo: 1.1,
            hi: 1.3,
            n: 5,
        };
        assert_eq!(verdict(&up, Better::Higher), CompareVerdict::Better);
        assert_eq!(verdict(&up, Better::Lower), CompareVerdict::Worse);
        assert_eq!(verdict(&up, Better::Neither), CompareVerdict::WithinNoise);
    }
}
