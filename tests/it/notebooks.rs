//! The notebooks run against a quick results directory.

use super::*;

#[test]
fn notebooks_execute_against_a_quick_run() {
    let have = std::process::Command::new("python3")
        .args(["-c", "import polars, nbclient, nbformat, ipykernel"])
        .status()
        .is_ok_and(|s| s.success());
    if !have {
        // CI installs them (.ci/run); elsewhere say loudly what is missing.
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must install notebooks/requirements.txt"
        );
        eprintln!("NOTE: notebook test not run: pip install -r notebooks/requirements.txt");
        return;
    }
    let dir = quickstart_run();
    let out = std::process::Command::new("python3")
        .arg(root().join("notebooks/execute.py"))
        .arg(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("explore.ipynb: ok"));
}
