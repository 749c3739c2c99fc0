//! The event loop: simulated threads are futures, memory operations are events.
//!
//! A simulated thread is a boxed future (the shared lock and workload code, generic
//! over [`Env`]) driven by this executor: no OS threads, no real time. A memory
//! operation calls into the [`Core`] while the future is being polled; the coherence
//! model prices it at the current virtual time. If it completes at once (a cache hit)
//! the future continues without yielding; otherwise the core schedules a resume event
//! at the completion time, stores the result in the thread's slot, and the future
//! returns `Pending`. `wait_until` parks the thread on the line's watch list; a write
//! to the line schedules a wake-up read for each watcher, queued like any request.
//! Work (`Env::work`) and prefetches that follow a stall run under it as far as the
//! topology's `memory { run_ahead, rmw_run_ahead }` say ([`RunAhead`]).
//!
//! Time: the clock counts picoseconds ([`PS_PER_NS`]), so that a topology's costs
//! are simulated as measured (`locklab_model::time::Ns`: a 1.8 ns atomic is not
//! 2 ns). The lock and workload code sees nanoseconds (`Env::now`, `Env::work`),
//! and so does every [`Machine`] method: the picoseconds stay inside.
//!
//! Determinism: one binary heap ordered by (time, sequence number), the sequence
//! number breaking ties in the order events were scheduled. Nothing depends on
//! hashing, addresses, or wall-clock time. The hot path allocates nothing. When the
//! resume event a thread would schedule would also be the next one popped (strictly
//! earlier than every queued event), the thread continues at once instead: same clock,
//! same counters, same sequence numbers, without the round trip through the heap and
//! the re-poll of its future.

use super::coherence::{share_of, Early, Fabric, Kind, Memory, Reread, TraceEvent, NONE};
use crate::env::{Addr, Env, Grant, Handoff, Holder, WaitStart, Word};
use crate::rng::SplitMix64;
use locklab_model::plan::{Costs, WHOLE_PPM};
use locklab_model::time::{Ns, PS_PER_NS};
use locklab_model::topology::{CpuMap, ThreadSlot};
use std::cell::{Cell, RefCell};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll, Waker};

/// The latest virtual time the clock reaches, ps (2⁶², about 53 days): a run stops
/// there at the latest, and no single `work` lasts longer, so that the clock plus any
/// delay stays within 64 bits. A point that asks for more is not simulated
/// ([`super::run_point_on`]).
pub const HORIZON_PS: u64 = 1 << 62;

/// A memory operation or delay requested by a simulated thread.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Op {
    Load(Addr),
    Store(Addr, Word),
    Swap(Addr, Word),
    Cas(Addr, Word, Word),
    FetchAdd(Addr, Word),
    FetchOr(Addr, Word),
    FetchAnd(Addr, Word),
    /// `Env::swap_masked`: one RMW (the kernel's narrow `xchg`), (addr, mask, value).
    SwapMasked(Addr, Word, Word),
    /// `Env::store_masked`: one store (the kernel's byte / half-word store).
    StoreMasked(Addr, Word, Word),
    /// Park until the line is written, unless the word no longer holds the value
    /// seen; either way, complete with a fresh read of the word.
    Watch(Addr, Word),
    /// `Env::prefetch`: start a read miss, do not wait for it.
    Prefetch(Addr),
    /// `Env::fence`: drain the store buffer, then the fence's own cost.
    Fence,
    /// A pause or time in the kernel, ps, jittered like every other duration.
    Delay(u64),
    /// The loop's or a lock library's own instructions (`Env::overhead`,
    /// `Env::instructions`): as `Delay`, except that a narrow store's forward stall
    /// is not hidden under them (`memory { forward_stall }`): natively the loop's
    /// instructions are not time between the release and the next locked operation
    /// but spread over the loop, so the access after them waits for the store all
    /// the same. (The OS mutexes, whose library code this also charges, make no
    /// narrow store.)
    Instructions(u64),
    /// `Env::work`: as `Delay`, but it runs under the thread's earlier stalls, as far
    /// as the core runs ahead of them ([`RunAhead`]).
    Work(u64),
}

/// What a thread's next event does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Next {
    /// Poll the future (its pending operation has completed).
    Resume,
    /// The line it watches was written: issue the re-read, then resume.
    WakeRead,
}

#[derive(Debug, Clone, Copy)]
struct Slot {
    result: Word,
    ok: bool,
    next: Next,
    watch: Addr,
    /// The pending operation waited (for the store buffer to drain, its flight to
    /// the line's holder, or the line to reach a core that took it whole) and has
    /// not been issued yet: the resumed future issues it again.
    reissue: bool,
    /// How far the core ran ahead of the misses this thread waited for since its
    /// last locked read-modify-write began. A locked RMW starts it afresh (nothing
    /// runs ahead past one before it executes, so no earlier stall reaches past it);
    /// a `pause`, a wake-up, a fence or a system call clears it (a spin's exit is a
    /// mispredicted branch; the others let nothing past them).
    ahead: RunAhead,
    /// The RMW being issued already waited (for the store buffer to drain, for its
    /// request to reach the line's holder, or for the line to reach a core that
    /// took it whole) and was credited that wait: its reissue adds to the credit
    /// instead of starting it.
    credited: bool,
    /// The load or RMW being issued was sent this long ago to the core holding its
    /// line and reaches it now (`memory { request_arrival }`): it is decided and
    /// priced now, less the time it has flown.
    flown: u64,
    /// The core it flew to.
    flown_to: u32,
    /// The load or RMW being issued waited for its line to reach another core that
    /// took it whole ([`Memory::taken_in_flight`]): it was counted, and its flight
    /// drawn, when first issued.
    deferred: bool,
    /// A woken watcher's re-read left this long before it is issued (the write's
    /// invalidation reached it first; `memory { reread_overlap }`; and its flight to
    /// the line's holder, once it has landed).
    head_start: u64,
    /// A woken watcher's re-read reached its line before the write that woke it
    /// committed, after this flight: it is served right after that write
    /// ([`Core::queued_flight`]).
    queued: Option<u64>,
    /// A woken watcher's re-read has flown to this core, which held its line, and is
    /// decided now (`memory { request_arrival }`); `NONE` before its flight.
    landed_at: u32,
    /// The thread's last narrow store (`Env::store_masked`), if a load or RMW of its
    /// word must wait for it (`memory { forward_stall }`): the word, the store's mask,
    /// and when a wider access of the word may start.
    narrow: Option<(Addr, Word, u64)>,
    /// How far this thread's `work` so far ran over (positive) or under its nominal
    /// total, ns, which the next `work` makes up under `work_carry`.
    work_carry: i64,
    /// When the RMW being issued began to wait for older stores to commit, if its
    /// request for its line left during that wait (`memory { drain_overlap }`).
    drain_from: Option<u64>,
}

