//! Session data (a key/value store per session and per blueprint instance, docs/format.md
//! §4) and scope iteration counters, keyed by instance so that one inner blueprint used
//! twice never shares a counter (a weakness of the reference).

use std::collections::BTreeMap;

use rusqlite::{params, OptionalExtension};
use serde_json::Value;

use crate::error::SqliteResultExt;
use crate::event_data::{DataEdit, DataUpdated, EventData};
use crate::events::{append, Event};
use crate::records::RunId;
use crate::refusals::require_session;
use crate::{Store, StoreError, Tx};

impl Store {
    /// One value of a blueprint instance's data; `None` when the key was never written.
    pub fn data_value(&self, session_id: &str, instance: &str, key: &str) -> Result<Option<Value>, StoreError> {
        self.read(|conn, path| {
            require_session(conn, path, session_id)?;
            let text: Option<String> = conn
                .query_row(
                    "SELECT value_json FROM session_data
                     WHERE session_id = ?1 AND instance = ?2 AND key = ?3",
                    [session_id, instance, key],
                    |r| r.get(0),
                )
                .optional()
                .at(path)?;
            text.map(|t| parse_value(path, session_id, instance, key, &t)).transpose()
        })
    }

    /// The blueprint instances that hold data in a session, in order.
    pub fn data_instances(&self, session_id: &str) -> Result<Vec<String>, StoreError> {
        self.read(|conn, path| {
            require_session(conn, path, session_id)?;
            let mut stmt = conn
                .prepare("SELECT DISTINCT instance FROM session_data WHERE session_id = ?1 ORDER BY instance")
                .at(path)?;
            let rows = stmt.query_map([session_id], |r| r.get::<_, String>(0)).at(path)?;
            rows.map(|r| r.at(path)).collect()
        })
    }

