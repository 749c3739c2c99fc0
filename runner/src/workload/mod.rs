//! Workloads, written once and run by both executors.
//!
//! A lock workload (single, double, bulk) is `async` code over [`Env`], generic over the
//! [`Lock`] type. An executor reads the workload's [`Shape`], picks the lock type with
//! `locks::with_lock`, builds the point's locks and lines with [`Locks::build`], gives
//! every thread a `LocalState` and a `ThreadStats` with the shape's classes, and drives
//! [`run_thread`] until `end_ns` (the end of the measured window in the `Env`'s clock).
//! `run_thread` returns the workload operations the thread completed inside the
//! window (acquisitions, passes or requests: `RunContext::ops`).
//!
//! The wake-up placement workload ([`wakeup`]) is not lock code: its tasks sleep and
//! wake each other, and each executor runs its scenario its own way (see there).

pub mod bulk;
pub mod dist;
pub mod double;
pub mod single;
pub mod wakeup;

use crate::env::{Addr, Env, LineAlloc};
use crate::locks::{LocalState, Lock, Site};
use crate::stats::ThreadStats;
use locklab_model::plan::Workload;
use std::future::Future;
use std::sync::atomic::Ordering::Relaxed;

/// What the executors need to know of a workload before running it; each workload
/// module defines its own.
#[derive(Debug, Clone, PartialEq)]
pub struct Shape {
    /// Wait classes, class 0 first (`ThreadStats::new`).
    pub classes: Vec<String>,
    /// Locks of the point.
    pub locks: usize,
    /// Shared data lines written per lock while holding it.
    pub lines_per_lock: u32,
    /// The nominal time one operation spends holding and outside the lock, ns
    /// (recorded next to what the executor achieved).
    pub critical_ns: f64,
    pub outside_ns: f64,
    /// One nominal cycle of a thread, ns: the spread of the simulated threads' start
    /// offsets.
    pub cycle_ns: f64,
    /// Whether the workload asks the holder `is_contended` ([`Site::asks_contended`]).
    pub asks_contended: bool,
}

/// The shape of `w` with `threads` threads.
pub fn shape(w: &Workload, threads: u32) -> Shape {
    match w {
        Workload::SingleLock {
            critical,
            outside,
            lines,
        } => single::Params { critical, outside }.shape(*lines),
        Workload::DoubleLock {
            policy,
            interval,
            own_hold,
            pair_hold,
            lines,
        } => double::Params {
            policy: *policy,
            interval,
            own_hold,
            pair_hold,
        }
        .shape(*lines, threads),
        Workload::Bulk {
            policy,
            mix,
            per_item,
            think,
            lines,
        } => bulk::Params {
            policy: *policy,
            mix,
            per_item,
            think,
        }
        .shape(*lines),
        Workload::Wakeup(spec) => wakeup::shape(spec),
    }
}

/// Run one thread of a lock workload until `end_ns`; returns its operations inside
/// the window. The wake-up workload runs no lock code: its executors run it (0 here).
pub async fn run_thread<E: Env, L: Lock>(
    w: &Workload,
    locks: &Locks<L>,
    env: &E,
    local: &mut LocalState,
    stats: &mut ThreadStats,
    end_ns: u64,
) -> u64 {
    let t = Thread {
        env,
        local,
        stats,
        end_ns,
    };
    match w {
        Workload::SingleLock {
            critical, outside, ..
        } => single::Params { critical, outside }.run(locks, t).await,
        Workload::DoubleLock {
            policy,
            interval,
            own_hold,
            pair_hold,
            ..
        } => {
            double::Params {
                policy: *policy,
                interval,
                own_hold,
                pair_hold,
            }
            .run(locks, t)
            .await
        }
        Workload::Bulk {
            policy,
            mix,
            per_item,
            think,
            ..
        } => {
            bulk::Params {
                policy: *policy,
                mix,
                per_item,
                think,
            }
            .run(locks, t)
            .await
        }
        Workload::Wakeup(_) => 0,
    }
}

/// Runs a future to completion on the spot: the native executor's `block_on`, whose
/// `Env` operations never wait.
pub trait Drive {
    fn drive<F: Future>(&self, f: F) -> F::Output;
}