/// How much of a thread's waits for misses the instructions after them run under
/// (an out-of-order core executes independent instructions while an access is
/// outstanding), each at most the topology's `run_ahead`.
#[derive(Debug, Clone, Copy, Default)]
struct RunAhead {
    /// How much earlier a following prefetch (an independent load) goes out.
    loads: u64,
    /// How much of a following `work` runs under them: as `loads`, but of a locked
    /// RMW's own wait only the topology's `rmw_run_ahead` share (a core may hold
    /// back the instructions after a locked one until it completes). Used up by the
    /// work it hides, which also takes that much from `loads`.
    work: u64,
}

/// Counters for the speed benchmark and tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    pub events: u64,
    pub polls: u64,
    pub ops: u64,
    pub misses: u64,
    /// `Env::pause` calls (each one an event).
    pub pauses: u64,
    /// Wake-ups of parked `wait_until` watchers.
    pub wakes: u64,
}

/// The mutable state of a simulated point: clock, event heap, memory, thread slots.
/// Every time here is in picoseconds.
pub(crate) struct Core {
    now: u64,
    seq: u64,
    /// `(time << 64) | (seq << 16) | thread`, min-first.
    heap: BinaryHeap<Reverse<u128>>,
    pub(crate) mem: Memory,
    slots: Vec<Slot>,
    pause_ps: u64,
    /// The topology's `memory { run_ahead }`.
    run_ahead_ps: u64,
    /// The topology's `memory { rmw_run_ahead }`, parts per million.
    rmw_run_ahead_ppm: u64,
    /// The topology's `memory { reread_overlap }`, parts per million.
    reread_overlap_ppm: u64,
    /// The topology's `memory { drain_overlap }`, parts per million.
    drain_overlap_ppm: u64,
    /// The topology's `memory { forward_stall }`.
    forward_stall_ps: u64,
    /// The stop time of the run in progress: no event at or after it runs.
    stop: u64,
    pub(crate) counters: Counters,
}

const TID_BITS: u32 = 16;

impl Core {
    #[inline]
    fn schedule(&mut self, time: u64, tid: u32, next: Next) {
        self.slots[tid as usize].next = next;
        let key = ((time as u128) << 64) | ((self.seq as u128) << TID_BITS) | tid as u128;
        self.seq += 1;
        self.heap.push(Reverse(key));
    }

    /// Would an event for `time`, scheduled now, be the next one to run? It would get
    /// the largest sequence number so far, so it must be strictly earlier than every
    /// queued event (and before the stop time).
    #[inline]
    fn next_to_run(&self, time: u64) -> bool {
        time < self.stop
            && match self.heap.peek() {
                Some(&Reverse(key)) => ((key >> 64) as u64) > time,
                None => true,
            }
    }

    /// Resume the thread being polled at `time` without going through the queue:
    /// exactly what scheduling its resume event and popping it next would do (the
    /// event's sequence number is consumed so later ties order as before).
    #[inline]
    fn fast_forward(&mut self, time: u64) {
        self.seq += 1;
        self.now = time;
        self.counters.events += 1;
        self.counters.polls += 1;
    }

    /// The resume of the thread being polled at `time`: at once if it would be the
    /// next event anyway, else through the queue. True if it continues now.
    #[inline]
    fn resume_at(&mut self, time: u64, tid: u32) -> bool {
        if self.next_to_run(time) {
            self.fast_forward(time);
            true
        } else {
            self.schedule(time, tid, Next::Resume);
            false
        }
    }

    /// Wake every watcher of `line` at `time`, when the write becomes visible: each
    /// re-reads the line once its current `pause` is over ([`Core::wake_time`]),
    /// queued like any request. A re-read due at the current time is issued at once
    /// (in watch order, right after the write), saving an event per watcher.
    #[inline]
    fn wake_watchers(&mut self, line: u32, time: u64) {
        let l = &mut self.mem.lines[line as usize];
        let mut t = l.watch_head;
        l.watch_head = NONE;
        l.watch_tail = NONE;
        while t != NONE {
            let next = self.mem.next[t as usize];
            self.mem.next[t as usize] = NONE;
            self.reread_after(t, line, time, 0);
            t = next;
        }
    }

    /// Schedule the re-read of `tid`, watching `line` since `from`, whose copy the
    /// write committing at `commit` invalidates: when its `pause` ends after the
    /// commit ([`Core::wake_time`]), having left up to its head start earlier
    /// ([`Core::head_start`]); or, if it reached the line before the commit, right
    /// after the write ([`Core::queued_flight`]). A re-read due now is issued at
    /// once (in watch order, right after the write), saving an event.
    #[inline]
    fn reread_after(&mut self, tid: u32, line: u32, commit: u64, from: u64) {
        let at = self.wake_time(tid, commit);
        if let Some(flight) = self.queued_flight(tid, line, commit, at - commit, from) {
            // Its event runs a picosecond before the commit, so that it is decided
            // before any request the commit lets go (the writer's locked operation
            // waiting for its store to drain is issued again at the commit).
            self.slots[tid as usize].queued = Some(flight);
            self.schedule(commit - 1, tid, Next::WakeRead);
            return;
        }
        self.slots[tid as usize].head_start = self.head_start(line, commit, from);
        if at == self.now {
            self.wake_read(tid);
        } else {
            self.schedule(at, tid, Next::WakeRead);
        }
    }

    /// When a watcher whose copy of the line went stale at `time` re-reads it. A
    /// spinner's loop is a `pause` and a read of its copy (`Env::wait_until`), so
    /// the write finds it in a pause nearly always, and it reads again when that
    /// pause ends: at a phase drawn uniformly within one `pause`, from the watcher's
    /// own stream. Where the `pause` is long against a transfer (Skylake and later,
    /// Zen 4) this is what lets a releaser take a test-and-test-and-set lock back
    /// before the spinner has even asked for the line.
    #[inline]
    fn wake_time(&mut self, tid: u32, time: u64) -> u64 {
        time + self.mem.phase(tid, self.pause_ps)
    }

    /// How much earlier than after a write's commit at `commit` (and the end of its
    /// `pause`) a spinner whose copy the write invalidates sends its re-read:
    /// `reread_overlap` of the write's read-for-ownership, and no more than the time
    /// from that request's start (or from `from`, if later) to the commit.
    #[inline]
    fn head_start(&self, line: u32, commit: u64, from: u64) -> u64 {
        if self.reread_overlap_ppm == 0 {
            return 0;
        }
        let l = &self.mem.lines[line as usize];
        let overlap = share_of(l.request_ps, self.reread_overlap_ppm);
        overlap.min(commit.saturating_sub(l.invalidated_at.max(from)))
    }

