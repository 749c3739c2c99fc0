//! The one diagnostic type, its rendering, and "did you mean".
//!
//! Every problem the language finds, from a stray character to a claim naming a
//! metric that does not exist, becomes a [`Diagnostic`]: a file, a byte span, a
//! message, optional secondary labels and a help line. [`render`] turns a list of
//! them into miette's graphical report (`file:line:col`, the source line, an
//! underline).

use miette::{GraphicalReportHandler, GraphicalTheme, LabeledSpan, SourceSpan};
use std::fmt;

/// A byte range in one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Span {
    pub start: usize,
    pub end: usize,
}

impl Span {
    pub fn new(start: usize, end: usize) -> Span {
        Span {
            start,
            end: end.max(start),
        }
    }
    /// The one character of `src` at byte `at` (the character it falls in), empty
    /// at the end: a span never splits a UTF-8 character.
    pub fn char_at(src: &str, at: usize) -> Span {
        let mut start = at.min(src.len());
        while !src.is_char_boundary(start) {
            start -= 1;
        }
        let len = src[start..].chars().next().map_or(0, char::len_utf8);
        Span::new(start, start + len)
    }
    pub fn len(&self) -> usize {
        self.end - self.start
    }
    pub fn is_empty(&self) -> bool {
        self.end == self.start
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    Error,
    Warning,
}

/// A secondary location in the same file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Label {
    pub span: Span,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub severity: Severity,
    /// The file as the loader knows it (`experiments/lib/x5-4.lab`), or a pseudo-file
    /// such as `--set threads` for command-line values.
    pub file: String,
    pub span: Span,
    /// Lower-case, names the offending value.
    pub message: String,
    /// Text under the primary span (defaults to nothing).
    pub label: Option<String>,
    pub labels: Vec<Label>,
    pub help: Option<String>,
}

impl Diagnostic {
    pub fn error(file: &str, span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Error,
            file: file.to_string(),
            span,
            message: message.into(),
            label: None,
            labels: Vec::new(),
            help: None,
        }
    }
    pub fn warning(file: &str, span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(file, span, message)
        }
    }
    pub fn with_label(mut self, label: impl Into<String>) -> Diagnostic {
        self.label = Some(label.into());
        self
    }
    pub fn with_secondary(mut self, span: Span, message: impl Into<String>) -> Diagnostic {
        self.labels.push(Label {
            span,
            message: message.into(),
        });
        self
    }
    pub fn with_help(mut self, help: impl Into<String>) -> Diagnostic {
        self.help = Some(help.into());
        self
    }
    pub fn with_help_opt(mut self, help: Option<String>) -> Diagnostic {
        if help.is_some() {
            self.help = help;
        }
        self
    }
    /// In-place forms, for diagnostics already pushed onto a list.
    pub fn set_label(&mut self, label: impl Into<String>) -> &mut Diagnostic {
        self.label = Some(label.into());
        self
    }
    pub fn add_label(&mut self, span: Span, message: impl Into<String>) -> &mut Diagnostic {
        self.labels.push(Label {
            span,
            message: message.into(),
        });
        self
    }
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// 1-based line and column (in characters) of the primary span, given the text
    /// of `self.file`.
    pub fn line_col(&self, source: &str) -> (usize, usize) {
        line_col(source, self.span.start)
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        write!(f, "{kind}: {}", self.message)
    }
}

/// 1-based line and column (characters) of a byte offset; offsets past the end or
/// inside a character are clamped.
pub fn line_col(source: &str, offset: usize) -> (usize, usize) {
    let mut off = offset.min(source.len());
    while off > 0 && !source.is_char_boundary(off) {
        off -= 1;
    }
    let before = &source[..off];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map(|i| i + 1).unwrap_or(0);
    let col = source[line_start..off].chars().count() + 1;
    (line, col)
}

