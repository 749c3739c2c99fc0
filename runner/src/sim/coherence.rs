//! The memory model: who holds each cache line, what a request costs, and when its
//! effect is visible, under x86-TSO (`docs/simulator.md` gives every rule's source).
//!
//! Each line has an exclusive holder (modified or exclusive, while no one else has
//! read it), a set of sharers (every thread with a valid copy, the holder included),
//! its words, the time until which it is busy serving earlier requests, the last read
//! miss still in flight, and the threads parked on it by `wait_until`. Each hardware
//! thread ([`Hart`]) has a FIFO store buffer, its prefetches in flight and its own
//! jitter stream. Sets are bitsets over *thread* indices of the point (a thread runs on
//! exactly one CPU, so this is the same as a set of CPUs, and smaller).
//!
//! The rules (all times integer picoseconds, the engine's clock, wherever a name or a
//! comment here says ns; `T(a→b)` is the transfer by distance, `A` the atomic, every
//! non-zero latency jittered by the topology's `jitter`):
//!
//! - **Load** by x: free if x has a valid copy (the work durations include cache
//!   hits), or, right after x prefetched the line, when that fill arrives. A miss is
//!   served at `s = max(now, busy_until)`: from the holder if the line is modified or
//!   exclusive there (`T(holder→x)`; the holder keeps a shared copy, except under
//!   `memory { migratory }` when the holder had written it: then x takes the line
//!   whole, exclusive and clean, and the holder keeps nothing); from the LLC if
//!   it is shared with a copy in x's LLC domain (`llc_hit`, or the sibling's `T_smt`
//!   when cheaper); else from the nearest sharer. It completes no earlier than the
//!   read miss before it (whose data it may be waiting for) and occupies the line for
//!   `read_occupancy` only: reads of one line overlap.
//! - **Store** by x: retires into x's store buffer and x goes on at once (it stalls
//!   only when the buffer holds `store_buffer` stores, until the oldest commits). Its
//!   read-for-ownership goes out at once, starting at `max(now, busy_until)` and
//!   taking `T` from the holder, or from the farthest sharer (every copy is
//!   invalidated; `upgrade` × that when x holds a copy itself), or 0 if x holds the
//!   line alone; the store commits when it has the
//!   line and every older store of x has committed, and the line is busy until then.
//!   It is visible to others at its commit: until its read-for-ownership reaches the
//!   other copies (at the commit, or `request_arrival` × `T` after it left) a thread
//!   that held a copy keeps reading the old value from it, and one without a copy
//!   gets the old value from x (one transfer) if that arrives before the commit;
//!   after that a load misses and is served once the store has committed (one, or an
//!   RMW, that reaches the line before it has reached x, when the store fetched it,
//!   is decided only at the commit, after x's own accesses then, its RMW that waited
//!   for the store: [`Memory::store_in_flight`]); a spinner
//!   on the old value re-reads after the commit, when the `pause` it is in ends (the
//!   engine's `Core::wake_time`), or, if its re-read reaches the line before a commit
//!   later than the store's request is answered (`memory { request_arrival }`), at the
//!   commit, right after the store (`Core::queued_flight`).
//! - **Read-modify-write** by x (any `lock`ed instruction, a failed CAS included):
//!   drains x's store buffer (the engine issues it only once x's older stores have
//!   committed, so it reads and writes the line then, not earlier), then one
//!   read-for-ownership as for a store plus `A`; x waits for it, the line is busy from
//!   that request to its end (not during the drain), the result is visible at its end.
//!   k RMWs queued on one line thus complete `T + A` apart. Under `memory {
//!   drain_overlap = d }` the request went out `d` × the drain's wait earlier (if no
//!   other request reached the line meanwhile: the engine's call), and the line is
//!   busy from then; the RMW still completes no earlier than `A` after the drain.
//! - **Fence** by x: drains the store buffer, then `fence`.
//! - **Prefetch** by x (an independent miss an out-of-order core overlaps): a load
//!   miss that x does not wait for; at most `misses_in_flight` at a time, a further
//!   one starts when the oldest completes.
//! - A write makes x the exclusive holder and invalidates every other copy; a load
//!   adds x to the sharers and demotes the holder to a sharer (under `migratory`, a
//!   load of a written line makes x the only holder instead; until its data arrives
//!   there, x's own store or RMW and another core's request for the line wait, and
//!   another core's load, RMW or woken re-read is decided and priced only then,
//!   after what x does with the line the moment it arrives:
//!   [`Memory::taken_in_flight`]; a store, which retires at once, and a prefetch,
//!   which nothing waits for, still take their place where they are issued). The
//!   new state and value are applied when the request is issued (see
//!   [`Memory::request`]); its timing says
//!   when others can see it, and each line keeps the words as they were before each
//!   store still in flight, for the readers that may not see it yet.
//! - A line nobody has touched yet costs nothing to bring in (memory latency is not
//!   part of this model; every run discards a warm-up).

