//! Per-thread recording and the metric definitions of docs/metrics.md.
//!
//! Each thread owns one `ThreadStats` (no shared hot spot); after the run the executor
//! hands all of them to `summarize`, which produces the `RunRecord`. Native and
//! simulated runs share this code, so a metric means the same in both.
//!
//! A wait still running when the measured window ends is not dropped: it counts in
//! every wait statistic with its length up to the end of the window (a lower bound),
//! and in bypass with the grants to others since its doorway, and the records say how
//! many waits were cut off (`waits_censored`) and whether a maximum is such a lower
//! bound. The workloads say when a wait begins ([`ThreadStats::wait`]) and ends
//! ([`ThreadStats::granted`]). A native thread finishes its wait after the window (no
//! one arrives any more), and `granted` records it as cut off at the end; the
//! simulator stops at the end of the window, and the executor records each thread
//! still waiting then with [`ThreadStats::censor`].
//!
//! Hand-offs are between different threads: a thread that takes the lock again after
//! holding it last (`Handoff::Reacquired`) is counted in `reacquisitions`, not in the
//! hand-off table nor in `handoff_local_frac`.

use crate::env::Handoff;
use hdrhistogram::Histogram;
use locklab_model::plan::{Mode, Recording};
use locklab_model::records::{
    HandoffRecord, PointRecord, RunRecord, SkipCause, ThreadRecord, CDF_QUANTILES,
};
use std::borrow::Cow;
use std::collections::BTreeMap;

/// Histograms resolve 1 ns with 3 significant digits and grow to the largest value
/// recorded. A fixed 1 ns .. 1000 s range cost 256 KiB per histogram up front, about
/// 180 MB per 142-thread point with its per-node hand-off histograms, and a sixth of a
/// simulated run's time in page faults; the bucket layout (and so every quantile) does
/// not depend on the range.
fn new_hist() -> Histogram<u64> {
    Histogram::new(3).expect("static histogram precision")
}

/// Record, growing the histogram as needed (`saturating_record` would clamp to its
/// current range instead). A zero is recorded as zero (a histogram's slot 0, apart
/// from 1 ns): a lock nobody waited for shows waits of 0, not of 1 ns.
fn record(h: &mut Histogram<u64>, ns: u64) {
    if h.record(ns).is_err() {
        h.saturating_record(ns);
    }
}

/// `h` with `zeros` more waits of zero. Zero waits are counted rather than recorded as
/// they happen: natively most uncontended acquisitions wait zero, and a histogram
/// update per acquisition would cost more than the lock.
fn with_zeros(h: &Histogram<u64>, zeros: u64) -> Cow<'_, Histogram<u64>> {
    if zeros == 0 {
        return Cow::Borrowed(h);
    }
    let mut h = h.clone();
    if h.record_n(0, zeros).is_err() {
        h.saturating_record_n(0, zeros);
    }
    Cow::Owned(h)
}

/// The measured window, in the executor's clock (ns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub start_ns: u64,
    pub end_ns: u64,
}

impl Window {
    pub fn contains(&self, t: u64) -> bool {
        t >= self.start_ns && t < self.end_ns
    }
    pub fn len_ns(&self) -> u64 {
        self.end_ns.saturating_sub(self.start_ns)
    }
}

#[derive(Debug, Clone)]
struct ClassStats {
    acquisitions: u64,
    /// Every wait above zero: those that ended in the window and those cut off by
    /// its end; `zero_waits` counts the others (see `with_zeros`).
    wait: Histogram<u64>,
    zero_waits: u64,
    wait_sum: u128,
    hold_sum: u128,
    holds: u64,
    bypass_max: u64,
    /// Waits cut off by the end of the window.
    censored: u64,
    /// The longest wait, and the largest bypass, of the waits that ended in the
    /// window and of those cut off by its end (0 when none).
    done_max: (u64, u64),
    censored_max: (u64, u64),
    /// Grants to this thread in the window after it held the lock last.
    reacquisitions: u64,
    /// Waits above zero that ended in the window: acquisitions that waited.
    waited: u64,
}

impl ClassStats {
    fn new() -> Self {
        ClassStats {
            acquisitions: 0,
            wait: new_hist(),
            zero_waits: 0,
            wait_sum: 0,
            hold_sum: 0,
            holds: 0,
            bypass_max: 0,
            censored: 0,
            done_max: (0, 0),
            censored_max: (0, 0),
            reacquisitions: 0,
            waited: 0,
        }
    }

    /// One wait: in the histogram (or `zero_waits`) and the sums, and in the maxima
    /// of its kind.
    #[inline]
    fn add_wait(&mut self, wait_ns: u64, bypass: u64, censored: bool) {
        if wait_ns == 0 {
            self.zero_waits += 1;
        } else {
            record(&mut self.wait, wait_ns);
            self.wait_sum += wait_ns as u128;
        }
        self.bypass_max = self.bypass_max.max(bypass);
        let m = if censored {
            self.censored += 1;
            &mut self.censored_max
        } else {
            self.waited += u64::from(wait_ns > 0);
            &mut self.done_max
        };
        *m = (m.0.max(wait_ns), m.1.max(bypass));
    }

    /// Whether the longest wait, and the largest bypass, belong to a wait cut off by
    /// the end of the window only (and are thus lower bounds).
    fn max_censored(&self) -> (bool, bool) {
        (
            self.censored_max.0 > self.done_max.0,
            self.censored_max.1 > self.done_max.1,
        )
    }

    /// Every wait of the class, zero waits included.
    fn waits(&self) -> Cow<'_, Histogram<u64>> {
        with_zeros(&self.wait, self.zero_waits)
    }
}

/// A wait in progress, as a workload announces it ([`ThreadStats::wait`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Waiting {
    /// The wait class it will be recorded in.
    pub class: usize,
    /// The lock it waits for (whose grants since the wait began, `LocalState::
    /// bypass`, are its bypass).
    pub lock: usize,
    /// When this wait began.
    pub since_ns: u64,
    /// What the same operation already waited before this wait (a bulk request's
    /// earlier acquisitions); 0 for most.
    pub waited_ns: u64,
    /// For a wait inside an operation granted once already (a bulk request retaking
    /// the lock): that first grant, under which `record_acquire` records the
    /// operation. `None` for an operation's first wait.
    pub op_granted_ns: Option<u64>,
}

