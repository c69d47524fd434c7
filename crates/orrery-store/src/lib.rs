//! Orrery's durable task store: blueprint versions, sessions, task nodes and their attempts,
//! session data, scope counters, an append-only event log and per-attempt progress steps, in
//! one SQLite file (rusqlite, bundled SQLite).
//!
//! # Design notes
//!
//! - **Synchronous API, one owner.** The engine keeps one [`Store`] per session owner and calls
//!   it from a blocking thread; nothing here needs an async runtime. Several `Store` handles
//!   (several connections, several processes) may share one file: every write transaction is
//!   `BEGIN IMMEDIATE`, so writers queue on the busy timeout instead of failing on a lock
//!   upgrade, and counters such as event sequence numbers are computed inside that lock. The
//!   writers of one process first queue in arrival order (the `gate` module), so a burst waits
//!   its turn instead of racing SQLite's busy handler until one writer loses for the whole
//!   busy timeout.
//! - **Written before announced.** Every state change the engine announces (session state,
//!   task state, attempt start and settlement, progress, session data) is written in one
//!   transaction together with the event that describes it, and the write returns that
//!   [`Event`]: the caller announces exactly what was committed, with its `seq`.
//! - **Durability.** WAL mode with `synchronous=FULL` by default: a commit returns only after
//!   the WAL is fsynced, so an announced transition survives a power cut, not only a killed
//!   process. `synchronous=NORMAL` survives a killed process but may lose the last commits on
//!   power loss (the file stays consistent); it is offered as [`Synchronous::Normal`] for callers
//!   who accept that trade for speed. Measured on this machine kind (release build, 1,000
//!   tasks, three transactions each: ready, begin, settle): FULL 2-11 ms per task on a shared
//!   disk (one fsync per commit), NORMAL 0.6-0.8 ms. A caller that needs FULL and speed should
//!   land several transitions per transaction rather than weaken the default: a batch
//!   ([`Store::begin_batch`] .. [`Store::commit_batch`]) does that, and may commit without an
//!   fsync what need only survive a killed process.
//! - **Stale runs.** Every attempt has a fresh `run_id`; every write about a run is a
//!   conditional update `WHERE run_id = ? AND state = 'running'`, so a late or duplicated
//!   settlement is refused with [`StoreError::StaleRun`] and changes nothing.
//! - **Idempotent writes** (docs/format.md §7). [`Store::create_session`],
//!   [`Store::set_session_state`] and [`Store::append_event`] take an optional `request_id`;
//!   the id, a sha256 of the operation name plus the canonical JSON of the arguments, and the
//!   answer are stored in the write's own transaction. A repeat with the same arguments gets
//!   the stored answer and writes nothing; other arguments are refused as `request_id_reused`.
//! - **Events.** `seq` is 1, 2, 3... per session, without gaps, because it is `MAX(seq) + 1`
//!   under the write lock and the primary key refuses duplicates. Payloads longer than
//!   [`MAX_EVENT_PAYLOAD_BYTES`] are cut at a UTF-8 boundary and keep the full length and the
//!   sha256 of the full text ([`EventPayload::Cut`]).
//! - **Progress rules** (issue 3). Steps are unique by name within a run and ordered by first
//!   appearance. A percentage lower than the step's current one is *ignored* (the report's
//!   other effects still apply, the answer says it was ignored): progress lines come from a
//!   task's own process, and failing the task over a harmless out-of-order line would be worse
//!   than dropping it. Starting a step while another is in progress *auto-completes* the
//!   previous one (done, 100 %): a checklist is worked top to bottom, and a process that moved
//!   on has finished the previous step. A done step stays done. When an attempt settles as
//!   succeeded, every step is marked done; after a crash, `mark_unknown_in_progress` records
//!   the step that was in progress as `unknown`.
//! - **Errors.** [`StoreError`] has a stable [`StoreError::code`]; SQLite failures are mapped by
//!   result code (not a database → `corrupt`, read-only → `read_only`, SQLITE_FULL →
//!   `disk_full`, locked → `busy`). Bad input is an error, never a panic.
//! - **Migrations** live in `migrations/NNNN_name.sql`, embedded with `include_str!` and
//!   tracked by `PRAGMA user_version` (see [`migrations`]).