use crate::env::{Word, WORDS_PER_LINE};
use crate::rng::SplitMix64;
use locklab_model::plan::Costs;
use locklab_model::time::Ns;
use locklab_model::topology::{CpuMap, Distance, ThreadSlot};

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
    pub fn count(&self) -> u32 {
        self.0.iter().map(|w| w.count_ones()).sum()
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

/// Transfer costs between the threads of a point, by the distance of their CPUs, and
/// the memory model's constants, in picoseconds (the engine's clock).
#[derive(Debug, Clone)]
pub(crate) struct Fabric {
    n: usize,
    /// `cost[a * n + b]`: one-way transfer from thread a's cache to thread b's.
    cost: Vec<u64>,
    /// Per thread, the other threads grouped by distance level, cheapest level first.
    levels: Vec<Vec<(u64, Bits)>>,
    /// Per thread, the other threads sharing its last-level cache.
    llc_mates: Vec<Bits>,
    pub atomic_ps: u64,
    llc_hit_ps: u64,
    read_occupancy_ps: u64,
    fence_ps: u64,
    store_buffer: usize,
    misses_in_flight: usize,
    jitter_ppm: u32,
    /// `work_carry`: a `work` makes up its drawn error at the thread's next one.
    pub work_carry: bool,
    /// `work_overhead`: what each `work` costs beyond its length.
    pub work_overhead_ps: u64,
    upgrade_ppm: u64,
    /// `memory { migratory }`: a load of a line another core has written takes it.
    migratory: bool,
    /// `memory { request_arrival }`, parts per million: where a request reaches the
    /// line's holder (the engine's flights) and a store's read-for-ownership the
    /// other copies (0: where it is issued; a store's, not before it commits).
    pub request_arrival_ppm: u64,
    /// `memory { steal }`: what a core loses when another takes a line it is using.
    steal_ps: u64,
    /// How recently a core must have accessed a line to be using it when it is taken:
    /// one uncontended lock operation, `atomic + overhead` (the steal probe's loop).
    steal_window_ps: u64,
}

impl Fabric {
    pub fn new(map: &CpuMap, costs: &Costs, slots: &[ThreadSlot]) -> Fabric {
        let n = slots.len();
        assert!(n <= MAX_THREADS, "at most {MAX_THREADS} simulated threads");
        let mut cost = vec![0u64; n * n];
        let mut llc_mates = vec![Bits::default(); n];
        for a in 0..n {
            for b in 0..n {
                let (ca, cb) = (slots[a].cpu, slots[b].cpu);
                cost[a * n + b] = map.transfer_ns(costs, ca, cb).ps();
                let shared = matches!(
                    map.distance(ca, cb),
                    Distance::Same | Distance::Smt | Distance::Llc
                );
                if a != b && shared {
                    llc_mates[a].insert(b as u32);
                }
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
                let c = cost[a * n + b];
                match lv.iter_mut().find(|(lc, _)| *lc == c) {
                    Some((_, bits)) => bits.insert(b as u32),
                    None => lv.push((c, Bits::single(b as u32))),
                }
            }
            lv.sort_by_key(|(c, _)| *c);
            levels.push(lv);
        }
        let m = &costs.memory;
        Fabric {
            n,
            cost,
            levels,
            llc_mates,
            atomic_ps: costs.atomic_ns.ps(),
            llc_hit_ps: m.llc_hit_ns.ps(),
            read_occupancy_ps: m.read_occupancy_ns.ps(),
            fence_ps: m.fence_ns.ps(),
            store_buffer: m.store_buffer.max(1) as usize,
            misses_in_flight: m.misses_in_flight.max(1) as usize,
            jitter_ppm: costs.jitter_ppm,
            work_carry: costs.work_carry,
            work_overhead_ps: costs.work_overhead_ns.ps(),
            upgrade_ppm: m.upgrade_ppm as u64,
            migratory: m.migratory,
            request_arrival_ppm: m.request_arrival_ppm as u64,
            steal_ps: m.steal_ns.ps(),
            steal_window_ps: costs.atomic_ns.ps() + costs.overhead_ns.ps(),
        }
    }

    #[inline]
    pub fn cost(&self, from: u32, to: u32) -> u64 {
        self.cost[from as usize * self.n + to as usize]
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

    /// Transfer to `to` from the farthest member of `set` other than `to`; 0 if none.
    #[inline]
    pub fn farthest(&self, to: u32, set: &Bits) -> u64 {
        for (c, bits) in self.levels[to as usize].iter().rev() {
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
    /// Requests arriving earlier than this wait for it (the line serves them in order).
    pub busy_until: u64,
    /// The last read miss: who asked, and when its data arrives (a later read waits
    /// for it; the requester itself too, if the miss was a prefetch).
    fill_tid: u32,
    fill_done: u64,
    /// Stores issued to the line and not yet committed, oldest first. Until a store
    /// commits, other threads read the line as it was before it.
    pending: Vec<Pending>,
    /// Threads parked by `wait_until`, a FIFO list threaded through `Memory::next`.
    pub watch_head: u32,
    pub watch_tail: u32,
    /// When the last write's read-for-ownership started, if it invalidated other
    /// copies (else its commit): where a spinner's re-read may leave from
    /// (`memory { reread_overlap }`, [`Memory::woken_load`]).
    pub invalidated_at: u64,
    /// How long that read-for-ownership itself took (0 if it invalidated nothing):
    /// not the wait for older stores to commit, nor an RMW's own atomic.
    pub request_ps: u64,
    /// Written since its exclusive holder took it (modified, not exclusive-clean):
    /// under `memory { migratory }` a load of it by another core takes it whole.
    dirty: bool,
    /// The core this line was taken from while it was using it (`memory { steal }`,
    /// [`Memory::taken_from`]), or `NONE`: its next miss on the line takes `steal`
    /// at least.
    victim: u32,
}

impl Line {
    /// When the data of the read that took this line whole (`memory { migratory }`)
    /// reaches its new holder (0 if no such read is the line's last): the holder
    /// cannot pass the line on, nor write it, before it has it.
    #[inline]
    fn own_fill(&self) -> u64 {
        if self.owner != NONE && self.owner == self.fill_tid {
            self.fill_done
        } else {
            0
        }
    }

    fn new() -> Line {
        Line {
            words: [0; WORDS_PER_LINE],
            owner: NONE,
            sharers: Bits::default(),
            busy_until: 0,
            fill_tid: NONE,
            fill_done: 0,
            pending: Vec::new(),
            watch_head: NONE,
            watch_tail: NONE,
            invalidated_at: 0,
            request_ps: 0,
            dirty: false,
            victim: NONE,
        }
    }
}

/// A store in a store buffer: who issued it, when it commits, the line before it.
#[derive(Debug, Clone)]
struct Pending {
    writer: u32,
    commit: u64,
    /// When its read-for-ownership reaches the other copies and invalidates them
    /// (`memory { request_arrival }`; its commit without).
    invalidates: u64,
    before: [Word; WORDS_PER_LINE],
    /// Threads holding a copy of the line as it was before this store: they held a
    /// valid copy when it was issued, or read one since from the writer. Its request
    /// invalidates them, and with its commit the set is gone: the copies of the next
    /// pending store's "before" are that store's own set.
    stale: Bits,
    /// When the line its read-for-ownership fetched reaches the writer, a transfer
    /// after the request (0 if it held the line): from `invalidates` until then the
    /// line is on its way ([`Memory::store_in_flight`]).
    arrives: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Load,
    Store,
    Rmw,
    /// A load miss the issuer does not wait for (see the module docs).
    Prefetch,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Load => "load",
            Kind::Store => "store",
            Kind::Rmw => "rmw",
            Kind::Prefetch => "prefetch",
        }
    }
}

/// `ppm` parts per million of `t`, rounded to the nearest unit (the engine's
/// picosecond): a topology's share (`upgrade`, `rmw_run_ahead`, `reread_overlap`,
/// `request_arrival`, `drain_overlap`) applied to a duration. In 128 bits past what
/// 64 hold (a wait of seconds behind costs of up to a second each).
#[inline]
pub(crate) fn share_of(t: u64, ppm: u64) -> u64 {
    const WHOLE: u64 = 1_000_000;
    match t.checked_mul(ppm) {
        Some(x) => (x + WHOLE / 2) / WHOLE,
        None => ((t as u128 * ppm as u128 + WHOLE as u128 / 2) / WHOLE as u128) as u64,
    }
}

/// `t` · (1 + ppm/10⁶ · u), u = 2·hi/2³² − 1 ∈ [−1, 1), plus lo/2³² ∈ [0, 1) for
/// the stochastic rounding, floored; `hi` and `lo` are the halves of the random `r`.
/// `ppm` is at most 10⁶ (a topology's `jitter` at most half), so the sum is never
/// negative. The floor of the sum over 2³² · 10⁶ is taken as a shift and then a
/// division by 10⁶ in 64 bits, which the compiler turns into a multiplication: a
/// 128-bit division was a library call on every priced request and `work`.
#[inline]
fn jittered(t: u64, ppm: u32, r: u64) -> u64 {
    const ONE: i128 = 1 << 32;
    const MILLION: i128 = 1_000_000;
    let (hi, lo) = ((r >> 32) as i128, (r & 0xffff_ffff) as i128);
    let t = t as i128;
    let scaled = t * MILLION * ONE + t * ppm as i128 * (2 * hi - ONE) + lo * MILLION;
    debug_assert!(scaled >= 0, "jitter of {ppm} ppm");
    // ⌊⌊s / 2³²⌋ / 10⁶⌋ = ⌊s / (2³² · 10⁶)⌋ for s ≥ 0.
    let q = (scaled >> 32) as u128;
    match u64::try_from(q) {
        Ok(q) => q / MILLION as u64,
        Err(_) => (q / MILLION as u128) as u64,
    }
}

/// How a request left its core, when not simply when it is priced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Early {
    /// It leaves now.
    No,
    /// Sent this many ns earlier: a prefetch the core reached then, running ahead
    /// of a stall, or a locked read-modify-write's request for its line, sent while
    /// older stores drained (`memory { drain_overlap }`).
    RanAhead(u64),
    /// A load or read-modify-write of a line `holder` held, sent `ns` earlier and
    /// decided now, when it reaches that core (`memory { request_arrival }`).
    Flown { ns: u64, holder: u32 },
}

/// How a woken spinner's re-read left ([`Memory::woken_load`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reread {
    /// It leaves now, or this long before (`memory { reread_overlap }`: the write's
    /// read-for-ownership invalidated the spinner's copy first).
    HeadStart(u64),
    /// It left this long ago for `holder`, which held the line, and is decided now,
    /// where it lands (`memory { request_arrival }`), as any load that flew.
    Flown { ns: u64, holder: u32 },
    /// It reached the line after a flight of `flight` before the write that woke it
    /// committed at `commit`: it is served then, right after that write and before
    /// any later request (the engine's `Core::queued_flight`).
    Queued { flight: u64, commit: u64 },
}

