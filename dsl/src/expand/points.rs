//! Points: the combinations a sweep yields in each mode ([`enumerate`]), then each
//! combination resolved into a complete [`Point`] in one step ([`resolve`]).

use super::narrow::Narrowing;
use super::run::ModeSpec;
use super::sweep::Sweep;
use crate::diag::Span;
use crate::resolve::{Ctx, Env, Obj};
use crate::syntax::{Val, ValKind};
use locklab_model::cost::{MAX_SIM_THREADS, MAX_THREADS};
use locklab_model::plan::{Mode, PlacementKind, Point, Value};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// A sweep may not expand to more points than this (per mode).
pub const MAX_POINTS: u64 = 100_000;

/// One combination of axis values, before its lock, workload and placement are
/// read.
pub struct Combo {
    pub id: String,
    /// By axis name.
    pub axes: BTreeMap<String, Value>,
    /// Each axis's value as written, and the file it was written in (what `$axis`
    /// resolves to), in axis order.
    pub written: Vec<(Val, usize)>,
    /// The modes whose sweep yields it, ascending.
    pub modes: Vec<Mode>,
}

/// Every combination the sweep yields in some mode, in first-seen order; a
/// combination yielded by several modes is one point that runs in each. Returns
/// false when a mode's sweep is too large or left empty (said). A mode that `--set`
/// leaves empty runs nothing (a warning), unless every mode is left so.
pub fn enumerate(
    ctx: &mut Ctx,
    sweep: &Sweep,
    modes: &[ModeSpec],
    narrowing: Option<&Narrowing>,
) -> (Vec<Combo>, bool) {
    let axes = &sweep.axes;
    let mut ok = true;
    let mut combos: Vec<Combo> = Vec::new();
    // Modes `--set` left without points: they run nothing (said once the others are
    // known to run something).
    let mut emptied: Vec<&ModeSpec> = Vec::new();
    let mut by_id: BTreeMap<String, usize> = BTreeMap::new();
    // Groups: an axis alone, or all axes of one zip.
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut zip_of: BTreeMap<u32, usize> = BTreeMap::new();
    for (i, a) in axes.iter().enumerate() {
        match a.zip {
            Some(z) => match zip_of.get(&z) {
                Some(&g) => groups[g].push(i),
                None => {
                    zip_of.insert(z, groups.len());
                    groups.push(vec![i]);
                }
            },
            None => groups.push(vec![i]),
        }
    }
    for ms in modes {
        let mut per_axis: Vec<(&[Val], &[Value], usize)> = axes
            .iter()
            .map(|a| (a.vals.as_slice(), a.values.as_slice(), a.file))
            .collect();
        for (ai, vals, values) in &ms.overrides {
            per_axis[*ai] = (vals.as_slice(), values.as_slice(), ms.span.0);
        }
        let lens: Vec<usize> = groups
            .iter()
            .map(|g| g.iter().map(|&i| per_axis[i].1.len()).min().unwrap_or(0))
            .collect();
        let total = lens
            .iter()
            .try_fold(1u64, |acc, &l| acc.checked_mul(l as u64));
        if total.is_none_or(|t| t > MAX_POINTS) {
            let (f, sp) = ms.span;
            ctx.err(
                f,
                sp,
                format!(
                    "the {} sweep expands to more than {MAX_POINTS} points",
                    ms.mode.as_str()
                ),
            )
            .help = Some("narrow an axis, or split the experiment".into());
            ok = false;
            continue;
        }
        let mut idx = vec![0usize; groups.len()];
        let mut kept = 0usize;
        let empty = lens.contains(&0);
        let mut done = empty;
        while !done {
            let mut pick = vec![0usize; axes.len()];
            for (g, members) in groups.iter().enumerate() {
                for &m in members {
                    pick[m] = idx[g];
                }
            }
            let vals: Vec<&Value> = (0..axes.len()).map(|i| &per_axis[i].1[pick[i]]).collect();
            if sweep.conds.iter().all(|c| c.eval(&vals)) && ms.wheres.iter().all(|c| c.eval(&vals))
            {
                kept += 1;
                let id = if axes.is_empty() {
                    "default".to_string()
                } else {
                    axes.iter()
                        .zip(&vals)
                        .map(|(a, v)| format!("{}={}", a.name.name, v.label()))
                        .collect::<Vec<_>>()
                        .join(",")
                };
                match by_id.get(&id) {
                    Some(&ci) => {
                        if !combos[ci].modes.contains(&ms.mode) {
                            combos[ci].modes.push(ms.mode);
                        }
                    }
                    None => {
                        by_id.insert(id.clone(), combos.len());
                        combos.push(Combo {
                            id,
                            axes: axes
                                .iter()
                                .zip(&vals)
                                .map(|(a, v)| (a.name.name.clone(), (*v).clone()))
                                .collect(),
                            written: (0..axes.len())
                                .map(|i| (per_axis[i].0[pick[i]].clone(), per_axis[i].2))
                                .collect(),
                            modes: vec![ms.mode],
                        });
                    }
                }
            }
            // Odometer: the last group varies fastest.
            let mut g = groups.len();
            loop {
                if g == 0 {
                    done = true;
                    break;
                }
                g -= 1;
                idx[g] += 1;
                if idx[g] < lens[g] {
                    break;
                }
                idx[g] = 0;
            }
        }
        let narrowed_away = narrowing.filter(|n| n.runs_in(ms.mode));
        if kept == 0 && axes.iter().any(|a| a.broken) {
            ok = false;
        } else if let (0, Some(_)) = (kept, narrowed_away) {
            emptied.push(ms);
        } else if kept == 0 {
            ok = false;
            let (f, sp) = ms
                .where_spans
                .first()
                .or(sweep.where_spans.first())
                .copied()
                .unwrap_or(ms.span);
            let msg = if empty {
                format!(
                    "the {} sweep has no points: an axis has no values",
                    ms.mode.as_str()
                )
            } else {
                format!("no {} point is left after `where`", ms.mode.as_str())
            };
            ctx.err(f, sp, msg)
                .set_label("filters out every point")
                .help = Some("loosen the condition or add axis values".into());
        }
    }
    if let Some(n) = narrowing.filter(|_| ok) {
        if combos.is_empty() {
            let (f, sp) = modes.first().map_or((0, Span::default()), |m| m.span);
            ctx.err(f, sp, format!("{} no point to run", n.leave(None)))
                .set_label("in any mode")
                .help =
                Some("`--set` picks values the file's `where` filters and mode blocks keep".into());
            ok = false;
        } else {
            for ms in emptied {
                let mode = ms.mode.as_str();
                ctx.warn(
                    ms.span.0,
                    ms.span.1,
                    format!("{} no {mode} point: {mode} runs nothing", n.leave(None)),
                )
                .set_label("narrowed away");
            }
        }
    }
    for c in &mut combos {
        c.modes.sort();
    }
    (combos, ok)
}

