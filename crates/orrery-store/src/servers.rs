//! The antikythera servers the user works with, by name: where blueprints are published and
//! sessions run remotely; and the user's other settings (the MQTT broker). Kept in the store so
//! that the app and the CLI share them.

use rusqlite::{params, OptionalExtension};
use serde::{Deserialize, Serialize};

use crate::error::SqliteResultExt;
use crate::{Store, StoreError};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerEntry {
    pub name: String,
    pub url: String,
    pub token: Option<String>,
    pub updated_ms: i64,
}

impl Store {
    /// Adds a server, or changes the one of that name.
    pub fn put_server(&mut self, name: &str, url: &str, token: Option<&str>) -> Result<ServerEntry, StoreError> {
        self.write(|tx| {
            tx.sql
                .execute(
                    "INSERT INTO servers (name, url, token, updated_ms) VALUES (?1, ?2, ?3, ?4)
                     ON CONFLICT (name) DO UPDATE SET url = ?2, token = ?3, updated_ms = ?4",
                    params![name, url, token, tx.now_ms],
                )
                .at(tx.path)?;
            Ok(ServerEntry {
                name: name.into(),
                url: url.into(),
                token: token.map(str::to_string),
                updated_ms: tx.now_ms,
            })
        })
    }

    pub fn server(&self, name: &str) -> Result<Option<ServerEntry>, StoreError> {
        self.read(|conn, path| {
            conn.query_row("SELECT name, url, token, updated_ms FROM servers WHERE name = ?1", [name], server_row)
                .optional()
                .at(path)
        })
    }

    /// Every server, by name.
    pub fn servers(&self) -> Result<Vec<ServerEntry>, StoreError> {
        self.read(|conn, path| {
            let mut stmt = conn.prepare("SELECT name, url, token, updated_ms FROM servers ORDER BY name").at(path)?;
            let rows = stmt.query_map([], server_row).at(path)?;
            rows.map(|r| r.at(path)).collect()
        })
    }

    /// The setting `key` (JSON), if it was ever set.
    pub fn setting(&self, key: &str) -> Result<Option<serde_json::Value>, StoreError> {
        let text: Option<String> = self.read(|conn, path| {
            conn.query_row("SELECT value FROM settings WHERE key = ?1", [key], |r| r.get(0)).optional().at(path)
        })?;
        text.map(|t| {
            serde_json::from_str(&t).map_err(|e| {
                StoreError::invalid(format!("setting '{key}' in {} is not JSON: {e}", self.path.display()))
            })
        })
        .transpose()
    }

    /// Sets `key` to `value`; `None` removes it.
    pub fn put_setting(&mut self, key: &str, value: Option<&serde_json::Value>) -> Result<(), StoreError> {
        self.write(|tx| {
            match value {
                Some(value) => tx.sql.execute(
                    "INSERT INTO settings (key, value, updated_ms) VALUES (?1, ?2, ?3)
                     ON CONFLICT (key) DO UPDATE SET value = ?2, updated_ms = ?3",
                    params![key, value.to_string(), tx.now_ms],
                ),
                None => tx.sql.execute("DELETE FROM settings WHERE key = ?1", [key]),
            }
            .at(tx.path)?;
            Ok(())
        })
    }

    /// Forgets a server; whether it was there.
    pub fn remove_server(&mut self, name: &str) -> Result<bool, StoreError> {
        self.write(|tx| Ok(tx.sql.execute("DELETE FROM servers WHERE name = ?1", [name]).at(tx.path)? > 0))
    }
}

fn server_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<ServerEntry> {
    Ok(ServerEntry { name: row.get(0)?, url: row.get(1)?, token: row.get(2)?, updated_ms: row.get(3)? })
}
