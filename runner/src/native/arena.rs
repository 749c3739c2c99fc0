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
use std::marker::PhantomData;
use std::ptr::NonNull;

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

/// Lines indexed without a bounds check that could unwind.
///
/// Native `Env` operations are inlined into the lock code, and an `async fn` whose
/// body may unwind carries a landing pad to poison its state: with a panicking bounds
/// check on every access, the lock code outgrew the inliner's limit and every acquire
/// in the measured loop became a call (~10 ns). So the line count is rounded up to a
/// power of two and an index is masked into range: always in bounds, one `and`, no
/// branch. Lock code only forms addresses of lines it allocated (the simulator, loom
/// models and debug builds check that; see the `debug_assert`), so the mask never
/// changes a correct address.
struct Lines {
    lines: Box<[Line]>,
    /// Lines allocated by the caller (the rest is padding up to the power of two).
    used: usize,
}

impl Lines {
    fn new(used: usize) -> Self {
        let n = used.max(1).next_power_of_two();
        Lines {
            lines: (0..n).map(|_| Line::new()).collect(),
            used,
        }
    }

    fn view(&self) -> LineView<'_> {
        LineView {
            base: NonNull::from(&self.lines[0]),
            mask: self.lines.len() - 1,
            used: self.used,
            _lines: PhantomData,
        }
    }
}

/// A borrowed view of [`Lines`] that a thread's `Env` keeps by value: the base and
/// the mask sit in the `Env` itself, one load each, instead of behind two pointers.
#[derive(Clone, Copy)]
pub(crate) struct LineView<'a> {
    base: NonNull<Line>,
    /// `lines.len() - 1`, the length being a power of two.
    mask: usize,
    used: usize,
    _lines: PhantomData<&'a [Line]>,
}

// SAFETY: a `LineView` is a shared borrow of `[Line]` (atomics: `Sync`), and is used
// only as one.
unsafe impl Send for LineView<'_> {}
unsafe impl Sync for LineView<'_> {}

impl<'a> LineView<'a> {
    #[inline(always)]
    pub(crate) fn word(self, l: usize, w: usize) -> &'a AtomicU64 {
        debug_assert!(
            l < self.used && w < WORDS_PER_LINE,
            "word {w} of line {l} is outside the arena ({} lines of {WORDS_PER_LINE} words)",
            self.used
        );
        // SAFETY: `base` points at `mask + 1` lines borrowed for 'a, and `l & mask` is
        // below that.
        let line = unsafe { self.base.add(l & self.mask).as_ref() };
        &line.words[w & (WORDS_PER_LINE - 1)]
    }
}

/// The shared memory of one native run: the lock and workload lines, plus one
/// instrumentation line per lock (grant counter, last holder's thread and node), kept
/// apart so that instrumentation never shares a line with lock state.
pub struct Arena {
    lines: Lines,
    instr: Lines,
}

impl Arena {
    /// `lines`: `LineAlloc::count()`; `locks`: the number of locks of the point.
    pub fn new(lines: usize, locks: usize) -> Self {
        Arena {
            lines: Lines::new(lines),
            instr: Lines::new(locks.max(1)),
        }
    }

    pub(crate) fn word(&self, a: Addr) -> &AtomicU64 {
        self.lines.view().word(a.line as usize, a.word as usize)
    }

    /// The lock and workload lines, as an `Env` keeps them.
    pub(crate) fn lines(&self) -> LineView<'_> {
        self.lines.view()
    }

    /// The instrumentation lines (one per lock), as an `Env` keeps them.
    pub(crate) fn instr(&self) -> LineView<'_> {
        self.instr.view()
    }

    /// Lines allocated for the run's locks and workload.
    pub fn len(&self) -> usize {
        self.lines.used
    }

    pub fn is_empty(&self) -> bool {
        self.lines.used == 0
    }

    /// Read a word outside any run (tests, checks).
    pub fn peek(&self, a: Addr) -> u64 {
        self.word(a).load(std::sync::atomic::Ordering::SeqCst)
    }
}
