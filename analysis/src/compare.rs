//! Two results directories side by side: per point and mode, the ratio B/A of each
//! headline metric with a bootstrap interval, and a direction-aware verdict.
//!
//! Results of different plans (another experiment, or other points, durations or
//! machine) are refused: points of the same id would not measure the same thing.
//! Results from different hosts (hostname or CPU model) are refused unless the
//! caller allows it: native numbers of two machines are not comparable by default.
//! A point with a repetition the noise gate flagged is marked in the table.
//! With `sim_vs_native`, the simulated records of A are compared with the native
//! records of B, point by point: the same directory, or native runs of the same
//! experiment whose repetitions are pooled ([`compare_pooled`]). Those may differ
//! from A's plan in the machine's costs only (the constants a simulation was re-run
//! with after `topo --measure`), which is noted as a warning.

use crate::error::{Error, Result};
use crate::pipeline::{f64_values, str_values};
use crate::stats::{self, Estimate};
use crate::store::{load_results, Results};
use crate::util::{create_dir, write_atomic};
use locklab_model::metrics::{self, Better};
use locklab_model::plan::Plan;
use locklab_model::records::{
    modelled_placement, several_placements, PAIR_TRANSFER, PAIR_TRANSFER_AFTER,
    PAIR_TRANSFER_BEFORE,
};
use polars::prelude::*;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CompareOptions {
    /// Compare results of different hosts anyway (noted as a warning).
    pub allow_cross_host: bool,
    /// Compare A's simulated records with B's native ones: the simulator's residuals.
    pub sim_vs_native: bool,
    /// With `sim_vs_native`: the largest |sim / native − 1| a point may show and be
    /// "within tolerance" (0.15 = ±15 %). 0 means the default, [`SIM_TOLERANCE`].
    pub tolerance: f64,
    /// With `sim_vs_native`: pool every native repetition, also those whose measured
    /// transfer between threads 0 and 1 says they ran on another placement of the
    /// CPUs than the simulated machine's ([`keep_the_simulated_placement`]).
    pub any_placement: bool,
}

/// The headline metrics: points metrics whose better direction (the registry's
/// [`Better`]) decides each verdict.
pub const HEADLINE: &[&str] = &["throughput_ops_s", "wait_p99_ns", "fairness_factor", "jain"];

/// What the simulator is validated on against the hardware: CPU time per
/// acquisition first (robust to a shared machine's noise: time the threads did not
/// get does not count), then throughput and the wait tail, whether the threads
/// queue ([`WAITED_SHARE`]), who won the race for the lock ([`REACQUIRED_SHARE`])
/// and whether the threads slept ([`OFF_CPU_SHARE`]).
pub const VALIDATION: &[&str] = &[
    "cpu_ns_per_acq",
    "throughput_ops_s",
    "wait_p99_ns",
    WAITED_SHARE,
    REACQUIRED_SHARE,
    OFF_CPU_SHARE,
];

/// The share of acquisitions that waited, `waits / acquisitions` per repetition:
/// whether the threads queue for the lock or take turns without waiting. At two
/// threads both happen, natively as simulated, and which one a run settles in can
/// move CPU time per acquisition by 1.5 to 2 times (docs/validation.md, "Queueing or
/// taking turns, measured"): a residual in cost beside one in this share comes from the
/// dynamics, not from a cost. A fraction, as [`REACQUIRED_SHARE`]; not measured in
/// records written before 6 December 2026 (no `waits` column).
pub const WAITED_SHARE: &str = "waited_share";

/// The share of acquisitions that went to the thread that released the lock last,
/// `reacquisitions / acquisitions` per repetition: whether the simulation gets a
/// cost right for the right reason (a releaser taking the lock back pays no
/// hand-off). A fraction, so its residual is the difference sim − native, within
/// [`SHARE_TOLERANCE`]; not measured natively without the grant order or the
/// holder's mark (`recording = sampled` with `lines = 0`).
pub const REACQUIRED_SHARE: &str = "reacquired_share";

/// The share of the window the threads were off their CPUs, `1 − cpu_wall_ratio`
/// per repetition: simulated, the share they slept in the kernel (a blocking
/// mutex's waiter in `futex_wait`); natively that, and whatever time the host took
/// from them. Where a mutex's waiters sleep natively and not simulated, or the
/// other way round, its CPU time per acquisition is another regime's
/// (docs/validation.md, "When the kernel reads the word"). A fraction, as the
/// [`SHARES`], and compared as they are.
pub const OFF_CPU_SHARE: &str = "off_cpu_share";

/// The column [`OFF_CPU_SHARE`] is derived from.
const CPU_WALL_RATIO: &str = "cpu_wall_ratio";

/// How far a simulated share ([`SHARES`], [`OFF_CPU_SHARE`]) may lie from the
/// native one and be "within tolerance": 0.1, about the spread of the native
/// re-acquired share between runs on a virtual machine (docs/validation.md).
pub const SHARE_TOLERANCE: f64 = 0.1;

/// The shares of acquisitions `compare` derives, each from its count column: a
/// residual in one is the difference sim − native, not a ratio.
const SHARES: &[(&str, &str)] = &[
    (WAITED_SHARE, "waits"),
    (REACQUIRED_SHARE, "reacquisitions"),
];

/// Whether `metric` is a fraction whose residual is a difference: one of the
/// derived [`SHARES`], or [`OFF_CPU_SHARE`].
fn is_share(metric: &str) -> bool {
    metric == OFF_CPU_SHARE || SHARES.iter().any(|(share, _)| *share == metric)
}

/// The default tolerance of a simulated value against the native one: ±15 %.
pub const SIM_TOLERANCE: f64 = 0.15;

