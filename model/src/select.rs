//! Selection over a plan, defined once: does a point match a selector
//! ([`matches`]), along which axes do points differ ([`varying_axes`]), which
//! point is a point's baseline ([`baseline`]), and which stored table a reference's
//! row selectors read ([`table`]).
//!
//! The language resolves every metric reference with these and records the result
//! in [`crate::plan::Target`]; the analysis reads the targets, and anyone can check
//! them against the plan alone.
//!
//! ```
//! use locklab_model::plan::Value;
//! use locklab_model::select::same_value;
//! assert!(same_value(&Value::Int(4), &Value::Float(4.0)));
//! assert!(!same_value(&Value::Int(4), &Value::Str("4".into())));
//! ```

use crate::metrics::{self, Metric, Table};
use crate::plan::{Axis, Mode, Point, Value, ROW_DIMENSIONS};

/// Two axis or selector values are the same: numbers by value (`4` is `4.0`),
/// everything else by type and value.
pub fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Int(_) | Value::Float(_), Value::Int(_) | Value::Float(_)) => {
            a.as_f64() == b.as_f64()
        }
        _ => a == b,
    }
}

/// True for the selector keys that pick rows of a point's thread or hand-off table
/// (`thread`, `cpu`, `node`, `class`, `from_node`, `to_node`, `cross_node`) rather
/// than points.
pub fn is_row_key(key: &str) -> bool {
    ROW_DIMENSIONS.contains(&key)
}

/// The table whose rows a row dimension picks: `thread`, `cpu`, `node` and `class`
/// rows of the thread table, `from_node`, `to_node` and `cross_node` rows of the
/// hand-off table. `None` for anything else.
pub fn row_table(key: &str) -> Option<Table> {
    match key {
        "thread" | "cpu" | "node" | "class" => Some(Table::Threads),
        "from_node" | "to_node" | "cross_node" => Some(Table::Handoffs),
        _ => None,
    }
}

/// Why a metric cannot be read from the rows a selection picks.
#[derive(Debug, Clone, PartialEq)]
pub enum NoTable {
    /// The selection names dimensions of both row tables (`cpu` and `cross_node`).
    Mixed { thread: String, handoff: String },
    /// The selection picks rows of `table` (by `key`), which has no column for
    /// `metric`.
    NotIn {
        metric: String,
        table: Table,
        key: String,
    },
}

impl std::fmt::Display for NoTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoTable::Mixed { thread, handoff } => write!(
                f,
                "`{thread}` selects thread rows and `{handoff}` hand-off rows; a reference reads one table"
            ),
            NoTable::NotIn { metric, table, key } => {
                let (rows, what) = match table {
                    Table::Threads => ("thread", "per thread"),
                    Table::Handoffs => ("hand-off", "per hand-off pair"),
                    Table::Points => ("point", "per point"),
                };
                let names: Vec<&str> = metrics::in_table(*table).map(|m| m.name).collect();
                write!(
                    f,
                    "`{key}` selects {rows} rows, which do not measure `{metric}`; {what}: {}",
                    names.join(", ")
                )
            }
        }
    }
}

/// The table a reference to `metric` reads, given its row-dimension selectors
/// (`rows`, as in [`crate::plan::Target::rows`]): the row table they name; without
/// any, the points table when it holds the metric, else the first table that does
/// (`share` over every thread, `count` over every hand-off pair). A derived metric
/// (`speedup`) is computed from the points table.
pub fn table(metric: &Metric, rows: &[(String, Value)]) -> Result<Table, NoTable> {
    let named = |t: Table| rows.iter().find(|(k, _)| row_table(k) == Some(t));
    let (key, table) = match (named(Table::Threads), named(Table::Handoffs)) {
        (Some((thread, _)), Some((handoff, _))) => {
            return Err(NoTable::Mixed {
                thread: thread.clone(),
                handoff: handoff.clone(),
            })
        }
        (Some((key, _)), None) => (key, Table::Threads),
        (None, Some((key, _))) => (key, Table::Handoffs),
        (None, None) if metric.in_table(Table::Points) || metric.is_derived() => {
            return Ok(Table::Points)
        }
        (None, None) => return Ok(metric.tables[0]),
    };
    if !metric.in_table(table) {
        return Err(NoTable::NotIn {
            metric: metric.name.into(),
            table,
            key: key.clone(),
        });
    }
    Ok(table)
}

/// Does `p` run in `mode`? A point without modes (a plan written before points
/// had them) runs in every mode of its run.
pub fn runs_in(p: &Point, mode: Mode) -> bool {
    p.modes.is_empty() || p.modes.contains(&mode)
}

