//! The one error type of this crate: every variant names the file, and the argument when an
//! argument is at fault.

use std::path::PathBuf;

use orrery_blueprint::FailureCode;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LogError {
    /// `offset` is negative and not -1 (the tail).
    #[error("offset {offset} for log {} is not valid: give a byte offset >= 0, or -1 for the tail", path.display())]
    InvalidOffset { path: PathBuf, offset: i64 },
    /// The path names a directory (or something else that is not a regular file).
    #[error("log {} is not a file", path.display())]
    NotAFile { path: PathBuf },
    /// Reading the file failed.
    #[error("cannot read log {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl LogError {
    /// A stable code for `{code, message}` answers at a boundary.
    pub fn code(&self) -> FailureCode {
        match self {
            LogError::InvalidOffset { .. } => FailureCode::InvalidOffset,
            LogError::NotAFile { .. } => FailureCode::NotAFile,
            LogError::Io { .. } => FailureCode::Io,
        }
    }

    pub(crate) fn io(path: &std::path::Path, source: std::io::Error) -> LogError {
        LogError::Io { path: path.to_path_buf(), source }
    }
}
