//! Parsing: each piece the scanner cut is handed to pest on its own, so that one
//! mistake does not hide the next.

use super::errors::{convert_pest_error, found_at};
use super::lower::Builder;
use super::scan::{
    is_blank, matching_close, open_brace, scan, top_level_pieces, word_at, CONTINUATION_WORDS,
};
use super::{Experiment, Item, LabParser, Rule, Val, MAX_DEPTH, MAX_OPERATORS};
use crate::diag::{Diagnostic, Span};
use pest::Parser;

pub struct Parsed {
    pub items: Vec<Item>,
    pub diagnostics: Vec<Diagnostic>,
    /// `(kind, name)` of definitions that did not parse: references to them are not
    /// reported again as unknown names.
    pub broken: Vec<(String, String)>,
}

pub fn parse_file(file: &str, src: &str) -> Parsed {
    pest::set_error_detail(true);
    let mut p = Parser_ {
        file,
        src,
        items: Vec::new(),
        diags: Vec::new(),
        broken: Vec::new(),
    };
    if let Some(at) = lone_cr(src) {
        p.diags.push(
            Diagnostic::warning(
                file,
                Span::new(at, at + 1),
                "a carriage return (U+000D) without a line feed is not a line break",
            )
            .with_label("lone `\\r`")
            .with_help(
                "lines end with `\\n` or `\\r\\n`: save the file with one of those line endings",
            ),
        );
    }
    for (s, e) in top_level_pieces(src) {
        let piece = &src[s..e];
        if is_blank(piece) {
            continue;
        }
        p.piece(s, e);
    }
    Parsed {
        items: p.items,
        diagnostics: p.diags,
        broken: p.broken,
    }
}

/// The first `\r` not followed by `\n` (the language reads it as a blank).
fn lone_cr(src: &str) -> Option<usize> {
    let b = src.as_bytes();
    (0..b.len()).find(|&i| b[i] == b'\r' && b.get(i + 1) != Some(&b'\n'))
}

/// Parse `axis=value,value` values from the command line; `file` names the pseudo
/// file the text is shown as in diagnostics.
pub fn parse_set_values(file: &str, src: &str, offset: usize) -> Result<Vec<Val>, Box<Diagnostic>> {
    pest::set_error_detail(true);
    let text = &src[offset..];
    let sc = scan(src.as_bytes(), offset, src.len(), 0);
    if sc.max_depth > MAX_DEPTH {
        return Err(Box::new(too_deep(file, sc.max_at)));
    }
    match LabParser::parse(Rule::set_values, text) {
        Ok(mut pairs) => {
            let top = pairs.next().expect("set_values matched");
            if let Some(d) = bad_escapes(file, offset, &top).into_iter().next() {
                return Err(Box::new(d));
            }
            let b = Builder { offset };
            Ok(top
                .into_inner()
                .filter(|p| p.as_rule() == Rule::value)
                .map(|p| b.value(p))
                .collect())
        }
        Err(e) => Err(Box::new(convert_pest_error(file, src, offset, e))),
    }
}

/// The names written as `name =` (not `==`, `<=`, `>=`, `!=`) in `piece`, a statement
/// that did not parse: `topology = host, lock = tas` on one line gives both. With
/// `statement`, also the name that starts it (`sweep {` gives `sweep`), unless it
/// starts a claim or a plot.
fn keys_given(piece: &[u8], statement: bool) -> Vec<String> {
    let mut keys = Vec::new();
    if statement {
        let at = piece
            .iter()
            .position(|b| !b.is_ascii_whitespace())
            .unwrap_or(piece.len());
        let first = word_at(piece, at);
        if !first.is_empty() && ![&b"expect"[..], b"report", b"plot", b"where"].contains(&first) {
            keys.push(String::from_utf8_lossy(first).into_owned());
        }
    }
    let mut i = 0;
    while i < piece.len() {
        let w = word_at(piece, i);
        if w.is_empty() {
            i += 1;
            continue;
        }
        let preceded = i > 0 && (piece[i - 1] == b'.' || piece[i - 1] == b'$');
        let mut j = i + w.len();
        while j < piece.len() && (piece[j] == b' ' || piece[j] == b'\t') {
            j += 1;
        }
        if !preceded && piece.get(j) == Some(&b'=') && piece.get(j + 1) != Some(&b'=') {
            keys.push(String::from_utf8_lossy(w).into_owned());
        }
        i += w.len();
    }
    keys
}