/// Levenshtein distance, for "did you mean".
pub fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        cur[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            cur[j] = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// The Levenshtein distance of `a` and `b` if it is at most `limit`: only the cells
/// within `limit` of the diagonal are computed, so the cost is linear in the
/// words' length (two long names cost no more than reading them).
pub fn edit_distance_within(a: &[char], b: &[char], limit: usize) -> Option<usize> {
    if a.len().abs_diff(b.len()) > limit {
        return None;
    }
    let far = limit + 1;
    let mut prev: Vec<usize> = (0..=b.len()).map(|j| j.min(far)).collect();
    let mut cur = vec![far; b.len() + 1];
    for i in 1..=a.len() {
        let lo = i.saturating_sub(limit).max(1);
        let hi = (i + limit).min(b.len());
        cur[0] = i.min(far);
        if lo > 1 {
            cur[lo - 1] = far;
        }
        let mut best = cur[0];
        for j in lo..=hi {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            cur[j] = (prev[j] + 1)
                .min(cur[j - 1] + 1)
                .min(prev[j - 1] + cost)
                .min(far);
            best = best.min(cur[j]);
        }
        if hi < b.len() {
            cur[hi + 1] = far;
        }
        if best > limit {
            return None;
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    Some(prev[b.len()]).filter(|d| *d <= limit)
}

/// The closest candidate within a distance that grows with the word's length.
pub fn suggest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    // A name longer than a diagnostic shows is not worth a suggestion (it would be
    // shown shortened), and no work here grows with the length of one.
    if word.len() > 4 * MAX_QUOTED_CHARS {
        return None;
    }
    let lower: Vec<char> = word.to_lowercase().chars().collect();
    let n = lower.len();
    if n > MAX_QUOTED_CHARS {
        return None;
    }
    let limit = match n {
        0..=2 => 1,
        3..=5 => 2,
        _ => 3,
    };
    candidates
        .into_iter()
        // The distance is at least the difference in length (a character is one
        // to four bytes): a long candidate is skipped without reading it.
        .filter(|c| c.len() + limit >= n && c.len() <= 4 * (n + limit))
        .filter_map(|c| {
            let cand: Vec<char> = c.to_lowercase().chars().collect();
            edit_distance_within(&lower, &cand, limit).map(|d| (d, c))
        })
        .min_by_key(|(d, c)| (*d, c.len()))
        .map(|(_, c)| c)
}

/// "did you mean `x`?" when a candidate other than the word itself is close.
pub fn suggestion<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<String> {
    suggest(word, candidates)
        .filter(|s| *s != word)
        .map(|s| format!("did you mean `{s}`?"))
}

/// "did you mean `x`?" or, when nothing is close, the list of valid names.
pub fn did_you_mean<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str> + Clone,
) -> Option<String> {
    if let Some(s) = suggest(word, candidates.clone()) {
        return Some(format!("did you mean `{s}`?"));
    }
    // A name may be both defined in the file and built in (`lock cna = cna { .. }`):
    // listed once.
    let mut all: Vec<&str> = Vec::new();
    for c in candidates {
        if !all.contains(&c) {
            all.push(c);
        }
    }
    if all.is_empty() {
        None
    } else if all.len() <= 12 {
        Some(format!("expected one of: {}", all.join(", ")))
    } else {
        Some(format!(
            "expected one of: {}, ...",
            all[..12].to_vec().join(", ")
        ))
    }
}

// ---------------------------------------------------------------------------
// Clipping: no input makes a diagnostic long.

/// Text longer than this many characters is shortened in the middle (`abc…xyz`).
pub const MAX_QUOTED_CHARS: usize = 200;
/// A message, label or help longer than this is cut.
pub const MAX_TEXT_CHARS: usize = 1_000;

/// `s`, or its beginning and end around `…` when it has more than
/// [`MAX_QUOTED_CHARS`] characters: for names and paths quoted in a message.
pub fn clip(s: &str) -> std::borrow::Cow<'_, str> {
    shorten(s, MAX_QUOTED_CHARS)
}

fn shorten(s: &str, max: usize) -> std::borrow::Cow<'_, str> {
    let n = s.chars().count();
    if n <= max {
        return s.into();
    }
    let keep = max.saturating_sub(1) / 2;
    let head: String = s.chars().take(keep).collect();
    let tail: String = s.chars().skip(n - keep).collect();
    format!("{head}…{tail}").into()
}

