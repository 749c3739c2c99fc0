//! Workloads, written once over [`Env`] and run by both executors.
//!
//! An executor builds the point's locks and lines with [`build`], gives every thread a
//! `LocalState` and a `ThreadStats` with the classes of [`classes`], and drives
//! [`run_thread`] until `end_ns` (the end of the measured window in the `Env`'s clock).
//! `run_thread` returns the workload operations the thread completed inside the
//! window (acquisitions, passes or requests: `RunContext::ops`).
//!
//! The wake-up placement workload is simulator-only: natively it is calibration only,
//! and [`native_skip_reason`] says so.

pub mod bulk;
pub mod double;
pub mod single;

use crate::env::{Addr, Env, LineAlloc};
use crate::locks::clh::Clh;
use crate::locks::mcs::Mcs;
use crate::locks::os::OsLock;
use crate::locks::qspinlock::Qspinlock;
use crate::locks::tas::Tas;
use crate::locks::ticket::Ticket;
use crate::locks::ttas::Ttas;
use crate::locks::{AnyLock, LocalState, Lock};
use crate::stats::ThreadStats;
use locklab_model::plan::{Dist, Point, Workload};
use std::sync::atomic::Ordering::Relaxed;

/// The locks and shared data lines of one point. All locks of a point run one
/// algorithm; they are kept in a vector of that algorithm's type so that
/// [`run_thread`] picks the algorithm once, not at every operation.
#[derive(Debug)]
pub struct Locks {
    set: LockSet,
    /// First data line; lock `i`'s lines are `data + i * lines_per_lock ..`.
    data: u32,
    lines_per_lock: u32,
}

#[derive(Debug)]
enum LockSet {
    Tas(Vec<Tas>),
    Ttas(Vec<Ttas>),
    Ticket(Vec<Ticket>),
    Mcs(Vec<Mcs>),
    Clh(Vec<Clh>),
    Qspinlock(Vec<Qspinlock>),
    Os(Vec<OsLock>),
}

/// The typed view of `Locks` the workloads run on.
pub struct View<'a, L> {
    pub locks: &'a [L],
    data: u32,
    lines_per_lock: u32,
}

impl<L> View<'_, L> {
    pub fn len(&self) -> usize {
        self.locks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.locks.is_empty()
    }

    /// Word 0 of data line `l` of lock `i`: a counter each holder increments.
    pub fn data_addr(&self, lock: usize, l: u32) -> Addr {
        Addr::new(self.data + lock as u32 * self.lines_per_lock + l, 0)
    }

    /// Write the lock's data lines, as a holder would: a read-modify-write of word 0
    /// of each (non-atomic: two operations), so that a broken lock loses updates.
    pub async fn touch<E: Env>(&self, env: &E, lock: usize) {
        for l in 0..self.lines_per_lock {
            let a = self.data_addr(lock, l);
            let v = env.load(a, Relaxed).await;
            env.store(a, v + 1, Relaxed).await;
        }
    }
}

