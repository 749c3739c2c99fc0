//! The `Plan`: the plain-data contract between the language and everything else.
//!
//! Architecture Invariant: nothing in this module knows about the grammar, spans or
//! files on disk. Every duration is in nanoseconds, every size in bytes, every
//! frequency in hertz. `runner` and `analysis` depend on these types only.
//!
//! A `Plan` is fully expanded: every `Point` carries a concrete lock, workload,
//! placement and thread count, plus the axis values that produced it (for the
//! result columns) and its own seed; every metric reference of a claim or plot
//! carries the [`Target`] the language resolved it to (the points, baseline, rows
//! and modes it reads), so nothing downstream selects points again.

use crate::manifest::HostInfo;
use crate::time::Ns;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Bumped whenever a field changes meaning or disappears (additions keep it).
pub const PLAN_SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub schema_version: u32,
    /// The experiment's name (`experiment cna_threshold { ... }`).
    pub experiment: String,
    /// Free text description, if the file gives one.
    pub description: Option<String>,
    pub master_seed: u64,
    pub topology: Topology,
    pub run: RunSpec,
    /// The sweep axes in declaration order, with every value they take.
    pub axes: Vec<Axis>,
    pub points: Vec<Point>,
    pub claims: Vec<Claim>,
    pub plots: Vec<PlotSpec>,
    /// The experiment file and every include, in load order, with content hashes.
    pub sources: Vec<SourceFile>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SourceFile {
    /// Path as given to (or resolved by) the loader.
    pub path: String,
    /// Lower-case hex SHA-256 of the file's bytes.
    pub sha256: String,
}

// ---------------------------------------------------------------------------
// Topology

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Topology {
    /// "Detect this machine" (the runner reads /sys); costs may still be given for
    /// simulating the host.
    Host {
        costs: Option<Costs>,
    },
    Machine(Machine),
}

impl Topology {
    /// The costs given for this topology: a described machine's, or those given for
    /// the host (`None`: none were; a simulation of it takes the simulator's defaults).
    pub fn costs(&self) -> Option<&Costs> {
        match self {
            Topology::Host { costs } => costs.as_ref(),
            Topology::Machine(m) => Some(&m.costs),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    pub name: String,
    pub sockets: u32,
    pub cores_per_socket: u32,
    /// Hardware threads per core (1 = no SMT).
    pub smt: u32,
    /// NUMA nodes per socket (usually 1).
    pub nodes_per_socket: u32,
    /// Last-level-cache domains per socket (usually 1; e.g. CCXs on EPYC).
    pub llcs_per_socket: u32,
    pub costs: Costs,
    /// Per-cache-level sizes, bytes (for working-set and refill models). Optional.
    pub l2_bytes: Option<u64>,
    pub llc_bytes: Option<u64>,
    pub freq_hz: Option<u64>,
}

impl Machine {
    pub fn cpus(&self) -> u32 {
        self.sockets * self.cores_per_socket * self.smt
    }
    pub fn cores(&self) -> u32 {
        self.sockets * self.cores_per_socket
    }
}

/// Memory-system costs, ns: the line transfers by distance, the local cost of an
/// atomic, the memory model that says how operations are ordered and priced, and the
/// timing variation of the simulated machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Costs {
    /// One-way cache-line transfer latency by distance level: a request for a line
    /// held modified in another core's cache (read or read-for-ownership).
    pub smt_ns: Ns,
    pub llc_ns: Ns,
    /// Same socket (or same NUMA node when there are several LLCs), different LLC.
    pub socket_ns: Ns,
    pub remote_ns: Ns,
    /// Optional full per-CPU-pair matrix (row = from, column = to), overriding levels.
    pub matrix_ns: Option<Vec<Vec<Ns>>>,
    /// Cost of an uncontended atomic read-modify-write on an owned line.
    pub atomic_ns: Ns,
    pub memory: Memory,
    /// Every simulated memory-operation latency and work duration is drawn uniformly
    /// within ± this many parts per million of its nominal value (0: none).
    pub jitter_ppm: u32,
    /// `work_carry`: a `work` makes up its drawn error at its thread's next `work`,
    /// as the native work loop does, so that a thread's time in work never strays
    /// more than the jitter from the nominal total (docs/simulator.md, "Timing
    /// variation"). `topo --measure` sets it: a measured host is simulated to be
    /// compared with its native runs. False unless the topology says (each `work`
    /// drawn afresh, as code's durations are), and then left out of the serialized
    /// plan, so that the fingerprints of plans that do not set it are unchanged.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub work_carry: bool,
    /// Per workload operation, the instructions around the lock that no memory
    /// operation or `work` prices: the loop, the bookkeeping, the code between the
    /// lock calls (natively: the measuring harness). 0 unless the topology says.
    #[serde(default)]
    pub overhead_ns: Ns,
    /// What each `work` costs its thread beyond its length: natively, the lock's
    /// instructions after a calibrated spin run at their latency instead of
    /// overlapping the loop's (what `overhead`, fitted on the loop without work,
    /// leaves out). `topo --measure` measures it; 0 unless the topology says, and
    /// then left out of the serialized plan (fingerprints unchanged).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub work_overhead_ns: Ns,
    /// The kernel's futex, as the simulated OS mutexes use it. Left out of the
    /// serialized plan when it is the default, so that the fingerprints of plans that
    /// do not set it are those they had before it existed.
    #[serde(default, skip_serializing_if = "Futex::is_default")]
    pub futex: Futex,
    /// What one x86 `pause` (a spin-wait loop's `Env::pause`) costs its thread: 10 to
    /// 140 cycles by generation (Intel's optimization manual: about 10 before
    /// Skylake, about 140 on Skylake; about 40 measured on Emerald Rapids, 65 on Zen
    /// 4). A spinner parked by `wait_until` notices a write when its current pause
    /// ends: at a phase drawn within one pause. `topo --measure` measures the host's. Plans that do not set it have
    /// [`DEFAULT_PAUSE_NS`], the constant the simulator had before it was a cost (and
    /// leave it out when serialized, so that their hashes are unchanged).
    #[serde(
        default = "default_pause_ns",
        skip_serializing_if = "is_default_pause_ns"
    )]
    pub pause_ns: Ns,
    /// The CPU these costs were measured on: `locklab topo --measure` writes the
    /// host's CPU model as the kernel names it (`measured_on = "..."`). `None` for
    /// costs written by hand (and left out of the serialized plan then, as `futex`).
    /// A simulation checked against native runs on another CPU compares two
    /// machines; `run` and `compare --sim-vs-native` say so
    /// ([`Costs::measured_elsewhere`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_on: Option<String>,
}

