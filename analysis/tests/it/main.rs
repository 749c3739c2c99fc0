//! Integration tests of locklab-analysis: one binary, one module per area.

mod claims;
mod common;
mod pipeline;
mod store;