/// A message with every backquoted part clipped, then the whole cut at
/// [`MAX_TEXT_CHARS`]: a megabyte-long identifier gives a short diagnostic.
pub fn clip_text(text: &str) -> String {
    let mut out = String::new();
    for (i, part) in text.split('`').enumerate() {
        if i > 0 {
            out.push('`');
        }
        if i % 2 == 1 {
            out.push_str(&clip(part));
        } else {
            out.push_str(part);
        }
    }
    shorten(&out, MAX_TEXT_CHARS).into_owned()
}

impl Diagnostic {
    /// The same diagnostic with every text clipped ([`clip_text`]).
    pub fn clipped(mut self) -> Diagnostic {
        self.message = clip_text(&self.message);
        self.label = self.label.map(|l| clip_text(&l));
        self.help = self.help.map(|h| clip_text(&h));
        for l in &mut self.labels {
            l.message = clip_text(&l.message);
        }
        self
    }
}

// ---------------------------------------------------------------------------
// Rendering

/// At most this many diagnostics are rendered; the rest are counted.
pub const MAX_RENDERED: usize = 100;
/// A source line longer than this many characters is shown as a window of this
/// many around its label.
const LINE_WINDOW: usize = 120;
/// A label spanning more lines than this is shown on its first line only.
const MAX_SPAN_LINES: usize = 40;

struct Report<'a> {
    diag: &'a Diagnostic,
    view: Option<View>,
}

impl fmt::Debug for Report<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.diag.message)
    }
}

impl fmt::Display for Report<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.diag.message)
    }
}

impl std::error::Error for Report<'_> {}

impl miette::Diagnostic for Report<'_> {
    fn severity(&self) -> Option<miette::Severity> {
        Some(match self.diag.severity {
            Severity::Error => miette::Severity::Error,
            Severity::Warning => miette::Severity::Warning,
        })
    }
    fn help<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        self.diag
            .help
            .as_ref()
            .map(|h| Box::new(h) as Box<dyn fmt::Display>)
    }
    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        self.view.as_ref().map(|s| s as &dyn miette::SourceCode)
    }
    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        let view = self.view.as_ref()?;
        let mut labels = vec![LabeledSpan::new_primary_with_span(
            self.diag.label.clone(),
            view.spans[0],
        )];
        for (l, span) in self.diag.labels.iter().zip(&view.spans[1..]) {
            labels.push(LabeledSpan::new_with_span(Some(l.message.clone()), *span));
        }
        Some(Box::new(labels.into_iter()))
    }
}

/// What miette is shown of a file for one diagnostic: the lines around its labels
/// (long lines cut to a window around the label, other lines blank), so that the
/// size of the output does not grow with the file's, and no column miette
/// formats is large. Line numbers stay those of the file.
struct View {
    /// `file:line:col` of the primary span.
    name: String,
    text: String,
    /// 0-based line of the file at which `text` starts.
    first_line: usize,
    /// The primary span, then each label's, in `text`.
    spans: Vec<SourceSpan>,
}

