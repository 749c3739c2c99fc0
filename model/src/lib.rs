//! locklab's plain data, shared by every other crate and depending on none of them.
//!
//! - [`plan::Plan`]: what the language decided, fully resolved: every point concrete,
//!   every unit normalised (ns, bytes, Hz).
//! - [`records::RunRecord`]: what an executor measured for one point × mode ×
//!   repetition.
//! - [`manifest::Manifest`]: what a results directory records to be reproducible.
//! - [`cost`]: the limits on what a plan may ask for, and the estimate of its work.
//! - [`select`]: which points a selector matches, which axes vary, and a point's
//!   baseline, defined once for the language and the analysis.
//! - [`time::Ns`]: a machine cost in nanoseconds, to the picosecond.
//! - [`topology::CpuMap`]: the CPUs of a modelled or detected machine, distances and
//!   thread placement.
//!
//! Architecture Invariant: this crate does no IO and knows nothing of the grammar,
//! the executors or the dataframes. Everything here is plain data with serde.

pub mod cost;
pub mod manifest;
pub mod metrics;
pub mod plan;
pub mod records;
pub mod select;
pub mod time;
pub mod topology;
pub mod units;
