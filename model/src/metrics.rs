//! The metric registry: every metric locklab measures, defined once.
//!
//! A metric's name is its column name (units as suffixes: `wait_p99_ns`,
//! `throughput_ops_s`). Everything else that talks about metrics derives from
//! [`METRICS`]: which names a claim or plot may use (the language), the columns of the
//! stored tables, their order and how their rows combine (the analysis), figure
//! labels, the headline of `locklab compare`, and the metric table of
//! `docs/metrics.md` (a test ties the two together).
//!
//! ```
//! use locklab_model::metrics::{self, Combine, Table};
//! let m = metrics::get("wait_p99_ns").unwrap();
//! assert!(m.in_table(Table::Threads));
//! assert_eq!(m.combine, Combine::Max);
//! assert_eq!(m.axis_label(), "wait p99 (ns)");
//! ```

/// Where a metric's values are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Table {
    /// `points.parquet`: one row per point × mode × repetition.
    Points,
    /// `threads.parquet`: one row per thread (and wait class).
    Threads,
    /// `handoffs.parquet`: one row per (from node, to node) pair.
    Handoffs,
}

impl Table {
    pub fn as_str(self) -> &'static str {
        match self {
            Table::Points => "points",
            Table::Threads => "threads",
            Table::Handoffs => "handoffs",
        }
    }

    /// The column that weighs a row in a [`Combine::WeightedMean`].
    pub fn weight_column(self) -> &'static str {
        match self {
            Table::Points | Table::Threads => "acquisitions",
            Table::Handoffs => "count",
        }
    }
}

/// The unit of a metric's values (what its column holds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Nanoseconds; shown as durations (`1.2us`).
    Nanos,
    /// Operations per second.
    OpsPerSec,
    /// A count of events.
    Count,
    /// A ratio of two like quantities (×).
    Ratio,
    /// A share between 0 and 1.
    Fraction,
    /// A dimensionless index or statistic.
    Index,
}

impl Unit {
    /// The unit as written after an axis label, or `None` for dimensionless values.
    pub fn symbol(self) -> Option<&'static str> {
        match self {
            Unit::Nanos => Some("ns"),
            Unit::OpsPerSec => Some("ops/s"),
            Unit::Ratio => Some("×"),
            Unit::Count | Unit::Fraction | Unit::Index => None,
        }
    }

    /// The unit's name in tables (`ns`, `count`, `fraction`).
    pub fn as_str(self) -> &'static str {
        match self {
            Unit::Nanos => "ns",
            Unit::OpsPerSec => "ops/s",
            Unit::Count => "count",
            Unit::Ratio => "ratio",
            Unit::Fraction => "fraction",
            Unit::Index => "index",
        }
    }
}

/// How the rows a selection picks within one repetition (the threads of a node, the
/// hand-offs between remote nodes) combine into one value. Rows without a value (NaN)
/// are left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Combine {
    /// Counts, shares and CPU times add up.
    Sum,
    /// Tail quantiles, maxima and bypass: the largest of the rows (an upper bound on
    /// the group's own quantile).
    Max,
    /// Medians and means: the mean weighted by the table's weight column
    /// ([`Table::weight_column`]), an approximation for a median.
    WeightedMean,
    /// Only ever one row per repetition (a point-table metric).
    Single,
}

impl Combine {
    pub fn as_str(self) -> &'static str {
        match self {
            Combine::Sum => "sum",
            Combine::Max => "max",
            Combine::WeightedMean => "weighted mean",
            Combine::Single => "single row",
        }
    }
}

/// Which direction is an improvement (for `compare` verdicts and figure captions).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    Higher,
    Lower,
    /// Neither direction is better in itself (a share, a locality fraction).
    Neither,
}

impl Better {
    pub fn as_str(self) -> &'static str {
        match self {
            Better::Higher => "higher",
            Better::Lower => "lower",
            Better::Neither => "neither",
        }
    }
}

/// One metric.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Metric {
    /// The column name, and the name claims and plots use.
    pub name: &'static str,
    /// A short noun phrase for axis labels and tables, without the unit.
    pub label: &'static str,
    pub unit: Unit,
    /// The tables holding a column of this name. Empty for metrics computed by the
    /// analysis from other columns (`speedup`).
    pub tables: &'static [Table],
    pub combine: Combine,
    pub better: Better,
    /// The values the metric can take at all, inclusive: a claim whose band contains
    /// the whole range cannot fail.
    pub range: (f64, f64),
    /// Only some workloads or modes measure it (a missing value is not an error).
    pub optional: bool,
    /// The definition, as in `docs/metrics.md`.
    pub doc: &'static str,
}