/// Does `p` satisfy the point-level keys of `select`? `mode = m` holds when `p` runs
/// in mode `m`; a sweep axis holds when `p` takes that value of it. Row dimensions
/// select rows within a point and are ignored here.
pub fn matches(p: &Point, select: &[(String, Value)]) -> bool {
    select.iter().all(|(key, want)| {
        if key == "mode" {
            return [Mode::Sim, Mode::Native]
                .into_iter()
                .any(|m| Value::Str(m.as_str().into()) == *want && runs_in(p, m));
        }
        if is_row_key(key) {
            return true;
        }
        p.axes.get(key).is_some_and(|v| same_value(v, want))
    })
}

/// The axes, in plan order, along which `points` take more than one value.
pub fn varying_axes<'a>(axes: &'a [Axis], points: &[&Point]) -> Vec<&'a str> {
    axes.iter()
        .map(|a| a.name.as_str())
        .filter(|name| {
            let mut values = points.iter().map(|p| p.axes.get(*name));
            let first = values.next().flatten();
            values.any(|v| !same_opt(v, first))
        })
        .collect()
}

fn same_opt(a: Option<&Value>, b: Option<&Value>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => same_value(a, b),
        (None, None) => true,
        _ => false,
    }
}

/// Which point is `p`'s baseline, and how it may differ from `p`.
#[derive(Debug, Clone, Copy)]
pub struct BaselineQuery<'a> {
    /// The baseline lock's name (`over stock`).
    pub lock: &'a str,
    /// Axes pinned to other values than `p`'s (`over stock[threads = 4]`).
    pub pinned: &'a [(String, Value)],
}

/// Why a point has no baseline.
#[derive(Debug, Clone, PartialEq)]
pub enum NoBaseline {
    /// No point of the plan runs the baseline lock.
    NoLock,
    /// Points of the baseline lock exist, but none agrees with `p` on the axes it
    /// must share. `nearest` are the lock's points that come closest (indices into
    /// the plan's points), `differ` the axes in which they differ from `p`.
    NoMatch {
        nearest: Vec<usize>,
        differ: Vec<String>,
    },
    /// Several points qualify and not exactly one of them agrees with `p` on every
    /// axis; `differ` are the axes that separate them.
    Ambiguous {
        candidates: Vec<usize>,
        differ: Vec<String>,
    },
}

/// The baseline rule: the baseline point of `p` runs `query.lock` and differs from
/// `p` only
///
/// * in the lock (the axis that chose it, [`crate::plan::LockSpec::axis`]);
/// * in `p`'s lock's own parameters: axes `p`'s lock definition reads and the
///   baseline's does not ([`crate::plan::LockSpec::params`]; a stock lock run once
///   at one CNA threshold serves CNA at every threshold);
/// * in the pinned axes, where it takes the pinned value instead of `p`'s.
///
/// When several points qualify (the baseline lock runs at several values of an
/// own parameter of `p`'s lock), the one equal to `p` on every axis wins. Returns
/// an index into `points`.
pub fn baseline(
    axes: &[Axis],
    points: &[Point],
    p: &Point,
    query: &BaselineQuery,
) -> Result<usize, NoBaseline> {
    let of_lock: Vec<&Point> = points
        .iter()
        .filter(|q| q.lock.name == query.lock)
        .collect();
    if of_lock.is_empty() {
        return Err(NoBaseline::NoLock);
    }
    let pinned = |name: &str| query.pinned.iter().find(|(k, _)| k == name).map(|kv| &kv.1);
    let lock_axis = p.lock.axis.as_deref();
    // The axes `q` must share with `p` (or take the pinned value of), and those it
    // may leave: the lock's axis and `p`'s lock's own parameters.
    let binding = |q: &Point| -> Vec<&str> {
        axes.iter()
            .map(|a| a.name.as_str())
            .filter(|name| {
                pinned(name).is_some()
                    || !(Some(*name) == lock_axis
                        || p.lock.params.iter().any(|x| x == name)
                            && !q.lock.params.iter().any(|x| x == name))
            })
            .collect()
    };
    let misses = |q: &Point, names: &[&str]| -> Vec<String> {
        names
            .iter()
            .filter(|name| {
                let want = pinned(name).or_else(|| p.axes.get(**name));
                !same_opt(q.axes.get(**name), want)
            })
            .map(|name| name.to_string())
            .collect()
    };
    let candidates: Vec<&Point> = of_lock
        .iter()
        .copied()
        .filter(|q| misses(q, &binding(q)).is_empty())
        .collect();
    match candidates.as_slice() {
        [one] => return Ok(one.index),
        [] => {
            let scored: Vec<(&Point, Vec<String>)> = of_lock
                .iter()
                .map(|q| (*q, misses(q, &binding(q))))
                .collect();
            let fewest = scored.iter().map(|(_, m)| m.len()).min().unwrap_or(0);
            let nearest: Vec<&(&Point, Vec<String>)> =
                scored.iter().filter(|(_, m)| m.len() == fewest).collect();
            let differ = in_axis_order(axes, nearest.iter().flat_map(|(_, m)| m.iter()));
            return Err(NoBaseline::NoMatch {
                nearest: nearest.iter().map(|(q, _)| q.index).collect(),
                differ,
            });
        }
        _ => {}
    }
    // Several: prefer the one equal to `p` on every axis but the lock's and the
    // pinned ones.
    let all: Vec<&str> = axes
        .iter()
        .map(|a| a.name.as_str())
        .filter(|name| Some(*name) != lock_axis)
        .collect();
    let exact: Vec<&Point> = candidates
        .iter()
        .copied()
        .filter(|q| misses(q, &all).is_empty())
        .collect();
    if let [one] = exact.as_slice() {
        return Ok(one.index);
    }
    let left = if exact.is_empty() { candidates } else { exact };
    let differ = varying_axes(axes, &left)
        .into_iter()
        .map(str::to_string)
        .collect();
    Err(NoBaseline::Ambiguous {
        candidates: left.iter().map(|q| q.index).collect(),
        differ,
    })
}

