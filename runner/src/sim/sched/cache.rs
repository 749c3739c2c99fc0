//! Cache warmth: what a task pays, as run time, for data that is cold where it runs.
//! Trade refills its own working set after a move to another core; messaging reads
//! each message through its core's L2 (LRU), from the LLC the message was written in.

use super::{Model, Role, NONE};
use crate::workload::wakeup::lines;
use locklab_model::plan::{Costs, Machine};
use locklab_model::topology::CpuMap;
use std::collections::VecDeque;

const DEFAULT_L2: u64 = 256 << 10;
const DEFAULT_LLC: u64 = 8 << 20;

/// Time to refill `bytes` at `per_line_ns` a line, `in_flight` lines at a time (the
/// topology's `misses_in_flight`: line-fill buffers shared by two SMT threads, and
/// pointer-linked data, the JVM heaps of both benchmarks, overlapping fewer).
fn refill_ns(bytes: u64, per_line_ns: u64, in_flight: u32) -> f64 {
    (lines(bytes) * per_line_ns) as f64 / in_flight.max(1) as f64
}

/// Messaging data in flight: a posted message (its payload and the socket, room and
/// JVM objects it drags along), read by every thread down the chain.
#[derive(Debug, Clone)]
pub(super) struct Msg {
    pub bytes: u64,
    /// LLC it was written in.
    pub llc: usize,
    /// Deliveries still to be read by client receivers.
    pub pending: u32,
    /// The client sender that posted it.
    pub owner: usize,
}

/// A core's L2: the messages it holds, least recently used first.
#[derive(Debug, Clone, Default)]
struct L2 {
    items: VecDeque<(u64, u64)>,
    used: u64,
}

impl L2 {
    /// Touch `id` (`bytes` long, at most `cap` of it fits); returns the bytes of it
    /// that were already here.
    fn touch(&mut self, id: u64, bytes: u64, cap: u64) -> u64 {
        let size = bytes.min(cap);
        if let Some(i) = self.items.iter().position(|&(x, _)| x == id) {
            let (_, b) = self.items.remove(i).expect("present");
            self.items.push_back((id, b));
            return b;
        }
        self.items.push_back((id, size));
        self.used += size;
        while self.used > cap {
            let (_, b) = self.items.pop_front().expect("over capacity");
            self.used -= b;
        }
        0
    }
}

/// The cache model of one point.
#[derive(Debug)]
pub(super) struct Cache {
    /// Trade's refill of its working set after a move within the LLC / across LLCs.
    pub refill_same_llc_ns: f64,
    pub refill_other_llc_ns: f64,
    /// Messaging refill time charged (in the window).
    pub charged_ns: f64,
    /// Per core.
    l2: Vec<L2>,
    l2_bytes: u64,
    /// Per line from the local LLC, from the other socket's.
    line_ns: (u64, u64),
    /// Misses overlapped while refilling.
    in_flight: u32,
}

impl Cache {
    /// `spec` gives the cache sizes (defaults: a 256 KiB L2, an 8 MiB LLC).
    pub fn new(map: &CpuMap, costs: &Costs, spec: Option<&Machine>, working_set: u64) -> Self {
        let l2 = spec.and_then(|m| m.l2_bytes).unwrap_or(DEFAULT_L2);
        let llc = spec.and_then(|m| m.llc_bytes).unwrap_or(DEFAULT_LLC);
        let ncores = map
            .cpus
            .iter()
            .map(|c| c.core as usize + 1)
            .max()
            .unwrap_or(1);
        let in_flight = costs.memory.misses_in_flight;
        Cache {
            refill_same_llc_ns: refill_ns(working_set.min(l2), costs.llc_ns.round_ns(), in_flight),
            refill_other_llc_ns: refill_ns(
                working_set.min(llc),
                costs.remote_ns.round_ns(),
                in_flight,
            ),
            charged_ns: 0.0,
            l2: vec![L2::default(); ncores],
            l2_bytes: l2,
            line_ns: (costs.llc_ns.round_ns(), costs.remote_ns.round_ns()),
            in_flight,
        }
    }
}

impl Model<'_> {
    /// Trade: task `t`, starting on `c`, refills its working set if it last ran on
    /// another core.
    pub(super) fn refill_own(&mut self, t: usize, c: usize) {
        let task = &self.tasks[t];
        let warm = task.warm_core;
        let (core, llc) = (self.cpus[c].core, self.cpus[c].llc);
        if task.role != Role::Trade || warm == core || warm == NONE {
            return;
        }
        let same = self.cpus.iter().any(|x| x.core == warm && x.llc == llc);
        self.tasks[t].remaining += if same {
            self.cache.refill_same_llc_ns
        } else {
            self.cache.refill_other_llc_ns
        };
    }

    /// Messaging: the running task `t` on `c` reads its input; the part of it missing
    /// from the core's L2 comes from the LLC it was written in (or the other socket's),
    /// `misses_in_flight` lines at a time, and is run time.
    pub(super) fn fill(&mut self, t: usize, c: usize) {
        let id = self.tasks[t].input;
        let Some(msg) = self.msgs.get(&id) else {
            return;
        };
        let (bytes, llc) = (msg.bytes, msg.llc);
        let core = self.cpus[c].core;
        let cache = &mut self.cache;
        let here = cache.l2[core].touch(id, bytes, cache.l2_bytes);
        let missing = bytes - here.min(bytes);
        if missing == 0 {
            return;
        }
        let per_line = if llc == self.cpus[c].llc {
            cache.line_ns.0
        } else {
            cache.line_ns.1
        };
        let cost = refill_ns(missing, per_line, cache.in_flight);
        self.tasks[t].remaining += cost;
        if self.in_window(self.now) {
            self.cache.charged_ns += cost;
        }
    }

    /// Messaging: `owner` on `c` writes a new message of the working-set size, to be
    /// delivered `pending` times; it is now in `c`'s core's L2.
    pub(super) fn create(&mut self, c: usize, pending: u32, owner: usize) -> u64 {
        let id = self.next_msg;
        self.next_msg += 1;
        let bytes = self.w.working_set_bytes;
        let llc = self.cpus[c].llc;
        let msg = Msg {
            bytes,
            llc,
            pending,
            owner,
        };
        self.msgs.insert(id, msg);
        let core = self.cpus[c].core;
        let cache = &mut self.cache;
        cache.l2[core].touch(id, bytes, cache.l2_bytes);
        id
    }
}

#[cfg(test)]
mod tests {
    use super::L2;

    #[test]
    fn l2_keeps_the_most_recent_objects_that_fit() {
        let mut l2 = L2::default();
        let cap = 256 << 10;
        assert_eq!(l2.touch(1, 128 << 10, cap), 0);
        assert_eq!(l2.touch(2, 128 << 10, cap), 0);
        // Both fit; touching 1 makes 2 the least recently used.
        assert_eq!(l2.touch(1, 128 << 10, cap), 128 << 10);
        assert_eq!(l2.touch(3, 128 << 10, cap), 0);
        assert_eq!(l2.touch(2, 128 << 10, cap), 0, "2 was evicted");
        assert_eq!(l2.used, cap);
        // An object larger than the cache keeps only what fits.
        assert_eq!(l2.touch(4, 1 << 20, cap), 0);
        assert_eq!(l2.touch(4, 1 << 20, cap), cap);
        assert_eq!(l2.items.len(), 1);
    }
}
