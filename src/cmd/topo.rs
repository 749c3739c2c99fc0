//! `locklab topo [--measure [--passes N]] [--name NAME]`: the host as experiment-language text,
//! one `topology` item that can be saved and `use`d.

use crate::exit::{self, Failure, Result};
use anyhow::anyhow;

pub fn run(measure: bool, passes: usize, name: Option<&str>) -> Result<i32> {
    if let Some(n) = name {
        let mut chars = n.chars();
        let ident = chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !ident {
            return Err(Failure::new(
                exit::INVALID_INPUT,
                anyhow!("--name must be an identifier (letters, digits, `_`), not `{n}`"),
            ));
        }
    }
    let host = locklab_runner::host::detect();
    if measure {
        if passes == 0 {
            return Err(Failure::new(
                exit::INVALID_INPUT,
                anyhow!("--passes must be at least 1"),
            ));
        }
        print!(
            "{}",
            locklab_runner::calibrate::measure_report(&host, name, passes)
        );
    } else {
        print!(
            "{}",
            locklab_runner::host::topology_as_lab_with(&host, None, name)
        );
    }
    Ok(exit::OK)
}
