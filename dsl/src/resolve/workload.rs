//! Workloads: `single`, `double`, `bulk` and `wakeup`.

use super::{Ctx, Env, Obj};
use crate::diag::{did_you_mean, Diagnostic};
use crate::syntax::{Prop, Val, ValKind};
use locklab_model::cost::{MAX_BULK_ITEMS, MAX_LINES, MAX_WAKEUP_TASKS};
use locklab_model::plan::*;

pub const WORKLOAD_KINDS: &[&str] = &["single", "double", "bulk", "wakeup"];

impl Ctx<'_> {
    // -----------------------------------------------------------------------
    // Workloads

    pub fn workload_ref(&mut self, env: Env, file: usize, v: &Val) -> Option<Workload> {
        let (v, file) = self.deref(env, file, v)?;
        match &v.kind {
            ValKind::Symbol(name) => {
                if let Some(def) = self.workloads.get(name).cloned() {
                    self.workload(env, def.file, &def.value, &format!("workload `{name}`"))
                } else if self
                    .broken
                    .contains(&("workload".to_string(), name.clone()))
                {
                    None
                } else {
                    let cands: Vec<String> = self.workloads.keys().cloned().collect();
                    let help = did_you_mean(name, cands.iter().map(|s| s.as_str()));
                    let mut d = Diagnostic::error(
                        &self.path(file),
                        v.span,
                        format!("unknown workload `{name}`"),
                    )
                    .with_label("no workload of this name");
                    d.help = help.or_else(|| {
                        WORKLOAD_KINDS.contains(&name.as_str()).then(|| format!("`{name}` is a workload kind: give its parameters, e.g. `workload hot = {name} {{ ... }}`"))
                    });
                    self.diags.push(d);
                    None
                }
            }
            ValKind::Record { ctor: Some(_), .. } => self.workload(env, file, &v, "workload"),
            _ => {
                self.mismatch(
                    file,
                    &v,
                    "`workload`",
                    "a workload name or `single { ... }`",
                    None,
                );
                None
            }
        }
    }

    pub fn workload(&mut self, env: Env, file: usize, v: &Val, what: &str) -> Option<Workload> {
        let (v, file) = self.deref(env, file, v)?;
        let ValKind::Record {
            ctor: Some(kind), ..
        } = &v.kind
        else {
            self.mismatch(file, &v, what, "a workload (`single { ... }`, `double { ... }`, `bulk { ... }` or `wakeup { ... }`)", None);
            return None;
        };
        let kind = kind.clone();
        let what = format!("{what} ({})", kind.name);
        match kind.name.as_str() {
            "single" => {
                let o = self.obj(file, &v, &what, &["critical", "outside", "lines"], &[]);
                let critical = self.req_dist(env, &o, "critical", "90ns");
                let outside = o.get("outside").map_or(Some(Dist::Fixed { ns: 0 }), |x| {
                    self.dist(env, file, x, "`outside`")
                });
                let lines = o.get("lines").map_or(Some(1), |x| {
                    self.count_in(env, file, x, "`lines`", 0..=MAX_LINES)
                });
                Some(Workload::SingleLock {
                    critical: critical?,
                    outside: outside?,
                    lines: lines?,
                })
            }
            "double" => {
                let o = self.obj(
                    file,
                    &v,
                    &what,
                    &["policy", "interval", "own_hold", "pair_hold", "lines"],
                    &[],
                );
                let policy = match o.get("policy") {
                    Some(p) => {
                        self.choice(env, file, p, "double-lock policy", &["ordered", "fair"])
                    }
                    None => {
                        self.missing(&o, "policy", "ordered");
                        None
                    }
                };
                let interval = self.req_dist(env, &o, "interval", "exp(5us)");
                let own = self.req_dist(env, &o, "own_hold", "1us");
                let pair = self.req_dist(env, &o, "pair_hold", "1us");
                let lines = o.get("lines").map_or(Some(1), |x| {
                    self.count_in(env, file, x, "`lines`", 0..=MAX_LINES)
                });
                Some(Workload::DoubleLock {
                    policy: if policy? == "fair" {
                        DoubleLockPolicy::Fair
                    } else {
                        DoubleLockPolicy::Ordered
                    },
                    interval: interval?,
                    own_hold: own?,
                    pair_hold: pair?,
                    lines: lines?,
                })
            }
            "bulk" => {
                let o = self.obj(
                    file,
                    &v,
                    &what,
                    &["policy", "per_item", "think", "lines"],
                    &["class"],
                );
                let policy = match o.get("policy") {
                    Some(p) => self.choice(
                        env,
                        file,
                        p,
                        "lock-break policy",
                        &["never", "always", "when_contended"],
                    ),
                    None => {
                        self.missing(&o, "policy", "when_contended");
                        None
                    }
                };
                let per_item = self.req_dist(env, &o, "per_item", "100ns");
                let think = o.get("think").map_or(Some(Dist::Fixed { ns: 0 }), |x| {
                    self.dist(env, file, x, "`think`")
                });
                let lines = o.get("lines").map_or(Some(1), |x| {
                    self.count_in(env, file, x, "`lines`", 0..=MAX_LINES)
                });
                let mut mix = Vec::new();
                let mut ok = true;
                let classes: Vec<&Prop> = o.repeated().to_vec();
                if classes.is_empty() {
                    self.err(file, v.span, format!("{what} has no request class"))
                        .set_label("needs at least one `class`")
                        .help = Some("add e.g. `class single { weight = 1, items = 1 }`".into());
                    ok = false;
                }
                for c in classes {
                    match self.bulk_class(env, file, c) {
                        Some(bc) => {
                            if mix.iter().any(|m: &BulkClass| m.name == bc.name) {
                                self.err(
                                    file,
                                    c.value.span,
                                    format!("request class `{}` is given twice", bc.name),
                                );
                                ok = false;
                            }
                            mix.push(bc)
                        }
                        None => ok = false,
                    }
                }
                if ok && mix.iter().all(|m| m.weight == 0) {
                    self.err(file, v.span, "every request class has weight 0");
                    ok = false;
                }
                let w = Workload::Bulk {
                    policy: match policy?.as_str() {
                        "never" => BreakPolicy::Never,
                        "always" => BreakPolicy::Always,
                        _ => BreakPolicy::WhenContended,
                    },
                    mix,
                    per_item: per_item?,
                    think: think?,
                    lines: lines?,
                };
                ok.then_some(w)
            }
            "wakeup" => self.wakeup(env, file, &v, &what),
            other => {
                let help = did_you_mean(other, WORKLOAD_KINDS.iter().copied());
                let d = self
                    .err(file, kind.span, format!("unknown workload kind `{other}`"))
                    .set_label("not a workload kind");
                d.help = help;
                None
            }
        }
    }

    fn req_dist(&mut self, env: Env, o: &Obj, key: &str, example: &str) -> Option<Dist> {
        match o.get(key) {
            Some(x) => self.dist(env, o.file, x, &format!("`{key}`")),
            None => {
                self.missing(o, key, example);
                None
            }
        }
    }

    fn bulk_class(&mut self, env: Env, file: usize, p: &Prop) -> Option<BulkClass> {
        let ValKind::Record {
            ctor: Some(name), ..
        } = &p.value.kind
        else {
            self.mismatch(
                file,
                &p.value,
                "`class`",
                "`NAME { weight = ..., items = ... }`",
                Some("write e.g. `class batch { weight = 1, items = 31 }`"),
            );
            return None;
        };
        let o = self.obj(
            file,
            &p.value,
            &format!("request class `{}`", name.name),
            &["weight", "items"],
            &[],
        );
        let weight = o
            .get("weight")
            .map_or(Some(1), |x| self.count(env, file, x, "`weight`", 0));
        let items = match o.get("items") {
            Some(x) => self.count_in(env, file, x, "`items`", 1..=MAX_BULK_ITEMS),
            None => {
                self.missing(&o, "items", "31");
                None
            }
        };
        Some(BulkClass {
            name: name.name.clone(),
            weight: weight?,
            items: items?,
        })
    }

    fn wakeup(&mut self, env: Env, file: usize, v: &Val, what: &str) -> Option<Workload> {
        let o = self.obj(
            file,
            v,
            what,
            &[
                "policy",
                "scenario",
                "workers",
                "worker_weight",
                "hogs",
                "hog_groups",
                "hog_group_weight",
                "burst",
                "sleep",
                "working_set",
                "sched",
            ],
            &[],
        );
        let policy = match o.get("policy") {
            Some(p) => self.choice(
                env,
                file,
                p,
                "wake-up placement policy",
                &["old", "patched"],
            ),
            None => {
                self.missing(&o, "policy", "patched");
                None
            }
        };
        let scenario = match o.get("scenario") {
            Some(p) => self.choice(env, file, p, "wake-up scenario", &["trade", "messaging"]),
            None => {
                self.missing(&o, "scenario", "trade");
                None
            }
        };
        let workers = match o.get("workers") {
            Some(x) => self.count_in(env, file, x, "`workers`", 1..=MAX_WAKEUP_TASKS),
            None => {
                self.missing(&o, "workers", "8");
                None
            }
        };
        let worker_weight = o.get("worker_weight").map_or(Some(1024), |x| {
            self.count(env, file, x, "`worker_weight`", 1)
        });
        let hogs = o.get("hogs").map_or(Some(0), |x| {
            self.count_in(env, file, x, "`hogs`", 0..=MAX_WAKEUP_TASKS)
        });
        let hog_groups = o.get("hog_groups").map_or(Some(1), |x| {
            self.count_in(env, file, x, "`hog_groups`", 1..=MAX_WAKEUP_TASKS)
        });
        let hog_group_weight = o.get("hog_group_weight").map_or(Some(1024), |x| {
            self.count(env, file, x, "`hog_group_weight`", 1)
        });
        let burst = self.req_dist(env, &o, "burst", "uniform(20us, 50us)");
        let sleep = self.req_dist(env, &o, "sleep", "exp(100us)");
        let working_set = match o.get("working_set") {
            Some(x) => self.size(env, file, x, "`working_set`"),
            None => {
                self.missing(&o, "working_set", "128KiB");
                None
            }
        };
        let sched = match o.get("sched") {
            None => Some(default_sched()),
            Some(s) => self.sched(env, file, s),
        };
        if let (Some(h), Some(g)) = (hogs, hog_groups) {
            if h > 0 && g > h {
                let sp = o.get("hog_groups").map_or(v.span, |x| x.span);
                self.err(
                    file,
                    sp,
                    format!("{g} hog groups for {h} hogs: some groups would be empty"),
                );
            }
        }
        Some(Workload::Wakeup(WakeupSpec {
            policy: if policy? == "old" {
                PlacementPolicy::Old
            } else {
                PlacementPolicy::Patched
            },
            scenario: if scenario? == "trade" {
                WakeupScenario::Trade
            } else {
                WakeupScenario::Messaging
            },
            workers: workers?,
            worker_weight: worker_weight?,
            hogs: hogs?,
            hog_groups: hog_groups?,
            hog_group_weight: hog_group_weight?,
            burst: burst?,
            sleep: sleep?,
            working_set_bytes: working_set?,
            sched: sched?,
        }))
    }

    fn sched(&mut self, env: Env, file: usize, v: &Val) -> Option<SchedParams> {
        if !matches!(v.kind, ValKind::Record { ctor: None, .. }) {
            self.mismatch(
                file,
                v,
                "`sched`",
                "a block `{ latency = 24ms, ... }`",
                None,
            );
            return None;
        }
        let o = self.obj(
            file,
            v,
            "`sched`",
            &[
                "wakeup_granularity",
                "latency",
                "min_slice",
                "migration_cost",
                "idle_exit",
                "smt_corun",
            ],
            &[],
        );
        let d = default_sched();
        let dur = |this: &mut Self, key: &str, default: u64| {
            o.get(key).map_or(Some(default), |x| {
                this.duration(env, file, x, &format!("`{key}`"))
            })
        };
        let g = dur(self, "wakeup_granularity", d.wakeup_granularity_ns);
        let l = dur(self, "latency", d.latency_ns);
        let m = dur(self, "min_slice", d.min_slice_ns);
        let c = dur(self, "migration_cost", d.migration_cost_ns);
        let i = dur(self, "idle_exit", d.idle_exit_ns);
        let s = o.get("smt_corun").map_or(Some(d.smt_corun_factor), |x| {
            self.real(env, file, x, "`smt_corun` (throughput factor)", 0.0..=1.0)
        });
        Some(SchedParams {
            wakeup_granularity_ns: g?,
            latency_ns: l?,
            min_slice_ns: m?,
            migration_cost_ns: c?,
            idle_exit_ns: i?,
            smt_corun_factor: s?,
        })
    }
}

/// CFS of the 2.6.3x era on 16 CPUs.
pub fn default_sched() -> SchedParams {
    SchedParams {
        wakeup_granularity_ns: 4_000_000,
        latency_ns: 24_000_000,
        min_slice_ns: 3_000_000,
        migration_cost_ns: 500_000,
        idle_exit_ns: 3_000,
        smt_corun_factor: 0.6,
    }
}
