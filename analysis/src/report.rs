//! The report of a results directory: `report/index.html` (self-contained: inline
//! CSS and SVG, no network) and `report/report.md` (linking the PNG and SVG files
//! beside it), plus `claims.json`.
//!
//! Order: the claims table (claim, source, where, expected, measured, verdict),
//! the figures, the node-to-node hand-off tables, the manifest summary, and the
//! warnings (noise-gate flags, skipped points, claims that did not pass cleanly).

use crate::claims::{self, ClaimResult, Verdict};
use crate::error::Result;
use crate::pipeline::{self, estimates, f64_values, str_values};
use crate::plots::{self, Figure};
use crate::store::{load_results, Results};
use crate::util::{self, fmt_num, write_atomic};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

pub const REPORT_DIR: &str = "report";

/// Styles shared by the report and the comparison page.
pub const CSS: &str = "body{font-family:-apple-system,'Segoe UI',Helvetica,Arial,sans-serif;max-width:1320px;margin:2em auto;padding:0 1em;color:#222;line-height:1.45}
h1{font-size:1.7em}h2{border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:2em}h3{font-size:1em;margin:1.2em 0 .3em}
table{border-collapse:collapse;margin:1em 0;font-size:.92em}
th,td{border:1px solid #ccc;padding:.3em .6em;text-align:left;vertical-align:top}
th{background:#f4f4f4}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.verdict{font-weight:bold;text-transform:uppercase;font-size:.85em;white-space:nowrap}
.pass{background:#d9f2e0;color:#11622b}.fail{background:#f9d6d5;color:#8a1612}
.inconclusive{background:#fff0c2;color:#7a5600}.error{background:#f3d6f0;color:#6b1663}
.skipped,.neutral{background:#eceff3;color:#444}.report{background:#dde9f7;color:#1d4f85}
.detail{color:#555;font-size:.88em}
table.claims{width:100%;table-layout:fixed}
table.claims col.c-claim{width:40%}table.claims col.c-source{width:16%}table.claims col.c-where{width:12%}
table.claims col.c-exp{width:11%}table.claims col.c-meas{width:11%}table.claims col.c-verdict{width:10%}
table.claims td{overflow-wrap:break-word}table.claims td.verdict{white-space:normal}
table.claims tr.group td{background:#f7f7f9;border-left:3px solid #99a;font-size:.9em}
table.claims td.where code{font-size:.8em;white-space:nowrap}
table.claims .id{font-weight:600}
table.claims details summary{cursor:pointer;color:#555;font-size:.85em}
figure{margin:1.5em 0}figure svg{max-width:100%;height:auto;border:1px solid #eee}
figcaption{color:#555;font-size:.9em}
.tables{display:flex;flex-wrap:wrap;gap:0 2em}
.tables section{flex:0 1 auto}
table.handoff td.local{background:#f2f7fc}
.warning{color:#7a5600}
code{background:#f4f4f4;padding:0 .2em}";

pub fn html_escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            _ => o.push(c),
        }
    }
    o
}

fn md_escape(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

#[derive(Debug, Clone)]
pub struct ReportSummary {
    pub index_html: PathBuf,
    pub report_md: PathBuf,
    pub claims_json: PathBuf,
    pub figures: Vec<PathBuf>,
    pub claims: Vec<ClaimResult>,
    pub warnings: Vec<String>,
}

/// A node-to-node table of one point × mode.
struct HandoffTable {
    title: String,
    nodes: Vec<u32>,
    /// (from, to) → (p99, max, count)
    cells: BTreeMap<(u32, u32), (f64, f64, f64)>,
    /// Grants to the thread that held the lock last (median): no hand-offs, so in no
    /// cell. NaN in results written before they were counted apart.
    reacquisitions: f64,
}

impl HandoffTable {
    fn reacquisitions_note(&self) -> Option<String> {
        (self.reacquisitions > 0.0).then(|| {
            format!(
                "Not in the table: {} re-acquisition{} (the last holder taking the lock again).",
                fmt_num(self.reacquisitions),
                if self.reacquisitions == 1.0 { "" } else { "s" }
            )
        })
    }
}

/// Tables for the points with the most threads of each mode (where waiting across
/// nodes matters), every lock and other axis value; at most `MAX_TABLES`.
const MAX_TABLES: usize = 24;

fn handoff_tables(results: &Results) -> Result<(Vec<HandoffTable>, usize)> {
    let df = pipeline::handoff_summary(results)?;
    let plan = results.plan();
    let pts = f64_values(&df, "point")?;
    let modes = str_values(&df, "mode")?;
    let from = f64_values(&df, "from_node")?;
    let to = f64_values(&df, "to_node")?;
    let p99 = estimates(&df, "wait_p99_ns")?;
    let max = estimates(&df, "wait_max_ns")?;
    let count = estimates(&df, "count")?;
    let summary = pipeline::point_summary(results)?;
    let reacquisitions: BTreeMap<(String, u32), f64> = match f64_values(&summary, "reacquisitions")
    {
        Ok(v) => f64_values(&summary, "point")?
            .into_iter()
            .zip(str_values(&summary, "mode")?)
            .zip(v)
            .map(|((p, m), r)| ((m, p as u32), r))
            .collect(),
        Err(_) => BTreeMap::new(),
    };
    let mut by: BTreeMap<(String, u32), Vec<usize>> = BTreeMap::new();
    for i in 0..df.height() {
        by.entry((modes[i].clone(), pts[i] as u32))
            .or_default()
            .push(i);
    }
    let mut max_threads: BTreeMap<&str, u32> = BTreeMap::new();
    for (m, p) in by.keys() {
        let t = plan.points.get(*p as usize).map(|q| q.threads).unwrap_or(0);
        let e = max_threads.entry(m.as_str()).or_insert(0);
        *e = (*e).max(t);
    }
    let mut tables = Vec::new();
    let mut total = 0;
    // Simulated points first: they are the ones with many nodes.
    let mut order: Vec<(&(String, u32), &Vec<usize>)> = by.iter().collect();
    order.sort_by_key(|((m, p), _)| (m != "sim", m.clone(), *p));
    for ((mode, p), idx) in order {
        let Some(point) = plan.points.get(*p as usize) else {
            continue;
        };
        let nodes: BTreeSet<u32> = idx
            .iter()
            .flat_map(|&i| [from[i] as u32, to[i] as u32])
            .collect();
        if nodes.len() < 2 || Some(&point.threads) != max_threads.get(mode.as_str()) {
            continue;
        }
        total += 1;
        if tables.len() >= MAX_TABLES {
            continue;
        }
        let cells = idx
            .iter()
            .map(|&i| {
                (
                    (from[i] as u32, to[i] as u32),
                    (p99[i].value, max[i].value, count[i].value),
                )
            })
            .collect();
        let in_mode: Vec<&locklab_model::plan::Point> = by
            .keys()
            .filter(|(m, _)| m == mode)
            .filter_map(|(_, q)| plan.points.get(*q as usize))
            .collect();
        tables.push(HandoffTable {
            title: format!("{} ({mode})", plots::point_label(point, &in_mode)),
            nodes: nodes.into_iter().collect(),
            cells,
            reacquisitions: reacquisitions
                .get(&(mode.clone(), *p))
                .copied()
                .unwrap_or(f64::NAN),
        });
    }
    Ok((tables, total))
}

fn verdict_cell(c: &ClaimResult) -> String {
    c.verdict_label()
}

fn claim_name(c: &ClaimResult) -> String {
    match &c.mode {
        Some(m) => format!("{} {} ({m})", c.id, c.text),
        None => format!("{} {}", c.id, c.text),
    }
}

fn manifest_rows(r: &Results) -> Vec<(String, String)> {
    let m = &r.manifest;
    let h = &m.host;
    let opt = |o: &Option<String>| o.clone().unwrap_or_else(|| "unknown".into());
    let mut rows = vec![
        ("experiment".into(), m.plan.experiment.clone()),
        ("status".into(), m.status.clone()),
        (
            "started / finished (UTC)".into(),
            format!("{} / {}", m.started_utc, opt(&m.finished_utc)),
        ),
        ("command".into(), m.command_line.join(" ")),
        (
            "modes".into(),
            m.modes
                .iter()
                .map(|x| x.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        ),
        ("quick".into(), m.quick.to_string()),
        ("master seed".into(), m.master_seed.to_string()),
        (
            "repetitions × duration".into(),
            format!(
                "{} × {} (warm-up {})",
                m.plan.run.repetitions,
                locklab_model::units::duration_label(m.plan.run.duration_ns),
                locklab_model::units::duration_label(m.plan.run.warmup_ns)
            ),
        ),
        ("points".into(), m.plan.points.len().to_string()),
        (
            "locklab".into(),
            format!(
                "{} (commit {}{}), {} build, {}",
                m.locklab_version,
                opt(&m.git_commit),
                if m.git_dirty == Some(true) {
                    ", dirty"
                } else {
                    ""
                },
                m.build_profile,
                opt(&m.rustc)
            ),
        ),
        (
            "host".into(),
            format!(
                "{}: {}, {} CPUs, kernel {}",
                h.hostname,
                h.cpu(),
                h.online_cpus,
                h.kernel
            ),
        ),
        (
            "governor / turbo".into(),
            format!("{} / {}", opt(&h.governor), opt(&h.turbo)),
        ),
        (
            "isolcpus / nohz_full / ASLR".into(),
            format!(
                "{} / {} / {}",
                opt(&h.isolcpus),
                opt(&h.nohz_full),
                opt(&h.aslr)
            ),
        ),
        (
            "virtualisation / steal / load".into(),
            format!(
                "{} / {} / {}",
                opt(&h.virtualization),
                h.steal_frac
                    .map(|s| format!("{:.1}%", s * 100.0))
                    .unwrap_or_else(|| "unknown".into()),
                h.loadavg
                    .map(|l| format!("{:.2} {:.2} {:.2}", l[0], l[1], l[2]))
                    .unwrap_or_else(|| "unknown".into())
            ),
        ),
    ];
    if !m.overrides.is_empty() {
        rows.push((
            "overrides".into(),
            m.overrides
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(", "),
        ));
    }
    if let Some((i, n)) = m.shard {
        rows.push(("shard".into(), format!("{i}/{n}")));
    }
    for s in &m.sources {
        rows.push(("source".into(), format!("{} (sha256 {})", s.path, s.sha256)));
    }
    rows
}

fn warnings(r: &Results, claims: &[ClaimResult], extra: &[String]) -> Result<Vec<String>> {
    let mut w = Vec::new();
    if r.manifest.status != "complete" {
        w.push(format!("run status: {}", r.manifest.status));
    }
    for (id, mode, rep, noise) in pipeline::noise_flags(r)? {
        w.push(format!("noise gate: {id} [{mode}] rep {rep}: {noise}"));
    }
    w.extend(pipeline::placement_note(r)?);
    for (id, mode, metrics) in pipeline::lower_bound_maxima(r)? {
        w.push(format!(
            "lower bound: {id} [{mode}]: {} came from a wait still running at the end of the window (counted up to the end): the true value is at least this",
            metrics.join(" and ")
        ));
    }
    let summary = pipeline::point_summary(r)?;
    let ids = str_values(&summary, "point_id")?;
    let modes = str_values(&summary, "mode")?;
    let skipped = str_values(&summary, "skipped")?;
    let n = f64_values(&summary, "n_reps")?;
    for i in 0..summary.height() {
        if n[i] == 0.0 {
            w.push(format!(
                "skipped: {} [{}]: {}",
                ids[i], modes[i], skipped[i]
            ));
        } else if !skipped[i].is_empty() {
            w.push(format!(
                "partly skipped: {} [{}]: {}",
                ids[i], modes[i], skipped[i]
            ));
        }
    }
    for c in claims {
        if matches!(
            c.verdict,
            Verdict::Inconclusive | Verdict::Error | Verdict::Skipped
        ) {
            w.push(format!(
                "claim {} ({}) is {}: {}",
                c.id,
                c.location(),
                c.verdict,
                c.detail
            ));
        }
    }
    for c in claims {
        if let Some(note) = c.noise_note() {
            w.push(format!("claim {} ({}) {note}", c.id, c.location()));
        }
    }
    if r.manifest.plan.run.repetitions <= 1 && claims.iter().any(|c| c.repetitions == 1) {
        w.push(one_seed_note(r.manifest.quick));
    }
    w.extend(extra.iter().cloned());
    Ok(w)
}

/// The one note of a run with one repetition per point: intervals marked `n = 1` have
/// zero width, and every verdict rests on one seed.
pub fn one_seed_note(quick: bool) -> String {
    format!(
        "{}one repetition per point: every interval marked n = 1 has zero width, and the verdicts rest on one seed per point; run more repetitions to see the spread",
        if quick { "a --quick run, " } else { "" }
    )
}

/// Build `report/index.html`, `report/report.md`, every figure, and `claims.json`.
pub fn build_report(dir: &Path) -> Result<ReportSummary> {
    let results = load_results(dir)?;
    let claims = claims::evaluate(results.plan(), &results);
    build_report_with(&results, claims)
}

/// Like [`build_report`], for results already loaded and claims already evaluated
/// (a run that has just printed its claims table need not evaluate them twice).
pub fn build_report_with(results: &Results, claims: Vec<ClaimResult>) -> Result<ReportSummary> {
    let dir = results.dir.as_path();
    let results = results.clone();
    claims::write_claims_json(dir, &claims)?;
    let out = dir.join(REPORT_DIR);
    util::create_dir(&out)?;
    let rendered = plots::render_all(&results, &out)?;
    let (tables, total_tables) = handoff_tables(&results)?;
    let mut extra = rendered.warnings.clone();
    if total_tables > tables.len() {
        extra.push(format!(
            "{} node-to-node tables not shown; handoffs.parquet holds them all",
            total_tables - tables.len()
        ));
    }
    let warns = warnings(&results, &claims, &extra)?;
    let html = html_report(&results, &claims, &rendered.figures, &tables, &warns);
    let md = md_report(&results, &claims, &rendered.figures, &tables, &warns);
    let index_html = out.join("index.html");
    let report_md = out.join("report.md");
    write_atomic(&index_html, html.as_bytes())?;
    write_atomic(&report_md, md.as_bytes())?;
    Ok(ReportSummary {
        index_html,
        report_md,
        claims_json: dir.join("claims.json"),
        figures: rendered
            .figures
            .iter()
            .map(|f| f.png_path.clone())
            .collect(),
        claims,
        warnings: warns,
    })
}

fn counts(claims: &[ClaimResult]) -> String {
    let mut m: BTreeMap<&str, usize> = BTreeMap::new();
    for c in claims {
        *m.entry(c.verdict.as_str()).or_insert(0) += 1;
    }
    m.iter()
        .map(|(k, v)| format!("{v} {k}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn html_report(
    r: &Results,
    claims: &[ClaimResult],
    figs: &[Figure],
    tables: &[HandoffTable],
    warns: &[String],
) -> String {
    let e = html_escape;
    let plan = r.plan();
    let mut h = String::new();
    h.push_str("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    h.push_str(&format!(
        "<title>locklab: {}</title><style>{CSS}</style></head><body>\n",
        e(&plan.experiment)
    ));
    h.push_str(&format!("<h1>{}</h1>\n", e(&plan.experiment)));
    if let Some(d) = &plan.description {
        h.push_str(&format!("<p>{}</p>\n", e(d)));
    }
    h.push_str("<h2 id=\"claims\">Claims</h2>\n");
    if claims.is_empty() {
        h.push_str("<p>This experiment states no claims.</p>\n");
    } else {
        h.push_str(&format!(
            "<p>{}. Verdicts are judged on 95&nbsp;% intervals: a claim whose interval straddles its bound is inconclusive.</p>\n",
            e(&counts(claims))
        ));
        h.push_str("<table class=\"claims\"><colgroup><col class=\"c-claim\"><col class=\"c-source\"><col class=\"c-where\"><col class=\"c-exp\"><col class=\"c-meas\"><col class=\"c-verdict\"></colgroup>\n<tr><th>claim</th><th>source</th><th>where</th><th>expected</th><th>measured</th><th>verdict</th></tr>\n");
        let mut group: Option<String> = None;
        for c in claims {
            // Claims of one `expect [...] { }` block share their selector: show it once,
            // as a header row, and the rest of each claim under it.
            let (sel, rest) = split_selector(&c.text);
            let sel = sel.map(str::to_string);
            if sel.is_some() && sel != group {
                h.push_str(&format!(
                    "<tr class=\"group\"><td colspan=\"6\">for <code>{}</code></td></tr>\n",
                    e(sel.as_deref().unwrap_or(""))
                ));
            }
            group = sel.clone();
            let text = if sel.is_some() { rest } else { c.text.as_str() };
            let mode = c
                .mode
                .as_ref()
                .map(|m| format!(" ({m})"))
                .unwrap_or_default();
            // A passing claim's detail is its arithmetic: folded away. Anything else
            // says what went wrong: shown.
            let detail = if c.verdict == Verdict::Pass {
                format!(
                    "<details><summary>how</summary><div class=\"detail\">{}</div></details>",
                    e(&c.detail)
                )
            } else {
                format!("<div class=\"detail\">{}</div>", e(&c.detail))
            };
            h.push_str(&format!(
                "<tr><td><span class=\"id\">{}</span> {}{}{}</td><td>{}</td><td class=\"where\"><code title=\"{}\">{}</code></td><td>{}</td><td class=\"num\">{}</td><td class=\"verdict {}\">{}</td></tr>\n",
                e(&c.id),
                e(text),
                e(&mode),
                detail,
                e(c.source.as_deref().unwrap_or("")),
                e(&c.location()),
                e(&short_location(c)),
                e(&c.expectation),
                measured_html(&c.measured_label()),
                c.verdict.as_str(),
                e(&verdict_cell(c))
            ));
        }
        h.push_str("</table>\n");
    }
    h.push_str("<h2 id=\"figures\">Figures</h2>\n");
    if figs.is_empty() {
        h.push_str("<p>No figure applies to these results.</p>\n");
    }
    for f in figs {
        let png = file_name(&f.png_path);
        let svg = file_name(&f.svg_path);
        h.push_str(&format!(
            "<figure id=\"{}\">{}<figcaption>{} <a href=\"{}\">PNG</a> · <a href=\"{}\">SVG</a></figcaption></figure>\n",
            e(&f.name),
            strip_xml_header(&f.svg),
            e(&f.caption),
            e(&png),
            e(&svg)
        ));
    }
    h.push_str("<h2 id=\"handoffs\">Node-to-node hand-offs</h2>\n");
    if tables.is_empty() {
        h.push_str("<p>No point has hand-offs between two or more nodes.</p>\n");
    } else {
        h.push_str("<p>Rows: previous holder's node; columns: next holder's node (shaded: the same node). Each cell: the next holder's wait p99 / max, and the hand-off count; medians over repetitions.</p>\n");
    }
    h.push_str("<div class=\"tables\">\n");
    for t in tables {
        h.push_str(&format!(
            "<section><h3>{}</h3><table class=\"handoff\"><tr><th>from \\ to</th>",
            e(&t.title)
        ));
        for n in &t.nodes {
            h.push_str(&format!("<th>node {n}</th>"));
        }
        h.push_str("</tr>\n");
        for a in &t.nodes {
            h.push_str(&format!("<tr><th>node {a}</th>"));
            for b in &t.nodes {
                let local = if a == b { " local" } else { "" };
                match t.cells.get(&(*a, *b)) {
                    Some((p99, max, n)) => h.push_str(&format!(
                        "<td class=\"num{local}\">{} / {}<br><span class=\"detail\">{} hand-offs</span></td>",
                        fmt_wait(*p99),
                        fmt_wait(*max),
                        fmt_num(*n)
                    )),
                    None => h.push_str("<td>—</td>"),
                }
            }
            h.push_str("</tr>\n");
        }
        h.push_str("</table>");
        if let Some(note) = t.reacquisitions_note() {
            h.push_str(&format!("<p class=\"detail\">{}</p>", e(&note)));
        }
        h.push_str("</section>\n");
    }
    h.push_str("</div>\n");
    h.push_str("<h2 id=\"manifest\">Manifest</h2>\n<table>");
    for (k, v) in manifest_rows(r) {
        h.push_str(&format!("<tr><th>{}</th><td>{}</td></tr>", e(&k), e(&v)));
    }
    h.push_str("</table>\n<h2 id=\"warnings\">Warnings</h2>\n");
    if warns.is_empty() {
        h.push_str("<p>None.</p>\n");
    } else {
        h.push_str("<ul>");
        for w in warns {
            h.push_str(&format!("<li class=\"warning\">{}</li>", e(w)));
        }
        h.push_str("</ul>\n");
    }
    h.push_str("</body></html>\n");
    h
}

/// `cna_threshold.lab:63`: the file name and line (the full path is the cell's
/// tooltip and is in the Markdown report).
fn short_location(c: &ClaimResult) -> String {
    let file = c.file.rsplit('/').next().unwrap_or(&c.file);
    format!("{file}:{}", c.line)
}

/// A wait in ns as a duration (`10.1ms`); `n/a` when not measured.
fn fmt_wait(ns: f64) -> String {
    if !ns.is_finite() {
        return fmt_num(ns);
    }
    if ns < 1.0 {
        return format!("{}ns", fmt_num(ns));
    }
    locklab_model::units::duration(ns)
}

/// `[mode = sim, lock = cna15] speedup over stock in 1.7..2.7` → the selector of its
/// `expect [...]` block and the rest; no selector: `None`.
fn split_selector(text: &str) -> (Option<&str>, &str) {
    if !text.starts_with('[') {
        return (None, text);
    }
    let mut depth = 0usize;
    for (i, ch) in text.char_indices() {
        match ch {
            '[' => depth += 1,
            ']' => {
                depth -= 1;
                if depth == 0 {
                    let rest = text[i + 1..].trim_start();
                    return if rest.is_empty() {
                        (None, text)
                    } else {
                        (Some(&text[..=i]), rest)
                    };
                }
            }
            _ => {}
        }
    }
    (None, text)
}

/// `1.937 [1.853, 1.992]`: the value, and its interval on a second, quieter line.
fn measured_html(label: &str) -> String {
    match label.split_once(" [") {
        Some((v, ci)) => format!(
            "{}<br><span class=\"detail\">[{}</span>",
            html_escape(v),
            html_escape(ci)
        ),
        None => html_escape(label),
    }
}

/// Drop an `<?xml ...?>` prolog so the SVG can sit inside HTML.
fn strip_xml_header(svg: &str) -> &str {
    match svg.find("<svg") {
        Some(i) => &svg[i..],
        None => svg,
    }
}

fn md_report(
    r: &Results,
    claims: &[ClaimResult],
    figs: &[Figure],
    tables: &[HandoffTable],
    warns: &[String],
) -> String {
    let plan = r.plan();
    let mut m = format!("# {}\n\n", plan.experiment);
    if let Some(d) = &plan.description {
        m.push_str(&format!("{d}\n\n"));
    }
    m.push_str("## Claims\n\n");
    if claims.is_empty() {
        m.push_str("This experiment states no claims.\n\n");
    } else {
        m.push_str(&format!(
            "{}. Verdicts are judged on 95 % intervals.\n\n",
            counts(claims)
        ));
        m.push_str("| claim | source | where | expected | measured | verdict |\n| --- | --- | --- | --- | --- | --- |\n");
        for c in claims {
            let v = match c.verdict {
                Verdict::Pass => format!("✅ {}", verdict_cell(c)),
                Verdict::Fail => format!("❌ **{}**", verdict_cell(c)),
                Verdict::Inconclusive => format!("⚠️ {}", verdict_cell(c)),
                Verdict::Error => format!("⛔ **{}**", verdict_cell(c)),
                _ => verdict_cell(c),
            };
            m.push_str(&format!(
                "| {} | {} | `{}` | {} | {} | {} |\n",
                md_escape(&claim_name(c)),
                md_escape(c.source.as_deref().unwrap_or("")),
                c.location(),
                md_escape(&c.expectation),
                md_escape(&c.measured_label()),
                v
            ));
        }
        m.push('\n');
        for c in claims {
            m.push_str(&format!("- **{}**: {}\n", c.id, md_escape(&c.detail)));
        }
        m.push('\n');
    }
    m.push_str("## Figures\n\n");
    for f in figs {
        let png = file_name(&f.png_path);
        let svg = file_name(&f.svg_path);
        m.push_str(&format!(
            "### {}\n\n![{}]({png})\n\n{} ([SVG]({svg}))\n\n",
            f.title, f.title, f.caption
        ));
    }
    m.push_str("## Node-to-node hand-offs\n\n");
    if tables.is_empty() {
        m.push_str("No point has hand-offs between two or more nodes.\n\n");
    } else {
        m.push_str("Rows: previous holder's node; columns: next holder's node. Each cell: wait p99 / max and the hand-off count.\n\n");
    }
    for t in tables {
        m.push_str(&format!("### {}\n\n| from \\ to |", t.title));
        for n in &t.nodes {
            m.push_str(&format!(" node {n} |"));
        }
        m.push_str(&format!("\n| --- |{}\n", " --- |".repeat(t.nodes.len())));
        for a in &t.nodes {
            m.push_str(&format!("| node {a} |"));
            for b in &t.nodes {
                match t.cells.get(&(*a, *b)) {
                    Some((p99, max, n)) => m.push_str(&format!(
                        " {} / {} ({}) |",
                        fmt_wait(*p99),
                        fmt_wait(*max),
                        fmt_num(*n)
                    )),
                    None => m.push_str(" — |"),
                }
            }
            m.push('\n');
        }
        m.push('\n');
        if let Some(note) = t.reacquisitions_note() {
            m.push_str(&format!("{note}\n\n"));
        }
    }
    m.push_str("## Manifest\n\n| | |\n| --- | --- |\n");
    for (k, v) in manifest_rows(r) {
        m.push_str(&format!("| {} | {} |\n", md_escape(&k), md_escape(&v)));
    }
    m.push_str("\n## Warnings\n\n");
    if warns.is_empty() {
        m.push_str("None.\n");
    }
    for w in warns {
        m.push_str(&format!("- {}\n", md_escape(w)));
    }
    m
}

/// The last component of a figure's path, for links relative to the report.
fn file_name(path: &std::path::Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claims_of_one_block_share_their_selector() {
        assert_eq!(
            split_selector("[mode = sim, lock = cna15] speedup[threshold = 1ms] over stock >= 0.9"),
            (
                Some("[mode = sim, lock = cna15]"),
                "speedup[threshold = 1ms] over stock >= 0.9"
            )
        );
        assert_eq!(
            split_selector("speedup[threads = 1] over stock in 0.95..1.05"),
            (None, "speedup[threads = 1] over stock in 0.95..1.05")
        );
        assert_eq!(
            measured_html("1.937 [1.853, 1.992]"),
            "1.937<br><span class=\"detail\">[1.853, 1.992]</span>"
        );
        assert_eq!(fmt_wait(20_120_000.0), "20.1ms");
        assert_eq!(fmt_wait(f64::NAN), "n/a");
    }
}
