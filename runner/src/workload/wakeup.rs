//! Wake-up placement (thread 003): where should a waking task run?
//!
//! Not lock code: the workload is a set of tasks that run bursts, sleep and wake one
//! another, and what it measures is the scheduler's placement of the woken task. This
//! module defines the scenarios, their tasks and who wakes whom; the executors run
//! them:
//!
//! - **simulated** (`crate::sim::sched`): a CFS-like scheduler model of the topology
//!   runs the scenario's tasks, with the old and the patched `select_idle_sibling`;
//! - **natively** (`crate::native::wakeup`): a 2-core host cannot run the scenario,
//!   so a point measures the two costs the model charges instead: wake-up latency on
//!   the same vs another CPU, and the refill of the working set after a migration.
//!
//! Both record each wake-up's latency as a wait of class [`CLASS`] and put the same
//! summary in the point's extras ([`record_latency`]).
//!
//! Scenarios:
//! - **Trade**: `workers` latency-bound workers in a closed loop: burst, sleep, wake.
//!   Requests arrive from the network, so the waker is the CPU taking the NIC
//!   interrupt ([`NIC_CPU`]). `hogs` CPU hogs in `hog_groups` groups run all the time.
//! - **Messaging** (VolanoMark's loopback test): four threads per user
//!   ([`THREADS_PER_USER`]: client sender, server receiver, server sender, client
//!   receiver), users in rooms of [`ROOM`]. The users of a room take turns: a client
//!   sender posts (a burst that writes the message), its server receiver reads it and
//!   wakes the server sender of each of the 19 room-mates, each of which writes it to
//!   its connection and wakes that user's client receiver, which reads it. After the
//!   last delivery the room's next user posts, after the think time `sleep`. Every
//!   wake-up is synchronous (socket wake-ups: the waker goes back to reading its
//!   socket). A thread with more to read runs one burst per message without sleeping.
//!
//! Weights: a hog group's `hog_group_weight` is split evenly among its hogs. Trade's
//! workers are one group (the VM) of `worker_weight`, split among them; messaging's
//! workers are root-cgroup tasks of `worker_weight` each. Static shares stand in for
//! CFS's per-CPU group share computation.

use super::Shape;
use locklab_model::plan::{WakeupScenario, WakeupSpec};
use std::collections::BTreeMap;

/// The wait class of a wake-up's latency.
pub const CLASS: &str = "wakeup";
/// The CPU that takes the network interrupts in the Trade scenario.
pub const NIC_CPU: usize = 0;
/// Users per messaging room: VolanoMark's rooms have 20 users each.
pub const ROOM: usize = 20;
/// Threads per messaging user: VolanoMark creates a client sender, a server receiver,
/// a server sender and a client receiver for each connection.
pub const THREADS_PER_USER: usize = 4;
/// Bytes per cache line, for working sets counted in lines.
pub const LINE_BYTES: u64 = 64;

/// Cache lines of a working set of `bytes`.
pub fn lines(bytes: u64) -> u64 {
    bytes.div_ceil(LINE_BYTES)
}

/// No locks; an operation is a worker's burst, its cycle a burst and a sleep. The
/// simulator starts the workers itself ([`Tasks::first_timer`]), so the cycle that
/// spreads lock-workload threads is 0.
pub fn shape(w: &WakeupSpec) -> Shape {
    Shape {
        classes: vec![CLASS.into()],
        locks: 0,
        lines_per_lock: 0,
        critical_ns: w.burst.mean_ns(),
        outside_ns: w.sleep.mean_ns(),
        cycle_ns: 0.0,
        asks_contended: false,
    }
}

/// What a task does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
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

/// A scenario's timer: what a task does once its sleep is over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Timer {
    /// Trade: the worker's next request arrives; it is woken from [`NIC_CPU`].
    Wake(usize),
    /// Messaging: this client sender's next post is due.
    Post(usize),
}

