//! The schema's history, kept in the repo as SQL files and embedded at compile time.
//!
//! `PRAGMA user_version` holds how many migrations a database has had. Opening applies the
//! missing ones in order, in one transaction together with the user_version bump (one commit,
//! one fsync: a new store took one per migration), so a crash or a failed migration leaves the
//! database at the version it had. A database newer than this code is refused rather than
//! guessed at.

use std::path::Path;

use rusqlite::{Connection, TransactionBehavior};

use crate::StoreError;

/// Every migration, in order; migration `k` (1-based) brings a database to version `k`.
/// Append only: a released file never changes.
pub const MIGRATIONS: &[(&str, &str)] = &[
    ("0001_initial", include_str!("../migrations/0001_initial.sql")),
    ("0002_runner_lease_and_requests", include_str!("../migrations/0002_runner_lease_and_requests.sql")),
    ("0003_global_event_order", include_str!("../migrations/0003_global_event_order.sql")),
    ("0004_lineage", include_str!("../migrations/0004_lineage.sql")),
    ("0005_submitted_tasks", include_str!("../migrations/0005_submitted_tasks.sql")),
    ("0006_session_origin", include_str!("../migrations/0006_session_origin.sql")),
    ("0007_servers", include_str!("../migrations/0007_servers.sql")),
    ("0008_settings", include_str!("../migrations/0008_settings.sql")),
    ("0009_remote_sessions", include_str!("../migrations/0009_remote_sessions.sql")),
    ("0010_attempt_iterations", include_str!("../migrations/0010_attempt_iterations.sql")),
    ("0011_submitted_config", include_str!("../migrations/0011_submitted_config.sql")),
    ("0012_task_memory", include_str!("../migrations/0012_task_memory.sql")),
    ("0013_agent_checklists", include_str!("../migrations/0013_agent_checklists.sql")),
    ("0014_session_starter", include_str!("../migrations/0014_session_starter.sql")),
    ("0015_session_file", include_str!("../migrations/0015_session_file.sql")),
    ("0016_attempt_times_unknown", include_str!("../migrations/0016_attempt_times_unknown.sql")),
    ("0017_attempt_environment", include_str!("../migrations/0017_attempt_environment.sql")),
    ("0018_release_requests", include_str!("../migrations/0018_release_requests.sql")),
    ("0019_data_edits", include_str!("../migrations/0019_data_edits.sql")),
    ("0020_session_simulation", include_str!("../migrations/0020_session_simulation.sql")),
    ("0021_data_history", include_str!("../migrations/0021_data_history.sql")),
    ("0022_breakpoint_requests", include_str!("../migrations/0022_breakpoint_requests.sql")),
];

/// The schema version this code writes.
pub const SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

pub(crate) fn schema_version(conn: &Connection, path: &Path) -> Result<u32, StoreError> {
    let version: i64 =
        conn.pragma_query_value(None, "user_version", |row| row.get(0)).map_err(|e| StoreError::sqlite(path, e))?;
    u32::try_from(version).map_err(|_| StoreError::Migration {
        path: path.to_path_buf(),
        message: format!("user_version {version} is not a schema version"),
    })
}

/// Applies the migrations after the database's version, up to `target`.
pub(crate) fn migrate_to(conn: &mut Connection, path: &Path, target: u32) -> Result<(), StoreError> {
    let current = schema_version(conn, path)?;
    if current > SCHEMA_VERSION {
        return Err(StoreError::Migration {
            path: path.to_path_buf(),
            message: format!(
                "the database is at schema version {current}, newer than this Orrery \
                 (version {SCHEMA_VERSION}); use a newer Orrery to open it"
            ),
        });
    }
    let target = target.min(SCHEMA_VERSION);
    if current >= target {
        return Ok(());
    }
    let failed = |name: &str, e: rusqlite::Error| match StoreError::sqlite(path, e) {
        // The file's condition is the better explanation than "migration failed".
        err @ (StoreError::Corrupt { .. }
        | StoreError::ReadOnly { .. }
        | StoreError::DiskFull { .. }
        | StoreError::Busy { .. }) => err,
        other => {
            StoreError::Migration { path: path.to_path_buf(), message: format!("migration {name} failed: {other}") }
        }
    };
    let first = MIGRATIONS[current as usize].0;
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(|e| failed(first, e))?;
    // Another connection may have migrated while we waited for the write lock.
    let now: i64 = tx.pragma_query_value(None, "user_version", |r| r.get(0)).map_err(|e| failed(first, e))?;
    if now >= target as i64 {
        return Ok(());
    }
    for version in (now.max(0) as u32 + 1)..=target {
        let (name, sql) = MIGRATIONS[version as usize - 1];
        tx.execute_batch(sql).map_err(|e| failed(name, e))?;
    }
    let last = MIGRATIONS[target as usize - 1].0;
    tx.pragma_update(None, "user_version", target).map_err(|e| failed(last, e))?;
    tx.commit().map_err(|e| failed(last, e))
}

/// Creates (or brings) the database at `path` to exactly schema `version` by applying the first
/// `version` migrations, without the rest of [`crate::Store::open`]. For tests of upgrades from
/// every earlier schema, and for tools that must produce an old file.
pub fn create_at_version(path: &Path, version: u32) -> Result<(), StoreError> {
    if version > SCHEMA_VERSION {
        return Err(StoreError::invalid(format!(
            "schema version {version} does not exist (the newest is {SCHEMA_VERSION})"
        )));
    }
    let mut conn = Connection::open(path).map_err(|e| StoreError::sqlite(path, e))?;
    migrate_to(&mut conn, path, version)
}