/// [`Costs::pause_ns`] when a topology does not say.
pub const DEFAULT_PAUSE_NS: Ns = Ns::whole(20);

fn default_pause_ns() -> Ns {
    DEFAULT_PAUSE_NS
}

fn is_default_pause_ns(ns: &Ns) -> bool {
    *ns == DEFAULT_PAUSE_NS
}

impl Costs {
    /// Whether `topo --measure` measured these costs on `host`'s CPU: only then is
    /// their transfer between two CPUs one of the placements `host` can run on.
    pub fn measured_on_host(&self, host: &HostInfo) -> bool {
        self.measured_on.is_some() && self.measured_elsewhere(host).is_none()
    }

    /// Why these costs do not describe `host`: they were measured on another CPU.
    /// `None` when they were measured on that CPU, or not measured (written by hand:
    /// what they describe is the author's to say). `measured_on` names the CPU as
    /// [`HostInfo::cpu`] does; one naming the brand string alone (written before the
    /// identity was recorded) is compared with the brand string.
    pub fn measured_elsewhere(&self, host: &HostInfo) -> Option<String> {
        let on = self.measured_on.as_deref()?.trim();
        let here = host.cpu();
        (on != here.trim() && on != host.cpu_model.trim()).then(|| {
            format!(
                "the simulated machine's costs were measured on CPU \"{on}\" and the \
                 native side ran on CPU \"{here}\": the residuals compare two machines \
                 (run `locklab topo --measure` on this one to validate the simulator here)"
            )
        })
    }

    /// Transfer levels and atomic cost, whole ns, with the default x86-TSO memory
    /// model derived from them ([`Memory::x86_tso`]) and the default jitter.
    pub const fn levels(
        smt_ns: u64,
        llc_ns: u64,
        socket_ns: u64,
        remote_ns: u64,
        atomic_ns: u64,
    ) -> Costs {
        let (llc_ns, atomic_ns) = (Ns::whole(llc_ns), Ns::whole(atomic_ns));
        Costs {
            smt_ns: Ns::whole(smt_ns),
            llc_ns,
            socket_ns: Ns::whole(socket_ns),
            remote_ns: Ns::whole(remote_ns),
            matrix_ns: None,
            atomic_ns,
            memory: Memory::x86_tso(llc_ns, atomic_ns),
            jitter_ppm: DEFAULT_JITTER_PPM,
            work_carry: false,
            overhead_ns: Ns::ZERO,
            work_overhead_ns: Ns::ZERO,
            pause_ns: DEFAULT_PAUSE_NS,
            futex: Futex::DEFAULT,
            measured_on: None,
        }
    }
}

/// The costs of the kernel's futex, which the simulated OS mutexes (a futex mutex
/// model, `runner/src/locks/os.rs`) pay around sleeping. `locklab topo --measure`
/// measures them on the host; the defaults are round stand-ins, not measurements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Futex {
    /// A `FUTEX_WAIT` that finds the word changed and returns at once; a wait that
    /// sleeps pays it too.
    pub wait_ns: Ns,
    /// A `FUTEX_WAKE` that finds no sleeper.
    pub wake_ns: Ns,
    /// A `FUTEX_WAKE` that wakes a sleeper, to its caller (on a virtual machine, the
    /// wake-up of an idle vCPU makes it dear).
    pub wake_sleeper_ns: Ns,
    /// From the write that ends a sleep to the sleeper running again (the wake call,
    /// the scheduler, an idle CPU's exit from its idle state).
    pub latency_ns: Ns,
    /// What glibc's pthread mutex calls cost (an acquisition, which natively tries
    /// `pthread_mutex_trylock` first, and `pthread_mutex_unlock`) beyond the two
    /// atomics the model gives them (a compare-and-swap and a swap): the calls, the
    /// mutex-kind checks, the owner and user-count stores. The simulated `pthread`
    /// pays half before each of those atomics (glibc stores the owner after its
    /// compare-and-swap: the split is the model's); `std` and `parking_lot` are
    /// inlined Rust whose atomics are their cost. Left out of a serialized plan at
    /// 0, so that plans from before it have the same fingerprint.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub pthread_call_ns: Ns,
}

impl Futex {
    /// No system-call cost, a 1 µs wake of a sleeper and 3 µs for it to run again.
    pub const DEFAULT: Futex = Futex {
        wait_ns: Ns::ZERO,
        wake_ns: Ns::ZERO,
        wake_sleeper_ns: Ns::whole(1_000),
        latency_ns: Ns::whole(3_000),
        pthread_call_ns: Ns::ZERO,
    };
}

