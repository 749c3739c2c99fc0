//! Records what built this binary, for the run manifest.
use std::process::Command;

fn run(cmd: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(cmd).args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    let commit = run("git", &["rev-parse", "HEAD"]).unwrap_or_default();
    let dirty = run("git", &["status", "--porcelain", "--untracked-files=no"])
        .map(|s| if s.is_empty() { "false" } else { "true" })
        .unwrap_or("");
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let rustc_version = run(&rustc, &["--version"]).unwrap_or_default();
    println!("cargo:rustc-env=LOCKLAB_GIT_COMMIT={commit}");
    println!("cargo:rustc-env=LOCKLAB_GIT_DIRTY={dirty}");
    println!("cargo:rustc-env=LOCKLAB_RUSTC={rustc_version}");
    println!(
        "cargo:rustc-env=LOCKLAB_PROFILE={}",
        std::env::var("PROFILE").unwrap_or_default()
    );
    println!("cargo:rerun-if-changed=.git/HEAD");
    println!("cargo:rerun-if-changed=.git/index");
}