/// What a messaging thread's finished burst hands on, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Handoff {
    /// A client sender posted: a new message, to be delivered to `mates` room-mates,
    /// goes to the user's server receiver `to`.
    Post { to: usize, mates: u32 },
    /// Pass the message just read on to each of these threads.
    Forward(Vec<usize>),
    /// A client receiver read its copy: one delivery of the message is done.
    Delivered,
    /// Nothing to hand on (hogs, Trade workers).
    Nothing,
}

/// The tasks of a scenario: workers first (a worker's index is its thread index in the
/// records), then hogs.
#[derive(Debug, Clone)]
pub struct Tasks {
    pub scenario: WakeupScenario,
    pub workers: usize,
    pub hogs: usize,
    /// Each room's users, in turn order.
    pub rooms: Vec<Vec<usize>>,
    worker_weight: u64,
    hog_groups: usize,
    hog_group_weight: u64,
}

impl Tasks {
    pub fn new(w: &WakeupSpec) -> Self {
        // Messaging: four threads per user (at least two users, so there is a
        // room-mate).
        let workers = match w.scenario {
            WakeupScenario::Trade => w.workers as usize,
            WakeupScenario::Messaging => {
                (w.workers as usize / THREADS_PER_USER).max(2) * THREADS_PER_USER
            }
        };
        let users = workers / THREADS_PER_USER;
        let worker_weight = match w.scenario {
            WakeupScenario::Trade => (w.worker_weight as u64 / workers.max(1) as u64).max(2),
            WakeupScenario::Messaging => w.worker_weight as u64,
        };
        Tasks {
            scenario: w.scenario,
            workers,
            hogs: w.hogs as usize,
            rooms: (0..users.div_ceil(ROOM))
                .map(|r| (r * ROOM..((r + 1) * ROOM).min(users)).collect())
                .collect(),
            worker_weight,
            hog_groups: (w.hog_groups as usize).max(1),
            hog_group_weight: w.hog_group_weight as u64,
        }
    }

    pub fn len(&self) -> usize {
        self.workers + self.hogs
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn role(&self, task: usize) -> Role {
        if task >= self.workers {
            return Role::Hog;
        }
        match self.scenario {
            WakeupScenario::Trade => Role::Trade,
            WakeupScenario::Messaging => [
                Role::ClientSend,
                Role::ServerRecv,
                Role::ServerSend,
                Role::ClientRecv,
            ][task % THREADS_PER_USER],
        }
    }

    /// The messaging user a worker belongs to.
    pub fn user(task: usize) -> usize {
        task / THREADS_PER_USER
    }

    pub fn weight(&self, task: usize) -> u64 {
        if task < self.workers {
            return self.worker_weight;
        }
        let (h, groups) = (task - self.workers, self.hog_groups);
        let g = h % groups;
        let in_group = (self.hogs / groups + usize::from(g < self.hogs % groups)).max(1);
        (self.hog_group_weight / in_group as u64).max(2)
    }

    /// A worker's first timer, if it starts the scenario: every Trade worker; in
    /// messaging, the client sender of each room's first user (one message in flight
    /// per room).
    pub fn first_timer(&self, task: usize) -> Option<Timer> {
        match self.role(task) {
            Role::Trade => Some(Timer::Wake(task)),
            Role::ClientSend if Self::user(task) % ROOM == 0 => Some(Timer::Post(task)),
            _ => None,
        }
    }

    /// What `task`'s finished burst hands on.
    pub fn handoff(&self, task: usize) -> Handoff {
        let user = Self::user(task);
        let base = user * THREADS_PER_USER;
        let room = &self.rooms[user / ROOM];
        match self.role(task) {
            Role::ClientSend => Handoff::Post {
                to: base + 1,
                mates: (room.len() - 1) as u32,
            },
            Role::ServerRecv => Handoff::Forward(
                room.iter()
                    .filter(|&&u| u != user)
                    .map(|u| u * THREADS_PER_USER + 2)
                    .collect(),
            ),
            Role::ServerSend => Handoff::Forward(vec![base + 3]),
            Role::ClientRecv => Handoff::Delivered,
            Role::Hog | Role::Trade => Handoff::Nothing,
        }
    }

    /// The client sender whose turn comes after the message `poster` posted was
    /// delivered: the next user of its room.
    pub fn next_poster(&self, poster: usize) -> usize {
        let user = Self::user(poster);
        let room = &self.rooms[user / ROOM];
        room[(user % ROOM + 1) % room.len()] * THREADS_PER_USER
    }
}

/// The wake-up latency summary both executors put in a point's extras.
pub fn record_latency(extra: &mut BTreeMap<String, f64>, p50_ns: f64, p99_ns: f64, wakeups: u64) {
    extra.insert("wake_latency_p50_ns".into(), p50_ns);
    extra.insert("wake_latency_p99_ns".into(), p99_ns);
    extra.insert("wakeups".into(), wakeups as f64);
}

#[cfg(test)]
mod tests {
    use super::*;
    use locklab_model::plan::{Dist, PlacementPolicy, SchedParams};

