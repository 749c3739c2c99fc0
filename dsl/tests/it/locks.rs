//! Lock parameters as the registry reads them: a value, its default, its range.

use crate::demo_plan;
use locklab_model::plan::LockAlgo;

fn algo_of(lock: &str) -> Result<LockAlgo, String> {
    let defs = format!(
        "lock l = {lock}\ntopology t {{ sockets = 1, cores = 4, transfer {{ llc = 50ns }} }}"
    );
    Ok(demo_plan(&defs, "l")?.points[0].lock.algo.clone())
}

#[test]
fn the_qspinlock_pending_loops_default_to_x86s_and_take_a_whole_number() {
    assert_eq!(
        algo_of("qspinlock").unwrap(),
        LockAlgo::Qspinlock {
            pending_loops: None
        }
    );
    assert_eq!(
        algo_of("qspinlock { pending_loops = 1 }").unwrap(),
        LockAlgo::Qspinlock {
            pending_loops: Some(1)
        }
    );
    assert_eq!(
        algo_of("qspinlock { pending_loops = 0 }").unwrap(),
        LockAlgo::Qspinlock {
            pending_loops: Some(0)
        }
    );
    for (bad, says) in [
        ("-1", "at least 0"),
        ("70000", "at most 65536"),
        ("1.5", "whole number"),
        ("2ns", "whole number"),
    ] {
        let e = algo_of(&format!("qspinlock {{ pending_loops = {bad} }}")).unwrap_err();
        assert!(
            e.contains("pending_loops") && e.contains(says),
            "{bad}: {e}"
        );
    }
    let e = algo_of("qspinlock { pending = 1 }").unwrap_err();
    assert!(
        e.contains("pending_loops"),
        "the known parameter is named: {e}"
    );
}

/// The default serializes as the lock always did, so that plans (and their hashes)
/// made before the parameter existed stay the same.
#[test]
fn a_default_qspinlock_serializes_as_before_the_parameter() {
    let stock = LockAlgo::Qspinlock {
        pending_loops: None,
    };
    assert_eq!(
        serde_json::to_string(&stock).unwrap(),
        r#"{"algo":"qspinlock"}"#
    );
    let back: LockAlgo = serde_json::from_str(r#"{"algo":"qspinlock"}"#).unwrap();
    assert_eq!(back, stock);
}

#[test]
fn tas_pauses_between_failed_swaps_unless_told_to_relax_with_nothing() {
    use locklab_model::plan::Relax;
    assert_eq!(algo_of("tas").unwrap(), LockAlgo::TAS);
    assert_eq!(
        algo_of("tas { relax = pause }").unwrap(),
        LockAlgo::Tas {
            relax: Relax::Pause
        }
    );
    assert_eq!(
        algo_of("tas { relax = none }").unwrap(),
        LockAlgo::Tas { relax: Relax::None }
    );
    let e = algo_of("tas { relax = yield }").unwrap_err();
    assert!(
        e.contains("relax") && e.contains("pause") && e.contains("none"),
        "the choices are named: {e}"
    );
    // A default TAS serializes as TAS always did: plans made before the parameter
    // existed keep their hashes.
    assert_eq!(
        serde_json::to_string(&LockAlgo::TAS).unwrap(),
        r#"{"algo":"tas"}"#
    );
    let back: LockAlgo = serde_json::from_str(r#"{"algo":"tas"}"#).unwrap();
    assert_eq!(back, LockAlgo::TAS);
    assert_eq!(
        serde_json::to_string(&LockAlgo::Tas { relax: Relax::None }).unwrap(),
        r#"{"algo":"tas","relax":"none"}"#
    );
}

#[test]
fn clh_keeps_its_predecessor_in_the_thread_unless_told_the_node() {
    use locklab_model::plan::ClhPredecessor;
    assert_eq!(algo_of("clh").unwrap(), LockAlgo::CLH);
    assert_eq!(
        algo_of("clh { predecessor = node }").unwrap(),
        LockAlgo::Clh {
            predecessor: ClhPredecessor::Node
        }
    );
    assert_eq!(
        algo_of("clh { predecessor = thread }").unwrap(),
        LockAlgo::CLH
    );
    let e = algo_of("clh { predecessor = tail }").unwrap_err();
    assert!(
        e.contains("predecessor") && e.contains("thread") && e.contains("node"),
        "the choices are named: {e}"
    );
    assert_eq!(
        serde_json::to_string(&LockAlgo::CLH).unwrap(),
        r#"{"algo":"clh"}"#
    );
    let back: LockAlgo = serde_json::from_str(r#"{"algo":"clh"}"#).unwrap();
    assert_eq!(back, LockAlgo::CLH);
    assert_eq!(
        serde_json::to_string(&LockAlgo::Clh {
            predecessor: ClhPredecessor::Node
        })
        .unwrap(),
        r#"{"algo":"clh","predecessor":"node"}"#
    );
}
