//! The native executor of the wake-up placement workload (`crate::workload::wakeup`):
//! a calibration.
//!
//! A 2-core host cannot run the scheduler experiment itself, so natively a wake-up
//! point measures the two costs the simulator's model charges:
//!
//! * **Wake-up latency.** Two threads ping-pong a wake-up with
//!   `std::thread::park`/`Thread::unpark` (a futex on Linux: the wakee really sleeps
//!   in `futex_wait` and the waker issues `futex_wake`). The waker stamps the clock
//!   just before `unpark`; the wakee reads it as soon as `park` returns with its turn.
//!   Both threads record each wake-up they receive as a wait of the workload's class in
//!   their `ThreadStats`, so `wait_p50_ns`/`wait_p99_ns` and the per-thread rows are
//!   the wake-up latency, and `throughput_ops_s` is wake-ups per second. The point's
//!   placement (its first two CPUs, e.g. `[0, 0]` or `[0, 1]`) is the *primary*
//!   arrangement, measured over most of the window; the other arrangement (cross-CPU
//!   when the placement is same-CPU, and the reverse) is measured afterwards for a
//!   shorter time, so every record carries both `wake_latency_same_cpu_*` and
//!   `wake_latency_cross_cpu_*`. `wake_latency_p50_ns`/`_p99_ns` are the primary's.
//! * **Refill cost after migrating.** One thread writes a buffer of the workload's
//!   `working_set` on one CPU, migrates with `sched_setaffinity` to the other, and
//!   times a read pass over it (one load per 64-byte line, in address order, so the
//!   prefetchers help as they would for a real message buffer), then an immediate
//!   re-read on the same CPU. It then writes on the CPU it is on and migrates back.
//!   `refill_ns` = median cold pass − median warm pass; `refill_ns_per_line` divides
//!   by the lines in the working set. Both may be slightly negative when noise
//!   exceeds the difference (a working set far below the private caches).
//!
//! Time: warm-up (primary arrangement, not recorded), then 70 % of the window on the
//! primary arrangement (the record's window), 20 % on the other one, and 10 % of
//! refill passes (at least three). The burst and sleep of the workload are not
//! used: the calibration runs no bursts, so the record's nominal durations are 0.
//!
//! The noise gate judges steal time only: sharing a CPU and sleeping are what the
//! same-CPU arrangement measures, so preemptions and CPU/wall ratios are reported
//! (`involuntary_switches_max`), not judged.

use super::env::{involuntary_switches, thread_cpu_ns, Clock};
use super::{noise, pin, Job, NativeOptions};
use crate::env::Handoff;
use crate::stats::{self, RunContext, ThreadStats, Window};
use crate::workload::wakeup::{self, LINE_BYTES};
use hdrhistogram::Histogram;
use locklab_model::plan::WakeupSpec;
use locklab_model::records::{RunRecord, SkipCause};
use locklab_model::topology::place;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Barrier, Mutex, OnceLock};
use std::thread::Thread;
use std::time::Duration;

