//! What this host's memory operations cost, measured with pinned threads, for
//! `locklab topo --measure`: the calibration half of validating the simulator on a
//! machine one owns.
//!
//! - [`transfer_latency`]: one-way latency of handing a cache line between two CPUs,
//!   by ping-pong, with a read-modify-write ([`Handoff::Cas`]: the transfer the
//!   topology's `transfer` levels price) or with a plain load that waits and a plain
//!   store that answers ([`Handoff::LoadStore`]: a load miss plus a store's
//!   ownership request, as a spinning waiter and a releasing holder do).
//! - [`owned_costs`]: an uncontended read-modify-write and a full fence on one CPU
//!   (`atomic` and `memory { fence }`).
//! - [`measure_report`]: all of them for one CPU pair per distance level, and the
//!   host as one `topology` item with the measured values.
//!
//! Every number is the best of several rounds: on a shared machine the best round is
//! the one least disturbed, and what the model wants is the undisturbed cost.

use crate::host::{topology_as_lab_with, Measured, Transfer};
use crate::native::pin;
use locklab_model::manifest::HostInfo;
use locklab_model::topology::Distance;
use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How the two CPUs of a ping-pong hand the line over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handoff {
    /// Each side takes its turn with a compare-and-swap.
    Cas,
    /// Each side waits with plain loads and answers with a plain store.
    LoadStore,
}

#[repr(align(128))]
struct Line(AtomicU64);

/// One-way latency, ns, of handing one cache line back and forth between OS CPUs
/// `a` and `b` (round trip / 2; best of five rounds of 20,000 round trips). `None`
/// if pinning fails or a thread does not get its CPU within a second.
pub fn transfer_latency(a: u32, b: u32, how: Handoff) -> Option<f64> {
    const ROUNDS: u64 = 20_000;
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        let line = Line(AtomicU64::new(0));
        let failed = AtomicU64::new(0);
        let deadline = Instant::now() + Duration::from_secs(1);
        let elapsed = std::thread::scope(|s| {
            let (line, failed) = (&line, &failed);
            let player = move |cpu: u32, parity: u64| {
                if pin::pin_current(cpu).is_err() {
                    failed.store(1, Ordering::SeqCst);
                }
                let start = Instant::now();
                let mut i = parity;
                while i < 2 * ROUNDS {
                    // Wait for our turn (value == i), then pass it on (i + 1).
                    let mut spins = 0u32;
                    loop {
                        let mine = match how {
                            Handoff::Cas => line
                                .0
                                .compare_exchange(i, i + 1, Ordering::AcqRel, Ordering::Relaxed)
                                .is_ok(),
                            Handoff::LoadStore => {
                                let ok = line.0.load(Ordering::Acquire) == i;
                                if ok {
                                    line.0.store(i + 1, Ordering::Release);
                                }
                                ok
                            }
                        };
                        if mine {
                            break;
                        }
                        if failed.load(Ordering::Relaxed) != 0 {
                            return start.elapsed();
                        }
                        spins = spins.wrapping_add(1);
                        if spins % 4096 == 0 && Instant::now() > deadline {
                            failed.store(1, Ordering::SeqCst);
                            return start.elapsed();
                        }
                        std::hint::spin_loop();
                    }
                    i += 2;
                }
                start.elapsed()
            };
            // Both players on threads of their own: pinning the caller would leave it
            // pinned.
            let hb = s.spawn(move || player(b, 1));
            let ha = s.spawn(move || player(a, 0));
            let _ = hb.join();
            ha.join().unwrap_or_default()
        });
        if failed.load(Ordering::SeqCst) != 0 {
            return None;
        }
        best = best.min(elapsed.as_nanos() as f64 / (2 * ROUNDS) as f64);
    }
    Some(best)
}

/// Costs on one CPU, ns: an uncontended compare-and-swap on a line it owns, and a
/// full fence with nothing in the store buffer. Each is the best of five rounds of a
/// million operations, less the same loop without the operation.
pub fn owned_costs(cpu: u32) -> Option<(f64, f64)> {
    const N: u64 = 1_000_000;
    std::thread::scope(|s| {
        s.spawn(move || {
            pin::pin_current(cpu).ok()?;
            let line = Line(AtomicU64::new(0));
            let per_op = |f: &dyn Fn(u64)| {
                let mut best = f64::INFINITY;
                for _ in 0..5 {
                    let t = Instant::now();
                    for i in 0..N {
                        f(black_box(i));
                    }
                    best = best.min(t.elapsed().as_nanos() as f64 / N as f64);
                }
                best
            };
            let empty = per_op(&|i| {
                black_box(i);
            });
            let cas = per_op(&|i| {
                let _ = black_box(&line.0).compare_exchange(
                    i,
                    i + 1,
                    Ordering::AcqRel,
                    Ordering::Relaxed,
                );
            });
            let fence = per_op(&|i| {
                black_box(i);
                std::sync::atomic::fence(Ordering::SeqCst);
            });
            Some(((cas - empty).max(0.1), (fence - empty).max(0.1)))
        })
        .join()
        .ok()
        .flatten()
    })
}