/// [`run_thread`] driven by `d`, one operation per future where the workload has
/// steps (the single lock): the loop is then plain code around each step, which the
/// compiler treats as the hot loop it is and inlines the lock code into. Driving the
/// whole `run_thread` future kept every acquire a call (~10 ns each).
pub fn drive_thread<E: Env, L: Lock>(
    d: &impl Drive,
    w: &Workload,
    locks: &Locks<L>,
    env: &E,
    local: &mut LocalState,
    stats: &mut ThreadStats,
    end_ns: u64,
) -> u64 {
    match w {
        Workload::SingleLock {
            critical, outside, ..
        } => {
            let t = Thread {
                env,
                local,
                stats,
                end_ns,
            };
            single::Params { critical, outside }.run_driven(d, locks, t)
        }
        _ => d.drive(run_thread(w, locks, env, local, stats, end_ns)),
    }
}

/// One thread of a workload run: its `Env`, its lock state, its recording, and the end
/// of the measured window.
pub struct Thread<'t, E> {
    pub env: &'t E,
    pub local: &'t mut LocalState,
    pub stats: &'t mut ThreadStats,
    pub end_ns: u64,
}

/// The locks and shared data lines of one point, all of one algorithm `L`.
#[derive(Debug)]
pub struct Locks<L> {
    locks: Vec<L>,
    /// First data line; lock `i`'s lines are `data + i * lines_per_lock ..`.
    data: u32,
    lines_per_lock: u32,
}

impl<L: Lock> Locks<L> {
    /// Allocate the point's locks (each by `make`) and then their data lines.
    pub fn build(
        shape: &Shape,
        nthreads: usize,
        alloc: &mut LineAlloc,
        make: impl Fn(&mut LineAlloc, Site) -> L,
    ) -> Self {
        let locks: Vec<L> = (0..shape.locks)
            .map(|id| {
                let site = Site {
                    id,
                    nthreads,
                    asks_contended: shape.asks_contended,
                };
                make(alloc, site)
            })
            .collect();
        let per = shape.lines_per_lock;
        let data = alloc.lines(per * locks.len() as u32);
        Locks {
            locks,
            data,
            lines_per_lock: per,
        }
    }

    /// Whether waiters may sleep in the kernel (`Lock::MAY_SLEEP`).
    pub fn may_sleep(&self) -> bool {
        L::MAY_SLEEP
    }

    /// The windowed-fairness window of these locks (`Lock::fairness_window_ns`).
    pub fn fairness_window_ns(&self) -> u64 {
        self.locks.first().map_or(0, Lock::fairness_window_ns)
    }
}

impl<L> Locks<L> {
    pub fn len(&self) -> usize {
        self.locks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.locks.is_empty()
    }

    /// Lock `i`.
    pub fn get(&self, i: usize) -> &L {
        &self.locks[i]
    }

    /// All the locks, lock `i` at index `i`.
    pub fn all(&self) -> &[L] {
        &self.locks
    }

    pub fn lines_per_lock(&self) -> u32 {
        self.lines_per_lock
    }

    /// Word 0 of data line `l` of lock `lock`: a counter each holder increments.
    pub fn data_addr(&self, lock: usize, l: u32) -> Addr {
        Addr::new(self.data + lock as u32 * self.lines_per_lock + l, 0)
    }

    /// Write the lock's data lines, as a holder would: a read-modify-write of word 0
    /// of each (non-atomic: two operations), so that a broken lock loses updates. The
    /// lines are independent, so their misses are all started first, as an
    /// out-of-order core overlaps them (`Env::prefetch`).
    pub async fn touch<E: Env>(&self, env: &E, lock: usize) {
        for l in 0..self.lines_per_lock {
            env.prefetch(self.data_addr(lock, l)).await;
        }
        for l in 0..self.lines_per_lock {
            let a = self.data_addr(lock, l);
            let v = env.load(a, Relaxed).await;
            env.store(a, v + 1, Relaxed).await;
        }
    }

    /// Whether lock `lock` can count its re-acquisitions without the grant order
    /// ([`Locks::mark_holder`]): it has a data line to mark.
    pub fn can_mark_holder(&self) -> bool {
        self.lines_per_lock > 0
    }

    /// The holder's mark, for a holder that writes the lock's data lines anyway
    /// ([`Locks::touch`]): whether it held lock `lock` last, read from word 1 of the
    /// lock's first data line, where it then leaves its own mark (one more than its
    /// thread index). The line came with the lock, so this is a hit, and it tells a
    /// re-acquisition without the grant-order line of `recording = exact`. Needs a
    /// data line ([`Locks::can_mark_holder`]).
    #[inline(always)]
    pub async fn mark_holder<E: Env>(&self, env: &E, lock: usize) -> bool {
        let first = self.data_addr(lock, 0);
        let mark = Addr::new(first.line, 1);
        let me = env.tid() as u64 + 1;
        let last = env.load(mark, Relaxed).await;
        if last != me {
            env.store(mark, me, Relaxed).await;
        }
        last == me
    }
}
