//! The one diagnostic type, its rendering, and "did you mean".
//!
//! Every problem the language finds, from a stray character to a claim naming a
//! metric that does not exist, becomes a [`Diagnostic`]: a file, a byte span, a
//! message, optional secondary labels and a help line. [`render`] turns a list of
//! them into miette's graphical report (`file:line:col`, the source line, an
//! underline).

use miette::{GraphicalReportHandler, GraphicalTheme, LabeledSpan, NamedSource, SourceSpan};
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

/// The closest candidate within a distance that grows with the word's length.
pub fn suggest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let limit = match word.chars().count() {
        0..=2 => 1,
        3..=5 => 2,
        _ => 3,
    };
    let lower = word.to_lowercase();
    candidates
        .into_iter()
        .map(|c| (edit_distance(&lower, &c.to_lowercase()), c))
        .filter(|(d, _)| *d <= limit)
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
    let all: Vec<&str> = candidates.into_iter().collect();
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
// Rendering

struct Report<'a> {
    diag: &'a Diagnostic,
    source: Option<NamedSource<String>>,
    len: usize,
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

impl Report<'_> {
    fn clamp(&self, span: Span) -> SourceSpan {
        let start = span.start.min(self.len);
        let end = span.end.min(self.len).max(start);
        SourceSpan::new(start.into(), end - start)
    }
}

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
        self.source.as_ref().map(|s| s as &dyn miette::SourceCode)
    }
    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        self.source.as_ref()?;
        let mut labels = vec![LabeledSpan::new_primary_with_span(
            self.diag.label.clone(),
            self.clamp(self.diag.span),
        )];
        for l in &self.diag.labels {
            labels.push(LabeledSpan::new_with_span(
                Some(l.message.clone()),
                self.clamp(l.span),
            ));
        }
        Some(Box::new(labels.into_iter()))
    }
}

/// miette's graphical report for every diagnostic, in order, separated by blank
/// lines. `sources` are `(path, text)` pairs as returned in [`crate::Checked`].
pub fn render(diags: &[Diagnostic], sources: &[(String, String)], color: bool) -> String {
    let theme = if color {
        GraphicalTheme::unicode()
    } else {
        GraphicalTheme::unicode_nocolor()
    };
    let handler = GraphicalReportHandler::new_themed(theme)
        .with_width(100)
        .with_links(false)
        .with_context_lines(1);
    let mut out = String::new();
    for d in diags {
        let text = sources.iter().find(|(p, _)| *p == d.file).map(|(_, t)| t);
        let report = Report {
            diag: d,
            len: text.map_or(0, |t| t.len()),
            source: text.map(|t| NamedSource::new(d.file.clone(), t.clone())),
        };
        let mut one = String::new();
        if handler.render_report(&mut one, &report).is_err() {
            one = format!("{d}\n");
        }
        if text.is_none() && !d.file.is_empty() {
            // No text to show (e.g. the file could not be read): still name it.
            one = format!("{}: {one}", d.file);
        }
        out.push_str(&one);
        if !out.ends_with('\n') {
            out.push('\n');
        }
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
    fn suggestions_stay_close() {
        let algos = ["tas", "ttas", "ticket", "mcs", "cna", "qspinlock"];
        assert_eq!(suggest("mcsx", algos), Some("mcs"));
        assert_eq!(suggest("qspinlok", algos), Some("qspinlock"));
        assert_eq!(suggest("rwsem", algos), None);
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
