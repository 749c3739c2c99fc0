//! Syntax tree with spans, and the parser that builds it.
//!
//! Parsing never fails: [`parse_file`] returns every item it could read and a
//! diagnostic for every piece it could not. The file is first cut into pieces (one
//! top-level item, or one statement of an experiment block) by a small scanner that
//! only knows about brackets, strings and comments (`scan`); pest then parses each
//! piece on its own (`parse`), its errors are put into words (`errors`) and its
//! pairs become the tree (`lower`, `ast`). A broken lock definition therefore does
//! not hide a typo in the sweep below it.

mod ast;
mod errors;
mod lower;
mod parse;
mod scan;

pub use ast::*;
pub use parse::{parse_file, parse_set_values};

#[derive(pest_derive::Parser)]
#[grammar = "grammar.pest"]
struct LabParser;

/// Deeper nesting than this is refused before pest sees it (no input may overflow
/// the stack).
const MAX_DEPTH: usize = 40;

/// A statement may hold at most this many `+ - * /`: a claim's expression is a tree
/// that later stages walk recursively and store in the manifest, whose readers
/// limit nesting.
const MAX_OPERATORS: usize = 32;