/// Run one repetition of a wake-up point natively (see the module docs).
pub(super) fn run_point(job: &Job<'_>, spec: &WakeupSpec, mut ctx: RunContext) -> RunRecord {
    let Job {
        point,
        duration_ns,
        warmup_ns,
        opts,
        map,
        progress,
        ..
    } = *job;
    if map.len() < 2 {
        return stats::skipped(
            &ctx,
            2,
            SkipCause::Host,
            format!(
                "wake-up calibration compares same-CPU and cross-CPU wake-ups and needs 2 CPUs, \
                 the machine has {}",
                map.len()
            ),
        );
    }
    // Two threads ping-pong whatever the point's thread count: its placement's first
    // two CPUs are the primary arrangement.
    let slots = match place(&point.placement, map, 2) {
        Ok(s) => s,
        Err(e) => return stats::skipped(&ctx, 2, SkipCause::Host, e),
    };
    if opts.pin {
        if let Err(e) = pin::check_allowed(&slots, map) {
            return stats::skipped(&ctx, 2, SkipCause::Pinning, e);
        }
    }
    let a = map.cpus[slots[0].cpu].os_id;
    let b = map.cpus[slots[1].cpu].os_id;
    let other_cpu = if a != b {
        Some(a)
    } else {
        let allowed = pin::allowed_cpus();
        map.cpus
            .iter()
            .map(|c| c.os_id)
            .find(|&os| os != a && allowed.as_ref().is_none_or(|l| l.contains(&os)))
    };
    let Some(other_cpu) = other_cpu else {
        return stats::skipped(
            &ctx,
            2,
            SkipCause::Pinning,
            format!("no second CPU besides {a} that this process may use"),
        );
    };
    let cpus = Cpus {
        a,
        b,
        other_b: other_cpu,
        nodes: [slots[0].node, slots[1].node],
    };
    ctx.critical_nominal_ns = 0.0;
    ctx.critical_achieved_ns = 0.0;
    ctx.outside_nominal_ns = 0.0;
    ctx.outside_achieved_ns = 0.0;
    ctx.extra.insert(
        "clock_tsc".into(),
        if Clock::host().is_tsc() { 1.0 } else { 0.0 },
    );

    let mut attempt = 0;
    loop {
        let before = noise::Snapshot::take();
        let out = match run_once(spec, &cpus, duration_ns, warmup_ns, opts, progress) {
            Ok(o) => o,
            Err(e) => return stats::skipped(&ctx, 2, SkipCause::Pinning, e),
        };
        let after = noise::Snapshot::take();
        let judged = opts.gate.judge(
            &before,
            &after,
            &noise::Observed {
                ratios: &[],
                preempted: &[],
                window_ns: duration_ns,
                may_sleep: true,
                work: &[],
                pair_ns: None,
            },
        );
        let last = attempt >= opts.noise_retries;
        if judged.disturbed.is_none() || last {
            let mut ctx = ctx;
            ctx.ops = Some(out.stats.iter().map(|t| t.total_acquisitions()).sum());
            judged.record(&mut ctx, opts.pin, attempt + 1);
            let same_primary = cpus.a == cpus.b;
            let (same, cross) = if same_primary {
                (&out.primary, &out.secondary)
            } else {
                (&out.secondary, &out.primary)
            };
            let e = &mut ctx.extra;
            wakeup::record_latency(
                e,
                quantile(&out.primary, 0.5),
                quantile(&out.primary, 0.99),
                out.primary.len(),
            );
            e.insert("wake_latency_same_cpu_p50_ns".into(), quantile(same, 0.5));
            e.insert("wake_latency_same_cpu_p99_ns".into(), quantile(same, 0.99));
            e.insert("wake_latency_cross_cpu_p50_ns".into(), quantile(cross, 0.5));
            e.insert(
                "wake_latency_cross_cpu_p99_ns".into(),
                quantile(cross, 0.99),
            );
            e.insert(
                "wakeups_other_arrangement".into(),
                out.secondary.len() as f64,
            );
            e.insert("wake_same_cpu".into(), if same_primary { 1.0 } else { 0.0 });
            e.insert(
                "involuntary_switches_max".into(),
                out.preempted.iter().copied().max().unwrap_or(0) as f64,
            );
            let r = &out.refill;
            e.insert("refill_lines".into(), r.lines as f64);
            e.insert("refill_passes".into(), r.passes as f64);
            e.insert("refill_cold_ns".into(), r.cold_ns);
            e.insert("refill_warm_ns".into(), r.warm_ns);
            e.insert("refill_ns".into(), r.cold_ns - r.warm_ns);
            e.insert(
                "refill_ns_per_line".into(),
                (r.cold_ns - r.warm_ns) / r.lines.max(1) as f64,
            );
            return stats::summarize(&ctx, &out.stats);
        }
        attempt += 1;
    }
}

/// OS CPU ids: thread 0 on `a`; thread 1 on `b` (primary), then on `other_b`.
struct Cpus {
    a: u32,
    b: u32,
    other_b: u32,
    nodes: [u32; 2],
}

struct Outcome {
    stats: Vec<ThreadStats>,
    primary: Histogram<u64>,
    secondary: Histogram<u64>,
    preempted: Vec<u64>,
    refill: Refill,
}

#[derive(Debug, Clone, Copy)]
struct Refill {
    lines: usize,
    passes: usize,
    cold_ns: f64,
    warm_ns: f64,
}

fn new_hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 1_000_000_000_000, 3).expect("static histogram bounds")
}

fn quantile(h: &Histogram<u64>, q: f64) -> f64 {
    if h.is_empty() {
        f64::NAN
    } else {
        h.value_at_quantile(q) as f64
    }
}

/// The state two threads share for one ping-pong.
struct Pingpong {
    /// Thread `i` acts when `turn % 2 == i`.
    turn: AtomicU64,
    /// Clock stamp taken just before the last `unpark`; 0 once consumed.
    sent_ns: AtomicU64,
    /// One flag per phase: set by the thread that saw the phase end.
    stop: [AtomicBool; 3],
    handles: [OnceLock<Thread>; 2],
}