/// A residual as printed: a difference for a share ([`SHARES`]), else relative.
fn residual_label(metric: &str, x: f64) -> String {
    if is_share(metric) {
        format!("{x:+.3}")
    } else {
        format!("{:+.1} %", 100.0 * x)
    }
}

/// The points outside the tolerance in CPU time per acquisition, by whether the share
/// of acquisitions that waited is outside too ([`Comparison::regimes`]); in `compare
/// --format json` as `regimes`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Regimes {
    /// Points whose [`WAITED_SHARE`] or [`OFF_CPU_SHARE`] is outside its tolerance as
    /// well: the simulated threads queue where the native ones take turns, or sleep
    /// where they do not, or the other way round.
    pub other_regime: Vec<String>,
    /// The others outside whose waited share is within its tolerance.
    pub same_regime: usize,
    /// The others outside whose waited share was not measured.
    pub unmeasured: usize,
}

/// One metric's residuals over every point ([`Comparison::residual_summary`]); in
/// `compare --format json` as `residuals` (an infinite `largest` is `"inf"` or
/// `"-inf"`, a `mean_abs` without a finite residual `null`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResidualSummary {
    pub metric: String,
    /// Points within the tolerance, of `n`.
    pub within: usize,
    pub n: usize,
    /// The residual of largest magnitude, with its sign.
    #[serde(with = "crate::stats::json_f64")]
    pub largest: f64,
    /// The mean magnitude of the finite residuals (`None` if none is finite).
    pub mean_abs: Option<f64>,
    /// Points whose residual is infinite (left out of the mean).
    pub infinite: usize,
}