impl Locks {
    pub fn len(&self) -> usize {
        match &self.set {
            LockSet::Tas(v) => v.len(),
            LockSet::Ttas(v) => v.len(),
            LockSet::Ticket(v) => v.len(),
            LockSet::Mcs(v) => v.len(),
            LockSet::Clh(v) => v.len(),
            LockSet::Qspinlock(v) => v.len(),
            LockSet::Os(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn lines_per_lock(&self) -> u32 {
        self.lines_per_lock
    }

    /// Word 0 of data line `l` of lock `i`.
    pub fn data_addr(&self, lock: usize, l: u32) -> Addr {
        Addr::new(self.data + lock as u32 * self.lines_per_lock + l, 0)
    }

    /// Whether waiters may sleep in the kernel (the OS-backed baselines, natively).
    pub fn may_sleep(&self) -> bool {
        matches!(self.set, LockSet::Os(_))
    }
}

/// Number of locks a workload uses with `threads` threads.
pub fn lock_count(w: &Workload, threads: u32) -> usize {
    match w {
        Workload::SingleLock { .. } | Workload::Bulk { .. } => 1,
        // Per-CPU locks: lock index = thread index.
        Workload::DoubleLock { .. } => threads as usize,
        Workload::Wakeup(_) => 0,
    }
}

/// Shared data lines written per lock while holding it.
fn lines_per_lock(w: &Workload) -> u32 {
    match w {
        Workload::SingleLock { lines, .. }
        | Workload::DoubleLock { lines, .. }
        | Workload::Bulk { lines, .. } => *lines,
        Workload::Wakeup(_) => 0,
    }
}

/// Allocate the point's locks and data lines.
pub fn build(point: &Point, alloc: &mut LineAlloc) -> Locks {
    let n = point.threads as usize;
    let any: Vec<AnyLock> = (0..lock_count(&point.workload, point.threads))
        .map(|i| AnyLock::new(&point.lock.algo, alloc, n, i))
        .collect();
    let count = any.len() as u32;
    macro_rules! typed {
        ($variant:ident) => {
            LockSet::$variant(
                any.into_iter()
                    .map(|l| match l {
                        AnyLock::$variant(x) => x,
                        _ => unreachable!("one algorithm per point"),
                    })
                    .collect(),
            )
        };
    }
    let set = match AnyLock::new(&point.lock.algo, &mut LineAlloc::new(), 1, 0) {
        AnyLock::Tas(_) => typed!(Tas),
        AnyLock::Ttas(_) => typed!(Ttas),
        AnyLock::Ticket(_) => typed!(Ticket),
        AnyLock::Mcs(_) => typed!(Mcs),
        AnyLock::Clh(_) => typed!(Clh),
        AnyLock::Qspinlock(_) => typed!(Qspinlock),
        AnyLock::Os(_) => typed!(Os),
    };
    let per = lines_per_lock(&point.workload);
    let data = alloc.lines(per * count);
    Locks {
        set,
        data,
        lines_per_lock: per,
    }
}

/// Wait classes of a workload, class 0 first (`ThreadStats::new`).
pub fn classes(w: &Workload) -> Vec<String> {
    match w {
        Workload::SingleLock { .. } => vec!["lock".into()],
        Workload::DoubleLock { .. } => vec!["pass".into()],
        Workload::Bulk { mix, .. } => {
            let mut names: Vec<String> = Vec::new();
            for c in mix {
                if !names.contains(&c.name) {
                    names.push(c.name.clone());
                }
            }
            if names.is_empty() {
                names.push("request".into());
            }
            names
        }
        Workload::Wakeup(_) => vec!["wakeup".into()],
    }
}

/// Why the native executor cannot run this workload, if it cannot.
pub fn native_skip_reason(w: &Workload) -> Option<String> {
    match w {
        Workload::Wakeup(_) => Some(
            "wake-up placement is simulated only; natively it is calibration only (refill \
             cost and wake-up latency), not run as a point"
                .into(),
        ),
        _ => None,
    }
}

/// Run one thread of the workload until `end_ns`; returns its operations inside the
/// window.
pub async fn run_thread<E: Env>(
    w: &Workload,
    locks: &Locks,
    env: &E,
    local: &mut LocalState,
    stats: &mut ThreadStats,
    end_ns: u64,
) -> u64 {
    macro_rules! typed {
        ($v:expr) => {{
            let view = View {
                locks: $v.as_slice(),
                data: locks.data,
                lines_per_lock: locks.lines_per_lock,
            };
            run_typed(w, &view, env, local, stats, end_ns).await
        }};
    }
    match &locks.set {
        LockSet::Tas(v) => typed!(v),
        LockSet::Ttas(v) => typed!(v),
        LockSet::Ticket(v) => typed!(v),
        LockSet::Mcs(v) => typed!(v),
        LockSet::Clh(v) => typed!(v),
        LockSet::Qspinlock(v) => typed!(v),
        LockSet::Os(v) => typed!(v),
    }
}

/// `run_thread` once the algorithm is known.
pub async fn run_typed<E: Env, L: Lock>(
    w: &Workload,
    locks: &View<'_, L>,
    env: &E,
    local: &mut LocalState,
    stats: &mut ThreadStats,
    end_ns: u64,
) -> u64 {
    match w {
        Workload::SingleLock {
            critical, outside, ..
        } => single::run(critical, outside, locks, env, local, stats, end_ns).await,
        Workload::DoubleLock {
            policy,
            interval,
            own_hold,
            pair_hold,
            ..
        } => {
            let p = double::Params {
                policy: *policy,
                interval,
                own_hold,
                pair_hold,
            };
            double::run(&p, locks, env, local, stats, end_ns).await
        }
        Workload::Bulk {
            policy,
            mix,
            per_item,
            think,
            ..
        } => {
            bulk::run(
                *policy, mix, per_item, think, locks, env, local, stats, end_ns,
            )
            .await
        }
        Workload::Wakeup(_) => 0,
    }
}

/// A uniform draw in (0, 1] from `Env::random`.
fn unit<E: Env>(env: &E) -> f64 {
    ((env.random() >> 11) + 1) as f64 / (1u64 << 53) as f64
}

/// Draw a duration (ns) from `d`, deterministically from `Env::random`. Normal draws
/// are clamped at 0.
pub fn sample<E: Env>(d: &Dist, env: &E) -> u64 {
    match *d {
        Dist::Fixed { ns } => ns,
        Dist::Uniform { lo_ns, hi_ns } => {
            let (lo, hi) = (lo_ns.min(hi_ns), lo_ns.max(hi_ns));
            lo + env.random() % (hi - lo + 1)
        }
        Dist::Exp { mean_ns } => (-(mean_ns as f64) * unit(env).ln()).round() as u64,
        Dist::Normal { mean_ns, sd_ns } => {
            // Box-Muller.
            let (u1, u2) = (unit(env), unit(env));
            let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
            (mean_ns as f64 + sd_ns as f64 * z).max(0.0).round() as u64
        }
    }
}

/// The (critical, outside) durations per operation a workload asks for, ns.
pub fn nominal_durations(w: &Workload) -> (f64, f64) {
    match w {
        Workload::SingleLock {
            critical, outside, ..
        } => (critical.mean_ns(), outside.mean_ns()),
        Workload::DoubleLock {
            pair_hold,
            interval,
            ..
        } => (pair_hold.mean_ns(), interval.mean_ns()),
        Workload::Bulk {
            mix,
            per_item,
            think,
            ..
        } => {
            let w: f64 = mix.iter().map(|c| c.weight as f64).sum();
            let items = if w > 0.0 {
                mix.iter()
                    .map(|c| c.weight as f64 * c.items as f64)
                    .sum::<f64>()
                    / w
            } else {
                1.0
            };
            (per_item.mean_ns() * items, think.mean_ns())
        }
        Workload::Wakeup(s) => (s.burst.mean_ns(), s.sleep.mean_ns()),
    }
}
