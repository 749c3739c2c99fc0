//! The results as claims read them: the repetitions of each (point, mode) in the
//! points table, and the thread and hand-off rows of one point, combined per
//! repetition. Which point, rows and mode to read is the plan's ([`Target`]);
//! this only finds them and says when they are missing.
//!
//! [`Target`]: locklab_model::plan::Target

use super::terms::{Res, Why};
use crate::error::{Error, Result};
use crate::pipeline::{f64_values, str_values};
use crate::store::Results;
use locklab_model::metrics::Table;
use locklab_model::plan::{Mode, Plan, Value};
use locklab_model::units;
use polars::prelude::*;
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Whether a point ran in a mode.
pub(super) enum Ran {
    /// The results hold no record of it.
    No,
    /// Every repetition was skipped, for this reason.
    Skipped(String),
    Yes,
}

pub(super) struct Ctx<'a> {
    pub(super) plan: &'a Plan,
    results: &'a Results,
    /// The points table, sorted by point, mode and repetition.
    points: DataFrame,
    /// Row indices of `points` by (point, mode).
    rows: BTreeMap<(u32, Mode), Vec<usize>>,
    skipped: Vec<Option<String>>,
    /// Rows the noise gate flagged (a native repetition that lost its CPU).
    flagged: Vec<bool>,
    /// Per row, whether `wait_max_ns` and `bypass_max` are lower bounds (they came
    /// from a wait cut off by the end of the window).
    lower_bounds: Vec<(bool, bool)>,
    /// The modes these results hold, sim first.
    pub(super) modes: Vec<Mode>,
    cache: RefCell<HashMap<String, Vec<f64>>>,
}

fn mode_named(s: &str) -> Option<Mode> {
    [Mode::Sim, Mode::Native]
        .into_iter()
        .find(|m| m.as_str() == s)
}

impl<'a> Ctx<'a> {
    pub(super) fn new(plan: &'a Plan, results: &'a Results) -> Result<Self> {
        let points = results
            .points
            .clone()
            .drop(cols(["wait_cdf_ns"]))
            .sort(["point", "mode", "rep"], SortMultipleOptions::default())
            .collect()
            .map_err(Error::polars("read the points table for claims"))?;
        let pidx = f64_values(&points, "point")?;
        let modes_col = str_values(&points, "mode")?;
        let skipped = points
            .column("skipped")
            .and_then(|c| c.str().cloned())
            .map_err(Error::polars("read the skipped column"))?
            .iter()
            .map(|s| s.map(str::to_string))
            .collect();
        let flagged = str_values(&points, "noise")?
            .iter()
            .map(|n| n.starts_with("flagged"))
            .collect();
        // Results written before waits were censored have no such columns.
        let marks = |name: &str| -> Result<Vec<bool>> {
            if points.column(name).is_err() {
                return Ok(vec![false; points.height()]);
            }
            Ok(str_values(&points, name)?
                .iter()
                .map(|v| v == "true")
                .collect())
        };
        let lower_bounds = marks("wait_max_censored")?
            .into_iter()
            .zip(marks("bypass_max_censored")?)
            .collect();
        let mut rows: BTreeMap<(u32, Mode), Vec<usize>> = BTreeMap::new();
        for (i, m) in modes_col.iter().enumerate() {
            if let Some(mode) = mode_named(m) {
                rows.entry((pidx[i] as u32, mode)).or_default().push(i);
            }
        }
        let modes: Vec<Mode> = rows
            .keys()
            .map(|(_, m)| *m)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        Ok(Ctx {
            plan,
            results,
            points,
            rows,
            skipped,
            flagged,
            lower_bounds,
            modes,
            cache: RefCell::new(HashMap::new()),
        })
    }

    /// The point's id, for messages.
    pub(super) fn id(&self, p: u32) -> &str {
        &self.plan.points[p as usize].id
    }

    pub(super) fn ran(&self, p: u32, mode: Mode) -> Ran {
        let Some(rows) = self.rows.get(&(p, mode)) else {
            return Ran::No;
        };
        if rows.iter().all(|&r| self.skipped[r].is_some()) {
            return Ran::Skipped(self.skipped[rows[0]].clone().unwrap_or_default());
        }
        Ran::Yes
    }

