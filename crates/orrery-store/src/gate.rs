//! The writers of one database file in this process, served one at a time in arrival order.
//!
//! SQLite lets one connection write at a time and makes the others retry on its busy handler:
//! sleeps of growing length, no order, no queue. Under a burst (200 sessions starting at once
//! beside 500 event streams) a writer could lose every retry for the whole busy timeout and fail
//! `busy` while the lock changed hands hundreds of times. So every [`crate::Store`] of a file
//! takes a turn here before it begins a write transaction and gives it back when the
//! transaction ends: writers of this process queue in order, each waits for those ahead of it,
//! and only a wait longer than [`crate::StoreOptions::write_queue_timeout`] (two minutes by
//! default: a writer stuck that long is a bug, not a burst) fails `busy`, saying how long it
//! waited. Writers of other processes still meet on SQLite's own lock and busy timeout.
//!
//! A file is known by its device and inode, so two spellings of one path share one line.

use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, Weak};
use std::time::{Duration, Instant};

use crate::StoreError;

/// The line of writers of one file.
#[derive(Default)]
pub(crate) struct Gate {
    line: Mutex<Line>,
    turn: Condvar,
}

#[derive(Default)]
struct Line {
    /// A writer holds the turn.
    held: bool,
    /// Tickets of the writers waiting, first come first.
    waiting: VecDeque<u64>,
    next_ticket: u64,
}

/// A writer's turn; given back when dropped.
pub(crate) struct Turn(Arc<Gate>);

impl Drop for Turn {
    fn drop(&mut self) {
        self.0.lock().held = false;
        self.0.turn.notify_all();
    }
}

impl Gate {
    /// The line of the database file at `path` (which exists), shared by every store of this
    /// process that opened the same file.
    pub(crate) fn of(path: &Path) -> Result<Arc<Gate>, StoreError> {
        use std::os::unix::fs::MetadataExt;
        static GATES: OnceLock<Mutex<HashMap<(u64, u64), Weak<Gate>>>> = OnceLock::new();
        let meta = std::fs::metadata(path).map_err(|e| StoreError::io(path, e))?;
        let mut gates = GATES.get_or_init(Default::default).lock().unwrap_or_else(|p| p.into_inner());
        let key = (meta.dev(), meta.ino());
        if let Some(gate) = gates.get(&key).and_then(Weak::upgrade) {
            return Ok(gate);
        }
        gates.retain(|_, gate| gate.strong_count() > 0);
        let gate = Arc::new(Gate::default());
        gates.insert(key, Arc::downgrade(&gate));
        Ok(gate)
    }

    /// The turn at once, or none while a writer holds it or waits for it.
    pub(crate) fn try_enter(self: &Arc<Self>) -> Option<Turn> {
        let mut line = self.lock();
        if line.held || !line.waiting.is_empty() {
            return None;
        }
        line.held = true;
        Some(Turn(Arc::clone(self)))
    }

    /// Waits for this writer's turn, at most `patience`.
    pub(crate) fn enter(self: &Arc<Self>, patience: Duration, path: &Path) -> Result<Turn, StoreError> {
        if let Some(turn) = self.try_enter() {
            return Ok(turn);
        }
        let mut line = self.lock();
        let ticket = line.next_ticket;
        line.next_ticket += 1;
        line.waiting.push_back(ticket);
        let started = Instant::now();
        loop {
            if !line.held && line.waiting.front() == Some(&ticket) {
                line.waiting.pop_front();
                line.held = true;
                return Ok(Turn(Arc::clone(self)));
            }
            let waited = started.elapsed();
            if waited >= patience {
                line.waiting.retain(|&t| t != ticket);
                let ahead = line.waiting.len();
                drop(line);
                // The writer behind this one may be first now.
                self.turn.notify_all();
                return Err(StoreError::Busy {
                    path: path.to_path_buf(),
                    detail: format!(
                        "waited {:.1} s in line behind this process's other writers ({ahead} still waiting)",
                        waited.as_secs_f64()
                    ),
                });
            }
            line = self.turn.wait_timeout(line, patience - waited).unwrap_or_else(|p| p.into_inner()).0;
        }
    }

    fn lock(&self) -> MutexGuard<'_, Line> {
        self.line.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writers_are_served_in_the_order_they_came() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("db");
        std::fs::write(&file, b"").unwrap();
        let gate = Gate::of(&file).unwrap();
        let first = gate.enter(Duration::from_secs(5), &file).unwrap();
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut waiting = Vec::new();
        for n in 0..8 {
            let (line, order, file) = (Arc::clone(&gate), Arc::clone(&order), file.clone());
            waiting.push(std::thread::spawn(move || {
                let _turn = line.enter(Duration::from_secs(30), &file).unwrap();
                order.lock().unwrap().push(n);
            }));
            // Each has taken its ticket before the next comes.
            while gate.lock().waiting.len() < n + 1 {
                std::thread::yield_now();
            }
        }
        drop(first);
        for thread in waiting {
            thread.join().unwrap();
        }
        assert_eq!(*order.lock().unwrap(), (0..8).collect::<Vec<_>>());
    }

    #[test]
    fn a_writer_out_of_patience_is_busy_and_leaves_the_line_to_the_next() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("db");
        std::fs::write(&file, b"").unwrap();
        let gate = Gate::of(&file).unwrap();
        assert!(Arc::ptr_eq(&gate, &Gate::of(&dir.path().join(".").join("db")).unwrap()), "one line per file");
        let held = gate.enter(Duration::from_secs(5), &file).unwrap();
        let err = gate.enter(Duration::from_millis(50), &file).err().expect("busy");
        assert_eq!(err.code(), crate::FailureCode::Busy);
        assert!(err.to_string().contains("waited"), "{err}");
        assert!(gate.lock().waiting.is_empty(), "the impatient writer left the line");
        drop(held);
        gate.enter(Duration::from_millis(50), &file).expect("the turn is free again");
    }
}
