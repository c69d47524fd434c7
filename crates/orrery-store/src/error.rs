//! Every way the store can fail, with a stable `code()` that crosses IPC and HTTP unchanged.
//!
//! SQLite failures are mapped by their (extended) result codes, never by message text, and each
//! message names the file, session, run or request it is about.

use std::path::{Path, PathBuf};

use orrery_blueprint::FailureCode;
use rusqlite::ffi;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    #[error("{what} {id:?} not found")]
    NotFound { what: &'static str, id: String },

    #[error("run {run_id:?} is no longer running (it is {state}); the write was refused")]
    StaleRun { run_id: String, state: String },

    #[error("request id {request_id:?} was already used for {operation} with other arguments")]
    RequestIdReused { request_id: String, operation: String },

    #[error("session {session_id} is driven by another runner (process {pid})")]
    Leased { session_id: String, pid: u32 },

    #[error("project {project:?} has no task {name:?}")]
    TaskNotFound { project: String, name: String },
    #[error("task {task:?} has no event {seq}")]
    EventNotFound { task: String, seq: u64 },
    #[error("task {name:?} exists with another goal ({goal:?})")]
    TaskExists { name: String, goal: String },
    #[error("{message}")]
    Refused { message: String },
    #[error("invalid argument: {message}")]
    InvalidArgument { message: String },

    #[error("{path} is not a usable Orrery database: {detail}")]
    Corrupt { path: PathBuf, detail: String },

    #[error("{path} cannot be written: {detail}")]
    ReadOnly { path: PathBuf, detail: String },

    #[error("no space left to write {path}: {detail}")]
    DiskFull { path: PathBuf, detail: String },

    #[error("{path} is locked by another writer for too long: {detail}")]
    Busy { path: PathBuf, detail: String },

    #[error("cannot migrate {path}: {message}")]
    Migration { path: PathBuf, message: String },

    #[error("file system error on {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("SQLite error on {path}: {source}")]
    Sqlite {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
}

impl StoreError {
    /// A stable, machine-readable code; the UI and CLI match on this, never on the message.
    pub fn code(&self) -> FailureCode {
        match self {
            StoreError::NotFound { .. } => FailureCode::NotFound,
            StoreError::StaleRun { .. } => FailureCode::StaleRun,
            StoreError::RequestIdReused { .. } => FailureCode::RequestIdReused,
            StoreError::Leased { .. } => FailureCode::Leased,
            StoreError::TaskNotFound { .. } => FailureCode::TaskNotFound,
            StoreError::EventNotFound { .. } => FailureCode::EventNotFound,
            StoreError::TaskExists { .. } => FailureCode::TaskExists,
            StoreError::Refused { .. } => FailureCode::Refused,
            StoreError::InvalidArgument { .. } => FailureCode::InvalidArgument,
            StoreError::Corrupt { .. } => FailureCode::Corrupt,
            StoreError::ReadOnly { .. } => FailureCode::ReadOnly,
            StoreError::DiskFull { .. } => FailureCode::DiskFull,
            StoreError::Busy { .. } => FailureCode::Busy,
            StoreError::Migration { .. } => FailureCode::Migration,
            StoreError::Io { .. } => FailureCode::Io,
            StoreError::Sqlite { .. } => FailureCode::Storage,
        }
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        StoreError::InvalidArgument { message: message.into() }
    }

    pub(crate) fn not_found(what: &'static str, id: impl Into<String>) -> Self {
        StoreError::NotFound { what, id: id.into() }
    }

    /// Maps a rusqlite error on the database at `path` by its result code.
    pub(crate) fn sqlite(path: &Path, err: rusqlite::Error) -> Self {
        let path = path.to_path_buf();
        let rusqlite::Error::SqliteFailure(ffi_err, message) = &err else {
            return StoreError::Sqlite { path, source: err };
        };
        let detail = message.clone().unwrap_or_else(|| ffi_err.to_string());
        match ffi_err.extended_code & 0xff {
            ffi::SQLITE_NOTADB | ffi::SQLITE_CORRUPT => StoreError::Corrupt { path, detail },
            ffi::SQLITE_READONLY | ffi::SQLITE_PERM | ffi::SQLITE_AUTH => StoreError::ReadOnly { path, detail },
            ffi::SQLITE_FULL => StoreError::DiskFull { path, detail },
            ffi::SQLITE_BUSY | ffi::SQLITE_LOCKED => {
                StoreError::Busy { path, detail: "another connection held it for longer than the busy timeout".into() }
            }
            ffi::SQLITE_CANTOPEN if !writable(&path) => StoreError::ReadOnly { path, detail },
            ffi::SQLITE_IOERR if ffi_err.extended_code == ffi::SQLITE_IOERR_WRITE && no_space(&path) => {
                StoreError::DiskFull { path, detail }
            }
            ffi::SQLITE_IOERR if ffi_err.extended_code == ffi::SQLITE_IOERR_WRITE => match file_size_limit(&path) {
                Some(limit) => StoreError::DiskFull {
                    path,
                    detail: format!("the file size limit of this process ({limit} bytes, `ulimit -f`) is reached"),
                },
                None => StoreError::Sqlite { path, source: err },
            },
            _ => StoreError::Sqlite { path, source: err },
        }
    }

    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        let path = path.to_path_buf();
        match source.kind() {
            std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem => {
                StoreError::ReadOnly { path, detail: source.to_string() }
            }
            std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded => {
                StoreError::DiskFull { path, detail: source.to_string() }
            }
            _ => StoreError::Io { path, source },
        }
    }
}

/// Whether this process may write the database file (or create it in its folder). Used only to
/// explain SQLITE_CANTOPEN, which does not say why it could not open.
pub(crate) fn writable(path: &Path) -> bool {
    let folder = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    access_w(folder) && (!path.exists() || access_w(path))
}

fn access_w(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `c` is a valid NUL-terminated string that outlives the call.
    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
}

/// A failed write on a file system with no free blocks is ENOSPC; SQLite reports some of those
/// as SQLITE_IOERR_WRITE rather than SQLITE_FULL.
fn no_space(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let dir = path.parent().unwrap_or(Path::new("."));
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: zeroed statvfs is a valid out-parameter; `c` outlives the call.
    unsafe {
        let mut st: libc::statvfs = std::mem::zeroed();
        libc::statvfs(c.as_ptr(), &mut st) == 0 && st.f_bavail == 0
    }
}

/// The file size limit (RLIMIT_FSIZE) of this process when the database or its WAL has reached
/// it (within a page or two): a failed write is then EFBIG, which SQLite reports as
/// SQLITE_IOERR_WRITE.
fn file_size_limit(path: &Path) -> Option<u64> {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: a valid pointer to an rlimit owned by this frame.
    if unsafe { libc::getrlimit(libc::RLIMIT_FSIZE, &mut limit) } != 0 || limit.rlim_cur == libc::RLIM_INFINITY {
        return None;
    }
    let limit = limit.rlim_cur;
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    let largest = [path, Path::new(&wal)].iter().filter_map(|p| std::fs::metadata(p).ok()).map(|m| m.len()).max()?;
    (largest + 2 * 65536 >= limit).then_some(limit)
}

/// `rusqlite::Result` mapped onto the store's error, naming the database file.
pub(crate) trait SqliteResultExt<T> {
    fn at(self, path: &Path) -> Result<T, StoreError>;
}

impl<T> SqliteResultExt<T> for rusqlite::Result<T> {
    fn at(self, path: &Path) -> Result<T, StoreError> {
        self.map_err(|e| StoreError::sqlite(path, e))
    }
}
