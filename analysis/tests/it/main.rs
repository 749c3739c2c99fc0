//! Integration tests of locklab-analysis: one binary, one module per area.

mod bench;
mod claims;
mod common;
mod compare;
mod docs;
mod pipeline;
mod report;
mod store;
