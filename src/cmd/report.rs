//! `locklab report DIR`: rebuild the claims, plots and report from stored results.

use crate::exit::{self, Accept, Failure, Result};
use anyhow::anyhow;
use std::path::Path;

pub fn run(dir: &Path, accept: Accept) -> Result<i32> {
    if !dir.join("manifest.yaml").is_file() {
        return Err(Failure::new(
            exit::INVALID_INPUT,
            anyhow!(
                "{} is not a results directory (no manifest.yaml)",
                dir.display()
            ),
        ));
    }
    super::run::check_and_report(dir, true, accept)
}
