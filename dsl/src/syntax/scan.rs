//! The scanner that cuts a file into pieces (one top-level item, or one statement
//! of an experiment block) before pest sees them. It only knows about brackets,
//! strings and comments.

pub(super) const TOP_KEYWORDS: &[&str] = &[
    "use",
    "topology",
    "lock",
    "workload",
    "placement",
    "experiment",
];

/// Words that continue a statement when they start a line (a claim's `source`, a
/// trend's `over`, ...); any other name at the start of a line starts a new one.
pub(super) const CONTINUATION_WORDS: &[&str] = &[
    "source",
    "gap",
    "rho",
    "over",
    "in",
    "vs",
    "by",
    "log",
    "step",
    "and",
    "or",
    "not",
    "increasing",
    "decreasing",
];

fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}
fn is_ident_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

pub(super) fn word_at(src: &[u8], i: usize) -> &[u8] {
    let mut j = i;
    if j < src.len() && is_ident_start(src[j]) {
        while j < src.len() && is_ident_char(src[j]) {
            j += 1;
        }
    }
    &src[i..j]
}

/// A scan of `src[start..end]` that reports, for each line start, the bracket depth
/// there. Strings and comments are skipped. Returns (line-start offsets with the
/// offset of their first non-blank byte, depth at that point) and the maximum depth
/// with where it was reached.
pub(super) struct Scan {
    pub lines: Vec<(usize, usize, i64)>,
    pub max_depth: usize,
    pub max_at: usize,
}

pub(super) fn scan(src: &[u8], start: usize, end: usize, initial_depth: i64) -> Scan {
    let mut lines = Vec::new();
    let mut depth = initial_depth;
    let mut max_depth = 0usize;
    let mut max_at = start;
    let mut i = start;
    let mut at_line_start = true;
    while i < end {
        if at_line_start {
            let line = i;
            let mut j = i;
            while j < end && (src[j] == b' ' || src[j] == b'\t' || src[j] == b'\r') {
                j += 1;
            }
            lines.push((line, j, depth));
            at_line_start = false;
            i = j;
            continue;
        }
        let b = src[i];
        match b {
            b'\n' => {
                at_line_start = true;
                i += 1;
            }
            b'#' => {
                while i < end && src[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if i + 1 < end && src[i + 1] == b'/' => {
                while i < end && src[i] != b'\n' {
                    i += 1;
                }
            }
            b'"' => {
                i += 1;
                while i < end && src[i] != b'"' && src[i] != b'\n' {
                    if src[i] == b'\\' && i + 1 < end && src[i + 1] != b'\n' {
                        i += 1;
                    }
                    i += 1;
                }
                if i < end && src[i] == b'"' {
                    i += 1;
                }
            }
            b'{' | b'[' | b'(' => {
                depth += 1;
                if depth > 0 && depth as usize > max_depth {
                    max_depth = depth as usize;
                    max_at = i;
                }
                i += 1;
            }
            b'}' | b']' | b')' => {
                depth -= 1;
                i += 1;
            }
            _ => i += 1,
        }
    }
    Scan {
        lines,
        max_depth,
        max_at,
    }
}

/// Top-level pieces: a new piece starts at a line whose first word is a top-level
/// keyword, either at column 0 (always, so that a missing `}` costs one item) or
/// anywhere outside brackets.
pub(super) fn top_level_pieces(src: &str) -> Vec<(usize, usize)> {
    let bytes = src.as_bytes();
    let sc = scan(bytes, 0, bytes.len(), 0);
    let mut starts = vec![0usize];
    // Depth is recomputed from each boundary, so rescan incrementally.
    let mut depth_offset = 0i64;
    for &(line, first, depth) in &sc.lines {
        let w = word_at(bytes, first);
        let is_kw = !w.is_empty() && TOP_KEYWORDS.iter().any(|k| k.as_bytes() == w);
        if !is_kw {
            continue;
        }
        let rel_depth = depth - depth_offset;
        if first == line || rel_depth <= 0 {
            if first != 0 {
                starts.push(first);
            }
            depth_offset = depth;
        }
    }
    let mut out = Vec::new();
    for (k, &s) in starts.iter().enumerate() {
        let e = starts.get(k + 1).copied().unwrap_or(src.len());
        if s < e {
            out.push((s, e));
        }
    }
    out
}

/// True if the text holds nothing but blanks and comments.
pub(super) fn is_blank(text: &str) -> bool {
    let mut it = text.lines();
    for line in it.by_ref() {
        let t = line.trim();
        if !(t.is_empty() || t.starts_with('#') || t.starts_with("//")) {
            return false;
        }
    }
    true
}

/// The first `{` at or after `from` (outside strings and comments).
pub(super) fn open_brace(src: &[u8], from: usize, end: usize) -> Option<usize> {
    let mut i = from;
    while i < end {
        match src[i] {
            b'{' => return Some(i),
            b'#' => {
                while i < end && src[i] != b'\n' {
                    i += 1;
                }
            }
            b'"' => {
                i += 1;
                while i < end && src[i] != b'"' && src[i] != b'\n' {
                    i += 1;
                }
                i += 1;
            }
            _ => i += 1,
        }
    }
    None
}

/// The bracket that closes the one at `open` (outside strings and comments).
pub(super) fn matching_close(src: &[u8], open: usize, end: usize) -> Option<usize> {
    let mut depth = 1i64;
    let mut i = open + 1;
    while i < end {
        match src[i] {
            b'#' => {
                while i < end && src[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'/' if i + 1 < end && src[i + 1] == b'/' => {
                while i < end && src[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'"' => {
                i += 1;
                while i < end && src[i] != b'"' && src[i] != b'\n' {
                    if src[i] == b'\\' && i + 1 < end && src[i + 1] != b'\n' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            b'{' | b'[' | b'(' => depth += 1,
            b'}' | b']' | b')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_start_at_top_level_keywords() {
        let src = "# c\nlock a = mcs\nlock b = ticket {\nworkload w = single { critical = 1ns }\n";
        let firsts: Vec<&str> = top_level_pieces(src)
            .iter()
            .map(|&(s, e)| src[s..e].lines().next().unwrap())
            .collect();
        // The unclosed `{` of `b` does not swallow `workload w`: it starts at column 0.
        assert_eq!(
            firsts,
            [
                "# c",
                "lock a = mcs",
                "lock b = ticket {",
                "workload w = single { critical = 1ns }"
            ]
        );
    }
}
