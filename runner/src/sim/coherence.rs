//! The per-line coherence model: who holds each cache line, and what a request costs.
//!
//! Each line has an exclusive holder (the last writer, while no one else has read it),
//! a set of sharers (every thread with a valid copy, the holder included), its words,
//! the time until which its directory is busy, and the threads parked on it by
//! `wait_until`. Sets are bitsets over *thread* indices of the point (a thread runs on
//! exactly one CPU, so this is the same as a set of CPUs, and smaller).
//!
//! The pricing rules (all times integer ns):
//!
//! - **Load** by x: free if x has a valid copy. Otherwise it is served at
//!   `max(now, busy_until)` and costs the transfer from the holder, or from the nearest
//!   sharer if the line is shared; `busy_until` moves to its completion, so N readers
//!   of a freshly written line pay about N transfers between them.
//! - **Read-modify-write** by x: free of transfer if x holds the line exclusively (or is
//!   its only sharer), else the transfer from the holder / nearest other sharer; plus
//!   `atomic_ns` either way. It occupies the line until it completes and its result is
//!   visible then.
//! - **Store** by x: priced like an RMW without `atomic_ns` for the *writer* (its RFO
//!   stalls it), but the new value is visible at the start of service and the store
//!   does not occupy the line. So a value handed to a thread spinning on the line
//!   reaches it one transfer after the store is issued: the one-way latency of the cost
//!   table is measured exactly that way (spin-read + store ping-pong, halved), and the
//!   model would double-charge it otherwise. A load followed by a store on a line last
//!   written elsewhere pays two transfers, as on real hardware (read, then upgrade).
//! - A write makes x the exclusive holder and invalidates every other copy; a load adds
//!   x to the sharers and demotes the holder to a sharer.
//! - A line nobody has touched yet costs nothing to bring in (memory latency is not
//!   part of this model; every run discards a warm-up).

use crate::env::{Word, WORDS_PER_LINE};
use locklab_model::plan::Costs;
use locklab_model::topology::{CpuMap, ThreadSlot};

/// Most threads a simulated point may have (the width of the sharer bitsets).
pub const MAX_THREADS: usize = locklab_model::cost::MAX_SIM_THREADS as usize;
const BITS_WORDS: usize = MAX_THREADS / 64;
pub(crate) const NONE: u32 = u32::MAX;

/// A set of thread indices.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Bits([u64; BITS_WORDS]);

impl Bits {
    #[inline]
    pub fn single(t: u32) -> Bits {
        // Built word by word: writing one word of a zeroed array and reading the
        // array back whole stalls on store forwarding (it was the hottest spot).
        let (i, bit) = ((t / 64) as usize, 1u64 << (t % 64));
        Bits(std::array::from_fn(|w| if w == i { bit } else { 0 }))
    }
    #[inline]
    pub fn insert(&mut self, t: u32) {
        self.0[(t / 64) as usize] |= 1 << (t % 64);
    }
    #[inline]
    pub fn contains(&self, t: u32) -> bool {
        self.0[(t / 64) as usize] & (1 << (t % 64)) != 0
    }
    /// No member other than `t` (computed in registers: copying the set to clear a
    /// bit and reading it back stalls on store forwarding).
    #[inline]
    pub fn subset_of_single(&self, t: u32) -> bool {
        let (i, bit) = ((t / 64) as usize, 1u64 << (t % 64));
        self.0
            .iter()
            .enumerate()
            .all(|(w, &v)| (if w == i { v & !bit } else { v }) == 0)
    }
    #[cfg(test)]
    #[inline]
    pub fn without(mut self, t: u32) -> Bits {
        self.0[(t / 64) as usize] &= !(1 << (t % 64));
        self
    }
    #[inline]
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|&w| w == 0)
    }
    #[inline]
    pub fn intersects(&self, o: &Bits) -> bool {
        self.0.iter().zip(o.0.iter()).any(|(a, b)| a & b != 0)
    }
    #[cfg(test)]
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.0.iter().enumerate().flat_map(|(i, &w)| {
            let mut w = w;
            std::iter::from_fn(move || {
                if w == 0 {
                    return None;
                }
                let b = w.trailing_zeros();
                w &= w - 1;
                Some(i as u32 * 64 + b)
            })
        })
    }
}

/// Transfer costs between the threads of a point, by the distance of their CPUs.
#[derive(Debug, Clone)]
pub(crate) struct Fabric {
    n: usize,
    /// `cost[a * n + b]`: one-way transfer from thread a's cache to thread b's.
    cost: Vec<u32>,
    /// Per thread, the other threads grouped by distance level, cheapest level first.
    levels: Vec<Vec<(u64, Bits)>>,
    pub atomic_ns: u64,
}

