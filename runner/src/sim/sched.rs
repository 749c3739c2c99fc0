//! The scheduler model for the wake-up placement seed (003): a CFS-like scheduler on a
//! modelled machine, with the old and the patched `select_idle_sibling`.
//!
//! This workload does not go through the lock code; it is its own discrete-event
//! model (same determinism rules: one heap ordered by time and sequence, seeds from
//! the point).
//!
//! What is modelled:
//! - **Run queues**: per CPU, the running task and the runnable ones, CFS-style:
//!   vruntime advances by `exec × 1024 / weight`, the next task is the lowest vruntime,
//!   a slice is `period × weight / queue weight` (period = `latency`, stretched to
//!   `nr × min_slice` when crowded), and a waking task starts at
//!   `max(own, min_vruntime − latency / 2)` (gentle sleeper credit).
//! - **Weights**: a hog group's `hog_group_weight` is split evenly among its hogs.
//!   Trade's workers are one group (the VM) of `worker_weight`, split among them;
//!   messaging's workers are root-cgroup tasks of `worker_weight` each. Static shares
//!   stand in for CFS's per-CPU group share computation.
//! - **Wake-up preemption** (`check_preempt_wakeup`): the wakee preempts the running
//!   task when it is behind by more than `wakeup_granularity × 1024 / wakee weight`.
//!   A synchronous wake-up gets no special treatment there; a waker finishing a burst
//!   is preempted once its bookkeeping is done (need-resched).
//! - **Placement** (`select_task_rq_fair` → `select_idle_sibling(p, target)`): target is
//!   the waker's CPU (wake-affine). Old: target if idle; else prev if idle and sharing
//!   the LLC; else the first core of the target's LLC whose CPUs are all idle; else
//!   target. Patched: the same, but an idle CPU on a partly busy core is remembered and
//!   used when no core is fully idle; and when the choice is still busy, balance on
//!   wake from the target (the patch's `prev_cpu`, which wake-affine has set to the
//!   waker's CPU): the least loaded core of its LLC (average load per CPU; the local
//!   core unless another is [`IMBALANCE_PCT`] % less loaded), then that core's least
//!   loaded CPU.
//! - **Newly idle balancing**: a CPU about to go idle pulls the waiting task that ran
//!   longest ago from the busiest CPU of its LLC, else of the machine (both policies).
//! - **Idle exit**: a task placed on an idle CPU starts `idle_exit` later.
//! - **SMT co-run**: a task progresses at `smt_corun_factor` while its sibling runs.
//! - **Cache warmth, Trade**: a task that starts on another core than it last ran on
//!   first refills its working set: `min(ws, L2)` from the LLC at `llc_ns` per line if
//!   the old core shares the LLC, else `min(ws, LLC)` at `remote_ns` per line, divided
//!   by [`MISSES_IN_FLIGHT`] (line-fill buffers); the refill is run time.
//! - **Cache warmth, Messaging**: each core's L2 (the topology's `l2`, LRU) holds the
//!   messages its threads wrote or read. A burst reads its message (`working_set`
//!   bytes: the payload plus the socket, room and JVM objects along the path); what is
//!   missing from the core's L2 comes from the LLC it was written in at `llc_ns` per
//!   line (the other socket's at `remote_ns`), [`MISSES_IN_FLIGHT`] at a time, as run
//!   time. SMT siblings share the L2.
//!
//! Scenarios:
//! - **Trade**: workers in a closed loop: burst, sleep, wake. Requests arrive from
//!   the network, so the waker is the CPU taking the NIC interrupt ([`NIC_CPU`]) and
//!   wake-affine makes it the target. Hogs run all the time.
//! - **Messaging** (VolanoMark's loopback test): `workers` threads, four per user
//!   ([`THREADS_PER_USER`]: client sender, server receiver, server sender, client
//!   receiver), users in rooms of [`ROOM`]. The users of a room take turns: a client
//!   sender posts (a burst that writes the message), its server receiver reads it and
//!   wakes the server sender of each of the 19 room-mates, each of which writes it to
//!   its connection and wakes that user's client receiver, which reads it. After the
//!   last delivery the room's next user posts, after the think time `sleep`. Every
//!   wake-up is synchronous (socket wake-ups: the waker goes back to reading its
//!   socket). A thread with more to read runs one burst per message without sleeping.
//!
//! Not modelled: the periodic load balancer (only newly idle balancing), the cost of
//! the balance-on-wake scan itself, NUMA balancing, the runqueue lock, hogs' cache
//! pollution, the LLC's capacity for messaging data, coherence traffic between a
//! sender and receivers running at the same time.
//!
//! Metrics: ops = worker bursts completed in the window; wait = wake-up latency per
//! worker (class `wakeup`: from the wake-up to running); `migrations_per_wakeup` =
//! wake-ups placed on another CPU than the task's previous one, per wake-up;
//! `pulls_per_wakeup` = tasks pulled by newly idle balancing, per wake-up;
//! `refill_per_burst_ns` = messaging refill time charged per burst.