    /// All data of one blueprint instance, by key.
    pub fn instance_data(&self, session_id: &str, instance: &str) -> Result<BTreeMap<String, Value>, StoreError> {
        self.read(|conn, path| {
            require_session(conn, path, session_id)?;
            // Asked as each task starts and ends: the statement is kept, not parsed each time.
            let mut stmt = conn
                .prepare_cached(
                    "SELECT key, value_json FROM session_data
                     WHERE session_id = ?1 AND instance = ?2 ORDER BY key",
                )
                .at(path)?;
            let rows = stmt
                .query_map([session_id, instance], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
                .at(path)?;
            let mut data = BTreeMap::new();
            for row in rows {
                let (key, text) = row.at(path)?;
                let value = parse_value(path, session_id, instance, &key, &text)?;
                data.insert(key, value);
            }
            Ok(data)
        })
    }

    /// Who wrote each key of a session's data, as `(instance, key, attempt)`: `None` for a
    /// value no attempt wrote (a skipped task's defaults, an intervention).
    pub fn data_writers(&self, session_id: &str) -> Result<Vec<(String, String, Option<RunId>)>, StoreError> {
        self.read(|conn, path| {
            require_session(conn, path, session_id)?;
            let mut stmt = conn
                .prepare("SELECT instance, key, run_id FROM session_data WHERE session_id = ?1 ORDER BY instance, key")
                .at(path)?;
            let rows = stmt
                .query_map([session_id], |r| {
                    Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, Option<String>>(2)?.map(RunId)))
                })
                .at(path)?;
            rows.map(|r| r.at(path)).collect()
        })
    }

    /// Copies `(instance, key)` values of session `from` into session `to`, each with the attempt
    /// that wrote it (lineage names it), in one transaction with one `data_updated` event: what a
    /// restart keeps of the session it restarts. A key `from` does not hold is left out.
    pub fn copy_data(&mut self, from: &str, to: &str, keys: &[(String, String)]) -> Result<Event, StoreError> {
        self.write(|tx| {
            require_session(tx.sql, tx.path, from)?;
            require_session(tx.sql, tx.path, to)?;
            let mut stmt = tx
                .sql
                .prepare_cached(
                    "INSERT INTO session_data (session_id, instance, key, value_json, updated_ms, run_id, edit_id)
                     SELECT ?1, instance, key, value_json, ?2, run_id, edit_id FROM session_data
                     WHERE session_id = ?3 AND instance = ?4 AND key = ?5
                     ON CONFLICT (session_id, instance, key)
                         DO UPDATE SET value_json = excluded.value_json, updated_ms = ?2, run_id = excluded.run_id,
                                       edit_id = excluded.edit_id",
                )
                .at(tx.path)?;
            let mut copied: BTreeMap<String, Vec<String>> = BTreeMap::new();
            for (instance, key) in keys {
                if stmt.execute(params![to, tx.now_ms, from, instance, key]).at(tx.path)? > 0 {
                    copied.entry(instance.clone()).or_default().push(key.clone());
                }
            }
            drop(stmt);
            append(tx, to, None, EventData::DataUpdated(DataUpdated { keys: copied }))
        })
    }

    /// Writes several keys of one instance in one transaction with one `data_updated` event.
    pub fn put_data(
        &mut self,
        session_id: &str,
        instance: &str,
        values: &[(&str, Value)],
    ) -> Result<Event, StoreError> {
        self.put_data_from(session_id, instance, values, None)
    }

    /// [`Store::put_data`] on behalf of attempt `writer` (a composite copying its inputs into
    /// its inner instance): lineage names it as the values' source.
    pub fn put_data_from(
        &mut self,
        session_id: &str,
        instance: &str,
        values: &[(&str, Value)],
        writer: Option<&RunId>,
    ) -> Result<Event, StoreError> {
        let writes: Vec<(String, String, Value)> =
            values.iter().map(|(k, v)| (instance.to_string(), k.to_string(), v.clone())).collect();
        self.write(|tx| {
            require_session(tx.sql, tx.path, session_id)?;
            put_data_in(tx, session_id, &writes, writer)
        })
    }

    /// Sets one value of a blueprint instance's data on behalf of a person (`by`): the edit is
    /// kept with the value it replaced, and the value names it as its source (lineage leads to
    /// it), in one transaction with a `data_updated` and a `data_edited` event.
    pub fn edit_data(
        &mut self,
        session_id: &str,
        instance: &str,
        key: &str,
        value: &Value,
        by: &str,
    ) -> Result<(DataEdit, Vec<Event>), StoreError> {
        self.write(|tx| {
            require_session(tx.sql, tx.path, session_id)?;
            let old: Option<String> = tx
                .sql
                .query_row(
                    "SELECT value_json FROM session_data WHERE session_id = ?1 AND instance = ?2 AND key = ?3",
                    [session_id, instance, key],
                    |r| r.get(0),
                )
                .optional()
                .at(tx.path)?;
            let old = old.map(|t| parse_value(tx.path, session_id, instance, key, &t)).transpose()?;
            tx.sql
                .execute(
                    "INSERT INTO data_edits (session_id, instance, key, old_json, new_json, time_ms, by_whom)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                    params![
                        session_id,
                        instance,
                        key,
                        old.as_ref().map(Value::to_string),
                        value.to_string(),
                        tx.now_ms,
                        by
                    ],
                )
                .at(tx.path)?;
            let id = tx.sql.last_insert_rowid();
            let updated = put_data_in(tx, session_id, &[(instance.to_string(), key.to_string(), value.clone())], None)?;
            tx.sql
                .execute(
                    "UPDATE session_data SET edit_id = ?4 WHERE session_id = ?1 AND instance = ?2 AND key = ?3",
                    params![session_id, instance, key, id],
                )
                .at(tx.path)?;
            let edit = DataEdit {
                id,
                instance: instance.to_string(),
                key: key.to_string(),
                old,
                new: value.clone(),
                time_ms: tx.now_ms,
                by: by.to_string(),
            };
            let edited = append(tx, session_id, None, EventData::DataEdited(edit.clone()))?;
            Ok((edit, vec![updated, edited]))
        })
    }

    /// How many extra runs a scope has made (0 when never looped).
    pub fn scope_iterations(&self, session_id: &str, instance: &str, scope_task_id: &str) -> Result<u32, StoreError> {
        self.read(|conn, path| {
            require_session(conn, path, session_id)?;
            let n: Option<u32> = conn
                .query_row(
                    "SELECT iterations FROM scope_iterations
                     WHERE session_id = ?1 AND instance = ?2 AND scope_task_id = ?3",
                    [session_id, instance, scope_task_id],
                    |r| r.get(0),
                )
                .optional()
                .at(path)?;
            Ok(n.unwrap_or(0))
        })
    }

    /// Sets a scope counter (0 resets a nested scope when its parent loops).
    pub fn set_scope_iterations(
        &mut self,
        session_id: &str,
        instance: &str,
        scope_task_id: &str,
        iterations: u32,
    ) -> Result<(), StoreError> {
        self.write(|tx| {
            require_session(tx.sql, tx.path, session_id)?;
            tx.sql
                .execute(
                    "INSERT INTO scope_iterations (session_id, instance, scope_task_id, iterations)
                     VALUES (?1, ?2, ?3, ?4)
                     ON CONFLICT (session_id, instance, scope_task_id) DO UPDATE SET iterations = ?4",
                    params![session_id, instance, scope_task_id, iterations],
                )
                .at(tx.path)?;
            Ok(())
        })
    }

    /// Adds one to a scope counter and returns the new count.
    pub fn increment_scope_iterations(
        &mut self,
        session_id: &str,
        instance: &str,
        scope_task_id: &str,
    ) -> Result<u32, StoreError> {
        self.write(|tx| {
            require_session(tx.sql, tx.path, session_id)?;
            tx.sql
                .query_row(
                    "INSERT INTO scope_iterations (session_id, instance, scope_task_id, iterations)
                     VALUES (?1, ?2, ?3, 1)
                     ON CONFLICT (session_id, instance, scope_task_id)
                         DO UPDATE SET iterations = iterations + 1
                     RETURNING iterations",
                    params![session_id, instance, scope_task_id],
                    |r| r.get(0),
                )
                .at(tx.path)
        })
    }
}

