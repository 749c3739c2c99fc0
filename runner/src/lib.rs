//! locklab's runner: lock algorithms written once over [`env::Env`], the native
//! executor (real threads, pinned), the discrete-event simulator, host discovery, and
//! the records both produce.
//!
//! Main types: [`env::Env`] (what lock and workload code sees); [`locks::Lock`] and
//! [`locks::with_lock`] (the plan's algorithm as a lock type); [`workload::Shape`] and
//! [`workload::run_thread`] (a workload, run by both executors); the executors'
//! entry points [`native::run_point`] and [`sim::run_points`].
//!
//! Architecture Invariant: only this crate touches the machine (`/sys`, `/proc`,
//! affinity, clocks, threads). It never depends on polars.

pub mod calibrate;
pub mod env;
pub mod host;
pub mod locks;
pub mod native;
pub mod rng;
pub mod sim;
pub mod stats;
pub mod workload;