    /// Did the noise gate flag a repetition of point `p` in `mode` that ran?
    pub(super) fn flagged(&self, p: u32, mode: Mode) -> bool {
        self.rows.get(&(p, mode)).is_some_and(|rows| {
            rows.iter()
                .any(|&r| self.skipped[r].is_none() && self.flagged[r])
        })
    }

    /// Is the points-table `metric` of point `p` in `mode` a lower bound in some
    /// repetition (`wait_max_ns` or `bypass_max` from a wait cut off by the window)?
    pub(super) fn lower_bound(&self, p: u32, mode: Mode, metric: &str) -> bool {
        let pick = match metric {
            "wait_max_ns" => |b: &(bool, bool)| b.0,
            "bypass_max" => |b: &(bool, bool)| b.1,
            _ => return false,
        };
        self.rows.get(&(p, mode)).is_some_and(|rows| {
            rows.iter()
                .any(|&r| self.skipped[r].is_none() && pick(&self.lower_bounds[r]))
        })
    }

    fn column(&self, name: &str) -> Res<Vec<f64>> {
        if let Some(v) = self.cache.borrow().get(name) {
            return Ok(v.clone());
        }
        if self.points.column(name).is_err() {
            // An optional metric no point of these results measured (a wake-up
            // metric of another workload).
            return Err(Why::Error(format!(
                "{name} is not measured by any point of these results"
            )));
        }
        let v = f64_values(&self.points, name).map_err(|e| Why::Error(e.to_string()))?;
        self.cache.borrow_mut().insert(name.to_string(), v.clone());
        Ok(v)
    }

    /// The repetitions [`Self::point_samples`] gives values of, in its order.
    pub(super) fn point_reps(&self, p: u32, mode: Mode) -> Res<Vec<u32>> {
        Ok(self
            .point_samples(p, mode, "rep")?
            .into_iter()
            .map(|r| r as u32)
            .collect())
    }

    /// Repetition values of a points-table metric (skipped repetitions left out).
    pub(super) fn point_samples(&self, p: u32, mode: Mode, metric: &str) -> Res<Vec<f64>> {
        let col = self.column(metric)?;
        Ok(self
            .rows
            .get(&(p, mode))
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .filter(|&&r| self.skipped[r].is_none())
            .map(|&r| col[r])
            .collect())
    }

    /// The rows of the row table `table` (threads or hand-offs) of point `p` in
    /// `mode` that `rows` selects.
    fn row_frame(&self, table: Table, p: u32, mode: Mode, rows: &[(String, Value)]) -> LazyFrame {
        let lf = if table == Table::Handoffs {
            self.results.handoffs.clone()
        } else {
            self.results.threads.clone()
        };
        let mut pred = col("point")
            .cast(DataType::UInt32)
            .eq(lit(p))
            .and(col("mode").eq(lit(mode.as_str())));
        for (k, v) in rows {
            pred = pred.and(match v {
                Value::Bool(b) => col(k.as_str()).eq(lit(*b)),
                Value::Str(s) => col(k.as_str()).cast(DataType::String).eq(lit(s.clone())),
                other => col(k.as_str())
                    .cast(DataType::Float64)
                    .eq(lit(other.as_f64().unwrap_or(f64::NAN))),
            });
        }
        lf.filter(pred)
    }