impl Metric {
    pub fn in_table(&self, t: Table) -> bool {
        self.tables.contains(&t)
    }

    /// True for metrics the analysis derives rather than reads from a column.
    pub fn is_derived(&self) -> bool {
        self.tables.is_empty()
    }

    /// `wait p99 (ns)`, `throughput (ops/s)`, `Jain's index`.
    pub fn axis_label(&self) -> String {
        match self.unit.symbol() {
            Some(u) => format!("{} ({u})", self.label),
            None => self.label.to_string(),
        }
    }
}

const INF: f64 = f64::INFINITY;
const NON_NEGATIVE: (f64, f64) = (0.0, INF);
const UNIT_INTERVAL: (f64, f64) = (0.0, 1.0);

use Better::*;
use Combine::*;
use Table::*;
use Unit::*;

const P: &[Table] = &[Points];
const PT: &[Table] = &[Points, Threads];
const PTH: &[Table] = &[Points, Threads, Handoffs];
const T: &[Table] = &[Threads];
const H: &[Table] = &[Handoffs];

macro_rules! metric {
    ($name:literal, $label:literal, $unit:expr, $tables:expr, $combine:expr, $better:expr, $range:expr, $doc:literal) => {
        metric!($name, $label, $unit, $tables, $combine, $better, $range, false, $doc)
    };
    ($name:literal, $label:literal, $unit:expr, $tables:expr, $combine:expr, $better:expr, $range:expr, $optional:expr, $doc:literal) => {
        Metric {
            name: $name,
            label: $label,
            unit: $unit,
            tables: $tables,
            combine: $combine,
            better: $better,
            range: $range,
            optional: $optional,
            doc: $doc,
        }
    };
}

