//! locklab's analysis: the results store, the polars pipeline, claims, plots and the
//! report.
//!
//! Architecture Invariant: this crate never runs experiments; it reads and writes
//! results directories only. polars and plotters stay inside it.

pub mod claims;
pub mod error;
pub mod pipeline;
pub mod stats;
pub mod store;
mod util;

pub use claims::{claims_table, evaluate, exit_code, write_claims_json, ClaimResult, Verdict};
pub use error::{Error, Result};
pub use store::{load_results, merge, Results, ResultsWriter};
pub use util::{fmt_num, now_utc};
