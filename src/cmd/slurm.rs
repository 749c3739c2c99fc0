//! `locklab plan FILE --emit slurm`: a job-array script that runs the sweep in shards
//! and merges them.
//!
//! The script is its own submitter: run outside a job (`bash job.sh`), it creates
//! the log directory, submits itself as the array with `sbatch --parsable` and the
//! merge as a job that waits for every shard (`--dependency=afterok`). Inside the
//! array, task i runs shard i. Every path in it is absolute (the binary is this
//! one, `current_exe`) and single-quoted, so spaces, quotes and `$` in a path stay
//! text; Slurm options are checked to be plain words, since `#SBATCH` lines are not
//! parsed by the shell.

use crate::cli::{LoadArgs, SlurmArgs};
use crate::exit::{self, Failure, Result, WithCode};
use anyhow::anyhow;
use locklab_model::plan::Plan;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

pub fn emit(
    file: &Path,
    plan: &Plan,
    load: &LoadArgs,
    quick: bool,
    slurm: &SlurmArgs,
) -> Result<i32> {
    let points = plan.points.len() as u32;
    if slurm.shards == 0 || slurm.shards > points {
        return Err(Failure::new(
            exit::INVALID_INPUT,
            anyhow!(
                "--shards must be between 1 and the {points} points of the plan, got {}",
                slurm.shards
            ),
        ));
    }
    let job = Job {
        exe: std::env::current_exe().code(exit::RUN_FAILED)?,
        file: absolute(file)?,
        base: absolute(&slurm.out)?.join(&plan.experiment),
        include_dirs: load
            .include_dirs
            .iter()
            .map(|d| absolute(d))
            .collect::<Result<_>>()?,
    };
    if job.base.to_string_lossy().contains(['%', '\n']) {
        return Err(Failure::new(
            exit::INVALID_INPUT,
            anyhow!(
                "--out {:?}: a results directory for Slurm may not hold `%` (Slurm's file-name patterns) or a newline",
                slurm.out
            ),
        ));
    }
    let options = slurm_options(slurm)?;
    print!(
        "{}",
        script(plan, load, quick, slurm.shards, &job, &options)
    );
    Ok(exit::OK)
}

/// What the script runs: the binary, the experiment and where results go, all
/// absolute.
struct Job {
    exe: PathBuf,
    file: PathBuf,
    base: PathBuf,
    include_dirs: Vec<PathBuf>,
}

/// A path made absolute against the current directory (without resolving links:
/// the directory need not exist yet).
fn absolute(p: &Path) -> Result<PathBuf> {
    std::path::absolute(p)
        .map_err(|e| Failure::new(exit::INVALID_INPUT, anyhow!("{}: {e}", p.display())))
}

/// `--time`, `--partition`, `--account`, `--cpus-per-task` as `--name=value`, each
/// checked to be a plain word.
fn slurm_options(s: &SlurmArgs) -> Result<Vec<String>> {
    let mut out = Vec::new();
    let cpus = s.cpus_per_task.map(|n| n.to_string());
    for (name, value) in [
        ("time", &s.time),
        ("partition", &s.partition),
        ("account", &s.account),
        ("cpus-per-task", &cpus),
    ] {
        let Some(v) = value else { continue };
        let plain = !v.is_empty()
            && v.chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-.:,+=".contains(c));
        if !plain {
            return Err(Failure::new(
                exit::INVALID_INPUT,
                anyhow!("--{name} {v:?}: only letters, digits and `_-.:,+=` may appear"),
            ));
        }
        out.push(format!("--{name}={v}"));
    }
    Ok(out)
}

/// Single-quote `s` for the shell: `'…'`, each `'` as `'\''`.
pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

fn quote_path(p: &Path) -> String {
    shell_quote(&p.to_string_lossy())
}

fn script(
    plan: &Plan,
    load: &LoadArgs,
    quick: bool,
    shards: u32,
    job: &Job,
    options: &[String],
) -> String {
    let name = &plan.experiment;
    let mut run_args = String::new();
    for s in &load.set {
        let _ = write!(run_args, " --set {}", shell_quote(s));
    }
    for d in &job.include_dirs {
        let _ = write!(run_args, " --include-dir {}", quote_path(d));
    }
    if load.allow_huge {
        run_args.push_str(" --allow-huge");
    }
    if quick {
        run_args.push_str(" --quick");
    }
    let shard_dirs: Vec<String> = (1..=shards)
        .map(|i| quote_path(&job.base.join(format!("shard-{i}"))))
        .collect();
    // The merged directory is made from the shards alone: a merge job run again (or
    // one that was cut short) replaces it.
    let merge = format!(
        "{} merge {} --out {} --force",
        quote_path(&job.exe),
        shard_dirs.join(" "),
        quote_path(&job.base.join("merged"))
    );
    let directives: String = options.iter().map(|o| format!("#SBATCH {o}\n")).collect();
    let passed: String = options.iter().map(|o| format!(" {o}")).collect();
    format!(
        r#"#!/bin/bash
# Slurm job array for experiment {name}: {points} points in {shards} shards.
#
# Submit from a login node with:  bash THIS-SCRIPT
# Outside a job, the script submits itself as the array (one task per shard), then
# the merge as a job that starts once every shard has succeeded; it prints both
# job ids. Inside the array, task i runs shard i; a failed task can be re-run
# alone (sharding is deterministic): it resumes its shard where it stopped, or does
# nothing if the shard is complete. Logs go to the `logs` directory beside the
# shards; the merged results to `merged` (a merge run again replaces it).
#SBATCH --job-name=locklab-{name}
#SBATCH --array=1-{shards}
#SBATCH --exclusive
{directives}set -euo pipefail
LOCKLAB={exe}
BASE={base}
LOGS="$BASE/logs"
MERGE={merge}
if [ -z "${{SLURM_ARRAY_TASK_ID:-}}" ]; then
  mkdir -p -- "$LOGS"
  array=$(sbatch --parsable --output="$LOGS/shard-%A_%a.out" "$0")
  array=${{array%%;*}}
  merge=$(sbatch --parsable --dependency="afterok:$array" --job-name=locklab-{name}-merge \
    --output="$LOGS/merge-%j.out"{passed} --wrap "$MERGE")
  merge=${{merge%%;*}}
  echo "submitted shards as job array $array and the merge as job $merge"
  echo "results: $BASE/merged"
  exit 0
fi
SHARD="$BASE/shard-$SLURM_ARRAY_TASK_ID"
if [ -f "$SHARD/manifest.yaml" ]; then
  if grep -Eq "^status: [\"']?complete[\"']?\$" "$SHARD/manifest.yaml"; then
    echo "shard $SLURM_ARRAY_TASK_ID/{shards} is complete: $SHARD"
    exit 0
  fi
  exec "$LOCKLAB" run --resume "$SHARD"
fi
exec "$LOCKLAB" run {file}{run_args} --shard "$SLURM_ARRAY_TASK_ID/{shards}" --out "$SHARD"
"#,
        points = plan.points.len(),
        exe = quote_path(&job.exe),
        base = quote_path(&job.base),
        merge = shell_quote(&merge),
        file = quote_path(&job.file),
    )
}

#[cfg(test)]
mod tests {
    use super::shell_quote;

    #[test]
    fn single_quotes_keep_everything_literal() {
        assert_eq!(shell_quote("my results"), "'my results'");
        assert_eq!(shell_quote("$(rm -rf x)"), "'$(rm -rf x)'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
    }
}
