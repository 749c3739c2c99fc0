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
//! - **Wake-up preemption**: the wakee preempts the running task when it is behind by
//!   more than `wakeup_granularity × 1024 / wakee weight`.
//! - **Placement** (`select_task_rq_fair` → `select_idle_sibling(p, target)`): target is
//!   the waker's CPU (wake-affine). Old: target if idle; else prev if idle and sharing
//!   the LLC; else the first core of the target's LLC whose CPUs are all idle; else
//!   target. Patched: the same, but an idle CPU on a partly busy core is remembered and
//!   used when no core is fully idle; and when the choice is still busy, the least
//!   loaded CPU (sum of queued weights) of prev's LLC.
//! - **Idle exit**: a task placed on an idle CPU starts `idle_exit` later.
//! - **SMT co-run**: a task progresses at `smt_corun_factor` while its sibling runs.
//! - **Cache warmth**: a task that starts on another core than it last ran on first
//!   refills its working set: `min(ws, L2)` from the LLC at `llc_ns` per line if the
//!   old core shares the LLC, else `min(ws, LLC)` at `remote_ns` per line, divided by
//!   [`MISSES_IN_FLIGHT`] (line-fill buffers); the refill is run time (it also delays
//!   the burst).
//!
//! Scenarios:
//! - **Trade**: workers in a closed loop: burst, sleep, wake. Requests arrive from
//!   the network, so the waker is the CPU taking the NIC interrupt ([`NIC_CPU`]) and
//!   wake-affine makes it the target. Hogs run all the time.
//! - **Messaging** (volanomark-like): rooms of [`ROOM`] members. A member posts a
//!   message every `sleep` (exponential think time): it runs a burst, then delivers
//!   the message to every room-mate, waking those that sleep from its own CPU (a
//!   synchronous wake-up: the sender does not get preempted). A member with messages
//!   to read runs one burst per message. The working set is the room's data (the
//!   messages): it is warm on the core where a member of the room last started.
//!   With one member per CPU nobody ever waits and both policies place alike; the
//!   placement matters once members outnumber CPUs.
//!
//! Not modelled: the periodic load balancer (CFS's `migration_cost` only matters
//! there), NUMA balancing, the runqueue lock itself, hogs' cache pollution.
//!
//! Metrics: ops = worker bursts completed in the window; wait = wake-up latency per
//! worker (class `wakeup`: from the wake-up to running); `migrations_per_wakeup` =
//! wake-ups placed on another CPU than the task's previous one, per wake-up.

use super::rng::{mix, SplitMix64};
use crate::records::RunRecord;
use crate::stats::{self, RunContext, ThreadStats, Window};
use crate::topology::CpuMap;
use locklab_dsl::plan::{Dist, Machine, PlacementPolicy, Point, WakeupScenario, WakeupSpec};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Misses a core overlaps while refilling a working set. Nehalem has 10 line-fill
/// buffers; refills of pointer-linked data (the JVM heaps of both benchmarks) overlap
/// fewer, so this is a middle guess, not a measurement.
pub const MISSES_IN_FLIGHT: u64 = 4;
/// The CPU that takes the network interrupts in the Trade scenario.
pub const NIC_CPU: usize = 0;
/// Workers per messaging room.
pub const ROOM: usize = 4;
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