/// How a read miss left before it is priced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sent {
    /// It has travelled this long already to the line's holder (0: it leaves now):
    /// its data comes the rest of a transfer after the line is free.
    Flown(u64),
    /// A woken spinner's re-read that left at this time ([`Memory::woken_load`]): its
    /// data arrives a transfer after that, but not before the line is free.
    Before(u64),
    /// A woken spinner's re-read that flew this long and waited at the line for the
    /// write that woke it ([`Reread::Queued`]): its data comes the rest of a transfer
    /// after the line is free. It takes the line before its holder has used it
    /// again, so it steals nothing (`memory { steal }`).
    Queued(u64),
}

/// When a request completes for its issuer, and when its write (if any) becomes
/// visible to others (for a prefetch: when its data arrives).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Timing {
    pub done: u64,
    pub visible: u64,
    /// It had to fetch the line (for counters and tests).
    pub miss: bool,
    /// A load served while another thread's store to the line is in flight: it reads
    /// the line as it was before that store ([`Memory::read_word`]).
    pub stale: bool,
}

/// Completion times, oldest first, of at most `cap` requests in flight.
#[derive(Debug, Clone)]
struct Ring {
    buf: Vec<u64>,
    head: usize,
    len: usize,
}

impl Ring {
    fn new(cap: usize) -> Ring {
        Ring {
            buf: vec![0; cap],
            head: 0,
            len: 0,
        }
    }
    /// Forget the requests complete by `now`.
    #[inline]
    fn retire(&mut self, now: u64) {
        while self.len > 0 && self.buf[self.head] <= now {
            self.pop();
        }
    }
    /// The oldest request's completion, removed; `now` when none.
    #[inline]
    fn pop(&mut self) -> Option<u64> {
        if self.len == 0 {
            return None;
        }
        let t = self.buf[self.head];
        self.head = (self.head + 1) % self.buf.len();
        self.len -= 1;
        Some(t)
    }
    /// Room for one more: the time it can start (when the oldest completes, if full).
    #[inline]
    fn make_room(&mut self, now: u64) -> u64 {
        self.retire(now);
        if self.len == self.buf.len() {
            self.pop().map_or(now, |t| t.max(now))
        } else {
            now
        }
    }
    #[inline]
    fn push(&mut self, t: u64) {
        debug_assert!(self.len < self.buf.len());
        let i = (self.head + self.len) % self.buf.len();
        self.buf[i] = t;
        self.len += 1;
    }
    /// The newest request's completion (0 if none).
    #[inline]
    fn last(&self) -> u64 {
        if self.len == 0 {
            0
        } else {
            self.buf[(self.head + self.len - 1) % self.buf.len()]
        }
    }
    #[inline]
    fn clear(&mut self) {
        self.len = 0;
    }
}