impl Pingpong {
    /// Ping-pong until `end_ns`; `rec(latency, at)` for each wake-up received.
    fn run(
        &self,
        me: usize,
        phase: usize,
        clock: Clock,
        end_ns: u64,
        rec: &mut dyn FnMut(u64, u64),
    ) {
        let other = self.handles[1 - me]
            .get()
            .expect("set before the first phase");
        let stop = &self.stop[phase];
        loop {
            loop {
                if stop.load(Ordering::Acquire) {
                    return;
                }
                if self.turn.load(Ordering::Acquire) % 2 == me as u64 {
                    break;
                }
                std::thread::park();
            }
            let now = clock.read();
            let sent = self.sent_ns.swap(0, Ordering::Relaxed);
            if sent != 0 && sent <= now {
                rec(now - sent, now);
            }
            if now >= end_ns {
                stop.store(true, Ordering::Release);
                other.unpark();
                return;
            }
            self.sent_ns.store(clock.read().max(1), Ordering::Relaxed);
            self.turn.fetch_add(1, Ordering::Release);
            other.unpark();
        }
    }
}

fn run_once(
    spec: &WakeupSpec,
    cpus: &Cpus,
    duration_ns: u64,
    warmup_ns: u64,
    opts: &NativeOptions,
    progress: &dyn Fn(f64),
) -> Result<Outcome, String> {
    let clock = Clock::host();
    let pp = Pingpong {
        turn: AtomicU64::new(0),
        sent_ns: AtomicU64::new(0),
        stop: Default::default(),
        handles: Default::default(),
    };
    let error = Mutex::new(None::<String>);
    let abort = AtomicBool::new(false);
    let go_ns = AtomicU64::new(0);
    let start = Barrier::new(3);
    let phase = Barrier::new(2);
    // Phase ends, relative to `go`.
    let warm_end = warmup_ns;
    let prim_end = warm_end + duration_ns * 7 / 10;
    let sec_end = prim_end + duration_ns * 2 / 10;
    let refill_end = warm_end + duration_ns;
    let total = Duration::from_nanos(refill_end);

    let results = std::thread::scope(|s| {
        let handles: Vec<_> = (0..2usize)
            .map(|me| {
                let (pp, error, abort, go_ns, start, phase) =
                    (&pp, &error, &abort, &go_ns, &start, &phase);
                std::thread::Builder::new()
                    .name(format!("locklab-wake-{me}"))
                    .spawn_scoped(s, move || {
                        let fail = |e: String| {
                            abort.store(true, Ordering::SeqCst);
                            error.lock().unwrap().get_or_insert(e);
                        };
                        let first_cpu = if me == 0 { cpus.a } else { cpus.b };
                        if opts.pin {
                            if let Err(e) = pin::pin_current(first_cpu) {
                                fail(format!(
                                    "pinning thread {me} to CPU {first_cpu} failed: {e}"
                                ));
                            }
                        }
                        pp.handles[me]
                            .set(std::thread::current())
                            .expect("set once");
                        start.wait();
                        let go = go_ns.load(Ordering::SeqCst);
                        let window = Window {
                            start_ns: go + warm_end,
                            end_ns: go + prim_end,
                        };
                        let mut stats = ThreadStats::new(
                            first_cpu,
                            cpus.nodes[me],
                            window,
                            &[wakeup::CLASS],
                            0,
                        );
                        let mut primary = new_hist();
                        let mut secondary = new_hist();
                        if abort.load(Ordering::SeqCst) {
                            return (stats, primary, secondary, 0, None);
                        }
                        // Warm-up, then the recorded window, on the point's placement.
                        pp.run(me, 0, clock, go + warm_end, &mut |_, _| {});
                        phase.wait();
                        let (c0, v0) = (thread_cpu_ns(), involuntary_switches());
                        pp.run(me, 1, clock, go + prim_end, &mut |lat, at| {
                            stats.record_acquire(0, at, lat, 0, Handoff::Unheld);
                            if window.contains(at) {
                                primary.saturating_record(lat.max(1));
                            }
                        });
                        stats.cpu_ns = Some(thread_cpu_ns().saturating_sub(c0));
                        let preempted = involuntary_switches().saturating_sub(v0);
                        // The other arrangement: thread 1 moves.
                        phase.wait();
                        if me == 1 && opts.pin {
                            if let Err(e) = pin::pin_current(cpus.other_b) {
                                fail(format!(
                                    "moving thread 1 to CPU {} failed: {e}",
                                    cpus.other_b
                                ));
                            }
                        }
                        phase.wait();
                        pp.run(me, 2, clock, go + sec_end, &mut |lat, _| {
                            secondary.saturating_record(lat.max(1));
                        });
                        let refill = if me == 0 && !abort.load(Ordering::SeqCst) {
                            let (x, y) = if cpus.a == cpus.b {
                                (cpus.a, cpus.other_b)
                            } else {
                                (cpus.a, cpus.b)
                            };
                            match refill(
                                spec.working_set_bytes,
                                x,
                                y,
                                opts.pin,
                                clock,
                                go + refill_end,
                            ) {
                                Ok(r) => Some(r),
                                Err(e) => {
                                    fail(e);
                                    None
                                }
                            }
                        } else {
                            None
                        };
                        (stats, primary, secondary, preempted, refill)
                    })
                    .expect("spawning a wake-up thread")
            })
            .collect();
        go_ns.store(clock.read(), Ordering::SeqCst);
        start.wait();
        super::wait_reporting_progress(total, &abort, progress);
        handles
            .into_iter()
            .map(|h| h.join().expect("a wake-up thread panicked"))
            .collect::<Vec<_>>()
    });
    if let Some(e) = error.into_inner().unwrap() {
        return Err(e);
    }
    let mut primary = new_hist();
    let mut secondary = new_hist();
    let mut stats = Vec::new();
    let mut preempted = Vec::new();
    let mut refill_out = None;
    for (st, p, q, v, r) in results {
        primary.add(&p).expect("same bounds");
        secondary.add(&q).expect("same bounds");
        stats.push(st);
        preempted.push(v);
        refill_out = refill_out.or(r);
    }
    Ok(Outcome {
        stats,
        primary,
        secondary,
        preempted,
        refill: refill_out.unwrap_or(Refill {
            lines: 0,
            passes: 0,
            cold_ns: f64::NAN,
            warm_ns: f64::NAN,
        }),
    })
}

