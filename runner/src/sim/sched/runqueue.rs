//! Per-CPU run queues, CFS-style: running a task, charging it, picking the next one,
//! preemption, waking a task onto the CPU placement chose, and newly idle balancing.

use super::events::Ev;
use super::{Model, Role, NICE_0, NONE};
use crate::env::Handoff;
use locklab_model::topology::CpuMap;
use std::collections::VecDeque;

/// The message id of "no message".
pub(super) const NO_MSG: u64 = u64::MAX;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum State {
    Sleeping,
    Runnable,
    Running,
}

#[derive(Debug, Clone)]
pub(super) struct Task {
    pub role: Role,
    pub weight: u64,
    pub vruntime: i64,
    pub state: State,
    /// The CPU it runs or is queued on, or last ran on.
    pub cpu: usize,
    /// Core it last ran on (cache warmth).
    pub warm_core: usize,
    /// Work left in the current burst (ns at full speed); hogs never finish.
    pub remaining: f64,
    /// When it last became runnable (for the wake-up latency); `u64::MAX` if not
    /// waiting to run after a wake-up.
    pub woken_at: u64,
    /// When it last ran (cache hotness for the idle balancer).
    pub last_ran: u64,
    /// Messaging: messages to read (one burst each), the message the current burst
    /// reads, and whether a client sender's next post is due.
    pub inbox: VecDeque<u64>,
    pub input: u64,
    pub post_due: bool,
}

impl Task {
    pub fn new(role: Role, weight: u64, cpu: usize, remaining: f64, state: State) -> Self {
        Task {
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
            input: NO_MSG,
            post_due: false,
        }
    }
}

#[derive(Debug, Clone)]
pub(super) struct Cpu {
    pub core: usize,
    pub llc: usize,
    /// Other hardware threads of the same core.
    pub siblings: Vec<usize>,
    pub curr: usize,
    pub queue: Vec<usize>,
    pub min_vruntime: i64,
    /// Start of the current run segment of `curr` (at the current rate).
    pub seg_start: u64,
    pub slice_end: u64,
    pub rate: f64,
    /// Until when the CPU is leaving idle (the picked task waits).
    pub exiting_until: u64,
    /// A wake-up asked to preempt the running task while it is finishing a burst
    /// (`TIF_NEED_RESCHED`): done when the burst's bookkeeping is.
    pub resched: bool,
    pub version: u64,
}

impl Cpu {
    /// CPU `c` of `map`, idle.
    pub fn new(map: &CpuMap, c: usize) -> Self {
        let info = &map.cpus[c];
        Cpu {
            core: info.core as usize,
            llc: info.llc as usize,
            siblings: (0..map.len())
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
    }
}

impl Model<'_> {
    pub(super) fn busy(&self, c: usize) -> bool {
        self.cpus[c].curr != NONE
    }

    /// `idle_cpu()`: nothing running, nothing queued, not already waking up.
    pub(super) fn idle(&self, c: usize) -> bool {
        let cpu = &self.cpus[c];
        cpu.curr == NONE && cpu.queue.is_empty() && cpu.exiting_until <= self.now
    }

    pub(super) fn load(&self, c: usize) -> u64 {
        let cpu = &self.cpus[c];
        let run = if cpu.curr != NONE {
            self.tasks[cpu.curr].weight
        } else {
            0
        };
        run + cpu.queue.iter().map(|&t| self.tasks[t].weight).sum::<u64>()
    }

    /// Charge the running task for the time since its segment started.
    pub(super) fn update_curr(&mut self, c: usize) {
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
    pub(super) fn refresh(&mut self, c: usize) {
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

    /// Run `t` on `c` now: a new slice, the refill of whatever of its data is cold
    /// here, and the wake-up latency if it was woken.
    pub(super) fn set_curr(&mut self, c: usize, t: usize) {
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
        let task = &mut self.tasks[t];
        task.state = State::Running;
        task.cpu = c;
        task.last_ran = now;
        if task.role != Role::Hog {
            self.refill_own(t, c);
            let task = &mut self.tasks[t];
            if task.woken_at != u64::MAX {
                let lat = now - task.woken_at;
                task.woken_at = u64::MAX;
                self.stats[t].record_acquire(0, now, lat, 0, Handoff::Unheld);
            }
            self.fill(t, c);
        }
        self.tasks[t].warm_core = core;
        self.refresh(c);
        self.refresh_siblings(c);
    }

    /// The siblings of `c` change speed when `c` starts or stops running something.
    pub(super) fn refresh_siblings(&mut self, c: usize) {
        for i in 0..self.cpus[c].siblings.len() {
            let s = self.cpus[c].siblings[i];
            self.refresh(s);
        }
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
    pub(super) fn pick(&mut self, c: usize) {
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

    pub(super) fn preempt(&mut self, c: usize) {
        self.update_curr(c);
        let curr = self.cpus[c].curr;
        if curr != NONE {
            self.tasks[curr].state = State::Runnable;
            self.cpus[c].queue.push(curr);
            self.cpus[c].curr = NONE;
        }
        self.pick(c);
    }

    /// Task `t` becomes runnable, woken from `waker_cpu`. `sync`: the waker is the
    /// task running there and is about to sleep (no wake-up preemption of it).
    pub(super) fn wake(&mut self, t: usize, waker_cpu: usize, sync: bool) {
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
}
