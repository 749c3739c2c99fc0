//! The claims as a plain-text table for the terminal.

use super::{ClaimResult, Verdict};

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

/// Plain-text table for the terminal: claim, file:line, expectation, measured,
/// verdict; then the detail of every claim that did not pass. No colour: the CLI
/// decides about terminals.
pub fn claims_table(claims: &[ClaimResult]) -> String {
    if claims.is_empty() {
        return "no claims\n".into();
    }
    let header = ["claim", "where", "expected", "measured", "verdict"];
    let rows: Vec<[String; 5]> = claims
        .iter()
        .map(|c| {
            let mut name = format!("{} {}", c.id, truncate(&c.text, 48));
            if let Some(m) = &c.mode {
                name.push_str(&format!(" ({m})"));
            }
            let verdict = c.verdict_label();
            [
                name,
                c.location(),
                truncate(&c.expectation, 40),
                c.measured_label(),
                verdict,
            ]
        })
        .collect();
    let w: Vec<usize> = (0..5)
        .map(|i| {
            rows.iter()
                .map(|r| r[i].chars().count())
                .chain([header[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: [&str; 5]| {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            s.push_str(c);
            if i < 4 {
                s.push_str(&" ".repeat(w[i] - c.chars().count() + 2));
            }
        }
        s.trim_end().to_string() + "\n"
    };
    let mut out = line(header);
    let rules: Vec<String> = w.iter().map(|n| "-".repeat(*n)).collect();
    out.push_str(&line([
        &rules[0], &rules[1], &rules[2], &rules[3], &rules[4],
    ]));
    for r in &rows {
        out.push_str(&line([&r[0], &r[1], &r[2], &r[3], &r[4]]));
    }
    for c in claims.iter().filter(|c| {
        matches!(
            c.verdict,
            Verdict::Fail | Verdict::Error | Verdict::Inconclusive | Verdict::Skipped
        )
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
