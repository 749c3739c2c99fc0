//! The event loop, and the scenario's tasks reacting to its events: a burst done
//! (Trade sleeps; messaging hands its message on), a timer (a request arrives, a post
//! is due). Who wakes whom is the workload's ([`Tasks`](super::Tasks)); this is when.

use super::runqueue::{State, NO_MSG};
use super::{Model, Timer, NONE};
use crate::workload::dist::sample;
use crate::workload::wakeup::{Handoff, NIC_CPU};
use locklab_model::plan::WakeupScenario;
use std::cmp::Reverse;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Ev {
    /// CPU `0`'s running task finishes its burst or its slice (if the version matches).
    Cpu(usize, u64),
    /// CPU finished leaving idle.
    IdleExit(usize),
    /// A scenario timer fires.
    Timer(Timer),
}

impl Model<'_> {
    pub(super) fn push(&mut self, t: u64, ev: Ev) {
        self.seq += 1;
        self.heap.push(Reverse((t, self.seq, ev)));
    }

    /// Run events until `end`.
    pub(super) fn run(&mut self, end: u64) {
        while let Some(Reverse((time, _, ev))) = self.heap.pop() {
            if time >= end {
                break;
            }
            self.now = time;
            match ev {
                Ev::Timer(Timer::Wake(t)) => {
                    if self.tasks[t].state == State::Sleeping {
                        self.start_burst(t);
                        self.wake(t, NIC_CPU, false);
                    }
                }
                Ev::Timer(Timer::Post(t)) => {
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

    /// The running task of `c` finished its burst (workers only).
    fn burst_done(&mut self, c: usize) {
        let t = self.cpus[c].curr;
        if self.in_window(self.now) {
            self.bursts += 1;
        }
        let now = self.now;
        match self.w.scenario {
            WakeupScenario::Trade => {
                let s = sample(&self.w.sleep, &mut self.rng);
                self.push(now + s, Ev::Timer(Timer::Wake(t)));
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

    /// Messaging: task `t` on `c` finished a burst; pass its message down the chain,
    /// waking the next thread from `c` (socket wake-ups are synchronous).
    fn hand_on(&mut self, t: usize, c: usize) {
        let input = std::mem::replace(&mut self.tasks[t].input, NO_MSG);
        match self.scenario.handoff(t) {
            Handoff::Post { to, mates } => {
                let m = self.create(c, mates, t);
                if mates == 0 {
                    self.delivered(m);
                } else {
                    self.deliver(to, m, c);
                }
            }
            Handoff::Forward(to) => {
                for x in to {
                    self.deliver(x, input, c);
                }
            }
            Handoff::Delivered => self.delivered(input),
            Handoff::Nothing => {}
        }
    }

    /// One delivery of message `m` was read; after the last one the next user of the
    /// room takes its turn, after the think time (VolanoMark's users take turns).
    fn delivered(&mut self, m: u64) {
        let Some(msg) = self.msgs.get_mut(&m) else {
            return;
        };
        msg.pending = msg.pending.saturating_sub(1);
        if msg.pending > 0 {
            return;
        }
        let owner = msg.owner;
        self.msgs.remove(&m);
        let next = self.scenario.next_poster(owner);
        let s = sample(&self.w.sleep, &mut self.rng);
        self.push(self.now + s, Ev::Timer(Timer::Post(next)));
    }

    fn deliver(&mut self, to: usize, msg: u64, c: usize) {
        self.tasks[to].inbox.push_back(msg);
        if self.tasks[to].state == State::Sleeping && self.next_work(to) {
            self.wake(to, c, true);
        }
    }

    fn start_burst(&mut self, t: usize) {
        let b = sample(&self.w.burst, &mut self.rng) as f64;
        self.tasks[t].remaining = b;
    }

    /// Messaging: start the task's next burst (read a message first, else post) if it
    /// has one; false if it has nothing to do.
    fn next_work(&mut self, t: usize) -> bool {
        let task = &mut self.tasks[t];
        if let Some(o) = task.inbox.pop_front() {
            task.input = o;
        } else if task.post_due {
            task.post_due = false;
            task.input = NO_MSG;
        } else {
            return false;
        }
        self.start_burst(t);
        true
    }
}