/// One hardware thread's private memory state.
#[derive(Debug, Clone)]
struct Hart {
    /// Commit times of the stores in the store buffer (FIFO, so non-decreasing).
    store_buffer: Ring,
    /// Completion times of the prefetches in flight.
    fills: Ring,
    /// Draws of the jitter (its own stream, so that it never shifts the thread's
    /// `Env::random` numbers).
    jitter: SplitMix64,
}

/// Every line of a point, the hardware threads, and the watcher links.
#[derive(Debug, Clone)]
pub(crate) struct Memory {
    pub lines: Vec<Line>,
    /// Next thread in the watch list of the line a thread is parked on.
    pub next: Vec<u32>,
    pub fabric: Fabric,
    harts: Vec<Hart>,
    /// The requests priced within a window of time, when asked (`locklab trace`).
    trace: Option<Box<Trace>>,
}

/// The requests of a window of virtual time, as [`Memory`] priced them.
#[derive(Debug, Clone)]
struct Trace {
    from_ps: u64,
    to_ps: u64,
    events: Vec<TraceEvent>,
}

impl Trace {
    /// Whether `now` lies in the window (its end excluded: a run stops there).
    fn covers(&self, now: u64) -> bool {
        (self.from_ps..self.to_ps).contains(&now)
    }
}

/// One request as the memory model priced it: what `locklab trace` prints.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TraceEvent {
    /// When it was issued (virtual ns, to the picosecond).
    pub at_ns: Ns,
    /// The simulated thread that issued it.
    pub thread: u32,
    /// `load`, `store`, `rmw`, `prefetch`, or `reread` (a spinner's re-read after a
    /// write woke it); or, for no request, `waits` (the thread's acquisition, its
    /// first attempt failed, starts to wait: its first `pause` or spin) and
    /// `granted` (it holds the lock).
    pub op: &'static str,
    /// The cache line, by its index in allocation order (none for a mark).
    pub line: Option<u32>,
    /// The lock granted (a `granted` mark), by its index in the point.
    pub lock: Option<u32>,
    /// The thread holding the line modified or exclusive when it was issued, if any.
    pub holder: Option<u32>,
    /// How many threads held a valid copy then.
    pub copies: u32,
    /// How long it had been on its way to the line's holder before it was priced
    /// at `at_ns` (`memory { request_arrival }`; 0 without): the thread issued it
    /// that much earlier.
    pub flew_ns: Ns,
    /// When the issuer may go on (for a store, at once unless the store buffer is
    /// full: it retires into the buffer).
    pub done_ns: Ns,
    /// When its effect is visible to other threads (a store's commit).
    pub visible_ns: Ns,
    /// Whether it had to fetch the line or ask for ownership.
    pub miss: bool,
}

/// The salt of the jitter streams: thread seed ⊕ this, so they differ from the
/// thread's `Env::random` stream.
const JITTER_SALT: u64 = 0x6a09_e667_f3bc_c908;

impl Memory {
    /// `seeds[i]`: thread i's seed (its jitter stream derives from it).
    pub fn new(nlines: u32, fabric: Fabric, seeds: &[u64]) -> Memory {
        assert_eq!(seeds.len(), fabric.n);
        let harts = seeds
            .iter()
            .map(|&s| Hart {
                store_buffer: Ring::new(fabric.store_buffer),
                fills: Ring::new(fabric.misses_in_flight),
                jitter: SplitMix64::new(crate::rng::mix(s, JITTER_SALT)),
            })
            .collect();
        Memory {
            lines: vec![Line::new(); nlines as usize],
            next: vec![NONE; fabric.n],
            fabric,
            harts,
            trace: None,
        }
    }

    /// Record every request priced from `from_ps` up to (not including) `to_ps`
    /// (virtual time).
    pub fn trace(&mut self, from_ps: u64, to_ps: u64) {
        self.trace = Some(Box::new(Trace {
            from_ps,
            to_ps,
            events: Vec::new(),
        }));
    }

    /// The requests recorded so far (see [`Memory::trace`]).
    pub fn take_trace(&mut self) -> Vec<TraceEvent> {
        self.trace
            .as_mut()
            .map(|t| std::mem::take(&mut t.events))
            .unwrap_or_default()
    }

    /// Mark what thread `x` does at `now` that is no request (`waits`, `granted`),
    /// if a trace window covers it.
    #[inline]
    pub fn mark(&mut self, x: u32, now: u64, op: &'static str, lock: Option<u32>) {
        let Some(t) = self.trace.as_mut() else { return };
        if t.covers(now) {
            t.events.push(TraceEvent {
                at_ns: Ns::from_ps(now),
                thread: x,
                op,
                line: None,
                lock,
                holder: None,
                copies: 0,
                flew_ns: Ns::ZERO,
                done_ns: Ns::from_ps(now),
                visible_ns: Ns::from_ps(now),
                miss: false,
            });
        }
    }

    /// Note a request about to be priced, if a trace window covers `now`: the line's
    /// holder and copies before it.
    fn traced(&self, line: u32, now: u64) -> Option<(Option<u32>, u32)> {
        let t = self.trace.as_ref()?;
        t.covers(now).then(|| {
            let l = &self.lines[line as usize];
            let holder = (l.owner != NONE).then_some(l.owner);
            (holder, l.sharers.count())
        })
    }

    #[cold]
    fn record(
        &mut self,
        x: u32,
        line: u32,
        op: &'static str,
        (now, flew): (u64, u64),
        before: (Option<u32>, u32),
        t: &Timing,
    ) {
        if let Some(tr) = self.trace.as_mut() {
            tr.events.push(TraceEvent {
                at_ns: Ns::from_ps(now),
                thread: x,
                op,
                line: Some(line),
                lock: None,
                holder: before.0,
                copies: before.1,
                flew_ns: Ns::from_ps(flew),
                done_ns: Ns::from_ps(t.done),
                visible_ns: Ns::from_ps(t.visible),
                miss: t.miss,
            });
        }
    }