    fn spec(scenario: WakeupScenario, workers: u32, hogs: u32) -> WakeupSpec {
        WakeupSpec {
            policy: PlacementPolicy::Old,
            scenario,
            workers,
            worker_weight: 8192,
            hogs,
            hog_groups: 4,
            hog_group_weight: 1024,
            burst: Dist::Fixed { ns: 1 },
            sleep: Dist::Fixed { ns: 1 },
            working_set_bytes: 4096,
            sched: SchedParams {
                wakeup_granularity_ns: 1,
                latency_ns: 1,
                min_slice_ns: 1,
                migration_cost_ns: 1,
                idle_exit_ns: 1,
                smt_corun_factor: 1.0,
            },
        }
    }

    #[test]
    fn trade_splits_the_vm_weight_and_the_hog_groups() {
        let t = Tasks::new(&spec(WakeupScenario::Trade, 8, 6));
        assert_eq!((t.workers, t.hogs), (8, 6));
        assert_eq!(t.weight(0), 1024);
        // Six hogs in four groups: groups 0 and 1 have two hogs, 2 and 3 one.
        let hogs: Vec<u64> = (8..14).map(|h| t.weight(h)).collect();
        assert_eq!(hogs, [512, 512, 1024, 1024, 512, 512]);
        assert!((0..8).all(|w| t.first_timer(w) == Some(Timer::Wake(w))));
    }

    #[test]
    fn a_message_goes_round_the_room() {
        let t = Tasks::new(&spec(WakeupScenario::Messaging, 800, 0));
        assert_eq!((t.workers, t.rooms.len()), (800, 10));
        // User 21's client sender posts to its server receiver for 19 room-mates ...
        let cs = 21 * THREADS_PER_USER;
        assert_eq!(
            t.handoff(cs),
            Handoff::Post {
                to: cs + 1,
                mates: 19
            }
        );
        // ... which forwards to the server senders of users 20, 22, ..., 39.
        let Handoff::Forward(to) = t.handoff(cs + 1) else {
            panic!("a server receiver forwards");
        };
        assert_eq!(to.len(), 19);
        assert_eq!(to[0], 20 * THREADS_PER_USER + 2);
        assert_eq!(
            t.handoff(to[0]),
            Handoff::Forward(vec![20 * THREADS_PER_USER + 3])
        );
        assert_eq!(t.handoff(20 * THREADS_PER_USER + 3), Handoff::Delivered);
        // Turns go round: user 39's successor is user 20.
        assert_eq!(t.next_poster(39 * THREADS_PER_USER), 20 * THREADS_PER_USER);
        assert_eq!(t.first_timer(cs), None);
        assert_eq!(t.first_timer(cs - THREADS_PER_USER), Some(Timer::Post(80)));
    }
}