impl Futex {
    fn is_default(&self) -> bool {
        *self == Futex::DEFAULT
    }
}

impl Default for Futex {
    fn default() -> Self {
        Futex::DEFAULT
    }
}

/// The default timing variation: ±10 % (`docs/simulator.md` says why so much).
pub const DEFAULT_JITTER_PPM: u32 = 100_000;

/// How memory operations are ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryOrder {
    /// x86-TSO: every hardware thread has a FIFO store buffer; a store retires into it
    /// and its issuer goes on; a locked read-modify-write or a fence drains it first.
    X86Tso,
}

/// The most an upgrade may cost, in transfers (`Memory::upgrade_ppm`): a bound, so
/// that a mistyped share (15 for 0.15) is an error, not a model. Measured up to
/// 1.6 (a Zen 4 guest, `topo --measure`: docs/validation.md).
pub const UPGRADE_MAX: f64 = 4.0;

/// The memory model of a topology: the ordering rules and the costs they need beyond
/// the transfers of [`Costs`]. `docs/simulator.md` gives each rule and its source.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Memory {
    pub order: MemoryOrder,
    /// A read miss served by the shared LLC: the line is clean there (shared, no
    /// modified copy) and a copy is in the reader's LLC domain.
    pub llc_hit_ns: Ns,
    /// How long one read miss occupies its line (requests to one line queue; reads
    /// overlap, read-for-ownership requests each hold it for their whole transfer).
    pub read_occupancy_ns: Ns,
    /// Store-buffer entries per hardware thread: a store stalls its issuer only when
    /// that many older stores have not committed.
    pub store_buffer: u32,
    /// A full fence (MFENCE) on an empty store buffer.
    pub fence_ns: Ns,
    /// Independent misses one hardware thread keeps in flight (line-fill buffers).
    pub misses_in_flight: u32,
    /// A read-for-ownership by a core that already holds a shared copy (an upgrade:
    /// the other copies are invalidated, no data moves), in parts per million of the
    /// transfer from the farthest other sharer. 10⁶ (the default): a full transfer.
    /// It may exceed a transfer (at most [`UPGRADE_MAX`]): invalidating sharers can
    /// cost more than moving a modified line.
    #[serde(default = "whole_ppm")]
    pub upgrade_ppm: u32,
    /// How long an out-of-order core runs ahead of a miss it waits for: private work
    /// (`Env::work`) that follows executes under it, and a prefetch goes out that
    /// much earlier, up to this long. 0 (the default): nothing runs ahead.
    /// Left out of a plan when 0, so that plans (and their hashes) of topologies
    /// without it are what they were before it existed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub run_ahead_ns: Ns,
    /// The share of a locked read-modify-write's own wait (its miss, and the drain of
    /// the store buffer before it) that the work after it runs under, in parts per
    /// million; the loads after it go out under the whole wait either way. 10⁶ (the
    /// default): as under a load's miss (a core that runs ahead of a locked
    /// instruction); 0: the work waits for it. Left out of a plan at its default.
    #[serde(default = "whole_ppm", skip_serializing_if = "is_whole_ppm")]
    pub rmw_run_ahead_ppm: u32,
    /// How much of a writer's read-for-ownership a spinner's re-read overlaps, in
    /// parts per million of it: the spinner, invalidated when the request starts,
    /// sends its re-read that much earlier than after the write's commit and the end
    /// of its `pause` (its data still comes a transfer after it leaves, never before
    /// the commit). 0 (the default): the re-read leaves then, and a store hand-off
    /// to a spinner costs the writer's request and then the re-read. Left out of a
    /// plan when 0.
    #[serde(default, skip_serializing_if = "is_zero_ppm")]
    pub reread_overlap_ppm: u32,
    /// Where a load or read-modify-write of a line another core holds takes effect,
    /// in parts per million of the transfer from that core: the request reaches it
    /// that far into the transfer on average (each flight drawn uniformly over the
    /// widest interval within the transfer with that mean), and until then the
    /// holder's own accesses still hit (a releaser taking the lock back within that
    /// time keeps it). A store's read-for-ownership reaches the other copies alike,
    /// that share of its transfer after it left: until then they stay valid. 0 (the
    /// default): where it is issued, so that the line serves requests in the order
    /// they were issued, and copies stay valid until the store commits. Left out of
    /// a plan when 0.
    #[serde(default, skip_serializing_if = "is_zero_ppm")]
    pub request_arrival_ppm: u32,
    /// How much of the wait for older stores to commit a locked read-modify-write's
    /// request for its own line overlaps, in parts per million of that wait: a locked
    /// operation executes only once the store buffer has drained, but its line is
    /// asked for while it drains, that much earlier than after the drain (if no
    /// other request reached the line meanwhile). 0 (the default): the request
    /// leaves once the stores have committed, and a hand-over store that misses
    /// followed by a swap on another line costs the two misses one after the other.
    /// Left out of a plan when 0.
    #[serde(default, skip_serializing_if = "is_zero_ppm")]
    pub drain_overlap_ppm: u32,
    /// A load of a line another core has modified takes the line whole (migratory
    /// sharing): the writer keeps no copy, so its next access misses, and the reader
    /// holds the line exclusive and clean, so that its own store needs no further
    /// request. A load of a clean line shares it either way. `false` (the default):
    /// the writer keeps a shared copy. Left out of a plan when `false`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub migratory: bool,
    /// A load or read-modify-write of a word whose last store by the same thread was
    /// narrower (`Env::store_masked`, as the kernel's byte store releasing a
    /// qspinlock) starts no earlier than this long after that store was issued:
    /// store-to-load forwarding fails, and the access waits for the store to reach
    /// the cache. Instructions after the store run under the wait. 0 (the default):
    /// no wait. Left out of a plan when 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub forward_stall_ns: Ns,
    /// What a core loses when another core's read-modify-write (or, `migratory`, a
    /// load) takes a line it accessed within one uncontended lock operation (`atomic` +
    /// `overhead`): its next miss on the line takes this much at least from when it
    /// asks, whatever the line's way back would cost it otherwise (the loss of `topo
    /// --measure`'s steal probe, a loop of a swap and a release store, which the
    /// simulator then reproduces under any `request_arrival`). 0 (the default): the
    /// way back alone. Left out of a plan when 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub steal_ns: Ns,
}