/// Timed passes: write on one CPU, migrate, read cold, read warm; alternate CPUs.
/// At least three rounds, then until `end_ns`. Unpinned: no migration, so NaN.
fn refill(
    bytes: u64,
    x: u32,
    y: u32,
    pin: bool,
    clock: Clock,
    end_ns: u64,
) -> Result<Refill, String> {
    let lines = (wakeup::lines(bytes) as usize).max(1);
    let words = LINE_BYTES as usize / std::mem::size_of::<u64>();
    let mut buf = vec![0u64; lines * words];
    if !pin {
        return Ok(Refill {
            lines,
            passes: 0,
            cold_ns: f64::NAN,
            warm_ns: f64::NAN,
        });
    }
    let (mut here, mut there) = (x, y);
    let mut cold = Vec::new();
    let mut warm = Vec::new();
    let mut sink = 0u64;
    let mut round = 0u64;
    loop {
        pin::pin_current(here).map_err(|e| format!("pinning to CPU {here} failed: {e}"))?;
        round += 1;
        for l in 0..lines {
            // SAFETY: in bounds; volatile so the pass is not elided.
            unsafe { std::ptr::write_volatile(buf.as_mut_ptr().add(l * words), round + l as u64) };
        }
        pin::pin_current(there).map_err(|e| format!("migrating to CPU {there} failed: {e}"))?;
        let t0 = clock.read();
        sink = sink.wrapping_add(read_pass(&buf, lines, words));
        let t1 = clock.read();
        sink = sink.wrapping_add(read_pass(&buf, lines, words));
        let t2 = clock.read();
        cold.push(t1.saturating_sub(t0));
        warm.push(t2.saturating_sub(t1));
        std::mem::swap(&mut here, &mut there);
        if cold.len() >= 3 && clock.read() >= end_ns {
            break;
        }
    }
    std::hint::black_box(sink);
    Ok(Refill {
        lines,
        passes: cold.len(),
        cold_ns: median(&mut cold),
        warm_ns: median(&mut warm),
    })
}

fn read_pass(buf: &[u64], lines: usize, words: usize) -> u64 {
    let mut s = 0u64;
    for l in 0..lines {
        // SAFETY: in bounds; volatile so every line is loaded.
        s = s.wrapping_add(unsafe { std::ptr::read_volatile(buf.as_ptr().add(l * words)) });
    }
    s
}

fn median(v: &mut [u64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_unstable();
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2] as f64
    } else {
        (v[n / 2 - 1] as f64 + v[n / 2] as f64) / 2.0
    }
}