mod agent_notes;
mod attempts;
mod blueprints;
pub mod canonical;
mod checklists;
mod clock;
mod control;
mod data;
mod error;
mod event_data;
mod events;
mod gate;
mod history;
mod idempotency;
mod lineage;
mod memory;
pub mod migrations;
mod nodes;
mod progress;
mod records;
mod refusals;
mod servers;
mod sessions;
mod submitted;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, TransactionBehavior};

pub use agent_notes::{
    ChecklistNotes, MemoryNotes, SessionNotes, MAX_NOTE_EVENTS, MAX_NOTE_PAYLOAD_CHARS, MAX_NOTE_TASKS,
};
pub use attempts::{NewAttempt, Settlement};
pub use blueprints::BlueprintVersion;
pub use checklists::{AgentSubtask, AgentSubtaskStatus, AgentTask, AgentTaskMinimal, AgentTaskStatus, Thread};
pub use clock::{iso_8601, Clock, IdSource, ManualClock, SequentialIds, SystemClock, UuidV7Ids};
pub use control::{Lease, OpenRequest, Request};
pub use error::StoreError;
pub use event_data::{
    BreakpointHolds, BrokerDispatch, DataEdit, DataUpdated, EventData, EventKind, HeldTask, LogCapped, LogGrew,
    NotificationShown, ProgressChanged, PromptAnswered, PromptWaiting, RemoteLinkChanged, SessionBlueprints,
    SessionCreated, SessionStateChanged, TaskStateChanged,
};
pub use events::{Event, EventPayload, NewEvent, MAX_EVENT_PAYLOAD_BYTES, MAX_PAGE_LIMIT};
pub use history::{DataWrite, SessionChange, SessionHistory, StateChange};
pub use idempotency::{Retry, MAX_REQUEST_ID_CHARS};
pub use lineage::{InputLineage, InputSource, LineageEdit, LineageSource};
pub use memory::{
    EventPage, MemoryEvent, MemoryEventKind, MemoryStep, MemoryStepKind, MemoryStepState, MemoryTask, NewMemoryEvent,
    StepSummary, StepUpdate, TaskLookup, TaskView, MAX_MEMORY_PAGE, MAX_PAYLOAD_CHARS, MAX_VIEW_STEPS,
};
pub use nodes::TaskNode;
/// What [`StoreError::code`] answers, the code of every boundary.
pub use orrery_blueprint::FailureCode;
pub use progress::{ProgressReport, ProgressUpdate, ProgressView, Step, StepCounts};
pub use records::{
    Attempt, AttemptState, ErrorRecord, Outcome, ProcessEnvironment, ProcessIdentity, RecordCode, RemoteLink, RunId,
    ScopeIteration, SessionState, StepState, TaskState,
};
pub use servers::ServerEntry;
pub use sessions::{NewSession, Session, SessionFilter, SimulatedFailure, Simulation, Starter};
pub use submitted::SubmittedTask;

use error::SqliteResultExt;

/// Where Orrery keeps its database unless told otherwise: `<data dir>/orrery/orrery.db`
/// (`~/.local/share/orrery/orrery.db` on Linux). `None` when the platform has no data dir.
pub fn default_path() -> Option<PathBuf> {
    dirs::data_dir().map(|dir| dir.join("orrery").join("orrery.db"))
}

/// How long a commit waits for the disk; see the crate notes on durability.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Synchronous {
    /// `synchronous=FULL`: a commit survives power loss once it returns.
    #[default]
    Full,
    /// `synchronous=NORMAL`: a commit survives a killed process; power loss may undo the last
    /// few (the file stays consistent).
    Normal,
}

