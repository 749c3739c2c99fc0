//! The command line, as clap derives it.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

const EXIT_CODES: &str = "\
Exit codes (when several apply: 3, then 4, then 1, then 5):
  0  every gating claim was decided and holds (or the command succeeded)
  1  a gating claim failed (or could not be evaluated)
  2  invalid input or usage, or nothing to run in the requested mode
  3  the run could not complete (e.g. a simulated deadlock)
  4  the environment refused (e.g. a native point this machine cannot pin, or a CPU
     it does not have, that a gating claim reads or for every point; cross-host
     comparison)
  5  no gating claim failed, but one was left undecided: inconclusive, skipped (its
     point not run, or left out by --set), or over points the noise gate flagged
     (--accept-undecided and --accept-noisy accept them)
  130  interrupted (Ctrl-C; 143 for SIGTERM): the run keeps its finished records,
       `locklab run --resume DIR` completes it

The language reference: locklab help language";

#[derive(Debug, Parser)]
#[command(name = "locklab", version, about = "Run lock fairness and throughput experiments natively or in simulation, and check their claims", after_help = EXIT_CODES)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Parse and validate experiment files; report every error.
    Check {
        #[arg(required = true)]
        files: Vec<PathBuf>,
        #[command(flatten)]
        load: LoadArgs,
        /// `json`: one object on stdout with every file's diagnostics (docs/cli.md).
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Show the expanded points, their count and the estimated run time.
    Plan {
        file: PathBuf,
        #[arg(long, value_enum, default_value_t = PlanFormat::Table)]
        format: PlanFormat,
        #[command(flatten)]
        load: LoadArgs,
        /// Use the `--quick` durations for the estimate.
        #[arg(long)]
        quick: bool,
        #[command(flatten)]
        slurm: SlurmArgs,
    },
    /// Run an experiment, write the results directory, check the claims, render the report.
    Run(RunArgs),
    /// Rebuild the report and plots of a results directory.
    Report {
        dir: PathBuf,
        #[command(flatten)]
        accept: AcceptArgs,
    },
    /// Compare two results directories point by point, or a run's simulated points
    /// with native ones.
    Compare {
        a: PathBuf,
        /// Second directory. With --sim-vs-native: none (A's own native points), or
        /// one or more native runs of the same experiment, their repetitions pooled
        /// (name A among them to pool its own native points too).
        b: Vec<PathBuf>,
        /// Compare results from different hosts anyway.
        #[arg(long)]
        allow_cross_host: bool,
        /// Compare A's simulated points with the native ones of A, or of B...
        #[arg(long)]
        sim_vs_native: bool,
        /// With --sim-vs-native: how far a simulated value may be from the native one
        /// and be "within tolerance", as a percentage (`10%`) or a fraction (`0.1`).
        /// Not for the waited and re-acquired shares, fractions themselves: their
        /// residual is sim − native, within 0.1.
        #[arg(long, value_name = "TOLERANCE", value_parser = parse_tolerance, default_value = "15%", requires = "sim_vs_native")]
        tolerance: f64,
        /// With --sim-vs-native: pool every native repetition. By default, where the
        /// simulated costs were measured on the native host (`topo --measure`), one
        /// whose transfer between threads 0 and 1 (measured before and after its
        /// window) is not the simulated machine's is left out: the host moved the
        /// CPUs, and it measured another machine (docs/validation.md).
        #[arg(long, requires = "sim_vs_native")]
        any_placement: bool,
        /// Also write a small report (Markdown + HTML) here.
        #[arg(long)]
        out: Option<PathBuf>,
        /// `json`: the table's rows as one object on stdout (docs/cli.md).
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Re-run from a results directory's manifest and compare with the stored results.
    Reproduce {
        dir: PathBuf,
        /// Where the new run goes (default: DIR/reproduce-<time stamp>). Never DIR
        /// itself; an existing, non-empty directory only with --force.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Parallel simulation jobs (at least 1).
        #[arg(long, value_parser = parse_jobs)]
        jobs: Option<usize>,
        #[command(flatten)]
        accept: AcceptArgs,
        /// Write into an existing, non-empty --out anyway, replacing what a run
        /// writes there.
        #[arg(long, requires = "out")]
        force: bool,
    },
    /// Merge shard results directories of one sweep into one.
    Merge {
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
        /// The merged results directory: new or empty, or replaced with --force;
        /// never one of the shards.
        #[arg(long)]
        out: PathBuf,
        #[command(flatten)]
        accept: AcceptArgs,
        /// Write into an existing, non-empty --out anyway (a merge that was cut
        /// short, an earlier merge), replacing what a run writes there.
        #[arg(long)]
        force: bool,
    },
    /// Show the memory requests of one simulated point in a window of virtual time:
    /// who asked for which cache line, who held it, what it cost.
    Trace {
        file: PathBuf,
        /// The point, by its id as `plan` and the results name it
        /// (lock=tas,threads=2); needed unless the experiment has one point (--set
        /// narrows it).
        #[arg(long, value_name = "ID")]
        point: Option<String>,
        /// The repetition (its seed).
        #[arg(long, default_value_t = 0, value_name = "N")]
        rep: u32,
        /// Where the window starts, in virtual time (default: the end of the
        /// warm-up, where the measured window starts; at most the run's end).
        #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
        from: Option<u64>,
        /// How long the window lasts.
        #[arg(long = "for", value_name = "DURATION", value_parser = parse_duration, default_value = "2us")]
        span: u64,
        #[arg(long, value_enum, default_value_t = PlanFormat::Table)]
        format: PlanFormat,
        #[command(flatten)]
        load: LoadArgs,
    },
    /// Print the host topology as experiment-language text.
    Topo {
        /// Measure this host's costs (cache-line hand-offs and single accesses per
        /// distance, how far a core runs ahead of its misses, an uncontended
        /// compare-and-swap, a fence, a pause, the futex, the native loop) and write
        /// them into the topology.
        #[arg(long)]
        measure: bool,
        /// With --measure: how many times to measure everything, a second apart; each
        /// constant is the median of the passes, those between two CPUs of the passes
        /// that found the pair's most common placement (a shared machine's slow spells
        /// last seconds, and a guest's host moves its vCPUs).
        #[arg(long, default_value_t = 5, value_name = "N", requires = "measure")]
        passes: usize,
        /// Name of the topology item (default: host_<hostname>).
        #[arg(long, value_name = "NAME")]
        name: Option<String>,
    },
    /// Benchmarks: lock costs, simulator speed, analysis pipeline.
    Bench {
        #[arg(value_enum)]
        what: BenchWhat,
        /// Rows for the analysis benchmark.
        #[arg(long, default_value_t = 10_000_000,
              value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
        rows: usize,
        /// Iterations for the native benchmark.
        #[arg(long, default_value_t = 20_000_000,
              value_parser = clap::value_parser!(u64).range(1..))]
        iters: u64,
    },
    /// Show the language reference (`locklab help language` does the same).
    Language,
    /// Print a shell completion script: `locklab completions bash > ~/.local/share/bash-completion/completions/locklab`.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff): `locklab man > locklab.1; man ./locklab.1`.
    Man,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The experiment file (default: the quick-start experiment built into locklab).
    pub file: Option<PathBuf>,
    #[arg(long, value_enum)]
    pub mode: Option<ModeArg>,
    /// Results directory (default: results/<experiment>/<run id>).
    #[arg(long)]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub load: LoadArgs,
    /// Short durations and few repetitions, for a first look in seconds.
    #[arg(long)]
    pub quick: bool,
    /// Parallel simulation jobs, at least 1 (default and at most: the cores, and no
    /// more than the records to run). Never changes the results.
    #[arg(long, value_parser = parse_jobs)]
    pub jobs: Option<usize>,
    /// Run only shard I of N (deterministic split of the points), e.g. 2/8.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,
    /// Complete an interrupted run in this results directory.
    #[arg(long, value_name = "DIR", conflicts_with = "out")]
    pub resume: Option<PathBuf>,
    /// Skip rendering plots and the report (claims are still checked).
    #[arg(long)]
    pub no_report: bool,
    #[command(flatten)]
    pub accept: AcceptArgs,
    /// Write into an existing, non-empty --out anyway, replacing what a run writes
    /// there (not with --resume, which completes the run already there).
    #[arg(long, conflicts_with = "resume")]
    pub force: bool,
    /// `json`: the claims and the run's summary as one object on stdout (docs/cli.md).
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