/// ns per operation of the native single-lock loop (no work, no data lines) with an
/// uncontended TAS lock, pinned to `cpu`: the lock's swap and release plus the loop
/// and its bookkeeping. Best of three rounds (`bench::harness`).
pub fn tas_loop_ns(cpu: u32) -> Option<f64> {
    std::thread::scope(|s| {
        s.spawn(move || {
            pin::pin_current(cpu).ok()?;
            let work = crate::native::calibrate();
            Some(crate::native::bench::harness(
                &work,
                &locklab_model::plan::LockAlgo::Tas,
                2_000_000,
            ))
        })
        .join()
        .ok()
        .flatten()
    })
}

/// The simulator's constants from the measurements, fitted so that it prices each
/// measured scenario as measured (`docs/validation.md`):
///
/// - a CAS hand-off costs the simulator one transfer plus the atomic, so a level's
///   `transfer` is the CAS hand-off less the atomic;
/// - a load/store hand-off (the writer holds a shared copy: it upgrades, then the
///   waiter re-reads) costs `upgrade` × T + T, so `upgrade` = (load/store − T) / T,
///   taken at the cheapest level measured beyond the SMT sibling, within [0, 1];
/// - one uncontended TAS operation of the native loop costs the simulator the atomic
///   plus `overhead`, so `overhead` is the loop's time less the atomic.
fn fit(
    by_level: &BTreeMap<Distance, (u32, u32, f64, Option<f64>)>,
    atomic: f64,
) -> (BTreeMap<Distance, f64>, Option<f64>) {
    let transfer: BTreeMap<Distance, f64> = by_level
        .iter()
        .map(|(d, x)| (*d, (x.2 - atomic).max(1.0)))
        .collect();
    let upgrade = by_level
        .iter()
        .filter(|(d, _)| **d != Distance::Smt)
        .chain(by_level.iter())
        .find_map(|(d, x)| {
            let t = transfer[d];
            x.3.map(|ls| ((ls - t) / t).clamp(0.0, 1.0))
        });
    (transfer, upgrade)
}

/// `locklab topo --measure`: the costs above for one CPU pair per distance level the
/// host has (as comments), and the host as one `topology` item using them.
/// `name` names the topology item (default `host_<hostname>`).
pub fn measure_report(h: &HostInfo, name: Option<&str>) -> String {
    let map = h.topology.clone().unwrap_or_else(crate::host::cpu_map);
    let allowed = pin::allowed_cpus().unwrap_or_default();
    let usable = |cpu: u32| allowed.is_empty() || allowed.contains(&cpu);
    let mut by_level: BTreeMap<Distance, (u32, u32, f64, Option<f64>)> = BTreeMap::new();
    for i in 0..map.len() {
        for j in (i + 1)..map.len() {
            let d = map.distance(i, j);
            let (a, b) = (map.cpus[i].os_id, map.cpus[j].os_id);
            if by_level.contains_key(&d) || !usable(a) || !usable(b) {
                continue;
            }
            if let Some(cas) = transfer_latency(a, b, Handoff::Cas) {
                let ls = transfer_latency(a, b, Handoff::LoadStore);
                by_level.insert(d, (a, b, cas, ls));
            }
        }
    }
    let first = map.cpus.iter().map(|c| c.os_id).find(|&c| usable(c));
    let owned = first.and_then(owned_costs);
    let tas_loop = first.and_then(tas_loop_ns);
    let mut s = String::from("# measured on this host (best of five rounds, one-way for pairs)\n");
    match owned {
        Some((atomic, fence)) => s.push_str(&format!(
            "#   one CPU: compare-and-swap on an owned line {atomic:.1} ns, full fence {fence:.1} ns\n"
        )),
        None => s.push_str("#   one CPU: not measured (pinning refused)\n"),
    }
    if let Some(l) = tas_loop {
        s.push_str(&format!(
            "#   one CPU: an uncontended TAS operation of the native loop {l:.1} ns\n"
        ));
    }
    if by_level.is_empty() {
        s.push_str(
            "#   no pair of CPUs could be measured (fewer than 2 CPUs, or pinning refused):\n\
             #   the transfer levels below are starting values, not measurements\n",
        );
    }
    for (d, (a, b, cas, ls)) in &by_level {
        let ls = ls.map_or("not measured".into(), |x| format!("{x:.1} ns"));
        s.push_str(&format!(
            "#   {:<7} CPU {a} <-> CPU {b}: CAS hand-off {cas:.1} ns, load/store hand-off {ls}\n",
            d.as_str()
        ));
    }
    let atomic = owned.map_or(5.0, |o| o.0);
    let (transfer, upgrade) = fit(&by_level, atomic);
    let get = |d: Distance| transfer.get(&d).copied();
    let measured = get(Distance::Llc)
        .or(get(Distance::Socket))
        .or(get(Distance::Smt))
        .map(|llc| Measured {
            transfer: Transfer {
                smt_ns: get(Distance::Smt).unwrap_or(llc),
                llc_ns: llc,
                socket_ns: get(Distance::Socket).unwrap_or(llc),
                remote_ns: get(Distance::Remote)
                    .or(get(Distance::Socket))
                    .unwrap_or(llc),
            },
            atomic_ns: atomic,
            fence_ns: owned.map(|o| o.1),
            upgrade,
            overhead_ns: tas_loop.map(|l| (l - atomic).max(0.0)),
        });
    s.push_str(&topology_as_lab_with(h, measured, name));
    s
}
