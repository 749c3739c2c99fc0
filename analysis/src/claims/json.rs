//! `claims.json`: the evaluated claims of a results directory.

use super::ClaimResult;
use crate::error::{Error, Result};
use crate::util::write_atomic;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// `<dir>/claims.json`: `{ "schema_version": 1, "claims": [...] }`, written atomically.
pub fn write_claims_json(dir: &Path, claims: &[ClaimResult]) -> Result<()> {
    #[derive(Serialize)]
    struct File<'a> {
        schema_version: u32,
        claims: &'a [ClaimResult],
    }
    let path = dir.join("claims.json");
    let text = serde_json::to_string_pretty(&File {
        schema_version: crate::store::RESULTS_SCHEMA_VERSION,
        claims,
    })
    .map_err(|source| Error::Json {
        path: path.clone(),
        source,
    })?;
    write_atomic(&path, text.as_bytes())
}

/// Read `<dir>/claims.json` back.
pub fn read_claims_json(dir: &Path) -> Result<Vec<ClaimResult>> {
    #[derive(Deserialize)]
    struct File {
        claims: Vec<ClaimResult>,
    }
    let path = dir.join("claims.json");
    let text = crate::util::read_to_string(&path)?;
    let f: File = serde_json::from_str(&text).map_err(|source| Error::Json { path, source })?;
    Ok(f.claims)
}
