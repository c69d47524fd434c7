//! Attempt logs as their readers see them: byte windows of a log file aligned to UTF-8
//! characters ([`read_window`], docs/format.md §6) and a follower that yields every byte
//! appended to a log while its writer runs ([`follow`], [`follow_until`]), and how a log grew
//! over time ([`record_size`], [`size_at`]): what it held at a moment.
//!
//! Offsets are always byte offsets of the file; content is always a `String`. The rules both
//! share (where a window may start and end, how bytes that are not UTF-8 are shown) live in
//! [`utf8`]; what a window answers for each edge case is documented on [`read_window`], what the
//! follower does on [`follow`].

mod error;
mod follow;
mod sizes;
pub mod utf8;
mod window;

pub use error::LogError;
pub use follow::{follow, follow_until, FollowOptions, Follower, LogChunk, LogEvent, WatchMode};
pub use sizes::{record_size, size_at};
pub use window::{clamp_limit, read_window, read_window_upto, window_of, Window, DEFAULT_LIMIT, MAX_LIMIT, MIN_LIMIT};

/// Opens a log for reading without blocking: a FIFO put where a log was expected (a task may
/// replace its own log) opens at once instead of pinning the reader's thread, and is then
/// refused by the caller's check that the open descriptor is a regular file.
fn open_nonblocking(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC).open(path)
}
