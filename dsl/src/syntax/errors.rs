//! pest errors, in user words. This is the only place that sees rule names.

use super::scan::TOP_KEYWORDS;
use super::Rule;
use crate::diag::{Diagnostic, Span};
use pest::error::InputLocation;

fn rule_words(rule: Rule) -> Option<&'static str> {
    use Rule::*;
    Some(match rule {
        EOI => "end of input",
        ident | symbol | claim_name | axis_name => "a name",
        kw_use => "`use`",
        kw_topology => "`topology`",
        kw_lock => "`lock`",
        kw_workload => "`workload`",
        kw_placement => "`placement`",
        kw_experiment => "`experiment`",
        kw_where => "`where`",
        kw_and => "`and`",
        kw_or => "`or`",
        kw_not => "`not`",
        kw_in | in_op => "`in`",
        kw_step => "`step`",
        kw_expect => "`expect`",
        kw_report | report_mark => "`report`",
        kw_over => "`over`",
        kw_source | source => "`source`",
        kw_gap | gap => "`gap`",
        kw_rho | rho => "`rho`",
        kw_plot => "`plot`",
        kw_vs => "`vs`",
        kw_by => "`by`",
        kw_log | log_opt => "`log`",
        log_axis => "`x`, `y` or `xy`",
        item | use_item | topology_item | def_item | def_kind => "a top-level item",
        stmt | prop | entry => "a property (`name = value`)",
        value | atom | range_tail | list | call | ctor | fraction => "a value",
        quantity | number => "a number",
        unit => "a unit",
        string | str_inner => "a string",
        bool => "`true` or `false`",
        axis_ref => "an axis reference (`$name`)",
        record => "`{`",
        where_clause => "`where`",
        cond | cond_and | compare | cond_not | not_op => "a condition (`axis == value`)",
        cmp_op => "a comparison (`==`, `!=`, `<`, `<=`, `>`, `>=`)",
        expect_stmt => "`expect`",
        claim_group | selector => "a selector (`[axis = value, ...]`)",
        sel_item => "`axis = value`",
        claim | relation | trend => "a claim",
        direction => "`increasing` or `decreasing`",
        band | band_range | pm_band => "a band (`in lo..hi`)",
        chain | link | ord_op => "a comparison (`<`, `<=`, `>`, `>=`)",
        expr | term | metric_ref => "a metric",
        add_op | mul_op => "an operator",
        plot_stmt => "`plot`",
        step | geometric => "a step",
        exp_head => "`experiment`",
        _ => return None,
    })
}

/// What the user sees at a position: `` `word` ``, `` `c` ``, or "end of file".
pub(super) fn found_at(src: &str, pos: usize) -> String {
    let mut pos = pos.min(src.len());
    while pos > 0 && !src.is_char_boundary(pos) {
        pos -= 1;
    }
    let rest = &src[pos..];
    let Some(c) = rest.chars().next() else {
        return "end of file".into();
    };
    if c == '\n' || c == '\r' {
        return "end of line".into();
    }
    if c.is_ascii_alphanumeric() || c == '_' {
        let w: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '.')
            .take(30)
            .collect();
        return format!("`{w}`");
    }
    if c == '"' {
        return "a string".into();
    }
    if let Some(name) = invisible(c) {
        return format!("U+{:04X} ({name})", u32::from(c));
    }
    format!("`{c}`")
}

/// The name of a character that shows as a blank or not at all (between
/// backquotes it would read as a space, or as nothing): `None` for the others.
fn invisible(c: char) -> Option<&'static str> {
    Some(match c {
        '\u{a0}' => "no-break space",
        '\u{202f}' => "narrow no-break space",
        '\u{2007}' => "figure space",
        '\u{2028}' => "line separator",
        '\u{2029}' => "paragraph separator",
        '\u{0b}' => "vertical tab",
        '\u{0c}' => "form feed",
        '\u{85}' => "next line",
        '\u{200b}' => "zero-width space",
        '\u{200c}' => "zero-width non-joiner",
        '\u{200d}' => "zero-width joiner",
        '\u{2060}' => "word joiner",
        '\u{feff}' => "byte order mark",
        '\u{ad}' => "soft hyphen",
        '\u{3000}' => "ideographic space",
        '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => {
            "a text-direction mark"
        }
        c if c.is_whitespace() => "a space character",
        c if c.is_control() => "a control character",
        _ => return None,
    })
}

