//! Syntax tree with spans, and the parser that builds it.
//!
//! Parsing never fails: [`parse_file`] returns every item it could read and a
//! diagnostic for every piece it could not. The file is first cut into pieces (one
//! top-level item, or one statement of an experiment block) by a small scanner that
//! only knows about brackets, strings and comments; pest then parses each piece on
//! its own. A broken lock definition therefore does not hide a typo in the sweep
//! below it.

use crate::diag::{Diagnostic, Span};
use pest::error::InputLocation;
use pest::iterators::Pair;
use pest::Parser;

#[derive(pest_derive::Parser)]
#[grammar = "grammar.pest"]
struct LabParser;

/// Deeper nesting than this is refused before pest sees it (no input may overflow
/// the stack).
const MAX_DEPTH: usize = 40;

#[derive(Debug, Clone, PartialEq)]
pub struct Ident {
    pub name: String,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Val {
    pub kind: ValKind,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ValKind {
    /// A number with an optional unit suffix, as written.
    Num {
        text: String,
        unit: Option<Ident>,
    },
    /// `127/128`.
    Fraction {
        num: String,
        den: String,
    },
    Str(String),
    Bool(bool),
    /// A bare name: a definition, an enumeration value (`v15`, `fair`), a lock.
    Symbol(String),
    /// `$axis`.
    AxisRef(String),
    List(Vec<Val>),
    Range {
        lo: Box<Val>,
        hi: Box<Val>,
        step: Option<Step>,
    },
    Call {
        name: Ident,
        args: Vec<Val>,
    },
    /// `{ ... }` or `name { ... }`.
    Record {
        ctor: Option<Ident>,
        entries: Vec<Entry>,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// `step 2`, `step 10ms`.
    Add(Box<Val>),
    /// `step x2`: multiply.
    Mul { factor: String, span: Span },
}

#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    Prop(Prop),
    Where(Cond),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Prop {
    pub key: Ident,
    pub value: Val,
    pub span: Span,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Cond {
    Or(Vec<Cond>),
    And(Vec<Cond>),
    Not(Box<Cond>),
    Cmp {
        axis: Ident,
        op: CmpOp,
        value: Val,
        span: Span,
    },
    In {
        axis: Ident,
        negated: bool,
        value: Val,
        span: Span,
    },
}

impl Cond {
    pub fn span(&self) -> Span {
        match self {
            Cond::Or(v) | Cond::And(v) => match (v.first(), v.last()) {
                (Some(a), Some(b)) => Span::new(a.span().start, b.span().end),
                _ => Span::default(),
            },
            Cond::Not(c) => c.span(),
            Cond::Cmp { span, .. } | Cond::In { span, .. } => *span,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DefKind {
    Lock,
    Workload,
    Placement,
}

impl DefKind {
    pub fn word(self) -> &'static str {
        match self {
            DefKind::Lock => "lock",
            DefKind::Workload => "workload",
            DefKind::Placement => "placement",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    Use {
        path: String,
        span: Span,
    },
    Topology {
        name: Ident,
        value: Val,
        span: Span,
    },
    Def {
        kind: DefKind,
        name: Ident,
        value: Val,
        span: Span,
    },
    Experiment(Experiment),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Experiment {
    pub name: Ident,
    pub span: Span,
    pub body: Vec<Stmt>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Stmt {
    Entry(Entry),
    Expect(ExpectStmt),
    Plot(PlotStmt),
}

#[derive(Debug, Clone, PartialEq)]
pub struct ExpectStmt {
    /// `report` instead of `expect`: printed, never gating.
    pub report: bool,
    pub group: Option<Selector>,
    pub claims: Vec<ClaimAst>,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Selector {
    pub items: Vec<(Ident, Val)>,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ClaimAst {
    pub report: bool,
    pub name: Option<Ident>,
    pub body: ClaimBody,
    pub source: Option<String>,
    pub span: Span,
    /// The claim without its name and source, for the canonical text.
    pub body_span: Span,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OrdOp {
    Lt,
    Le,
    Gt,
    Ge,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ClaimBody {
    Trend {
        metric: MetricAst,
        increasing: bool,
        axis: Ident,
        values: Option<Val>,
        rho: Option<Val>,
    },
    Band {
        expr: ExprAst,
        band: BandAst,
    },
    Chain {
        first: ExprAst,
        links: Vec<(OrdOp, Span, ExprAst)>,
        gap: Option<Val>,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub enum BandAst {
    Range {
        lo: Option<Val>,
        hi: Option<Val>,
        span: Span,
    },
    PlusMinus {
        center: Val,
        tol: Val,
        span: Span,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub enum ExprAst {
    Metric(MetricAst),
    Const(Val),
    Bin {
        op: char,
        lhs: Box<ExprAst>,
        rhs: Box<ExprAst>,
        span: Span,
    },
}

impl ExprAst {
    pub fn span(&self) -> Span {
        match self {
            ExprAst::Metric(m) => m.span,
            ExprAst::Const(v) => v.span,
            ExprAst::Bin { span, .. } => *span,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct MetricAst {
    pub name: Ident,
    pub select: Vec<(Ident, Val)>,
    pub baseline: Option<Ident>,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PlotStmt {
    pub title: Option<String>,
    pub metric: MetricAst,
    pub x: Ident,
    pub by: Vec<Ident>,
    pub log_x: bool,
    pub log_y: bool,
    pub span: Span,
}

// ---------------------------------------------------------------------------
// The scanner that cuts a file into pieces

const TOP_KEYWORDS: &[&str] = &[
    "use",
    "topology",
    "lock",
    "workload",
    "placement",
    "experiment",
];

/// Words that continue a statement when they start a line (a claim's `source`, a
/// trend's `over`, ...); any other name at the start of a line starts a new one.
const CONTINUATION_WORDS: &[&str] = &[
    "source",
    "gap",
    "rho",
    "over",
    "in",
    "vs",
    "by",
    "log",
    "step",
    "and",
    "or",
    "not",
    "increasing",
    "decreasing",
];

fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}
fn is_ident_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

fn word_at(src: &[u8], i: usize) -> &[u8] {
    let mut j = i;
    if j < src.len() && is_ident_start(src[j]) {
        while j < src.len() && is_ident_char(src[j]) {
            j += 1;
        }
    }
    &src[i..j]
}

/// A scan of `src[start..end]` that reports, for each line start, the bracket depth
/// there. Strings and comments are skipped. Returns (line-start offsets with the
/// offset of their first non-blank byte, depth at that point) and the maximum depth
/// with where it was reached.
struct Scan {
    lines: Vec<(usize, usize, i64)>,
    max_depth: usize,
    max_at: usize,
}

fn scan(src: &[u8], start: usize, end: usize, initial_depth: i64) -> Scan {
    let mut lines = Vec::new();
    let mut depth = initial_depth;
    let mut max_depth = 0usize;
    let mut max_at = start;
    let mut i = start;
    let mut at_line_start = true;
    while i < end {
        if at_line_start {
            let line = i;
            let mut j = i;
            while j < end && (src[j] == b' ' || src[j] == b'\t' || src[j] == b'\r') {
                j += 1;
            }
            lines.push((line, j, depth));
            at_line_start = false;
            i = j;
            continue;
        }
        let b = src[i];
        match b {
            b'\n' => {
                at_line_start = true;
                i += 1;
            }
            b'#' => {
                while i < end && src[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if i + 1 < end && src[i + 1] == b'/' => {
                while i < end && src[i] != b'\n' {
                    i += 1;
                }
            }
            b'"' => {
                i += 1;
                while i < end && src[i] != b'"' && src[i] != b'\n' {
                    if src[i] == b'\\' && i + 1 < end && src[i + 1] != b'\n' {
                        i += 1;
                    }
                    i += 1;
                }
                if i < end && src[i] == b'"' {
                    i += 1;
                }
            }
            b'{' | b'[' | b'(' => {
                depth += 1;
                if depth > 0 && depth as usize > max_depth {
                    max_depth = depth as usize;
                    max_at = i;
                }
                i += 1;
            }
            b'}' | b']' | b')' => {
                depth -= 1;
                i += 1;
            }
            _ => i += 1,
        }
    }
    Scan {
        lines,
        max_depth,
        max_at,
    }
}

/// Top-level pieces: a new piece starts at a line whose first word is a top-level
/// keyword, either at column 0 (always, so that a missing `}` costs one item) or
/// anywhere outside brackets.
fn top_level_pieces(src: &str) -> Vec<(usize, usize)> {
    let bytes = src.as_bytes();
    let sc = scan(bytes, 0, bytes.len(), 0);
    let mut starts = vec![0usize];
    // Depth is recomputed from each boundary, so rescan incrementally.
    let mut depth_offset = 0i64;
    for &(line, first, depth) in &sc.lines {
        let w = word_at(bytes, first);
        let is_kw = !w.is_empty() && TOP_KEYWORDS.iter().any(|k| k.as_bytes() == w);
        if !is_kw {
            continue;
        }
        let rel_depth = depth - depth_offset;
        if first == line || rel_depth <= 0 {
            if first != 0 {
                starts.push(first);
            }
            depth_offset = depth;
        }
    }
    let mut out = Vec::new();
    for (k, &s) in starts.iter().enumerate() {
        let e = starts.get(k + 1).copied().unwrap_or(src.len());
        if s < e {
            out.push((s, e));
        }
    }
    out
}

/// True if the text holds nothing but blanks and comments.
fn is_blank(text: &str) -> bool {
    let mut it = text.lines();
    for line in it.by_ref() {
        let t = line.trim();
        if !(t.is_empty() || t.starts_with('#') || t.starts_with("//")) {
            return false;
        }
    }
    true
}

// ---------------------------------------------------------------------------
// Parsing

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
        // Find the opening brace of the block (outside strings and comments).
        let mut brace = None;
        {
            let mut i = kw_pos;
            while i < e {
                match bytes[i] {
                    b'{' => {
                        brace = Some(i);
                        break;
                    }
                    b'#' => {
                        while i < e && bytes[i] != b'\n' {
                            i += 1;
                        }
                    }
                    b'"' => {
                        i += 1;
                        while i < e && bytes[i] != b'"' && bytes[i] != b'\n' {
                            i += 1;
                        }
                        i += 1;
                    }
                    _ => i += 1,
                }
            }
        }
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
        // The matching close brace.
        let sc = scan(bytes, open + 1, e, 1);
        let mut close = None;
        {
            let body_scan_end = e;
            let mut depth = 1i64;
            let mut i = open + 1;
            while i < body_scan_end {
                match bytes[i] {
                    b'#' => {
                        while i < body_scan_end && bytes[i] != b'\n' {
                            i += 1;
                        }
                        continue;
                    }
                    b'/' if i + 1 < body_scan_end && bytes[i + 1] == b'/' => {
                        while i < body_scan_end && bytes[i] != b'\n' {
                            i += 1;
                        }
                        continue;
                    }
                    b'"' => {
                        i += 1;
                        while i < body_scan_end && bytes[i] != b'"' && bytes[i] != b'\n' {
                            if bytes[i] == b'\\' && i + 1 < body_scan_end && bytes[i + 1] != b'\n' {
                                i += 1;
                            }
                            i += 1;
                        }
                    }
                    b'{' | b'[' | b'(' => depth += 1,
                    b'}' | b']' | b')' => {
                        depth -= 1;
                        if depth == 0 {
                            close = Some(i);
                            break;
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
        }
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
                        Span::new(off, off + 1),
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
        for (k, &st) in starts.iter().enumerate() {
            let en = starts.get(k + 1).copied().unwrap_or(body_end).min(body_end);
            if st >= en || is_blank(&self.src[st..en]) {
                continue;
            }
            let psc = scan(bytes, st, en, 0);
            if psc.max_depth > MAX_DEPTH {
                self.diags.push(too_deep(self.file, psc.max_at));
                continue;
            }
            match LabParser::parse(Rule::stmt_only, &self.src[st..en]) {
                Ok(mut pairs) => {
                    let top = pairs.next().expect("stmt_only matched");
                    let b = Builder { offset: st };
                    for p in top.into_inner() {
                        if p.as_rule() != Rule::EOI {
                            body.push(b.stmt(p));
                        }
                    }
                }
                Err(err) => self
                    .diags
                    .push(convert_pest_error(self.file, self.src, st, err)),
            }
        }
        if let Some(name) = name {
            self.items.push(Item::Experiment(Experiment {
                span: Span::new(kw_pos, head_end),
                name,
                body,
            }));
        }
    }
}

// ---------------------------------------------------------------------------
// pest errors, in user words. This is the only place that sees rule names.

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
        cond | cond_and | compare | cond_not => "a condition (`axis == value`)",
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
pub fn found_at(src: &str, pos: usize) -> String {
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
    format!("`{c}`")
}

fn convert_pest_error(
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
            crate::diag::suggest(word, keywords.iter().copied())
                .filter(|k| *k != word)
                .map(|k| format!("did you mean `{k}`?"))
        } else {
            None
        }
    };
    let mut end = found_pos.saturating_add(1).min(src.len());
    while end < src.len() && !src.is_char_boundary(end) {
        end += 1;
    }
    let mut d = Diagnostic::error(
        file,
        Span::new(found_pos, end.max(found_pos)),
        message.clone(),
    );
    if !what.is_empty() {
        d = d.with_label(format!("expected {what}"));
    }
    if unterminated {
        d = Diagnostic::error(file, Span::new(found_pos, end.max(found_pos)), message)
            .with_label("string starts here")
            .with_help("strings end with `\"` on the same line");
    } else if let Some(h) = keyword_help {
        d = d.with_help(h);
    }
    d
}

// ---------------------------------------------------------------------------
// Pairs to tree

struct Builder {
    offset: usize,
}

impl Builder {
    fn span(&self, p: &Pair<Rule>) -> Span {
        let s = p.as_span();
        Span::new(self.offset + s.start(), self.offset + s.end())
    }

    fn ident(&self, p: Pair<Rule>) -> Ident {
        Ident {
            span: self.span(&p),
            name: p.as_str().trim_start_matches('$').to_string(),
        }
    }

    fn item(&self, p: Pair<Rule>) -> Item {
        let span = self.span(&p);
        match p.as_rule() {
            Rule::use_item => {
                let s = p
                    .into_inner()
                    .find(|p| p.as_rule() == Rule::string)
                    .expect("use has a string");
                Item::Use {
                    span: self.span(&s),
                    path: unescape(s.into_inner().next().map_or("", |p| p.as_str())),
                }
            }
            Rule::topology_item => {
                let mut inner = p.into_inner().filter(|p| p.as_rule() != Rule::kw_topology);
                let name = self.ident(inner.next().expect("topology name"));
                let v = inner.next().expect("topology body");
                let value = if v.as_rule() == Rule::record {
                    self.record(v, None)
                } else {
                    self.value(v)
                };
                Item::Topology { name, value, span }
            }
            Rule::def_item => {
                let mut inner = p.into_inner();
                let kind_pair = inner.next().expect("def kind");
                let kind = match kind_pair.as_str().trim() {
                    "lock" => DefKind::Lock,
                    "workload" => DefKind::Workload,
                    _ => DefKind::Placement,
                };
                let name = self.ident(inner.next().expect("def name"));
                let value = self.value(inner.next().expect("def value"));
                Item::Def {
                    kind,
                    name,
                    value,
                    span,
                }
            }
            r => unreachable!("not an item: {r:?}"),
        }
    }

    fn stmt(&self, p: Pair<Rule>) -> Stmt {
        match p.as_rule() {
            Rule::expect_stmt => Stmt::Expect(self.expect(p)),
            Rule::plot_stmt => Stmt::Plot(self.plot(p)),
            _ => Stmt::Entry(self.entry(p)),
        }
    }

    fn entry(&self, p: Pair<Rule>) -> Entry {
        match p.as_rule() {
            Rule::where_clause => {
                let c = p
                    .into_inner()
                    .find(|p| p.as_rule() == Rule::cond)
                    .expect("where has a condition");
                Entry::Where(self.cond(c))
            }
            Rule::prop => {
                let span = self.span(&p);
                let mut inner = p.into_inner();
                let key = self.ident(inner.next().expect("prop key"));
                let value = self.value(inner.next().expect("prop value"));
                Entry::Prop(Prop { key, value, span })
            }
            r => unreachable!("not an entry: {r:?}"),
        }
    }

    fn record(&self, p: Pair<Rule>, ctor: Option<Ident>) -> Val {
        let mut span = self.span(&p);
        if let Some(c) = &ctor {
            span.start = c.span.start;
        }
        let entries = p.into_inner().map(|e| self.entry(e)).collect();
        Val {
            kind: ValKind::Record { ctor, entries },
            span,
        }
    }

    fn value(&self, p: Pair<Rule>) -> Val {
        let span = self.span(&p);
        match p.as_rule() {
            Rule::value => {
                let mut inner = p.into_inner();
                let first = inner.next().expect("value content");
                if first.as_rule() == Rule::fraction {
                    let mut nums = first.into_inner();
                    let num = nums.next().expect("numerator").as_str().to_string();
                    let den = nums.next().expect("denominator").as_str().to_string();
                    return Val {
                        kind: ValKind::Fraction { num, den },
                        span,
                    };
                }
                let lo = self.value(first);
                match inner.next() {
                    None => lo,
                    Some(tail) => {
                        let mut t = tail.into_inner();
                        let hi = self.value(t.next().expect("range end"));
                        let step = t.find(|p| p.as_rule() == Rule::step).map(|s| {
                            let inner = s.into_inner().next().expect("step value");
                            if inner.as_rule() == Rule::geometric {
                                let sp = self.span(&inner);
                                let factor = inner
                                    .into_inner()
                                    .next()
                                    .map_or(String::new(), |n| n.as_str().to_string());
                                Step::Mul { factor, span: sp }
                            } else {
                                Step::Add(Box::new(self.value(inner)))
                            }
                        });
                        Val {
                            kind: ValKind::Range {
                                lo: Box::new(lo),
                                hi: Box::new(hi),
                                step,
                            },
                            span,
                        }
                    }
                }
            }
            Rule::list => Val {
                kind: ValKind::List(p.into_inner().map(|v| self.value(v)).collect()),
                span,
            },
            Rule::record => self.record(p, None),
            Rule::ctor => {
                let mut inner = p.into_inner();
                let name = self.ident(inner.next().expect("ctor name"));
                self.record(inner.next().expect("ctor record"), Some(name))
            }
            Rule::call => {
                let mut inner = p.into_inner();
                let name = self.ident(inner.next().expect("call name"));
                Val {
                    kind: ValKind::Call {
                        name,
                        args: inner.map(|v| self.value(v)).collect(),
                    },
                    span,
                }
            }
            Rule::quantity => {
                let mut inner = p.into_inner();
                let text = inner.next().expect("number").as_str().to_string();
                let unit = inner.next().map(|u| self.ident(u));
                Val {
                    kind: ValKind::Num { text, unit },
                    span,
                }
            }
            Rule::string => Val {
                kind: ValKind::Str(unescape(p.into_inner().next().map_or("", |p| p.as_str()))),
                span,
            },
            Rule::bool => Val {
                kind: ValKind::Bool(p.as_str() == "true"),
                span,
            },
            Rule::axis_ref => Val {
                kind: ValKind::AxisRef(p.as_str().trim_start_matches('$').to_string()),
                span,
            },
            Rule::symbol | Rule::ident => Val {
                kind: ValKind::Symbol(p.as_str().to_string()),
                span,
            },
            r => unreachable!("not a value: {r:?}"),
        }
    }

    fn cond(&self, p: Pair<Rule>) -> Cond {
        match p.as_rule() {
            Rule::cond => {
                let mut v: Vec<Cond> = p.into_inner().map(|c| self.cond(c)).collect();
                if v.len() == 1 {
                    v.pop().expect("one")
                } else {
                    Cond::Or(v)
                }
            }
            Rule::cond_and => {
                let mut v: Vec<Cond> = p.into_inner().map(|c| self.cond(c)).collect();
                if v.len() == 1 {
                    v.pop().expect("one")
                } else {
                    Cond::And(v)
                }
            }
            Rule::cond_not => {
                let inner = p
                    .into_inner()
                    .find(|p| p.as_rule() != Rule::kw_not)
                    .expect("negated condition");
                Cond::Not(Box::new(self.cond(inner)))
            }
            Rule::compare => {
                let span = self.span(&p);
                let mut inner = p.into_inner();
                let axis = self.ident(inner.next().expect("axis"));
                let op = inner.next().expect("operator");
                let value = self.value(inner.next().expect("value"));
                if op.as_rule() == Rule::in_op {
                    let negated = op.as_str().trim_start().starts_with("not");
                    Cond::In {
                        axis,
                        negated,
                        value,
                        span,
                    }
                } else {
                    let op = match op.as_str() {
                        "==" => CmpOp::Eq,
                        "!=" => CmpOp::Ne,
                        "<=" => CmpOp::Le,
                        ">=" => CmpOp::Ge,
                        "<" => CmpOp::Lt,
                        _ => CmpOp::Gt,
                    };
                    Cond::Cmp {
                        axis,
                        op,
                        value,
                        span,
                    }
                }
            }
            r => unreachable!("not a condition: {r:?}"),
        }
    }

    fn selector(&self, p: Pair<Rule>) -> Selector {
        let span = self.span(&p);
        let items = p
            .into_inner()
            .map(|it| {
                let mut inner = it.into_inner();
                let k = self.ident(inner.next().expect("selector key"));
                let v = self.value(inner.next().expect("selector value"));
                (k, v)
            })
            .collect();
        Selector { items, span }
    }

    fn metric(&self, p: Pair<Rule>) -> MetricAst {
        let span = self.span(&p);
        let mut name = None;
        let mut select = Vec::new();
        let mut baseline = None;
        for it in p.into_inner() {
            match it.as_rule() {
                Rule::ident if name.is_none() => name = Some(self.ident(it)),
                Rule::ident => baseline = Some(self.ident(it)),
                Rule::selector => select = self.selector(it).items,
                _ => {}
            }
        }
        MetricAst {
            name: name.expect("metric name"),
            select,
            baseline,
            span,
        }
    }

    fn expr(&self, p: Pair<Rule>) -> ExprAst {
        match p.as_rule() {
            Rule::expr | Rule::term => {
                let mut inner = p.into_inner();
                let mut acc = self.expr(inner.next().expect("operand"));
                while let Some(op) = inner.next() {
                    let rhs = self.expr(inner.next().expect("right operand"));
                    let span = Span::new(acc.span().start, rhs.span().end);
                    acc = ExprAst::Bin {
                        op: op.as_str().chars().next().unwrap_or('+'),
                        lhs: Box::new(acc),
                        rhs: Box::new(rhs),
                        span,
                    };
                }
                acc
            }
            Rule::metric_ref => ExprAst::Metric(self.metric(p)),
            Rule::quantity => ExprAst::Const(self.value(p)),
            r => unreachable!("not an expression: {r:?}"),
        }
    }

    fn claim(&self, p: Pair<Rule>) -> ClaimAst {
        let span = self.span(&p);
        let mut report = false;
        let mut name = None;
        let mut body = None;
        let mut source = None;
        let mut body_span = span;
        for it in p.into_inner() {
            match it.as_rule() {
                Rule::report_mark => report = true,
                Rule::claim_name => {
                    name = it.into_inner().next().map(|i| self.ident(i));
                }
                Rule::source => {
                    source = it
                        .into_inner()
                        .find(|p| p.as_rule() == Rule::string)
                        .map(|s| unescape(s.into_inner().next().map_or("", |p| p.as_str())));
                }
                Rule::trend => {
                    body_span = self.span(&it);
                    let mut metric = None;
                    let mut increasing = true;
                    let mut axis = None;
                    let mut values = None;
                    let mut rho = None;
                    for t in it.into_inner() {
                        match t.as_rule() {
                            Rule::metric_ref => metric = Some(self.metric(t)),
                            Rule::direction => increasing = t.as_str() == "increasing",
                            Rule::axis_name => axis = Some(self.ident(t)),
                            Rule::list => values = Some(self.value(t)),
                            Rule::rho => {
                                rho = t
                                    .into_inner()
                                    .find(|p| p.as_rule() == Rule::quantity)
                                    .map(|q| self.value(q))
                            }
                            _ => {}
                        }
                    }
                    body = Some(ClaimBody::Trend {
                        metric: metric.expect("trend metric"),
                        increasing,
                        axis: axis.expect("trend axis"),
                        values,
                        rho,
                    });
                }
                Rule::relation => {
                    body_span = self.span(&it);
                    let mut inner = it.into_inner();
                    let first = self.expr(inner.next().expect("relation lhs"));
                    let rest = inner.next().expect("band or chain");
                    body = Some(match rest.as_rule() {
                        Rule::band => {
                            let b = rest
                                .into_inner()
                                .find(|p| p.as_rule() != Rule::kw_in)
                                .expect("band body");
                            let bspan = self.span(&b);
                            let band = if b.as_rule() == Rule::pm_band {
                                let mut q = b.into_inner();
                                BandAst::PlusMinus {
                                    center: self.value(q.next().expect("centre")),
                                    tol: self.value(q.next().expect("tolerance")),
                                    span: bspan,
                                }
                            } else {
                                // `lo..hi` with either side optional: tell them apart
                                // by position relative to the `..`.
                                let text = b.as_str();
                                let dots = text.find("..").unwrap_or(0);
                                let base = b.as_span().start();
                                let mut lo = None;
                                let mut hi = None;
                                for q in b.into_inner() {
                                    let at = q.as_span().start() - base;
                                    if at < dots {
                                        lo = Some(self.value(q));
                                    } else {
                                        hi = Some(self.value(q));
                                    }
                                }
                                BandAst::Range {
                                    lo,
                                    hi,
                                    span: bspan,
                                }
                            };
                            ClaimBody::Band { expr: first, band }
                        }
                        _ => {
                            let mut links = Vec::new();
                            let mut gap = None;
                            for l in rest.into_inner() {
                                match l.as_rule() {
                                    Rule::link => {
                                        let mut li = l.into_inner();
                                        let op = li.next().expect("ordering");
                                        let ospan = self.span(&op);
                                        let op = match op.as_str() {
                                            "<" => OrdOp::Lt,
                                            "<=" => OrdOp::Le,
                                            ">" => OrdOp::Gt,
                                            _ => OrdOp::Ge,
                                        };
                                        links.push((
                                            op,
                                            ospan,
                                            self.expr(li.next().expect("operand")),
                                        ));
                                    }
                                    Rule::gap => {
                                        gap = l
                                            .into_inner()
                                            .find(|p| p.as_rule() == Rule::quantity)
                                            .map(|q| self.value(q));
                                    }
                                    _ => {}
                                }
                            }
                            ClaimBody::Chain { first, links, gap }
                        }
                    });
                }
                _ => {}
            }
        }
        ClaimAst {
            report,
            name,
            body: body.expect("claim body"),
            source,
            span,
            body_span,
        }
    }

    fn expect(&self, p: Pair<Rule>) -> ExpectStmt {
        let span = self.span(&p);
        let mut report = false;
        let mut group = None;
        let mut claims = Vec::new();
        for it in p.into_inner() {
            match it.as_rule() {
                Rule::kw_report => report = true,
                Rule::claim => claims.push(self.claim(it)),
                Rule::claim_group => {
                    for g in it.into_inner() {
                        match g.as_rule() {
                            Rule::selector => group = Some(self.selector(g)),
                            Rule::claim => claims.push(self.claim(g)),
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
        }
        ExpectStmt {
            report,
            group,
            claims,
            span,
        }
    }

    fn plot(&self, p: Pair<Rule>) -> PlotStmt {
        let span = self.span(&p);
        let mut title = None;
        let mut metric = None;
        let mut x = None;
        let mut by = Vec::new();
        let (mut log_x, mut log_y) = (false, false);
        for it in p.into_inner() {
            match it.as_rule() {
                Rule::string => {
                    title = Some(unescape(it.into_inner().next().map_or("", |p| p.as_str())))
                }
                Rule::metric_ref => metric = Some(self.metric(it)),
                Rule::axis_name if x.is_none() => x = Some(self.ident(it)),
                Rule::axis_name => by.push(self.ident(it)),
                Rule::log_opt => {
                    let a = it.into_inner().last().map_or("", |p| p.as_str());
                    log_x |= a.contains('x');
                    log_y |= a.contains('y');
                }
                _ => {}
            }
        }
        PlotStmt {
            title,
            metric: metric.expect("plot metric"),
            x: x.expect("plot x axis"),
            by,
            log_x,
            log_y,
            span,
        }
    }
}

fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some(o) => out.push(o),
                None => {}
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_start_at_top_level_keywords() {
        let src = "# c\nlock a = mcs\nlock b = ticket {\nworkload w = single { critical = 1ns }\n";
        let firsts: Vec<&str> = top_level_pieces(src)
            .iter()
            .map(|&(s, e)| src[s..e].lines().next().unwrap())
            .collect();
        // The unclosed `{` of `b` does not swallow `workload w`: it starts at column 0.
        assert_eq!(
            firsts,
            [
                "# c",
                "lock a = mcs",
                "lock b = ticket {",
                "workload w = single { critical = 1ns }"
            ]
        );
    }

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