impl View {
    fn new(file: &str, source: &str, diag: &Diagnostic) -> View {
        let floor = |mut off: usize| {
            off = off.min(source.len());
            while !source.is_char_boundary(off) {
                off -= 1;
            }
            off
        };
        // Line starts, once: every lookup below is a binary search.
        let starts: Vec<usize> = std::iter::once(0)
            .chain(source.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        let line_of = |off: usize| starts.partition_point(|&s| s <= off) - 1;
        // A line ends before its `\n`, and before the `\r` of a `\r\n`.
        let line_end = |l: usize| {
            let end = starts.get(l + 1).map_or(source.len(), |&next| next - 1);
            if end > starts[l] && source.as_bytes()[end - 1] == b'\r' {
                end - 1
            } else {
                end
            }
        };
        let spans: Vec<Span> = std::iter::once(diag.span)
            .chain(diag.labels.iter().map(|l| l.span))
            .map(|sp| {
                let (start, end) = (floor(sp.start), floor(sp.end.max(sp.start)));
                let (ls, le) = (line_of(start), line_of(end));
                if le - ls > MAX_SPAN_LINES {
                    Span::new(start, line_end(ls))
                } else {
                    Span::new(start, end)
                }
            })
            .collect();
        // Lines shown: those a span touches, and one on either side.
        let mut shown = std::collections::BTreeMap::<usize, Option<usize>>::new();
        for sp in &spans {
            let (ls, le) = (line_of(sp.start), line_of(sp.end));
            for l in ls.saturating_sub(1)..=(le + 1).min(starts.len() - 1) {
                shown.entry(l).or_insert(None);
            }
            // A long line is windowed around the first span that starts on it.
            let first = shown.entry(ls).or_insert(None);
            first.get_or_insert(sp.start);
        }
        let first_line = *shown.keys().next().unwrap_or(&0);
        let last_line = *shown.keys().last().unwrap_or(&0);
        // Each shown line's (start, end) in the file and in `text`, and the bytes of
        // the file it keeps.
        let mut text = String::new();
        let mut kept: Vec<(usize, usize, usize, usize)> = Vec::new(); // file_from, file_to, text_at, line
        for (l, &ls) in starts
            .iter()
            .enumerate()
            .take(last_line + 1)
            .skip(first_line)
        {
            let le = line_end(l);
            if let Some(anchor) = shown.get(&l) {
                let line = &source[ls..le];
                let (from, to) = window(line, anchor.map_or(0, |a| a.saturating_sub(ls)));
                if from > 0 {
                    text.push('…');
                }
                kept.push((ls + from, ls + to, text.len(), l));
                // A lone `\r` is no line break in the language: shown as a blank (of
                // one byte, so that spans keep their place), it is none in the view
                // either.
                text.push_str(&line[from..to].replace('\r', " "));
                if to < line.len() {
                    text.push('…');
                }
            } else {
                kept.push((ls, ls, text.len(), l));
            }
            if l < last_line {
                text.push('\n');
            }
        }
        let map = |off: usize| -> usize {
            let l = line_of(off);
            match kept.iter().find(|k| k.3 == l) {
                Some(&(from, to, at, _)) => at + off.clamp(from, to) - from,
                None => text.len(),
            }
        };
        let spans = spans
            .iter()
            .map(|sp| {
                let (a, b) = (map(sp.start), map(sp.end));
                SourceSpan::new(a.into(), b.max(a) - a)
            })
            .collect();
        let (l, c) = line_col(source, diag.span.start);
        View {
            name: format!("{file}:{l}:{c}"),
            text,
            first_line,
            spans,
        }
    }
}

/// The byte range of `line` to show: all of it when short, else [`LINE_WINDOW`]
/// characters starting a little before `anchor` (a byte offset in the line).
fn window(line: &str, anchor: usize) -> (usize, usize) {
    if line.chars().count() <= LINE_WINDOW {
        return (0, line.len());
    }
    let bounds: Vec<usize> = line
        .char_indices()
        .map(|(i, _)| i)
        .chain([line.len()])
        .collect();
    let at = bounds.partition_point(|&b| b < anchor.min(line.len()));
    let first = at.saturating_sub(LINE_WINDOW / 4);
    let last = (first + LINE_WINDOW).min(bounds.len() - 1);
    (bounds[first], bounds[last])
}

impl miette::SourceCode for View {
    fn read_span<'a>(
        &'a self,
        span: &SourceSpan,
        before: usize,
        after: usize,
    ) -> Result<Box<dyn miette::SpanContents<'a> + 'a>, miette::MietteError> {
        let c = self.text.read_span(span, before, after)?;
        Ok(Box::new(miette::MietteSpanContents::new_named(
            self.name.clone(),
            c.data(),
            *c.span(),
            c.line() + self.first_line,
            c.column(),
            c.line_count(),
        )))
    }
}

