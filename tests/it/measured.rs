//! The simulator against the native sets kept in `experiments/measured/`.
//!
//! Each directory there holds one experiment (`validation.lab`, or another that
//! measures one question, such as `gap_sweep.lab`) and `lib/this_host.lab` as they
//! were run on one host (the topology `locklab topo --measure` wrote there), and the
//! native runs of that experiment on that host (`native-*`: manifest and tables).
//! The simulation is deterministic and the native numbers are fixed, so how many of
//! the points the simulator prices within ±15 % of the hardware is a number that a
//! change to the model moves on purpose or not at all. A change that moves it
//! updates `FITS` below and the set's entry in docs/validation.md together.

use super::*;

/// Per stored set: the least number of points whose simulated CPU time per
/// acquisition lies within ±15 % of native, the largest mean |sim / native − 1| of
/// that metric, and the least numbers of points whose `reacquired_share` and
/// `waited_share` lie within 0.1 (as measured with the model of the set's commit;
/// `waited_share` is not measured in sets kept before 6 December 2026, 15:30 UTC).
const FITS: &[Fit] = &[
    Fit {
        set: "2026-12-05-xeon-6-167",
        cpu_within: 73,
        cpu_mean_abs: 0.08,
        reacquired_within: 82,
        waited_within: 0,
    },
    Fit {
        set: "2026-12-06-xeon-6-167",
        cpu_within: 74,
        cpu_mean_abs: 0.066,
        reacquired_within: 77,
        waited_within: 0,
    },
    Fit {
        set: "2026-12-06-xeon-6-167-gaps",
        cpu_within: 32,
        cpu_mean_abs: 0.099,
        reacquired_within: 35,
        waited_within: 0,
    },
    Fit {
        set: "2026-12-06-xeon-6-167-sleepers",
        cpu_within: 12,
        cpu_mean_abs: 0.057,
        reacquired_within: 10,
        waited_within: 0,
    },
    Fit {
        set: "2026-12-06-xeon-6-167-held-out",
        cpu_within: 74,
        cpu_mean_abs: 0.079,
        reacquired_within: 78,
        waited_within: 0,
    },
    Fit {
        set: "2026-12-06-xeon-6-167-lines",
        cpu_within: 4,
        cpu_mean_abs: 0.172,
        reacquired_within: 4,
        waited_within: 0,
    },
    Fit {
        set: "2026-12-06-xeon-6-167-waits",
        cpu_within: 77,
        cpu_mean_abs: 0.064,
        reacquired_within: 81,
        waited_within: 75,
    },
    Fit {
        set: "2026-12-06-epyc-25-17",
        cpu_within: 72,
        cpu_mean_abs: 0.086,
        reacquired_within: 86,
        waited_within: 81,
    },
    Fit {
        set: "2026-12-07-epyc-25-17",
        cpu_within: 78,
        cpu_mean_abs: 0.065,
        reacquired_within: 85,
        waited_within: 80,
    },
    Fit {
        set: "2026-12-07-epyc-25-17-flags",
        cpu_within: 81,
        cpu_mean_abs: 0.048,
        reacquired_within: 87,
        waited_within: 84,
    },
    Fit {
        set: "2026-12-06-xeon-6-167-waits-gaps",
        cpu_within: 34,
        cpu_mean_abs: 0.098,
        reacquired_within: 35,
        waited_within: 28,
    },
    Fit {
        set: "2026-12-07-xeon-6-167",
        cpu_within: 77,
        cpu_mean_abs: 0.095,
        reacquired_within: 76,
        waited_within: 74,
    },
    Fit {
        set: "2026-12-07-xeon-6-167-gaps",
        cpu_within: 26,
        cpu_mean_abs: 0.162,
        reacquired_within: 36,
        waited_within: 24,
    },
    Fit {
        set: "2026-12-07-xeon-6-167-race",
        cpu_within: 24,
        cpu_mean_abs: 0.137,
        reacquired_within: 22,
        waited_within: 21,
    },
    Fit {
        set: "2026-12-07-xeon-6-167-late",
        cpu_within: 72,
        cpu_mean_abs: 0.116,
        reacquired_within: 78,
        waited_within: 70,
    },
    Fit {
        set: "2026-12-08-xeon-6-167-held",
        cpu_within: 8,
        cpu_mean_abs: 0.212,
        reacquired_within: 6,
        waited_within: 12,
    },
];

struct Fit {
    set: &'static str,
    cpu_within: u64,
    cpu_mean_abs: f64,
    reacquired_within: u64,
    waited_within: u64,
}

fn subdirs(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(prefix))
        .collect();
    v.sort();
    v
}

/// The one experiment file at the top of a kept set.
fn the_experiment(set: &Path) -> String {
    let labs: Vec<String> = std::fs::read_dir(set)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".lab"))
        .collect();
    assert_eq!(
        labs.len(),
        1,
        "{}: one experiment expected, found {labs:?}",
        set.display()
    );
    labs.into_iter().next().unwrap()
}

#[test]
fn the_simulator_still_fits_every_stored_native_validation_set() {
    let sets = subdirs(&root().join("experiments/measured"), "");
    assert!(!sets.is_empty(), "no stored validation set");
    for set in sets {
        let name = set.file_name().unwrap().to_string_lossy().into_owned();
        let fit = FITS.iter().find(|f| f.set == name).unwrap_or_else(|| {
            panic!("experiments/measured/{name} has no entry in FITS: add the numbers it gives")
        });
        let natives = subdirs(&set, "native-");
        assert!(!natives.is_empty(), "{name}: no native run");
        let experiment = the_experiment(&set);

        let tmp = tempfile::tempdir().unwrap();
        let sim = tmp.path().join("sim");
        let o = locklab()
            .current_dir(&set)
            .arg("run")
            .arg(&experiment)
            .args(["--mode", "sim", "--no-report", "--out"])
            .arg(&sim)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{name}: {}", stderr(&o));

        let o = locklab()
            .args(["compare", "--sim-vs-native", "--format", "json"])
            .arg(&sim)
            .args(&natives)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{name}: {}", stderr(&o));
        let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let residual = |metric: &str| {
            json["residuals"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["metric"] == metric)
                .unwrap_or_else(|| panic!("{name}: no residuals of {metric}: {json}"))
                .clone()
        };
        let (cpu, reacquired) = (residual("cpu_ns_per_acq"), residual("reacquired_share"));
        let (within, mean) = (
            cpu["within"].as_u64().unwrap(),
            cpu["mean_abs"].as_f64().unwrap(),
        );
        assert!(
            within >= fit.cpu_within && mean <= fit.cpu_mean_abs,
            "{name}: CPU time per acquisition within ±15 % at {within} of {} points (at least {} expected), mean |sim − native| {:.1} % (at most {:.1} %): the model moved; if on purpose, update FITS and docs/validation.md",
            cpu["n"],
            fit.cpu_within,
            100.0 * mean,
            100.0 * fit.cpu_mean_abs
        );
        let re = reacquired["within"].as_u64().unwrap();
        assert!(
            re >= fit.reacquired_within,
            "{name}: reacquired_share within 0.1 at {re} points (at least {} expected)",
            fit.reacquired_within
        );
        if fit.waited_within > 0 {
            let waited = residual("waited_share")["within"].as_u64().unwrap();
            assert!(
                waited >= fit.waited_within,
                "{name}: waited_share within 0.1 at {waited} points (at least {} expected)",
                fit.waited_within
            );
        }
    }
}
