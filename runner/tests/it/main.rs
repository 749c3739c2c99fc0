//! locklab-runner's integration tests: one binary, one module per area.
//!
//! Loom models live in `loom` and only build with `--cfg loom`:
//!
//!     RUSTFLAGS="--cfg loom" cargo test -p locklab-runner --release --test it loom
//!
//! (the other modules are left out of that build: their atomics would be loom's).

#[cfg(not(loom))]
mod behaviour;
#[cfg(not(loom))]
mod censored;
#[cfg(not(loom))]
mod common;
#[cfg(not(loom))]
mod host;
#[cfg(loom)]
mod loom;
#[cfg(not(loom))]
mod native_run;
#[cfg(not(loom))]
mod native_wakeup;
#[cfg(not(loom))]
mod step;
#[cfg(not(loom))]
mod stress;
#[cfg(not(loom))]
mod workloads;