    /// Whether the re-read of `tid` (watching `line` since `from`, its `pause` ending
    /// `phase` after the write's commit at `commit`) reaches the line before that
    /// commit, and so is served right after the write, ahead of every later request,
    /// the writer's own included: its flight if so (`memory { request_arrival }`).
    ///
    /// The spinner sends its re-read when the write's read-for-ownership is about to
    /// complete ([`Core::head_start`]) and its pause ends. Most writes commit when
    /// their request completes: the re-read lands after the commit and is decided
    /// there, as any load that flew. A write that commits later (a store that waits
    /// behind older ones or for a line stolen from its writer, `memory { steal }`;
    /// a locked operation's own atomic) leaves the spinner time to reach the line
    /// first (docs/validation.md, "A re-read that reaches the line first").
    #[inline]
    fn queued_flight(
        &mut self,
        tid: u32,
        line: u32,
        commit: u64,
        phase: u64,
        from: u64,
    ) -> Option<u64> {
        if self.mem.fabric.request_arrival_ppm == 0 || commit <= self.now {
            return None;
        }
        let l = &self.mem.lines[line as usize];
        let answered = l.invalidated_at + l.request_ps;
        if l.request_ps == 0 || answered >= commit {
            return None;
        }
        let sent = (answered + phase - self.head_start(line, answered, from)).max(from);
        let (flight, _) = self.flight(tid, line);
        (sent + flight < commit).then_some(flight)
    }

    /// How long a request by `tid` for `line` travels before it takes effect, if
    /// another core holds the line (modified or exclusive): a draw, from `tid`'s
    /// own stream, uniform over the widest interval within [0, `T`] whose mean is
    /// the topology's `request_arrival` share `a` of the transfer `T` from that core
    /// (from `max(0, 2a − 1)·T` to `min(1, 2a)·T`: all of [0, `T`] at one half, `T`
    /// itself at 1). 0 if the line is shared, untouched or `tid`'s own (the request
    /// is then decided where it is issued, or at the shared cache, which every
    /// requester reaches alike). Returns the flight and the line's holder.
    #[inline]
    fn flight(&mut self, tid: u32, line: u32) -> (u64, u32) {
        // Off (every topology that does not set it): not even the line is read.
        let a = self.mem.fabric.request_arrival_ppm;
        if a == 0 {
            return (0, NONE);
        }
        let owner = self.mem.lines[line as usize].owner;
        if owner == NONE || owner == tid {
            return (0, owner);
        }
        const WHOLE: u64 = WHOLE_PPM as u64;
        let cost = self.mem.fabric.cost(owner, tid);
        let (lo, hi) = (
            share_of(cost, (2 * a).saturating_sub(WHOLE)),
            share_of(cost, (2 * a).min(WHOLE)),
        );
        (lo + self.mem.phase(tid, hi - lo + 1), owner)
    }

    /// When `op`, a load or RMW of the word the thread last stored narrower, may
    /// start, if later than now: store-to-load forwarding fails for an access wider
    /// than the store (a masked RMW of the same field is not), which waits for the
    /// store to reach the cache (`memory { forward_stall }`, counted from the
    /// store's issue, not counting the thread's own instructions since:
    /// [`Op::Instructions`]). Forgets the store once an access of its word has
    /// waited for it or another store has covered it.
    #[inline]
    fn forward_wait(&mut self, tid: u32, op: Op) -> Option<u64> {
        let s = &mut self.slots[tid as usize];
        let (word, mask, ready) = s.narrow?;
        let (addr, field) = match op {
            Op::Load(a) | Op::Watch(a, _) => (a, None),
            Op::Swap(a, _)
            | Op::Cas(a, _, _)
            | Op::FetchAdd(a, _)
            | Op::FetchOr(a, _)
            | Op::FetchAnd(a, _)
            | Op::Store(a, _) => (a, None),
            Op::SwapMasked(a, m, _) | Op::StoreMasked(a, m, _) => (a, Some(m)),
            Op::Prefetch(_) | Op::Fence | Op::Delay(_) | Op::Instructions(_) | Op::Work(_) => {
                return None
            }
        };
        if addr != word {
            return None;
        }
        s.narrow = None;
        let stores = matches!(op, Op::Store(..) | Op::StoreMasked(..));
        (!stores && field != Some(mask) && ready > self.now).then_some(ready)
    }

    /// The re-read of a woken watcher, issued now; schedules its resumption.
    #[inline]
    fn wake_read(&mut self, tid: u32) {
        if let Some(done) = self.wake_read_issue(tid) {
            self.schedule(done, tid, Next::Resume);
        }
    }

    /// The re-read of a woken watcher, issued now, with its result in the slot; the
    /// time it completes (the caller resumes the thread then). `None` if the line is
    /// on its way to another core that took it whole: the re-read is issued again
    /// when it has arrived, as any load ([`Memory::taken_in_flight`]).
    #[inline]
    fn wake_read_issue(&mut self, tid: u32) -> Option<u64> {
        let line = self.slots[tid as usize].watch.line;
        // Served at the commit, a picosecond from now, as the line is then; any other
        // re-read now.
        let (sent, read_at) = if let Some(flight) = self.slots[tid as usize].queued.take() {
            let commit = self.now + 1;
            (Reread::Queued { flight, commit }, commit)
        } else {
            if let Some(fill) = self.mem.taken_in_flight(tid, line, self.now) {
                // It leaves no earlier than it is decided.
                self.slots[tid as usize].head_start = 0;
                self.schedule(fill, tid, Next::WakeRead);
                return None;
            }
            // As any load of a line another core holds, the re-read takes effect when
            // it reaches that core (`memory { request_arrival }`): until then the
            // holder's own accesses hit. It left `head_start` ago.
            let landed_at = std::mem::replace(&mut self.slots[tid as usize].landed_at, NONE);
            if landed_at == NONE {
                let (flight, holder) = self.flight(tid, line);
                let s = &mut self.slots[tid as usize];
                let lands = self.now.saturating_sub(s.head_start) + flight;
                if lands > self.now {
                    s.head_start += lands - self.now;
                    s.landed_at = holder;
                    self.schedule(lands, tid, Next::WakeRead);
                    return None;
                }
            }
            let head_start = std::mem::take(&mut self.slots[tid as usize].head_start);
            let sent = if landed_at == NONE {
                Reread::HeadStart(head_start)
            } else {
                Reread::Flown {
                    ns: head_start,
                    holder: landed_at,
                }
            };
            (sent, self.now)
        };
        let s = &mut self.slots[tid as usize];
        s.ahead = RunAhead::default();
        let a = s.watch;
        self.counters.ops += 1;
        self.counters.wakes += 1;
        let t = self.mem.woken_load(tid, a.line, self.now, sent);
        if t.miss {
            self.counters.misses += 1;
        }
        let (value, _) = self.mem.read_word(tid, a.line, a.word as usize, read_at);
        let s = &mut self.slots[tid as usize];
        s.result = value;
        s.ok = true;
        Some(t.done)
    }

