//! Following a log while its writer runs: every byte appended, in order, as UTF-8-aligned chunks.
//!
//! # How it notices bytes
//!
//! - **Events.** A `notify` watcher on the log's folder (not the file: the file may not exist
//!   yet, and a replaced file is a new inode) wakes the follower on any change to the log's name.
//!   Wake-ups are coalesced (a `tokio::sync::Notify` permit), so a burst of writes costs one read
//!   pass, not one per event.
//! - **Periodic rescan.** Events are lost while a watcher is down or overflowing (docs/format.md
//!   §6, from AxonX's bug reports), so the follower also looks every
//!   [`FollowOptions::rescan`] whatever the events say. No appended byte depends on an event.
//! - **Polling fallback.** When no watcher can be set up (the folder does not exist yet, the
//!   inotify limits are reached, a file system without events), the follower polls every
//!   [`FollowOptions::poll`] instead: [`WatchMode::Poll`].
//!
//! # What it yields
//!
//! - [`LogEvent::Chunk`]s with their byte offsets; each starts where the previous ended. A
//!   chunk never ends inside a character: an incomplete character at the end is held back until
//!   its last byte arrives (UTF-8 decoded incrementally across reads), and given as U+FFFD only
//!   when the writer is done and it never completed. Bytes that are not UTF-8 are shown as U+FFFD
//!   (see [`crate::utf8`]); offsets count the file's bytes.
//! - [`LogEvent::Reset`] when the file shrinks below what was read (truncated) or the path names
//!   another file (replaced: another inode, or removed and written again). The bytes the old file
//!   still had are given first; after the reset, chunks start at offset 0 of the new file. A
//!   truncation that is written past the old length between two looks cannot be told from an
//!   append (as with `tail -f`).
//! - A start offset inside a character moves forward past it; a start offset past the end of
//!   the file when it is first seen is a reset (as for windows, see [`crate::read_window`]).
//! - A log that does not exist yet is waited for; a path that is a directory ends the follower
//!   with [`LogError::NotAFile`], a read error with [`LogError::Io`].
//!
//! Reads are plain blocking reads of at most one chunk on the follower's tokio task: a log is a
//! local file, mostly in the page cache, and a `spawn_blocking` hop per chunk costs more than
//! the read.
//!
//! Memory is bounded by the chunk size (one read buffer, at most [`CHANNEL_CHUNKS`] chunks in
//! flight) whatever the size of the file. The follower stops when it is dropped, and ends after
//! draining the file once its writer is done ([`Follower::writer_done`], [`follow_until`]).

use crate::utf8::{complete_prefix_len, decode_owned, unit_at};
use crate::LogError;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::future::Future;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot, Notify};

/// How many chunks may wait for the reader before the follower stops reading.
pub const CHANNEL_CHUNKS: usize = 4;

/// How a follower notices changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchMode {
    /// File-system events, plus the periodic rescan.
    Native,
    /// Polling only (no watcher could be set up, or [`FollowOptions::force_poll`]).
    Poll,
}

#[derive(Debug, Clone)]
pub struct FollowOptions {
    /// The most bytes read (and given in one chunk) at a time; by default the largest window
    /// ([`crate::MAX_LIMIT`]): fewer, larger reads keep up with a fast writer.
    pub chunk_size: usize,
    /// How often the file is looked at whatever the events say.
    pub rescan: Duration,
    /// How often the file is looked at without events.
    pub poll: Duration,
    /// Poll even when a watcher could be set up.
    pub force_poll: bool,
}

impl Default for FollowOptions {
    fn default() -> Self {
        FollowOptions {
            chunk_size: crate::MAX_LIMIT as usize,
            rescan: Duration::from_millis(500),
            poll: Duration::from_millis(100),
            force_poll: false,
        }
    }
}

/// Bytes of the log, decoded: they lie at `start_offset..next_offset` of the file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogChunk {
    pub content: String,
    pub start_offset: u64,
    pub next_offset: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum LogEvent {
    Chunk(LogChunk),
    /// The file was truncated or replaced; what follows starts at offset 0 of the new file.
    Reset,
}

/// A running follower; see the module notes. Must be created inside a tokio runtime.
pub struct Follower {
    rx: mpsc::Receiver<Result<LogEvent, LogError>>,
    done: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
    mode: WatchMode,
}

