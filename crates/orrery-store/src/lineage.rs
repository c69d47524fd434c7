//! Lineage: where each input of an attempt was read from (a session data key) and the attempt
//! (or the person's edit) that wrote the value it read, recorded when the attempt begins. Apart from the attempts
//! because it is its own table (`attempt_inputs`) and its own question: which output fed which
//! input.

use serde::{Deserialize, Serialize};

use crate::error::SqliteResultExt;
use crate::records::RunId;
use crate::refusals::require_session;
use crate::{Store, StoreError};

/// The session data key an input was read from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct InputSource {
    /// The input's name (its value is `inputs[input]`).
    pub input: String,
    /// The blueprint instance whose data it read.
    pub instance: String,
    pub key: String,
}

/// One input of one attempt and where it came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct InputLineage {
    pub run_id: RunId,
    pub node: String,
    pub attempt: u32,
    pub input: String,
    pub instance: String,
    pub key: String,
    /// The attempt that wrote the value it read; none when no attempt did (a default, a skip,
    /// a person's edit).
    pub source: Option<LineageSource>,
    /// The person's edit that set the value it read (at a breakpoint), if one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edit: Option<LineageEdit>,
    /// sha256 of the value's JSON text.
    pub value_sha256: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LineageSource {
    pub run_id: RunId,
    pub node: String,
    pub attempt: u32,
}

/// A value set by a person: which edit, when, by whom.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LineageEdit {
    pub id: i64,
    pub time_ms: i64,
    pub by: String,
}

impl Store {
    /// Every input of every attempt of a session and the attempt that wrote what it read, in
    /// attempt start order: which output fed which input.
    pub fn lineage(&self, session_id: &str) -> Result<Vec<InputLineage>, StoreError> {
        self.read(|conn, path| {
            require_session(conn, path, session_id)?;
            let mut stmt = conn
                .prepare(
                    "SELECT r.run_id, r.node, r.attempt, i.input, i.instance, i.key, i.value_sha256,
                            s.run_id, s.node, s.attempt, e.id, e.time_ms, e.by_whom
                     FROM attempt_inputs i
                     JOIN task_runs r ON r.run_id = i.run_id
                     LEFT JOIN task_runs s ON s.run_id = i.source_run_id
                     LEFT JOIN data_edits e ON e.id = i.source_edit_id
                     WHERE r.session_id = ?1
                     ORDER BY r.started_ms, r.rowid, i.input",
                )
                .at(path)?;
            let rows = stmt
                .query_map([session_id], |row| {
                    let source = match row.get::<_, Option<String>>(7)? {
                        Some(run_id) => {
                            Some(LineageSource { run_id: RunId(run_id), node: row.get(8)?, attempt: row.get(9)? })
                        }
                        None => None,
                    };
                    let edit = match row.get::<_, Option<i64>>(10)? {
                        Some(id) => Some(LineageEdit { id, time_ms: row.get(11)?, by: row.get(12)? }),
                        None => None,
                    };
                    Ok(InputLineage {
                        run_id: RunId(row.get(0)?),
                        node: row.get(1)?,
                        attempt: row.get(2)?,
                        input: row.get(3)?,
                        instance: row.get(4)?,
                        key: row.get(5)?,
                        value_sha256: row.get(6)?,
                        source,
                        edit,
                    })
                })
                .at(path)?;
            rows.map(|r| r.at(path)).collect()
        })
    }
}