/// Every metric, in the order of the documentation. Within each table this is also
/// the order of the stored columns: counts first (`acquisitions`, `ops`, `count`),
/// then the measures.
pub const METRICS: &[Metric] = &[
    metric!("acquisitions", "acquisitions", Count, PT, Sum, Neither, NON_NEGATIVE,
        "acquisitions completed inside the measured window (of the point, or of one thread and wait class)"),
    metric!("ops", "operations", Count, P, Single, Higher, NON_NEGATIVE,
        "workload operations completed inside the measured window: acquisitions for `single`; passes, requests or worker bursts for the other workloads"),
    metric!("count", "hand-offs", Count, H, Sum, Neither, NON_NEGATIVE,
        "hand-offs from a holder on `from_node` to the next holder, another thread, on `to_node`"),
    metric!("waits", "acquisitions that waited", Count, PT, Sum, Neither, NON_NEGATIVE,
        "acquisitions inside the measured window whose wait was above zero: in the single-lock workload, those whose first attempt failed (see \"When a wait begins\"), so that `acquisitions` less `waits` went straight in and `waits` / `acquisitions` (`compare`'s `waited_share`) says whether the threads queue or take turns; in the other workloads, whose waits run from the start of `acquire`, nearly every one; null in records written before 6 December 2026"),
    metric!("waits_censored", "waits cut off by the window's end", Count, PT, Sum, Neither, NON_NEGATIVE,
        "waits still running at the end of the measured window; each counts in the wait statistics and in bypass with its length and grants so far (lower bounds), so a thread that never acquires shows a wait of at least the window"),
    metric!("reacquisitions", "re-acquisitions", Count, PT, Sum, Neither, NON_NEGATIVE,
        "acquisitions by the thread that held the lock last: no hand-off, so left out of `count`, `handoff_local_frac` and the hand-off table; null where the grant order was not recorded (native `recording = sampled`) unless the single-lock workload counted them by the holder's mark on its data line (`lines` ≥ 1; docs/native.md)"),
    metric!("throughput_ops_s", "throughput", OpsPerSec, P, Single, Higher, NON_NEGATIVE,
        "`ops` / measured window in seconds (wall time natively, virtual time simulated)"),
    metric!("speedup", "speedup over baseline", Ratio, &[], Single, Higher, NON_NEGATIVE,
        "throughput / throughput of the baseline point: the same point with the baseline lock (`over LOCK`), or the point named by `over LOCK[...]`"),
    metric!("cpu_ns_per_acq", "CPU time per acquisition", Nanos, P, Single, Lower, NON_NEGATIVE, true,
        "Σ thread CPU ns / Σ acquisitions (lockhammer's `cpu_ns/lock`); a simulated thread's CPU time is the window less its sleeps in the kernel (see below)"),
    metric!("overhead_ns", "overhead per acquisition", Nanos, P, Single, Lower, NON_NEGATIVE, true,
        "Σ over threads of max(0, CPU ns − acquisitions × (achieved critical + outside ns)) / Σ acquisitions (lockhammer; meant for the `single` workload, where each acquisition does one critical section and one outside)"),
    metric!("share", "share of acquisitions", Fraction, T, Sum, Neither, UNIT_INTERVAL,
        "a thread's acquisitions (in its wait class) / the point's Σ acquisitions"),
    metric!("jain", "Jain's fairness index (1 = fair)", Index, P, Single, Higher, UNIT_INTERVAL,
        "(Σ xᵢ)² / (n · Σ xᵢ²) over per-thread acquisitions xᵢ; 1 = perfectly fair, 1/n = one thread takes all"),
    metric!("cov_acq", "coefficient of variation of acquisitions", Index, P, Single, Lower, NON_NEGATIVE,
        "population standard deviation of per-thread acquisitions / their mean (lockhammer's `lasom`); 0 = fair"),
    metric!("max_min", "max/min acquisitions", Ratio, P, Single, Lower, (1.0, INF),
        "max / min per-thread acquisitions; 1 = fair, infinite when a thread never acquires"),
    metric!("fairness_factor", "fairness factor (0.5 = fair)", Fraction, P, Single, Lower, UNIT_INTERVAL,
        "acquisitions of the ⌊n/2⌋ threads that acquired most / Σ acquisitions (0.5 for one thread); 0.5 = fair, → 1 = starvation (CNA paper)"),
    metric!("window_fairness_factor_max", "worst windowed fairness factor", Fraction, P, Single, Lower, UNIT_INTERVAL, true,
        "the highest fairness factor over the full windows of `fairness_window_ns` inside the measured window"),
    metric!("wait_p50_ns", "wait p50", Nanos, PTH, WeightedMean, Lower, NON_NEGATIVE,
        "median wait to acquire: from the first failed attempt to holding the lock (zero when the first attempt succeeds) in the single-lock workload, from the start of `acquire` in the others (see \"When a wait begins\"); a wait still running at the end of the window counts up to the end (hand-offs: the next holder's wait)"),
    metric!("wait_p99_ns", "wait p99", Nanos, PTH, Max, Lower, NON_NEGATIVE,
        "99th percentile of the wait to acquire"),
    metric!("wait_p999_ns", "wait p99.9", Nanos, PT, Max, Lower, NON_NEGATIVE,
        "99.9th percentile of the wait to acquire"),
    metric!("wait_max_ns", "worst wait", Nanos, PTH, Max, Lower, NON_NEGATIVE,
        "the longest wait to acquire; a lower bound when it was still running at the end of the window (`wait_max_censored`)"),
    metric!("wait_mean_ns", "mean wait", Nanos, PT, WeightedMean, Lower, NON_NEGATIVE,
        "mean wait to acquire"),
    metric!("hold_mean_ns", "mean hold", Nanos, PT, WeightedMean, Neither, NON_NEGATIVE,
        "mean time from holding the lock to releasing it"),
    metric!("bypass_max", "worst bypass", Count, PT, Max, Lower, NON_NEGATIVE,
        "the most acquisitions by other threads while one thread waited (from a FIFO lock's doorway; at another lock in the single-lock workload, from the wait's first failed attempt, as the wait itself), a wait still running at the end of the window counting the grants until then (`bypass_max_censored`: a lower bound); at most threads − 1 for a FIFO lock"),
    metric!("bypass_mean", "mean bypass", Count, P, Single, Lower, NON_NEGATIVE,
        "mean acquisitions by other threads while a thread waited"),
    metric!("handoff_local_frac", "share of same-node hand-offs", Fraction, P, Single, Neither, UNIT_INTERVAL, true,
        "share of hand-offs (between two different threads) whose previous and next holder are on the same node"),
    metric!("cpu_ns", "CPU time", Nanos, T, Sum, Neither, NON_NEGATIVE, true,
        "a thread's CPU time in the measured window (simulated: the window less its sleeps in the kernel; none for a `wakeup` workload)"),
    metric!("cpu_wall_ratio", "CPU time / wall time", Ratio, P, Single, Higher, NON_NEGATIVE, true,
        "Σ thread CPU time / (measured window × threads); natively below about 0.97 a thread lost its CPU (noise gate); simulated, 1 less the share of the window the threads slept in the kernel; `compare --sim-vs-native` reports 1 less it as `off_cpu_share`, compared as a difference within 0.1"),
    metric!("critical_nominal_ns", "critical section, nominal", Nanos, P, Single, Neither, NON_NEGATIVE,
        "the critical-section length the workload asks for (mean of its distribution)"),
    metric!("critical_achieved_ns", "critical section, achieved", Nanos, P, Single, Neither, NON_NEGATIVE, true,
        "the critical-section length the work loop achieved, measured"),
    metric!("outside_nominal_ns", "outside work, nominal", Nanos, P, Single, Neither, NON_NEGATIVE,
        "the work between a release and the next acquire the workload asks for (mean of its distribution)"),
    metric!("outside_achieved_ns", "outside work, achieved", Nanos, P, Single, Neither, NON_NEGATIVE, true,
        "the outside work the work loop achieved, measured"),
    metric!("migrations_per_wakeup", "migrations per wake-up", Index, P, Single, Neither, NON_NEGATIVE, true,
        "`wakeup` workload, simulated: task migrations / wake-ups"),
    metric!("wake_latency_p50_ns", "wake-up latency p50", Nanos, P, Single, Lower, NON_NEGATIVE, true,
        "`wakeup` workload: median time from a wake-up to running"),
    metric!("wake_latency_p99_ns", "wake-up latency p99", Nanos, P, Single, Lower, NON_NEGATIVE, true,
        "`wakeup` workload: 99th percentile of the time from a wake-up to running"),
];