#[derive(Debug, Clone)]
struct Task {
    worker: bool,
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
    /// Messaging: messages to read, whether its next post is due, and whether the
    /// current burst is a post (delivered to the room when it ends).
    inbox: u32,
    post_due: bool,
    posting: bool,
    room: usize,
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
    /// Messaging: the core where each room's data is warm.
    room_warm: Vec<usize>,
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
        if task.worker {
            // Trade: the task's own data; messaging: the room's (the messages).
            let warm = if self.w.scenario == WakeupScenario::Messaging {
                std::mem::replace(&mut self.room_warm[task.room], core)
            } else {
                task.warm_core
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

    /// Pick the next task on `c` (the current one, if any, was requeued or left).
    fn pick(&mut self, c: usize) {
        let cpu = &mut self.cpus[c];
        if cpu.queue.is_empty() {
            cpu.curr = NONE;
            cpu.version += 1;
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
        // Balance on wake: the least loaded CPU of prev's LLC (ties: lowest number).
        let llc_p = self.cpus[prev].llc;
        (0..self.cpus.len())
            .filter(|&x| self.cpus[x].llc == llc_p)
            .min_by_key(|&x| (self.load(x), x))
            .unwrap_or(target)
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
        if curr == NONE || (sync && c == waker_cpu) {
            return; // leaving idle (picked at IdleExit), or the waker yields soon
        }
        let gran = (self.w.sched.wakeup_granularity_ns * NICE_0 / self.tasks[t].weight) as i64;
        if self.tasks[curr].vruntime > self.tasks[t].vruntime + gran {
            self.preempt(c);
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
                if self.tasks[t].posting {
                    // Deliver to every room-mate; the sender is still running and
                    // wakes them from its CPU.
                    let room = self.tasks[t].room;
                    for to in 0..self.tasks.len() {
                        if to == t || !self.tasks[to].worker || self.tasks[to].room != room {
                            continue;
                        }
                        self.tasks[to].inbox += 1;
                        if self.tasks[to].state == State::Sleeping && self.next_work(to) {
                            self.wake(to, c, true);
                        }
                    }
                    let s = self.sample(&self.w.sleep.clone());
                    self.push(now + s, Ev::Post(t));
                }
                if self.next_work(t) {
                    // More to do: keep running here.
                    self.refresh(c);
                    return;
                }
            }
        }
        self.tasks[t].state = State::Sleeping;
        self.cpus[c].curr = NONE;
        self.pick(c);
    }

    fn start_burst(&mut self, t: usize) {
        let b = self.sample(&self.w.burst.clone()) as f64;
        self.tasks[t].remaining = b;
    }

    /// Messaging: start the member's next burst (read a message first, else post)
    /// if it has one; false if it has nothing to do.
    fn next_work(&mut self, t: usize) -> bool {
        let task = &mut self.tasks[t];
        if task.inbox > 0 {
            task.inbox -= 1;
            task.posting = false;
        } else if task.post_due {
            task.post_due = false;
            task.posting = true;
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
    let workers = w.workers as usize;
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
    // Workers first (their index is their thread index in the records), spread one per
    // core then siblings, as fork balancing leaves them.
    for i in 0..workers {
        tasks.push(Task {
            worker: true,
            weight: worker_weight,
            vruntime: 0,
            state: State::Sleeping,
            cpu: i % ncpu,
            warm_core: NONE,
            remaining: 0.0,
            woken_at: u64::MAX,
            inbox: 0,
            post_due: false,
            posting: false,
            room: i / ROOM,
        });
    }
    for h in 0..hogs {
        let g = h % groups;
        let in_group = (hogs / groups + usize::from(g < hogs % groups)).max(1);
        tasks.push(Task {
            worker: false,
            weight: (w.hog_group_weight as u64 / in_group as u64).max(2),
            vruntime: 0,
            state: State::Runnable,
            cpu: spread[h % ncpu],
            warm_core: NONE,
            remaining: f64::INFINITY,
            woken_at: u64::MAX,
            inbox: 0,
            post_due: false,
            posting: false,
            room: usize::MAX,
        });
    }

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
        room_warm: vec![NONE; workers.div_ceil(ROOM)],
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
        let s = m.rng.range(0, mean);
        let ev = match w.scenario {
            WakeupScenario::Trade => Ev::Wake(t),
            WakeupScenario::Messaging => Ev::Post(t),
        };
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
    p.extra
        .insert("refill_same_llc_ns".into(), m.refill_same_llc_ns);
    p.extra
        .insert("refill_other_llc_ns".into(), m.refill_other_llc_ns);
    rec
}