    /// Thread `tid` waits `ps` for memory (for a locked RMW if `locked`): time the
    /// instructions after it may run under.
    #[inline]
    fn stalled(&mut self, tid: u32, ps: u64, locked: bool) {
        if self.run_ahead_ps > 0 {
            let cap = self.run_ahead_ps;
            let work = if locked {
                share_of(ps, self.rmw_run_ahead_ppm)
            } else {
                ps
            };
            let a = &mut self.slots[tid as usize].ahead;
            a.loads = (a.loads + ps).min(cap);
            a.work = (a.work + work).min(cap);
        }
    }

    /// Thread `tid`'s load or RMW `op` (of `kind`) waits for its request until
    /// `until` (a flight to the line's holder, or the line's way to another core),
    /// a stall credited as such, and is issued again then: at once if that is the
    /// next event, else when the resumed future polls it.
    #[inline]
    fn wait_and_reissue(
        &mut self,
        tid: u32,
        op: Op,
        kind: Kind,
        until: u64,
    ) -> Option<(Word, bool)> {
        let rmw = kind == Kind::Rmw;
        self.stalled(tid, until - self.now, rmw);
        self.slots[tid as usize].credited = rmw;
        if self.resume_at(until, tid) {
            return self.issue(tid, op);
        }
        self.slots[tid as usize].reissue = true;
        None
    }

