//! The syntax tree: what a file says, with spans, before any name is resolved.

use crate::diag::Span;

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
    /// Keys given (`key =`) in statements of the body that did not parse: their
    /// error is reported, and they are not reported again as missing.
    pub unparsed_keys: Vec<String>,
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
    pub baseline: Option<Baseline>,
    pub span: Span,
}

/// `over LOCK` or `over LOCK[axis = value, ...]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Baseline {
    pub lock: Ident,
    /// Axes pinned for the baseline point.
    pub select: Vec<(Ident, Val)>,
    /// The lock and its selector.
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