fn is_false(v: &bool) -> bool {
    !*v
}

fn is_zero_ppm(v: &u32) -> bool {
    *v == 0
}

/// A share of 1, in parts per million.
pub const WHOLE_PPM: u32 = 1_000_000;

fn whole_ppm() -> u32 {
    WHOLE_PPM
}

fn is_whole_ppm(v: &u32) -> bool {
    *v == WHOLE_PPM
}

fn is_zero(v: &Ns) -> bool {
    v.is_zero()
}

impl Memory {
    /// x86-TSO with the constants derived from the same-LLC transfer and the atomic:
    /// an LLC hit 40 % of the transfer, a read occupying the line a tenth of it (at
    /// least 1 ns), 21 store-buffer entries (Haswell's 42 split between two SMT
    /// threads), a fence twice an atomic, 4 misses in flight, an upgrade a whole
    /// transfer. The LLC hit and the occupancy have the transfer's precision: whole
    /// nanoseconds (rounded, and floored) when it is whole, as before costs could be
    /// fractions, so that such topologies keep their values and their plans'
    /// fingerprints; else to the picosecond.
    pub const fn x86_tso(llc_ns: Ns, atomic_ns: Ns) -> Memory {
        const ONE_NS: u64 = Ns::whole(1).ps();
        // The unit the derived costs are counted in: 1 ns or 1 ps.
        let unit = if llc_ns.is_whole() { ONE_NS } else { 1 };
        let llc = llc_ns.ps() / unit;
        let occ = llc / 10 * unit;
        Memory {
            order: MemoryOrder::X86Tso,
            llc_hit_ns: Ns::from_ps((llc * 2 + 2) / 5 * unit),
            read_occupancy_ns: Ns::from_ps(if occ < ONE_NS { ONE_NS } else { occ }),
            store_buffer: 21,
            fence_ns: Ns::from_ps(2 * atomic_ns.ps()),
            misses_in_flight: 4,
            upgrade_ppm: WHOLE_PPM,
            run_ahead_ns: Ns::ZERO,
            rmw_run_ahead_ppm: WHOLE_PPM,
            reread_overlap_ppm: 0,
            request_arrival_ppm: 0,
            drain_overlap_ppm: 0,
            migratory: false,
            forward_stall_ns: Ns::ZERO,
            steal_ns: Ns::ZERO,
        }
    }
}

// ---------------------------------------------------------------------------
// Runs

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    Sim,
    Native,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Sim => "sim",
            Mode::Native => "native",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSpec {
    /// Modes the file asks for (the command line may narrow them).
    pub modes: Vec<Mode>,
    /// Measured window per repetition.
    pub duration_ns: u64,
    /// Discarded before the measured window.
    pub warmup_ns: u64,
    /// Repetitions per point and mode; each simulated repetition uses its own seed.
    pub repetitions: u32,
    /// Durations used by `--quick`.
    pub quick_duration_ns: u64,
    pub quick_warmup_ns: u64,
    pub quick_repetitions: u32,
    /// How native runs record acquisitions (the simulator records every one, at no
    /// cost, whatever this says). Left out of a plan's JSON when `exact`, so that
    /// plans (and their fingerprints) from before the setting existed are unchanged.
    #[serde(default, skip_serializing_if = "Recording::is_exact")]
    pub recording: Recording,
}

/// How much of each acquisition a native run records (`run { recording = ... }`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Recording {
    /// Every grant in order (bypass, hand-offs, re-acquisitions: one shared
    /// instrumentation line written by each new holder) and every wait that did not
    /// end at the first attempt.
    #[default]
    Exact,
    /// Nothing shared: the wait and hold of one acquisition in about
    /// `acquisitions_timed_every` (at random), and per-thread acquisition counts;
    /// bypass, hand-offs and re-acquisitions are not measured. What a throughput
    /// comparison with a benchmark that records nothing needs.
    Sampled,
}

impl Recording {
    pub const ALL: [Recording; 2] = [Recording::Exact, Recording::Sampled];

    pub fn is_exact(&self) -> bool {
        *self == Recording::Exact
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Recording::Exact => "exact",
            Recording::Sampled => "sampled",
        }
    }
}

// ---------------------------------------------------------------------------
// Sweeps and points

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Axis {
    pub name: String,
    pub values: Vec<Value>,
    /// `Some(group)` when the axis is zipped with others of the same group.
    pub zip_group: Option<u32>,
}

/// A scalar value as it appears in a sweep or a claim selector, normalised to SI.
#[derive(Debug, Clone, PartialEq, PartialOrd, Serialize, Deserialize)]
#[serde(tag = "type", content = "value", rename_all = "snake_case")]
pub enum Value {
    Int(i64),
    Float(f64),
    /// Nanoseconds.
    Duration(u64),
    /// Bytes.
    Size(u64),
    /// Hertz.
    Freq(u64),
    Str(String),
    Bool(bool),
}

