//! locklab's analysis: the results store, the polars pipeline, claims, plots and the
//! report.
//!
//! Main entry points:
//!
//! * [`store::ResultsWriter`] writes a results directory record by record and
//!   [`store::load_results`] reads it back as lazy polars frames;
//! * [`pipeline`] aggregates repetitions (median and 95 % interval), speedups,
//!   per-thread, per-node and node-to-node tables;
//! * [`claims::evaluate`] judges each claim of the plan on those intervals;
//! * [`report::build_report`] writes `report/index.html`, `report/report.md`, every
//!   figure ([`plots`]) and `claims.json`;
//! * [`compare::compare`] sets two results directories side by side;
//! * [`bench::bench_pipeline`] times the whole pipeline on synthetic data.
//!
//! ```no_run
//! # fn main() -> locklab_analysis::Result<()> {
//! let dir = std::path::Path::new("results/cna_threshold/run-1");
//! let results = locklab_analysis::load_results(dir)?;
//! let claims = locklab_analysis::claims::evaluate(results.plan(), &results);
//! print!("{}", locklab_analysis::claims::claims_table(&claims, 100));
//! let report = locklab_analysis::report::build_report(dir)?;
//! println!("{}", report.index_html.display());
//! let gating = locklab_analysis::VerdictCounts::gating(&claims);
//! println!("{} gating claims failed, {} could not be evaluated", gating.fail, gating.error);
//! # Ok(())
//! # }
//! ```
//!
//! Architecture Invariant: this crate never runs experiments; it reads and writes
//! results directories only. polars and plotters stay inside it. It picks no exit
//! codes: it counts verdicts ([`VerdictCounts`]) and the command line decides.

pub mod bench;
pub mod claims;
mod combine;
pub mod compare;
pub mod error;
pub mod pipeline;
pub mod plots;
pub mod report;
pub mod stats;
pub mod store;
mod util;

pub use claims::{claims_table, evaluate, write_claims_json, ClaimResult, Verdict, VerdictCounts};
pub use error::{Error, Result};
pub use store::{load_results, merge, Results, ResultsWriter};
pub use util::{fmt_num, now_utc};