/// How to open a store. `StoreOptions::default()` is what [`Store::open`] uses.
#[derive(Clone)]
pub struct StoreOptions {
    pub clock: Arc<dyn Clock>,
    pub ids: Arc<dyn IdSource>,
    pub synchronous: Synchronous,
    /// How long a write waits for another process's write lock before `busy`.
    pub busy_timeout: Duration,
    /// How long a write waits for its turn behind the other writers of this process before
    /// `busy` (the `gate` module).
    pub write_queue_timeout: Duration,
    /// A cap on the database size in pages (`PRAGMA max_page_count`); writes beyond it fail as
    /// `disk_full`. A quota, and the honest way for tests to fill the "disk".
    pub max_page_count: Option<u32>,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            clock: Arc::new(SystemClock),
            ids: Arc::new(UuidV7Ids),
            synchronous: Synchronous::Full,
            busy_timeout: Duration::from_secs(5),
            write_queue_timeout: Duration::from_secs(120),
            max_page_count: None,
        }
    }
}

/// One connection to the task store. Not `Sync`: one owner at a time (see the crate notes).
pub struct Store {
    conn: Connection,
    path: PathBuf,
    clock: Arc<dyn Clock>,
    /// The time writes are made at instead of the clock's, while [`Store::as_of`] runs.
    as_of: Option<i64>,
    ids: Arc<dyn IdSource>,
    synchronous: Synchronous,
    /// The level of the batch open between [`Store::begin_batch`] and [`Store::commit_batch`].
    batch: Option<Synchronous>,
    /// The line of this process's writers of the file, and this store's turn while its batch is
    /// open.
    gate: Arc<gate::Gate>,
    turn: Option<gate::Turn>,
    write_queue_timeout: Duration,
    busy_timeout: Duration,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish_non_exhaustive()
    }
}

