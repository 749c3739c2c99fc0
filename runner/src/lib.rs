//! locklab's runner: lock algorithms written once over [`env::Env`], the native
//! executor (real threads, pinned), the discrete-event simulator, host discovery, and
//! the records both produce.
//!
//! Architecture Invariant: only this crate touches the machine (`/sys`, `/proc`,
//! affinity, clocks, threads). It never depends on polars.

pub mod env;
pub mod host;
pub mod locks;
pub mod native;
pub mod rng;
pub mod sim;
pub mod stats;
pub mod workload;
