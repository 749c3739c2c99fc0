//! Pinning with `sched_setaffinity`. A thread created after its parent was pinned
//! inherits the mask, so only workers pin themselves, from inside.

use locklab_model::topology::{CpuMap, ThreadSlot};
use nix::sched::{sched_getaffinity, sched_setaffinity, CpuSet};
use nix::unistd::Pid;

/// Pin the calling thread to OS CPU `cpu`.
pub fn pin_current(cpu: u32) -> Result<(), String> {
    let mut set = CpuSet::new();
    set.set(cpu as usize).map_err(|e| e.to_string())?;
    sched_setaffinity(Pid::from_raw(0), &set).map_err(|e| e.to_string())
}

/// OS CPU ids this process may run on, if the kernel says.
pub fn allowed_cpus() -> Option<Vec<u32>> {
    let set = sched_getaffinity(Pid::from_raw(0)).ok()?;
    Some(
        (0..CpuSet::count())
            .filter(|&i| set.is_set(i).unwrap_or(false))
            .map(|i| i as u32)
            .collect(),
    )
}

/// Every slot's CPU must be in the affinity mask, else pinning cannot succeed.
pub fn check_allowed(slots: &[ThreadSlot], map: &CpuMap) -> Result<(), String> {
    let Some(allowed) = allowed_cpus() else {
        return Ok(());
    };
    for (i, s) in slots.iter().enumerate() {
        let os = map.cpus[s.cpu].os_id;
        if !allowed.contains(&os) {
            return Err(format!(
                "pinning impossible: thread {i} needs CPU {os}, outside this process's affinity mask ({} CPUs allowed)",
                allowed.len()
            ));
        }
    }
    Ok(())
}