impl Store {
    /// Opens (creating if needed) the store at `path` with default options.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        Store::open_with(path, StoreOptions::default())
    }

    pub fn open_with(path: &Path, options: StoreOptions) -> Result<Store, StoreError> {
        // Connections that open a new file at once race to switch it to WAL and to migrate it;
        // SQLite answers the losers `SQLITE_BUSY` at once, without its busy handler, so they
        // try again, for as long as a write would wait.
        let started = std::time::Instant::now();
        let conn = loop {
            let opened = open_connection(path, &options).and_then(|mut conn| {
                migrations::migrate_to(&mut conn, path, migrations::SCHEMA_VERSION)?;
                Ok(conn)
            });
            match opened {
                Err(StoreError::Busy { .. }) if started.elapsed() < options.busy_timeout => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                opened => break opened?,
            }
        };
        Ok(Store {
            conn,
            gate: gate::Gate::of(path)?,
            path: path.to_path_buf(),
            clock: options.clock,
            as_of: None,
            ids: options.ids,
            synchronous: options.synchronous,
            batch: None,
            turn: None,
            write_queue_timeout: options.write_queue_timeout,
            busy_timeout: options.busy_timeout,
        })
    }

    /// Opens an existing store only to read it, for a store this process may not write (its
    /// file or folder read-only, another user's): listing and inspecting sessions work, every
    /// write is refused as `read_only`. When SQLite cannot open it read-only in place (a WAL
    /// database whose `-shm` file is missing and cannot be created in a read-only folder), it
    /// is opened as immutable: nobody can be writing it, since nobody can write its folder.
    /// A store whose schema is older or newer than this code's is refused (`migration`): it
    /// cannot be migrated without writing.
    pub fn open_read_only(path: &Path) -> Result<Store, StoreError> {
        let options = StoreOptions::default();
        if !path.is_file() {
            return Err(StoreError::NotFound { what: "task store", id: path.display().to_string() });
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI;
        let check = |conn: Connection| -> Result<Connection, StoreError> {
            conn.busy_timeout(options.busy_timeout).at(path)?;
            let version = migrations::schema_version(&conn, path)?;
            if version != migrations::SCHEMA_VERSION {
                return Err(StoreError::Migration {
                    path: path.to_path_buf(),
                    message: format!(
                        "its schema is version {version} and this Orrery reads version {}; it cannot be \
                         migrated read-only (open it once where it is writable)",
                        migrations::SCHEMA_VERSION
                    ),
                });
            }
            Ok(conn)
        };
        let in_place = Connection::open_with_flags(path, flags).at(path).and_then(check);
        let conn = match in_place {
            Ok(conn) => conn,
            Err(StoreError::Migration { path, message }) => return Err(StoreError::Migration { path, message }),
            Err(_) => {
                let absolute = std::path::absolute(path).map_err(|e| StoreError::io(path, e))?;
                let uri = format!("file:{}?immutable=1", uri_path(&absolute));
                check(Connection::open_with_flags(uri, flags).at(path)?)?
            }
        };
        Ok(Store {
            conn,
            gate: gate::Gate::of(path)?,
            path: path.to_path_buf(),
            clock: options.clock,
            as_of: None,
            ids: options.ids,
            synchronous: options.synchronous,
            batch: None,
            turn: None,
            write_queue_timeout: options.write_queue_timeout,
            busy_timeout: options.busy_timeout,
        })
    }

    /// The file this store writes.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where this store takes the ids of new sessions and attempts from.
    pub fn id_source(&self) -> Arc<dyn IdSource> {
        Arc::clone(&self.ids)
    }

    /// The clock the store's writes are made at (see [`Store::as_of`]).
    pub fn clock(&self) -> Arc<dyn Clock> {
        Arc::clone(&self.clock)
    }

    /// Runs `f` with its writes made at `ms` (their times, as the clock would have said then): a
    /// write queued to be made later keeps the time it was asked at.
    pub fn as_of<R>(&mut self, ms: i64, f: impl FnOnce(&mut Store) -> R) -> R {
        let before = self.as_of.replace(ms);
        let answer = f(self);
        self.as_of = before;
        answer
    }

    /// The schema version of the open database.
    pub fn schema_version(&self) -> Result<u32, StoreError> {
        migrations::schema_version(&self.conn, &self.path)
    }

    /// Runs SQLite's full `integrity_check` and the foreign key check; `Corrupt` names the
    /// first problems found.
    pub fn check_integrity(&self) -> Result<(), StoreError> {
        let mut problems: Vec<String> = Vec::new();
        let mut stmt = self.conn.prepare("PRAGMA integrity_check").at(&self.path)?;
        let rows = stmt.query_map([], |row| row.get::<_, String>(0)).at(&self.path)?;
        for row in rows {
            let line = row.at(&self.path)?;
            if line != "ok" {
                problems.push(line);
            }
        }
        let mut stmt = self.conn.prepare("PRAGMA foreign_key_check").at(&self.path)?;
        let rows = stmt
            .query_map([], |row| {
                Ok(format!("{} row {:?} breaks a foreign key", row.get::<_, String>(0)?, row.get::<_, Option<i64>>(1)?))
            })
            .at(&self.path)?;
        for row in rows {
            problems.push(row.at(&self.path)?);
        }
        if problems.is_empty() {
            Ok(())
        } else {
            problems.truncate(10);
            Err(StoreError::Corrupt { path: self.path.clone(), detail: problems.join("; ") })
        }
    }

    /// Opens a batch: the writes that follow, until [`Store::commit_batch`], land in one
    /// `BEGIN IMMEDIATE` transaction, each in a savepoint of its own (a write that fails undoes
    /// only itself). Nothing of the batch is visible to other connections, nor survives a crash,
    /// before the commit: its callers announce its events only after [`Store::commit_batch`].
    ///
    /// `at_most` caps how long its commit waits for the disk: [`Synchronous::Normal`] commits
    /// without an fsync even on a store opened with [`Synchronous::Full`], for writes that need
    /// only survive a killed process (such as the process id of a task: a power cut kills that
    /// process too). The next full commit fsyncs the WAL, and with it the relaxed commits before
    /// it. SQLite fixes the level when the transaction begins, so asking for a stronger level
    /// than the open batch has commits that batch first and opens a new one; otherwise an open
    /// batch is kept.
    pub fn begin_batch(&mut self, at_most: Synchronous) -> Result<(), StoreError> {
        let level = self.level_for(at_most);
        match self.batch {
            Some(open) if open == Synchronous::Full || level == Synchronous::Normal => return Ok(()),
            Some(_) => self.commit_batch()?,
            None => {}
        }
        let turn = self.gate.enter(self.write_queue_timeout, &self.path)?;
        self.open_batch(turn, level)
    }

    /// [`Store::begin_batch`] when it can begin at once: `false`, with nothing done, when it
    /// would wait (for this process's other writers, another connection's write lock, or the
    /// commit of an open batch of a lower level). So a caller on an async runtime begins here
    /// and goes to a thread that may block only when it must.
    pub fn try_begin_batch(&mut self, at_most: Synchronous) -> Result<bool, StoreError> {
        let level = self.level_for(at_most);
        if let Some(open) = self.batch {
            return Ok(open == Synchronous::Full || level == Synchronous::Normal);
        }
        let Some(turn) = self.gate.try_enter() else { return Ok(false) };
        self.conn.busy_timeout(Duration::ZERO).at(&self.path)?;
        let opened = self.open_batch(turn, level);
        self.conn.busy_timeout(self.busy_timeout).at(&self.path)?;
        match opened {
            Ok(()) => Ok(true),
            Err(StoreError::Busy { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// The level a batch asked for `at_most` gets: never above the store's own.
    fn level_for(&self, at_most: Synchronous) -> Synchronous {
        if self.synchronous == Synchronous::Full {
            at_most
        } else {
            Synchronous::Normal
        }
    }

    /// Begins the batch's transaction at `level` with this store's `turn` (no batch is open).
    fn open_batch(&mut self, turn: gate::Turn, level: Synchronous) -> Result<(), StoreError> {
        if level != self.synchronous {
            self.conn.pragma_update(None, "synchronous", "NORMAL").at(&self.path)?;
        }
        if let Err(e) = self.conn.execute_batch("BEGIN IMMEDIATE").at(&self.path) {
            self.restore_synchronous()?;
            return Err(e);
        }
        self.batch = Some(level);
        self.turn = Some(turn);
        Ok(())
    }

    /// Whether a batch is open.
    pub fn in_batch(&self) -> bool {
        self.batch.is_some()
    }

    /// The level of the open batch, if one is open.
    pub fn batch_level(&self) -> Option<Synchronous> {
        self.batch
    }

    /// Commits the open batch (nothing to do without one). When the commit fails, the batch is
    /// rolled back and closed.
    pub fn commit_batch(&mut self) -> Result<(), StoreError> {
        let Some(level) = self.batch.take() else { return Ok(()) };
        let committed = self.conn.execute_batch("COMMIT").at(&self.path);
        if committed.is_err() && !self.conn.is_autocommit() {
            let _ = self.conn.execute_batch("ROLLBACK");
        }
        if let Err(StoreError::DiskFull { .. }) = &committed {
            self.make_room();
        }
        self.turn = None;
        if level != self.synchronous {
            self.restore_synchronous()?;
        }
        committed
    }

    /// Rolls the open batch back (nothing to do without one): none of its writes land. A batch
    /// is rolled back after a write of it failed, perhaps for want of room: see `make_room`.
    pub fn rollback_batch(&mut self) {
        let Some(level) = self.batch.take() else { return };
        if !self.conn.is_autocommit() {
            let _ = self.conn.execute_batch("ROLLBACK");
        }
        self.make_room();
        self.turn = None;
        if level != self.synchronous {
            let _ = self.restore_synchronous();
        }
    }

    fn restore_synchronous(&self) -> Result<(), StoreError> {
        let level = match self.synchronous {
            Synchronous::Full => "FULL",
            Synchronous::Normal => "NORMAL",
        };
        self.conn.pragma_update(None, "synchronous", level).at(&self.path)
    }

    /// The connection's `synchronous` setting as SQLite reports it.
    pub fn synchronous(&self) -> Result<Synchronous, StoreError> {
        let level: i64 = self.conn.pragma_query_value(None, "synchronous", |row| row.get(0)).at(&self.path)?;
        Ok(if level >= 2 { Synchronous::Full } else { Synchronous::Normal })
    }

    /// Runs `f` in one `BEGIN IMMEDIATE` transaction, or in a savepoint of the open batch;
    /// commits (releases) only when `f` succeeds.
    pub(crate) fn write<R>(&mut self, f: impl FnOnce(&Tx<'_>) -> Result<R, StoreError>) -> Result<R, StoreError> {
        let now_ms = self.as_of.unwrap_or_else(|| self.clock.now_ms());
        if self.batch.is_some() {
            let savepoint = self.conn.savepoint().at(&self.path)?;
            let answer = f(&Tx { sql: &savepoint, path: &self.path, now_ms, ids: &*self.ids })?;
            savepoint.commit().at(&self.path)?;
            return Ok(answer);
        }
        // The turn is given back once the transaction has ended, committed or rolled back.
        let _turn = self.gate.enter(self.write_queue_timeout, &self.path)?;
        let written = (|| {
            let sql = self.conn.transaction_with_behavior(TransactionBehavior::Immediate).at(&self.path)?;
            let answer = f(&Tx { sql: &sql, path: &self.path, now_ms, ids: &*self.ids })?;
            sql.commit().at(&self.path)?;
            Ok(answer)
        })();
        if let Err(StoreError::DiskFull { .. }) = &written {
            self.make_room();
        }
        written
    }

    /// After a write that found no room: the write-ahead log's committed frames are copied into
    /// the database (a passive checkpoint, which never waits), so that the next write starts the
    /// log again from its beginning and a smaller one (the runner recording why it stops) fits
    /// where the failed one did not. Best effort: the failure stands either way.
    fn make_room(&self) {
        let _ = self.conn.execute_batch("PRAGMA wal_checkpoint(PASSIVE)");
    }

    /// Runs `f` on one read snapshot, so multi-statement reads are consistent (inside an open
    /// batch: on the batch's own transaction, which sees its writes).
    pub(crate) fn read<R>(&self, f: impl FnOnce(&Connection, &Path) -> Result<R, StoreError>) -> Result<R, StoreError> {
        if self.batch.is_some() {
            return f(&self.conn, &self.path);
        }
        let tx = self.conn.unchecked_transaction().at(&self.path)?;
        let answer = f(&tx, &self.path)?;
        tx.finish().at(&self.path)?;
        Ok(answer)
    }
}

/// A path as the path part of an SQLite `file:` URI: every byte but unreserved ones and `/`
/// percent-encoded (`?`, `#` and `%` in a file name would otherwise end or change it).
fn uri_path(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut out = String::new();
    for &b in path.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// One write transaction with the time and ids it may use.
pub(crate) struct Tx<'a> {
    pub(crate) sql: &'a Connection,
    pub(crate) path: &'a Path,
    pub(crate) now_ms: i64,
    pub(crate) ids: &'a dyn IdSource,
}

fn open_connection(path: &Path, options: &StoreOptions) -> Result<Connection, StoreError> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| StoreError::io(parent, e))?;
    }
    if path.is_dir() {
        return Err(StoreError::invalid(format!("{} is a directory, not a database file", path.display())));
    }
    // WAL keeps -wal and -shm files beside the database, so its folder must be writable too.
    if !error::writable(path) {
        return Err(StoreError::ReadOnly {
            path: path.to_path_buf(),
            detail: "the database file or its folder is not writable by this process".into(),
        });
    }
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).at(path)?;
    if conn.is_readonly(rusqlite::MAIN_DB).at(path)? {
        return Err(StoreError::ReadOnly {
            path: path.to_path_buf(),
            detail: "SQLite could only open the file read-only".into(),
        });
    }
    conn.busy_timeout(options.busy_timeout).at(path)?;
    let mode: String = conn.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0)).at(path)?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(StoreError::ReadOnly {
            path: path.to_path_buf(),
            detail: format!("cannot switch to WAL mode (journal mode stays {mode})"),
        });
    }
    let synchronous = match options.synchronous {
        Synchronous::Full => "FULL",
        Synchronous::Normal => "NORMAL",
    };
    conn.pragma_update(None, "synchronous", synchronous).at(path)?;
    conn.pragma_update(None, "foreign_keys", "ON").at(path)?;
    // Temporary files in memory: above all the journal of each write's savepoint in a batch
    // (the pages it touches, copied), which SQLite otherwise moves to a file of its own in
    // /var/tmp past 64 KiB: a file created and removed for half the writes of a run of tasks.
    conn.pragma_update(None, "temp_store", "MEMORY").at(path)?;
    if let Some(pages) = options.max_page_count {
        conn.pragma_update(None, "max_page_count", pages).at(path)?;
    }
    Ok(conn)
}