use super::rng::{mix, SplitMix64};
use crate::stats::{self, RunContext, ThreadStats, Window};
use locklab_model::plan::{Dist, Machine, PlacementPolicy, Point, WakeupScenario, WakeupSpec};
use locklab_model::records::RunRecord;
use locklab_model::topology::CpuMap;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};

/// Misses a core overlaps while refilling a working set. Nehalem has 10 line-fill
/// buffers; refills of pointer-linked data (the JVM heaps of both benchmarks) overlap
/// fewer, so this is a middle guess, not a measurement.
pub const MISSES_IN_FLIGHT: u64 = 4;
/// The CPU that takes the network interrupts in the Trade scenario.
pub const NIC_CPU: usize = 0;
/// Users per messaging room: VolanoMark's rooms have 20 users each.
pub const ROOM: usize = 20;
/// Threads per messaging user: VolanoMark creates a client sender, a server receiver,
/// a server sender and a client receiver for each connection.
pub const THREADS_PER_USER: usize = 4;
/// `imbalance_pct` of the LLC (MC) domain: balance on wake leaves the local core only
/// for one at least this much (in %) less loaded.
pub const IMBALANCE_PCT: u64 = 125;
const NO_OBJ: u64 = u64::MAX;
const NICE_0: u64 = 1024;
const LINE: u64 = 64;
const DEFAULT_L2: u64 = 256 << 10;
const DEFAULT_LLC: u64 = 8 << 20;
const NONE: usize = usize::MAX;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Sleeping,
    Runnable,
    Running,
}

/// What a task does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Hog,
    /// Trade's latency-bound worker.
    Trade,
    /// Messaging: a user's client sender (posts), server receiver (gets the post and
    /// hands it to the room), server sender (one per room-mate: writes it to the
    /// connection) and client receiver (reads it).
    ClientSend,
    ServerRecv,
    ServerSend,
    ClientRecv,
}

/// Messaging data in flight: a posted message (its payload and the socket, room and
/// JVM objects it drags along), read by every thread down the chain.
#[derive(Debug, Clone)]
struct Obj {
    bytes: u64,
    /// LLC it was written in.
    llc: usize,
    /// Deliveries still to be read by client receivers.
    pending: u32,
    /// The client sender that posted it.
    owner: usize,
}

/// A core's L2: the messaging objects it holds, least recently used first.
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

#[derive(Debug, Clone)]
struct Task {
    role: Role,
    weight: u64,
    vruntime: i64,
    state: State,
    /// The CPU it runs or is queued on, or last ran on.
    cpu: usize,
    /// Core it last ran on (cache warmth).
    warm_core: usize,
    /// Work left in the current burst (ns at full speed); hogs never finish.
    remaining: f64,
    /// When it last became runnable (for the wake-up latency); `u64::MAX` if not
    /// waiting to run after a wake-up.
    woken_at: u64,
    /// When it last ran (cache hotness for the idle balancer).
    last_ran: u64,
    /// Messaging: data to read (one burst each), the object the current burst reads,
    /// and whether a client sender's next post is due.
    inbox: VecDeque<u64>,
    input: u64,
    post_due: bool,
    /// Messaging: the user it belongs to.
    user: usize,
}

#[derive(Debug, Clone)]
struct Cpu {
    core: usize,
    llc: usize,
    /// Other hardware threads of the same core.
    siblings: Vec<usize>,
    curr: usize,
    queue: Vec<usize>,
    min_vruntime: i64,
    /// Start of the current run segment of `curr` (at the current rate).
    seg_start: u64,
    slice_end: u64,
    rate: f64,
    /// Until when the CPU is leaving idle (the picked task waits).
    exiting_until: u64,
    /// A wake-up asked to preempt the running task while it is finishing a burst
    /// (`TIF_NEED_RESCHED`): done when the burst's bookkeeping is.
    resched: bool,
    version: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    /// CPU `0`'s running task finishes its burst or its slice (if the version matches).
    Cpu(usize, u64),
    /// CPU finished leaving idle.
    IdleExit(usize),
    /// A task's sleep is over (Trade).
    Wake(usize),
    /// A member's next post is due (Messaging).
    Post(usize),
}