pub(super) fn convert_pest_error(
    file: &str,
    src: &str,
    offset: usize,
    err: pest::error::Error<Rule>,
) -> Diagnostic {
    let local = match err.location {
        InputLocation::Pos(p) => p,
        InputLocation::Span((s, _)) => s,
    };
    let pos = offset.saturating_add(local).min(src.len());
    let mut expected: Vec<String> = Vec::new();
    let mut push = |s: String| {
        if !expected.contains(&s) {
            expected.push(s);
        }
    };
    if let Some(attempts) = err.parse_attempts() {
        for t in attempts.expected_tokens() {
            // `ParsingToken` is not exported; its Display gives the literal, `a..z`
            // for a character range, or `BUILTIN_RULE`.
            let token = t.to_string();
            let is_range =
                token.chars().count() == 4 && token.chars().skip(1).take(2).all(|c| c == '.');
            if !is_range && token != "BUILTIN_RULE" {
                let tok = token.trim();
                if tok.is_empty()
                    || tok == "#"
                    || tok == "//"
                    || tok == "\u{FEFF}"
                    || tok.chars().all(|c| c.is_ascii_alphabetic())
                {
                    // Keywords come through their rules; blanks and comments are noise.
                    continue;
                }
                push(format!("`{tok}`"));
            }
        }
    }
    if let pest::error::ErrorVariant::ParsingError { positives, .. } = &err.variant {
        for r in positives {
            if let Some(w) = rule_words(*r) {
                push(w.to_string());
            }
        }
    }
    // Skip blanks and comments so that the caret sits on the offending token (at
    // the end of a piece, that is the first token of whatever follows it).
    let found_pos = {
        let mut p = pos;
        let b = src.as_bytes();
        loop {
            while p < b.len() && (b[p] == b' ' || b[p] == b'\t' || b[p] == b'\r' || b[p] == b'\n') {
                p += 1;
            }
            if p < b.len() && (b[p] == b'#' || (b[p] == b'/' && b.get(p + 1) == Some(&b'/'))) {
                while p < b.len() && b[p] != b'\n' {
                    p += 1;
                }
                continue;
            }
            break;
        }
        if p < b.len() {
            p
        } else {
            pos
        }
    };
    let found = found_at(src, found_pos);
    // "end of input" means "end of this item": say what comes next instead.
    expected.retain(|e| e != "end of input");
    // Operators are summed up by their rule's words.
    let has = |w: &str, ex: &[String]| ex.iter().any(|e| e.starts_with(w));
    let cmp = has("a comparison", &expected);
    let arith = has("an operator", &expected);
    expected.retain(|e| {
        let ops_cmp = ["`<`", "`<=`", "`>`", "`>=`", "`==`", "`!=`"];
        let ops_arith = ["`+`", "`-`", "`*`", "`/`"];
        !(cmp && ops_cmp.contains(&e.as_str()) || arith && ops_arith.contains(&e.as_str()))
    });
    // Characters that only start a name, string, axis reference or number say
    // nothing the words do not.
    if expected.iter().any(|e| !e.starts_with('`') || e.len() > 3) {
        expected.retain(|e| !["`_`", "`\"`", "`$`", "`-`", "`\u{b5}`"].contains(&e.as_str()));
    }
    if expected.iter().any(|e| e == "a top-level item") {
        expected = vec![
            "a top-level item (`use`, `topology`, `lock`, `workload`, `placement` or `experiment`)"
                .to_string(),
        ];
    }
    // Literal tokens first, then the words; keep the message short.
    expected.sort_by_key(|e| !e.starts_with('`'));
    if expected.len() > 8 {
        expected.truncate(8);
    }
    let what = match expected.len() {
        0 => String::new(),
        1 => expected[0].clone(),
        _ => {
            let (last, init) = expected.split_last().expect("non-empty");
            format!("{} or {last}", init.join(", "))
        }
    };
    // An unterminated string reads better as such than as "found a string".
    let line_rest = src[found_pos..].split('\n').next().unwrap_or("");
    let unterminated = line_rest.starts_with('"') && {
        let mut chars = line_rest[1..].chars();
        let mut closed = false;
        while let Some(c) = chars.next() {
            if c == '\\' {
                chars.next();
            } else if c == '"' {
                closed = true;
                break;
            }
        }
        !closed
    };
    let message = if unterminated {
        "this string is not closed on its line".to_string()
    } else if what.is_empty() {
        format!("unexpected {found}")
    } else {
        format!("expected {what}, found {found}")
    };
    // A misspelt keyword: suggest the closest one that was expected.
    let keyword_help = {
        let word = found.trim_matches('`');
        let keywords: Vec<&str> = expected
            .iter()
            .map(|e| e.trim_matches('`'))
            .filter(|e| e.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
            .chain(
                if expected.iter().any(|e| e.starts_with("a top-level item")) {
                    TOP_KEYWORDS.to_vec()
                } else {
                    Vec::new()
                },
            )
            .collect();
        if found.starts_with('`') && word.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            crate::diag::suggestion(word, keywords.iter().copied())
        } else {
            None
        }
    };
    let span = Span::char_at(src, found_pos);
    let mut d = Diagnostic::error(file, span, message.clone());
    if !what.is_empty() {
        d = d.with_label(format!("expected {what}"));
    }
    if unterminated {
        d = Diagnostic::error(file, span, message)
            .with_label("string starts here")
            .with_help("strings end with `\"` on the same line");
    } else if let Some(h) = keyword_help {
        d = d.with_help(h);
    } else if found.starts_with("U+") {
        d = d.with_help(
            "this character is invisible or looks like a blank: delete it, or write a plain space",
        );
    }
    d
}