/// A diagnostic for every `\` in a string of `top` that is not one of the
/// escapes (`\"`, `\\`, `\n`, `\t`); `offset` is where `top`'s text starts.
fn bad_escapes(file: &str, offset: usize, top: &pest::iterators::Pair<Rule>) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for p in top.clone().into_inner().flatten() {
        if p.as_rule() != Rule::str_inner {
            continue;
        }
        let start = offset + p.as_span().start();
        let mut chars = p.as_str().char_indices();
        while let Some((i, c)) = chars.next() {
            if c != '\\' {
                continue;
            }
            match chars.next() {
                Some((_, '"' | '\\' | 'n' | 't')) | None => {}
                Some((j, o)) => out.push(
                    Diagnostic::error(
                        file,
                        Span::new(start + i, start + j + o.len_utf8()),
                        format!("unknown escape `\\{o}` in a string"),
                    )
                    .with_label("not an escape")
                    .with_help("a string knows `\\\"`, `\\\\`, `\\n` and `\\t`; write `\\\\` for a backslash"),
                ),
            }
        }
    }
    out
}

fn too_deep(file: &str, at: usize) -> Diagnostic {
    Diagnostic::error(
        file,
        Span::new(at, at + 1),
        format!("brackets nested more than {MAX_DEPTH} deep"),
    )
    .with_label("too deep")
    .with_help("flatten the value; no construct of the language needs this much nesting")
}

struct Parser_<'a> {
    file: &'a str,
    src: &'a str,
    items: Vec<Item>,
    diags: Vec<Diagnostic>,
    broken: Vec<(String, String)>,
}

