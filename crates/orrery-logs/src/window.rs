//! Byte windows of a log file (docs/format.md §6), read with memory bounded by the limit.

use crate::utf8::{decode, is_incomplete_char, unit_at};
use crate::LogError;
use serde::{Deserialize, Serialize};
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// The smallest window a reader gets, whatever limit it asks for.
pub const MIN_LIMIT: u64 = 1024;
/// The largest window a reader gets, whatever limit it asks for.
pub const MAX_LIMIT: u64 = 262_144;
/// The window size when the reader names none.
pub const DEFAULT_LIMIT: u64 = 65_536;

/// One window of a log. Continue from `next_offset`, never from the length of `content` (bytes
/// that are not UTF-8 are shown as U+FFFD, see [`crate::utf8`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Window {
    pub content: String,
    /// The byte offset of the first byte of `content`.
    pub start_offset: u64,
    /// The byte offset just after the last byte of `content`: where the next window starts.
    pub next_offset: u64,
    /// The file's size when it was read.
    pub file_size: u64,
    /// Whether bytes lie before `start_offset`.
    pub has_more_before: bool,
    /// Whether bytes lie at or after `next_offset` (more output, or an incomplete character
    /// at the end that is held back).
    pub has_more_after: bool,
    /// Whether the offset asked for lay past the end (the file was truncated or replaced) and
    /// the window is the tail instead.
    pub reset: bool,
}

/// The limit a window uses: [`DEFAULT_LIMIT`] when none is given, else clamped to
/// [`MIN_LIMIT`]..=[`MAX_LIMIT`].
pub fn clamp_limit(limit: Option<u64>) -> u64 {
    limit.map_or(DEFAULT_LIMIT, |l| l.clamp(MIN_LIMIT, MAX_LIMIT))
}

/// Reads one window of the log at `path`.
///
/// - `offset` -1 reads the tail: the last `limit` bytes, less the bytes of a character cut at
///   the front. `offset` 0 or more reads from there; any other negative offset is
///   [`LogError::InvalidOffset`].
/// - `limit` is clamped (see [`clamp_limit`]); the window holds at most `limit` bytes.
/// - An offset inside a character (or an invalid run, see [`crate::utf8`]) moves forward to its
///   end: a window never starts inside one. The window ends before a unit that the limit would
///   cut, so consecutive windows decode exactly as the whole file does; and it ends before
///   an incomplete character at the end of the file (a writer may be writing it), unless that
///   incomplete character is all there is to read from the offset: then it is given (as U+FFFD)
///   so that a reader of a finished file always gets to its end.
/// - An offset equal to the size gives an empty window at the end (`reset` false): the reader
///   has caught up. An offset past the size means the file was truncated or replaced: the
///   answer is the tail window with `reset` true.
/// - A file that does not exist (yet) reads as an empty file: an attempt that has not written
///   anything has an empty log, not a broken one. A directory is [`LogError::NotAFile`]; a file
///   that cannot be read is [`LogError::Io`].
pub fn read_window(path: &Path, offset: i64, limit: Option<u64>) -> Result<Window, LogError> {
    read_window_upto(path, offset, limit, None)
}

/// [`read_window`] of the log as it was when it had `upto` bytes (its size if it has fewer):
/// what an attempt had written at a moment ([`crate::size_at`]).
pub fn read_window_upto(path: &Path, offset: i64, limit: Option<u64>, upto: Option<u64>) -> Result<Window, LogError> {
    if offset < -1 {
        return Err(LogError::InvalidOffset { path: path.to_path_buf(), offset });
    }
    let limit = clamp_limit(limit);
    let mut file = match crate::open_nonblocking(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(empty(offset)),
        Err(e) => return Err(LogError::io(path, e)),
    };
    let meta = file.metadata().map_err(|e| LogError::io(path, e))?;
    if !meta.is_file() {
        return Err(LogError::NotAFile { path: path.to_path_buf() });
    }
    let size = upto.map_or(meta.len(), |upto| upto.min(meta.len()));
    let (wanted, reset) = match u64::try_from(offset) {
        Ok(o) if o <= size => (o, false),
        Ok(_) => (size.saturating_sub(limit), true),
        Err(_) => (size.saturating_sub(limit), false),
    };
    // Three bytes either side are enough to see whether a cut falls inside a character.
    let lo = wanted.saturating_sub(3);
    let hi = (wanted + 3 + limit + 3).min(size);
    let mut buf = Vec::with_capacity((hi - lo) as usize);
    file.seek(SeekFrom::Start(lo)).map_err(|e| LogError::io(path, e))?;
    (&mut file).take(hi - lo).read_to_end(&mut buf).map_err(|e| LogError::io(path, e))?;
    // The file may have shrunk since it was measured: its end is then where reading stopped.
    let expected_hi = hi;
    let hi = lo + buf.len() as u64;
    let size = if hi < expected_hi { hi } else { size };
    Ok(cut(&buf, lo, wanted, limit, size, reset))
}

/// A window of `bytes` held in memory (a log made up when it is read), as [`read_window`] cuts
/// one from a file: `offset` `None` reads the tail.
pub fn window_of(bytes: &[u8], offset: Option<u64>, limit: Option<u64>) -> Window {
    let limit = clamp_limit(limit);
    let size = bytes.len() as u64;
    let (wanted, reset) = match offset {
        Some(o) if o <= size => (o, false),
        Some(_) => (size.saturating_sub(limit), true),
        None => (size.saturating_sub(limit), false),
    };
    let lo = wanted.saturating_sub(3);
    let hi = (wanted + 3 + limit + 3).min(size);
    cut(&bytes[lo as usize..hi as usize], lo, wanted, limit, size, reset)
}

/// The window of at most `limit` bytes from `wanted`, aligned to characters, out of `buf`: the
/// bytes `lo..lo + buf.len()` of a log of `size` bytes.
fn cut(buf: &[u8], lo: u64, wanted: u64, limit: u64, size: u64, reset: bool) -> Window {
    let hi = lo + buf.len() as u64;
    let at = |abs: u64| (abs - lo) as usize;
    let wanted = wanted.min(hi);

    let mut start = wanted;
    for q in wanted.saturating_sub(3).max(lo)..wanted {
        if let Some(n) = unit_at(&buf[at(q)..(at(q) + 4).min(buf.len())]) {
            if q + n as u64 > wanted {
                start = q + n as u64;
            }
        }
    }
    let mut end = (start + limit).min(hi);
    for q in end.saturating_sub(3).max(start + 1)..end {
        let rest = &buf[at(q)..(at(q) + 4).min(buf.len())];
        let cut = unit_at(rest).is_some_and(|n| q + n as u64 > end) || is_incomplete_char(rest);
        if cut {
            end = q;
            break;
        }
    }
    Window {
        content: decode(&buf[at(start)..at(end)]),
        start_offset: start,
        next_offset: end,
        file_size: size,
        has_more_before: start > 0,
        has_more_after: end < size,
        reset,
    }
}

fn empty(offset: i64) -> Window {
    Window {
        content: String::new(),
        start_offset: 0,
        next_offset: 0,
        file_size: 0,
        has_more_before: false,
        has_more_after: false,
        reset: offset > 0,
    }
}