impl ResidualSummary {
    /// ", mean |sim − native| 5.8 %" (a difference for a share, [`SHARES`]), with
    /// the infinite residuals left out said so.
    fn mean_label(&self) -> String {
        let Some(m) = self.mean_abs else {
            return String::new();
        };
        let value = if is_share(&self.metric) {
            format!("{m:.3}")
        } else {
            format!("{:.1} %", 100.0 * m)
        };
        let left_out = match self.infinite {
            0 => String::new(),
            k => format!(" ({k} infinite left out)"),
        };
        format!(", mean |sim − native| {value}{left_out}")
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CompareVerdict {
    Better,
    Worse,
    WithinNoise,
    NotMeasured,
    /// Sim vs native: |sim / native − 1| within the tolerance.
    WithinTolerance,
    /// Sim vs native: outside the tolerance.
    OutsideTolerance,
}

impl CompareVerdict {
    pub fn as_str(self) -> &'static str {
        match self {
            CompareVerdict::Better => "better",
            CompareVerdict::Worse => "worse",
            CompareVerdict::WithinNoise => "within noise",
            CompareVerdict::NotMeasured => "not measured",
            CompareVerdict::WithinTolerance => "within tolerance",
            CompareVerdict::OutsideTolerance => "outside tolerance",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct CompareRow {
    pub point_id: String,
    /// Mode of A's records (B's is the same, or native with `sim_vs_native`).
    pub mode: String,
    pub metric: String,
    pub a: Estimate,
    pub b: Estimate,
    /// B / A, with its interval.
    pub ratio: Estimate,
    /// B relative to A.
    pub verdict: CompareVerdict,
    /// Which side had a repetition of this point flagged by the noise gate: "",
    /// "A", "B" or "A+B".
    pub noise: String,
    /// Sim vs native: the simulator's residual, A / B − 1 of the medians (+0.10: the
    /// simulation says 10 % more than the hardware); for a share ([`SHARES`]) the
    /// difference A − B.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub residual: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub a: PathBuf,
    pub b: PathBuf,
    /// Further native directories pooled with B (sim vs native).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub b_more: Vec<PathBuf>,
    pub a_label: String,
    pub b_label: String,
    pub rows: Vec<CompareRow>,
    pub warnings: Vec<String>,
    /// A's sweep axes in plan order, each with its values' labels, and each point's
    /// label on each axis: what [`Comparison::residuals_by_axis`] groups by.
    #[serde(skip)]
    axes: Vec<(String, Vec<String>)>,
    #[serde(skip)]
    point_axes: BTreeMap<String, BTreeMap<String, String>>,
}

/// Per (point_id, mode): per metric, one value per repetition, in the same order
/// for every metric of a point.
type Samples = BTreeMap<(String, String), BTreeMap<String, Vec<f64>>>;

/// The samples' pseudo-metric of whether the noise gate flagged a repetition (1) or
/// not (0): it is left out with its repetition.
const FLAGGED: &str = "noise gate flagged";

/// (point_id, mode) pairs with a repetition the noise gate flagged.
fn flagged(s: &Samples) -> std::collections::BTreeSet<(String, String)> {
    s.iter()
        .filter(|(_, m)| m.get(FLAGGED).is_some_and(|v| v.iter().any(|&x| x > 0.0)))
        .map(|(k, _)| k.clone())
        .collect()
}

/// Of the points with one value of a sweep axis, how many are within the tolerance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValueResiduals {
    pub value: String,
    pub within: usize,
    pub n: usize,
}

/// What two plans must share for their points to be compared, and how they
/// differ if they do not: the experiment's name, then the fingerprint of what
/// produces the records (topology, run, points). Claims and plots may differ.
pub fn plan_difference(a: &Plan, b: &Plan) -> Option<String> {
    if a.experiment != b.experiment {
        return Some(format!(
            "they are runs of different experiments (`{}` and `{}`)",
            a.experiment, b.experiment
        ));
    }
    let (fa, fb) = (measured_fingerprint(a), measured_fingerprint(b));
    (fa != fb).then(|| {
        format!(
            "they ran different plans of experiment `{}` (fingerprints {fa} and {fb}: other points, durations, repetitions or machine)",
            a.experiment
        )
    })
}

/// Whether the native run `native` measured the points that `sim` simulated, and if
/// so what differs that the comparison should say: the experiment, the machine's
/// shape, the run and the points must be the same; the machine's costs (which the
/// hardware does not read) may differ.
pub fn sim_native_difference(
    sim: &Plan,
    native: &Plan,
) -> std::result::Result<Vec<String>, String> {
    let mut same_costs = native.clone();
    let costs = |p: &Plan| p.topology.costs().cloned();
    match (&mut same_costs.topology, costs(sim)) {
        (locklab_model::plan::Topology::Host { costs }, c) => *costs = c,
        (locklab_model::plan::Topology::Machine(m), Some(c)) => m.costs = c,
        (locklab_model::plan::Topology::Machine(_), None) => {}
    }
    if let Some(why) = plan_difference(sim, &same_costs) {
        return Err(why);
    }
    Ok(if costs(sim) == costs(native) {
        Vec::new()
    } else {
        vec![
            "the simulated run's machine costs differ from those of the native run's plan (re-measured constants?): the residuals are of the simulated run's".into(),
        ]
    })
}

/// SHA-256 (12 hex digits) of the topology, run and points of a plan.
pub fn measured_fingerprint(plan: &Plan) -> String {
    use sha2::{Digest, Sha256};
    let json = serde_json::to_vec(&(&plan.topology, &plan.run, &plan.points)).unwrap_or_default();
    Sha256::digest(&json)
        .iter()
        .take(6)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Per (point_id, mode): repetition values of each headline and validation metric.
///
/// A simulated record holds each thread's CPU time: the window less its sleeps in
/// the kernel (docs/metrics.md). One simulated before that has none: its
/// `cpu_ns_per_acq` is threads × window / acquisitions (a simulated thread of a lock
/// workload is on its CPU for the whole window unless it sleeps; a wake-up
/// workload's tasks sleep, so it has none).
fn samples(r: &Results) -> Result<Samples> {
    let mut sel = vec![
        col("point_id"),
        col("mode"),
        col("workload"),
        col("threads"),
        col("window_ns"),
        col("acquisitions"),
    ];
    let mut metrics: Vec<&str> = HEADLINE
        .iter()
        .chain(VALIDATION)
        .copied()
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    // Which machine a repetition measured, where the records say (two threads or
    // more, written since 2 December 2026); NaN where they do not, so that every
    // metric of a pooled point has one value per repetition.
    let schema = r
        .points
        .clone()
        .collect_schema()
        .map_err(Error::polars(format!("read {}", r.dir.display())))?;
    metrics.extend([PAIR_TRANSFER, PAIR_TRANSFER_BEFORE, PAIR_TRANSFER_AFTER]);
    sel.extend(
        metrics
            .iter()
            .filter(|m| schema.contains(m))
            .map(|m| col(*m)),
    );
    let counts: Vec<&str> = SHARES
        .iter()
        .map(|(_, count)| *count)
        .filter(|count| schema.contains(count))
        .collect();
    sel.extend(counts.iter().map(|count| col(*count)));
    let has_cpu_wall = schema.contains(CPU_WALL_RATIO);
    if has_cpu_wall {
        sel.push(col(CPU_WALL_RATIO));
    }
    sel.push(col("noise"));
    let df = r
        .points
        .clone()
        .filter(col("skipped").is_null())
        .select(sel)
        .collect()
        .map_err(Error::polars(format!("read {}", r.dir.display())))?;
    let ids = str_values(&df, "point_id")?;
    let modes = str_values(&df, "mode")?;
    let workloads = str_values(&df, "workload")?;
    let threads = f64_values(&df, "threads")?;
    let window = f64_values(&df, "window_ns")?;
    let acqs = f64_values(&df, "acquisitions")?;
    let noise = str_values(&df, "noise")?;
    // Each share's numerator, NaN where the records lack its column.
    let mut numerators = BTreeMap::new();
    for (share, count) in SHARES {
        let v = if counts.contains(count) {
            f64_values(&df, count)?
        } else {
            vec![f64::NAN; df.height()]
        };
        numerators.insert(*share, v);
    }
    let off_cpu: Vec<f64> = if has_cpu_wall {
        f64_values(&df, CPU_WALL_RATIO)?
            .into_iter()
            .map(|r| 1.0 - r)
            .collect()
    } else {
        vec![f64::NAN; df.height()]
    };
    let mut out: Samples = BTreeMap::new();
    for i in 0..df.height() {
        let flagged = if noise[i].starts_with("flagged") {
            1.0
        } else {
            0.0
        };
        out.entry((ids[i].clone(), modes[i].clone()))
            .or_default()
            .entry(FLAGGED.to_string())
            .or_default()
            .push(flagged);
    }
    for m in &metrics {
        let v = if schema.contains(m) {
            f64_values(&df, m)?
        } else {
            vec![f64::NAN; df.height()]
        };
        for i in 0..df.height() {
            let x = if *m == "cpu_ns_per_acq" && modes[i] == "sim" && !v[i].is_finite() {
                // Simulated before its records held CPU time (6 December 2026):
                // each thread was on its CPU for the whole window.
                if workloads[i] == "wakeup" || acqs[i] <= 0.0 {
                    f64::NAN
                } else {
                    threads[i] * window[i] / acqs[i]
                }
            } else if *m == OFF_CPU_SHARE {
                off_cpu[i]
            } else if let Some(numerator) = numerators.get(m) {
                if acqs[i] > 0.0 {
                    numerator[i] / acqs[i]
                } else {
                    f64::NAN
                }
            } else {
                v[i]
            };
            out.entry((ids[i].clone(), modes[i].clone()))
                .or_default()
                .entry(m.to_string())
                .or_default()
                .push(x);
        }
    }
    Ok(out)
}

/// Leave out of `native` the repetitions that ran on another placement of their CPUs
/// than the simulated machine's: those whose transfer between threads 0 and 1,
/// measured before or after the window, is not the one `sim` modelled for the point
/// (`records::modelled_placement`). A virtual machine's host moves its vCPUs (on the Zen
/// 4 guest between one core's hyperthreads, two cores of a CCX and two CCDs, seconds
/// apart), and such a repetition measured another machine: pooled, it makes a point
/// bimodal. Repetitions without the measurement stay.
///
/// The simulated value names a placement of the native host only when
/// `measured_here`: the simulated costs were measured on that host (`topo
/// --measure`). Otherwise (a described machine, costs written by hand or measured
/// elsewhere) nothing is left out, since no placement can be chosen, and a point
/// whose repetitions ran on several is said to be pooled. What was done, as
/// warnings.
fn keep_the_simulated_placement(
    sim: &Samples,
    native: &mut Samples,
    measured_here: bool,
) -> Vec<String> {
    let (mut left_out, mut of, mut emptied) = (0usize, 0usize, 0usize);
    let (mut mixed, mut unmodelled) = (0usize, 0usize);
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    let mut modelled = std::collections::BTreeSet::new();
    for ((id, mode), m) in native.iter_mut() {
        let (Some(before), Some(after)) = (m.get(PAIR_TRANSFER_BEFORE), m.get(PAIR_TRANSFER_AFTER))
        else {
            continue;
        };
        let measured: Vec<(f64, f64)> = before.iter().zip(after).map(|(&b, &a)| (b, a)).collect();
        if mode != "native" || !measured.iter().any(|(b, a)| b.is_finite() && a.is_finite()) {
            continue;
        }
        let e = sim
            .get(&(id.clone(), "sim".to_string()))
            .and_then(|s| s.get(PAIR_TRANSFER))
            .map(|v| stats::median_ci(v).value)
            .filter(|e| e.is_finite());
        let e = match e {
            Some(e) if measured_here => e,
            Some(_) | None => {
                if several_placements(&measured) {
                    mixed += 1;
                    if measured_here {
                        unmodelled += 1;
                    }
                }
                continue;
            }
        };
        let keep: Vec<bool> = measured
            .iter()
            .map(|&(b, a)| {
                if !(b.is_finite() && a.is_finite()) {
                    return true;
                }
                of += 1;
                let same = modelled_placement(e, b) && modelled_placement(e, a);
                if !same {
                    left_out += 1;
                    modelled.insert(e.round() as i64);
                    for x in [b, a].into_iter().filter(|&x| !modelled_placement(e, x)) {
                        lo = lo.min(x);
                        hi = hi.max(x);
                    }
                }
                same
            })
            .collect();
        if keep.iter().all(|&k| k) {
            continue;
        }
        for v in m.values_mut() {
            let mut k = keep.iter();
            v.retain(|_| *k.next().unwrap_or(&true));
        }
        if !keep.contains(&true) {
            emptied += 1;
        }
    }
    let mut warnings = Vec::new();
    if left_out > 0 {
        let modelled: Vec<String> = modelled.iter().map(|e| format!("{e} ns")).collect();
        warnings.push(format!(
            "{left_out} of {of} native repetitions ran where a transfer between threads 0 and 1 \
             took {lo:.0}–{hi:.0} ns, not the {} that `topo --measure` found on this host and \
             the simulated machine has: left out as measurements of another placement of the \
             CPUs{} (--any-placement pools them)",
            modelled.join(" / "),
            if emptied > 0 {
                format!(
                    "; {emptied} point(s) have none left: the host kept the CPUs on another \
                     placement than the measured one (measure and simulate again to compare there)"
                )
            } else {
                String::new()
            }
        ));
    }
    if mixed > 0 {
        let why = if unmodelled > 0 {
            "the simulation records no transfer between threads 0 and 1 for them"
        } else {
            "the simulated costs were not measured (`topo --measure`) on the host of every \
             native run pooled, so no placement is known to be the simulated one"
        };
        warnings.push(format!(
            "{mixed} point(s) have native repetitions on more than one placement of threads 0 \
             and 1 (columns pair_transfer_before_ns, pair_transfer_after_ns), pooled: {why}"
        ));
    }
    warnings
}

fn check_hosts(a: &Results, b: &Results, opts: &CompareOptions) -> Result<Vec<String>> {
    let (ha, hb) = (&a.manifest.host, &b.manifest.host);
    if ha.hostname == hb.hostname && ha.same_cpu(hb) {
        return Ok(Vec::new());
    }
    let what = format!(
        "{} ran on host \"{}\" ({}) and {} on host \"{}\" ({})",
        a.dir.display(),
        ha.hostname,
        ha.cpu(),
        b.dir.display(),
        hb.hostname,
        hb.cpu()
    );
    if opts.allow_cross_host {
        Ok(vec![format!("comparing across hosts: {what}")])
    } else {
        Err(Error::CrossHost(format!(
            "refusing to compare results from different hosts: {what}; pass --allow-cross-host to compare anyway"
        )))
    }
}

/// B against A from the interval of B/A: better or worse when the whole interval
/// lies on one side of 1. A metric with no better direction is never a change.
fn verdict(ratio: &Estimate, better: Better) -> CompareVerdict {
    let up = match better {
        Better::Higher => CompareVerdict::Better,
        Better::Lower => CompareVerdict::Worse,
        Better::Neither => CompareVerdict::WithinNoise,
    };
    let down = match better {
        Better::Higher => CompareVerdict::Worse,
        Better::Lower => CompareVerdict::Better,
        Better::Neither => CompareVerdict::WithinNoise,
    };
    if ratio.value.is_nan() || ratio.lo.is_nan() {
        CompareVerdict::NotMeasured
    } else if ratio.lo > 1.0 {
        up
    } else if ratio.hi < 1.0 {
        down
    } else {
        CompareVerdict::WithinNoise
    }
}

pub fn compare(a: &Path, b: &Path, opts: &CompareOptions) -> Result<Comparison> {
    compare_pooled(a, &[b.to_path_buf()], opts)
}

/// [`compare`] with B's repetitions pooled over several directories (sim against
/// native only: the native runs of one experiment, each repetition one sample, a
/// point's verdict on the median of them all).
pub fn compare_pooled(a: &Path, bs: &[PathBuf], opts: &CompareOptions) -> Result<Comparison> {
    // A directory given twice is one run: its repetitions count once.
    let mut seen = std::collections::BTreeSet::new();
    let bs: Vec<PathBuf> = bs
        .iter()
        .filter(|d| seen.insert(std::fs::canonicalize(d).unwrap_or_else(|_| d.to_path_buf())))
        .cloned()
        .collect();
    let bs = bs.as_slice();
    let Some(b) = bs.first() else {
        return Err(Error::Incompatible("nothing to compare A with".into()));
    };
    if bs.len() > 1 && !opts.sim_vs_native {
        return Err(Error::Incompatible(
            "only a sim-vs-native comparison pools several directories".into(),
        ));
    }
    let ra = load_results(a)?;
    let rbs = bs
        .iter()
        .map(|d| {
            if d == a {
                Ok(ra.clone())
            } else {
                load_results(d)
            }
        })
        .collect::<Result<Vec<_>>>()?;
    let mut warnings = Vec::new();
    for (d, rb) in bs.iter().zip(&rbs) {
        let refuse = |why: String| {
            Error::Incompatible(format!(
                "refusing to compare {} and {}: {why}",
                a.display(),
                d.display()
            ))
        };
        if opts.sim_vs_native {
            let elsewhere = ra
                .plan()
                .topology
                .costs()
                .and_then(|c| c.measured_elsewhere(&rb.manifest.host));
            let differences = sim_native_difference(ra.plan(), rb.plan()).map_err(refuse)?;
            for w in differences.into_iter().chain(elsewhere) {
                if !warnings.contains(&w) {
                    warnings.push(w);
                }
            }
        } else if let Some(why) = plan_difference(ra.plan(), rb.plan()) {
            return Err(refuse(why));
        }
    }
    // Native numbers of different machines are not comparable. A simulation of a
    // described machine is compared with whatever host ran the native side; one of
    // `topology host` simulated the machine it ran on, which must be that host.
    let simulated_host = matches!(
        ra.plan().topology,
        locklab_model::plan::Topology::Host { .. }
    );
    if !opts.sim_vs_native || simulated_host {
        warnings.extend(check_hosts(&ra, &rbs[0], opts)?);
    }
    if opts.sim_vs_native {
        for rb in &rbs[1..] {
            warnings.extend(check_hosts(&rbs[0], rb, opts)?);
        }
        // Pooled repetitions of different builds measure different loops.
        let profiles: std::collections::BTreeSet<&str> = std::iter::once(&ra)
            .chain(&rbs)
            .map(|r| r.manifest.build_profile.as_str())
            .collect();
        if profiles.len() > 1 {
            warnings.push(format!(
                "the runs were made by different builds ({}): measure and simulate with one",
                profiles.into_iter().collect::<Vec<_>>().join(", ")
            ));
        }
    }
    let sa = samples(&ra)?;
    // A's own native points count only if A is among B's directories.
    let a_native = opts.sim_vs_native
        && !bs.iter().any(|d| d == a)
        && sa.keys().any(|(_, mode)| mode == "native");
    if a_native {
        warnings.push(format!(
            "{}'s own native points are not pooled: name it again among the native runs to include them",
            a.display()
        ));
    }
    let na = flagged(&sa);
    let mut sb = Samples::new();
    for rb in &rbs {
        for (key, metrics) in samples(rb)? {
            let into = sb.entry(key).or_default();
            for (m, v) in metrics {
                into.entry(m).or_default().extend(v);
            }
        }
    }
    if opts.sim_vs_native && !opts.any_placement {
        // The simulated placement is known on the native side only if the
        // simulated costs were measured on the host that ran it.
        let costs = ra.plan().topology.costs();
        let measured_here = rbs
            .iter()
            .all(|rb| costs.is_some_and(|c| c.measured_on_host(&rb.manifest.host)));
        warnings.extend(keep_the_simulated_placement(&sa, &mut sb, measured_here));
    }
    let nb = flagged(&sb);
    let (a_label, b_label) = match (opts.sim_vs_native, bs.len()) {
        (true, 1) => ("A (sim)".to_string(), "B (native)".to_string()),
        (true, n) => (
            "A (sim)".to_string(),
            format!("B (native, {n} runs pooled)"),
        ),
        (false, _) => ("A".to_string(), "B".to_string()),
    };
    let tolerance = if opts.tolerance > 0.0 {
        opts.tolerance
    } else {
        SIM_TOLERANCE
    };
    let mut rows = Vec::new();
    let mut only_a = 0;
    for ((id, mode), ma) in &sa {
        if opts.sim_vs_native && mode != "sim" {
            continue;
        }
        let bmode = if opts.sim_vs_native {
            "native"
        } else {
            mode.as_str()
        };
        let Some(mb) = sb.get(&(id.clone(), bmode.to_string())) else {
            only_a += 1;
            continue;
        };
        let shown = if opts.sim_vs_native {
            VALIDATION
        } else {
            HEADLINE
        };
        for metric in shown {
            let better = metrics::get(metric).map_or(Better::Neither, |m| m.better);
            let (xa, xb) = (&ma[*metric], &mb[*metric]);
            let seed = stats::seed_for(&format!("compare/{id}/{mode}/{metric}"));
            let ratio = stats::bootstrap(&[xa.clone(), xb.clone()], seed, |m| vec![m[1] / m[0]])[0];
            let (a_med, b_med) = (stats::median_ci(xa), stats::median_ci(xb));
            let share = is_share(metric);
            let residual = opts
                .sim_vs_native
                .then(|| {
                    if share {
                        a_med.value - b_med.value
                    } else if a_med.value == b_med.value {
                        // Equal, zero included (no thread waited on either side).
                        0.0
                    } else {
                        a_med.value / b_med.value - 1.0
                    }
                })
                .filter(|r| r.is_finite());
            let within = if share { SHARE_TOLERANCE } else { tolerance };
            let verdict = match (opts.sim_vs_native, residual) {
                (false, _) => verdict(&ratio, better),
                (true, None) => CompareVerdict::NotMeasured,
                (true, Some(r)) if r.abs() <= within => CompareVerdict::WithinTolerance,
                (true, Some(_)) => CompareVerdict::OutsideTolerance,
            };
            let noise = match (
                na.contains(&(id.clone(), mode.clone())),
                nb.contains(&(id.clone(), bmode.to_string())),
            ) {
                (true, true) => "A+B",
                (true, false) => "A",
                (false, true) => "B",
                (false, false) => "",
            };
            rows.push(CompareRow {
                point_id: id.clone(),
                mode: mode.clone(),
                metric: metric.to_string(),
                a: a_med,
                b: b_med,
                ratio,
                verdict,
                noise: noise.to_string(),
                residual,
            });
        }
    }
    let only_b = sb
        .keys()
        .filter(|(id, mode)| {
            let amode = if opts.sim_vs_native {
                if mode != "native" {
                    return false;
                }
                "sim"
            } else {
                mode.as_str()
            };
            !sa.contains_key(&(id.clone(), amode.to_string()))
        })
        .count();
    if only_a > 0 {
        warnings.push(format!("{only_a} point(s) only in {a_label}"));
    }
    if only_b > 0 {
        warnings.push(format!("{only_b} point(s) only in {b_label}"));
    }
    if rows.is_empty() {
        warnings.push("no point is present in both".into());
    }
    let noisy: std::collections::BTreeSet<&str> = rows
        .iter()
        .filter(|r| !r.noise.is_empty())
        .map(|r| r.point_id.as_str())
        .collect();
    if !noisy.is_empty() {
        warnings.push(format!(
            "{} point(s) had a repetition flagged by the noise gate (column `noise`); their verdicts rest on disturbed measurements",
            noisy.len()
        ));
    }
    let plan = ra.plan();
    let axes = plan
        .axes
        .iter()
        .map(|x| (x.name.clone(), x.values.iter().map(|v| v.label()).collect()))
        .collect();
    let point_axes = plan
        .points
        .iter()
        .map(|p| {
            let labels = p.axes.iter().map(|(k, v)| (k.clone(), v.label())).collect();
            (p.id.clone(), labels)
        })
        .collect();
    Ok(Comparison {
        axes,
        point_axes,
        a: a.to_path_buf(),
        b: b.clone(),
        b_more: bs[1..].to_vec(),
        a_label,
        b_label,
        rows,
        warnings,
    })
}

impl Comparison {
    /// Counts of each verdict.
    pub fn counts(&self) -> BTreeMap<&'static str, usize> {
        let mut m = BTreeMap::new();
        for r in &self.rows {
            *m.entry(r.verdict.as_str()).or_insert(0) += 1;
        }
        m
    }

    fn cells(&self) -> (Vec<&'static str>, Vec<Vec<String>>) {
        let residuals = self.rows.iter().any(|r| r.residual.is_some());
        let mut header = vec![
            "point", "mode", "metric", "A", "B", "B/A", "verdict", "noise",
        ];
        if residuals {
            header.insert(6, "sim − native");
        }
        let rows = self
            .rows
            .iter()
            .map(|r| {
                let mut row = vec![
                    r.point_id.clone(),
                    r.mode.clone(),
                    r.metric.clone(),
                    r.a.label(),
                    r.b.label(),
                    r.ratio.label(),
                    r.verdict.as_str().to_string(),
                    r.noise.clone(),
                ];
                if residuals {
                    row.insert(
                        6,
                        r.residual
                            .map_or("—".into(), |x| residual_label(&r.metric, x)),
                    );
                }
                row
            })
            .collect();
        (header, rows)
    }

    /// Sim vs native: per metric of [`VALIDATION`] that has residuals, how many
    /// points lie within the tolerance, the largest residual, and the mean of their
    /// magnitudes (over the finite ones: a point where one side is 0 and the other
    /// not has an infinite relative residual, counted apart), the one number that
    /// says whether a change to the model brought the simulation closer overall
    /// (`None` for an ordinary comparison).
    pub fn residual_summary(&self) -> Option<Vec<ResidualSummary>> {
        if !self.rows.iter().any(|r| r.residual.is_some()) {
            return None;
        }
        let mut by: BTreeMap<&str, ResidualSummary> = BTreeMap::new();
        let mut sums: BTreeMap<&str, (f64, usize)> = BTreeMap::new();
        for r in &self.rows {
            let Some(x) = r.residual else { continue };
            let e = by
                .entry(r.metric.as_str())
                .or_insert_with(|| ResidualSummary {
                    metric: r.metric.clone(),
                    within: 0,
                    n: 0,
                    largest: 0.0,
                    mean_abs: None,
                    infinite: 0,
                });
            e.n += 1;
            if r.verdict == CompareVerdict::WithinTolerance {
                e.within += 1;
            }
            if x.abs() > e.largest.abs() {
                e.largest = x;
            }
            if x.is_finite() {
                let s = sums.entry(r.metric.as_str()).or_default();
                s.0 += x.abs();
                s.1 += 1;
            } else {
                e.infinite += 1;
            }
        }
        for (m, (sum, k)) in sums {
            if let Some(e) = by.get_mut(m) {
                e.mean_abs = (k > 0).then(|| sum / k as f64);
            }
        }
        Some(VALIDATION.iter().filter_map(|m| by.remove(m)).collect())
    }

    /// Sim vs native: the points whose CPU time per acquisition lies outside the
    /// tolerance, split by whether their [`WAITED_SHARE`] or [`OFF_CPU_SHARE`] does
    /// too: there the simulated threads queue where the native ones take turns, or
    /// sleep where they do not, or the other way round, and the residual is the
    /// dynamics, not a cost (docs/validation.md, "Queueing or taking turns, measured",
    /// "When the kernel reads the word"). `None` without residuals or without either
    /// share measured.
    pub fn regimes(&self) -> Option<Regimes> {
        let verdict_of = |id: &str, metric: &str| {
            self.rows
                .iter()
                .find(|r| r.point_id == id && r.metric == metric && r.residual.is_some())
                .map(|r| r.verdict)
        };
        let mut out = Regimes::default();
        let mut measured = false;
        for r in self.rows.iter().filter(|r| r.metric == VALIDATION[0]) {
            let waited = verdict_of(&r.point_id, WAITED_SHARE);
            let off_cpu = verdict_of(&r.point_id, OFF_CPU_SHARE);
            measured |= waited.is_some() || off_cpu.is_some();
            if r.verdict != CompareVerdict::OutsideTolerance {
                continue;
            }
            let outside = |v| v == Some(CompareVerdict::OutsideTolerance);
            if outside(waited) || outside(off_cpu) {
                out.other_regime.push(r.point_id.clone());
            } else if waited.is_some() {
                out.same_regime += 1;
            } else {
                out.unmeasured += 1;
            }
        }
        measured.then_some(out)
    }

    /// Sim vs native, CPU time per acquisition: per sweep axis of two values or more,
    /// per value, how many of its points are within the tolerance and of how many
    /// (the validation's "which workloads, which thread counts" at a glance).
    pub fn residuals_by_axis(&self) -> Vec<(String, Vec<ValueResiduals>)> {
        let rows: Vec<&CompareRow> = self
            .rows
            .iter()
            .filter(|r| r.metric == VALIDATION[0] && r.residual.is_some())
            .collect();
        if rows.is_empty() {
            return Vec::new();
        }
        self.axes
            .iter()
            .filter(|(_, values)| values.len() > 1)
            .map(|(axis, values)| {
                let counts = values
                    .iter()
                    .map(|v| {
                        let of_value = rows.iter().filter(|r| {
                            self.point_axes.get(&r.point_id).and_then(|a| a.get(axis)) == Some(v)
                        });
                        let (within, n) = of_value.fold((0, 0), |(w, n), r| {
                            (
                                w + usize::from(r.verdict == CompareVerdict::WithinTolerance),
                                n + 1,
                            )
                        });
                        ValueResiduals {
                            value: v.clone(),
                            within,
                            n,
                        }
                    })
                    .filter(|c| c.n > 0)
                    .collect();
                (axis.clone(), counts)
            })
            .collect()
    }

    /// B's directory, or its directories pooled, as " + "-joined paths.
    fn b_dirs(&self) -> String {
        std::iter::once(&self.b)
            .chain(&self.b_more)
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(" + ")
    }

    /// Plain-text table for the terminal.
    pub fn table(&self) -> String {
        let (header, rows) = self.cells();
        let mut w: Vec<usize> = header.iter().map(|h| h.len()).collect();
        for r in &rows {
            for (i, c) in r.iter().enumerate() {
                w[i] = w[i].max(c.chars().count());
            }
        }
        let line = |cells: Vec<&str>| {
            let mut s = String::new();
            for (i, c) in cells.iter().enumerate() {
                s.push_str(c);
                s.push_str(&" ".repeat(w[i] - c.chars().count() + 2));
            }
            s.trim_end().to_string() + "\n"
        };
        let b = if self.a == self.b && self.b_more.is_empty() {
            "(same directory)".to_string()
        } else {
            self.b_dirs()
        };
        let mut out = format!("A = {}\nB = {b}\n", self.a.display());
        out.push_str(&line(header.clone()));
        out.push_str(&line(
            w.iter()
                .map(|n| "-".repeat(*n))
                .collect::<Vec<_>>()
                .iter()
                .map(String::as_str)
                .collect(),
        ));
        for r in &rows {
            out.push_str(&line(r.iter().map(String::as_str).collect()));
        }
        let counts: Vec<String> = self
            .counts()
            .iter()
            .map(|(k, v)| format!("{v} {k}"))
            .collect();
        out.push_str(&format!("summary: {}\n", counts.join(", ")));
        for r in self.residual_summary().unwrap_or_default() {
            out.push_str(&format!(
                "residuals: {}: {} of {} points within tolerance, largest {}{}\n",
                r.metric,
                r.within,
                r.n,
                residual_label(&r.metric, r.largest),
                r.mean_label()
            ));
        }
        if let Some(g) = self.regimes() {
            let outside = g.other_regime.len() + g.same_regime + g.unmeasured;
            if outside > 0 {
                let which = if g.other_regime.is_empty() {
                    String::new()
                } else {
                    format!(": {}", g.other_regime.join("; "))
                };
                let unmeasured = match g.unmeasured {
                    0 => String::new(),
                    k => format!(", {k} with no measured {WAITED_SHARE}"),
                };
                out.push_str(&format!(
                    "residuals: {} outside tolerance at {outside} points: {} where the threads queue or sleep otherwise than natively ({} or {} outside too{which}), {} in the same regime{unmeasured}\n",
                    VALIDATION[0],
                    g.other_regime.len(),
                    WAITED_SHARE,
                    OFF_CPU_SHARE,
                    g.same_regime
                ));
            }
        }
        for (axis, counts) in self.residuals_by_axis() {
            let counts: Vec<String> = counts
                .iter()
                .map(|c| format!("{} {}/{}", c.value, c.within, c.n))
                .collect();
            out.push_str(&format!(
                "residuals: {} by {axis}: {}\n",
                VALIDATION[0],
                counts.join(", ")
            ));
        }
        for w in &self.warnings {
            out.push_str(&format!("warning: {w}\n"));
        }
        out
    }

    /// `comparison.md` and `comparison.html` in `out_dir`.
    pub fn write_report(&self, out_dir: &Path) -> Result<()> {
        create_dir(out_dir)?;
        let (header, rows) = self.cells();
        let mut md = format!(
            "# Comparison\n\n- A: `{}`\n- B: `{}`\n\nB/A is the ratio of medians with a 95 % bootstrap interval; \"better\" and \"worse\" need the whole interval on one side of 1.\n\n",
            self.a.display(),
            self.b_dirs()
        );
        md.push_str(&format!("| {} |\n", header.join(" | ")));
        md.push_str(&format!("|{}\n", " --- |".repeat(header.len())));
        for r in &rows {
            md.push_str(&format!("| {} |\n", r.join(" | ")));
        }
        for w in &self.warnings {
            md.push_str(&format!("\n> warning: {w}\n"));
        }
        write_atomic(&out_dir.join("comparison.md"), md.as_bytes())?;

        let esc = crate::report::html_escape;
        let mut html = String::from("<!doctype html><html><head><meta charset=\"utf-8\"><title>locklab comparison</title><style>");
        html.push_str(crate::report::CSS);
        html.push_str("</style></head><body><h1>Comparison</h1>");
        html.push_str(&format!(
            "<p>A: <code>{}</code><br>B: <code>{}</code></p><table><tr>",
            esc(&self.a.display().to_string()),
            esc(&self.b_dirs())
        ));
        for h in &header {
            html.push_str(&format!("<th>{h}</th>"));
        }
        html.push_str("</tr>");
        for (r, row) in self.rows.iter().zip(&rows) {
            let class = match r.verdict {
                CompareVerdict::Better | CompareVerdict::WithinTolerance => "pass",
                CompareVerdict::Worse | CompareVerdict::OutsideTolerance => "fail",
                CompareVerdict::WithinNoise => "neutral",
                CompareVerdict::NotMeasured => "error",
            };
            html.push_str("<tr>");
            for (i, c) in row.iter().enumerate() {
                if i == row.len() - 2 {
                    html.push_str(&format!("<td class=\"verdict {class}\">{}</td>", esc(c)));
                } else {
                    html.push_str(&format!("<td>{}</td>", esc(c)));
                }
            }
            html.push_str("</tr>");
        }
        html.push_str("</table>");
        for w in &self.warnings {
            html.push_str(&format!("<p class=\"warning\">warning: {}</p>", esc(w)));
        }
        html.push_str("</body></html>\n");
        write_atomic(&out_dir.join("comparison.html"), html.as_bytes())
    }
}

impl std::fmt::Display for Comparison {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.table())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use locklab_model::metrics::Table;

    #[test]
    fn headline_metrics_are_points_metrics_with_a_direction() {
        for m in HEADLINE {
            let metric = metrics::get(m).unwrap_or_else(|| panic!("{m} is not a metric"));
            assert!(metric.in_table(Table::Points), "{m}");
            assert_ne!(metric.better, Better::Neither, "{m}");
        }
        let up = Estimate {
            value: 1.2,
            lo: 1.1,
            hi: 1.3,
            n: 5,
        };
        assert_eq!(verdict(&up, Better::Higher), CompareVerdict::Better);
        assert_eq!(verdict(&up, Better::Lower), CompareVerdict::Worse);
        assert_eq!(verdict(&up, Better::Neither), CompareVerdict::WithinNoise);
    }

    #[test]
    fn the_mean_residual_leaves_out_infinite_ones_and_says_so() {
        let r = |metric: &str, mean_abs, infinite| ResidualSummary {
            metric: metric.into(),
            within: 1,
            n: 3,
            largest: f64::INFINITY,
            mean_abs,
            infinite,
        };
        assert_eq!(
            r("wait_p99_ns", Some(0.0525), 1).mean_label(),
            ", mean |sim − native| 5.2 % (1 infinite left out)"
        );
        assert_eq!(
            r(REACQUIRED_SHARE, Some(0.0314), 0).mean_label(),
            ", mean |sim − native| 0.031"
        );
        assert_eq!(r("wait_p99_ns", None, 3).mean_label(), "");
    }
}
