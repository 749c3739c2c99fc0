//! The CPU table of a machine (modelled or detected) and thread placement.
//!
//! Both executors use this: the simulator to price cache-line transfers, the native
//! runner to pin threads and to attribute hand-offs to nodes.

use crate::plan::{Costs, Machine, Placement, PlacementKind};
use crate::time::Ns;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuInfo {
    /// OS CPU number (for pinning); for a model, the index in socket-major,
    /// core-major, SMT-last order (Linux's usual enumeration: second hyperthreads
    /// after all cores).
    pub os_id: u32,
    pub socket: u32,
    /// Global core index (socket-major).
    pub core: u32,
    /// Hardware thread index within the core.
    pub smt: u32,
    pub node: u32,
    /// Global LLC domain index.
    pub llc: u32,
}

/// Distance between two CPUs, the levels of the cost model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Distance {
    Same,
    Smt,
    Llc,
    Socket,
    Remote,
}

impl Distance {
    pub fn as_str(self) -> &'static str {
        match self {
            Distance::Same => "self",
            Distance::Smt => "smt",
            Distance::Llc => "llc",
            Distance::Socket => "socket",
            Distance::Remote => "remote",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuMap {
    /// Indexed by CPU index (not necessarily the OS id).
    pub cpus: Vec<CpuInfo>,
    pub sockets: u32,
    pub cores: u32,
    pub nodes: u32,
}

impl CpuMap {
    /// The CPUs of a modelled machine, Linux-style numbering: CPU i for i < cores is
    /// thread 0 of core i (socket-major); CPU cores + i is thread 1 of core i; etc.
    pub fn from_machine(m: &Machine) -> CpuMap {
        let cores = m.cores();
        let cores_per_node = (m.cores_per_socket / m.nodes_per_socket.max(1)).max(1);
        let cores_per_llc = (m.cores_per_socket / m.llcs_per_socket.max(1)).max(1);
        let mut cpus = Vec::with_capacity(m.cpus() as usize);
        for smt in 0..m.smt {
            for core in 0..cores {
                let socket = core / m.cores_per_socket;
                let in_socket = core % m.cores_per_socket;
                cpus.push(CpuInfo {
                    os_id: smt * cores + core,
                    socket,
                    core,
                    smt,
                    node: socket * m.nodes_per_socket.max(1)
                        + (in_socket / cores_per_node).min(m.nodes_per_socket.max(1) - 1),
                    llc: socket * m.llcs_per_socket.max(1)
                        + (in_socket / cores_per_llc).min(m.llcs_per_socket.max(1) - 1),
                });
            }
        }
        CpuMap {
            cpus,
            sockets: m.sockets,
            cores,
            nodes: m.sockets * m.nodes_per_socket.max(1),
        }
    }

    pub fn len(&self) -> usize {
        self.cpus.len()
    }

    pub fn is_empty(&self) -> bool {
        self.cpus.is_empty()
    }

    pub fn distance(&self, a: usize, b: usize) -> Distance {
        let (x, y) = (&self.cpus[a], &self.cpus[b]);
        if a == b {
            Distance::Same
        } else if x.core == y.core {
            Distance::Smt
        } else if x.llc == y.llc {
            Distance::Llc
        } else if x.socket == y.socket {
            Distance::Socket
        } else {
            Distance::Remote
        }
    }

    /// One-way transfer latency between two CPUs under `costs`.
    pub fn transfer_ns(&self, costs: &Costs, a: usize, b: usize) -> Ns {
        if let Some(m) = &costs.matrix_ns {
            if let Some(v) = m.get(a).and_then(|row| row.get(b)) {
                return *v;
            }
        }
        match self.distance(a, b) {
            Distance::Same => Ns::ZERO,
            Distance::Smt => costs.smt_ns,
            Distance::Llc => costs.llc_ns,
            Distance::Socket => costs.socket_ns,
            Distance::Remote => costs.remote_ns,
        }
    }

    /// The machine as a process restricted to the CPUs `os_ids` sees it (`taskset`,
    /// cpusets): those CPUs only, their cores and sockets numbered anew in the same
    /// order (so that a placement policy fills them as it would a machine of that
    /// shape), their last-level caches and nodes as they are.
    pub fn restricted_to(&self, os_ids: &[u32]) -> CpuMap {
        let kept: Vec<&CpuInfo> = self
            .cpus
            .iter()
            .filter(|c| os_ids.contains(&c.os_id))
            .collect();
        // Dense numbers for the sockets and cores that keep a CPU, in their order.
        let dense = |keys: Vec<(u32, u32)>| {
            let mut k = keys;
            k.sort_unstable();
            k.dedup();
            k
        };
        let sockets = dense(kept.iter().map(|c| (c.socket, 0)).collect());
        let cores = dense(kept.iter().map(|c| (c.core, 0)).collect());
        let index = |v: &[(u32, u32)], key: (u32, u32)| {
            v.binary_search(&key).expect("a kept CPU's own key") as u32
        };
        let cpus: Vec<CpuInfo> = kept
            .iter()
            .map(|c| {
                // The hardware thread's rank among the kept threads of its core.
                let smt = kept
                    .iter()
                    .filter(|o| o.core == c.core && o.smt < c.smt)
                    .count() as u32;
                CpuInfo {
                    os_id: c.os_id,
                    socket: index(&sockets, (c.socket, 0)),
                    core: index(&cores, (c.core, 0)),
                    smt,
                    node: c.node,
                    llc: c.llc,
                }
            })
            .collect();
        CpuMap {
            sockets: sockets.len() as u32,
            cores: cores.len() as u32,
            nodes: self.nodes,
            cpus,
        }
    }

    /// The CPU index of the i-th core's j-th hardware thread.
    fn cpu_of(&self, core: u32, smt: u32) -> Option<usize> {
        self.cpus
            .iter()
            .position(|c| c.core == core && c.smt == smt)
    }

    fn smt_per_core(&self) -> u32 {
        self.cpus.iter().map(|c| c.smt + 1).max().unwrap_or(1)
    }
}

/// Where each thread of a point runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadSlot {
    /// Index into `CpuMap::cpus`.
    pub cpu: usize,
    /// NUMA node used for the thread (the virtual node map overrides the CPU's).
    pub node: u32,
}

/// Place `threads` threads; `Err` says why the point cannot run on this machine.
pub fn place(p: &Placement, map: &CpuMap, threads: u32) -> Result<Vec<ThreadSlot>, String> {
    let n = threads as usize;
    if n > map.len() {
        return Err(format!("needs {n} CPUs, the machine has {}", map.len()));
    }
    let smt = map.smt_per_core();
    let cores = map.cores;
    let cpus: Vec<usize> = match &p.policy {
        // Socket-major, core-major, second hyperthreads after all cores: task i →
        // core (i mod ncores).
        PlacementKind::WillItScale => (0..threads)
            .map(|i| {
                map.cpu_of(i % cores, i / cores)
                    .ok_or_else(|| format!("no CPU for thread {i}"))
            })
            .collect::<Result<_, _>>()?,
        // Fill a core's hardware threads, then the next core.
        PlacementKind::Compact => (0..threads)
            .map(|i| {
                map.cpu_of(i / smt, i % smt)
                    .ok_or_else(|| format!("no CPU for thread {i}"))
            })
            .collect::<Result<_, _>>()?,
        // Round-robin over sockets, one thread per core before any sibling.
        PlacementKind::Scatter => {
            let per_socket = (cores / map.sockets.max(1)).max(1);
            (0..threads)
                .map(|i| {
                    let round = i / map.sockets.max(1);
                    let socket = i % map.sockets.max(1);
                    let core = socket * per_socket + round % per_socket;
                    let t = round / per_socket;
                    map.cpu_of(core, t)
                        .ok_or_else(|| format!("no CPU for thread {i}"))
                })
                .collect::<Result<_, _>>()?
        }
        PlacementKind::List(list) => {
            if list.len() < n {
                return Err(format!(
                    "the CPU list has {} entries for {n} threads",
                    list.len()
                ));
            }
            list[..n]
                .iter()
                .map(|&os| {
                    map.cpus
                        .iter()
                        .position(|c| c.os_id == os)
                        .ok_or_else(|| format!("CPU {os} is not on this machine"))
                })
                .collect::<Result<_, _>>()?
        }
    };
    Ok(cpus
        .into_iter()
        .enumerate()
        .map(|(i, cpu)| ThreadSlot {
            cpu,
            node: match &p.virtual_nodes {
                Some(v) if !v.is_empty() => v[i % v.len()],
                _ => map.cpus[cpu].node,
            },
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn x5_4() -> Machine {
        Machine {
            name: "x5-4".into(),
            sockets: 4,
            cores_per_socket: 18,
            smt: 2,
            nodes_per_socket: 1,
            llcs_per_socket: 1,
            costs: Costs::levels(10, 50, 50, 190, 5),
            l2_bytes: None,
            llc_bytes: None,
            freq_hz: None,
        }
    }

    #[test]
    fn a_restricted_machine_is_placed_on_its_own_cpus() {
        // `taskset -c 20-23,92` on the X5-4: cores 2-5 of socket 1, and the second
        // hardware thread of socket 1's core 2 (CPU 72 + 20).
        let map = CpuMap::from_machine(&x5_4());
        let r = map.restricted_to(&[20, 21, 22, 23, 92]);
        assert_eq!((r.len(), r.cores, r.sockets), (5, 4, 1));
        let on = |p: PlacementKind, n| -> Vec<u32> {
            let pl = Placement {
                policy: p,
                virtual_nodes: None,
            };
            place(&pl, &r, n)
                .unwrap()
                .iter()
                .map(|s| r.cpus[s.cpu].os_id)
                .collect()
        };
        assert_eq!(on(PlacementKind::WillItScale, 5), [20, 21, 22, 23, 92]);
        assert_eq!(on(PlacementKind::Compact, 3), [20, 92, 21]);
        // Distances and nodes stay the machine's.
        assert_eq!(r.distance(0, 4), Distance::Smt);
        assert!(r.cpus.iter().all(|c| c.node == 1));
        // Nothing allowed outside the machine: an empty one, which places nothing.
        assert!(map.restricted_to(&[999]).is_empty());
    }

    #[test]
    fn will_it_scale_fills_sockets_then_wraps_onto_siblings() {
        let map = CpuMap::from_machine(&x5_4());
        assert_eq!(map.len(), 144);
        let p = Placement {
            policy: PlacementKind::WillItScale,
            virtual_nodes: None,
        };
        let slots = place(&p, &map, 142).unwrap();
        let mut per_node = [0; 4];
        for s in &slots {
            per_node[s.node as usize] += 1;
        }
        assert_eq!(per_node, [36, 36, 36, 34]);
        assert_eq!(map.cpus[slots[17].cpu].socket, 0);
        assert_eq!(map.cpus[slots[18].cpu].socket, 1);
        assert_eq!(map.distance(slots[0].cpu, slots[72].cpu), Distance::Smt);
        assert!(place(&p, &map, 145).is_err());
    }

    #[test]
    fn virtual_nodes_override_and_cycle() {
        let map = CpuMap::from_machine(&x5_4());
        let p = Placement {
            policy: PlacementKind::Compact,
            virtual_nodes: Some(vec![0, 1]),
        };
        let slots = place(&p, &map, 3).unwrap();
        assert_eq!(
            slots.iter().map(|s| s.node).collect::<Vec<_>>(),
            vec![0, 1, 0]
        );
        assert_eq!(map.distance(slots[0].cpu, slots[1].cpu), Distance::Smt);
    }
}