impl Waiting {
    /// The first wait of an operation of `class` on `lock`, from `since_ns`.
    pub fn new(class: usize, lock: usize, since_ns: u64) -> Self {
        Waiting {
            class,
            lock,
            since_ns,
            waited_ns: 0,
            op_granted_ns: None,
        }
    }
}

/// The waits of the acquisitions handed over from one node.
#[derive(Debug, Clone)]
struct Handoffs {
    count: u64,
    /// Waits above zero; `zero_waits` counts the others (see `with_zeros`).
    wait: Histogram<u64>,
    zero_waits: u64,
}

impl Handoffs {
    /// One hand-off, after a wait of `wait_ns`.
    #[inline]
    fn add(&mut self, wait_ns: u64) {
        self.count += 1;
        if wait_ns == 0 {
            self.zero_waits += 1;
        } else {
            record(&mut self.wait, wait_ns);
        }
    }
}

/// What one thread saw. Recording calls are cheap and allocation-free.
#[derive(Debug, Clone)]
pub struct ThreadStats {
    pub cpu: u32,
    pub node: u32,
    window: Window,
    class_names: Vec<String>,
    classes: Vec<ClassStats>,
    bypass_sum: u128,
    bypass_n: u64,
    /// Index = previous holder's node; the wait of this thread when handed the lock.
    handoffs: Vec<Option<Handoffs>>,
    /// Acquisitions per fairness window (index = (t - start) / fairness_window_ns).
    window_counts: Vec<u32>,
    fairness_window_ns: u64,
    /// The wait in progress, between `wait` and `granted`.
    waiting: Option<Waiting>,
    /// Grants are recorded in order (bypass, hand-offs, re-acquisitions measured).
    grant_order: bool,
    /// Without the grant order, re-acquisitions are counted all the same
    /// ([`Self::count_reacquisitions`]).
    reacquisitions_counted: bool,
    /// Thread CPU time over the window: natively the OS's count; simulated, the
    /// window less the thread's sleeps in the kernel (none for a wake-up workload).
    pub cpu_ns: Option<u64>,
}

impl ThreadStats {
    /// `classes`: wait classes of the workload; class 0 is the main one.
    /// `fairness_window_ns = 0` disables windowed fairness.
    pub fn new(
        cpu: u32,
        node: u32,
        window: Window,
        classes: &[&str],
        fairness_window_ns: u64,
    ) -> Self {
        assert!(
            !classes.is_empty(),
            "a workload has at least one wait class"
        );
        let windows = if fairness_window_ns == 0 {
            0
        } else {
            window.len_ns().div_ceil(fairness_window_ns) as usize
        };
        ThreadStats {
            cpu,
            node,
            window,
            class_names: classes.iter().map(|s| s.to_string()).collect(),
            classes: classes.iter().map(|_| ClassStats::new()).collect(),
            bypass_sum: 0,
            bypass_n: 0,
            handoffs: Vec::new(),
            window_counts: vec![0; windows],
            fairness_window_ns,
            waiting: None,
            grant_order: true,
            reacquisitions_counted: false,
            cpu_ns: None,
        }
    }

    pub fn window(&self) -> Window {
        self.window
    }

    /// The thread starts waiting (before `acquire`).
    #[inline]
    pub fn wait(&mut self, w: Waiting) {
        self.waiting = Some(w);
    }

    /// The wait in progress, if the thread is waiting.
    pub fn waiting(&self) -> Option<Waiting> {
        self.waiting
    }

    /// The wait in progress began at `since_ns` (its first failed attempt), not at
    /// its announcement; `None`: its first attempt has not failed, so it has not
    /// waited, and there is nothing to cut off at the end of the window.
    pub fn wait_began(&mut self, since_ns: Option<u64>) {
        match since_ns {
            Some(t) => {
                if let Some(w) = &mut self.waiting {
                    w.since_ns = t;
                }
            }
            None => self.waiting = None,
        }
    }

    /// The wait in progress ended: the thread holds the lock since `granted_ns`, after
    /// `bypass` grants to others since its wait began. A wait that ended at or after the
    /// end of the window was still running then, and is recorded as cut off there
    /// (the native executor's threads finish their last wait after the window),
    /// unless `record_acquire` records its operation (granted first in the window).
    #[inline]
    pub fn granted(&mut self, granted_ns: u64, bypass: u64) {
        if let Some(w) = self.waiting {
            let op = w.op_granted_ns.unwrap_or(granted_ns);
            if granted_ns >= self.window.end_ns && !self.window.contains(op) {
                self.censor(bypass);
            }
        }
        self.waiting = None;
    }

    /// As [`ThreadStats::granted`], for a wait of `wait_ns` up to `granted_ns`: the wait
    /// began then, not at its announcement. Both executors time a single-lock wait
    /// from the first failed attempt (`Env::acquire_granted`), so a wait whose first
    /// attempt succeeded is zero, and is never cut off by the end of the window.
    #[inline]
    pub fn granted_after(&mut self, granted_ns: u64, wait_ns: u64, bypass: u64) {
        if let Some(w) = &mut self.waiting {
            w.since_ns = granted_ns.saturating_sub(wait_ns);
        }
        self.granted(granted_ns, bypass);
    }

    /// Record the wait in progress as cut off by the end of the window: its length up
    /// to the end (a lower bound) and `bypass`, the grants to others from where its wait
    /// began (`LocalState::bypass`: its doorway, for FIFO locks) to the end, or to its
    /// grant just after.
    /// Called by the simulator for each thread still waiting when the run stops.
    pub fn censor(&mut self, bypass: u64) {
        let Some(w) = self.waiting.take() else {
            return;
        };
        let end = self.window.end_ns;
        if w.since_ns >= end {
            return;
        }
        let wait_ns = w.waited_ns + (end - w.since_ns);
        self.classes[w.class].add_wait(wait_ns, bypass, true);
        self.bypass_sum += bypass as u128;
        self.bypass_n += 1;
    }