/// Writes `(instance, key, value)` triples inside a transaction; one event lists them.
pub(crate) fn put_data_in(
    tx: &Tx<'_>,
    session_id: &str,
    writes: &[(String, String, Value)],
    writer: Option<&RunId>,
) -> Result<Event, StoreError> {
    let mut stmt = tx
        .sql
        .prepare_cached(
            "INSERT INTO session_data (session_id, instance, key, value_json, updated_ms, run_id, edit_id)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, NULL)
             ON CONFLICT (session_id, instance, key)
                 DO UPDATE SET value_json = ?4, updated_ms = ?5, run_id = ?6, edit_id = NULL",
        )
        .at(tx.path)?;
    let mut keys: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let writer = writer.map(RunId::as_str);
    for (instance, key, value) in writes {
        stmt.execute(params![session_id, instance, key, value.to_string(), tx.now_ms, writer]).at(tx.path)?;
        keys.entry(instance.to_string()).or_default().push(key.to_string());
    }
    drop(stmt);
    append(tx, session_id, None, EventData::DataUpdated(DataUpdated { keys }))
}

fn parse_value(
    path: &std::path::Path,
    session_id: &str,
    instance: &str,
    key: &str,
    text: &str,
) -> Result<Value, StoreError> {
    orrery_blueprint::json::from_str(text).map_err(|e| StoreError::Corrupt {
        path: path.to_path_buf(),
        detail: format!("data {instance}/{key} of session {session_id:?} is unreadable: {e}"),
    })
}