impl Fabric {
    pub fn new(map: &CpuMap, costs: &Costs, slots: &[ThreadSlot]) -> Fabric {
        let n = slots.len();
        assert!(n <= MAX_THREADS, "at most {MAX_THREADS} simulated threads");
        let mut cost = vec![0u32; n * n];
        for a in 0..n {
            for b in 0..n {
                cost[a * n + b] = map.transfer_ns(costs, slots[a].cpu, slots[b].cpu) as u32;
            }
        }
        // With a per-pair matrix every pair may differ: one level per distinct cost.
        let mut levels = Vec::with_capacity(n);
        for a in 0..n {
            let mut lv: Vec<(u64, Bits)> = Vec::new();
            for b in 0..n {
                if a == b {
                    continue;
                }
                let c = cost[a * n + b] as u64;
                match lv.iter_mut().find(|(lc, _)| *lc == c) {
                    Some((_, bits)) => bits.insert(b as u32),
                    None => lv.push((c, Bits::single(b as u32))),
                }
            }
            lv.sort_by_key(|(c, _)| *c);
            levels.push(lv);
        }
        Fabric {
            n,
            cost,
            levels,
            atomic_ns: costs.atomic_ns,
        }
    }

    #[inline]
    pub fn cost(&self, from: u32, to: u32) -> u64 {
        self.cost[from as usize * self.n + to as usize] as u64
    }

    /// Transfer to `to` from the nearest member of `set` other than `to`; 0 if none.
    #[inline]
    pub fn nearest(&self, to: u32, set: &Bits) -> u64 {
        for (c, bits) in &self.levels[to as usize] {
            if bits.intersects(set) {
                return *c;
            }
        }
        0
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Line {
    pub words: [Word; WORDS_PER_LINE],
    /// Exclusive holder, or `NONE` when the line is shared or untouched.
    pub owner: u32,
    pub sharers: Bits,
    pub busy_until: u64,
    /// Threads parked by `wait_until`, a FIFO list threaded through `Memory::next`.
    pub watch_head: u32,
    pub watch_tail: u32,
}

impl Line {
    fn new() -> Line {
        Line {
            words: [0; WORDS_PER_LINE],
            owner: NONE,
            sharers: Bits::default(),
            busy_until: 0,
            watch_head: NONE,
            watch_tail: NONE,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Load,
    Store,
    Rmw,
}

/// When a request completes for its issuer, and when its write (if any) becomes
/// visible to others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Timing {
    pub done: u64,
    pub visible: u64,
    /// It had to fetch the line (for counters and tests).
    pub miss: bool,
}

/// Every line of a point plus the watcher links.
#[derive(Debug, Clone)]
pub(crate) struct Memory {
    pub lines: Vec<Line>,
    /// Next thread in the watch list of the line a thread is parked on.
    pub next: Vec<u32>,
    pub fabric: Fabric,
}

impl Memory {
    pub fn new(nlines: u32, fabric: Fabric) -> Memory {
        Memory {
            lines: vec![Line::new(); nlines as usize],
            next: vec![NONE; fabric.n],
            fabric,
        }
    }

    /// Price a request from thread `x` on `line` at `now` and update the line's state.
    /// The caller applies the value change (if any) right after: state changes are
    /// applied in the order requests are issued, which is also the order the line
    /// serves them, so every thread sees one consistent history.
    #[inline]
    pub fn access(&mut self, x: u32, line: u32, kind: Kind, now: u64) -> Timing {
        let fab = &self.fabric;
        let l = &mut self.lines[line as usize];
        match kind {
            Kind::Load => {
                if l.sharers.contains(x) {
                    return Timing {
                        done: now,
                        visible: now,
                        miss: false,
                    };
                }
                let c = if l.owner != NONE {
                    fab.cost(l.owner, x)
                } else {
                    fab.nearest(x, &l.sharers)
                };
                let s = now.max(l.busy_until);
                let done = s + c;
                l.busy_until = done;
                l.owner = NONE;
                l.sharers.insert(x);
                Timing {
                    done,
                    visible: done,
                    miss: true,
                }
            }
            Kind::Store | Kind::Rmw => {
                let atomic = if kind == Kind::Rmw { fab.atomic_ns } else { 0 };
                let exclusive = l.owner == x || (l.owner == NONE && l.sharers.subset_of_single(x));
                let (c, miss) = if exclusive {
                    (0, false)
                } else if l.owner != NONE {
                    (fab.cost(l.owner, x), true)
                } else {
                    // `x`'s own distance levels never contain `x`.
                    (fab.nearest(x, &l.sharers), true)
                };
                let s = now.max(l.busy_until);
                l.owner = x;
                l.sharers = Bits::single(x);
                if kind == Kind::Rmw {
                    let done = s + c + atomic;
                    l.busy_until = done;
                    Timing {
                        done,
                        visible: done,
                        miss,
                    }
                } else {
                    l.busy_until = s;
                    Timing {
                        done: s + c,
                        visible: s,
                        miss,
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_iterate_in_order() {
        let mut b = Bits::default();
        for t in [3, 64, 200, 0] {
            b.insert(t);
        }
        assert_eq!(b.iter().collect::<Vec<_>>(), vec![0, 3, 64, 200]);
        assert!(b.contains(200) && !b.contains(199));
        assert!(b.without(3).without(0).without(64).without(200).is_empty());
    }
}