    /// Per-repetition values of a thread or hand-off metric, combining the selected
    /// rows of each repetition (see [`crate::combine`]), with the repetitions they
    /// are of.
    pub(super) fn row_samples(
        &self,
        table: Table,
        p: u32,
        mode: Mode,
        metric: &str,
        rows: &[(String, Value)],
    ) -> Res<(Vec<u32>, Vec<f64>)> {
        let weight = table.weight_column();
        let mut sel = vec![
            col("rep"),
            col(metric).cast(DataType::Float64).alias("__v"),
            col(weight).cast(DataType::Float64).alias("__w"),
        ];
        if table == Table::Threads {
            sel.push(col("class"));
        }
        let df = self
            .row_frame(table, p, mode, rows)
            .select(sel)
            .sort(["rep"], SortMultipleOptions::default())
            .collect()
            .map_err(|e| Why::Error(format!("cannot read {metric}: {e}")))?;
        let what = if table == Table::Threads {
            "thread"
        } else {
            "hand-off"
        };
        if df.height() == 0 {
            let sel: Vec<String> = rows
                .iter()
                .map(|(k, v)| format!("{k}={}", v.label()))
                .collect();
            return Err(Why::Error(format!(
                "no {what} rows of point {} in mode {} match {}",
                self.id(p),
                mode.as_str(),
                sel.join(", ")
            )));
        }
        if table == Table::Threads {
            let classes: BTreeSet<String> = str_values(&df, "class")
                .map_err(|e| Why::Error(e.to_string()))?
                .into_iter()
                .collect();
            if classes.len() > 1 {
                return Err(Why::Error(format!(
                    "{metric} of point {} matches the wait classes {}; add class=...",
                    self.id(p),
                    classes.into_iter().collect::<Vec<_>>().join(", ")
                )));
            }
        }
        let reps = f64_values(&df, "rep").map_err(|e| Why::Error(e.to_string()))?;
        let v = f64_values(&df, "__v").map_err(|e| Why::Error(e.to_string()))?;
        let w = f64_values(&df, "__w").map_err(|e| Why::Error(e.to_string()))?;
        let (mut of, mut out) = (Vec::new(), Vec::new());
        let mut i = 0;
        while i < reps.len() {
            let mut j = i;
            while j < reps.len() && reps[j] == reps[i] {
                j += 1;
            }
            of.push(reps[i] as u32);
            out.push(crate::combine::values(metric, &v[i..j], &w[i..j]));
            i = j;
        }
        Ok((of, out))
    }

    /// The values the selected rows of point `p` hold of the row dimension `dim`
    /// (`thread`, `cpu`, `node`), ascending.
    pub(super) fn dim_values(
        &self,
        table: Table,
        p: u32,
        mode: Mode,
        dim: &str,
        rows: &[(String, Value)],
    ) -> Res<Vec<Value>> {
        let df = self
            .row_frame(table, p, mode, rows)
            .select([col(dim).cast(DataType::Float64).alias("v")])
            .unique(None, UniqueKeepStrategy::Any)
            .sort(["v"], SortMultipleOptions::default())
            .collect()
            .map_err(|e| Why::Error(format!("cannot list the values of {dim}: {e}")))?;
        Ok(f64_values(&df, "v")
            .map_err(|e| Why::Error(e.to_string()))?
            .into_iter()
            .map(|f| Value::Int(f as i64))
            .collect())
    }

    /// Why `metric` has no value in any repetition of point `p`: CPU time in a
    /// simulation whose records hold none (a wake-up workload, or a build before
    /// simulated records held CPU time) or windowed fairness switched off is an
    /// error in the claim; a run too short or too quiet to measure it is not.
    pub(super) fn not_measured(&self, p: u32, mode: Mode, metric: &str) -> Why {
        let id = self.id(p);
        let mode_s = mode.as_str();
        let first = |col: &str| {
            self.point_samples(p, mode, col)
                .ok()
                .and_then(|v| v.into_iter().find(|x| x.is_finite()))
        };
        let cpu_metrics = ["cpu_wall_ratio", "cpu_ns_per_acq", "overhead_ns"];
        if mode == Mode::Sim && cpu_metrics.contains(&metric) && first("cpu_wall_ratio").is_none() {
            return Why::Error(format!(
                "{metric} is not measured in simulation for this point: its records hold no CPU time (a wake-up workload's tasks sleep by design; simulations by a build before 6 December 2026 recorded none); point {id} has no value in any repetition"
            ));
        }
        let dur = |ns: f64| units::duration_label(ns.max(0.0).round() as u64);
        if metric.starts_with("window_") {
            match (first("window_ns"), first("fairness_window_ns")) {
                (_, Some(f)) if f <= 0.0 => {
                    return Why::Error(format!(
                        "{metric} is not measured: point {id} has no fairness window"
                    ))
                }
                (Some(w), Some(f)) if f > w => {
                    return Why::NotMeasured(format!(
                        "not measured: the measured window ({}) is shorter than one fairness window ({}), so point {id} has no full window in mode {mode_s}; a longer duration would measure {metric}",
                        dur(w),
                        dur(f)
                    ))
                }
                _ => {}
            }
        }
        let window = first("window_ns")
            .map(|w| format!(" in its measured window of {}", dur(w)))
            .unwrap_or_default();
        Why::NotMeasured(format!(
            "not measured: {metric} has no value in any repetition of point {id} in mode {mode_s} (nothing to measure it from{window}); a longer run would decide"
        ))
    }
}
