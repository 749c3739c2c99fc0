//! Hostile experiment files given to `locklab check`: each exits 2 with a located
//! message, prints nothing of a file outside the experiment, and stays short.

use super::*;
use std::os::unix::fs::symlink;

const HEAD: &str = "topology t { sockets = 1, cores = 4, transfer { llc = 40ns } }\n\
workload w = single { critical = 100ns, outside = 100ns }\n";

fn experiment(defs: &str, sweep: &str, run: &str, body: &str) -> String {
    format!(
        "{HEAD}{defs}\nexperiment e {{\n  topology = t\n  workload = w\n  sweep {{ {sweep} }}\n  run {{ {run} }}\n{body}\n}}\n"
    )
}

/// Text that must never be shown: lines of the system's files and of the
/// environment.
fn leaks(text: &str) -> Option<String> {
    let mut secrets: Vec<String> = ["/etc/passwd", "/etc/shadow", "/etc/hostname"]
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .flat_map(|t| t.lines().map(str::to_string).collect::<Vec<_>>())
        .filter(|l| l.len() >= 8)
        .collect();
    secrets.extend(
        std::env::vars()
            .map(|(k, v)| format!("{k}={v}"))
            .filter(|kv| kv.len() >= 12),
    );
    secrets.into_iter().find(|s| text.contains(s.as_str()))
}

#[test]
fn hostile_files_exit_2_located_and_leak_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let fifo = std::ffi::CString::new(d.join("fifo.lab").to_string_lossy().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    symlink("/etc/passwd", d.join("passwd.lab")).unwrap();
    symlink("/proc/self/environ", d.join("environ.lab")).unwrap();
    symlink("/dev/zero", d.join("zero.csv")).unwrap();
    let matrix = |path: &str| {
        format!("topology m {{ sockets = 1, cores = 2, transfer {{ llc = 40ns }}, matrix = \"{path}\" }}\n")
    };
    let sim = "modes = [sim], duration = 1ms";
    let plain = "lock = [tas], threads = 1..2";
    let values: Vec<String> = (0..150_000).map(|i| i.to_string()).collect();
    let cases: Vec<(&str, String, &str)> = vec![
        ("abs", "use \"/etc/passwd\"\n".into(), "`.lab` file"),
        ("up", "use \"../../../../etc/shadow\"\n".into(), "`.lab` file"),
        ("proc", "use \"/proc/self/environ\"\n".into(), "`.lab` file"),
        ("dev", "use \"/dev/zero\"\n".into(), "`.lab` file"),
        ("usefifo", "use \"fifo.lab\"\n".into(), "a FIFO"),
        ("link", "use \"passwd.lab\"\n".into(), "lies outside"),
        ("env", "use \"environ.lab\"\n".into(), "lies outside"),
        ("mshadow", matrix("/etc/shadow"), "lies outside"),
        ("mzero", matrix("zero.csv"), "lies outside"),
        ("mup", matrix("../../../../etc/passwd"), "lies outside"),
        ("long", format!("{}x\n", " ".repeat(70_000)), "found `x`"),
        ("deep", format!("lock a = {}\n", "[".repeat(100_000)), "nested more than"),
        ("ident", format!("lock {} = mcsx\n", "a".repeat(1_000_000)), "unknown lock algorithm"),
        (
            "terms",
            experiment("", plain, sim, &format!("  expect bypass_max[lock = tas, threads = 2] <= 1{}", " + 1".repeat(30_000))),
            "at most 32 arithmetic operators",
        ),
        ("reps", experiment("", plain, "modes = [sim], duration = 1ms, repetitions = 1000000000", ""), "at most 10000"),
        (
            "nodes",
            experiment("placement p = compact { nodes = [0, 10000000] }", plain, sim, "  placement = p"),
            "at most 255",
        ),
        ("lines", experiment("workload w2 = single { critical = 1ns, outside = 1ns, lines = 100000 }", plain, sim, ""), "at most 1024"),
        (
            "workers",
            experiment("workload w2 = wakeup { scenario = trade, policy = old, working_set = 1KiB, workers = 100000, burst = 1us, sleep = 1us }", plain, sim, ""),
            "at most 4096",
        ),
        ("threads", experiment("", "lock = [tas], threads = [300]", sim, ""), "more than the simulator handles"),
        (
            "samecpu",
            experiment("placement p = [0, 0, 0, 0]", "lock = [mcs], threads = [4]", sim, "  placement = p"),
            "two simulated threads on CPU 0",
        ),
        ("axis", experiment("", &format!("lock = [tas], threads = [1], x = [{}]", values.join(",")), sim, ""), "more than 100000 values"),
        ("huge", experiment("", "lock = [tas, mcs], threads = 1..4", "modes = [sim], duration = 100s, repetitions = 1000", ""), "more than the 24 h allowed"),
    ];
    for (name, text, message) in &cases {
        let file = d.join(format!("{name}.lab"));
        std::fs::write(&file, text).unwrap();
        let out = locklab()
            .arg("check")
            .arg(&file)
            .timeout(std::time::Duration::from_secs(120))
            .output()
            .unwrap();
        let (o, e) = (stdout(&out), stderr(&out));
        let head = &e[..e.len().min(3_000)];
        assert_eq!(out.status.code(), Some(2), "{name}: {head}");
        assert!(
            e.contains(message),
            "{name}: expected {message:?} in {head}"
        );
        assert!(
            e.contains(&format!("{name}.lab:")),
            "{name}: not located: {head}"
        );
        assert!(
            o.len() + e.len() < 20_000,
            "{name}: {} bytes of output",
            o.len() + e.len()
        );
        if let Some(leak) = leaks(&o).or_else(|| leaks(&e)) {
            panic!("{name}: shows {leak:?}");
        }
    }
    // The file named on the command line is held to the same kinds of file.
    let out = locklab().args(["check", "/dev/zero"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("a device, not a regular file"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn an_include_dir_lets_use_read_outside_the_experiment() {
    let tmp = tempfile::tempdir().unwrap();
    let (exp, lib) = (tmp.path().join("exp"), tmp.path().join("lib"));
    std::fs::create_dir_all(&exp).unwrap();
    std::fs::create_dir_all(&lib).unwrap();
    std::fs::write(lib.join("t.lab"), HEAD).unwrap();
    let main = exp.join("main.lab");
    std::fs::write(&main, "use \"../lib/t.lab\"\n").unwrap();
    let out = locklab().arg("check").arg(&main).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--include-dir"), "{}", stderr(&out));
    let out = locklab()
        .arg("check")
        .arg(&main)
        .arg("--include-dir")
        .arg(&lib)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}