struct Model<'a> {
    w: &'a WakeupSpec,
    now: u64,
    seq: u64,
    heap: BinaryHeap<Reverse<(u64, u64, Ev)>>,
    cpus: Vec<Cpu>,
    tasks: Vec<Task>,
    rng: SplitMix64,
    /// Per worker: its stats.
    stats: Vec<ThreadStats>,
    window: Window,
    bursts: u64,
    wakeups: u64,
    migrations: u64,
    refill_same_llc_ns: f64,
    refill_other_llc_ns: f64,
    /// Idle balancing: tasks pulled by a CPU going idle (in the window).
    pulls: u64,
    /// Messaging: refill time charged (in the window), the users of each room, the
    /// data in flight and each core's L2.
    refill_charged_ns: f64,
    rooms: Vec<Vec<usize>>,
    objs: HashMap<u64, Obj>,
    next_obj: u64,
    l2: Vec<L2>,
    l2_bytes: u64,
    line_ns: (u64, u64),
}

impl Model<'_> {
    fn push(&mut self, t: u64, ev: Ev) {
        self.seq += 1;
        self.heap.push(Reverse((t, self.seq, ev)));
    }

    fn sample(&mut self, d: &Dist) -> u64 {
        let r = &mut self.rng;
        match *d {
            Dist::Fixed { ns } => ns,
            Dist::Uniform { lo_ns, hi_ns } => r.range(lo_ns.min(hi_ns), lo_ns.max(hi_ns)),
            Dist::Exp { mean_ns } => {
                let u = 1.0 - r.next_f64();
                (-(mean_ns as f64) * u.ln()).round() as u64
            }
            Dist::Normal { mean_ns, sd_ns } => {
                let (u1, u2) = (1.0 - r.next_f64(), r.next_f64());
                let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
                (mean_ns as f64 + sd_ns as f64 * z).max(0.0).round() as u64
            }
        }
    }

    fn busy(&self, c: usize) -> bool {
        self.cpus[c].curr != NONE
    }

    /// `idle_cpu()`: nothing running, nothing queued, not already waking up.
    fn idle(&self, c: usize) -> bool {
        let cpu = &self.cpus[c];
        cpu.curr == NONE && cpu.queue.is_empty() && cpu.exiting_until <= self.now
    }

    fn load(&self, c: usize) -> u64 {
        let cpu = &self.cpus[c];
        let run = if cpu.curr != NONE {
            self.tasks[cpu.curr].weight
        } else {
            0
        };
        run + cpu.queue.iter().map(|&t| self.tasks[t].weight).sum::<u64>()
    }

    /// Charge the running task for the time since its segment started.
    fn update_curr(&mut self, c: usize) {
        let now = self.now;
        let cpu = &mut self.cpus[c];
        if cpu.curr == NONE {
            return;
        }
        let dt = now.saturating_sub(cpu.seg_start);
        cpu.seg_start = now;
        let t = &mut self.tasks[cpu.curr];
        t.last_ran = now;
        t.remaining -= dt as f64 * cpu.rate;
        t.vruntime += (dt * NICE_0 / t.weight) as i64;
        let mut minv = t.vruntime;
        for &q in &cpu.queue {
            minv = minv.min(self.tasks[q].vruntime);
        }
        cpu.min_vruntime = cpu.min_vruntime.max(minv);
    }

    /// Recompute the SMT rate of `c` and its next event.
    fn refresh(&mut self, c: usize) {
        self.update_curr(c);
        let sib_busy = self.cpus[c].siblings.iter().any(|&s| self.busy(s));
        let cpu = &mut self.cpus[c];
        cpu.rate = if sib_busy {
            self.w.sched.smt_corun_factor.clamp(0.05, 1.0)
        } else {
            1.0
        };
        cpu.version += 1;
        if cpu.curr == NONE {
            return;
        }
        let t = &self.tasks[cpu.curr];
        let finish = if t.remaining.is_finite() {
            self.now + (t.remaining.max(0.0) / cpu.rate).ceil() as u64
        } else {
            u64::MAX
        };
        let at = finish.min(cpu.slice_end).max(self.now);
        let ev = Ev::Cpu(c, cpu.version);
        self.push(at, ev);
    }

    fn set_curr(&mut self, c: usize, t: usize) {
        let now = self.now;
        // Slice: period × weight / queue weight.
        let nr = self.cpus[c].queue.len() as u64 + 1;
        let s = &self.w.sched;
        let period = s.latency_ns.max(nr * s.min_slice_ns);
        let total = self.load(c) + self.tasks[t].weight;
        let slice = (period * self.tasks[t].weight / total.max(1)).max(s.min_slice_ns / 4);
        {
            let cpu = &mut self.cpus[c];
            cpu.curr = t;
            cpu.seg_start = now;
            cpu.slice_end = now + slice;
        }
        let core = self.cpus[c].core;
        let llc = self.cpus[c].llc;
        let task = &mut self.tasks[t];
        task.state = State::Running;
        task.cpu = c;
        task.last_ran = now;
        if task.role != Role::Hog {
            // Trade: the task's own data, warm on the core it last ran on. Messaging:
            // the data it reads, warm where it was written or last read (`fill`).
            let warm = if task.role == Role::Trade {
                task.warm_core
            } else {
                NONE
            };
            if warm != core && warm != NONE {
                let same = self.cpus.iter().any(|x| x.core == warm && x.llc == llc);
                task.remaining += if same {
                    self.refill_same_llc_ns
                } else {
                    self.refill_other_llc_ns
                };
            }
            if task.woken_at != u64::MAX {
                let lat = now - task.woken_at;
                task.woken_at = u64::MAX;
                let i = t;
                self.stats[i].record_acquire(0, now, lat, 0, None);
            }
            self.fill(t, c);
        }
        self.tasks[t].warm_core = core;
        self.refresh(c);
        self.refresh_siblings(c);
    }

    /// The siblings of `c` change speed when `c` starts or stops running something.
    fn refresh_siblings(&mut self, c: usize) {
        for i in 0..self.cpus[c].siblings.len() {
            let s = self.cpus[c].siblings[i];
            self.refresh(s);
        }
    }

    /// Messaging: the running task `t` on `c` reads its input; the part of it missing
    /// from the core's L2 comes from the LLC it was written in (or the other socket's),
    /// `MISSES_IN_FLIGHT` lines at a time, and is run time.
    fn fill(&mut self, t: usize, c: usize) {
        let id = self.tasks[t].input;
        let Some(obj) = self.objs.get(&id) else {
            return;
        };
        let (bytes, llc) = (obj.bytes, obj.llc);
        let core = self.cpus[c].core;
        let here = self.l2[core].touch(id, bytes, self.l2_bytes);
        let missing = bytes - here.min(bytes);
        if missing == 0 {
            return;
        }
        let per_line = if llc == self.cpus[c].llc {
            self.line_ns.0
        } else {
            self.line_ns.1
        };
        let cost = (missing.div_ceil(LINE) * per_line) as f64 / MISSES_IN_FLIGHT as f64;
        self.tasks[t].remaining += cost;
        if self.in_window(self.now) {
            self.refill_charged_ns += cost;
        }
    }

    /// Messaging: write a new object of the working-set size on `c`'s core.
    fn create(&mut self, c: usize, pending: u32, owner: usize) -> u64 {
        let id = self.next_obj;
        self.next_obj += 1;
        let bytes = self.w.working_set_bytes;
        let llc = self.cpus[c].llc;
        let obj = Obj {
            bytes,
            llc,
            pending,
            owner,
        };
        self.objs.insert(id, obj);
        let core = self.cpus[c].core;
        self.l2[core].touch(id, bytes, self.l2_bytes);
        id
    }

    /// Newly idle balancing (`idle_balance`): a CPU about to go idle pulls a waiting
    /// task from the busiest CPU of its LLC, else of the machine. It takes the task
    /// that ran longest ago (the kernel skips cache-hot tasks, ran within
    /// `migration_cost`, until balancing has failed `cache_nice_tries` times; the
    /// model goes straight to the coldest).
    fn pull(&mut self, c: usize) -> Option<usize> {
        let llc = self.cpus[c].llc;
        let now = self.now;
        let mut from = NONE;
        for same_llc in [true, false] {
            let mut best = 0;
            for x in 0..self.cpus.len() {
                let cpu = &self.cpus[x];
                if x == c || (same_llc && cpu.llc != llc) || cpu.curr == NONE {
                    continue;
                }
                if cpu.exiting_until > now {
                    continue;
                }
                if cpu.queue.len() > best {
                    best = cpu.queue.len();
                    from = x;
                }
            }
            if from != NONE {
                break;
            }
        }
        if from == NONE {
            return None;
        }
        let (i, &t) = self.cpus[from]
            .queue
            .iter()
            .enumerate()
            .min_by_key(|(_, &t)| (self.tasks[t].last_ran, t))?;
        self.cpus[from].queue.swap_remove(i);
        let (old_min, new_min) = (self.cpus[from].min_vruntime, self.cpus[c].min_vruntime);
        let task = &mut self.tasks[t];
        task.vruntime = task.vruntime - old_min + new_min;
        task.cpu = c;
        if self.in_window(now) {
            self.pulls += 1;
        }
        Some(t)
    }

    /// Pick the next task on `c` (the current one, if any, was requeued or left).
    fn pick(&mut self, c: usize) {
        let cpu = &mut self.cpus[c];
        if cpu.queue.is_empty() {
            cpu.curr = NONE;
            cpu.version += 1;
            if let Some(t) = self.pull(c) {
                self.set_curr(c, t);
                return;
            }
            self.refresh_siblings(c);
            return;
        }
        let (i, _) = cpu
            .queue
            .iter()
            .enumerate()
            .min_by_key(|(_, &t)| (self.tasks[t].vruntime, t))
            .expect("non-empty");
        let t = cpu.queue.swap_remove(i);
        cpu.curr = NONE;
        if cpu.exiting_until > self.now {
            // Still leaving idle: the IdleExit event will pick again.
            cpu.queue.push(t);
            return;
        }
        self.set_curr(c, t);
    }

    fn select_cpu(&self, t: usize, target: usize) -> usize {
        let prev = self.tasks[t].cpu;
        if self.idle(target) {
            return target;
        }
        let llc_t = self.cpus[target].llc;
        if prev != target && self.cpus[prev].llc == llc_t && self.idle(prev) {
            return prev;
        }
        let patched = self.w.policy == PlacementPolicy::Patched;
        let mut some_idle = NONE;
        // Cores of the target's LLC in order; a core's CPUs in order.
        let mut seen_core = NONE;
        for c in 0..self.cpus.len() {
            let core = self.cpus[c].core;
            if self.cpus[c].llc != llc_t || core == seen_core {
                continue;
            }
            // First time we see this core: examine all its CPUs.
            if (0..c).any(|x| self.cpus[x].core == core) {
                continue;
            }
            seen_core = core;
            let mut all_idle = true;
            for x in (0..self.cpus.len()).filter(|&x| self.cpus[x].core == core) {
                if self.idle(x) {
                    if some_idle == NONE {
                        some_idle = x;
                    }
                } else {
                    all_idle = false;
                }
            }
            if all_idle {
                return c;
            }
        }
        if !patched {
            return target;
        }
        if some_idle != NONE {
            return some_idle;
        }
        // Balance on wake from the target: the patch balances from `prev_cpu`, which
        // wake-affine has already set to the waker's CPU.
        self.find_idlest(target)
    }

    /// `find_idlest_group` + `find_idlest_cpu` over `local`'s LLC: the least loaded core
    /// (average load per CPU), the local core unless another is `IMBALANCE_PCT` less
    /// loaded; then its least loaded CPU (ties: `local`, else the lowest number).
    fn find_idlest(&self, local: usize) -> usize {
        let llc = self.cpus[local].llc;
        let local_core = self.cpus[local].core;
        let core_load = |core: usize| {
            let (mut sum, mut n) = (0, 0);
            for x in 0..self.cpus.len() {
                if self.cpus[x].core == core {
                    sum += self.load(x);
                    n += 1;
                }
            }
            sum * NICE_0 / n.max(1)
        };
        let this_load = core_load(local_core);
        let mut idlest = (u64::MAX, NONE);
        for x in 0..self.cpus.len() {
            let core = self.cpus[x].core;
            if self.cpus[x].llc != llc || core == local_core || x != self.first_of_core(core) {
                continue;
            }
            idlest = idlest.min((core_load(core), core));
        }
        let core = if idlest.1 != NONE && 100 * this_load >= IMBALANCE_PCT * idlest.0 {
            idlest.1
        } else {
            local_core
        };
        (0..self.cpus.len())
            .filter(|&x| self.cpus[x].core == core)
            .min_by_key(|&x| (self.load(x), x != local, x))
            .unwrap_or(local)
    }

    fn first_of_core(&self, core: usize) -> usize {
        (0..self.cpus.len())
            .find(|&x| self.cpus[x].core == core)
            .unwrap_or(NONE)
    }

    /// Task `t` becomes runnable, woken from `waker_cpu`. `sync`: the waker is the
    /// task running there and is about to sleep (no wake-up preemption of it).
    fn wake(&mut self, t: usize, waker_cpu: usize, sync: bool) {
        let now = self.now;
        let prev = self.tasks[t].cpu;
        let c = self.select_cpu(t, waker_cpu);
        self.wakeups += self.in_window(now) as u64;
        if c != prev {
            self.migrations += self.in_window(now) as u64;
        }
        self.update_curr(c);
        let thresh = (self.w.sched.latency_ns / 2) as i64;
        let (old_min, new_min) = (self.cpus[prev].min_vruntime, self.cpus[c].min_vruntime);
        let task = &mut self.tasks[t];
        // Migrating keeps the lag relative to the queue's min_vruntime; a sleeper is
        // credited at most half a latency period.
        task.vruntime = task.vruntime - old_min + new_min;
        task.vruntime = task.vruntime.max(new_min - thresh);
        task.state = State::Runnable;
        task.cpu = c;
        task.woken_at = now;
        let was_idle = self.idle(c);
        self.cpus[c].queue.push(t);
        if was_idle {
            let until = now + self.w.sched.idle_exit_ns;
            self.cpus[c].exiting_until = until;
            self.push(until, Ev::IdleExit(c));
            return;
        }
        let curr = self.cpus[c].curr;
        if curr == NONE {
            return; // leaving idle (picked at IdleExit)
        }
        // `check_preempt_wakeup`: a synchronous wake-up gets no special treatment here
        // (it only helps `wake_affine`); a waker that is finishing a burst is preempted
        // once its bookkeeping is done.
        let gran = (self.w.sched.wakeup_granularity_ns * NICE_0 / self.tasks[t].weight) as i64;
        if self.tasks[curr].vruntime > self.tasks[t].vruntime + gran {
            if sync && c == waker_cpu {
                self.cpus[c].resched = true;
            } else {
                self.preempt(c);
            }
        }
    }

    fn preempt(&mut self, c: usize) {
        self.update_curr(c);
        let curr = self.cpus[c].curr;
        if curr != NONE {
            self.tasks[curr].state = State::Runnable;
            self.cpus[c].queue.push(curr);
            self.cpus[c].curr = NONE;
        }
        self.pick(c);
    }

    fn in_window(&self, t: u64) -> bool {
        self.window.contains(t)
    }

    /// The running task of `c` finished its burst (workers only).
    fn burst_done(&mut self, c: usize) {
        let t = self.cpus[c].curr;
        if self.in_window(self.now) {
            self.bursts += 1;
        }
        let now = self.now;
        match self.w.scenario {
            WakeupScenario::Trade => {
                let s = self.sample(&self.w.sleep.clone());
                self.push(now + s, Ev::Wake(t));
            }
            WakeupScenario::Messaging => {
                self.hand_on(t, c);
                let resched = std::mem::take(&mut self.cpus[c].resched);
                if self.next_work(t) {
                    if resched {
                        // A wakee is owed the CPU; the rest waits its turn here.
                        self.preempt(c);
                    } else {
                        // More to read: keep running here.
                        self.fill(t, c);
                        self.refresh(c);
                    }
                    return;
                }
            }
        }
        self.tasks[t].state = State::Sleeping;
        self.cpus[c].curr = NONE;
        self.pick(c);
    }

    /// Messaging: task `t` on `c` finished a burst; pass its data down the chain,
    /// waking the next thread from `c` (socket wake-ups are synchronous).
    fn hand_on(&mut self, t: usize, c: usize) {
        let user = self.tasks[t].user;
        let base = user * THREADS_PER_USER;
        let input = self.tasks[t].input;
        self.tasks[t].input = NO_OBJ;
        match self.tasks[t].role {
            Role::ClientSend => {
                // Post: a message for every room-mate, to this user's server receiver.
                let room = &self.rooms[user / ROOM];
                let mates = (room.len() - 1) as u32;
                let m = self.create(c, mates, t);
                if mates == 0 {
                    self.delivered(m);
                } else {
                    self.deliver(base + 1, m, c);
                }
            }
            Role::ServerRecv => {
                // Hand the message to the server sender of every room-mate.
                let room = self.rooms[user / ROOM].clone();
                for u in room {
                    if u != user {
                        self.deliver(u * THREADS_PER_USER + 2, input, c);
                    }
                }
            }
            Role::ServerSend => {
                // Write it to this user's connection.
                self.deliver(base + 3, input, c);
            }
            Role::ClientRecv => self.delivered(input),
            Role::Hog | Role::Trade => {}
        }
    }

    /// One delivery of message `m` was read; after the last one the next user of the
    /// room takes its turn, after the think time (VolanoMark's users take turns).
    fn delivered(&mut self, m: u64) {
        let Some(msg) = self.objs.get_mut(&m) else {
            return;
        };
        msg.pending = msg.pending.saturating_sub(1);
        if msg.pending > 0 {
            return;
        }
        let user = self.tasks[msg.owner].user;
        self.objs.remove(&m);
        let room = &self.rooms[user / ROOM];
        let next = room[(user % ROOM + 1) % room.len()];
        let s = self.sample(&self.w.sleep.clone());
        self.push(self.now + s, Ev::Post(next * THREADS_PER_USER));
    }

    fn deliver(&mut self, to: usize, obj: u64, c: usize) {
        self.tasks[to].inbox.push_back(obj);
        if self.tasks[to].state == State::Sleeping && self.next_work(to) {
            self.wake(to, c, true);
        }
    }

    fn start_burst(&mut self, t: usize) {
        let b = self.sample(&self.w.burst.clone()) as f64;
        self.tasks[t].remaining = b;
    }

    /// Messaging: start the member's next burst (read a message first, else post)
    /// if it has one; false if it has nothing to do.
    fn next_work(&mut self, t: usize) -> bool {
        let task = &mut self.tasks[t];
        if let Some(o) = task.inbox.pop_front() {
            task.input = o;
        } else if task.post_due {
            task.post_due = false;
            task.input = NO_OBJ;
        } else {
            return false;
        }
        self.start_burst(t);
        true
    }

    fn run(&mut self, end: u64) {
        while let Some(Reverse((time, _, ev))) = self.heap.pop() {
            if time >= end {
                break;
            }
            self.now = time;
            match ev {
                Ev::Wake(t) => {
                    if self.tasks[t].state == State::Sleeping {
                        self.start_burst(t);
                        self.wake(t, NIC_CPU, false);
                    }
                }
                Ev::Post(t) => {
                    self.tasks[t].post_due = true;
                    if self.tasks[t].state == State::Sleeping && self.next_work(t) {
                        let prev = self.tasks[t].cpu;
                        self.wake(t, prev, false);
                    }
                }
                Ev::IdleExit(c) => {
                    if self.cpus[c].exiting_until != time {
                        continue;
                    }
                    self.cpus[c].exiting_until = 0;
                    if self.cpus[c].curr == NONE {
                        self.pick(c);
                    }
                }
                Ev::Cpu(c, v) => {
                    if self.cpus[c].version != v || self.cpus[c].curr == NONE {
                        continue;
                    }
                    self.update_curr(c);
                    let t = self.cpus[c].curr;
                    if self.tasks[t].remaining <= 0.5 {
                        self.burst_done(c);
                    } else if self.now >= self.cpus[c].slice_end {
                        let q = &self.cpus[c].queue;
                        let better = q
                            .iter()
                            .any(|&x| self.tasks[x].vruntime < self.tasks[t].vruntime);
                        if better {
                            self.preempt(c);
                        } else {
                            let s = self.w.sched.min_slice_ns.max(1);
                            self.cpus[c].slice_end = self.now + s;
                            self.refresh(c);
                        }
                    } else {
                        self.refresh(c);
                    }
                }
            }
        }
    }
}

