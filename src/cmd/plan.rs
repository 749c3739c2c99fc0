//! `locklab plan FILE`: the expanded points, the count and the estimated run time;
//! `--emit slurm` writes a job-array script that runs the sweep in shards (`slurm`).

use super::{estimate_secs, timing, Timing};
use crate::cli::{Emit, LoadArgs, PlanFormat, SlurmArgs};
use crate::exit::{self, Result, WithCode};
use crate::util::human_secs;
use locklab_model::plan::{Mode, Plan};
use std::fmt::Write as _;
use std::path::Path;

pub fn run(
    file: &Path,
    format: PlanFormat,
    load: &LoadArgs,
    quick: bool,
    slurm: &SlurmArgs,
) -> Result<i32> {
    let plan = super::load_experiment(file, load, quick)?;
    let t = timing(&plan, quick);
    let jobs = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    if let Some(Emit::Slurm) = slurm.emit {
        if format == PlanFormat::Json {
            // The script is the output: a JSON object around it would be neither.
            return Err(crate::exit::Failure::new(
                exit::INVALID_INPUT,
                anyhow::anyhow!("--emit slurm prints a shell script: --format json does not apply"),
            ));
        }
        return super::slurm::emit(file, &plan, load, quick, slurm);
    }
    match format {
        PlanFormat::Json => {
            let estimates: serde_json::Map<String, serde_json::Value> = plan
                .run
                .modes
                .iter()
                .map(|&m| {
                    (
                        m.as_str().to_string(),
                        serde_json::json!(estimate_secs(&plan, t, m, jobs)),
                    )
                })
                .collect();
            let doc = serde_json::json!({
                "experiment": plan.experiment,
                "point_count": plan.points.len(),
                "duration_ns": t.duration_ns,
                "warmup_ns": t.warmup_ns,
                "repetitions": t.repetitions,
                "estimated_seconds": estimates,
                "plan": plan,
            });
            println!(
                "{}",
                serde_json::to_string_pretty(&doc).code(exit::RUN_FAILED)?
            );
        }
        PlanFormat::Table => print!("{}", table(&plan, t, jobs)),
    }
    Ok(exit::OK)
}

fn table(plan: &Plan, t: Timing, jobs: usize) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "experiment {}: {} points × {} repetitions",
        plan.experiment,
        plan.points.len(),
        t.repetitions
    );
    let _ = writeln!(
        s,
        "each repetition: {} warm-up + {} measured",
        locklab_model::units::duration_label(t.warmup_ns),
        locklab_model::units::duration_label(t.duration_ns)
    );
    for &m in &plan.run.modes {
        let note = match m {
            Mode::Sim => format!(" ({jobs} jobs)"),
            Mode::Native => String::new(),
        };
        let _ = writeln!(
            s,
            "estimated {}: {}{note}",
            m.as_str(),
            human_secs(estimate_secs(plan, t, m, jobs))
        );
    }
    let not_drawn = plan.plots.iter().filter(|p| p.skipped.is_some()).count();
    let _ = writeln!(
        s,
        "{} claims, {} plots{}",
        plan.claims.len(),
        plan.plots.len(),
        match not_drawn {
            0 => String::new(),
            n => format!(" ({n} not drawn: `--set` leaves nothing of them)"),
        }
    );
    // Claims `--set` narrowed away: undecided, so they matter to the exit code.
    let skipped: Vec<_> = plan
        .claims
        .iter()
        .filter_map(|c| c.skipped.as_ref().map(|why| (c, why)))
        .collect();
    if !skipped.is_empty() {
        let gating = skipped.iter().filter(|(c, _)| c.gating).count();
        let effect = match gating {
            0 => "none gating".to_string(),
            n => format!("{n} gating: the run exits 5 unless --accept-undecided"),
        };
        let _ = writeln!(s, "{} skipped ({effect}):", skipped.len());
        for (c, why) in skipped {
            let _ = writeln!(s, "  {}: {why}", c.id);
        }
    }
    s.push('\n');
    let axes: Vec<&str> = plan.axes.iter().map(|a| a.name.as_str()).collect();
    // The resolved columns a sweep axis does not already show (`threads = [..]` and
    // `lock = [..]` are axes and resolved values at once).
    let has = |name: &str| axes.contains(&name);
    let mut rows: Vec<Vec<String>> = vec![{
        let mut h = vec!["#".to_string()];
        h.extend(axes.iter().map(|a| a.to_string()));
        for (col, shown) in [("threads", has("threads")), ("lock", has("lock"))] {
            if !shown {
                h.push(col.into());
            }
        }
        // A `workload` axis names the workload; the column then gives its kind.
        let kind = if has("workload") { "kind" } else { "workload" };
        h.extend([kind, "seed"].map(String::from));
        h
    }];
    for p in &plan.points {
        let mut r = vec![p.index.to_string()];
        r.extend(
            axes.iter()
                .map(|a| p.axes.get(*a).map(|v| v.label()).unwrap_or_default()),
        );
        if !has("threads") {
            r.push(p.threads.to_string());
        }
        if !has("lock") {
            r.push(p.lock.name.clone());
        }
        r.push(p.workload.kind_name().to_string());
        r.push(format!("{:016x}", p.seed));
        rows.push(r);
    }
    let widths: Vec<usize> = (0..rows[0].len())
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    for (i, r) in rows.iter().enumerate() {
        let line: Vec<String> = r
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        let _ = writeln!(s, "{}", line.join("  ").trim_end());
        if i == 0 {
            let _ = writeln!(
                s,
                "{}",
                widths
                    .iter()
                    .map(|w| "-".repeat(*w))
                    .collect::<Vec<_>>()
                    .join("  ")
            );
        }
    }
    s
}
