//! The scheduler model for the wake-up placement seed (003).

use crate::records::RunRecord;
use crate::stats::{self, RunContext};
use crate::topology::CpuMap;
use locklab_dsl::plan::{Machine, Point, WakeupSpec};

#[allow(clippy::too_many_arguments)]
pub(crate) fn run(
    ctx: &RunContext,
    _w: &WakeupSpec,
    point: &Point,
    _map: &CpuMap,
    _spec: Option<&Machine>,
    _duration_ns: u64,
    _warmup_ns: u64,
    _seed: u64,
) -> RunRecord {
    stats::skipped(ctx, point.threads, "not yet simulated".into())
}
