//! Property tests: values print and parse back; a sweep has as many points as the
//! product of its independent axes (a `zip` counts once); seeds are unique and depend
//! only on the master seed and the point id.

use crate::{load_mem, show};
use locklab_dsl::{parse_values, value_text};
use locklab_model::plan::Value;
use proptest::prelude::*;
use std::collections::BTreeSet;

fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<i64>().prop_map(Value::Int),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::Float),
        any::<u64>().prop_map(Value::Duration),
        any::<u64>().prop_map(Value::Size),
        any::<u64>().prop_map(Value::Freq),
        "[a-zA-Z_][a-zA-Z0-9_]{0,10}".prop_map(Value::Str),
        "[ -!#-\\[\\]-~]{0,12}".prop_map(Value::Str),
        any::<bool>().prop_map(Value::Bool),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn values_print_and_parse_back(v in value()) {
        let text = value_text(&v);
        let back = parse_values(&text)
            .map_err(|d| TestCaseError::fail(format!("{text}: {d}")))?;
        prop_assert_eq!(back, vec![v]);
    }

    #[test]
    fn lists_of_values_print_and_parse_back(vs in prop::collection::vec(value(), 1..6)) {
        let text: Vec<String> = vs.iter().map(value_text).collect();
        let src = text.join(",");
        let back = parse_values(&src)
            .map_err(|d| TestCaseError::fail(format!("{src}: {d}")))?;
        prop_assert_eq!(back, vs);
    }
}

/// An experiment over `axes` (name, values) with the given zip groups.
fn sweep_file(axes: &[(String, Vec<i64>)], zipped: &[usize], seed: u64) -> String {
    let mut sweep = String::new();
    let mut zip = String::new();
    for (i, (name, values)) in axes.iter().enumerate() {
        let list: Vec<String> = values.iter().map(|v| v.to_string()).collect();
        let line = format!("    {name} = [{}]\n", list.join(", "));
        if zipped.contains(&i) {
            zip.push_str(&line);
        } else {
            sweep.push_str(&line);
        }
    }
    if !zip.is_empty() {
        sweep.push_str(&format!("    zip {{\n{zip}    }}\n"));
    }
    format!(
        "topology t {{ sockets = 1, cores = 4, transfer {{ llc = 40ns }} }}
workload w = single {{ critical = 100ns }}
experiment e {{
  topology = t
  workload = w
  lock = mcs
  threads = 1
  seed = {seed}
  sweep {{
{sweep}  }}
  run {{ modes = [sim], duration = 1ms }}
  expect throughput_ops_s[{}] > 0
}}
",
        axes.iter()
            .map(|(n, v)| format!("{n} = {}", v[0]))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

fn axes_strategy() -> impl Strategy<Value = (Vec<(String, Vec<i64>)>, Vec<usize>)> {
    (1usize..5, 1usize..5).prop_flat_map(|(n, zip_len)| {
        let axes = prop::collection::vec(prop::collection::btree_set(-50i64..50, 1..5), n);
        (axes, Just(zip_len), any::<bool>()).prop_map(move |(sets, zip_len, with_zip)| {
            let mut axes: Vec<(String, Vec<i64>)> = sets
                .into_iter()
                .enumerate()
                .map(|(i, s)| (format!("a{i}"), s.into_iter().collect()))
                .collect();
            let mut zipped = Vec::new();
            if with_zip {
                // Two extra axes of one length, zipped together.
                let k = axes.len();
                axes.push((format!("z{k}"), (0..zip_len as i64).collect()));
                axes.push((format!("z{}", k + 1), (100..100 + zip_len as i64).collect()));
                zipped = vec![k, k + 1];
            }
            (axes, zipped)
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 60, ..ProptestConfig::default() })]

    #[test]
    fn point_count_is_the_product_of_independent_axes(
        (axes, zipped) in axes_strategy(),
        seed in any::<u64>(),
    ) {
        let text = sweep_file(&axes, &zipped, seed);
        let c = load_mem(&[("e.lab", &text)], "e.lab");
        prop_assert!(!c.has_errors(), "{}\n{}", text, show(&c));
        let plan = c.plan.unwrap();
        let mut expected = 1usize;
        for (i, (_, v)) in axes.iter().enumerate() {
            if !zipped.contains(&i) {
                expected *= v.len();
            }
        }
        if let Some(&z) = zipped.first() {
            expected *= axes[z].1.len();
        }
        prop_assert_eq!(plan.points.len(), expected);
        let ids: BTreeSet<&str> = plan.points.iter().map(|p| p.id.as_str()).collect();
        let seeds: BTreeSet<u64> = plan.points.iter().map(|p| p.seed).collect();
        prop_assert_eq!(ids.len(), expected);
        prop_assert_eq!(seeds.len(), expected);
        for (i, p) in plan.points.iter().enumerate() {
            prop_assert_eq!(p.index, i);
            prop_assert_eq!(p.axes.len(), axes.len());
        }
    }

    #[test]
    fn seeds_depend_on_id_and_master_seed_only(
        (axes, zipped) in axes_strategy(),
        seed in any::<u64>(),
    ) {
        let plan_of = |axes: &[(String, Vec<i64>)], seed: u64| {
            let c = load_mem(&[("e.lab", &sweep_file(axes, &zipped, seed))], "e.lab");
            c.plan.unwrap()
        };
        let a = plan_of(&axes, seed);
        // Reverse every axis's values: other order, same points, same seeds.
        let reversed: Vec<(String, Vec<i64>)> = axes
            .iter()
            .map(|(n, v)| (n.clone(), v.iter().rev().copied().collect()))
            .collect();
        let b = plan_of(&reversed, seed);
        let pairs = |p: &locklab_model::plan::Plan| -> BTreeSet<(String, u64)> {
            p.points.iter().map(|p| (p.id.clone(), p.seed)).collect()
        };
        prop_assert_eq!(pairs(&a), pairs(&b));
        // Another master seed changes every point's seed.
        let c = plan_of(&axes, seed ^ 1);
        for (p, q) in a.points.iter().zip(&c.points) {
            prop_assert_eq!(&p.id, &q.id);
            prop_assert_ne!(p.seed, q.seed);
        }
    }
}