impl Follower {
    /// The next event; `None` once the follower has ended (writer done and drained, or after an
    /// error).
    pub async fn next(&mut self) -> Option<Result<LogEvent, LogError>> {
        self.rx.recv().await
    }

    /// Says the writer is done: the follower reads the file to its end, then ends.
    pub fn writer_done(&mut self) {
        if let Some(done) = self.done.take() {
            let _ = done.send(());
        }
    }

    pub fn watch_mode(&self) -> WatchMode {
        self.mode
    }
}

impl Drop for Follower {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Follows the log at `path` from byte `start_offset` until [`Follower::writer_done`] (or the
/// follower is dropped).
pub fn follow(path: &Path, start_offset: u64, options: FollowOptions) -> Follower {
    follow_until(path, start_offset, options, std::future::pending())
}

/// Follows the log at `path` from byte `start_offset`; once `done` resolves (the writer is
/// done), reads the file to its end and ends.
pub fn follow_until(
    path: &Path,
    start_offset: u64,
    options: FollowOptions,
    done: impl Future<Output = ()> + Send + 'static,
) -> Follower {
    let (tx, rx) = mpsc::channel(CHANNEL_CHUNKS);
    let (done_tx, done_rx) = oneshot::channel::<()>();
    let wake = Arc::new(Notify::new());
    let watcher = if options.force_poll { None } else { watch(path, wake.clone()) };
    let mode = if watcher.is_some() { WatchMode::Native } else { WatchMode::Poll };
    let wait = match mode {
        WatchMode::Native => options.rescan,
        WatchMode::Poll => options.poll.min(options.rescan),
    };
    let tail = Tail {
        path: path.to_path_buf(),
        file: None,
        pos: start_offset,
        seen_a_file: false,
        chunk_size: options.chunk_size.max(4),
        tx,
    };
    let done: Pin<Box<dyn Future<Output = ()> + Send>> = Box::pin(async move {
        tokio::select! {
            _ = done_rx => {}
            _ = done => {}
        }
    });
    let task = tokio::spawn(run(tail, watcher, wake, wait, done));
    Follower { rx, done: Some(done_tx), task, mode }
}

/// A watcher on the log's folder that wakes the follower on changes to the log's name.
fn watch(path: &Path, wake: Arc<Notify>) -> Option<notify::RecommendedWatcher> {
    use notify::Watcher;
    let name = path.file_name()?.to_os_string();
    let folder = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let handler = move |event: notify::Result<notify::Event>| {
        let ours = match &event {
            Ok(e) => e.paths.is_empty() || e.paths.iter().any(|p| p.file_name() == Some(name.as_os_str())),
            // An error may mean lost events: look.
            Err(_) => true,
        };
        if ours {
            wake.notify_one();
        }
    };
    let mut watcher = notify::recommended_watcher(handler).ok()?;
    watcher.watch(&folder, notify::RecursiveMode::NonRecursive).ok()?;
    Some(watcher)
}

async fn run(
    mut tail: Tail,
    watcher: Option<notify::RecommendedWatcher>,
    wake: Arc<Notify>,
    wait: Duration,
    mut done: Pin<Box<dyn Future<Output = ()> + Send>>,
) {
    let _watcher = watcher;
    loop {
        if tail.scan(false).await.is_err() {
            return;
        }
        tokio::select! {
            biased;
            _ = &mut done => {
                let _ = tail.scan(true).await;
                return;
            }
            _ = wake.notified() => {}
            _ = tokio::time::sleep(wait) => {}
        }
    }
}

/// The inode that a path names.
type Identity = (u64, u64);

struct Tail {
    path: PathBuf,
    /// The file being read and its identity; kept after the path goes away so that its last
    /// bytes can still be read.
    file: Option<(File, Identity)>,
    /// The next byte to read; always on a character boundary of the file read.
    pos: u64,
    seen_a_file: bool,
    chunk_size: usize,
    tx: mpsc::Sender<Result<LogEvent, LogError>>,
}

/// Why a scan stops the follower: the reader is gone, or an error was sent.
struct Stop;

impl Tail {
    /// Gives every byte there is now; with `last`, an incomplete character at the end too.
    async fn scan(&mut self, last: bool) -> Result<(), Stop> {
        loop {
            let named = match std::fs::metadata(&self.path) {
                Ok(m) if !m.is_file() => return self.fail(LogError::NotAFile { path: self.path.clone() }).await,
                Ok(m) => Some((m.dev(), m.ino())),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(e) => return self.fail(LogError::io(&self.path, e)).await,
            };
            match (&self.file, named) {
                (None, None) => return Ok(()),
                (None, Some(_)) => {
                    if self.open().await? {
                        continue;
                    }
                    return Ok(());
                }
                (Some((_, ours)), Some(theirs)) if *ours != theirs => {
                    // Replaced: what the old file still had, then the new one from its start.
                    self.drain(true).await?;
                    self.file = None;
                    self.send(LogEvent::Reset).await?;
                    self.pos = 0;
                }
                (Some(_), None) => return self.drain(last).await,
                (Some((file, _)), Some(_)) => {
                    let size = match file.metadata() {
                        Ok(m) => m.len(),
                        Err(e) => return self.fail(LogError::io(&self.path, e)).await,
                    };
                    if size < self.pos {
                        self.send(LogEvent::Reset).await?;
                        self.pos = 0;
                    }
                    return self.drain(last).await;
                }
            }
        }
    }

    /// Opens the file the path names; false when it went away in between.
    async fn open(&mut self) -> Result<bool, Stop> {
        let file = match crate::open_nonblocking(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return self.fail(LogError::io(&self.path, e)).await,
        };
        let meta = match file.metadata() {
            Ok(m) => m,
            Err(e) => return self.fail(LogError::io(&self.path, e)).await,
        };
        if !meta.is_file() {
            return self.fail(LogError::NotAFile { path: self.path.clone() }).await;
        }
        if !self.seen_a_file && self.pos > 0 {
            if self.pos > meta.len() {
                self.send(LogEvent::Reset).await?;
                self.pos = 0;
            } else {
                self.pos = match align_forward(&file, self.pos) {
                    Ok(p) => p,
                    Err(e) => return self.fail(LogError::io(&self.path, e)).await,
                };
            }
        }
        self.seen_a_file = true;
        self.file = Some((file, (meta.dev(), meta.ino())));
        Ok(true)
    }

    /// Reads the open file from `pos` to its end; with `last`, gives an incomplete character at
    /// the very end too.
    async fn drain(&mut self, last: bool) -> Result<(), Stop> {
        loop {
            let Some((file, _)) = &self.file else { return Ok(()) };
            // A fresh buffer each time, read into without zeroing it first, becomes the chunk's
            // String without a copy when it is valid UTF-8 (nearly always).
            let mut bytes = Vec::with_capacity(self.chunk_size);
            let mut reader = file;
            let read = reader
                .seek(SeekFrom::Start(self.pos))
                .and_then(|_| reader.take(self.chunk_size as u64).read_to_end(&mut bytes));
            if let Err(e) = read {
                return self.fail(LogError::io(&self.path, e)).await;
            }
            let n = bytes.len();
            if n == 0 {
                return Ok(());
            }
            let mut k = complete_prefix_len(&bytes);
            if k < n && last {
                // Is the incomplete character at the end of the file? Then it never completed.
                let at_end = file.metadata().map(|m| self.pos + n as u64 >= m.len()).unwrap_or(true);
                if at_end {
                    k = n;
                }
            }
            if k == 0 {
                return Ok(());
            }
            bytes.truncate(k);
            let chunk =
                LogChunk { content: decode_owned(bytes), start_offset: self.pos, next_offset: self.pos + k as u64 };
            self.pos += k as u64;
            self.send(LogEvent::Chunk(chunk)).await?;
        }
    }

    async fn send(&self, event: LogEvent) -> Result<(), Stop> {
        self.tx.send(Ok(event)).await.map_err(|_| Stop)
    }

    async fn fail<T>(&self, error: LogError) -> Result<T, Stop> {
        let _ = self.tx.send(Err(error)).await;
        Err(Stop)
    }
}

/// `pos`, or the end of the unit (character or invalid run) it falls inside.
fn align_forward(file: &File, pos: u64) -> std::io::Result<u64> {
    let lo = pos.saturating_sub(3);
    let mut around = [0u8; 7];
    let n = file.read_at(&mut around, lo)?;
    let around = &around[..n];
    for q in lo..pos {
        let i = (q - lo) as usize;
        if let Some(len) = around.get(i..).and_then(unit_at) {
            if q + len as u64 > pos {
                return Ok(q + len as u64);
            }
        }
    }
    Ok(pos)
}
