//! The file policy of `FsLoader`, on a real directory tree: what `use` and `matrix`
//! may read, what they refuse (and that a refusal never shows the file), and one
//! file reached by several paths being one file.

use locklab_dsl::{load, render, Checked, FsLoader, LoadOptions};
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

const SECRET: &str = "SECRET-MARKER-4b1d";

/// An experiment directory and a directory outside it holding a secret.
struct Tree {
    _tmp: tempfile::TempDir,
    exp: PathBuf,
    outside: PathBuf,
}

fn tree() -> Tree {
    let tmp = tempfile::tempdir().unwrap();
    let exp = tmp.path().join("exp");
    let outside = tmp.path().join("outside");
    std::fs::create_dir_all(&exp).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(
        outside.join("secret.lab"),
        format!("{SECRET} = this is not experiment language\n"),
    )
    .unwrap();
    std::fs::write(outside.join("secret.csv"), format!("{SECRET},1\n2,3\n")).unwrap();
    Tree {
        _tmp: tmp,
        exp,
        outside,
    }
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn check(main: &Path, include_dirs: &[PathBuf]) -> (Checked, String) {
    let loader = FsLoader::for_experiment(main, include_dirs);
    let c = load(&main.to_string_lossy(), &loader, &LoadOptions::default());
    let shown = render(&c.diagnostics, &c.sources, false);
    (c, shown)
}

/// One error, whose message contains `what`; the secret appears nowhere.
fn refused(c: &Checked, shown: &str, what: &str) {
    let errors: Vec<_> = c.diagnostics.iter().filter(|d| d.is_error()).collect();
    assert_eq!(errors.len(), 1, "{shown}");
    assert!(errors[0].message.contains(what), "{shown}");
    assert!(
        !shown.contains(SECRET),
        "the refusal shows the file:\n{shown}"
    );
    assert!(c.sources.iter().all(|(_, t)| !t.contains(SECRET)));
}

#[test]
fn use_and_matrix_read_only_inside_the_experiments_tree() {
    let t = tree();
    symlink(t.outside.join("secret.lab"), t.exp.join("link.lab")).unwrap();
    for target in [
        "link.lab".to_string(),
        "../outside/secret.lab".to_string(),
        t.outside.join("secret.lab").to_string_lossy().into_owned(),
    ] {
        let main = write(&t.exp, "main.lab", &format!("use \"{target}\"\n"));
        let (c, shown) = check(&main, &[]);
        refused(&c, &shown, "lies outside the experiment's directory");
        assert!(shown.contains("main.lab:1:5"), "{shown}");
        assert!(shown.contains("--include-dir"), "{shown}");
    }
    let main = write(
        &t.exp,
        "main.lab",
        "topology t { sockets = 1, cores = 2, transfer { llc = 40ns }, matrix = \"../outside/secret.csv\" }\n",
    );
    let (c, shown) = check(&main, &[]);
    refused(&c, &shown, "lies outside the experiment's directory");
}

#[test]
fn an_include_dir_admits_its_tree() {
    let t = tree();
    write(
        &t.outside,
        "shared.lab",
        "topology t { sockets = 1, cores = 2, transfer { llc = 40ns } }\n",
    );
    let main = write(&t.exp, "main.lab", "use \"../outside/shared.lab\"\n");
    let (c, shown) = check(&main, std::slice::from_ref(&t.outside));
    assert!(c.diagnostics.is_empty(), "{shown}");
    assert!(c.is_library());
}

#[test]
fn devices_fifos_and_pseudo_files_are_refused_unread() {
    let t = tree();
    let fifo = t.exp.join("fifo.lab");
    let c_path = std::ffi::CString::new(fifo.to_string_lossy().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
    symlink("/dev/zero", t.exp.join("zero.lab")).unwrap();
    symlink("/proc/self/environ", t.exp.join("environ.lab")).unwrap();
    for (name, why) in [
        ("fifo.lab", "a FIFO, not a regular file"),
        ("zero.lab", "a device, not a regular file"),
        ("environ.lab", "kernel pseudo-file"),
    ] {
        let main = write(&t.exp, "main.lab", &format!("use \"{name}\"\n"));
        // /dev and /proc are named as include directories: the kind of file refuses
        // them, not where they lie.
        let dirs = [PathBuf::from("/dev"), PathBuf::from("/proc")];
        let (c, shown) = check(&main, &dirs);
        refused(&c, &shown, why);
        assert!(shown.contains("main.lab:1:5"), "{name}: {shown}");
    }
    // The file given on the command line itself.
    let (c, shown) = check(Path::new("/dev/zero"), &[]);
    refused(&c, &shown, "a device");
    assert!(c.sources.is_empty());
}

#[test]
fn oversized_binary_and_non_lab_files_are_refused() {
    let t = tree();
    let big = "# padding\n".repeat(110_000);
    write(&t.exp, "big.lab", &big);
    std::fs::write(t.exp.join("bin.lab"), b"lock a = mcs\0\x01\x02").unwrap();
    std::fs::write(t.exp.join("data.csv"), format!("{SECRET}\n")).unwrap();
    for (target, why) in [
        ("big.lab", "larger than the 1 MiB"),
        ("bin.lab", "not a text file"),
        ("data.csv", "`use` names a `.lab` file"),
    ] {
        let main = write(&t.exp, "main.lab", &format!("use \"{target}\"\n"));
        let (c, shown) = check(&main, &[]);
        refused(&c, &shown, why);
    }
}

#[test]
fn a_matrix_that_is_not_a_csv_is_not_quoted() {
    let t = tree();
    write(&t.exp, "m.csv", &format!("0,1\n{SECRET},0\n"));
    let main = write(
        &t.exp,
        "main.lab",
        "topology t { sockets = 1, cores = 2, transfer { llc = 40ns }, matrix = \"m.csv\" }\n",
    );
    let (c, shown) = check(&main, &[]);
    let errors: Vec<_> = c.diagnostics.iter().filter(|d| d.is_error()).collect();
    assert_eq!(errors.len(), 1, "{shown}");
    assert!(
        errors[0]
            .message
            .contains("line 2, column 1: not a latency"),
        "{shown}"
    );
    assert!(!shown.contains(SECRET), "{shown}");
}

#[test]
fn one_file_by_several_paths_is_loaded_once() {
    let t = tree();
    std::fs::create_dir(t.exp.join("lib")).unwrap();
    symlink(".", t.exp.join("A")).unwrap();
    symlink(".", t.exp.join("B")).unwrap();
    // A chain of 17 files, each using the next through two symbolic links: 2^17
    // loads if files were told apart by path, 18 by identity.
    for i in 0..17 {
        write(
            &t.exp,
            &format!("l{i:02}.lab"),
            &format!(
                "use \"A/l{:02}.lab\"\nuse \"B/l{:02}.lab\"\nlock k{i} = mcs\n",
                i + 1,
                i + 1
            ),
        );
    }
    write(&t.exp, "l17.lab", "lock last = ticket\n");
    let main = write(&t.exp, "main.lab", "use \"l00.lab\"\n");
    let (c, shown) = check(&main, &[]);
    assert!(c.diagnostics.is_empty(), "{shown}");
    assert_eq!(c.sources.len(), 19);

    // The same library by `..` and by a link: defined once, not twice.
    write(&t.exp, "lib/defs.lab", "lock shared = mcs\n");
    let main = write(
        &t.exp,
        "main.lab",
        "use \"lib/defs.lab\"\nuse \"lib/../lib/defs.lab\"\nuse \"A/lib/defs.lab\"\n",
    );
    let (c, shown) = check(&main, &[]);
    assert!(c.diagnostics.is_empty(), "{shown}");
    assert_eq!(c.sources.len(), 2);
}

#[test]
fn a_cycle_through_a_symbolic_link_is_an_include_cycle() {
    let t = tree();
    symlink(".", t.exp.join("A")).unwrap();
    let main = write(&t.exp, "main.lab", "use \"A/main.lab\"\n");
    let (c, shown) = check(&main, &[]);
    refused(&c, &shown, "include cycle");
    // A link that points at itself cannot be resolved at all.
    symlink("self.lab", t.exp.join("self.lab")).unwrap();
    let main = write(&t.exp, "main.lab", "use \"self.lab\"\n");
    let (c, shown) = check(&main, &[]);
    refused(&c, &shown, "too many levels of symbolic links");
}
