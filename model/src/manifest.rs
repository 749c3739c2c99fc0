//! `manifest.yaml`: everything needed to reproduce a run.
//!
//! Written by the CLI at the start of a run (and completed at the end), read by
//! `report`, `compare` and `reproduce`.

use crate::plan::{Mode, Plan};
use crate::topology::CpuMap;
use serde::{Deserialize, Serialize};

pub const MANIFEST_SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub schema_version: u32,
    pub locklab_version: String,
    pub git_commit: Option<String>,
    pub git_dirty: Option<bool>,
    pub rustc: Option<String>,
    pub build_profile: String,
    /// The command line as typed (argv joined with spaces, quoted where needed).
    pub command_line: Vec<String>,
    /// The experiment file and every include, with SHA-256 (copied from the plan).
    pub sources: Vec<crate::plan::SourceFile>,
    pub master_seed: u64,
    pub modes: Vec<Mode>,
    pub quick: bool,
    /// `--set` overrides applied.
    pub overrides: Vec<(String, String)>,
    /// `--shard i/n`, if any.
    pub shard: Option<(u32, u32)>,
    pub started_utc: String,
    pub finished_utc: Option<String>,
    /// "complete", "interrupted", or "failed: <why>".
    pub status: String,
    pub host: HostInfo,
    /// The resolved plan (durations already shortened by `--quick`).
    pub plan: Plan,
    /// A merged run: each shard, where and when it ran (empty for any other run).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shards: Vec<ShardRun>,
}

/// One shard of a merged run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardRun {
    /// `--shard index/count`.
    pub index: u32,
    pub count: u32,
    /// The shard's results directory, as given to `merge`.
    pub dir: String,
    pub hostname: String,
    pub started_utc: String,
    pub finished_utc: Option<String>,
}

/// What the host looked like when the run started.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct HostInfo {
    pub hostname: String,
    pub kernel: String,
    pub cpu_model: String,
    pub online_cpus: u32,
    pub topology: Option<CpuMap>,
    pub governor: Option<String>,
    pub turbo: Option<String>,
    pub isolcpus: Option<String>,
    pub nohz_full: Option<String>,
    pub aslr: Option<String>,
    /// "none" or the hypervisor's name.
    pub virtualization: Option<String>,
    /// Steal time share over a short sample at start (0..1).
    pub steal_frac: Option<f64>,
    pub loadavg: Option<[f64; 3]>,
}
