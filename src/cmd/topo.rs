//! `locklab topo [--measure]`: the host as experiment-language text.

use crate::exit::{self, Result};

pub fn run(measure: bool) -> Result<i32> {
    let host = locklab_runner::host::detect();
    // One topology item either way, so that the output can be saved and `use`d.
    if measure {
        print!("{}", locklab_runner::calibrate::measure_report(&host));
    } else {
        print!("{}", locklab_runner::host::topology_as_lab(&host));
    }
    Ok(exit::OK)
}