/// What the exit code accepts in place of a decided, clean verdict.
#[derive(Debug, Clone, Copy, Args)]
pub struct AcceptArgs {
    /// Exit 0 rather than 5 when gating claims are left undecided (inconclusive,
    /// skipped, or over noise-flagged points).
    #[arg(long)]
    pub accept_undecided: bool,
    /// Judge claims over points the noise gate flagged by their verdict, as if clean.
    #[arg(long)]
    pub accept_noisy: bool,
}

impl AcceptArgs {
    pub fn accept(&self) -> crate::exit::Accept {
        crate::exit::Accept {
            undecided: self.accept_undecided,
            noisy: self.accept_noisy,
        }
    }
}

/// How an experiment file is read: axis overrides, the directories its `use` and
/// `matrix` may read from, and the cap on its estimated work.
#[derive(Debug, Clone, Default, Args)]
pub struct LoadArgs {
    /// Replace a sweep axis's values: --set threads=1,2,4. Claims that read values it
    /// leaves out are skipped (undecided), with the reason; repeat for several axes
    #[arg(long = "set", value_name = "AXIS=VALUES")]
    pub set: Vec<String>,
    /// Let `use` and `matrix` also read files below DIR (besides the experiment's
    /// own directory). Repeatable.
    #[arg(long = "include-dir", value_name = "DIR")]
    pub include_dirs: Vec<PathBuf>,
    /// Accept a run estimated to take more than 24 hours in a mode.
    #[arg(long)]
    pub allow_huge: bool,
}

