//! Topologies: a modelled machine (`topology x5_4 { ... }`) or the host.

use super::{Ctx, Def, Env, Obj};
use crate::diag::did_you_mean;
use crate::syntax::{Ident, Val, ValKind};
use crate::FileKind;
use locklab_model::cost::MAX_CPUS;
use locklab_model::plan::{
    Costs, Futex, Machine, Memory, MemoryOrder, Topology, DEFAULT_JITTER_PPM, DEFAULT_PAUSE_NS,
    UPGRADE_MAX,
};
use locklab_model::time::{Ns, MAX_COST};

/// The keys of a topology's costs, which a described machine and `host { ... }` both
/// take.
const COST_KEYS: &[&str] = &[
    "transfer",
    "matrix",
    "atomic",
    "memory",
    "jitter",
    "work_carry",
    "overhead",
    "work_overhead",
    "pause",
    "futex",
    "measured_on",
];

impl Ctx<'_> {
    /// The experiment's topology: a name, `host`, or an inline block (named after
    /// `inline`, the experiment).
    pub fn topology_ref(&mut self, file: usize, v: &Val, inline: &Ident) -> Option<Topology> {
        let ValKind::Symbol(name) = &v.kind else {
            return self.topology(&Def {
                file,
                name: inline.clone(),
                value: v.clone(),
            });
        };
        match self.topologies.get(name).cloned() {
            Some(def) => self.topology(&def),
            None if name == "host" => Some(Topology::Host { costs: None }),
            None if self
                .broken
                .contains(&("topology".to_string(), name.clone())) =>
            {
                None
            }
            None => {
                let cands: Vec<String> = self
                    .topologies
                    .keys()
                    .cloned()
                    .chain(["host".to_string()])
                    .collect();
                let help = did_you_mean(name, cands.iter().map(|s| s.as_str()));
                let no_use = self.files.len() <= 1;
                let d = self
                    .err(file, v.span, format!("unknown topology `{name}`"))
                    .set_label("no topology of this name");
                d.help = help.map(|h| {
                    if no_use {
                        format!("{h} (shared topologies come in with `use \"lib/NAME.lab\"`)")
                    } else {
                        h
                    }
                });
                None
            }
        }
    }

    // -----------------------------------------------------------------------
    // Topologies

    pub fn topology(&mut self, def: &Def) -> Option<Topology> {
        let env = Env::NoAxes;
        let file = def.file;
        let v = &def.value;
        match &v.kind {
            ValKind::Symbol(s) if s == "host" => Some(Topology::Host { costs: None }),
            ValKind::Record { ctor: Some(c), .. } if c.name == "host" => {
                let o = self.obj(
                    file,
                    v,
                    &format!("topology `{}`", def.name.name),
                    COST_KEYS,
                    &[],
                );
                let costs = self.costs(env, &o, 0, false)?;
                Some(Topology::Host { costs })
            }
            ValKind::Record { ctor: None, .. } => self.machine(def),
            ValKind::Record { ctor: Some(c), .. } => {
                self.err(file, c.span, format!("unknown topology kind `{}`", c.name))
                    .help = Some(
                    "write `topology NAME { sockets = ..., ... }` or `topology NAME = host`".into(),
                );
                None
            }
            _ => {
                self.mismatch(
                    file,
                    v,
                    &format!("topology `{}`", def.name.name),
                    "`{ sockets = ..., ... }` or `host`",
                    None,
                );
                None
            }
        }
    }

    fn machine(&mut self, def: &Def) -> Option<Topology> {
        let env = Env::NoAxes;
        let file = def.file;
        let what = format!("topology `{}`", def.name.name);
        let o = self.obj(
            file,
            &def.value,
            &what,
            &[
                &["sockets", "cores", "smt", "nodes", "llcs", "cache", "freq"][..],
                COST_KEYS,
            ]
            .concat(),
            &[],
        );
        let sockets = match o.get("sockets") {
            Some(v) => self.count(env, file, v, "`sockets`", 1),
            None => {
                self.missing(&o, "sockets", "2");
                None
            }
        };
        let cores = match o.get("cores") {
            Some(v) => self.count(env, file, v, "`cores` (per socket)", 1),
            None => {
                self.missing(&o, "cores", "4");
                None
            }
        };
        let smt = o
            .get("smt")
            .map_or(Some(1), |v| self.count(env, file, v, "`smt`", 1));
        let nodes = o.get("nodes").map_or(Some(1), |v| {
            self.count(env, file, v, "`nodes` (per socket)", 1)
        });
        let llcs = o.get("llcs").map_or(Some(1), |v| {
            self.count(env, file, v, "`llcs` (per socket)", 1)
        });
        let (sockets, cores, smt, nodes, llcs) = (sockets?, cores?, smt?, nodes?, llcs?);
        let Some(cpus) = sockets
            .checked_mul(cores)
            .and_then(|c| c.checked_mul(smt))
            .filter(|c| *c <= MAX_CPUS)
        else {
            self.err(
                file,
                def.value.span,
                format!("{what} has too many CPUs (at most {MAX_CPUS})"),
            );
            return None;
        };
        for (n, key) in [(nodes, "nodes"), (llcs, "llcs")] {
            if cores % n != 0 {
                let p = o.prop(key).map_or(def.value.span, |p| p.span);
                self.err(
                    file,
                    p,
                    format!("{cores} cores per socket cannot be split evenly into {n} {key}"),
                )
                .set_label("does not divide the cores");
            }
        }
        if llcs % nodes != 0 && nodes % llcs != 0 {
            let p = o.prop("llcs").map_or(def.value.span, |p| p.span);
            self.err(
                file,
                p,
                format!("{llcs} LLCs per socket do not nest with {nodes} NUMA nodes per socket"),
            );
        }
        let costs = self.costs(env, &o, cpus, true)?;
        let mut l2 = None;
        let mut llc = None;
        if let Some(c) = o.get("cache") {
            let co = self.obj(file, c, "`cache`", &["l2", "llc"], &[]);
            if !matches!(c.kind, ValKind::Record { ctor: None, .. }) {
                self.mismatch(
                    file,
                    c,
                    "`cache`",
                    "a block `{ l2 = ..., llc = ... }`",
                    None,
                );
            }
            l2 = co.get("l2").and_then(|v| self.size(env, file, v, "`l2`"));
            llc = co.get("llc").and_then(|v| self.size(env, file, v, "`llc`"));
        }
        let freq_hz = o
            .get("freq")
            .and_then(|v| self.freq(env, file, v, "`freq`"));
        Some(Topology::Machine(Machine {
            name: def.name.name.clone(),
            sockets,
            cores_per_socket: cores,
            smt,
            nodes_per_socket: nodes,
            llcs_per_socket: llcs,
            costs: costs?,
            l2_bytes: l2,
            llc_bytes: llc,
            freq_hz,
        }))
    }

    /// `transfer { smt, llc, socket, remote }`, `atomic`, `matrix`, `memory { ... }`,
    /// `jitter`. For a machine `transfer` is required; for `host` the costs are
    /// optional.
    fn costs(&mut self, env: Env, o: &Obj, cpus: u32, required: bool) -> Option<Option<Costs>> {
        let file = o.file;
        let Some(t) = o.get("transfer") else {
            if required {
                self.missing(
                    o,
                    "transfer",
                    "{ smt = 10ns, llc = 50ns, socket = 50ns, remote = 190ns }",
                );
                return None;
            }
            // A host without `transfer` is simulated with the default costs: any
            // other cost given with it would be dropped without a word.
            let mut ignored = false;
            for key in COST_KEYS.iter().filter(|k| **k != "transfer") {
                if let Some(v) = o.get(key) {
                    ignored = true;
                    self.err(
                        file,
                        v.span,
                        format!("`{key}` of a host topology needs `transfer` beside it"),
                    )
                    .help = Some(
                        "without `transfer` the host's costs are left to the simulator's \
                         defaults; give `transfer { llc = ... }` (or paste what \
                         `locklab topo --measure` prints)"
                            .into(),
                    );
                }
            }
            return if ignored { None } else { Some(None) };
        };
        if !matches!(t.kind, ValKind::Record { ctor: None, .. }) {
            self.mismatch(
                file,
                t,
                "`transfer`",
                "a block `{ smt = ..., llc = ..., socket = ..., remote = ... }`",
                None,
            );
            return None;
        }
        let to = self.obj(
            file,
            t,
            "`transfer`",
            &["smt", "llc", "socket", "remote"],
            &[],
        );
        let llc = match to.get("llc") {
            Some(v) => self.cost(env, file, v, "`llc` transfer latency"),
            None => {
                self.missing(&to, "llc", "50ns");
                None
            }
        };
        let smt = to
            .get("smt")
            .map(|v| self.cost(env, file, v, "`smt` transfer latency"));
        let socket = to
            .get("socket")
            .map(|v| self.cost(env, file, v, "`socket` transfer latency"));
        let remote = to
            .get("remote")
            .map(|v| self.cost(env, file, v, "`remote` transfer latency"));
        let atomic = o
            .get("atomic")
            .map_or(Some(Ns::whole(5)), |v| self.cost(env, file, v, "`atomic`"));
        let matrix = match o.get("matrix") {
            Some(v) => Some(self.matrix(file, v, cpus)?),
            None => None,
        };
        let jitter = o
            .get("jitter")
            .map_or(Some(DEFAULT_JITTER_PPM as f64 / 1e6), |v| {
                self.real(env, file, v, "`jitter`", 0.0..=0.5)
            });
        let work_carry = o
            .get("work_carry")
            .map_or(Some(false), |v| self.boolean(file, v, "`work_carry`"));
        let overhead = o
            .get("overhead")
            .map_or(Some(Ns::ZERO), |v| self.cost(env, file, v, "`overhead`"));
        let work_overhead = o.get("work_overhead").map_or(Some(Ns::ZERO), |v| {
            self.cost(env, file, v, "`work_overhead`")
        });
        let pause = o.get("pause").map_or(Some(DEFAULT_PAUSE_NS), |v| {
            self.positive_cost(env, file, v, "`pause`")
        });
        let llc = llc?;
        let atomic = atomic?;
        let memory = match o.get("memory") {
            Some(v) => self.memory(env, file, v, llc, atomic),
            None => Some(Memory::x86_tso(llc, atomic)),
        };
        let futex = match o.get("futex") {
            Some(v) => self.futex(env, file, v),
            None => Some(Futex::DEFAULT),
        };
        let measured_on = match o.get("measured_on") {
            Some(v) => Some(Some(self.string(env, file, v, "`measured_on`")?)),
            None => Some(None),
        };
        let smt = smt.unwrap_or(Some(llc))?;
        let socket = socket.unwrap_or(Some(llc))?;
        let remote = remote.unwrap_or(Some(socket))?;
        Some(Some(Costs {
            smt_ns: smt,
            llc_ns: llc,
            socket_ns: socket,
            remote_ns: remote,
            matrix_ns: matrix,
            atomic_ns: atomic,
            memory: memory?,
            jitter_ppm: (jitter? * 1e6).round() as u32,
            work_carry: work_carry?,
            overhead_ns: overhead?,
            work_overhead_ns: work_overhead?,
            pause_ns: pause?,
            futex: futex?,
            measured_on: measured_on?,
        }))
    }

    /// `true` or `false`.
    fn boolean(&mut self, file: usize, v: &Val, what: &str) -> Option<bool> {
        match v.kind {
            ValKind::Bool(b) => Some(b),
            _ => {
                self.mismatch(file, v, what, "`true` or `false`", None);
                None
            }
        }
    }

    /// `futex { wait, wake, wake_sleeper, latency, pthread_call }`: every key optional,
    /// the defaults [`Futex::DEFAULT`]'s.
    fn futex(&mut self, env: Env, file: usize, v: &Val) -> Option<Futex> {
        if !matches!(v.kind, ValKind::Record { ctor: None, .. }) {
            self.mismatch(
                file,
                v,
                "`futex`",
                "a block `{ wait = 300ns, wake = 130ns, wake_sleeper = 9us, latency = 30us }`",
                None,
            );
            return None;
        }
        let fo = self.obj(
            file,
            v,
            "`futex`",
            &["wait", "wake", "wake_sleeper", "latency", "pthread_call"],
            &[],
        );
        let d = Futex::DEFAULT;
        let mut dur = |key: &str, what: &str, default: Ns| {
            fo.get(key)
                .map_or(Some(default), |v| self.cost(env, file, v, what))
        };
        let wait = dur("wait", "`futex { wait }`", d.wait_ns);
        let wake = dur("wake", "`futex { wake }`", d.wake_ns);
        let wake_sleeper = dur(
            "wake_sleeper",
            "`futex { wake_sleeper }`",
            d.wake_sleeper_ns,
        );
        let latency = dur("latency", "`futex { latency }`", d.latency_ns);
        let pthread_call = dur(
            "pthread_call",
            "`futex { pthread_call }`",
            d.pthread_call_ns,
        );
        Some(Futex {
            wait_ns: wait?,
            wake_ns: wake?,
            wake_sleeper_ns: wake_sleeper?,
            latency_ns: latency?,
            pthread_call_ns: pthread_call?,
        })
    }

    /// `memory { model, llc_hit, read_occupancy, store_buffer, fence, misses_in_flight,
    /// upgrade, run_ahead, rmw_run_ahead, reread_overlap, request_arrival, drain_overlap,
    /// migratory, forward_stall, steal }`:
    /// every key optional, the defaults derived from the `llc` transfer and the atomic
    /// ([`Memory::x86_tso`]).
    fn memory(&mut self, env: Env, file: usize, v: &Val, llc: Ns, atomic: Ns) -> Option<Memory> {
        if !matches!(v.kind, ValKind::Record { ctor: None, .. }) {
            self.mismatch(
                file,
                v,
                "`memory`",
                "a block `{ model = x86_tso, llc_hit = ..., ... }`",
                None,
            );
            return None;
        }
        let mo = self.obj(
            file,
            v,
            "`memory`",
            &[
                "model",
                "llc_hit",
                "read_occupancy",
                "store_buffer",
                "fence",
                "misses_in_flight",
                "upgrade",
                "run_ahead",
                "rmw_run_ahead",
                "reread_overlap",
                "request_arrival",
                "drain_overlap",
                "migratory",
                "forward_stall",
                "steal",
            ],
            &[],
        );
        let d = Memory::x86_tso(llc, atomic);
        // One model so far; the name is checked so that a file asking for another
        // one is told, not silently simulated as x86.
        let order = match mo.get("model") {
            Some(v) => self
                .choice(env, file, v, "memory model", &["x86_tso"])
                .map(|_| MemoryOrder::X86Tso),
            None => Some(d.order),
        };
        let mut dur = |key: &str, what: &str, default: Ns| {
            mo.get(key)
                .map_or(Some(default), |v| self.cost(env, file, v, what))
        };
        let llc_hit = dur("llc_hit", "`llc_hit`", d.llc_hit_ns);
        let occupancy = dur("read_occupancy", "`read_occupancy`", d.read_occupancy_ns);
        let fence = dur("fence", "`fence`", d.fence_ns);
        let run_ahead = dur("run_ahead", "`run_ahead`", d.run_ahead_ns);
        let forward_stall = dur("forward_stall", "`forward_stall`", d.forward_stall_ns);
        let steal = dur("steal", "`steal`", d.steal_ns);
        let store_buffer = mo.get("store_buffer").map_or(Some(d.store_buffer), |v| {
            self.count(env, file, v, "`store_buffer` (entries)", 1)
        });
        let mlp = mo
            .get("misses_in_flight")
            .map_or(Some(d.misses_in_flight), |v| {
                self.count(env, file, v, "`misses_in_flight`", 1)
            });
        // Shares of a wait, within [0, 1], and `upgrade`, in transfers, within [0,
        // UPGRADE_MAX] (invalidating the sharers can cost more than moving a modified
        // line), in parts per million.
        let mut share = |key: &str, what: &str, default: u32, max: f64| {
            mo.get(key).map_or(Some(default), |v| {
                self.real(env, file, v, what, 0.0..=max)
                    .map(|f| (f * 1e6).round() as u32)
            })
        };
        let upgrade = share(
            "upgrade",
            "`upgrade` (transfers)",
            d.upgrade_ppm,
            UPGRADE_MAX,
        );
        let rmw_run_ahead = share(
            "rmw_run_ahead",
            "`rmw_run_ahead` (share of a locked operation's wait)",
            d.rmw_run_ahead_ppm,
            1.0,
        );
        let reread_overlap = share(
            "reread_overlap",
            "`reread_overlap` (share of a writer's ownership request)",
            d.reread_overlap_ppm,
            1.0,
        );
        let request_arrival = share(
            "request_arrival",
            "`request_arrival` (share of a transfer)",
            d.request_arrival_ppm,
            1.0,
        );
        let drain_overlap = share(
            "drain_overlap",
            "`drain_overlap` (share of the wait for older stores)",
            d.drain_overlap_ppm,
            1.0,
        );
        let migratory = mo
            .get("migratory")
            .map_or(Some(d.migratory), |v| self.boolean(file, v, "`migratory`"));
        Some(Memory {
            order: order?,
            llc_hit_ns: llc_hit?,
            read_occupancy_ns: occupancy?,
            store_buffer: store_buffer?,
            fence_ns: fence?,
            misses_in_flight: mlp?,
            upgrade_ppm: upgrade?,
            run_ahead_ns: run_ahead?,
            rmw_run_ahead_ppm: rmw_run_ahead?,
            reread_overlap_ppm: reread_overlap?,
            request_arrival_ppm: request_arrival?,
            drain_overlap_ppm: drain_overlap?,
            migratory: migratory?,
            forward_stall_ns: forward_stall?,
            steal_ns: steal?,
        })
    }

    /// A CSV of one-way transfer latencies in ns, one row per CPU, read through the
    /// loader relative to the file that names it. Its problems point at `matrix` and
    /// say where in the CSV, without quoting it: it may not be a CSV at all.
    fn matrix(&mut self, file: usize, v: &Val, cpus: u32) -> Option<Vec<Vec<Ns>>> {
        let rel = self.string(Env::NoAxes, file, v, "`matrix`")?;
        let path = crate::resolve_path(&self.path(file), &rel);
        let text = match self.loader.read(&path, FileKind::Matrix) {
            Ok(loaded) => match self.loaded.get(&loaded.id) {
                Some(&i) => self.files[i].1.clone(),
                None => {
                    self.loaded.insert(loaded.id, self.files.len());
                    self.files.push((path.clone(), loaded.text.clone()));
                    loaded.text
                }
            },
            Err(e) => {
                let d = self
                    .err(
                        file,
                        v.span,
                        format!("cannot read matrix file `{path}`: {}", e.reason),
                    )
                    .set_label("named here");
                d.help = e.help;
                return None;
            }
        };
        let mut rows = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let t = line.trim();
            if t.is_empty() || t.starts_with('#') {
                continue;
            }
            let mut row = Vec::new();
            for (j, cell) in t
                .split([',', ';', ' ', '\t'])
                .filter(|c| !c.is_empty())
                .enumerate()
            {
                match cell.parse::<f64>() {
                    Ok(f) if (0.0..=MAX_COST.as_f64()).contains(&f) => row.push(Ns::from_ns_f64(f)),
                    _ => {
                        self.err(
                            file,
                            v.span,
                            format!(
                                "`{path}` line {}, column {}: not a latency in ns",
                                i + 1,
                                j + 1
                            ),
                        )
                        .set_label("named here")
                        .help = Some("each cell is a number of nanoseconds, at most 1s".into());
                        return None;
                    }
                }
            }
            rows.push(row);
        }
        let n = rows.len();
        if rows.iter().any(|r| r.len() != n) {
            self.err(
                file,
                v.span,
                format!("`{path}` is not a square matrix ({n} rows)"),
            );
            return None;
        }
        if cpus > 0 && n != cpus as usize {
            self.err(
                file,
                v.span,
                format!("`{path}` has {n} rows but the topology has {cpus} CPUs"),
            );
            return None;
        }
        Some(rows)
    }
}
