//! Blueprint versions: the exact canonical text a session ran, keyed by its sha256, so a
//! session can always be explained by the blueprint it was created from.

use rusqlite::{params, OptionalExtension};
use serde::{Deserialize, Serialize};

use crate::canonical::sha256_hex;
use crate::error::SqliteResultExt;
use crate::{Store, StoreError};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BlueprintVersion {
    /// sha256 hex of `canonical_json`.
    pub hash: String,
    pub blueprint_id: String,
    pub canonical_json: String,
    pub created_ms: i64,
}

impl Store {
    /// Stores a blueprint's canonical JSON (idempotent) and returns its content hash.
    /// The same text under another blueprint id is refused: a hash names one blueprint.
    pub fn put_blueprint_version(&mut self, blueprint_id: &str, canonical_json: &str) -> Result<String, StoreError> {
        if blueprint_id.is_empty() {
            return Err(StoreError::invalid("a blueprint version needs a blueprint id"));
        }
        let hash = sha256_hex(canonical_json);
        self.write(|tx| {
            let existing: Option<String> = tx
                .sql
                .query_row("SELECT blueprint_id FROM blueprint_versions WHERE hash = ?1", [&hash], |r| r.get(0))
                .optional()
                .at(tx.path)?;
            match existing {
                Some(id) if id == blueprint_id => {}
                Some(id) => {
                    return Err(StoreError::invalid(format!(
                        "blueprint version {hash} is already stored for blueprint {id:?}, \
                         not {blueprint_id:?}"
                    )))
                }
                None => {
                    tx.sql
                        .execute(
                            "INSERT INTO blueprint_versions (hash, blueprint_id, canonical_json, created_ms)
                             VALUES (?1, ?2, ?3, ?4)",
                            params![hash, blueprint_id, canonical_json, tx.now_ms],
                        )
                        .at(tx.path)?;
                }
            }
            Ok(hash.clone())
        })
    }

    pub fn blueprint_version(&self, hash: &str) -> Result<BlueprintVersion, StoreError> {
        self.conn
            .query_row(
                "SELECT hash, blueprint_id, canonical_json, created_ms FROM blueprint_versions
                 WHERE hash = ?1",
                [hash],
                version_row,
            )
            .optional()
            .at(&self.path)?
            .ok_or_else(|| StoreError::not_found("blueprint version", hash))
    }

    /// The ids of every stored blueprint, in order.
    pub fn blueprint_ids(&self) -> Result<Vec<String>, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT DISTINCT blueprint_id FROM blueprint_versions ORDER BY blueprint_id")
            .at(&self.path)?;
        let rows = stmt.query_map([], |r| r.get::<_, String>(0)).at(&self.path)?;
        rows.map(|r| r.at(&self.path)).collect()
    }

    /// Every stored version of one blueprint, newest first.
    pub fn blueprint_versions(&self, blueprint_id: &str) -> Result<Vec<BlueprintVersion>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT hash, blueprint_id, canonical_json, created_ms FROM blueprint_versions
                 WHERE blueprint_id = ?1 ORDER BY created_ms DESC, rowid DESC",
            )
            .at(&self.path)?;
        let rows = stmt.query_map([blueprint_id], version_row).at(&self.path)?;
        rows.map(|r| r.at(&self.path)).collect()
    }
}

fn version_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<BlueprintVersion> {
    Ok(BlueprintVersion {
        hash: row.get(0)?,
        blueprint_id: row.get(1)?,
        canonical_json: row.get(2)?,
        created_ms: row.get(3)?,
    })
}
