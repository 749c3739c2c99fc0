//! `locklab topo [--measure]`: the host as experiment-language text.

use crate::exit::{self, Result};

pub fn run(measure: bool) -> Result<i32> {
    let host = locklab_runner::host::detect();
    print!("{}", locklab_runner::host::topology_as_lab(&host));
    if measure {
        print!("{}", locklab_runner::host::measure_report(&host));
    }
    Ok(exit::OK)
}
