//! `locklab trace FILE`: the memory requests of one simulated point in a window of
//! virtual time, each as the simulator priced it: who asked for which line, who held
//! it, when the asker could go on, when others saw it. What to read when a simulated
//! number needs explaining (docs/simulator.md, "Reading a trace").

use crate::cli::{LoadArgs, PlanFormat};
use crate::exit::{self, Failure, Result, WithCode};
use anyhow::anyhow;
use locklab_model::plan::Plan;
use locklab_model::units::duration_label;
use locklab_runner::sim::{trace_point, PointTrace, TraceEvent};
use std::fmt::Write as _;
use std::path::Path;

/// The longest window traced: a busy point issues a request every few ns.
const MAX_WINDOW_NS: u64 = 10_000_000;

pub fn run(
    file: &Path,
    load: &LoadArgs,
    point: Option<&str>,
    rep: u32,
    from: Option<u64>,
    span: u64,
    format: PlanFormat,
) -> Result<i32> {
    let invalid = |msg: String| Failure::new(exit::INVALID_INPUT, anyhow!(msg));
    let plan = super::load_experiment(file, load, false)?;
    let p = pick(&plan, point).map_err(invalid)?;
    let t = super::timing(&plan, false);
    if rep >= t.repetitions {
        return Err(invalid(format!(
            "--rep {rep}: the experiment runs {} repetition(s), numbered from 0",
            t.repetitions
        )));
    }
    if span == 0 || span > MAX_WINDOW_NS {
        return Err(invalid(format!(
            "--for must be above 0 and at most {}",
            duration_label(MAX_WINDOW_NS)
        )));
    }
    let end = t.warmup_ns.saturating_add(t.duration_ns);
    let from = from.unwrap_or(t.warmup_ns);
    if from >= end {
        return Err(invalid(format!(
            "--from {}: the experiment's run ends at {} (warm-up and measured window)",
            duration_label(from),
            duration_label(end)
        )));
    }
    let trace = trace_point(&plan, p, rep, from, span)
        .map_err(|why| invalid(format!("point {} cannot be traced: {why}", p.id)))?;
    match format {
        PlanFormat::Json => {
            let doc = serde_json::json!({
                "experiment": plan.experiment,
                "point": p.id,
                "rep": rep,
                "from_ns": from,
                "to_ns": from.saturating_add(span),
                "cpus": trace.cpus,
                "deadlocked_at_ns": trace.deadlocked_at,
                "lock_lines": trace.lock_lines,
                "events": trace.events,
            });
            println!(
                "{}",
                serde_json::to_string_pretty(&doc).code(exit::RUN_FAILED)?
            );
        }
        PlanFormat::Table => print!("{}", table(&plan, &p.id, rep, from, span, &trace)),
    }
    Ok(exit::OK)
}

/// The point `id` names, or the only one.
fn pick<'a>(
    plan: &'a Plan,
    id: Option<&str>,
) -> std::result::Result<&'a locklab_model::plan::Point, String> {
    match id {
        Some(id) => plan.points.iter().find(|p| p.id == id).ok_or_else(|| {
            let near: Vec<&str> = plan
                .points
                .iter()
                .map(|p| p.id.as_str())
                .filter(|p| id.split(',').all(|kv| p.split(',').any(|x| x == kv)))
                .take(3)
                .collect();
            match near.as_slice() {
                [] => format!(
                    "no point `{id}` in experiment `{}` (`locklab plan` lists its {} points)",
                    plan.experiment,
                    plan.points.len()
                ),
                _ => format!(
                    "no point `{id}` in experiment `{}`; points with those values: {}",
                    plan.experiment,
                    near.join("; ")
                ),
            }
        }),
        None => match plan.points.as_slice() {
            [p] => Ok(p),
            ps => Err(format!(
                "experiment `{}` has {} points: name one with --point (as `locklab plan` lists them, e.g. {}), or narrow the sweep with --set",
                plan.experiment,
                ps.len(),
                ps.first().map_or("", |p| p.id.as_str())
            )),
        },
    }
}

/// A line's name: `L<n>` for the locks' own lines, `D<n>` for the workload's data.
fn line_name(line: u32, lock_lines: u32) -> String {
    if line < lock_lines {
        format!("L{line}")
    } else {
        format!("D{}", line - lock_lines)
    }
}

fn table(plan: &Plan, id: &str, rep: u32, from: u64, span: u64, t: &PointTrace) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "point {id} of experiment {} (repetition {rep}), simulated; requests from {from} up to {} ns of virtual time ({} from the start)",
        plan.experiment,
        from.saturating_add(span),
        duration_label(from)
    );
    let cpus: Vec<String> = t
        .cpus
        .iter()
        .enumerate()
        .map(|(i, c)| format!("T{i} on CPU {c}"))
        .collect();
    let _ = writeln!(s, "threads: {}", cpus.join(", "));
    let _ = writeln!(
        s,
        "lines: L0..L{} the locks' own, D0.. the workload's data\n\
         from: the line's holder (modified or exclusive) when asked, or how many held a copy\n\
         +ns: how long the thread waited; seen: when its write is visible to others (a store's commit), or a prefetch's data arrives",
        t.lock_lines.saturating_sub(1)
    );
    if let Some(at) = t.deadlocked_at {
        let _ = writeln!(
            s,
            "the simulated threads deadlocked at {at} ns (every thread waiting on a line no one will write): nothing happens after it"
        );
    }
    if t.events.is_empty() {
        let _ = writeln!(s, "\nno request in this window");
        return s;
    }
    let _ = writeln!(
        s,
        "\n{:>12}  {:<6} {:<8} {:<5} {:<9} {:>6} {:>12}",
        "at ns", "thread", "op", "line", "from", "+ns", "seen"
    );
    for e in &t.events {
        let _ = writeln!(s, "{}", row(e, t.lock_lines));
    }
    let _ = writeln!(s, "{} events", t.events.len());
    s
}

fn row(e: &TraceEvent, lock_lines: u32) -> String {
    let thread = format!("T{}", e.thread);
    let Some(line) = e.line else {
        let what = match e.lock {
            Some(l) => format!("{} lock {l}", e.op),
            None => e.op.to_string(),
        };
        return format!("{:>12}  {thread:<6} {what}", e.at_ns);
    };
    let from = match (e.holder, e.copies) {
        (Some(h), _) if h == e.thread => "own".to_string(),
        (Some(h), _) => format!("T{h}"),
        (None, 0) => "-".to_string(),
        (None, n) => format!("{n} copies"),
    };
    // A request that flew to the holder first was issued that much earlier.
    let waited = e.done_ns.saturating_sub(e.at_ns) + e.flew_ns;
    let seen = if e.visible_ns != e.done_ns {
        e.visible_ns.to_string()
    } else {
        String::new()
    };
    format!(
        "{:>12}  {thread:<6} {:<8} {:<5} {from:<9} {:>6} {seen:>12}{}{}",
        e.at_ns,
        e.op,
        line_name(line, lock_lines),
        waited,
        if e.miss { "  miss" } else { "" },
        if !e.flew_ns.is_zero() {
            format!(", issued {} ns before (its flight)", e.flew_ns)
        } else {
            String::new()
        }
    )
}