impl Parser_<'_> {
    fn piece(&mut self, s: usize, e: usize) {
        let bytes = self.src.as_bytes();
        let sc = scan(bytes, s, e, 0);
        let first = sc.lines.first().map(|l| l.1).unwrap_or(s);
        // Skip leading blank/comment lines to find the keyword.
        let mut kw_pos = first;
        for &(_, f, _) in &sc.lines {
            if f < e && bytes[f] != b'#' && bytes[f] != b'\n' && !self.src[f..].starts_with("//") {
                kw_pos = f;
                break;
            }
        }
        if word_at(bytes, kw_pos) == b"experiment" {
            self.experiment(s, e, kw_pos);
            return;
        }
        // The definition's kind and name, in case it does not parse.
        let kind = String::from_utf8_lossy(word_at(bytes, kw_pos)).into_owned();
        let mut name_pos = kw_pos + kind.len();
        while name_pos < e && (bytes[name_pos] == b' ' || bytes[name_pos] == b'\t') {
            name_pos += 1;
        }
        let name = String::from_utf8_lossy(word_at(bytes, name_pos.min(e))).into_owned();
        if sc.max_depth > MAX_DEPTH {
            self.diags.push(too_deep(self.file, sc.max_at));
            self.broken.push((kind, name));
            return;
        }
        match LabParser::parse(Rule::item_only, &self.src[s..e]) {
            Ok(mut pairs) => {
                let top = pairs.next().expect("item_only matched");
                let bad = bad_escapes(self.file, s, &top);
                if !bad.is_empty() {
                    self.diags.extend(bad);
                    self.broken.push((kind, name));
                    return;
                }
                let b = Builder { offset: s };
                for p in top.into_inner() {
                    if p.as_rule() != Rule::EOI {
                        self.items.push(b.item(p));
                    }
                }
            }
            Err(err) => {
                self.diags
                    .push(convert_pest_error(self.file, self.src, s, err));
                self.broken.push((kind, name));
            }
        }
    }

    fn experiment(&mut self, s: usize, e: usize, kw_pos: usize) {
        let bytes = self.src.as_bytes();
        let brace = open_brace(bytes, kw_pos, e);
        let head_end = brace.map(|b| b + 1).unwrap_or(e);
        let head = &self.src[s..head_end];
        let name = match LabParser::parse(Rule::exp_head, head) {
            Ok(mut pairs) => {
                let top = pairs.next().expect("exp_head matched");
                let b = Builder { offset: s };
                top.into_inner()
                    .find(|p| p.as_rule() == Rule::ident)
                    .map(|p| b.ident(p))
            }
            Err(err) => {
                self.diags
                    .push(convert_pest_error(self.file, self.src, s, err));
                None
            }
        };
        let Some(open) = brace else {
            return;
        };
        let sc = scan(bytes, open + 1, e, 1);
        let close = matching_close(bytes, open, e);
        let body_end = close.unwrap_or(e);
        if close.is_none() {
            self.diags.push(
                Diagnostic::error(
                    self.file,
                    Span::new(open, open + 1),
                    "this experiment block is never closed",
                )
                .with_label("opened here")
                .with_help("add `}` after the experiment's last statement"),
            );
        } else if let Some(c) = close {
            let rest = &self.src[c + 1..e];
            if !is_blank(rest) {
                let off = c + 1 + (rest.len() - rest.trim_start().len());
                self.diags.push(
                    Diagnostic::error(
                        self.file,
                        Span::char_at(self.src, off),
                        format!("unexpected {} after the experiment block", found_at(self.src, off)),
                    )
                    .with_label("expected a top-level item")
                    .with_help("a file holds `use`, `topology`, `lock`, `workload`, `placement` and `experiment` items"),
                );
            }
        }
        // Cut the body into statements: a name at the start of a line, outside
        // brackets, starts one (unless it continues a claim).
        let mut starts = Vec::new();
        for &(_, first, depth) in &sc.lines {
            if first >= body_end || depth != 1 {
                continue;
            }
            let w = word_at(bytes, first);
            if w.is_empty() || CONTINUATION_WORDS.iter().any(|k| k.as_bytes() == w) {
                continue;
            }
            starts.push(first);
        }
        if starts.first().is_none_or(|&f| f > open + 1) {
            starts.insert(0, open + 1);
        }
        let mut body = Vec::new();
        let mut unparsed_keys = Vec::new();
        for (k, &st) in starts.iter().enumerate() {
            let en = starts.get(k + 1).copied().unwrap_or(body_end).min(body_end);
            if st >= en || is_blank(&self.src[st..en]) {
                continue;
            }
            let psc = scan(bytes, st, en, 0);
            if psc.max_depth > MAX_DEPTH {
                self.diags.push(too_deep(self.file, psc.max_at));
                // What the statement gives is not reported again as missing.
                unparsed_keys.extend(keys_given(&bytes[st..en], true));
                continue;
            }
            match LabParser::parse(Rule::stmt_only, &self.src[st..en]) {
                Ok(mut pairs) => {
                    let top = pairs.next().expect("stmt_only matched");
                    let b = Builder { offset: st };
                    if let Some(op) = top
                        .clone()
                        .into_inner()
                        .flatten()
                        .filter(|p| matches!(p.as_rule(), Rule::add_op | Rule::mul_op))
                        .nth(MAX_OPERATORS)
                    {
                        let at = st + op.as_span().start();
                        self.diags.push(
                            Diagnostic::error(
                                self.file,
                                Span::new(at, at + 1),
                                format!("a statement may hold at most {MAX_OPERATORS} arithmetic operators"),
                            )
                            .with_label("one too many")
                            .with_help("split the claim; no claim needs this many terms"),
                        );
                        unparsed_keys.extend(keys_given(&bytes[st..en], true));
                        continue;
                    }
                    let bad = bad_escapes(self.file, st, &top);
                    if !bad.is_empty() {
                        self.diags.extend(bad);
                        unparsed_keys.extend(keys_given(&bytes[st..en], true));
                        continue;
                    }
                    for p in top.into_inner() {
                        if p.as_rule() != Rule::EOI {
                            body.push(b.stmt(p));
                        }
                    }
                }
                Err(err) => {
                    self.diags
                        .push(convert_pest_error(self.file, self.src, st, err));
                    unparsed_keys.extend(keys_given(&bytes[st..en], true));
                }
            }
        }
        if let Some(name) = name {
            self.items.push(Item::Experiment(Experiment {
                span: Span::new(kw_pos, head_end),
                name,
                body,
                unparsed_keys,
            }));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_is_reported_and_items_survive() {
        let p = parse_file("f.lab", "lock a = = mcs\nlock b = ticket\nlock c = tas x\n");
        assert_eq!(p.diagnostics.len(), 2);
        assert_eq!(p.items.len(), 1);
        assert_eq!(
            p.broken,
            [
                ("lock".to_string(), "a".to_string()),
                ("lock".to_string(), "c".to_string())
            ]
        );
    }

    #[test]
    fn messages_use_words_not_rule_names() {
        let p = parse_file(
            "f.lab",
            "experiment e {\n  sweep { threads = [1, }\n  expect speedup[ over x\n}\n",
        );
        assert_eq!(p.diagnostics.len(), 2);
        for d in &p.diagnostics {
            assert!(
                !d.message.contains("kw_") && !d.message.contains("_item"),
                "{}",
                d.message
            );
            assert!(
                !d.message.contains("EOI") && !d.message.contains("Rule"),
                "{}",
                d.message
            );
        }
    }
}