    /// One acquisition (or workload operation) of `class`, granted at `granted_ns`
    /// after waiting `wait_ns`; `bypass` = acquisitions by others while waiting;
    /// `from` = where the lock came from. Ignored outside the measured window.
    #[inline]
    pub fn record_acquire(
        &mut self,
        class: usize,
        granted_ns: u64,
        wait_ns: u64,
        bypass: u64,
        from: Handoff,
    ) {
        if !self.window.contains(granted_ns) {
            return;
        }
        // Inline, the common native case: a zero wait (counted, not recorded) from a
        // node seen before, and nothing per fairness window; the rest out of line.
        // Both paths record through `ClassStats::add_wait` and `Handoffs::add`.
        if wait_ns != 0 || self.fairness_window_ns != 0 || class >= self.classes.len() {
            return self.record_acquire_in_full(class, granted_ns, wait_ns, bypass, from);
        }
        match from {
            Handoff::Unheld => {}
            Handoff::Reacquired => self.classes[class].reacquisitions += 1,
            Handoff::From(node) => match self.handoffs.get_mut(node as usize) {
                Some(Some(h)) => h.add(0),
                _ => return self.record_acquire_in_full(class, granted_ns, 0, bypass, from),
            },
            Handoff::Unrecorded => {
                return self.record_acquire_in_full(class, granted_ns, 0, bypass, from)
            }
        }
        let c = &mut self.classes[class];
        c.acquisitions += 1;
        c.add_wait(0, bypass, false);
        self.bypass_sum += bypass as u128;
        self.bypass_n += 1;
    }

    /// `record_acquire` of a grant in the window, any wait.
    #[inline(never)]
    fn record_acquire_in_full(
        &mut self,
        class: usize,
        granted_ns: u64,
        wait_ns: u64,
        bypass: u64,
        from: Handoff,
    ) {
        let c = &mut self.classes[class];
        c.acquisitions += 1;
        if from == Handoff::Unrecorded {
            // The wait, without the grant order it was not recorded with.
            c.add_wait(wait_ns, 0, false);
        } else {
            c.add_wait(wait_ns, bypass, false);
            self.bypass_sum += bypass as u128;
            self.bypass_n += 1;
        }
        match from {
            Handoff::Unheld | Handoff::Unrecorded => {}
            Handoff::Reacquired => c.reacquisitions += 1,
            Handoff::From(node) => {
                let h = match self.handoffs.get_mut(node as usize) {
                    Some(Some(h)) => h,
                    _ => self.new_handoffs(node as usize),
                };
                h.add(wait_ns);
            }
        }
        self.count_in_fairness_window(granted_ns, 1);
    }

    /// `n` acquisitions of `class` granted at `granted_ns`, counted rather than
    /// recorded one by one (natively, those whose start did not read the clock).
    /// Without the grant order (`recording = sampled`) that is all that is known of
    /// them: their waits were not timed. With it, they are a run's only thread's
    /// acquisitions whose first attempt succeeded, and everything is known: each
    /// waited zero, bypassed no one and re-acquired the lock from itself. Ignored
    /// outside the measured window.
    pub fn count_acquires(&mut self, class: usize, granted_ns: u64, n: u64) {
        if n == 0 || !self.window.contains(granted_ns) {
            return;
        }
        let c = &mut self.classes[class];
        c.acquisitions += n;
        if self.grant_order {
            // As `add_wait(0, 0, false)` n times: the maxima stay as they are.
            c.zero_waits += n;
            c.reacquisitions += n;
            self.bypass_n += n;
        }
        self.count_in_fairness_window(granted_ns, n);
    }

    /// Of `n` acquisitions counted at `granted_ns` ([`Self::count_acquires`]), those
    /// whose first attempt failed: they count in `waits` (natively, where a counted
    /// acquisition's wait is known to have happened, though not timed). Ignored
    /// outside the measured window.
    pub fn count_waited(&mut self, class: usize, granted_ns: u64, n: u64) {
        if self.window.contains(granted_ns) {
            self.classes[class].waited += n;
        }
    }

    /// Whether grants are recorded in order (see [`Self::without_grant_order`]).
    pub fn grant_order(&self) -> bool {
        self.grant_order
    }

    /// Without the grant order, this thread's workload counts its re-acquisitions
    /// itself ([`Self::count_reacquisitions`]), so they are measured: its
    /// `reacquisitions`, and the point's if every thread's are, are counts, not none.
    pub fn counting_reacquisitions(&mut self) {
        self.reacquisitions_counted = true;
    }

    /// Whether this thread's re-acquisitions are measured, by the grant order or
    /// counted ([`Self::counting_reacquisitions`]).
    fn reacquisitions_measured(&self) -> bool {
        self.grant_order || self.reacquisitions_counted
    }

    /// `n` of the acquisitions of `class` granted at `granted_ns` were re-acquisitions
    /// (the thread held the lock last), known without the grant order: natively under
    /// `recording = sampled`, from the holder's mark on the lock's data line
    /// (`Locks::mark_holder`). Ignored outside the measured window.
    pub fn count_reacquisitions(&mut self, class: usize, granted_ns: u64, n: u64) {
        if n > 0 && self.window.contains(granted_ns) {
            self.classes[class].reacquisitions += n;
        }
    }

    /// `n` acquisitions at `granted_ns` (in the window) into its fairness window, if
    /// windowed fairness is on.
    fn count_in_fairness_window(&mut self, granted_ns: u64, n: u64) {
        if let Some(w) = (granted_ns - self.window.start_ns).checked_div(self.fairness_window_ns) {
            if let Some(slot) = self.window_counts.get_mut(w as usize) {
                *slot += n as u32;
            }
        }
    }

    /// This thread's grants are not recorded in order (native `recording =
    /// sampled`): its bypass and re-acquisitions, and the point's, are not measured
    /// (NaN, none) rather than zero.
    pub fn without_grant_order(mut self) -> Self {
        self.grant_order = false;
        self
    }

