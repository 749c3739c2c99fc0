//! Lock workloads (single, double, bulk) simulated through the shared lock and
//! workload code.

use crate::records::RunRecord;
use crate::stats::{self, RunContext};
use crate::topology::{CpuMap, ThreadSlot};
use locklab_dsl::plan::{Costs, Point};

#[allow(clippy::too_many_arguments)]
pub(crate) fn run(
    ctx: RunContext,
    point: &Point,
    _map: &CpuMap,
    _costs: &Costs,
    _slots: &[ThreadSlot],
    _duration_ns: u64,
    _warmup_ns: u64,
    _seed: u64,
) -> RunRecord {
    stats::skipped(&ctx, point.threads, "not yet simulated".into())
}
