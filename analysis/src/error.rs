//! The crate's error type: every variant names the offending path or value.

use std::path::PathBuf;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{action} {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot parse {path}: {source}")]
    Yaml {
        path: PathBuf,
        #[source]
        source: serde_yaml::Error,
    },
    #[error("cannot write {path}: {source}")]
    Json {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("{context}: {source}")]
    Polars {
        context: String,
        #[source]
        source: polars::error::PolarsError,
    },
    /// A results directory that does not hold what it should (missing files, a
    /// different plan, overlapping shards).
    #[error("{0}")]
    Results(String),
    /// Two results directories that must not be compared (different plans).
    #[error("{0}")]
    Incompatible(String),
    /// Native results of different hosts, which are not compared unless asked.
    #[error("{0}")]
    CrossHost(String),
    #[error("cannot draw {plot}: {message}")]
    Plot { plot: String, message: String },
}

impl Error {
    pub(crate) fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(std::io::Error) -> Error {
        let path = path.into();
        move |source| Error::Io {
            action,
            path,
            source,
        }
    }

    pub(crate) fn polars(
        context: impl Into<String>,
    ) -> impl FnOnce(polars::error::PolarsError) -> Error {
        let context = context.into();
        move |source| Error::Polars { context, source }
    }
}