    /// A native thread's statistics under the run's `recording`: without the grant
    /// order under `sampled`. Every native executor makes its threads' statistics
    /// through this, since what [`Self::count_acquires`] records depends on it.
    pub fn recording(self, recording: Recording) -> Self {
        match recording {
            Recording::Exact => self,
            Recording::Sampled => self.without_grant_order(),
        }
    }

    /// The hand-offs from node `i`, created empty (out of line: once per node).
    #[cold]
    #[inline(never)]
    fn new_handoffs(&mut self, i: usize) -> &mut Handoffs {
        if self.handoffs.len() <= i {
            self.handoffs.resize_with(i + 1, || None);
        }
        self.handoffs[i].get_or_insert_with(|| Handoffs {
            count: 0,
            wait: new_hist(),
            zero_waits: 0,
        })
    }

    /// A hold of `class` that began at `granted_ns` and lasted `hold_ns`.
    pub fn record_hold(&mut self, class: usize, granted_ns: u64, hold_ns: u64) {
        if !self.window.contains(granted_ns) {
            return;
        }
        let c = &mut self.classes[class];
        c.hold_sum += hold_ns as u128;
        c.holds += 1;
    }

    pub fn acquisitions(&self, class: usize) -> u64 {
        self.classes[class].acquisitions
    }

    pub fn total_acquisitions(&self) -> u64 {
        self.classes.iter().map(|c| c.acquisitions).sum()
    }
}

/// Identity and context of one run, for the record.
#[derive(Debug, Clone)]
pub struct RunContext {
    pub point: u32,
    pub point_id: String,
    pub mode: Mode,
    pub rep: u32,
    pub seed: u64,
    pub lock: String,
    pub lock_algo: String,
    pub workload: String,
    /// Workload operations completed in the window (defaults to acquisitions if None).
    pub ops: Option<u64>,
    pub critical_nominal_ns: f64,
    pub critical_achieved_ns: f64,
    pub outside_nominal_ns: f64,
    pub outside_achieved_ns: f64,
    pub noise: String,
    /// Distance label between two nodes, for the hand-off table.
    pub node_distance: fn(u32, u32) -> &'static str,
    pub extra: BTreeMap<String, f64>,
}

pub fn default_node_distance(a: u32, b: u32) -> &'static str {
    if a == b {
        "local"
    } else {
        "remote"
    }
}

/// Fairness summaries over per-thread counts (docs/metrics.md).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fairness {
    pub jain: f64,
    pub cov: f64,
    pub max_min: f64,
    pub fairness_factor: f64,
}

pub fn fairness(counts: &[u64]) -> Fairness {
    let n = counts.len();
    let total: f64 = counts.iter().map(|&c| c as f64).sum();
    if n == 0 || total == 0.0 {
        return Fairness {
            jain: f64::NAN,
            cov: f64::NAN,
            max_min: f64::NAN,
            fairness_factor: f64::NAN,
        };
    }
    let mean = total / n as f64;
    let sumsq: f64 = counts.iter().map(|&c| (c as f64) * (c as f64)).sum();
    let var = counts
        .iter()
        .map(|&c| (c as f64 - mean).powi(2))
        .sum::<f64>()
        / n as f64;
    let max = *counts.iter().max().unwrap() as f64;
    let min = *counts.iter().min().unwrap() as f64;
    let mut sorted: Vec<u64> = counts.to_vec();
    sorted.sort_unstable_by(|a, b| b.cmp(a));
    let top: f64 = sorted.iter().take(n / 2).map(|&c| c as f64).sum();
    Fairness {
        jain: total * total / (n as f64 * sumsq),
        cov: var.sqrt() / mean,
        max_min: if min == 0.0 { f64::INFINITY } else { max / min },
        // One thread: the "top half" is empty; define as fair.
        fairness_factor: if n < 2 { 0.5 } else { top / total },
    }
}

fn quantile(h: &Histogram<u64>, q: f64) -> f64 {
    if h.is_empty() {
        f64::NAN
    } else {
        h.value_at_quantile(q) as f64
    }
}

fn nan_if_zero_div(a: f64, b: f64) -> f64 {
    if b == 0.0 {
        f64::NAN
    } else {
        a / b
    }
}