impl Value {
    /// Numeric view for columns and trends (durations in ns, sizes in bytes).
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Value::Int(i) => Some(i as f64),
            Value::Float(f) => Some(f),
            Value::Duration(n) | Value::Size(n) | Value::Freq(n) => Some(n as f64),
            Value::Bool(b) => Some(b as u8 as f64),
            Value::Str(_) => None,
        }
    }

    /// Human label with units (`10ms`, `128KiB`, `qspinlock`).
    pub fn label(&self) -> String {
        match self {
            Value::Int(i) => i.to_string(),
            Value::Float(f) => format!("{f}"),
            Value::Duration(ns) => crate::units::duration_label(*ns),
            Value::Size(b) => crate::units::size_label(*b),
            Value::Freq(hz) => format!("{}GHz", *hz as f64 / 1e9),
            Value::Str(s) => s.clone(),
            Value::Bool(b) => b.to_string(),
        }
    }

    /// The column-name suffix for this value's unit (`_ns`, `_bytes`, `_hz`, or empty).
    pub fn unit_suffix(&self) -> &'static str {
        match self {
            Value::Duration(_) => "_ns",
            Value::Size(_) => "_bytes",
            Value::Freq(_) => "_hz",
            _ => "",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// Position in `Plan::points` (stable for a given file).
    pub index: usize,
    /// Stable identity: `axis=value,axis=value` in axis order (empty axes: "default").
    pub id: String,
    /// Every axis value of this point, by axis name.
    pub axes: BTreeMap<String, Value>,
    /// Derived from the master seed and `id` only: stable across runs, independent of
    /// the order or the number of points.
    pub seed: u64,
    pub threads: u32,
    pub lock: LockSpec,
    pub workload: Workload,
    pub placement: Placement,
    /// The modes this point runs in, a subset of `RunSpec::modes` (a `run` block may
    /// narrow the sweep for one mode, e.g. native runs only up to 2 threads). Empty
    /// means every mode of the run (plans written before this field existed).
    #[serde(default)]
    pub modes: Vec<Mode>,
}

// ---------------------------------------------------------------------------
// Locks

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LockSpec {
    /// The name the experiment gave it (`lock stock = qspinlock`), used in columns and
    /// as the `lock` axis value.
    pub name: String,
    pub algo: LockAlgo,
    /// The sweep axis that chose this lock (`lock = $lock`); `None` when the
    /// experiment names one lock.
    #[serde(default)]
    pub axis: Option<String>,
    /// The sweep axes the lock's definition reads, in order of appearance: its own
    /// parameters (`threshold` for `lock cna15 = cna { threshold = $threshold }`).
    /// A speedup's baseline may differ from its point along these (see
    /// `crate::select::baseline`).
    #[serde(default)]
    pub params: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "algo", rename_all = "snake_case")]
pub enum LockAlgo {
    /// Test-and-set: a swap per attempt. `relax` is what a waiter does between two
    /// failed swaps.
    Tas {
        #[serde(default, skip_serializing_if = "Relax::is_pause")]
        relax: Relax,
    },
    /// Linux's x86 spinlock before ticket locks: `lock decb`, then a read-only spin.
    Decb,
    Ttas {
        backoff: Option<Backoff>,
    },
    Ticket,
    Mcs,
    /// The CLH queue lock. `predecessor` is where a thread keeps the node it waited
    /// on (which becomes its own at release).
    Clh {
        #[serde(default, skip_serializing_if = "ClhPredecessor::is_thread")]
        predecessor: ClhPredecessor,
    },
    /// Linux's queued spinlock. `pending_loops` is the kernel's `_Q_PENDING_LOOPS`: how
    /// many more times a contender that finds a pending-to-locked hand-over in flight
    /// re-reads the lock word (pausing between reads) before it joins the queue.
    /// `None` is x86's `1 << 9`, simulated and run as waiting for the hand-over to
    /// end (it ends long before 512 reads); `Some(n)` is the generic loop as written,
    /// a `pause` before each re-read (`Some(1)`: the generic value, as lockhammer's
    /// `queued_spinlock` builds it on x86; arm64 also has 1 but waits for the line
    /// to change between reads, which this does not model). `Some(512)` is that loop
    /// 512 times, not `None`.
    Qspinlock {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pending_loops: Option<u32>,
    },
    Cna(CnaParams),
    /// `std::sync::Mutex`.
    Std,
    /// `parking_lot::Mutex`.
    ParkingLot,
    /// `pthread_mutex_t` (default attributes).
    Pthread,
}

impl LockAlgo {
    /// TAS with its defaults (a `pause` between failed swaps).
    pub const TAS: LockAlgo = LockAlgo::Tas {
        relax: Relax::Pause,
    };

    /// CLH with its defaults (the predecessor kept by the thread).
    pub const CLH: LockAlgo = LockAlgo::Clh {
        predecessor: ClhPredecessor::Thread,
    };

    pub fn kind_name(&self) -> &'static str {
        match self {
            LockAlgo::Tas { .. } => "tas",
            LockAlgo::Decb => "decb",
            LockAlgo::Ttas { .. } => "ttas",
            LockAlgo::Ticket => "ticket",
            LockAlgo::Mcs => "mcs",
            LockAlgo::Clh { .. } => "clh",
            LockAlgo::Qspinlock { .. } => "qspinlock",
            LockAlgo::Cna(_) => "cna",
            LockAlgo::Std => "std",
            LockAlgo::ParkingLot => "parking_lot",
            LockAlgo::Pthread => "pthread",
        }
    }
}