/// Run a wake-up placement point.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run(
    ctx: &RunContext,
    w: &WakeupSpec,
    point: &Point,
    map: &CpuMap,
    spec: Option<&Machine>,
    duration_ns: u64,
    warmup_ns: u64,
    seed: u64,
) -> RunRecord {
    let mut ctx = ctx.clone();
    let ncpu = map.len();
    if ncpu == 0 {
        return stats::skipped(&ctx, point.threads, "the machine model has no CPUs".into());
    }
    // Messaging: four threads per user (at least two users, so there is a room-mate).
    let workers = match w.scenario {
        WakeupScenario::Trade => w.workers as usize,
        WakeupScenario::Messaging => {
            (w.workers as usize / THREADS_PER_USER).max(2) * THREADS_PER_USER
        }
    };
    let users = workers / THREADS_PER_USER;
    let hogs = w.hogs as usize;
    let costs = spec
        .map(|m| m.costs.clone())
        .unwrap_or(super::HOST_DEFAULT_COSTS);
    let l2 = spec.and_then(|m| m.l2_bytes).unwrap_or(DEFAULT_L2);
    let llc = spec.and_then(|m| m.llc_bytes).unwrap_or(DEFAULT_LLC);
    let ws = w.working_set_bytes;
    let refill = |bytes: u64, per_line: u64| {
        (bytes.div_ceil(LINE) * per_line) as f64 / MISSES_IN_FLIGHT as f64
    };

    let cpus: Vec<Cpu> = (0..ncpu)
        .map(|c| {
            let info = &map.cpus[c];
            Cpu {
                core: info.core as usize,
                llc: info.llc as usize,
                siblings: (0..ncpu)
                    .filter(|&x| x != c && map.cpus[x].core == info.core)
                    .collect(),
                curr: NONE,
                queue: Vec::new(),
                min_vruntime: 0,
                seg_start: 0,
                slice_end: 0,
                rate: 1.0,
                exiting_until: 0,
                resched: false,
                version: 0,
            }
        })
        .collect();

    let worker_weight = match w.scenario {
        WakeupScenario::Trade => (w.worker_weight as u64 / workers.max(1) as u64).max(2),
        WakeupScenario::Messaging => w.worker_weight as u64,
    };
    let groups = (w.hog_groups as usize).max(1);
    // Hogs spread as the load balancer leaves them: over sockets, then cores, then
    // second hardware threads.
    let per_socket = (map.cores / map.sockets.max(1)).max(1);
    let mut spread: Vec<usize> = (0..ncpu).collect();
    spread.sort_by_key(|&c| {
        let i = &map.cpus[c];
        (i.smt, i.core % per_socket, i.socket)
    });
    let mut tasks = Vec::with_capacity(workers + hogs);
    let task = |role, weight, cpu, user, remaining, state| Task {
        role,
        weight,
        vruntime: 0,
        state,
        cpu,
        warm_core: NONE,
        remaining,
        woken_at: u64::MAX,
        last_ran: 0,
        inbox: VecDeque::new(),
        input: NO_OBJ,
        post_due: false,
        user,
    };
    // Workers first (their index is their thread index in the records), spread one per
    // CPU in order, as fork balancing leaves them.
    for i in 0..workers {
        let role = match w.scenario {
            WakeupScenario::Trade => Role::Trade,
            WakeupScenario::Messaging => [
                Role::ClientSend,
                Role::ServerRecv,
                Role::ServerSend,
                Role::ClientRecv,
            ][i % THREADS_PER_USER],
        };
        let user = i / THREADS_PER_USER;
        tasks.push(task(
            role,
            worker_weight,
            i % ncpu,
            user,
            0.0,
            State::Sleeping,
        ));
    }
    for h in 0..hogs {
        let g = h % groups;
        let in_group = (hogs / groups + usize::from(g < hogs % groups)).max(1);
        let weight = (w.hog_group_weight as u64 / in_group as u64).max(2);
        let cpu = spread[h % ncpu];
        tasks.push(task(
            Role::Hog,
            weight,
            cpu,
            NONE,
            f64::INFINITY,
            State::Runnable,
        ));
    }
    let rooms: Vec<Vec<usize>> = (0..users.div_ceil(ROOM))
        .map(|r| (r * ROOM..((r + 1) * ROOM).min(users)).collect())
        .collect();
    let ncores = map
        .cpus
        .iter()
        .map(|c| c.core as usize + 1)
        .max()
        .unwrap_or(1);

    let window = Window {
        start_ns: warmup_ns,
        end_ns: warmup_ns + duration_ns,
    };
    let stats = (0..workers)
        .map(|i| {
            let c = tasks[i].cpu;
            ThreadStats::new(map.cpus[c].os_id, map.cpus[c].node, window, &["wakeup"], 0)
        })
        .collect();
    let mut m = Model {
        w,
        now: 0,
        seq: 0,
        heap: BinaryHeap::new(),
        cpus,
        tasks,
        rng: SplitMix64::new(mix(seed, 3)),
        stats,
        window,
        bursts: 0,
        wakeups: 0,
        migrations: 0,
        refill_same_llc_ns: refill(ws.min(l2), costs.llc_ns),
        refill_other_llc_ns: refill(ws.min(llc), costs.remote_ns),
        pulls: 0,
        refill_charged_ns: 0.0,
        rooms,
        objs: HashMap::new(),
        next_obj: 0,
        l2: vec![L2::default(); ncores],
        l2_bytes: l2,
        line_ns: (costs.llc_ns, costs.remote_ns),
    };
    // Hogs start running; workers start asleep with a random first sleep.
    for h in workers..workers + hogs {
        let c = m.tasks[h].cpu;
        m.cpus[c].queue.push(h);
    }
    for c in 0..ncpu {
        if !m.cpus[c].queue.is_empty() {
            m.pick(c);
        }
    }
    for t in 0..workers {
        let mean = (w.sleep.mean_ns() as u64).max(1_000);
        let ev = match m.tasks[t].role {
            Role::Trade => Ev::Wake(t),
            // One message in flight per room: its first user starts.
            Role::ClientSend if m.tasks[t].user % ROOM == 0 => Ev::Post(t),
            _ => continue,
        };
        let s = m.rng.range(0, mean);
        m.push(s, ev);
    }
    m.run(window.end_ns);

    ctx.ops = Some(m.bursts);
    let migrations_per_wakeup = if m.wakeups == 0 {
        f64::NAN
    } else {
        m.migrations as f64 / m.wakeups as f64
    };
    let mut rec = stats::summarize(&ctx, &m.stats);
    let p = &mut rec.point;
    p.extra
        .insert("migrations_per_wakeup".into(), migrations_per_wakeup);
    p.extra.insert("wake_latency_p50_ns".into(), p.wait_p50_ns);
    p.extra.insert("wake_latency_p99_ns".into(), p.wait_p99_ns);
    p.extra.insert("wakeups".into(), m.wakeups as f64);
    let per_wakeup = |x: f64| {
        if m.wakeups == 0 {
            f64::NAN
        } else {
            x / m.wakeups as f64
        }
    };
    p.extra
        .insert("pulls_per_wakeup".into(), per_wakeup(m.pulls as f64));
    let per_burst = if m.bursts == 0 {
        f64::NAN
    } else {
        m.refill_charged_ns / m.bursts as f64
    };
    p.extra.insert("refill_per_burst_ns".into(), per_burst);
    p.extra
        .insert("refill_same_llc_ns".into(), m.refill_same_llc_ns);
    p.extra
        .insert("refill_other_llc_ns".into(), m.refill_other_llc_ns);
    rec
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
