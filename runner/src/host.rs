//! Placeholder; filled below.
use crate::manifest::HostInfo;
use crate::topology::CpuMap;
pub fn detect() -> HostInfo {
    HostInfo::default()
}
pub fn cpu_map() -> CpuMap {
    CpuMap {
        cpus: vec![],
        sockets: 1,
        cores: 0,
        nodes: 1,
    }
}
pub fn topology_as_lab(_h: &HostInfo) -> String {
    String::new()
}
pub fn measure_report(_h: &HostInfo) -> String {
    String::new()
}