/// miette's graphical report for every diagnostic, in order, separated by blank
/// lines; past [`MAX_RENDERED`], a count of the rest. `sources` are `(path, text)`
/// pairs as returned in [`crate::Checked`].
pub fn render(diags: &[Diagnostic], sources: &[(String, String)], color: bool) -> String {
    let theme = if color {
        GraphicalTheme::unicode()
    } else {
        GraphicalTheme::unicode_nocolor()
    };
    let handler = GraphicalReportHandler::new_themed(theme)
        .with_width(100)
        .with_links(false)
        .without_primary_span_start()
        .with_context_lines(1);
    let mut out = String::new();
    for d in diags.iter().take(MAX_RENDERED) {
        let d = d.clone().clipped();
        let text = sources.iter().find(|(p, _)| *p == d.file).map(|(_, t)| t);
        let report = Report {
            diag: &d,
            view: text.map(|t| View::new(&clip(&d.file), t, &d)),
        };
        let mut one = String::new();
        if handler.render_report(&mut one, &report).is_err() {
            one = format!("{d}\n");
        }
        if text.is_none() && !d.file.is_empty() {
            // No text to show (e.g. the file could not be read): still name it.
            one = format!("{}: {one}", clip(&d.file));
        }
        out.push_str(&one);
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    if diags.len() > MAX_RENDERED {
        let errors = diags[MAX_RENDERED..]
            .iter()
            .filter(|d| d.is_error())
            .count();
        out.push_str(&format!(
            "… and {} more ({errors} error{}, {} warning{}) not shown\n",
            diags.len() - MAX_RENDERED,
            if errors == 1 { "" } else { "s" },
            diags.len() - MAX_RENDERED - errors,
            if diags.len() - MAX_RENDERED - errors == 1 {
                ""
            } else {
                "s"
            },
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distance_counts_single_edits() {
        assert_eq!(edit_distance("mcs", "mcs"), 0);
        assert_eq!(edit_distance("mcsx", "mcs"), 1);
        assert_eq!(edit_distance("tikcet", "ticket"), 2);
        assert_eq!(edit_distance("", "abc"), 3);
    }

    #[test]
    fn the_bounded_distance_agrees_with_the_full_one() {
        let words = [
            "",
            "a",
            "ab",
            "mcs",
            "mcsx",
            "tikcet",
            "ticket",
            "qspinlock",
            "qspinlok",
            "cna",
            "abcdef",
            "fedcba",
            "kitten",
            "sitting",
        ];
        for a in words {
            for b in words {
                let (ca, cb): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
                for limit in 0..5 {
                    let full = edit_distance(a, b);
                    let want = (full <= limit).then_some(full);
                    assert_eq!(
                        edit_distance_within(&ca, &cb, limit),
                        want,
                        "{a} {b} {limit}"
                    );
                }
            }
        }
    }

    #[test]
    fn suggestions_stay_close() {
        let algos = ["tas", "ttas", "ticket", "mcs", "cna", "qspinlock"];
        assert_eq!(suggest("mcsx", algos), Some("mcs"));
        assert_eq!(suggest("qspinlok", algos), Some("qspinlock"));
        assert_eq!(suggest("rwsem", algos), None);
    }

    #[test]
    fn the_list_of_names_names_each_once() {
        let names = ["cna", "tas", "ticket", "cna", "mcs"];
        assert_eq!(
            did_you_mean("rwsem", names).as_deref(),
            Some("expected one of: cna, tas, ticket, mcs")
        );
    }

    #[test]
    fn line_and_column_count_characters() {
        let src = "ab\nµs = 1\n";
        assert_eq!(line_col(src, 0), (1, 1));
        assert_eq!(line_col(src, 3), (2, 1));
        // `µ` is two bytes but one column.
        assert_eq!(line_col(src, 6), (2, 3));
        // Past the end and inside a character: clamped, no panic.
        assert_eq!(line_col(src, 1000).0, 3);
        assert_eq!(line_col(src, 4), (2, 1));
    }
}
