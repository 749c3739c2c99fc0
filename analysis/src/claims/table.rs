//! The claims as a plain-text table for the terminal.
//!
//! The table fits a given width. Each row names its claim by id (ids are unique and
//! never shortened), and the claims' full texts and places follow the table once,
//! wrapped: two claims never read alike because their texts were cut at the same
//! place.

use super::{ClaimResult, Verdict};

/// `s` in at most `n` characters, cut at the end with `…`.
fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

/// What a claim that does not gate would have been, from the outcome its detail
/// records (`not gating; would be fail: ...`, written by `claims::result`).
fn would_be(c: &ClaimResult) -> Option<Verdict> {
    let rest = c.detail.strip_prefix("not gating; would be ")?;
    let word = rest.split(':').next()?.trim();
    [
        Verdict::Pass,
        Verdict::Fail,
        Verdict::Inconclusive,
        Verdict::Skipped,
        Verdict::Error,
    ]
    .into_iter()
    .find(|v| v.as_str() == word)
}

/// The verdict cell: a report-only claim says what it would have been, and a failed
/// one what was measured against what was expected.
fn verdict_cell(c: &ClaimResult) -> String {
    let mut cell = verdict_text(c);
    if !c.noisy_points.is_empty() {
        cell.push_str(" (noisy)");
    }
    cell
}

fn verdict_text(c: &ClaimResult) -> String {
    if c.verdict != Verdict::Report {
        return c.verdict.as_str().to_string();
    }
    match would_be(c) {
        Some(Verdict::Fail) => format!(
            "report (would fail: {}, expected {})",
            c.measured_label(),
            c.expectation
        ),
        Some(Verdict::Pass) => "report (would pass)".to_string(),
        Some(v) => format!("report (would be {})", v.as_str()),
        None => "report (not gating)".to_string(),
    }
}

/// `text` wrapped at word boundaries to lines of at most `width` characters (a
/// longer word has a line of its own).
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    lines.push(line);
    lines
}

/// Plain-text table for the terminal, at most `width` characters wide: claim id
/// (and mode), verdict, measured, expected; then every claim's full text and
/// file:line, once; then the detail of every claim that did not pass. No colour:
/// the CLI decides about terminals.
pub fn claims_table(claims: &[ClaimResult], width: usize) -> String {
    if claims.is_empty() {
        return "no claims\n".into();
    }
    const COLS: usize = 4;
    let header = ["claim", "verdict", "measured", "expected"];
    let rows: Vec<[String; COLS]> = claims
        .iter()
        .map(|c| {
            let mut name = c.id.clone();
            if let Some(m) = &c.mode {
                name.push_str(&format!(" ({m})"));
            }
            [
                name,
                verdict_cell(c),
                c.measured_label(),
                c.expectation.clone(),
            ]
        })
        .collect();
    let mut w: Vec<usize> = (0..COLS)
        .map(|i| {
            rows.iter()
                .map(|r| r[i].chars().count())
                .chain([header[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    // Too wide: shorten the columns that can be, down to a floor each (a report-only
    // claim's verdict keeps "report (would fail)", its detail follows the table),
    // then to a narrower one; the claim column is never shortened.
    let total = |w: &[usize]| w.iter().sum::<usize>() + 2 * (COLS - 1);
    for (col, floor) in [(1, 25), (3, 12), (2, 12), (3, 6), (2, 6), (1, 8)] {
        let over = total(&w).saturating_sub(width);
        if over == 0 {
            break;
        }
        w[col] = w[col].saturating_sub(over).max(floor.min(w[col]));
    }
    let line = |cells: [&str; COLS]| {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            let c = truncate(c, w[i]);
            s.push_str(&c);
            if i < COLS - 1 {
                s.push_str(&" ".repeat(w[i] - c.chars().count() + 2));
            }
        }
        s.trim_end().to_string() + "\n"
    };
    let mut out = line(header);
    let rules: Vec<String> = w.iter().map(|n| "-".repeat(*n)).collect();
    out.push_str(&line([&rules[0], &rules[1], &rules[2], &rules[3]]));
    for r in &rows {
        out.push_str(&line([&r[0], &r[1], &r[2], &r[3]]));
    }
    // Each claim's text once (a claim evaluated per mode has several rows).
    out.push('\n');
    let id_w = claims
        .iter()
        .map(|c| c.id.chars().count())
        .max()
        .unwrap_or(0);
    let mut seen = std::collections::BTreeSet::new();
    for c in claims.iter().filter(|c| seen.insert(&c.id)) {
        let text = format!("{} ({})", c.text, c.location());
        let lines = wrap(&text, width.saturating_sub(id_w + 2).max(20));
        for (i, l) in lines.iter().enumerate() {
            let id = if i == 0 { c.id.as_str() } else { "" };
            out.push_str(&format!("{id:id_w$}  {l}\n"));
        }
    }
    for c in claims.iter().filter(|c| {
        matches!(
            c.verdict,
            Verdict::Fail | Verdict::Error | Verdict::Inconclusive | Verdict::Skipped
        ) || would_be(c) == Some(Verdict::Fail)
    }) {
        out.push_str(&format!("{} {}: {}\n", c.id, c.verdict, c.detail));
    }
    for c in claims {
        if let Some(note) = c.noise_note() {
            out.push_str(&format!("{} (noisy): {note}\n", c.id));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim(id: &str, text: &str, verdict: Verdict, detail: &str) -> ClaimResult {
        ClaimResult {
            id: id.into(),
            text: text.into(),
            source: None,
            file: "/a/long/path/to/experiments/cna_threshold.lab".into(),
            line: 76,
            gating: verdict != Verdict::Report,
            mode: Some("sim".into()),
            expectation: "≥ 400us".into(),
            measured: None,
            measured_text: "55.9us".into(),
            verdict,
            detail: detail.into(),
            terms: Vec::new(),
            repetitions: 5,
            noisy_points: Vec::new(),
            lower_bounds: Vec::new(),
        }
    }

    #[test]
    fn the_table_fits_and_claims_alike_up_to_a_cut_stay_apart() {
        let long =
            "speedup[threshold = 100us, workload = lock2, placement = will_it_scale] over stock";
        let claims = vec![
            claim("c1", &format!("{long} < 1.5"), Verdict::Pass, ""),
            claim("c2", &format!("{long} < 1.6"), Verdict::Pass, ""),
            claim(
                "r1",
                "wait_p99_ns[lock = cna] >= 400us",
                Verdict::Report,
                "not gating; would be fail: 55.9us is below the band",
            ),
            claim(
                "r2",
                "wait_p99_ns[lock = mcs] >= 1ns",
                Verdict::Report,
                "not gating; would be pass: inside",
            ),
        ];
        for width in [60, 100, 200] {
            let t = claims_table(&claims, width);
            let table_rows: Vec<&str> = t.lines().take_while(|l| !l.is_empty()).collect();
            for l in &table_rows {
                assert!(l.chars().count() <= width, "{width}: {l:?}\n{t}");
            }
            // Every full text is there once, whatever the width.
            assert!(t.contains("< 1.5") && t.contains("< 1.6"), "{t}");
            let rows: std::collections::BTreeSet<&str> = table_rows.iter().copied().collect();
            assert_eq!(rows.len(), table_rows.len(), "two rows alike:\n{t}");
        }
        let t = claims_table(&claims, 200);
        assert!(
            t.contains("report (would fail: 55.9us, expected ≥ 400us)"),
            "{t}"
        );
        assert!(t.contains("report (would pass)"), "{t}");
    }
}