/// What every point reads: the experiment's `threads`, `lock`, `workload` and
/// `placement` (fixed values or `$axis` references).
pub struct Inputs {
    pub file: usize,
    pub master_seed: u64,
    pub threads: Option<Val>,
    pub lock: Option<Val>,
    pub workload: Option<Val>,
    pub placement: Val,
    /// CPUs of the simulated machine (`None` for the host).
    pub cpus: Option<u32>,
}

impl Inputs {
    /// Read them from the experiment block; a property not given defaults to the
    /// axis of the same name (`placement` to `compact`). A missing one is said.
    pub fn read(
        ctx: &mut Ctx,
        o: &Obj,
        sweep: &Sweep,
        master_seed: u64,
        cpus: Option<u32>,
    ) -> (Inputs, bool) {
        let default_ref = |key: &str| -> Option<Val> {
            sweep.axes.iter().any(|a| a.name.name == key).then(|| Val {
                kind: ValKind::AxisRef(key.to_string()),
                span: o.span,
            })
        };
        let get = |key: &str| o.get(key).cloned().or_else(|| default_ref(key));
        let inputs = Inputs {
            file: o.file,
            master_seed,
            threads: get("threads"),
            lock: get("lock"),
            workload: get("workload"),
            placement: get("placement").unwrap_or(Val {
                kind: ValKind::Symbol("compact".into()),
                span: o.span,
            }),
            cpus,
        };
        let mut ok = true;
        for (key, v, ex) in [
            ("threads", &inputs.threads, "$threads"),
            ("lock", &inputs.lock, "mcs"),
            ("workload", &inputs.workload, "hot"),
        ] {
            if v.is_none() {
                ctx.missing(o, key, ex);
                ok = false;
            }
        }
        (inputs, ok)
    }

    /// The sweep axis that chooses the lock (`lock = $lock`), if any.
    pub fn lock_axis(&self) -> Option<String> {
        match &self.lock.as_ref()?.kind {
            ValKind::AxisRef(a) => Some(a.clone()),
            _ => None,
        }
    }
}