    /// `t` drawn uniformly within ± the jitter of its nominal value, rounded
    /// stochastically so that the mean stays `t` (integer arithmetic only, so the
    /// result is the same on every platform). 0 stays 0.
    #[inline]
    pub fn jitter(&mut self, x: u32, t: u64) -> u64 {
        let ppm = self.fabric.jitter_ppm;
        if t == 0 || ppm == 0 {
            return t;
        }
        let r = self.harts[x as usize].jitter.next_u64();
        jittered(t, ppm, r)
    }

    /// A duration drawn uniformly from `0..t` (0 if `t` is 0) from thread `x`'s
    /// jitter stream: where in a repeating interval of `t` an outside event finds it.
    #[inline]
    pub fn phase(&mut self, x: u32, t: u64) -> u64 {
        if t == 0 {
            return 0;
        }
        let r = self.harts[x as usize].jitter.next_u64();
        ((r as u128 * t as u128) >> 64) as u64
    }

    /// Price a request from thread `x` on `line` at `now` and update the line's state.
    /// The caller applies the value change (if any) right after: state changes are
    /// applied in the order requests are issued, and the line serves them in that
    /// order (each starts no earlier than `busy_until`), so every thread sees one
    /// consistent history. A reader never sees a write before its commit: it is
    /// served after it.
    ///
    /// A request may have left before `now` ([`Early`]): a prefetch the core reached `ahead` ns before `now` (running ahead of an
    /// earlier stall) is priced as if issued that much earlier, no earlier than the
    /// line's earlier requests, and its data arrives no earlier than `now`; so is a
    /// locked read-modify-write's request sent while older stores drained, which
    /// completes no earlier than its atomic after `now`. A load or
    /// read-modify-write that has flown to the line's holder and is decided now pays
    /// the rest of its transfer once the line is free (a request arriving while
    /// the holder's own access is in progress waits for it); if the line has moved
    /// on to another core meanwhile, it pays a whole transfer from there. Within a
    /// trace window ([`Memory::trace`]) it is recorded.
    #[inline]
    pub fn request(&mut self, x: u32, line: u32, kind: Kind, now: u64, early: Early) -> Timing {
        if self.trace.is_some() {
            return self.request_traced(x, line, kind, now, early);
        }
        self.price(x, line, kind, now, early)
    }

    /// [`Memory::request`] while a trace is on: kept out of the hot path.
    #[cold]
    #[inline(never)]
    fn request_traced(&mut self, x: u32, line: u32, kind: Kind, now: u64, early: Early) -> Timing {
        let before = self.traced(line, now);
        let t = self.price(x, line, kind, now, early);
        if let Some(before) = before {
            let flew = match early {
                Early::Flown { ns, .. } => ns,
                Early::No | Early::RanAhead(_) => 0,
            };
            self.record(x, line, kind.name(), (now, flew), before, &t);
        }
        t
    }

    /// [`Memory::request`] without the trace.
    #[inline]
    fn price(&mut self, x: u32, line: u32, kind: Kind, now: u64, early: Early) -> Timing {
        let (ahead, flown) = match early {
            Early::No => (0, 0),
            Early::RanAhead(ns) => (ns, 0),
            Early::Flown { ns, holder } if self.lines[line as usize].owner == holder => (0, ns),
            Early::Flown { .. } => (0, 0),
        };
        let least = self.victims_least(x, line);
        match kind {
            Kind::Load => {
                if let Some(t) = self.read_before_commit(x, line, now, flown) {
                    return t;
                }
                let l = &self.lines[line as usize];
                if l.sharers.contains(x) {
                    // A hit, unless our own prefetch of it is still in flight.
                    let done = if l.fill_tid == x && l.fill_done > now {
                        l.fill_done
                    } else {
                        now
                    };
                    return Timing {
                        done,
                        visible: done,
                        miss: false,
                        stale: false,
                    };
                }
                let done = self
                    .read_miss(x, line, now, Sent::Flown(flown))
                    .max((now + least).saturating_sub(flown));
                Timing {
                    done,
                    visible: done,
                    miss: true,
                    stale: false,
                }
            }
            Kind::Prefetch => {
                self.retire(line, now);
                let l = &self.lines[line as usize];
                if l.sharers.contains(x) || !l.pending.is_empty() {
                    return Timing {
                        done: now,
                        visible: now,
                        miss: false,
                        stale: false,
                    };
                }
                let room = self.harts[x as usize].fills.make_room(now);
                let at = if room == now {
                    now - ahead.min(now)
                } else {
                    room
                };
                let arrives = self.read_miss(x, line, at, Sent::Flown(0)).max(now);
                self.harts[x as usize].fills.push(arrives);
                Timing {
                    done: now,
                    visible: arrives,
                    miss: true,
                    stale: false,
                }
            }
            Kind::Store => {
                let h = &mut self.harts[x as usize];
                let issued = h.store_buffer.make_room(now);
                let after = h.store_buffer.last();
                let (lat, miss) = self.ownership(x, line);
                let lat = self.jitter(x, lat);
                let l = &mut self.lines[line as usize];
                // The read-for-ownership goes out when the store enters the buffer
                // (the core does not wait for older stores to commit before asking
                // for the line); the store commits, in order, once it has the line
                // and every older store has committed. The line stays ours until then.
                let start = issued.max(l.busy_until).max(l.own_fill());
                let no_sooner = if miss { issued + least } else { 0 };
                let commit = (start + lat).max(no_sooner).max(after);
                l.busy_until = commit;
                (l.invalidated_at, l.request_ps) = if miss { (start, lat) } else { (commit, 0) };
                // The request reaches the other copies after its flight, as any
                // request reaches the line's holder (`memory { request_arrival }`,
                // the mean share of its transfer); until then they stay valid, with
                // the old value. Without the share, until the commit.
                let a = self.fabric.request_arrival_ppm;
                let invalidates = if miss && a > 0 {
                    (start + share_of(lat, a)).min(commit)
                } else {
                    commit
                };
                let l = &mut self.lines[line as usize];
                if commit > now {
                    l.pending.retain(|p| p.commit > now);
                    // The copies valid before it: the line's holders now (with no
                    // store pending, its sharers; behind another writer's store, that
                    // writer and whoever has read the line since that store's request
                    // reached the copies).
                    l.pending.push(Pending {
                        writer: x,
                        commit,
                        invalidates,
                        before: l.words,
                        stale: l.sharers,
                        arrives: if miss { start + lat } else { 0 },
                    });
                }
                self.take(x, line);
                self.harts[x as usize].store_buffer.push(commit);
                Timing {
                    done: issued,
                    visible: commit,
                    miss,
                    stale: false,
                }
            }
            Kind::Rmw => {
                let drained = self.drain(x, now);
                let (lat, miss) = self.ownership(x, line);
                let lat = self.jitter(x, lat + self.fabric.atomic_ps);
                // A line it holds needs no request: nothing went out early.
                let ahead = if miss { ahead } else { 0 };
                let l = &mut self.lines[line as usize];
                let (prev, last) = (l.owner, l.busy_until);
                // Its request left `ahead` earlier if it was sent while older
                // stores drained (`memory { drain_overlap }`); it executes once they
                // have committed and the line is here.
                let asked = drained.saturating_sub(ahead);
                let start = asked.max(l.busy_until).max(l.own_fill());
                let arrive = start + lat.saturating_sub(flown);
                // A core whose line was taken while it was using it has it back, and
                // its atomic done, no sooner than `steal` after it asked.
                let arrive = if miss && least > 0 {
                    arrive.max((asked + least + self.fabric.atomic_ps).saturating_sub(flown))
                } else {
                    arrive
                };
                let done = if ahead > 0 {
                    arrive.max(drained + self.fabric.atomic_ps)
                } else {
                    arrive
                };
                l.busy_until = done;
                (l.invalidated_at, l.request_ps) = if miss {
                    (
                        start,
                        (arrive - start).saturating_sub(self.fabric.atomic_ps),
                    )
                } else {
                    (done, 0)
                };
                if miss {
                    self.taken_from(line, x, prev, last, start);
                }
                self.take(x, line);
                Timing {
                    done,
                    visible: done,
                    miss,
                    stale: false,
                }
            }
        }
    }

