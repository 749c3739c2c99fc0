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
    /// Drawn at random when the run starts, so that two runs started in the same
    /// microsecond on one host still get different ids ([`Manifest::run_id`]). Empty
    /// in manifests written before it, whose ids stay what they were.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub nonce: String,
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
    /// The kernel's brand string ("model name"); a hypervisor may make it generic.
    pub cpu_model: String,
    /// What identifies the CPU's design beyond its brand string: on x86 the vendor,
    /// family, model and stepping (`GenuineIntel family 6 model 106 stepping 6`), on
    /// Arm the implementer, part, variant and revision. `None` where `/proc/cpuinfo`
    /// does not say (and in manifests written before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_id: Option<String>,
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

impl HostInfo {
    /// The CPU as a person and a topology's `measured_on` name it: the brand string,
    /// then the identity in brackets where it is known
    /// (`AMD EPYC [AuthenticAMD family 25 model 17 stepping 1]`).
    pub fn cpu(&self) -> String {
        match &self.cpu_id {
            Some(id) => format!("{} [{id}]", self.cpu_model),
            None => self.cpu_model.clone(),
        }
    }

    /// Whether `self` and `other` ran on the same kind of CPU: the same brand string,
    /// and the same identity where both recorded one.
    pub fn same_cpu(&self, other: &HostInfo) -> bool {
        self.cpu_model == other.cpu_model
            && match (&self.cpu_id, &other.cpu_id) {
                (Some(a), Some(b)) => a == b,
                _ => true,
            }
    }
}

impl Manifest {
    /// A stable id of this run, the `run_id` column of its tables:
    /// `<start yyyymmdd-hhmmss>-<8 hex digits>`, the digits a hash of what tells runs
    /// apart (experiment, host, start, seed, shard, nonce). Derived from the manifest,
    /// so a resumed run, a rebuilt report and a reload all give the same id; two runs
    /// of the same plan and seed get different ids, even started in one microsecond.
    pub fn run_id(&self) -> String {
        let stamp: String = self
            .started_utc
            .chars()
            .filter(char::is_ascii_digit)
            .take(14)
            .collect();
        let stamp = if stamp.len() == 14 {
            format!("{}-{}", &stamp[..8], &stamp[8..])
        } else {
            stamp
        };
        let shard = self
            .shard
            .map(|(i, n)| format!("{i}/{n}"))
            .unwrap_or_default();
        let mut key = [
            self.plan.experiment.as_str(),
            self.host.hostname.as_str(),
            self.started_utc.as_str(),
            &self.master_seed.to_string(),
            &shard,
        ]
        .join("\u{0}");
        if !self.nonce.is_empty() {
            key.push('\u{0}');
            key.push_str(&self.nonce);
        }
        // FNV-1a: a fixed hash, the same on every platform and release.
        let hash = key.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        format!("{stamp}-{:08x}", hash as u32 ^ (hash >> 32) as u32)
    }
}
