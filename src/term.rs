//! Terminal conventions: whether escape sequences (colours, progress bars, cursor
//! movement) may be written, and how wide a table may be.
//!
//! Escapes go only to a terminal, and never when `NO_COLOR` is set to anything
//! (no-color.org) or `TERM` is `dumb`; `CLICOLOR_FORCE` (set, not `0`) asks for
//! colours on a pipe too (the tests use it to see that the others turn them off).

use std::io::IsTerminal;

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// The user turned escapes off: `NO_COLOR` (any non-empty value) or `TERM=dumb`.
pub fn escapes_refused() -> bool {
    env("NO_COLOR").is_some() || env("TERM").as_deref() == Some("dumb")
}

/// Colours on stderr, where diagnostics, clap's messages and progress go (stdout
/// carries tables and JSON, never escapes).
pub fn colour() -> bool {
    if escapes_refused() {
        return false;
    }
    env("CLICOLOR_FORCE").is_some_and(|v| v != "0") || std::io::stderr().is_terminal()
}

/// Animated output on stderr (a progress bar redrawn in place): only on a real
/// terminal.
pub fn animate() -> bool {
    !escapes_refused() && std::io::stderr().is_terminal()
}

/// Columns a table on stdout may use: `COLUMNS`, else the terminal's width, else 100.
pub fn width() -> usize {
    env("COLUMNS")
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|&w| w > 0)
        .or_else(|| terminal_size::terminal_size_of(std::io::stdout()).map(|(w, _)| w.0 as usize))
        .unwrap_or(100)
}
