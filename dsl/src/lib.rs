//! The locklab experiment language.
//!
//! Architecture Invariant: this crate does no IO of its own; files come through a
//! loader. Its output is the plain-data [`plan::Plan`].

pub mod plan;
