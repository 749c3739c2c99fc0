//! pest pairs to the syntax tree.

use super::ast::*;
use super::Rule;
use crate::diag::Span;
use pest::iterators::Pair;

pub(super) struct Builder {
    pub offset: usize,
}

impl Builder {
    fn span(&self, p: &Pair<Rule>) -> Span {
        let s = p.as_span();
        Span::new(self.offset + s.start(), self.offset + s.end())
    }

    pub(super) fn ident(&self, p: Pair<Rule>) -> Ident {
        Ident {
            span: self.span(&p),
            name: p.as_str().trim_start_matches('$').to_string(),
        }
    }

    pub(super) fn item(&self, p: Pair<Rule>) -> Item {
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

    pub(super) fn stmt(&self, p: Pair<Rule>) -> Stmt {
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

    pub(super) fn value(&self, p: Pair<Rule>) -> Val {
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
                // `!!!!c` is `c` and `!!!c` is `!c`: the tree holds at most one `Not`
                // per bracket level, so nothing downstream recurses on a chain.
                let mut negations = 0usize;
                let mut operand = None;
                for q in p.into_inner() {
                    if q.as_rule() == Rule::not_op {
                        negations += 1;
                    } else {
                        operand = Some(q);
                    }
                }
                let inner = self.cond(operand.expect("negated condition"));
                if negations % 2 == 1 {
                    Cond::Not(Box::new(inner))
                } else {
                    inner
                }
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
        let mut span = self.span(&p);
        // The reference ends with its last part: pest's span of it may run on over
        // the blanks and comments after it, up to the next line.
        span.end = p
            .clone()
            .into_inner()
            .map(|it| self.offset + it.as_span().end())
            .max()
            .unwrap_or(span.end);
        let mut name = None;
        let mut select = Vec::new();
        let mut baseline: Option<Baseline> = None;
        for it in p.into_inner() {
            match (it.as_rule(), &mut baseline) {
                (Rule::ident, _) if name.is_none() => name = Some(self.ident(it)),
                (Rule::ident, _) => {
                    let lock = self.ident(it);
                    baseline = Some(Baseline {
                        span: lock.span,
                        lock,
                        select: Vec::new(),
                    })
                }
                (Rule::selector, Some(b)) => {
                    let sel = self.selector(it);
                    b.span.end = sel.span.end;
                    b.select = sel.items;
                }
                (Rule::selector, None) => select = self.selector(it).items,
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

pub(super) fn unescape(s: &str) -> String {
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