    /// Issue `op` for thread `tid` at the current time. `Some(result)` if it completed
    /// at once; `None` if a resume event was scheduled (result in the slot).
    #[inline]
    fn issue(&mut self, tid: u32, op: Op) -> Option<(Word, bool)> {
        if self.slots[tid as usize].narrow.is_some() {
            if let Some(ready) = self.forward_wait(tid, op) {
                if !self.resume_at(ready, tid) {
                    self.slots[tid as usize].reissue = true;
                    return None;
                }
            }
        }
        // A locked read-modify-write executes once every older store has committed:
        // until then it has not happened, for its value as for its timing.
        if matches!(
            op,
            Op::Swap(..)
                | Op::Cas(..)
                | Op::FetchAdd(..)
                | Op::FetchOr(..)
                | Op::FetchAnd(..)
                | Op::SwapMasked(..)
        ) {
            // A new RMW starts the run-ahead credit afresh (unless this is the
            // reissue of one that waited for the drain, credited below).
            let s = &mut self.slots[tid as usize];
            if !std::mem::take(&mut s.credited) {
                s.ahead = RunAhead::default();
            }
            let drained = self.mem.drained_at(tid, self.now);
            if drained > self.now {
                // Waiting for older stores' read-for-ownership misses.
                self.stalled(tid, drained - self.now, true);
                self.slots[tid as usize].credited = true;
                if self.drain_overlap_ppm > 0 {
                    self.slots[tid as usize].drain_from = Some(self.now);
                }
                if !self.resume_at(drained, tid) {
                    self.slots[tid as usize].reissue = true;
                    return None;
                }
                self.slots[tid as usize].credited = false;
            }
        }
        // A request that reached its line's holder just now, or waited for a line on
        // its way to another core, was counted when sent.
        let s = &mut self.slots[tid as usize];
        let flown = std::mem::take(&mut s.flown);
        let deferred = std::mem::take(&mut s.deferred);
        if flown == 0 && !deferred {
            self.counters.ops += 1;
        }
        let now = self.now;
        let (addr, kind) = match op {
            Op::Delay(ps) | Op::Instructions(ps) => {
                let ps = self.mem.jitter(tid, ps);
                if matches!(op, Op::Instructions(_)) {
                    if let Some(narrow) = &mut self.slots[tid as usize].narrow {
                        narrow.2 += ps;
                    }
                }
                if ps == 0 || self.resume_at(now + ps, tid) {
                    return Some((0, true));
                }
                return None;
            }
            Op::Work(nominal) => {
                let drawn = self.mem.jitter(tid, nominal);
                let ps = if self.mem.fabric.work_carry {
                    // What this thread's earlier work ran over or under is made up.
                    let s = &mut self.slots[tid as usize];
                    let took = (drawn as i64 - s.work_carry).max(0);
                    s.work_carry += took - nominal as i64;
                    took as u64
                } else {
                    drawn
                };
                let a = &mut self.slots[tid as usize].ahead;
                let hide = a.work.min(ps);
                a.work -= hide;
                a.loads = a.loads.saturating_sub(hide);
                // The lock's instructions after a spin of some length run at their
                // latency (`work_overhead`): after the work, so neither under an
                // earlier stall nor made up by the next work.
                let after = if nominal > 0 {
                    self.mem.jitter(tid, self.mem.fabric.work_overhead_ps)
                } else {
                    0
                };
                let ps = ps - hide + after;
                if ps == 0 || self.resume_at(now + ps, tid) {
                    return Some((0, true));
                }
                return None;
            }
            Op::Fence => {
                let done = self.mem.fence(tid, now);
                // An `mfence` lets no later instruction run ahead of it.
                self.slots[tid as usize].ahead = RunAhead::default();
                if done == now || self.resume_at(done, tid) {
                    return Some((0, true));
                }
                return None;
            }
            Op::Load(a) => (a, Kind::Load),
            Op::Prefetch(a) => (a, Kind::Prefetch),
            Op::Watch(a, seen) => {
                let (value, until) = self.mem.read_word(tid, a.line, a.word as usize, now);
                if value != seen {
                    (a, Kind::Load)
                } else if let Some(at) = until {
                    // Our copy still holds the value seen, and a store to the line is
                    // in flight: its commit invalidates our copy; re-read then.
                    self.slots[tid as usize].watch = a;
                    self.reread_after(tid, a.line, at, now);
                    return None;
                } else {
                    let l = &mut self.mem.lines[a.line as usize];
                    // Park at the tail of the line's watch list.
                    if l.watch_tail == NONE {
                        l.watch_head = tid;
                    } else {
                        self.mem.next[l.watch_tail as usize] = tid;
                    }
                    l.watch_tail = tid;
                    self.slots[tid as usize].watch = a;
                    return None;
                }
            }
            Op::Store(a, _) | Op::StoreMasked(a, _, _) => (a, Kind::Store),
            _ => {
                let a = match op {
                    Op::Swap(a, _)
                    | Op::Cas(a, _, _)
                    | Op::FetchAdd(a, _)
                    | Op::FetchOr(a, _)
                    | Op::FetchAnd(a, _)
                    | Op::SwapMasked(a, _, _) => a,
                    _ => unreachable!(),
                };
                (a, Kind::Rmw)
            }
        };
        // A locked RMW that waited for older stores to commit asked for its line
        // while they did (`memory { drain_overlap }`): it flew then. Unless another
        // request reached the line meanwhile: this one, already decided, cannot be
        // put before it, and it goes out as without the overlap (served after it
        // instead, it hands the releaser races it loses natively: docs/validation.md).
        let drained_ahead = std::mem::take(&mut self.slots[tid as usize].drain_from)
            .filter(|&from| self.mem.lines[addr.line as usize].busy_until <= from)
            .map(|from| share_of(now - from, self.drain_overlap_ppm))
            .filter(|&ahead| ahead > 0);
        // A load or RMW of a line another core holds takes effect when it reaches
        // that core: until then the holder's own accesses still hit. (A load of a
        // copy still valid while the holder's store flies sends no request.)
        if flown == 0
            && !deferred
            && drained_ahead.is_none()
            && matches!(kind, Kind::Load | Kind::Rmw)
            && !(kind == Kind::Load
                && self.mem.fabric.request_arrival_ppm > 0
                && self.mem.hits_own_copy(tid, addr.line, now))
        {
            let (flight, holder) = self.flight(tid, addr.line);
            if flight > 0 {
                let s = &mut self.slots[tid as usize];
                s.flown = flight;
                s.flown_to = holder;
                return self.wait_and_reissue(tid, op, kind, now + flight);
            }
        }
        // A load or RMW of a line on its way to a core that took it whole
        // (`memory { migratory }`) reaches it only there: it is decided, and priced,
        // once the line has arrived, after what that core does with it at that
        // moment (a spinner's compare-and-swap right after the read that saw the
        // lock free goes first). After its flight, if it flew (`request_arrival`).
        // So does one that finds the line on its way to a store of its holder: it is
        // decided at the commit, after the holder's RMW that waited for the store (a
        // releaser takes the lock back).
        if matches!(kind, Kind::Load | Kind::Rmw) {
            let arrives = self
                .mem
                .taken_in_flight(tid, addr.line, now)
                .or_else(|| self.mem.store_in_flight(tid, addr.line, now));
            if let Some(at) = arrives {
                let s = &mut self.slots[tid as usize];
                s.flown = flown;
                s.deferred = true;
                return self.wait_and_reissue(tid, op, kind, at);
            }
        }
        // An independent miss goes out as soon as the core reaches it, which under a
        // stall it does early: as far ahead as the thread ran under its stalls.
        let early = if kind == Kind::Prefetch {
            Early::RanAhead(self.slots[tid as usize].ahead.loads)
        } else if let Some(ahead) = drained_ahead {
            Early::RanAhead(ahead)
        } else if flown > 0 {
            Early::Flown {
                ns: flown,
                holder: self.slots[tid as usize].flown_to,
            }
        } else {
            Early::No
        };
        // A failed CAS still takes the line exclusively (x86 `lock cmpxchg` always
        // does), so it is priced like any RMW; it just writes nothing.
        let t = self.mem.request(tid, addr.line, kind, now, early);
        if t.miss {
            self.counters.misses += 1;
            // Only a miss is a wait for memory: an atomic on an owned line costs
            // its own execution, which the work model already contains.
            self.stalled(tid, t.done - now, kind == Kind::Rmw);
        } else if kind == Kind::Load && t.done > now {
            // A load of a line its own prefetch is still fetching waits for the same
            // miss, and the instructions after it run under the wait as under any
            // load miss (docs/validation.md, "Work after the new holder's miss").
            self.stalled(tid, t.done - now, false);
        }
        if t.stale {
            let (value, _) = self.mem.read_word(tid, addr.line, addr.word as usize, now);
            if t.done == now || self.resume_at(t.done, tid) {
                return Some((value, true));
            }
            let s = &mut self.slots[tid as usize];
            s.result = value;
            s.ok = true;
            return None;
        }
        let w = &mut self.mem.lines[addr.line as usize].words[addr.word as usize];
        let old = *w;
        let (result, ok, wrote) = match op {
            Op::Load(_) | Op::Watch(..) | Op::Prefetch(_) => (old, true, false),
            Op::Store(_, v) => {
                *w = v;
                (0, true, true)
            }
            Op::Swap(_, v) => {
                *w = v;
                (old, true, true)
            }
            Op::Cas(_, expect, new) => {
                if old == expect {
                    *w = new;
                    (old, true, true)
                } else {
                    (old, false, false)
                }
            }
            Op::FetchAdd(_, v) => {
                *w = old.wrapping_add(v);
                (old, true, true)
            }
            Op::FetchOr(_, v) => {
                *w = old | v;
                (old, true, true)
            }
            Op::FetchAnd(_, v) => {
                *w = old & v;
                (old, true, true)
            }
            // The masked update is applied whole at the time the request is priced,
            // like every other operation here: one access, no retry.
            Op::SwapMasked(_, mask, v) => {
                *w = (old & !mask) | (v & mask);
                (old, true, true)
            }
            Op::StoreMasked(_, mask, v) => {
                *w = (old & !mask) | (v & mask);
                if self.forward_stall_ps > 0 {
                    self.slots[tid as usize].narrow =
                        Some((addr, mask, now + self.forward_stall_ps));
                }
                (0, true, true)
            }
            Op::Delay(_) | Op::Instructions(_) | Op::Work(_) | Op::Fence => unreachable!(),
        };
        if wrote && self.mem.lines[addr.line as usize].watch_head != NONE {
            self.wake_watchers(addr.line, t.visible);
        }
        if t.done == now || self.resume_at(t.done, tid) {
            Some((result, ok))
        } else {
            let s = &mut self.slots[tid as usize];
            s.result = result;
            s.ok = ok;
            None
        }
    }
}

/// Per-lock instrumentation (free in the simulator).
#[derive(Debug, Default)]
struct Instr {
    /// (grants so far, thread id and node of the last holder).
    locks: RefCell<Vec<(u64, Option<Holder>)>>,
}