    /// The re-read of a spinner woken by a write to `line`, issued at `now` (when the
    /// write is visible and the spinner's pause has ended): a load, except that its
    /// miss left up to `head_start` ns earlier, but not before the write's
    /// read-for-ownership invalidated the spinner's copy (`memory { reread_overlap }`).
    /// Its data comes a transfer after it left, and no earlier than the line is free,
    /// so never before the commit. Under `memory { request_arrival }` it flies to the
    /// line's holder as any load and is decided where it lands ([`Reread::Flown`]);
    /// one that landed before a write committing late is served at the commit, right
    /// after it ([`Reread::Queued`]).
    #[inline]
    pub fn woken_load(&mut self, x: u32, line: u32, now: u64, sent: Reread) -> Timing {
        if self.trace.is_some() {
            return self.woken_load_traced(x, line, now, sent);
        }
        self.reread(x, line, now, sent)
    }

    /// [`Memory::woken_load`] while a trace is on.
    #[cold]
    #[inline(never)]
    fn woken_load_traced(&mut self, x: u32, line: u32, now: u64, sent: Reread) -> Timing {
        let before = self.traced(line, now);
        let t = self.reread(x, line, now, sent);
        if let Some(before) = before {
            let flew = match sent {
                Reread::Flown { ns, .. } => ns,
                Reread::Queued { flight, .. } => flight,
                Reread::HeadStart(_) => 0,
            };
            self.record(x, line, "reread", (now, flew), before, &t);
        }
        t
    }

    /// [`Memory::woken_load`] without the trace.
    #[inline]
    fn reread(&mut self, x: u32, line: u32, now: u64, sent: Reread) -> Timing {
        let head_start = match sent {
            // Decided where it landed, as any load that flew there.
            Reread::Flown { ns, holder } => {
                return self.price(x, line, Kind::Load, now, Early::Flown { ns, holder })
            }
            Reread::Queued { flight, commit } => {
                let done = self.read_miss(x, line, commit, Sent::Queued(flight));
                return Timing {
                    done,
                    visible: done,
                    miss: true,
                    stale: false,
                };
            }
            Reread::HeadStart(h) => h,
        };
        if head_start == 0 {
            return self.price(x, line, Kind::Load, now, Early::No);
        }
        // A newer store in flight, or a copy read since: as any load.
        if let Some(t) = self.read_before_commit(x, line, now, 0) {
            return t;
        }
        let l = &self.lines[line as usize];
        if l.sharers.contains(x) {
            return self.price(x, line, Kind::Load, now, Early::No);
        }
        let sent = now
            .saturating_sub(head_start)
            .max(l.invalidated_at.min(now));
        let done = self.read_miss(x, line, now, Sent::Before(sent));
        Timing {
            done,
            visible: done,
            miss: true,
            stale: false,
        }
    }

    /// Forget the stores to `line` committed by `now`.
    #[inline]
    fn retire(&mut self, line: u32, now: u64) {
        let l = &mut self.lines[line as usize];
        if l.pending.first().is_some_and(|p| p.commit <= now) {
            l.pending.retain(|p| p.commit > now);
        }
    }

    /// Whether a load by `x` of `line` at `now` hits `x`'s own copy, still valid
    /// while another thread's store to the line is in flight (its request has not
    /// reached the copy yet): such a load sends no request.
    #[inline]
    pub fn hits_own_copy(&self, x: u32, line: u32, now: u64) -> bool {
        self.pending_for(x, line, now)
            .is_some_and(|p| p.stale.contains(x) && now < p.invalidates)
    }

    /// The store in flight on `line` whose "before" `x` reads at `now`: the oldest
    /// one not committed, unless `x` issued one still in flight (it reads its own
    /// stores). Committed stores not yet retired count for nothing.
    #[inline]
    fn pending_for(&self, x: u32, line: u32, now: u64) -> Option<&Pending> {
        self.pending_index(x, line, now)
            .map(|i| &self.lines[line as usize].pending[i])
    }

