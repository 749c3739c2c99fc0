//! Exit codes: documented and stable (README, `locklab --help`).

/// Every gating claim holds (or there were none), or the command succeeded.
pub const OK: i32 = 0;
/// At least one gating claim failed.
pub const CLAIM_FAILED: i32 = 1;
/// Invalid input or usage: a parse or semantic error, a bad flag, a missing file.
pub const INVALID_INPUT: i32 = 2;
/// The run could not complete (an executor error, an unwritable results directory).
pub const RUN_FAILED: i32 = 3;
/// The environment refused (e.g. pinning impossible, cross-host comparison refused).
pub const ENVIRONMENT: i32 = 4;

/// An error that carries the exit code it should produce.
#[derive(Debug)]
pub struct Failure {
    pub code: i32,
    pub error: anyhow::Error,
}

impl Failure {
    pub fn new(code: i32, error: impl Into<anyhow::Error>) -> Self {
        Failure {
            code,
            error: error.into(),
        }
    }
}

impl<E: Into<anyhow::Error>> From<E> for Failure {
    fn from(e: E) -> Self {
        Failure {
            code: RUN_FAILED,
            error: e.into(),
        }
    }
}

pub type Result<T> = std::result::Result<T, Failure>;

/// Attach an exit code to any error.
pub trait WithCode<T> {
    fn code(self, code: i32) -> Result<T>;
}

impl<T, E: Into<anyhow::Error>> WithCode<T> for std::result::Result<T, E> {
    fn code(self, code: i32) -> Result<T> {
        self.map_err(|e| Failure::new(code, e))
    }
}