/// The shared state of one simulated point. Create the environments with
/// [`Machine::env`], build one future per thread over them, then [`Machine::run`].
pub struct Machine {
    core: RefCell<Core>,
    instr: Instr,
    nodes: Vec<u32>,
    seeds: Vec<u64>,
    /// The topology's `overhead`: per workload operation (`Env::overhead`). Constant,
    /// so outside the `RefCell` the event loop borrows.
    overhead: Ns,
    /// The topology's futex costs (the OS mutexes' model).
    futex: locklab_model::plan::Futex,
    /// Whether a trace window was asked for ([`Machine::trace`]): outside the
    /// `RefCell`, so that a thread's marks cost nothing otherwise.
    tracing: Cell<bool>,
    /// The span of virtual time, ns, whose CPU time the threads count
    /// ([`Machine::count_cpu_within`]; all of it by default).
    cpu_window: Cell<(u64, u64)>,
}

/// How a simulation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    /// Virtual time reached, ns (the stop time, or when the last event ran).
    pub end_ns: u64,
    /// Threads whose futures completed.
    pub finished: usize,
    /// True if every unfinished thread was parked with nothing left to happen.
    pub deadlocked: bool,
    pub counters: Counters,
}

impl Machine {
    /// `seeds[i]` seeds thread i's random numbers.
    pub fn new(
        map: &CpuMap,
        costs: &Costs,
        slots: &[ThreadSlot],
        nlines: u32,
        seeds: Vec<u64>,
    ) -> Machine {
        assert_eq!(seeds.len(), slots.len());
        let fabric = Fabric::new(map, costs, slots);
        let ps = |t: Ns| t.ps();
        let n = slots.len();
        Machine {
            core: RefCell::new(Core {
                now: 0,
                seq: 0,
                heap: BinaryHeap::with_capacity(2 * n + 16),
                mem: Memory::new(nlines, fabric, &seeds),
                slots: vec![
                    Slot {
                        result: 0,
                        ok: true,
                        next: Next::Resume,
                        watch: Addr::new(0, 0),
                        reissue: false,
                        ahead: RunAhead::default(),
                        credited: false,
                        flown: 0,
                        deferred: false,
                        flown_to: NONE,
                        head_start: 0,
                        queued: None,
                        landed_at: NONE,
                        drain_from: None,
                        narrow: None,
                        work_carry: 0,
                    };
                    n
                ],
                pause_ps: ps(costs.pause_ns),
                run_ahead_ps: ps(costs.memory.run_ahead_ns),
                rmw_run_ahead_ppm: costs.memory.rmw_run_ahead_ppm as u64,
                reread_overlap_ppm: costs.memory.reread_overlap_ppm as u64,
                forward_stall_ps: ps(costs.memory.forward_stall_ns),
                drain_overlap_ppm: costs.memory.drain_overlap_ppm as u64,
                stop: u64::MAX,
                counters: Counters::default(),
            }),
            instr: Instr::default(),
            nodes: slots.iter().map(|s| s.node).collect(),
            seeds,
            overhead: costs.overhead_ns,
            futex: costs.futex,
            tracing: Cell::new(false),
            cpu_window: Cell::new((0, u64::MAX)),
        }
    }

    /// Count each thread's time off its CPU (`Env::off_cpu`) only within `from` up
    /// to `to` of virtual time (the measured window): set before the run.
    pub fn count_cpu_within(&self, from: u64, to: u64) {
        self.cpu_window.set((from, to));
    }

    /// The part of `a`..`b` that lies in the CPU-time window.
    fn within_cpu_window(&self, a: u64, b: u64) -> u64 {
        let (from, to) = self.cpu_window.get();
        b.min(to).saturating_sub(a.max(from))
    }

    pub fn threads(&self) -> usize {
        self.nodes.len()
    }

    /// The environment of thread `tid`.
    pub fn env(&self, tid: usize) -> SimEnv<'_> {
        SimEnv {
            m: self,
            tid: tid as u32,
            node: self.nodes[tid],
            rng: Cell::new(SplitMix64::new(self.seeds[tid])),
            wait_from: Cell::new(None),
            wait_lock: Cell::new(None),
            wait_grants: Cell::new(0),
            off_since: Cell::new(None),
            off_ns: Cell::new(0),
        }
    }

    /// Record every memory request (and each thread's waits and grants) from
    /// `from_ns` up to `to_ns` of virtual time (where a run stopped at `to_ns` ends);
    /// [`Machine::take_trace`] returns them.
    pub fn trace(&self, from_ns: u64, to_ns: u64) {
        self.tracing.set(true);
        let ps = |ns: u64| ns.saturating_mul(PS_PER_NS);
        self.core.borrow_mut().mem.trace(ps(from_ns), ps(to_ns));
    }

    /// What [`Machine::trace`] recorded, in the order the engine handled it.
    pub fn take_trace(&self) -> Vec<TraceEvent> {
        self.core.borrow_mut().mem.take_trace()
    }

    /// Read a word directly (tests, summaries); free.
    pub fn peek(&self, a: Addr) -> Word {
        self.core.borrow().mem.lines[a.line as usize].words[a.word as usize]
    }

    /// Set a word before the run starts (initial values); free and invisible to the
    /// coherence model.
    pub fn poke(&self, a: Addr, v: Word) {
        self.core.borrow_mut().mem.lines[a.line as usize].words[a.word as usize] = v;
    }

    /// Drive `threads` (thread i = future i) until `stop_ns` or until none can run.
    /// Every thread starts at time 0, in index order.
    pub fn run(
        &self,
        threads: &mut [Pin<Box<dyn Future<Output = ()> + '_>>],
        stop_ns: u64,
    ) -> Outcome {
        let starts = vec![0; threads.len()];
        self.run_from(threads, &starts, stop_ns)
    }

    /// As [`Machine::run`], thread i starting at `starts[i]` (ties in index order).
    pub fn run_from(
        &self,
        threads: &mut [Pin<Box<dyn Future<Output = ()> + '_>>],
        starts: &[u64],
        stop_ns: u64,
    ) -> Outcome {
        assert_eq!(threads.len(), self.threads());
        assert_eq!(starts.len(), self.threads());
        let stop = stop_ns.saturating_mul(PS_PER_NS).min(HORIZON_PS);
        let mut cx = Context::from_waker(Waker::noop());
        let mut finished = vec![false; threads.len()];
        let mut nfinished = 0;
        {
            let mut c = self.core.borrow_mut();
            c.stop = stop;
            for (t, &at) in starts.iter().enumerate() {
                c.schedule(
                    at.saturating_mul(PS_PER_NS).min(stop),
                    t as u32,
                    Next::Resume,
                );
            }
        }
        // Whether any event ran (else the end time is 0); if so the end is the clock,
        // which is the time of the last event (run through the queue or resumed at
        // once) or the stop time.
        let mut ran = false;
        loop {
            let tid = {
                let mut c = self.core.borrow_mut();
                let Some(Reverse(key)) = c.heap.pop() else {
                    break;
                };
                let time = (key >> 64) as u64;
                ran = true;
                if time >= stop {
                    c.now = stop;
                    break;
                }
                c.now = time;
                c.counters.events += 1;
                let tid = (key as u32) & ((1 << TID_BITS) - 1);
                if c.slots[tid as usize].next == Next::WakeRead {
                    let Some(done) = c.wake_read_issue(tid) else {
                        continue;
                    };
                    if !c.next_to_run(done) {
                        c.schedule(done, tid, Next::Resume);
                        continue;
                    }
                    // Its resume would be the next event: run it now.
                    c.slots[tid as usize].next = Next::Resume;
                    c.fast_forward(done);
                    tid as usize
                } else {
                    c.counters.polls += 1;
                    tid as usize
                }
            };
            if finished[tid] {
                continue;
            }
            if threads[tid].as_mut().poll(&mut cx).is_ready() {
                finished[tid] = true;
                nfinished += 1;
            }
        }
        let c = self.core.borrow();
        let last = if ran { c.now } else { 0 };
        Outcome {
            end_ns: last / PS_PER_NS,
            finished: nfinished,
            deadlocked: last < stop && nfinished < threads.len(),
            counters: c.counters,
        }
    }

    #[inline]
    fn issue(&self, tid: u32, op: Op) -> Option<(Word, bool)> {
        self.core.borrow_mut().issue(tid, op)
    }

    /// Whether the thread's pending operation must be issued again (and forget it).
    #[inline]
    fn take_reissue(&self, tid: u32) -> bool {
        let mut c = self.core.borrow_mut();
        std::mem::take(&mut c.slots[tid as usize].reissue)
    }

    #[inline]
    fn result(&self, tid: u32) -> (Word, bool) {
        let c = self.core.borrow();
        let s = &c.slots[tid as usize];
        (s.result, s.ok)
    }
}

/// A simulated thread's view of the machine.
pub struct SimEnv<'m> {
    m: &'m Machine,
    tid: u32,
    node: u32,
    rng: Cell<SplitMix64>,
    /// When the current acquisition's first attempt failed (`Env::waiting`), if it
    /// did: its wait runs from there, as natively.
    wait_from: Cell<Option<u64>>,
    /// The lock whose grant count a first failed attempt notes
    /// (`Env::note_wait_grants_of`), and that count for the current wait.
    wait_lock: Cell<Option<usize>>,
    wait_grants: Cell<u64>,
    /// Since when this thread is off its CPU, asleep in the kernel (`Env::off_cpu`),
    /// if it is.
    off_since: Cell<Option<u64>>,
    /// How long it was off its CPU within the machine's CPU-time window
    /// ([`Machine::count_cpu_within`]), over the spans that have ended.
    off_ns: Cell<u64>,
}