    /// [`Memory::pending_for`]'s place in the line's pending stores.
    #[inline]
    fn pending_index(&self, x: u32, line: u32, now: u64) -> Option<usize> {
        let l = &self.lines[line as usize];
        if l.pending.iter().any(|p| p.writer == x && p.commit > now) {
            return None;
        }
        l.pending.iter().position(|p| p.commit > now)
    }

    /// A load by `x` while another thread's store to the line is in flight: a hit if
    /// `x` still holds its copy; else one transfer from the writer (who holds the
    /// line), if it arrives before the store commits. Either way `x` reads the line as
    /// it was before that store, and the commit invalidates its copy. `None` (an
    /// ordinary load: a miss served after the commit) once the store's request has
    /// reached the other copies ([`Pending::invalidates`]), or if `x` has none and its
    /// transfer would arrive after the commit.
    /// `flown`: how long the request has travelled already ([`Early::Flown`]).
    #[inline]
    fn read_before_commit(&mut self, x: u32, line: u32, now: u64, flown: u64) -> Option<Timing> {
        self.retire(line, now);
        let i = self.pending_index(x, line, now)?;
        let l = &mut self.lines[line as usize];
        let p = &mut l.pending[i];
        if now >= p.invalidates {
            // The writer's request has reached the other copies (ours, if we held
            // one): a miss, served behind the store once it has committed, with its
            // value.
            p.stale = p.stale.without(x);
            return None;
        }
        let done = if p.stale.contains(x) {
            now
        } else {
            let (writer, commit) = (p.writer, p.commit);
            let fill = l.own_fill();
            let lat = self.fabric.cost(writer, x);
            // Not before the writer has the line (a read that took it whole).
            let done = (now + self.jitter(x, lat).saturating_sub(flown)).max(fill);
            if done >= commit {
                return None;
            }
            self.lines[line as usize].pending[i].stale.insert(x);
            done
        };
        Some(Timing {
            done,
            visible: done,
            miss: done != now,
            stale: true,
        })
    }

    /// Word `word` of `line` as `x` reads it at `now`, and, when that is the value
    /// before a store in flight, when that store commits.
    #[inline]
    pub fn read_word(&self, x: u32, line: u32, word: usize, now: u64) -> (Word, Option<u64>) {
        match self.pending_for(x, line, now) {
            Some(p) if p.stale.contains(x) => (p.before[word], Some(p.commit)),
            _ => (self.lines[line as usize].words[word], None),
        }
    }

    /// When another core's read that took `line` whole (`memory { migratory }`)
    /// delivers it, if that is after `now` and `x` is not that core: a load, RMW or
    /// woken re-read by `x` reaches the line only there and then, so the engine
    /// issues it again then (decided, and priced as a request issued then), after
    /// whatever the new holder does with the line the moment it arrives.
    #[inline]
    pub fn taken_in_flight(&self, x: u32, line: u32, now: u64) -> Option<u64> {
        let l = &self.lines[line as usize];
        let fill = l.own_fill();
        (l.owner != x && fill > now).then_some(fill)
    }

    /// When the store whose read-for-ownership is fetching `line` commits, if `x` is
    /// another core and `now` lies between that request taking the other copies
    /// ([`Pending::invalidates`]) and the line reaching the writer
    /// ([`Pending::arrives`]): a load or RMW by `x` finds the line on its way and is
    /// decided only at the commit, after the writer's own accesses then (its locked
    /// RMW that waited for the store). A window only under `memory { request_arrival }`
    /// below 1 (without, the copies are taken at the commit).
    #[inline]
    pub fn store_in_flight(&self, x: u32, line: u32, now: u64) -> Option<u64> {
        let l = &self.lines[line as usize];
        if self.fabric.request_arrival_ppm == 0 || l.owner == x || l.owner == NONE {
            return None;
        }
        l.pending
            .iter()
            .rev()
            .find(|p| p.writer == l.owner)
            .filter(|p| p.invalidates <= now && now < p.arrives && p.commit > now)
            .map(|p| p.commit)
    }

    /// A full fence by `x` at `now`: when it completes.
    #[inline]
    pub fn fence(&mut self, x: u32, now: u64) -> u64 {
        let drained = self.drain(x, now);
        drained + self.jitter(x, self.fabric.fence_ps)
    }

    /// When `x`'s store buffer will be empty, seen at `now`.
    #[inline]
    pub fn drained_at(&self, x: u32, now: u64) -> u64 {
        now.max(self.harts[x as usize].store_buffer.last())
    }

    /// Wait for `x`'s store buffer to empty: when the last buffered store commits.
    #[inline]
    fn drain(&mut self, x: u32, now: u64) -> u64 {
        let sb = &mut self.harts[x as usize].store_buffer;
        let t = now.max(sb.last());
        sb.clear();
        t
    }

    /// A read miss by `x` issued at `at` (`x` holds no copy): when its data arrives.
    /// `sent`: how the request left before `at`, if it did ([`Sent`]).
    #[inline]
    fn read_miss(&mut self, x: u32, line: u32, at: u64, sent: Sent) -> u64 {
        let fab = &self.fabric;
        let l = &self.lines[line as usize];
        let migrates = fab.migratory && l.owner != NONE && l.dirty;
        let (lat, after) = if l.owner != NONE {
            // Modified or exclusive in another core: that core supplies it, not before
            // it has the line itself (when a read took it whole and is still on its
            // way there).
            (fab.cost(l.owner, x), l.own_fill())
        } else {
            // Shared (or untouched: no sharer, free): the LLC supplies a clean copy
            // present in our LLC domain; else the nearest sharer does. Either way not
            // before the data of the read miss ahead of us has arrived.
            let near = fab.nearest(x, &l.sharers);
            let lat = if l.sharers.intersects(&fab.llc_mates[x as usize]) {
                near.min(fab.llc_hit_ps)
            } else {
                near
            };
            (lat, l.fill_done)
        };
        let occupancy = fab.read_occupancy_ps;
        let lat = self.jitter(x, lat);
        let l = &mut self.lines[line as usize];
        let (prev, last) = (l.owner, l.busy_until);
        let s = at.max(last);
        let done = match sent {
            Sent::Before(sent) => s.max(sent + lat),
            Sent::Flown(flown) | Sent::Queued(flown) => s + lat.saturating_sub(flown),
        }
        .max(after);
        l.busy_until = s + occupancy;
        if migrates {
            l.owner = x;
            l.sharers = Bits::single(x);
            l.dirty = false;
        } else {
            l.owner = NONE;
            l.sharers.insert(x);
        }
        l.fill_tid = x;
        l.fill_done = done;
        if migrates && !matches!(sent, Sent::Queued(_)) {
            self.taken_from(line, x, prev, last, s);
        }
        done
    }

