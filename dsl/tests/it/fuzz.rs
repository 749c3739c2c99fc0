//! Bounded random mutation of every experiment file: deleting, inserting,
//! duplicating and swapping pieces never panics, and every diagnostic points inside
//! the file it names.

use locklab_dsl::{load, render, LoadOptions, MemLoader};
use std::collections::BTreeMap;
use std::path::Path;

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

const TOKENS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    "(",
    ")",
    "=",
    ",",
    "..",
    "$",
    "\"",
    "#",
    "//",
    "\n",
    " ",
    "0",
    "-1",
    "99999999999999999999",
    "1.5",
    "ms",
    "KiB",
    "GHz",
    "%",
    "µs",
    "±",
    "step",
    "x2",
    "where",
    "zip",
    "expect",
    "report",
    "over",
    "in",
    "lock",
    "threads",
    "sweep",
    "run",
    "use",
    "experiment",
    "topology",
    "cna",
    "v14",
    "1e308",
    "127/128",
    "0/0",
    "\u{feff}",
    "é",
    "&&",
    "||",
    "!",
    "<",
    ">=",
    "increasing",
    "over cpu",
    "speedup",
    "source \"x\"",
    "gap 2%",
];

fn mutate(rng: &mut Rng, text: &str) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    for _ in 0..=rng.below(3) {
        let n = chars.len();
        match rng.below(5) {
            0 if n > 0 => {
                let at = rng.below(n);
                let len = 1 + rng.below(12);
                chars.drain(at..(at + len).min(n));
            }
            1 => {
                let at = rng.below(n + 1);
                let tok = TOKENS[rng.below(TOKENS.len())];
                for (i, c) in tok.chars().enumerate() {
                    chars.insert(at + i, c);
                }
            }
            2 if n > 0 => {
                let at = rng.below(n);
                let len = 1 + rng.below(40);
                let piece: Vec<char> = chars[at..(at + len).min(n)].to_vec();
                let to = rng.below(n + 1);
                for (i, c) in piece.into_iter().enumerate() {
                    chars.insert(to + i, c);
                }
            }
            3 if n > 1 => {
                let (a, b) = (rng.below(n), rng.below(n));
                chars.swap(a, b);
            }
            _ => {
                let at = rng.below(n + 1);
                let c = char::from_u32(rng.below(0x250) as u32).unwrap_or('?');
                chars.insert(at, c);
            }
        }
    }
    chars.into_iter().collect()
}

fn corpus() -> BTreeMap<String, String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../experiments");
    let mut files = BTreeMap::new();
    for dir in [root.clone(), root.join("lib")] {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|e| e == "lab") {
                let rel = p
                    .strip_prefix(&root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                files.insert(rel, std::fs::read_to_string(&p).unwrap());
            }
        }
    }
    files
}

fn check_one(files: &BTreeMap<String, String>, main: &str, text: String, render_too: bool) {
    let mut files = files.clone();
    files.insert(main.to_string(), text);
    let checked = load(main, &MemLoader(files), &LoadOptions::default());
    for d in &checked.diagnostics {
        let src = checked
            .sources
            .iter()
            .find(|(p, _)| *p == d.file)
            .map(|(_, t)| t.as_str());
        let Some(src) = src else {
            panic!("diagnostic names an unknown file {:?}: {d}", d.file);
        };
        assert!(
            d.span.start <= d.span.end && d.span.end <= src.len(),
            "span {:?} outside {} ({} bytes): {d}",
            d.span,
            d.file,
            src.len()
        );
        assert!(src.is_char_boundary(d.span.start) && src.is_char_boundary(d.span.end));
        for l in &d.labels {
            assert!(l.span.end <= src.len() && src.is_char_boundary(l.span.start));
        }
        assert!(!d.message.is_empty());
    }
    assert_eq!(
        checked.plan.is_none(),
        checked.has_errors() || checked.is_library()
    );
    if render_too {
        let _ = render(&checked.diagnostics, &checked.sources, false);
    }
}

#[test]
fn mutated_experiments_never_panic() {
    let files = corpus();
    let mains: Vec<String> = files.keys().cloned().collect();
    // 2000 mutations per file, in every build: the dev profile optimises this crate
    // and pest (Cargo.toml), so the everyday `cargo test` runs them all.
    let per_file = 2000;
    std::thread::scope(|s| {
        for chunk in mains.chunks(mains.len().div_ceil(2)) {
            let files = &files;
            s.spawn(move || {
                for main in chunk {
                    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ main.len() as u64);
                    for i in 0..per_file {
                        let text = mutate(&mut rng, &files[main]);
                        check_one(files, main, text, i % 8 == 0);
                    }
                }
            });
        }
    });
}

/// Inputs the fuzzers found (`dsl/tests/fuzz/*.lab`, as `fuzz.lab` beside the
/// shipped libraries) hold to the same properties on every run.
#[test]
fn fuzz_finds_stay_fixed() {
    let files = corpus();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|e| e == "lab") {
            let text = std::fs::read_to_string(&p).unwrap();
            check_one(&files, "fuzz.lab", text, true);
            n += 1;
        }
    }
    assert!(n > 0, "no regression inputs in {}", dir.display());
}