/// Converts a raw (value, success) result into an operation's output.
pub(crate) trait FromRaw {
    fn from_raw(v: Word, ok: bool) -> Self;
}
impl FromRaw for Word {
    #[inline]
    fn from_raw(v: Word, _: bool) -> Self {
        v
    }
}
impl FromRaw for () {
    #[inline]
    fn from_raw(_: Word, _: bool) -> Self {}
}
impl FromRaw for Result<Word, Word> {
    #[inline]
    fn from_raw(v: Word, ok: bool) -> Self {
        if ok {
            Ok(v)
        } else {
            Err(v)
        }
    }
}

/// The future of one operation: issues on first poll, reads the slot on the second
/// (which only happens after the core's resume event for this thread).
pub struct OpFuture<'e, T> {
    m: &'e Machine,
    tid: u32,
    op: Op,
    issued: bool,
    _t: PhantomData<fn() -> T>,
}

impl<T: FromRaw> Future for OpFuture<'_, T> {
    type Output = T;
    #[inline]
    fn poll(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<T> {
        if self.issued {
            if !self.m.take_reissue(self.tid) {
                let (v, ok) = self.m.result(self.tid);
                return Poll::Ready(T::from_raw(v, ok));
            }
            self.issued = false;
        }
        match self.m.issue(self.tid, self.op) {
            Some((v, ok)) => Poll::Ready(T::from_raw(v, ok)),
            None => {
                self.issued = true;
                Poll::Pending
            }
        }
    }
}

impl<'m> SimEnv<'m> {
    /// One spin of a failed attempt ends (`pause`, `retry`): the acquisition waits
    /// from its first, and the spin's exit is mispredicted, so nothing runs ahead of
    /// what it waited for.
    fn spun(&self) {
        self.waiting();
        self.m.core.borrow_mut().slots[self.tid as usize].ahead = RunAhead::default();
    }

    /// When the current acquisition's first attempt failed, if it has.
    pub(crate) fn wait_began(&self) -> Option<u64> {
        self.wait_from.get()
    }

    /// How long this thread was off its CPU (`Env::off_cpu`) within the machine's
    /// CPU-time window, a sleep still going on counted to the window's end: what
    /// its CPU time over the window lacks, as the OS counts a native thread's.
    pub(crate) fn off_cpu_ns(&self) -> u64 {
        let open = self
            .off_since
            .get()
            .map_or(0, |from| self.m.within_cpu_window(from, u64::MAX));
        self.off_ns.get() + open
    }

    #[inline]
    fn op<T: FromRaw>(&self, op: Op) -> OpFuture<'m, T> {
        OpFuture {
            m: self.m,
            tid: self.tid,
            op,
            issued: false,
            _t: PhantomData,
        }
    }
}

