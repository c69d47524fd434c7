//! Log growth on the event stream: while an attempt of a session running in this process runs,
//! the size of its log is looked at every [`LOOK_EVERY`], and a change is announced to
//! [`Api::subscribe`] as a `log_grew` event (`{node, attempt, file_size}`), at most one per
//! attempt per look, and a last one when the attempt settles. Growth of at most [`CARRIED_MAX`]
//! bytes comes with them (`from`, the offset they start at, and `text`, whole characters only):
//! a viewer that holds the log up to `from` appends them without reading, a round trip sooner.
//!
//! These events are **transient**: not stored, `seq` 0, and `global_seq` the last stored
//! event's of the session seen so far, so that a client resuming from an event id misses none
//! of the stored ones. A client that missed growth reads the log's window, whose `file_size`
//! is the truth; the events only say when to look.
//!
//! Each look also records the log's size beside it (`{log}.sizes`, at most every
//! [`RECORD_EVERY_MS`] and once more at the attempt's end): what the attempt had written at any
//! moment, for time travel (`read_attempt_log`'s `until_ms`).

use super::*;

use std::time::Duration;

use orrery_store::{EventData, EventPayload, LogGrew, RunId};

/// How often running attempts' logs are looked at: a log viewer that reads the new bytes when
/// told sees a line within about this long plus its read (a stat per running attempt each time:
/// cheap). The run views aim at a line shown within 50 ms of its writing at the 99th percentile
/// (scripts/bench_runs.sh: 10 ms here gave 53-61 ms, 5 ms 48-49).
pub const LOOK_EVERY: Duration = Duration::from_millis(5);

/// The most bytes of growth an event carries: a line or a few, not a burst of output.
pub const CARRIED_MAX: u64 = 16 * 1024;

/// How often at most a log's size is recorded beside it for time travel (`orrery_logs::size_at`):
/// a size not recorded at a look is at a later one, and the last at the attempt's end.
const RECORD_EVERY_MS: i64 = 100;

/// The logs of one session's running attempts.
#[derive(Default)]
pub(crate) struct LogGrowth {
    logs: HashMap<RunId, Watched>,
    /// The last stored event seen: the session and its `global_seq`.
    last: Option<(String, u64)>,
}

struct Watched {
    node: String,
    attempt: u32,
    path: PathBuf,
    size: u64,
    /// When its size was last recorded, and that size.
    recorded: (i64, u64),
}

impl Watched {
    /// Records the log's `size` at `now` unless it is the size last recorded or, but for the
    /// attempt's `last` look, that was less than [`RECORD_EVERY_MS`] ago.
    fn record(&mut self, now: i64, size: u64, last: bool) {
        if size == self.recorded.1 || (!last && now.saturating_sub(self.recorded.0) < RECORD_EVERY_MS) {
            return;
        }
        // Without the record, time travel shows the log as it ends: nothing else depends on it.
        if orrery_logs::record_size(&self.path, now, size).is_ok() {
            self.recorded = (now, size);
        }
    }
}

impl LogGrowth {
    /// Takes note of a stored event: an attempt with a log starts being watched; a settled one
    /// gets a last look (returned) and is forgotten.
    pub(crate) fn saw(&mut self, event: &Event) -> Option<Event> {
        self.last = Some((event.session_id.clone(), event.global_seq));
        let (Some(data), Some(run_id)) = (event.data(), &event.run_id) else { return None };
        match data {
            EventData::AttemptStarted(started) => {
                let path = started.log_path.as_ref()?;
                let watched = Watched {
                    node: started.node.clone(),
                    attempt: started.attempt,
                    path: PathBuf::from(path),
                    size: 0,
                    recorded: (i64::MIN, 0),
                };
                self.logs.insert(run_id.clone(), watched);
                None
            }
            EventData::AttemptSettled(_) => {
                let mut watched = self.logs.remove(run_id)?;
                let grew = self.grown(run_id, &mut watched);
                let size = std::fs::metadata(&watched.path).map_or(0, |m| m.len());
                watched.record(now_ms(), size, true);
                grew
            }
            _ => None,
        }
    }

    pub(crate) fn watching(&self) -> bool {
        !self.logs.is_empty()
    }

    /// Looks at every watched log: a `log_grew` event for each that changed size.
    pub(crate) fn look(&mut self) -> Vec<Event> {
        let mut logs = std::mem::take(&mut self.logs);
        let grown = logs.iter_mut().filter_map(|(run_id, watched)| self.grown(run_id, watched)).collect();
        self.logs = logs;
        grown
    }

    fn grown(&self, run_id: &RunId, watched: &mut Watched) -> Option<Event> {
        // A log not written yet has size 0; one replaced by a shorter file changes size too.
        let size = std::fs::metadata(&watched.path).map_or(0, |m| m.len());
        watched.record(now_ms(), size, false);
        if size == watched.size {
            return None;
        }
        let from = watched.size;
        let mut grew =
            LogGrew { node: watched.node.clone(), attempt: watched.attempt, file_size: size, from: None, text: None };
        watched.size = size;
        if size > from && size - from <= CARRIED_MAX {
            if let Some(text) = read_from(&watched.path, from, size - from) {
                // A character cut at the end is carried by the next look, when it is whole.
                watched.size = from + text.len() as u64;
                grew.from = Some(from);
                grew.text = Some(text);
            }
        }
        let (session_id, global_seq) = self.last.clone()?;
        Some(Event {
            session_id,
            seq: 0,
            global_seq,
            time_ms: now_ms(),
            run_id: Some(run_id.clone()),
            payload: EventPayload::Whole(Box::new(EventData::LogGrew(grew))),
        })
    }
}

/// Up to `len` bytes of the file at `path` from `from`, to the last whole character; `None`
/// when it cannot be read or is not text.
fn read_from(path: &Path, from: u64, len: u64) -> Option<String> {
    use std::io::{Read, Seek, SeekFrom};
    // A regular file only: a FIFO put in the log's place must not pin the poller.
    let mut file = orrery_blueprint::fsio::open_regular_file(path).ok()?;
    file.seek(SeekFrom::Start(from)).ok()?;
    let mut bytes = Vec::with_capacity(len as usize);
    file.take(len).read_to_end(&mut bytes).ok()?;
    match String::from_utf8(bytes) {
        Ok(text) => Some(text),
        // Cut inside a character at the end: the whole ones before it.
        Err(e) if e.utf8_error().error_len().is_none() => {
            let valid = e.utf8_error().valid_up_to();
            let mut bytes = e.into_bytes();
            bytes.truncate(valid);
            String::from_utf8(bytes).ok()
        }
        Err(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::read_from;

    #[test]
    fn carried_text_stops_before_a_character_cut_at_the_end_and_is_none_for_bytes_that_are_not_text() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        std::fs::write(&path, b"x\xc3\xa9t\xc3").unwrap();
        assert_eq!(read_from(&path, 1, 4).as_deref(), Some("\u{e9}t"), "the cut \\xc3 waits for the next look");
        assert_eq!(read_from(&path, 4, 1).as_deref(), Some(""));
        std::fs::write(&path, b"a\xffb").unwrap();
        assert_eq!(read_from(&path, 0, 3), None);
        assert_eq!(read_from(&dir.path().join("gone"), 0, 3), None);
    }
}