/// The metric of this name.
pub fn get(name: &str) -> Option<&'static Metric> {
    METRICS.iter().find(|m| m.name == name)
}

/// Every metric name, in registry order.
pub fn names() -> impl Iterator<Item = &'static str> + Clone {
    METRICS.iter().map(|m| m.name)
}

/// The metrics with a column in `table`, in registry order.
pub fn in_table(table: Table) -> impl Iterator<Item = &'static Metric> + Clone {
    METRICS.iter().filter(move |m| m.in_table(table))
}

const fn has_table(m: &Metric, table: Table) -> bool {
    let mut i = 0;
    while i < m.tables.len() {
        if m.tables[i] as u8 == table as u8 {
            return true;
        }
        i += 1;
    }
    false
}

/// How many metrics have a column in `table` (for [`names_in`]).
pub const fn count_in(table: Table) -> usize {
    let (mut i, mut n) = (0, 0);
    while i < METRICS.len() {
        if has_table(&METRICS[i], table) {
            n += 1;
        }
        i += 1;
    }
    n
}

/// The names of the metrics with a column in `table`, in registry order, as a
/// constant: `names_in::<{ count_in(Table::Threads) }>(Table::Threads)`. A wrong
/// `N` fails to compile.
pub const fn names_in<const N: usize>(table: Table) -> [&'static str; N] {
    let mut out = [""; N];
    let (mut i, mut n) = (0, 0);
    while i < METRICS.len() {
        if has_table(&METRICS[i], table) {
            out[n] = METRICS[i].name;
            n += 1;
        }
        i += 1;
    }
    assert!(n == N, "N must be count_in(table)");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_carry_their_unit() {
        let mut seen = std::collections::BTreeSet::new();
        for m in METRICS {
            assert!(seen.insert(m.name), "{} twice", m.name);
            if m.unit == Nanos {
                // `cpu_ns_per_acq` keeps lockhammer's spelling.
                assert!(m.name.contains("_ns"), "{}", m.name);
            }
            if m.name.ends_with("_ns") {
                assert_eq!(m.unit, Nanos, "{}", m.name);
            }
            if m.tables == [Points] {
                assert_eq!(m.combine, Single, "{}", m.name);
            }
            if m.in_table(Threads) || m.in_table(Handoffs) {
                assert_ne!(
                    m.combine, Single,
                    "{}: rows of a group must combine",
                    m.name
                );
            }
            assert!(m.range.0 <= m.range.1, "{}", m.name);
        }
    }

    #[test]
    fn table_names_are_constants_in_registry_order() {
        const THREADS: [&str; count_in(Threads)] = names_in::<{ count_in(Threads) }>(Threads);
        let listed: Vec<&str> = in_table(Threads).map(|m| m.name).collect();
        assert_eq!(THREADS.as_slice(), listed.as_slice());
        assert_eq!(
            names_in::<{ count_in(Handoffs) }>(Handoffs),
            ["count", "wait_p50_ns", "wait_p99_ns", "wait_max_ns"]
        );
        let counts: Vec<&str> = in_table(Threads)
            .take_while(|m| m.unit == Count)
            .map(|m| m.name)
            .collect();
        assert_eq!(
            counts,
            ["acquisitions", "waits", "waits_censored", "reacquisitions"]
        );
    }

    #[test]
    fn row_tables_weigh_by_their_own_count() {
        assert_eq!(Threads.weight_column(), "acquisitions");
        assert_eq!(Handoffs.weight_column(), "count");
        assert!(get("count").unwrap().in_table(Handoffs));
    }
}
