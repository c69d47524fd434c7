//! Attempt logs as their readers see them: byte windows of a log file aligned to UTF-8
//! characters ([`read_window`], docs/format.md §6) and a follower that yields every byte
//! appended to a log while its writer runs ([`follow`], [`follow_until`]).
//!
//! Offsets are always byte offsets of the file; content is always a `String`. The rules both
//! share (where a window may start and end, how bytes that are not UTF-8 are shown) live in
//! [`utf8`]; what a window answers for each edge case is documented on [`read_window`], what the
//! follower does on [`follow`].

mod error;
mod follow;
pub mod utf8;
mod window;

pub use error::LogError;
pub use follow::{follow, follow_until, FollowOptions, Follower, LogChunk, LogEvent, WatchMode};
pub use window::{clamp_limit, read_window, Window, DEFAULT_LIMIT, MAX_LIMIT, MIN_LIMIT};