/// What a spinning waiter does between two failed attempts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Relax {
    /// One `cpu_relax()`: x86's `pause`, which delays the next attempt and lets a
    /// sibling hyperthread run.
    #[default]
    Pause,
    /// Nothing: the next attempt at once (a bare swap loop, as lockhammer's
    /// `swap_mutex`).
    None,
}

impl Relax {
    pub fn is_pause(&self) -> bool {
        *self == Relax::Pause
    }
}

/// Where a CLH thread keeps its predecessor's node between acquire and release.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClhPredecessor {
    /// In the thread's private state (the thread-local `myPred` of Herlihy and
    /// Shavit's *The Art of Multiprocessor Programming*): nothing on a shared line.
    #[default]
    Thread,
    /// In the thread's node, written after the tail exchange and read at release
    /// (Scott's *Shared-Memory Synchronization*; lockhammer's `clh_spinlock`): on the
    /// line the successor spins on.
    Node,
}

impl ClhPredecessor {
    pub fn is_thread(&self) -> bool {
        *self == ClhPredecessor::Thread
    }
}

/// Exponential backoff between failed attempts, bounds in ns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Backoff {
    pub min_ns: u64,
    pub max_ns: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CnaVariant {
    /// One queue inspection per new head.
    V14,
    /// Keep scanning while the lock stays busy.
    V15,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CnaParams {
    /// Flush the secondary queue once it is older than this.
    pub threshold_ns: u64,
    pub variant: CnaVariant,
    /// Probability that a head with an empty secondary queue skips the scan
    /// (the patch's shuffle reduction: 127/128). 0 disables the reduction.
    pub shuffle_skip_prob: f64,
}

// ---------------------------------------------------------------------------
// Workloads

/// A duration that may vary per use. All in ns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "dist", rename_all = "snake_case")]
pub enum Dist {
    Fixed { ns: u64 },
    Uniform { lo_ns: u64, hi_ns: u64 },
    Exp { mean_ns: u64 },
    Normal { mean_ns: u64, sd_ns: u64 },
}

impl Dist {
    pub fn mean_ns(&self) -> f64 {
        match *self {
            Dist::Fixed { ns } => ns as f64,
            Dist::Uniform { lo_ns, hi_ns } => (lo_ns + hi_ns) as f64 / 2.0,
            Dist::Exp { mean_ns } | Dist::Normal { mean_ns, .. } => mean_ns as f64,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Workload {
    /// One hot lock: acquire, touch `lines` shared lines for `critical`, release,
    /// then `outside` of private work.
    SingleLock {
        critical: Dist,
        outside: Dist,
        /// Shared cache lines written inside the critical section.
        lines: u32,
    },
    /// Per-CPU locks, kernel `double_lock_balance`: each thread every `interval` takes
    /// its own lock for `own_hold`, then double-locks its own with each other
    /// thread's lock in turn, holding both for `pair_hold`.
    DoubleLock {
        policy: DoubleLockPolicy,
        interval: Dist,
        own_hold: Dist,
        pair_hold: Dist,
        /// Lines written while holding (per lock).
        lines: u32,
    },
    /// Batched work under one lock with a lock-break policy.
    Bulk {
        policy: BreakPolicy,
        /// Request mix: (weight, items per request). E.g. [(1, 1), (1, 31)].
        mix: Vec<BulkClass>,
        per_item: Dist,
        think: Dist,
        lines: u32,
    },
    /// Scheduler wake-up placement (simulated only; natively: calibration).
    Wakeup(WakeupSpec),
}

impl Workload {
    pub fn kind_name(&self) -> &'static str {
        match self {
            Workload::SingleLock { .. } => "single",
            Workload::DoubleLock { .. } => "double",
            Workload::Bulk { .. } => "bulk",
            Workload::Wakeup(_) => "wakeup",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DoubleLockPolicy {
    /// Old logic: trylock the other; on failure, if the other has the lower address,
    /// drop own, take other, retake own; else keep own and spin on the other.
    Ordered,
    /// The patch: always drop own, then take both in address order.
    Fair,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BreakPolicy {
    Never,
    /// Release and retake after every item.
    Always,
    /// Release and retake after an item only when another thread waits
    /// (`spin_needbreak`).
    WhenContended,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BulkClass {
    /// Class label used in results (`single`, `batch`).
    pub name: String,
    pub weight: u32,
    pub items: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WakeupSpec {
    pub policy: PlacementPolicy,
    pub scenario: WakeupScenario,
    /// Latency-bound workers (T: closed loop; V: message-passing participants).
    pub workers: u32,
    pub worker_weight: u32,
    /// CPU hogs and how many groups (cgroups/VMs) they form; each group shares
    /// `hog_group_weight` among its hogs.
    pub hogs: u32,
    pub hog_groups: u32,
    pub hog_group_weight: u32,
    /// Run time of a worker between sleeps.
    pub burst: Dist,
    /// Sleep / think time of a worker before its next wake-up (closed loop).
    pub sleep: Dist,
    pub working_set_bytes: u64,
    pub sched: SchedParams,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlacementPolicy {
    /// Old `select_idle_sibling`.
    Old,
    /// Patched: any idle CPU in the LLC, else least-loaded in prev's LLC.
    Patched,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WakeupScenario {
    /// Trade: latency-bound workers in a closed loop beside hogs.
    Trade,
    /// Volanomark-like message passing rooms.
    Messaging,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SchedParams {
    pub wakeup_granularity_ns: u64,
    pub latency_ns: u64,
    pub min_slice_ns: u64,
    pub migration_cost_ns: u64,
    pub idle_exit_ns: u64,
    /// Throughput factor of a thread whose SMT sibling is busy (e.g. 0.6).
    pub smt_corun_factor: f64,
}

// ---------------------------------------------------------------------------
// Placement

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Placement {
    pub policy: PlacementKind,
    /// Virtual NUMA node per thread (cycled if shorter than the thread count), so CNA
    /// can be exercised on a one-node host. `None`: nodes come from the topology.
    pub virtual_nodes: Option<Vec<u32>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "policy", content = "cpus", rename_all = "snake_case")]
pub enum PlacementKind {
    /// Fill SMT siblings, then cores, then sockets.
    Compact,
    /// Round-robin over sockets, one thread per core before any sibling.
    Scatter,
    /// will-it-scale: task i → core (i mod ncores), sockets filled in order, second
    /// hyperthreads after all cores.
    WillItScale,
    /// Explicit CPU list (thread i → cpus[i]).
    List(Vec<u32>),
}

// ---------------------------------------------------------------------------
// Claims

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Claim {
    /// Stable id within the experiment (`c1`, or the name given in the file).
    pub id: String,
    /// The claim as written (canonical text).
    pub text: String,
    /// Citation, e.g. "v15 cover letter: lock2 2.184x".
    pub source: Option<String>,
    pub file: String,
    pub line: u32,
    /// When false, the measured value is reported but does not gate the exit code.
    pub gating: bool,
    pub kind: ClaimKind,
    /// The modes the claim is evaluated in, one result each: every mode in which all
    /// of its references can be read (a trend: at least two of its steps). A
    /// reference that names its `mode` is read in that mode whatever the claim's;
    /// when every reference names one, the claim is evaluated once and this holds
    /// the mode of its first reference.
    #[serde(default)]
    pub modes: Vec<Mode>,
    /// Why this plan cannot evaluate the claim: `--set` narrowed the sweep and left
    /// out what it reads (`--set lock=ticket` leaves out `lock = mcs`). Its verdict
    /// is `skipped` with this reason; its references are not resolved and `modes`
    /// is empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ClaimKind {
    /// `expr in lo..hi` (either bound may be open: ±inf). `strict`: the finite bounds
    /// are excluded (`expr > 0`, `expr < 1`); `in a..b`, `<=` and `>=` include them.
    Band {
        expr: Expr,
        #[serde(deserialize_with = "open_lo")]
        lo: f64,
        #[serde(deserialize_with = "open_hi")]
        hi: f64,
        #[serde(default)]
        strict: bool,
    },
    /// `a < b < c` (or `>`): each neighbouring pair ordered, each relative gap at least
    /// `min_gap` (0.02 = 2 %), and separated beyond the run-to-run spread.
    Ordering {
        exprs: Vec<Expr>,
        op: OrderOp,
        min_gap: f64,
        /// Per neighbouring pair, whether equality satisfies it (`<=`, `>=`): an exact
        /// tie then holds, where it fails a strict `<` or `>`. Empty: every pair strict.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        or_equal: Vec<bool>,
    },
    /// `metric[select] increasing|decreasing over axis`: Spearman ρ over the axis values
    /// (in the listed order, or ascending if `values` is empty) must reach `min_rho`.
    Trend {
        /// The reference as written, for labels; what is read is in `series`.
        metric: MetricRef,
        axis: String,
        /// The values listed in the claim (empty: none listed).
        values: Vec<Value>,
        direction: TrendDirection,
        min_rho: f64,
        #[serde(default)]
        series: TrendSeries,
    },
}

/// What a trend compares, resolved by the language.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "over", rename_all = "snake_case")]
pub enum TrendSeries {
    /// One resolved reference per value of the axis, in the trend's order: the listed
    /// values, else the axis's values (ascending when they are all numbers). Values
    /// at which the selection has no point in its `mode` are left out.
    Steps { steps: Vec<TrendStep> },
    /// A trend over a result dimension (`thread`, `cpu`, `node`) without listed
    /// values: its values are those the rows of `target` hold, ascending (they are
    /// only known once the point has run).
    Rows { target: Target },
}

impl Default for TrendSeries {
    fn default() -> Self {
        TrendSeries::Steps { steps: Vec::new() }
    }
}

/// One value of a trend's axis and the reference read there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrendStep {
    pub value: Value,
    /// The trend's metric with `axis = value` appended to its selection (its label),
    /// resolved at that value.
    pub metric: MetricRef,
}

// JSON has no infinity: serde_json writes an open bound as `null`. Read it back.
fn open_lo<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NEG_INFINITY))
}

fn open_hi<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::INFINITY))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OrderOp {
    Less,
    Greater,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TrendDirection {
    Increasing,
    Decreasing,
}

/// An arithmetic expression over metrics and constants.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "expr", rename_all = "snake_case")]
pub enum Expr {
    Metric(MetricRef),
    Const {
        value: f64,
    },
    Binary {
        op: BinOp,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
}

impl Expr {
    /// Its metric references, left to right.
    pub fn metrics(&self) -> Vec<&MetricRef> {
        match self {
            Expr::Metric(m) => vec![m],
            Expr::Const { .. } => Vec::new(),
            Expr::Binary { lhs, rhs, .. } => {
                let mut out = lhs.metrics();
                out.extend(rhs.metrics());
                out
            }
        }
    }

    /// Its metric references, left to right, to change in place.
    pub fn metrics_mut(&mut self) -> Vec<&mut MetricRef> {
        match self {
            Expr::Metric(m) => vec![m],
            Expr::Const { .. } => Vec::new(),
            Expr::Binary { lhs, rhs, .. } => {
                let mut out = lhs.metrics_mut();
                out.extend(rhs.metrics_mut());
                out
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
}

/// `metric[axis=value, ...]`, optionally `speedup over <lock>`.
///
/// Selector keys are sweep axes, or the result dimensions `mode`, `thread`, `cpu`,
/// `node`, `class`, `from_node`, `to_node`, `cross_node` (true: hand-offs whose previous
/// and next holder are on different nodes).
/// The selection must resolve to one value after aggregating repetitions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricRef {
    /// A name of the metric registry (`crate::metrics`).
    pub metric: String,
    /// The selection as written, the group's keys merged in (for labels).
    pub select: Vec<(String, Value)>,
    /// For `speedup`: the lock name of the baseline, as written.
    pub baseline: Option<String>,
    /// For `speedup`: the axes the baseline is pinned to, as written
    /// (`over stock[threads = 4]`); empty when the baseline rule alone picks it.
    #[serde(default)]
    pub baseline_select: Vec<(String, Value)>,
    /// What the language resolved the reference to; the analysis reads exactly this.
    /// Left out (unresolved) only in a trend's `metric`, which is its label: the
    /// trend's `series` holds what it reads.
    #[serde(default, skip_serializing_if = "Target::is_unresolved")]
    pub target: Target,
}

/// The rows a metric reference reads, decided once by the language: the analysis
/// never selects points or baselines again.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Target {
    /// The point (index into `Plan::points`).
    pub point: u32,
    /// For `speedup`: the baseline point. It differs from `point` only in the lock
    /// and the lock's own parameters, and in the axes `over LOCK[...]` pins (see
    /// `crate::select::baseline`).
    pub baseline: Option<u32>,
    /// Row-dimension selectors (`thread`, `cpu`, `node`, `class`, `from_node`,
    /// `to_node`, `cross_node`): which rows of the point's thread or hand-off table.
    pub rows: Vec<(String, Value)>,
    /// The modes the reference is read in: the selector's `mode`, else every mode
    /// the point (and its baseline) runs in. Never empty once resolved.
    pub modes: Vec<Mode>,
}

impl Target {
    /// True for the empty target of a reference nothing reads directly.
    pub fn is_unresolved(&self) -> bool {
        self.modes.is_empty()
    }
}

/// Selector keys that are result dimensions rather than sweep axes.
pub const DIMENSIONS: &[&str] = &[
    "mode",
    "thread",
    "cpu",
    "node",
    "class",
    "from_node",
    "to_node",
    "cross_node",
];

/// The dimensions that select rows of the thread and hand-off tables (every
/// dimension but `mode`, which every table has).
pub const ROW_DIMENSIONS: &[&str] = {
    let (_, rows) = DIMENSIONS.split_at(1);
    rows
};

// ---------------------------------------------------------------------------
// Plots

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlotSpec {
    pub title: Option<String>,
    /// Metric on the y axis.
    pub metric: String,
    /// Axis (sweep axis or result dimension like `thread`/`cpu`) on the x axis.
    pub x: String,
    /// Series are grouped by these axes.
    pub group_by: Vec<String>,
    /// The selection as written (for labels).
    pub select: Vec<(String, Value)>,
    /// For `speedup`: the baseline lock, as written.
    pub baseline: Option<String>,
    pub log_x: bool,
    pub log_y: bool,
    /// The points plotted, resolved: one target per point of the selection, in plan
    /// order (for `speedup`, every point but the baseline lock's, each with its
    /// baseline), with the selection's row dimensions and the modes it is read in.
    #[serde(default)]
    pub targets: Vec<Target>,
    /// Why this plan does not draw the plot: `--set` narrowed the sweep and left
    /// nothing of it (`targets` is then empty). It keeps its place, so the plots
    /// after it keep their numbers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(model: &str, id: Option<&str>) -> HostInfo {
        HostInfo {
            cpu_model: model.into(),
            cpu_id: id.map(Into::into),
            ..HostInfo::default()
        }
    }

    fn measured_on(cpu: Option<&str>) -> Costs {
        let mut c = Costs::levels(2, 45, 45, 45, 6);
        c.measured_on = cpu.map(Into::into);
        c
    }

    #[test]
    fn costs_measured_on_the_same_design_describe_the_host() {
        let epyc = host(
            "AMD EPYC",
            Some("AuthenticAMD family 25 model 17 stepping 1"),
        );
        let on = measured_on(Some(&epyc.cpu()));
        assert_eq!(on.measured_elsewhere(&epyc), None);
        // An older topology names the brand string alone: that is what it can say.
        assert_eq!(
            measured_on(Some("AMD EPYC")).measured_elsewhere(&epyc),
            None
        );
        // Written by hand: the author's to say.
        assert_eq!(measured_on(None).measured_elsewhere(&epyc), None);
    }

    #[test]
    fn a_generic_brand_string_does_not_hide_another_design() {
        let genoa = host(
            "AMD EPYC",
            Some("AuthenticAMD family 25 model 17 stepping 1"),
        );
        let milan = host(
            "AMD EPYC",
            Some("AuthenticAMD family 25 model 1 stepping 1"),
        );
        let why = measured_on(Some(&milan.cpu()))
            .measured_elsewhere(&genoa)
            .expect("another model");
        assert!(
            why.contains("model 1 stepping") && why.contains("model 17"),
            "{why}"
        );
        assert!(!genoa.same_cpu(&milan));
        assert!(genoa.same_cpu(&host("AMD EPYC", None)));
    }
}
