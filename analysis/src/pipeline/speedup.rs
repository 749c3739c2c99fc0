//! Speedups: which point is each point's baseline (the language's rule, applied to
//! every point for the default figures), and the throughput ratio of each pair with
//! its bootstrap interval.

use super::*;

/// One speedup: a point over its baseline point (indices into the plan's points).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpeedupPair {
    pub point: u32,
    pub baseline: u32,
}

/// The language's baseline rule ([`select::baseline`], nothing pinned) for lock
/// `baseline`, applied to every point of the plan: the baseline lock's own points
/// pair with themselves; a point without exactly one baseline is left out. An
/// error when no point runs `baseline`.
pub fn baseline_pairs(plan: &Plan, baseline: &str) -> Result<Vec<SpeedupPair>> {
    let of_lock: Vec<&Point> = plan
        .points
        .iter()
        .filter(|p| p.lock.name == baseline)
        .collect();
    if of_lock.is_empty() {
        let names: BTreeSet<&str> = plan.points.iter().map(|p| p.lock.name.as_str()).collect();
        return Err(Error::Results(format!(
            "no point runs the baseline lock \"{baseline}\"; locks: {}",
            names.into_iter().collect::<Vec<_>>().join(", ")
        )));
    }
    let query = BaselineQuery {
        lock: baseline,
        pinned: &[],
    };
    // The rule compares a point with every point of the baseline lock; over
    // thousands of points that is quadratic. A baseline agrees with its point on
    // every axis but the point's lock axis and own parameters, whatever the
    // candidate: index the lock's points by those values, and let the rule decide
    // among the few that share them.
    type Index = HashMap<Vec<String>, Vec<Point>>;
    let mut indices: HashMap<Vec<&str>, Index> = HashMap::new();
    let key = |p: &Point, names: &[&str]| -> Vec<String> {
        names
            .iter()
            .map(|n| match p.axes.get(*n) {
                // Numbers by value, as `select::same_value` compares them.
                Some(v @ (Value::Int(_) | Value::Float(_))) => {
                    format!("{}", v.as_f64().unwrap_or(f64::NAN).to_bits())
                }
                other => format!("{other:?}"),
            })
            .collect()
    };
    let mut pairs = Vec::new();
    for p in &plan.points {
        let bound: Vec<&str> = plan
            .axes
            .iter()
            .map(|a| a.name.as_str())
            .filter(|n| p.lock.axis.as_deref() != Some(*n) && !p.lock.params.iter().any(|x| x == n))
            .collect();
        let index = indices.entry(bound.clone()).or_insert_with(|| {
            let mut index: Index = HashMap::new();
            for q in &of_lock {
                index.entry(key(q, &bound)).or_default().push((*q).clone());
            }
            index
        });
        let Some(candidates) = index.get(&key(p, &bound)) else {
            continue;
        };
        if let Ok(b) = select::baseline(&plan.axes, candidates, p, &query) {
            pairs.push(SpeedupPair {
                point: p.index as u32,
                baseline: b as u32,
            });
        }
    }
    Ok(pairs)
}

/// Throughput of every point × mode over its repetitions, one list per row.
pub(crate) fn throughput_lists(results: &Results) -> Result<DataFrame> {
    let schema = schema_of(&results.points, "points")?;
    let axes = present_axes(results, &schema);
    let carry = identity_carry(&axes, &schema, &["point_id", "lock"]);
    let mut aggs: Vec<Expr> = carry.iter().map(|c| col(c.as_str()).first()).collect();
    aggs.push(
        col("throughput_ops_s")
            .filter(col("skipped").is_null())
            .alias("tp"),
    );
    results
        .points
        .clone()
        .with_column(col("point").cast(DataType::UInt32))
        .group_by([col("point"), col("mode")])
        .agg(aggs)
        .sort(["point", "mode"], SortMultipleOptions::default())
        .collect()
        .map_err(Error::polars("collect throughput per point"))
}

/// Speedup of every point × mode over its baseline point by the language's rule
/// for lock `baseline` ([`baseline_pairs`]); see [`speedup_of`].
pub fn speedup(results: &Results, baseline: &str) -> Result<DataFrame> {
    speedup_of(results, &baseline_pairs(results.plan(), baseline)?)
}

/// Speedup of each pair in every mode both of its points ran in: throughput median
/// ratio, with a bootstrap interval (each side's repetitions resampled
/// independently). Columns: `point`, `mode`, `point_id`, `lock`, axes,
/// `baseline_point`, `speedup`, `speedup_lo`, `speedup_hi`; sorted by point and
/// mode.
pub fn speedup_of(results: &Results, pairs: &[SpeedupPair]) -> Result<DataFrame> {
    let lists = throughput_lists(results)?;
    let pairs_df = DataFrame::new(
        pairs.len(),
        vec![
            Column::new(
                "point".into(),
                pairs.iter().map(|p| p.point).collect::<Vec<u32>>(),
            ),
            Column::new(
                "baseline_point".into(),
                pairs.iter().map(|p| p.baseline).collect::<Vec<u32>>(),
            ),
        ],
    )
    .map_err(perr("list the speedup pairs"))?;
    let base = lists.clone().lazy().select([
        col("point").alias("baseline_point"),
        col("mode"),
        col("tp").alias("base_tp"),
    ]);
    let joined = lists
        .lazy()
        .join(
            pairs_df.lazy(),
            [col("point")],
            [col("point")],
            JoinArgs::new(JoinType::Inner),
        )
        .join(
            base,
            [col("baseline_point"), col("mode")],
            [col("baseline_point"), col("mode")],
            JoinArgs::new(JoinType::Inner),
        )
        .sort(["point", "mode"], SortMultipleOptions::default())
        .collect()
        .map_err(Error::polars("join points with their baselines"))?;
    let a = list_values(&joined, "tp")?;
    let b = list_values(&joined, "base_tp")?;
    let ids = str_values(&joined, "point_id")?;
    let modes = str_values(&joined, "mode")?;
    let base_points = f64_values(&joined, "baseline_point")?;
    let plan = results.plan();
    let est: Vec<Estimate> = (0..joined.height())
        .into_par_iter()
        .map(|i| {
            let lock = plan
                .points
                .get(base_points[i] as usize)
                .map_or("", |q| q.lock.name.as_str());
            let seed = stats::seed_for(&format!("speedup/{}/{}/{lock}", ids[i], modes[i]));
            stats::bootstrap(&[a[i].clone(), b[i].clone()], seed, |m| vec![m[0] / m[1]])[0]
        })
        .collect();
    let mut out = joined.drop_many(["tp", "base_tp"]);
    for (name, v) in [
        ("speedup", est.iter().map(|e| e.value).collect::<Vec<_>>()),
        ("speedup_lo", est.iter().map(|e| e.lo).collect()),
        ("speedup_hi", est.iter().map(|e| e.hi).collect()),
    ] {
        out.with_column(Column::new(name.into(), v))
            .map_err(perr("add speedup columns"))?;
    }
    Ok(out)
}