/// Resolve each combination into its point; `index` is its position. Returns the
/// points that resolved and whether all did. What can be read is read even when
/// something is missing, so that an unknown lock is reported beside a missing
/// `workload` rather than after it is fixed.
pub fn resolve(
    ctx: &mut Ctx,
    inputs: &Inputs,
    sweep: &Sweep,
    combos: Vec<Combo>,
) -> (Vec<Point>, bool) {
    let mut ok = true;
    let mut points = Vec::new();
    if inputs.threads.is_none() && inputs.lock.is_none() && inputs.workload.is_none() {
        return (points, false);
    }
    let lock_axis = inputs.lock_axis();
    for (index, combo) in combos.into_iter().enumerate() {
        let env_map: BTreeMap<String, (Val, usize)> = sweep
            .axes
            .iter()
            .zip(&combo.written)
            .map(|(a, w)| (a.name.name.clone(), w.clone()))
            .collect();
        let env = Env::Point(&env_map);
        let file = inputs.file;
        let threads = inputs
            .threads
            .as_ref()
            .and_then(|tv| ctx.count_in(env, file, tv, "`threads`", 1..=MAX_THREADS));
        let lock = inputs
            .lock
            .as_ref()
            .and_then(|lv| ctx.lock_ref(env, file, lv, lock_axis.as_deref()));
        let workload = inputs
            .workload
            .as_ref()
            .and_then(|wv| ctx.workload_ref(env, file, wv));
        let placement = ctx.placement_ref(env, file, &inputs.placement);
        let (Some(threads), Some(lock), Some(workload), Some(placement)) =
            (threads, lock, workload, placement)
        else {
            ok = false;
            continue;
        };
        let sim = combo.modes.contains(&Mode::Sim);
        let fits = check_fit(
            ctx,
            env,
            inputs,
            &Fit {
                id: &combo.id,
                threads,
                sim,
                cpus: match &placement.policy {
                    PlacementKind::List(l) => Some(l),
                    _ => None,
                },
            },
        );
        if !fits {
            ok = false;
            continue;
        }
        points.push(Point {
            index,
            seed: point_seed(inputs.master_seed, &combo.id),
            id: combo.id,
            axes: combo.axes,
            threads,
            lock,
            workload,
            placement,
            modes: combo.modes,
        });
    }
    (points, ok)
}

/// What must fit the machine: a point's threads, and its explicit CPU list.
struct Fit<'a> {
    id: &'a str,
    threads: u32,
    /// The point runs simulated (on the modelled CPUs).
    sim: bool,
    cpus: Option<&'a [u32]>,
}

/// Simulated threads need a CPU each; an explicit CPU list needs an entry per thread
/// and, simulated, CPUs the machine has.
fn check_fit(ctx: &mut Ctx, env: Env, inputs: &Inputs, fit: &Fit) -> bool {
    let mut ok = true;
    let file = inputs.file;
    let threads = fit.threads;
    if let (true, Some(tv)) = (fit.sim && threads > MAX_SIM_THREADS, &inputs.threads) {
        let (tval, tfile) = ctx.deref(env, file, tv).unwrap_or((tv.clone(), file));
        ctx.err(
            tfile,
            tval.span,
            format!("{threads} threads are more than the simulator handles ({MAX_SIM_THREADS})"),
        )
        .set_label(format!("point {}", fit.id))
        .help = Some("narrow the sim sweep: give `run { sim { threads = [...] } }`".into());
        return false;
    }
    if let (Some(c), true, Some(tv)) = (inputs.cpus, fit.sim, &inputs.threads) {
        if threads > c {
            let (tval, tfile) = ctx.deref(env, file, tv).unwrap_or((tv.clone(), file));
            ctx.err(
                tfile,
                tval.span,
                format!("{threads} threads do not fit the {c} CPUs of the simulated topology"),
            )
            .set_label(format!("point {}", fit.id))
            .help = Some(
                "simulated runs place one thread per CPU; lower the thread count or narrow the sim sweep"
                    .into(),
            );
            ok = false;
        }
    }
    if let Some(list) = fit.cpus {
        let pv = &inputs.placement;
        let (pval, pfile) = ctx.deref(env, file, pv).unwrap_or((pv.clone(), file));
        if (list.len() as u64) < u64::from(threads) {
            ctx.err(
                pfile,
                pval.span,
                format!(
                    "the placement lists {} CPU{} but {threads} threads need one each",
                    list.len(),
                    if list.len() == 1 { "" } else { "s" }
                ),
            )
            .set_label("too few CPUs");
            ok = false;
        }
        if fit.sim {
            // Natively two threads may share a CPU (oversubscription); the simulator
            // runs one thread per CPU.
            let mut seen = std::collections::BTreeSet::new();
            let used = &list[..list.len().min(threads as usize)];
            if let Some(twice) = used.iter().find(|&&c| !seen.insert(c)) {
                ctx.err(
                    pfile,
                    pval.span,
                    format!("the placement puts two simulated threads on CPU {twice}"),
                )
                .set_label(format!("point {}", fit.id))
                .help = Some(
                    "a simulated thread needs a CPU of its own; narrow the sim sweep to points with distinct CPUs"
                        .into(),
                );
                ok = false;
            }
        }
        if let (Some(c), true) = (inputs.cpus, fit.sim) {
            if let Some(bad) = list.iter().find(|&&x| x >= c) {
                ctx.err(
                    pfile,
                    pval.span,
                    format!("CPU {bad} does not exist in the simulated topology ({c} CPUs)"),
                );
                ok = false;
            }
        }
    }
    ok
}

/// The seed of a point: SHA-256 of its id, folded to 64 bits, xor the master seed,
/// through SplitMix64's finaliser. Depends on nothing but the two.
pub fn point_seed(master: u64, id: &str) -> u64 {
    let d = Sha256::digest(id.as_bytes());
    let mut h = [0u8; 8];
    h.copy_from_slice(&d[..8]);
    let mut z = u64::from_le_bytes(h) ^ master;
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
