//! Records what built this binary, for the run manifest.
//!
//! The commit comes from `LOCKLAB_GIT_COMMIT` / `LOCKLAB_GIT_DIRTY` when the builder
//! sets them (the Nix flake does: its sandbox has no `.git`), else from `git`.
use std::path::Path;
use std::process::Command;

fn run(cmd: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(cmd).args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// (commit, dirty) as the manifest wants them: dirty is "true", "false" or "" (unknown).
fn commit_from_git() -> (String, String) {
    let commit = run("git", &["rev-parse", "HEAD"]).unwrap_or_default();
    let dirty = run("git", &["status", "--porcelain", "--untracked-files=no"])
        .map(|s| if s.is_empty() { "false" } else { "true" })
        .unwrap_or("");
    // An edit to a tracked file makes the tree dirty without touching the index:
    // watch the sources this binary is built from too, so that a build after such an
    // edit asks git again (else its manifests would say "clean" for a binary built
    // from uncommitted code).
    for dir in ["src", "model/src", "dsl/src", "runner/src", "analysis/src"] {
        if Path::new(dir).exists() {
            println!("cargo:rerun-if-changed={dir}");
        }
    }
    // Ask git where HEAD, the index and the checked-out branch live: in a worktree
    // `.git` is a file, and a commit moves the branch ref, not HEAD. Only existing
    // files: cargo reruns a build script on every build while a watched file is missing.
    let branch = run("git", &["symbolic-ref", "-q", "HEAD"]);
    for file in ["HEAD", "index", "packed-refs"]
        .into_iter()
        .chain(branch.as_deref())
    {
        let path = run("git", &["rev-parse", "--git-path", file]);
        if let Some(path) = path.filter(|p| Path::new(p).exists()) {
            println!("cargo:rerun-if-changed={path}");
        }
    }
    (commit, dirty.to_string())
}

fn main() {
    println!("cargo:rerun-if-env-changed=LOCKLAB_GIT_COMMIT");
    println!("cargo:rerun-if-env-changed=LOCKLAB_GIT_DIRTY");
    let (commit, dirty) = match std::env::var("LOCKLAB_GIT_COMMIT") {
        Ok(commit) if !commit.is_empty() => (
            commit,
            std::env::var("LOCKLAB_GIT_DIRTY").unwrap_or_default(),
        ),
        _ => commit_from_git(),
    };
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let rustc_version = run(&rustc, &["--version"]).unwrap_or_default();
    println!("cargo:rustc-env=LOCKLAB_GIT_COMMIT={commit}");
    println!("cargo:rustc-env=LOCKLAB_GIT_DIRTY={dirty}");
    println!("cargo:rustc-env=LOCKLAB_RUSTC={rustc_version}");
    println!(
        "cargo:rustc-env=LOCKLAB_PROFILE={}",
        std::env::var("PROFILE").unwrap_or_default()
    );
}