/// `plan --emit slurm`: the job array's shards, results directory and the Slurm
/// options passed through to every job.
#[derive(Debug, Clone, Args)]
pub struct SlurmArgs {
    /// Print a Slurm job-array script on stdout that runs the sweep in shards and
    /// merges them (`bash job.sh` outside a job submits it: docs/cli.md).
    #[arg(long, value_name = "slurm")]
    pub emit: Option<Emit>,
    /// Number of shards for --emit slurm.
    #[arg(long, default_value_t = 8, requires = "emit",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub shards: u32,
    /// Results directory the emitted script writes to.
    #[arg(long, default_value = "results")]
    pub out: PathBuf,
    /// Slurm --time of each shard job (e.g. 2:00:00).
    #[arg(long, value_name = "TIME", requires = "emit")]
    pub time: Option<String>,
    /// Slurm --partition.
    #[arg(long, requires = "emit")]
    pub partition: Option<String>,
    /// Slurm --account.
    #[arg(long, requires = "emit")]
    pub account: Option<String>,
    /// Slurm --cpus-per-task of each shard job.
    #[arg(long, value_name = "N", requires = "emit",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub cpus_per_task: Option<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    Sim,
    Native,
    Both,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PlanFormat {
    Table,
    Json,
}

/// What `run`, `check` and `compare` print on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Tables for people.
    Text,
    /// One JSON object (its shape: docs/cli.md).
    Json,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Emit {
    Slurm,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BenchWhat {
    Native,
    Sim,
    Analysis,
}

/// `--jobs N`: a whole number of jobs, at least 1.
fn parse_jobs(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(0) => Err("at least 1 job: 0 would run nothing".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("`{s}` is not a number of jobs")),
    }
}

/// A duration with its unit, as the language writes it: 500ns, 2us (or µs), 1.5ms, 1s.
fn parse_duration(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let scale = match unit.trim() {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => {
            return Err(format!(
                "`{s}` is not a duration: give a number and a unit, as in 2us (ns, us, ms, s)"
            ))
        }
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("`{s}` is not a duration: give a number and a unit, as in 2us"))?;
    let ns = v * scale;
    if ns.is_finite() && ns < 1e18 {
        Ok(ns.round() as u64)
    } else {
        Err(format!("`{s}` is too long a duration"))
    }
}

/// `10%` or `0.1`: a relative tolerance, as a fraction, above 0.
fn parse_tolerance(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let (num, scale) = match t.strip_suffix('%') {
        Some(n) => (n.trim(), 100.0),
        None => (t, 1.0),
    };
    let v: f64 = num.parse().map_err(|_| {
        format!("`{s}` is not a tolerance: give a percentage (10%) or a fraction (0.1)")
    })?;
    let v = v / scale;
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err(format!("a tolerance must be above 0, not `{s}`"))
    }
}

#[cfg(test)]
mod tests {
    use super::parse_tolerance;

    #[test]
    fn a_tolerance_is_a_percentage_or_a_fraction_above_zero() {
        assert_eq!(parse_tolerance("15%"), Ok(0.15));
        assert_eq!(parse_tolerance(" 2.5 % "), Ok(0.025));
        assert_eq!(parse_tolerance("0.1"), Ok(0.1));
        for bad in ["0", "0%", "-1", "abc", "%", "inf", "NaN%"] {
            assert!(parse_tolerance(bad).is_err(), "{bad}");
        }
    }
}