    /// `x` takes `line` whole from `prev` (a read-modify-write's or, under `memory {
    /// migratory }`, a load's miss), its request served from `at`; the line's last
    /// access before it ended at `last`. If that was within `steal_window` (one
    /// uncontended lock operation), `prev` was using the line, and its next miss on it
    /// takes `memory { steal }` at least from when it asks: what a core looping on a
    /// line loses each time it is taken, by `topo --measure`'s probe, whatever the
    /// line's way back would cost it here
    /// (`a_holder_whose_line_is_taken_pays_its_way_back`).
    #[inline]
    fn taken_from(&mut self, line: u32, x: u32, prev: u32, last: u64, at: u64) {
        let f = &self.fabric;
        if f.steal_ps == 0 || prev == NONE || prev == x || last + f.steal_window_ps < at {
            return;
        }
        self.lines[line as usize].victim = prev;
    }

    /// The least `x`'s next miss on `line` takes from its request: `memory { steal }`
    /// if the line was taken from it while it was using it ([`Memory::taken_from`]),
    /// else 0. The mark goes with this access, miss or not.
    #[inline]
    fn victims_least(&mut self, x: u32, line: u32) -> u64 {
        let l = &mut self.lines[line as usize];
        if l.victim != x {
            return 0;
        }
        l.victim = NONE;
        if l.owner == x {
            0
        } else {
            self.fabric.steal_ps
        }
    }

    /// The read-for-ownership latency for `x` (before jitter), and whether it misses:
    /// 0 if `x` holds the line alone (or nobody does); else the transfer from the
    /// holder, or from the farthest sharer when the line is shared (all copies are
    /// invalidated, in parallel), scaled by `upgrade` when `x` holds a shared copy
    /// itself (no data moves).
    #[inline]
    fn ownership(&self, x: u32, line: u32) -> (u64, bool) {
        let l = &self.lines[line as usize];
        if l.owner == x || (l.owner == NONE && l.sharers.subset_of_single(x)) {
            (0, false)
        } else if l.owner != NONE {
            (self.fabric.cost(l.owner, x), true)
        } else {
            // `x`'s own distance levels never contain `x`.
            let far = self.fabric.farthest(x, &l.sharers);
            if l.sharers.contains(x) {
                (share_of(far, self.fabric.upgrade_ppm), true)
            } else {
                (far, true)
            }
        }
    }

    /// `x` becomes the line's only holder, having written it.
    #[inline]
    fn take(&mut self, x: u32, line: u32) {
        let l = &mut self.lines[line as usize];
        // A line x took whole and is still waiting for stays on its way.
        let still_coming = l.owner == x && l.fill_tid == x;
        l.owner = x;
        l.sharers = Bits::single(x);
        l.dirty = true;
        if !still_coming {
            l.fill_tid = NONE;
            l.fill_done = 0;
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

    #[test]
    fn a_ring_keeps_the_oldest_first_and_makes_room_when_it_completes() {
        let mut r = Ring::new(2);
        assert_eq!(r.make_room(0), 0);
        r.push(10);
        r.push(20);
        assert_eq!(r.last(), 20);
        // Full at 5: room when the oldest completes, at 10.
        assert_eq!(r.make_room(5), 10);
        r.push(30);
        // At 25 the 20 has completed: room at once.
        assert_eq!(r.make_room(25), 25);
        assert_eq!(r.last(), 30);
        r.clear();
        assert_eq!(r.last(), 0);
    }

    /// The jitter draws what the plain 128-bit division drew (the simulator's results
    /// are the same on every platform and across versions): durations from 1 ns to
    /// a day, every jitter a topology may set, random draws and the extreme ones.
    #[test]
    fn jitter_draws_what_the_128_bit_division_drew() {
        let reference = |ns: u64, ppm: u32, r: u64| {
            const ONE: i128 = 1 << 32;
            const MILLION: i128 = 1_000_000;
            let (hi, lo) = ((r >> 32) as i128, (r & 0xffff_ffff) as i128);
            let ns = ns as i128;
            let s = ns * MILLION * ONE + ns * ppm as i128 * (2 * hi - ONE) + lo * MILLION;
            (s / (MILLION * ONE)) as u64
        };
        let mut rng = crate::rng::SplitMix64::new(11);
        let durations = [
            1,
            2,
            5,
            17,
            19,
            100,
            1_000,
            123_457,
            86_400_000_000_000,
            u32::MAX as u64,
        ];
        for &ns in &durations {
            for ppm in [1, 10_000, 50_000, 333_333, 500_000, 1_000_000] {
                for r in [0, u64::MAX, 1 << 32, (1 << 32) - 1, u64::MAX << 32] {
                    assert_eq!(
                        jittered(ns, ppm, r),
                        reference(ns, ppm, r),
                        "{ns} {ppm} {r}"
                    );
                }
                for _ in 0..2_000 {
                    let r = rng.next_u64();
                    assert_eq!(
                        jittered(ns, ppm, r),
                        reference(ns, ppm, r),
                        "{ns} {ppm} {r}"
                    );
                }
            }
        }
        for _ in 0..100_000 {
            let (ns, ppm, r) = (
                rng.next_u64() >> 20,
                (rng.next_u64() % 1_000_001) as u32,
                rng.next_u64(),
            );
            assert_eq!(
                jittered(ns, ppm, r),
                reference(ns, ppm, r),
                "{ns} {ppm} {r}"
            );
        }
    }
}