/// Turn per-thread stats into the run's records.
pub fn summarize(ctx: &RunContext, threads: &[ThreadStats]) -> RunRecord {
    let window_ns = threads.first().map(|t| t.window.len_ns()).unwrap_or(0);
    let nclasses = threads.first().map(|t| t.classes.len()).unwrap_or(0);
    let per_thread: Vec<u64> = threads.iter().map(|t| t.total_acquisitions()).collect();
    let acquisitions: u64 = per_thread.iter().sum();
    let f = fairness(&per_thread);
    // Bypass and re-acquisitions are measured only where every grant was recorded.
    let ordered = threads.iter().all(|t| t.grant_order);
    let reacquisitions_measured = threads.iter().all(|t| t.reacquisitions_measured());

    // Point-level histograms merge every thread and class.
    let mut all_wait = new_hist();
    let mut wait_sum = 0u128;
    let mut hold_sum = 0u128;
    let mut holds = 0u64;
    let mut bypass_max = 0u64;
    let mut bypass_sum = 0u128;
    let mut bypass_n = 0u64;
    let (mut censored, mut reacquisitions, mut waited) = (0u64, 0u64, 0u64);
    let (mut done_max, mut censored_max) = ((0u64, 0u64), (0u64, 0u64));
    for t in threads {
        for c in &t.classes {
            all_wait.add(&*c.waits()).expect("same histogram bounds");
            wait_sum += c.wait_sum;
            hold_sum += c.hold_sum;
            holds += c.holds;
            bypass_max = bypass_max.max(c.bypass_max);
            censored += c.censored;
            reacquisitions += c.reacquisitions;
            waited += c.waited;
            done_max = (done_max.0.max(c.done_max.0), done_max.1.max(c.done_max.1));
            censored_max = (
                censored_max.0.max(c.censored_max.0),
                censored_max.1.max(c.censored_max.1),
            );
        }
        bypass_sum += t.bypass_sum;
        bypass_n += t.bypass_n;
    }

    // Hand-off table: (from node, to node) merged over threads.
    let mut table: BTreeMap<(u32, u32), (u64, Histogram<u64>)> = BTreeMap::new();
    for t in threads {
        for (from, slot) in t.handoffs.iter().enumerate() {
            if let Some(h) = slot {
                let e = table
                    .entry((from as u32, t.node))
                    .or_insert_with(|| (0, new_hist()));
                e.0 += h.count;
                e.1.add(&*with_zeros(&h.wait, h.zero_waits))
                    .expect("same histogram bounds");
            }
        }
    }
    let handoff_total: u64 = table.values().map(|(n, _)| n).sum();
    let handoff_local: u64 = table
        .iter()
        .filter(|((a, b), _)| a == b)
        .map(|(_, (n, _))| n)
        .sum();

    // Windowed fairness: worst fairness factor over the full windows.
    let nwin = threads.first().map(|t| t.window_counts.len()).unwrap_or(0);
    let mut window_ff_max = f64::NAN;
    for w in 0..nwin {
        let full = (w as u64 + 1) * threads[0].fairness_window_ns <= window_ns;
        if !full {
            continue;
        }
        let counts: Vec<u64> = threads.iter().map(|t| t.window_counts[w] as u64).collect();
        let ff = fairness(&counts).fairness_factor;
        if ff.is_finite() {
            window_ff_max = if window_ff_max.is_nan() {
                ff
            } else {
                window_ff_max.max(ff)
            };
        }
    }

    let cpu_total: Option<u64> = threads.iter().map(|t| t.cpu_ns).sum();
    let secs = window_ns as f64 / 1e9;
    let ops = ctx.ops.unwrap_or(acquisitions);
    let per_acq_work = ctx.critical_achieved_ns + ctx.outside_achieved_ns;
    let (cpu_ns_per_acq, overhead_ns, cpu_wall_ratio) = match cpu_total {
        Some(cpu) => {
            // lockhammer: overhead clamped at 0 per thread.
            let overhead: f64 = threads
                .iter()
                .map(|t| {
                    let used = t.cpu_ns.unwrap_or(0) as f64;
                    (used - t.total_acquisitions() as f64 * per_acq_work).max(0.0)
                })
                .sum();
            (
                nan_if_zero_div(cpu as f64, acquisitions as f64),
                nan_if_zero_div(overhead, acquisitions as f64),
                nan_if_zero_div(cpu as f64, window_ns as f64 * threads.len() as f64),
            )
        }
        None => (f64::NAN, f64::NAN, f64::NAN),
    };

    let point = PointRecord {
        point: ctx.point,
        point_id: ctx.point_id.clone(),
        mode: ctx.mode,
        rep: ctx.rep,
        seed: ctx.seed,
        lock: ctx.lock.clone(),
        lock_algo: ctx.lock_algo.clone(),
        workload: ctx.workload.clone(),
        threads: threads.len() as u32,
        skipped: None,
        skip_cause: None,
        window_ns,
        acquisitions,
        ops,
        waits: Some(waited),
        waits_censored: censored,
        reacquisitions: reacquisitions_measured.then_some(reacquisitions),
        throughput_ops_s: nan_if_zero_div(ops as f64, secs),
        cpu_ns_per_acq,
        overhead_ns,
        jain: f.jain,
        cov_acq: f.cov,
        max_min: f.max_min,
        fairness_factor: f.fairness_factor,
        window_fairness_factor_max: window_ff_max,
        fairness_window_ns: threads.first().map(|t| t.fairness_window_ns).unwrap_or(0),
        wait_p50_ns: quantile(&all_wait, 0.5),
        wait_p99_ns: quantile(&all_wait, 0.99),
        wait_p999_ns: quantile(&all_wait, 0.999),
        wait_max_ns: if all_wait.is_empty() {
            f64::NAN
        } else {
            all_wait.max() as f64
        },
        wait_mean_ns: nan_if_zero_div(wait_sum as f64, all_wait.len() as f64),
        hold_mean_ns: nan_if_zero_div(hold_sum as f64, holds as f64),
        bypass_max: if bypass_n == 0 || !ordered {
            f64::NAN
        } else {
            bypass_max as f64
        },
        wait_max_censored: censored_max.0 > done_max.0,
        bypass_max_censored: censored_max.1 > done_max.1,
        bypass_mean: if ordered {
            nan_if_zero_div(bypass_sum as f64, bypass_n as f64)
        } else {
            f64::NAN
        },
        handoff_local_frac: nan_if_zero_div(handoff_local as f64, handoff_total as f64),
        cpu_wall_ratio,
        critical_nominal_ns: ctx.critical_nominal_ns,
        critical_achieved_ns: ctx.critical_achieved_ns,
        outside_nominal_ns: ctx.outside_nominal_ns,
        outside_achieved_ns: ctx.outside_achieved_ns,
        noise: ctx.noise.clone(),
        wait_cdf_ns: CDF_QUANTILES
            .iter()
            .map(|&q| {
                if q >= 1.0 && !all_wait.is_empty() {
                    all_wait.max() as f64
                } else {
                    quantile(&all_wait, q)
                }
            })
            .collect(),
        extra: ctx.extra.clone(),
    };

    let mut thread_rows = Vec::with_capacity(threads.len() * nclasses);
    for (i, t) in threads.iter().enumerate() {
        for (ci, c) in t.classes.iter().enumerate() {
            // Rows for secondary classes only when the class was used.
            if ci > 0 && c.acquisitions == 0 && c.censored == 0 {
                continue;
            }
            let (wait_max_censored, bypass_max_censored) = c.max_censored();
            let waits = c.waits();
            thread_rows.push(ThreadRecord {
                point: ctx.point,
                mode: ctx.mode,
                rep: ctx.rep,
                thread: i as u32,
                cpu: t.cpu,
                node: t.node,
                class: t.class_names[ci].clone(),
                acquisitions: c.acquisitions,
                waits: Some(c.waited),
                waits_censored: c.censored,
                reacquisitions: t.reacquisitions_measured().then_some(c.reacquisitions),
                share: nan_if_zero_div(c.acquisitions as f64, acquisitions as f64),
                wait_p50_ns: quantile(&waits, 0.5),
                wait_p99_ns: quantile(&waits, 0.99),
                wait_p999_ns: quantile(&waits, 0.999),
                wait_max_ns: if waits.is_empty() {
                    f64::NAN
                } else {
                    waits.max() as f64
                },
                wait_mean_ns: nan_if_zero_div(c.wait_sum as f64, waits.len() as f64),
                hold_mean_ns: nan_if_zero_div(c.hold_sum as f64, c.holds as f64),
                bypass_max: if t.grant_order {
                    c.bypass_max as f64
                } else {
                    f64::NAN
                },
                wait_max_censored,
                bypass_max_censored,
                cpu_ns: t.cpu_ns.map(|c| c as f64).unwrap_or(f64::NAN),
            });
        }
    }

    let handoffs = table
        .into_iter()
        .map(|((from, to), (count, h))| HandoffRecord {
            point: ctx.point,
            mode: ctx.mode,
            rep: ctx.rep,
            from_node: from,
            to_node: to,
            distance: (ctx.node_distance)(from, to).to_string(),
            count,
            wait_p50_ns: quantile(&h, 0.5),
            wait_p99_ns: quantile(&h, 0.99),
            wait_max_ns: h.max() as f64,
        })
        .collect();

    RunRecord {
        point,
        threads: thread_rows,
        handoffs,
    }
}

