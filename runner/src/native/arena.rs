//! The native line arena: one `Line` per `Env` cache line.
//!
//! Lines are 128-byte aligned, not 64: Intel's adjacent-line ("spatial") prefetcher
//! fetches 64-byte lines in 128-byte pairs, and several Arm cores have 128-byte
//! lines, so two 64-byte lines written by different threads can still interfere. The
//! simulator treats every arena line as an independent coherence unit; 128-byte
//! spacing makes that true natively too (crossbeam's `CachePadded` uses 128 on
//! x86_64 and aarch64 for the same reason). Only the first 64 bytes hold words.
//!
//! Under `--cfg loom` the atomics are loom's, so the lock code is model-checked
//! unchanged.

use crate::env::{Addr, WORDS_PER_LINE};

#[cfg(loom)]
pub(crate) use loom::sync::atomic::AtomicU64;
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::AtomicU64;

#[repr(C, align(128))]
pub struct Line {
    words: [AtomicU64; WORDS_PER_LINE],
}

impl Line {
    fn new() -> Self {
        Line {
            words: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }
}

/// The shared memory of one native run: the lock and workload lines, plus one
/// instrumentation line per lock (grant counter, last holder's node), kept apart so
/// that instrumentation never shares a line with lock state.
pub struct Arena {
    lines: Box<[Line]>,
    instr: Box<[Line]>,
}

impl Arena {
    /// `lines`: `LineAlloc::count()`; `locks`: the number of locks of the point.
    pub fn new(lines: usize, locks: usize) -> Self {
        Arena {
            lines: (0..lines).map(|_| Line::new()).collect(),
            instr: (0..locks.max(1)).map(|_| Line::new()).collect(),
        }
    }

    pub(crate) fn word(&self, a: Addr) -> &AtomicU64 {
        &self.lines[a.line as usize].words[a.word as usize]
    }

    pub(crate) fn instr(&self, lock: usize, w: usize) -> &AtomicU64 {
        &self.instr[lock].words[w]
    }

    pub fn len(&self) -> usize {
        self.lines.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// Read a word outside any run (tests, checks).
    pub fn peek(&self, a: Addr) -> u64 {
        self.word(a).load(std::sync::atomic::Ordering::SeqCst)
    }
}