fn in_axis_order<'a>(
    axes: &[Axis],
    names: impl Iterator<Item = &'a String> + Clone,
) -> Vec<String> {
    axes.iter()
        .filter(|a| names.clone().any(|n| *n == a.name))
        .map(|a| a.name.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{CnaParams, CnaVariant, Dist};
    use crate::plan::{LockAlgo, LockSpec, Placement, PlacementKind, Workload};
    use std::collections::BTreeMap;

    fn axis(name: &str, values: Vec<Value>) -> Axis {
        Axis {
            name: name.into(),
            values,
            zip_group: None,
        }
    }

    fn point(index: usize, lock: &str, params: &[&str], axes: &[(&str, Value)]) -> Point {
        let algo = if params.is_empty() {
            LockAlgo::Qspinlock {
                pending_loops: None,
            }
        } else {
            LockAlgo::Cna(CnaParams {
                threshold_ns: 1,
                variant: CnaVariant::V15,
                shuffle_skip_prob: 0.0,
            })
        };
        Point {
            index,
            id: format!("p{index}"),
            axes: axes
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect::<BTreeMap<_, _>>(),
            seed: 0,
            threads: 1,
            lock: LockSpec {
                name: lock.into(),
                algo,
                axis: Some("lock".into()),
                params: params.iter().map(|s| s.to_string()).collect(),
            },
            workload: Workload::SingleLock {
                critical: Dist::Fixed { ns: 1 },
                outside: Dist::Fixed { ns: 1 },
                lines: 1,
            },
            placement: Placement {
                policy: PlacementKind::Compact,
                virtual_nodes: None,
            },
            modes: vec![Mode::Sim],
        }
    }

    fn s(x: &str) -> Value {
        Value::Str(x.into())
    }

    /// stock runs only at threshold 10 (`where lock != stock || threshold == 10`);
    /// cna reads `$threshold`.
    fn cna_plan() -> (Vec<Axis>, Vec<Point>) {
        let axes = vec![
            axis("lock", vec![s("stock"), s("cna")]),
            axis("threshold", vec![Value::Int(10), Value::Int(1)]),
            axis("threads", vec![Value::Int(1), Value::Int(4)]),
        ];
        let mut points = Vec::new();
        for t in [10, 1] {
            for n in [1, 4] {
                let (lock, params): (&str, &[&str]) = ("cna", &["threshold"]);
                let i = points.len();
                points.push(point(
                    i,
                    lock,
                    params,
                    &[
                        ("lock", s(lock)),
                        ("threshold", Value::Int(t)),
                        ("threads", Value::Int(n)),
                    ],
                ));
            }
        }
        for n in [1, 4] {
            let i = points.len();
            points.push(point(
                i,
                "stock",
                &[],
                &[
                    ("lock", s("stock")),
                    ("threshold", Value::Int(10)),
                    ("threads", Value::Int(n)),
                ],
            ));
        }
        (axes, points)
    }

    #[test]
    fn an_own_parameter_may_differ() {
        let (axes, points) = cna_plan();
        let q = BaselineQuery {
            lock: "stock",
            pinned: &[],
        };
        // cna at threshold 1, 4 threads -> stock at threshold 10, 4 threads.
        let b = baseline(&axes, &points, &points[3], &q).unwrap();
        assert_eq!(points[b].axes["threads"], Value::Int(4));
        assert_eq!(points[b].lock.name, "stock");
    }

    #[test]
    fn other_axes_must_agree_unless_pinned() {
        let axes = vec![
            axis("lock", vec![s("tas"), s("ticket")]),
            axis("threads", vec![Value::Int(1), Value::Int(4)]),
        ];
        let points = vec![
            point(
                0,
                "ticket",
                &[],
                &[("lock", s("ticket")), ("threads", Value::Int(1))],
            ),
            point(
                1,
                "ticket",
                &[],
                &[("lock", s("ticket")), ("threads", Value::Int(4))],
            ),
            point(
                2,
                "tas",
                &[],
                &[("lock", s("tas")), ("threads", Value::Int(4))],
            ),
        ];
        let q = BaselineQuery {
            lock: "tas",
            pinned: &[],
        };
        assert_eq!(
            baseline(&axes, &points, &points[0], &q),
            Err(NoBaseline::NoMatch {
                nearest: vec![2],
                differ: vec!["threads".into()]
            })
        );
        let pinned = [("threads".to_string(), Value::Int(4))];
        let q = BaselineQuery {
            lock: "tas",
            pinned: &pinned,
        };
        assert_eq!(baseline(&axes, &points, &points[0], &q), Ok(2));
        let q = BaselineQuery {
            lock: "mcs",
            pinned: &[],
        };
        assert_eq!(
            baseline(&axes, &points, &points[0], &q),
            Err(NoBaseline::NoLock)
        );
    }

    #[test]
    fn the_equal_point_wins_among_several() {
        // stock swept at every threshold: cna at threshold 1 takes stock at 1.
        let (axes, mut points) = cna_plan();
        let i = points.len();
        points.push(point(
            i,
            "stock",
            &[],
            &[
                ("lock", s("stock")),
                ("threshold", Value::Int(1)),
                ("threads", Value::Int(4)),
            ],
        ));
        let q = BaselineQuery {
            lock: "stock",
            pinned: &[],
        };
        assert_eq!(baseline(&axes, &points, &points[3], &q), Ok(i));
        // Without an equal one, two candidates are ambiguous: stock at 10 and at 5.
        points[i].axes.insert("threshold".into(), Value::Int(5));
        match baseline(&axes, &points, &points[3], &q) {
            Err(NoBaseline::Ambiguous { candidates, differ }) => {
                assert_eq!(candidates, [5, i]);
                assert_eq!(differ, ["threshold"]);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn row_selectors_pick_the_table() {
        let get = |m: &str| metrics::get(m).unwrap();
        let rows = |kv: &[(&str, Value)]| -> Vec<(String, Value)> {
            kv.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
        };
        let p99 = get("wait_p99_ns");
        assert_eq!(table(p99, &[]), Ok(Table::Points));
        assert_eq!(
            table(p99, &rows(&[("cpu", Value::Int(7))])),
            Ok(Table::Threads)
        );
        assert_eq!(
            table(p99, &rows(&[("cross_node", Value::Bool(true))])),
            Ok(Table::Handoffs)
        );
        assert_eq!(table(get("share"), &[]), Ok(Table::Threads));
        assert_eq!(table(get("count"), &[]), Ok(Table::Handoffs));
        assert_eq!(table(get("speedup"), &[]), Ok(Table::Points));
        let mixed = table(
            p99,
            &rows(&[("cpu", Value::Int(7)), ("cross_node", Value::Bool(true))]),
        );
        assert!(matches!(mixed, Err(NoTable::Mixed { .. })), "{mixed:?}");
        let e = table(get("throughput_ops_s"), &rows(&[("cpu", Value::Int(1))])).unwrap_err();
        assert!(e.to_string().contains("`cpu` selects thread rows"), "{e}");
        assert!(e.to_string().contains("share"), "{e}");
    }

    #[test]
    fn matching_and_varying() {
        let (axes, points) = cna_plan();
        let sel = [
            ("mode".to_string(), s("sim")),
            ("threads".to_string(), Value::Float(4.0)),
            ("cross_node".to_string(), Value::Bool(true)),
        ];
        let hits: Vec<&Point> = points.iter().filter(|p| matches(p, &sel)).collect();
        assert_eq!(hits.len(), 3);
        assert_eq!(varying_axes(&axes, &hits), ["lock", "threshold"]);
        let native = [("mode".to_string(), s("native"))];
        assert!(!points.iter().any(|p| matches(p, &native)));
    }
}