impl Env for SimEnv<'_> {
    #[inline]
    fn tid(&self) -> usize {
        self.tid as usize
    }
    #[inline]
    fn nthreads(&self) -> usize {
        self.m.threads()
    }
    #[inline]
    fn node(&self) -> u32 {
        self.node
    }
    #[inline]
    fn now(&self) -> u64 {
        self.m.core.borrow().now / PS_PER_NS
    }
    #[inline]
    fn random(&self) -> u64 {
        let mut r = self.rng.get();
        let v = r.next_u64();
        self.rng.set(r);
        v
    }
    /// A wait is timed as natively: from the first failed attempt, zero when the
    /// first attempt succeeds (docs/metrics.md), so that a simulated wait and a
    /// native one measure the same thing.
    #[inline]
    fn acquire_start(&self) -> u64 {
        self.wait_from.set(None);
        self.now()
    }
    #[inline]
    fn acquire_granted(&self, _start: u64) -> (u64, u64) {
        let t = self.now();
        (t, self.wait_from.get().map_or(0, |from| t - from))
    }
    #[inline]
    fn waiting(&self) {
        if self.wait_from.get().is_none() {
            let now = self.now();
            self.wait_from.set(Some(now));
            if let Some(lock) = self.wait_lock.get() {
                self.wait_grants.set(self.grants(lock));
            }
            if self.m.tracing.get() {
                let mut core = self.m.core.borrow_mut();
                let at = core.now;
                core.mem.mark(self.tid, at, "waits", None);
            }
        }
    }
    #[inline]
    fn note_wait_grants_of(&self, lock: usize) {
        self.wait_lock.set(Some(lock));
    }
    #[inline]
    fn wait_start(&self) -> WaitStart {
        match (self.wait_lock.get(), self.wait_from.get()) {
            (None, _) => WaitStart::Arrival,
            (Some(_), None) => WaitStart::NotYet,
            (Some(_), Some(_)) => WaitStart::Grants(self.wait_grants.get()),
        }
    }
    #[inline]
    fn load(&self, a: Addr, _o: Ordering) -> impl Future<Output = Word> {
        self.op(Op::Load(a))
    }
    #[inline]
    fn store(&self, a: Addr, v: Word, _o: Ordering) -> impl Future<Output = ()> {
        self.op(Op::Store(a, v))
    }
    #[inline]
    fn swap(&self, a: Addr, v: Word, _o: Ordering) -> impl Future<Output = Word> {
        self.op(Op::Swap(a, v))
    }
    #[inline]
    fn cas(
        &self,
        a: Addr,
        old: Word,
        new: Word,
        _o: Ordering,
    ) -> impl Future<Output = Result<Word, Word>> {
        self.op(Op::Cas(a, old, new))
    }
    #[inline]
    fn fetch_add(&self, a: Addr, v: Word, _o: Ordering) -> impl Future<Output = Word> {
        self.op(Op::FetchAdd(a, v))
    }
    #[inline]
    fn fetch_or(&self, a: Addr, v: Word, _o: Ordering) -> impl Future<Output = Word> {
        self.op(Op::FetchOr(a, v))
    }
    #[inline]
    fn fetch_and(&self, a: Addr, v: Word, _o: Ordering) -> impl Future<Output = Word> {
        self.op(Op::FetchAnd(a, v))
    }
    /// One RMW, as the kernel's 16-bit `xchg` (not the trait's CAS loop).
    #[inline]
    fn swap_masked(
        &self,
        a: Addr,
        mask: Word,
        v: Word,
        _o: Ordering,
    ) -> impl Future<Output = Word> {
        self.op(Op::SwapMasked(a, mask, v))
    }
    /// One store, as the kernel's byte / half-word store.
    #[inline]
    fn store_masked(&self, a: Addr, mask: Word, v: Word, _o: Ordering) -> impl Future<Output = ()> {
        self.op(Op::StoreMasked(a, mask, v))
    }
    async fn wait_until<P: Fn(Word) -> bool>(&self, a: Addr, _o: Ordering, pred: P) -> Word {
        // On the engine's clock: a wait shorter than a nanosecond is a wait too.
        let clock = || self.m.core.borrow().now;
        let before = clock();
        let mut v: Word = self.op(Op::Load(a)).await;
        if clock() > before {
            // The first check waited for the line: another core held it, most often
            // to write it (a release). x86 keeps loads in order, so a load after the
            // check goes out early only speculatively, and the lines the writer
            // wrote before (its critical section's) are still being written then: a
            // load sent early would be squashed and sent again. Nothing is prefetched
            // ahead of the check's value; instructions still run under it.
            self.m.core.borrow_mut().slots[self.tid as usize]
                .ahead
                .loads = 0;
        }
        if pred(v) {
            return v;
        }
        self.waiting();
        while !pred(v) {
            v = self.op(Op::Watch(a, v)).await;
        }
        v
    }
    #[inline]
    fn prefetch(&self, a: Addr) -> impl Future<Output = ()> {
        self.op(Op::Prefetch(a))
    }
    #[inline]
    fn fence(&self) -> impl Future<Output = ()> {
        self.op(Op::Fence)
    }
    #[inline]
    fn work(&self, ns: u64) -> impl Future<Output = ()> {
        self.op(Op::Work(ns.saturating_mul(PS_PER_NS).min(HORIZON_PS)))
    }
    fn futex(&self) -> locklab_model::plan::Futex {
        self.m.futex
    }
    #[inline]
    fn overhead(&self) -> impl Future<Output = ()> {
        self.instructions(self.m.overhead)
    }
    #[inline]
    async fn instructions(&self, t: Ns) {
        // No event at all for none: the records of a topology without such costs
        // stay what they were.
        if !t.is_zero() {
            self.op(Op::Instructions(t.ps())).await
        }
    }
    fn off_cpu(&self, off: bool) {
        let now = self.now();
        match (off, self.off_since.get()) {
            (true, None) => self.off_since.set(Some(now)),
            (false, Some(from)) => {
                self.off_ns
                    .set(self.off_ns.get() + self.m.within_cpu_window(from, now));
                self.off_since.set(None);
            }
            // Already asleep, or already awake: nothing to mark.
            _ => {}
        }
    }
    #[inline]
    fn syscall(&self, t: Ns) -> impl Future<Output = ()> {
        self.m.core.borrow_mut().slots[self.tid as usize].ahead = RunAhead::default();
        self.op(Op::Delay(t.ps()))
    }
    /// Lock code pauses only after an attempt failed: the acquisition waits from here.
    #[inline]
    fn pause(&self) -> impl Future<Output = ()> {
        self.spun();
        let ps = {
            let mut c = self.m.core.borrow_mut();
            c.counters.pauses += 1;
            c.pause_ps
        };
        self.op(Op::Delay(ps))
    }
    /// As `pause`, without its delay: the next attempt goes out at once.
    fn retry(&self) -> impl Future<Output = ()> {
        self.spun();
        std::future::ready(())
    }
    fn grants(&self, lock: usize) -> u64 {
        self.m
            .instr
            .locks
            .borrow()
            .get(lock)
            .map(|l| l.0)
            .unwrap_or(0)
    }
    fn note_grant(&self, lock: usize) -> Grant {
        let mut locks = self.m.instr.locks.borrow_mut();
        if locks.len() <= lock {
            locks.resize(lock + 1, (0, None));
        }
        let (n, last) = locks[lock];
        locks[lock] = (n + 1, Some((self.tid as usize, self.node)));
        if self.m.tracing.get() {
            let mut core = self.m.core.borrow_mut();
            let at = core.now;
            core.mem.mark(self.tid, at, "granted", Some(lock as u32));
        }
        Grant {
            before: n,
            from: Handoff::after(self.tid as usize, last),
        }
    }
}
