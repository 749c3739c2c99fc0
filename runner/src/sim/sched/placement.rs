//! Where a woken task runs: `select_task_rq_fair` → `select_idle_sibling(p, target)`,
//! old and patched, with the patch's balance on wake (`find_idlest_group` +
//! `find_idlest_cpu` over the LLC).

use super::{Model, NICE_0, NONE};
use locklab_model::plan::PlacementPolicy;

/// `imbalance_pct` of the LLC (MC) domain: balance on wake leaves the local core only
/// for one at least this much (in %) less loaded.
pub const IMBALANCE_PCT: u64 = 125;

impl Model<'_> {
    /// The CPU woken task `t` runs on, the waker's CPU being `target` (wake-affine).
    pub(super) fn select_cpu(&self, t: usize, target: usize) -> usize {
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
}