/// A record for a point that could not run, with the reason and its kind.
pub fn skipped(ctx: &RunContext, threads: u32, cause: SkipCause, reason: String) -> RunRecord {
    let mut rec = summarize(ctx, &[]);
    rec.point.threads = threads;
    rec.point.skipped = Some(reason);
    rec.point.skip_cause = Some(cause);
    rec
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fairness_of_equal_counts_is_perfect() {
        let f = fairness(&[10, 10, 10, 10]);
        assert_eq!(f.jain, 1.0);
        assert_eq!(f.cov, 0.0);
        assert_eq!(f.max_min, 1.0);
        assert_eq!(f.fairness_factor, 0.5);
    }

    #[test]
    fn fairness_of_starvation() {
        let f = fairness(&[100, 0, 100, 0]);
        assert_eq!(f.jain, 0.5);
        assert_eq!(f.fairness_factor, 1.0);
        assert!(f.max_min.is_infinite());
        assert!((f.cov - 1.0).abs() < 1e-12);
    }

    fn ctx() -> RunContext {
        RunContext {
            point: 0,
            point_id: "p".into(),
            mode: Mode::Sim,
            rep: 0,
            seed: 1,
            lock: "t".into(),
            lock_algo: "ticket".into(),
            workload: "single".into(),
            ops: None,
            critical_nominal_ns: 10.0,
            critical_achieved_ns: 10.0,
            outside_nominal_ns: 0.0,
            outside_achieved_ns: 0.0,
            noise: "sim".into(),
            node_distance: default_node_distance,
            extra: BTreeMap::new(),
        }
    }

    #[test]
    fn summarize_counts_only_the_window_and_builds_the_handoff_table() {
        let w = Window {
            start_ns: 100,
            end_ns: 1_100,
        };
        let mut a = ThreadStats::new(0, 0, w, &["lock"], 500);
        let mut b = ThreadStats::new(1, 1, w, &["lock"], 500);
        a.record_acquire(0, 50, 7, 0, Handoff::Unheld); // warm-up: ignored
        a.record_acquire(0, 200, 10, 0, Handoff::From(1));
        b.record_acquire(0, 300, 30, 1, Handoff::From(0));
        b.record_acquire(0, 700, 20, 0, Handoff::From(1));
        let r = summarize(&ctx(), &[a, b]);
        assert_eq!(r.point.acquisitions, 3);
        assert_eq!(r.point.window_ns, 1_000);
        assert!((r.point.throughput_ops_s - 3.0e6).abs() < 1e-6);
        assert_eq!(r.point.bypass_max, 1.0);
        assert_eq!(r.handoffs.len(), 3);
        let local = r
            .handoffs
            .iter()
            .find(|h| h.from_node == 1 && h.to_node == 1)
            .unwrap();
        assert_eq!(local.count, 1);
        assert!((r.point.handoff_local_frac - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(r.threads.len(), 2);
        assert_eq!(r.threads[1].acquisitions, 2);
        // Windows [100,600) and [600,1100): a=1,b=1 then a=0,b=1.
        assert_eq!(r.point.window_fairness_factor_max, 1.0);
        assert_eq!(r.point.waits_censored, 0);
        assert!(!r.point.wait_max_censored);
    }

    fn window() -> Window {
        Window {
            start_ns: 100,
            end_ns: 1_100,
        }
    }

    #[test]
    fn a_wait_cut_off_by_the_end_counts_as_a_lower_bound() {
        let mut a = ThreadStats::new(0, 0, window(), &["lock"], 0);
        let mut b = ThreadStats::new(1, 0, window(), &["lock"], 0);
        // `a` acquires twice, `b` waits from before the window to its end: the
        // simulator stops there and censors it with the grants it saw pass.
        a.record_acquire(0, 300, 5, 0, Handoff::From(0));
        a.record_acquire(0, 600, 5, 0, Handoff::Reacquired);
        b.wait(Waiting::new(0, 0, 50));
        assert_eq!(b.waiting().map(|w| w.lock), Some(0));
        b.censor(2);
        assert_eq!(b.waiting(), None);
        let r = summarize(&ctx(), &[a, b]);
        assert_eq!(r.point.waits_censored, 1);
        // At least the whole window: 1100 - 50.
        assert_eq!(r.point.wait_max_ns, 1_050.0);
        assert_eq!(r.point.bypass_max, 2.0);
        assert!(r.point.wait_max_censored && r.point.bypass_max_censored);
        assert_eq!(r.point.acquisitions, 2);
        assert_eq!(r.point.jain, 0.5);
        let starved = &r.threads[1];
        assert_eq!(starved.acquisitions, 0);
        assert_eq!(starved.waits_censored, 1);
        assert_eq!(starved.wait_max_ns, 1_050.0);
        assert_eq!(starved.wait_mean_ns, 1_050.0);
        assert!(starved.wait_max_censored);
        // The re-acquisition is no hand-off: one hand-off, same node.
        assert_eq!(r.point.reacquisitions, Some(1));
        assert_eq!(r.threads[0].reacquisitions, Some(1));
        assert_eq!(r.handoffs.len(), 1);
        assert_eq!(r.handoffs[0].count, 1);
        assert_eq!(r.point.handoff_local_frac, 1.0);
    }

    #[test]
    fn a_wait_ending_after_the_window_is_cut_off_at_its_end() {
        // Natively the last wait ends after the window: `granted` censors it.
        let mut a = ThreadStats::new(0, 0, window(), &["lock"], 0);
        a.wait(Waiting::new(0, 0, 1_000));
        a.granted(1_400, 3);
        a.record_acquire(0, 1_400, 400, 3, Handoff::From(0)); // outside: ignored
                                                              // A wait that ends inside the window is the acquisition's business.
        a.wait(Waiting::new(0, 0, 200));
        a.granted(250, 0);
        a.record_acquire(0, 250, 50, 0, Handoff::From(0));
        let r = summarize(&ctx(), &[a]);
        assert_eq!(r.point.waits_censored, 1);
        assert_eq!(r.point.acquisitions, 1);
        assert_eq!(r.point.wait_max_ns, 100.0);
        assert_eq!(r.point.bypass_max, 3.0);
        assert!(r.point.wait_max_censored);
        assert_eq!(r.point.wait_mean_ns, 75.0);
    }

    #[test]
    fn a_retake_ending_after_the_window_is_left_to_its_operation() {
        // A bulk request granted first in the window is recorded whole, after the
        // window, by `record_acquire`: its retake is not cut off on its own.
        let mut a = ThreadStats::new(0, 0, window(), &["lock"], 0);
        a.wait(Waiting {
            waited_ns: 40,
            op_granted_ns: Some(1_000),
            ..Waiting::new(0, 0, 1_050)
        });
        a.granted(1_200, 0);
        a.record_acquire(0, 1_000, 190, 0, Handoff::Unheld);
        let r = summarize(&ctx(), &[a]);
        assert_eq!(r.point.waits_censored, 0);
        assert_eq!(r.point.acquisitions, 1);
        assert_eq!(r.point.wait_max_ns, 190.0);
    }

    #[test]
    fn a_zero_wait_counts_the_same_inline_and_in_full() {
        // The inline path (no fairness windows, a node seen before) and the full one
        // record a zero wait alike, beside a censored wait and a real one.
        let run = |fairness_window_ns| {
            let mut a = ThreadStats::new(0, 0, window(), &["lock"], fairness_window_ns);
            a.record_acquire(0, 200, 40, 1, Handoff::From(1));
            a.record_acquire(0, 300, 0, 4, Handoff::From(1));
            a.record_acquire(0, 400, 0, 0, Handoff::Reacquired);
            a.record_acquire(0, 500, 0, 2, Handoff::Unheld);
            a.wait(Waiting::new(0, 0, 1_090));
            a.censor(3);
            summarize(&ctx(), &[a])
        };
        let (inline, full) = (run(0), run(500));
        for r in [&inline, &full] {
            assert_eq!(r.point.acquisitions, 4);
            assert_eq!(r.point.waits_censored, 1);
            assert_eq!(r.point.reacquisitions, Some(1));
            assert_eq!(r.point.wait_max_ns, 40.0);
            assert!(!r.point.wait_max_censored);
            // The zero wait with 4 grants passing it holds the largest bypass.
            assert_eq!(r.point.bypass_max, 4.0);
            assert!(!r.point.bypass_max_censored);
            // Five waits: 40, three zeros and 10 cut off.
            assert_eq!(r.point.wait_mean_ns, 10.0);
            assert_eq!(r.threads[0].wait_mean_ns, 10.0);
            // A zero wait reads as zero, not as the histogram's least nonzero value.
            assert_eq!(r.threads[0].wait_p50_ns, 0.0);
            assert_eq!(r.handoffs[0].count, 2);
            assert_eq!(r.handoffs[0].wait_max_ns, 40.0);
            assert_eq!(r.handoffs[0].wait_p50_ns, 0.0);
        }
    }

    #[test]
    fn sampled_recording_counts_every_grant_and_measures_no_grant_order() {
        // Native `recording = sampled`: a recorded acquisition in a few, the others
        // counted in bulk at the clock reading they reused; no bypass, no hand-offs.
        let run = |fairness_window_ns| {
            let mut a = ThreadStats::new(0, 0, window(), &["lock"], fairness_window_ns)
                .without_grant_order();
            let mut b = ThreadStats::new(1, 0, window(), &["lock"], fairness_window_ns)
                .without_grant_order();
            a.count_acquires(0, 50, 7); // warm-up: ignored
            a.record_acquire(0, 200, 30, 0, Handoff::Unrecorded);
            a.count_acquires(0, 200, 5);
            a.record_acquire(0, 700, 0, 0, Handoff::Unrecorded);
            a.count_acquires(0, 700, 3);
            a.count_acquires(0, 1_100, 4); // after the window: ignored
            b.record_acquire(0, 300, 90, 0, Handoff::Unrecorded);
            b.count_acquires(0, 300, 0);
            b.wait(Waiting::new(0, 0, 1_000));
            b.granted_after(1_150, 150, 0); // cut off at the end: 100
            summarize(&ctx(), &[a, b])
        };
        for r in [run(0), run(500)] {
            let p = &r.point;
            assert_eq!(p.acquisitions, 11);
            assert_eq!(r.threads[0].acquisitions, 10);
            assert_eq!(r.threads[1].acquisitions, 1);
            // The waits are the recorded ones only: 30, 0, 90 and 100 cut off.
            assert_eq!(p.wait_max_ns, 100.0);
            assert_eq!(p.wait_mean_ns, 55.0);
            assert_eq!(p.waits_censored, 1);
            // Not measured: not zero.
            assert_eq!(p.reacquisitions, None);
            assert_eq!(r.threads[0].reacquisitions, None);
            assert!(p.bypass_max.is_nan() && p.bypass_mean.is_nan());
            assert!(r.threads[1].bypass_max.is_nan());
            assert!(p.handoff_local_frac.is_nan());
            assert!(r.handoffs.is_empty());
        }
        // Counted acquisitions fall into their fairness windows too.
        let windowed = run(500);
        assert!(windowed.point.window_fairness_factor_max.is_finite());
    }

    #[test]
    fn reacquisitions_counted_without_the_grant_order_are_measured() {
        // Sampled, with the holder marking the data line: the re-acquisitions it
        // counted, in the window only; the point's once every thread counts them.
        let mut a = ThreadStats::new(0, 0, window(), &["lock"], 0).without_grant_order();
        let mut b = ThreadStats::new(1, 0, window(), &["lock"], 0).without_grant_order();
        a.counting_reacquisitions();
        a.count_acquires(0, 50, 7);
        a.count_reacquisitions(0, 50, 6); // warm-up: ignored
        a.count_acquires(0, 200, 5);
        a.count_reacquisitions(0, 200, 4);
        a.record_acquire(0, 300, 20, 0, Handoff::Unrecorded);
        a.count_reacquisitions(0, 300, 1);
        b.count_acquires(0, 400, 3);
        let one = summarize(&ctx(), &[a.clone(), b.clone()]);
        assert_eq!(one.threads[0].reacquisitions, Some(5));
        assert_eq!(one.threads[1].reacquisitions, None, "b does not count them");
        assert_eq!(
            one.point.reacquisitions, None,
            "not every thread counts them"
        );
        b.counting_reacquisitions();
        let both = summarize(&ctx(), &[a, b]);
        assert_eq!(both.point.reacquisitions, Some(5));
        assert_eq!(both.threads[1].reacquisitions, Some(0));
        assert!(both.point.bypass_max.is_nan(), "still no grant order");
    }

    #[test]
    fn waits_count_the_acquisitions_that_waited_recorded_or_counted() {
        // Recorded: a wait above zero is one, a zero wait is not, nor is a wait cut
        // off by the window's end, nor one granted outside the window.
        let mut a = ThreadStats::new(0, 0, window(), &["lock"], 0);
        a.record_acquire(0, 200, 0, 0, Handoff::Unheld);
        a.record_acquire(0, 300, 40, 0, Handoff::Unheld);
        a.record_acquire(0, 400, 7, 0, Handoff::Unheld);
        a.record_acquire(0, 50, 9, 0, Handoff::Unheld); // warm-up
        a.wait(Waiting::new(0, 0, 1_000));
        a.censor(0);
        // Counted (native `sampled`): the waited ones among them, in the window only.
        let mut b = ThreadStats::new(1, 0, window(), &["lock"], 0).without_grant_order();
        b.count_acquires(0, 50, 4);
        b.count_waited(0, 50, 4); // warm-up: ignored
        b.count_acquires(0, 500, 10);
        b.count_waited(0, 500, 3);
        let r = summarize(&ctx(), &[a, b]);
        assert_eq!(r.threads[0].waits, Some(2));
        assert_eq!(r.threads[0].waits_censored, 1);
        assert_eq!(r.threads[1].waits, Some(3));
        assert_eq!((r.point.waits, r.point.acquisitions), (Some(5), 13));
    }

    #[test]
    fn a_lone_threads_counted_acquisitions_are_recorded_as_zero_wait_reacquisitions() {
        // With the grant order kept (a run's only thread under `exact`), acquisitions
        // counted in bulk are recorded as each would have been one by one: zero
        // wait, no bypass, re-acquired from itself; in the window and its fairness
        // windows only.
        let one_by_one = |a: &mut ThreadStats, at: u64, n: u64| {
            for _ in 0..n {
                a.record_acquire(0, at, 0, 0, Handoff::Reacquired);
            }
        };
        let in_bulk = |a: &mut ThreadStats, at: u64, n: u64| a.count_acquires(0, at, n);
        for fairness_window_ns in [0, 300] {
            let run = |count: &dyn Fn(&mut ThreadStats, u64, u64)| {
                let mut a = ThreadStats::new(0, 0, window(), &["lock"], fairness_window_ns);
                a.record_acquire(0, 20, 0, 0, Handoff::Unheld); // warm-up: ignored
                count(&mut a, 50, 7); // warm-up: ignored
                a.wait(Waiting::new(0, 0, 200));
                a.granted_after(240, 40, 0);
                a.record_acquire(0, 240, 40, 0, Handoff::Reacquired);
                a.record_hold(0, 240, 30);
                count(&mut a, 240, 5);
                count(&mut a, 900, 3);
                count(&mut a, 1_100, 4); // after the window: ignored
                summarize(&ctx(), &[a])
            };
            let (bulk, single) = (run(&in_bulk), run(&one_by_one));
            // (As text: NaN fields, the unmeasured ones, are equal there.)
            assert_eq!(
                format!("{bulk:?}"),
                format!("{single:?}"),
                "fairness window {fairness_window_ns}"
            );
            assert_eq!(bulk.point.acquisitions, 9);
            assert_eq!(bulk.point.reacquisitions, Some(9));
            assert_eq!(bulk.point.wait_mean_ns, 40.0 / 9.0);
            assert_eq!((bulk.point.bypass_max, bulk.point.bypass_mean), (0.0, 0.0));
        }
    }

    #[test]
    fn a_wait_timed_from_its_first_failed_attempt_is_cut_off_from_there() {
        // Natively a wait runs from the first failed attempt, later than the wait's
        // announcement, and is zero when the first attempt succeeds.
        let mut a = ThreadStats::new(0, 0, window(), &["lock"], 0);
        a.wait(Waiting::new(0, 0, 1_000));
        a.granted_after(1_150, 0, 0); // granted at once, after the window
        a.wait(Waiting::new(0, 0, 900));
        a.granted_after(1_300, 250, 2); // waiting from 1050
        let r = summarize(&ctx(), &[a]);
        assert_eq!(r.point.waits_censored, 1);
        assert_eq!(r.point.wait_max_ns, 50.0);
        assert_eq!(r.point.bypass_max, 2.0);
    }
}
