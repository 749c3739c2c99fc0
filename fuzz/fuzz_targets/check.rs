//! Any text as an experiment file, beside the shipped libraries: loading, checking
//! and rendering never panic, and every diagnostic points inside the file it names,
//! on character boundaries.

#![no_main]

use libfuzzer_sys::fuzz_target;
use locklab_dsl::{load, render, LoadOptions, MemLoader};

/// The shipped libraries, so that `use "lib/..."` reaches real definitions.
const LIBS: &[(&str, &str)] = &[
    ("lib/box8.lab", include_str!("../../experiments/lib/box8.lab")),
    ("lib/x5-4.lab", include_str!("../../experiments/lib/x5-4.lab")),
    ("lib/x5570.lab", include_str!("../../experiments/lib/x5570.lab")),
    ("lib/zone_lock.lab", include_str!("../../experiments/lib/zone_lock.lab")),
];

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut files: std::collections::BTreeMap<String, String> = LIBS
        .iter()
        .map(|(p, t)| (p.to_string(), t.to_string()))
        .collect();
    files.insert("fuzz.lab".into(), text.into());
    let checked = load("fuzz.lab", &MemLoader(files), &LoadOptions::default());
    for d in &checked.diagnostics {
        let src = checked
            .sources
            .iter()
            .find(|(p, _)| *p == d.file)
            .map(|(_, t)| t.as_str())
            .unwrap_or_else(|| panic!("diagnostic names an unknown file {:?}: {d}", d.file));
        for span in std::iter::once(d.span).chain(d.labels.iter().map(|l| l.span)) {
            assert!(span.start <= span.end && span.end <= src.len(), "{span:?}: {d}");
            assert!(
                src.is_char_boundary(span.start) && src.is_char_boundary(span.end),
                "{span:?} splits a character: {d}"
            );
        }
        assert!(!d.message.is_empty());
    }
    assert_eq!(
        checked.plan.is_none(),
        checked.has_errors() || checked.is_library()
    );
    let shown = render(&checked.diagnostics, &checked.sources, false);
    // At most 100 diagnostics are shown, each a window of a few lines.
    assert!(shown.len() <= 400 * 1024, "{} bytes of diagnostics", shown.len());
});
