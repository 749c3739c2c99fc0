//! Placements: where thread *i* runs, and its virtual NUMA node.

use super::{Ctx, Env};
use crate::diag::did_you_mean;
use crate::syntax::{Ident, Val, ValKind};
use locklab_model::cost::{MAX_CPUS, MAX_VIRTUAL_NODES};
use locklab_model::plan::{Placement, PlacementKind};

pub const PLACEMENT_POLICIES: &[&str] = &["compact", "scatter", "will_it_scale", "list"];

impl Ctx<'_> {
    // -----------------------------------------------------------------------
    // Placement

    pub fn placement_ref(&mut self, env: Env, file: usize, v: &Val) -> Option<Placement> {
        let (v, file) = self.deref(env, file, v)?;
        match &v.kind {
            ValKind::Symbol(name) => {
                if let Some(def) = self.placements.get(name).cloned() {
                    self.placement(env, def.file, &def.value, &format!("placement `{name}`"))
                } else if self
                    .broken
                    .contains(&("placement".to_string(), name.clone()))
                {
                    None
                } else if PLACEMENT_POLICIES.contains(&name.as_str()) && name != "list" {
                    self.placement(env, file, &v, "placement")
                } else {
                    let cands: Vec<String> = self
                        .placements
                        .keys()
                        .cloned()
                        .chain(["compact", "scatter", "will_it_scale"].map(String::from))
                        .collect();
                    let help = did_you_mean(name, cands.iter().map(|s| s.as_str()));
                    let d = self
                        .err(file, v.span, format!("unknown placement `{name}`"))
                        .set_label("no placement of this name");
                    d.help = help;
                    None
                }
            }
            _ => self.placement(env, file, &v, "placement"),
        }
    }

    pub fn placement(&mut self, env: Env, file: usize, v: &Val, what: &str) -> Option<Placement> {
        let (v, file) = self.deref(env, file, v)?;
        match &v.kind {
            ValKind::List(_) => {
                let cpus = self.u32_list(env, file, &v, "explicit CPU list", MAX_CPUS)?;
                Some(Placement {
                    policy: PlacementKind::List(cpus),
                    virtual_nodes: None,
                })
            }
            ValKind::Symbol(p)
            | ValKind::Record {
                ctor: Some(Ident { name: p, .. }),
                ..
            } => {
                let p = p.clone();
                let pspan = match &v.kind {
                    ValKind::Record { ctor: Some(c), .. } => c.span,
                    _ => v.span,
                };
                if !PLACEMENT_POLICIES.contains(&p.as_str()) {
                    let help = did_you_mean(&p, PLACEMENT_POLICIES.iter().copied());
                    let d = self
                        .err(file, pspan, format!("unknown placement policy `{p}`"))
                        .set_label("not a placement policy");
                    d.help = help;
                    return None;
                }
                let allowed: &[&str] = if p == "list" {
                    &["cpus", "nodes"]
                } else {
                    &["nodes"]
                };
                let o = self.obj(file, &v, &format!("{what} ({p})"), allowed, &[]);
                let nodes = match o.get("nodes") {
                    Some(n) => Some(self.u32_list(
                        env,
                        file,
                        n,
                        "`nodes` (virtual NUMA node per thread)",
                        MAX_VIRTUAL_NODES,
                    )?),
                    None => None,
                };
                let policy = match p.as_str() {
                    "compact" => PlacementKind::Compact,
                    "scatter" => PlacementKind::Scatter,
                    "will_it_scale" => PlacementKind::WillItScale,
                    _ => match o.get("cpus") {
                        Some(c) => {
                            PlacementKind::List(self.u32_list(env, file, c, "`cpus`", MAX_CPUS)?)
                        }
                        None => {
                            self.missing(&o, "cpus", "[0, 1]");
                            return None;
                        }
                    },
                };
                Some(Placement {
                    policy,
                    virtual_nodes: nodes,
                })
            }
            _ => {
                self.mismatch(
                    file,
                    &v,
                    "`placement`",
                    "a placement (`compact`, `scatter`, `will_it_scale`, a CPU list)",
                    None,
                );
                None
            }
        }
    }
}
