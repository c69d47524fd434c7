//! Idempotent writes (docs/format.md §7): one helper that every retriable write goes through.
//!
//! The request id, a digest of what was asked (operation name + canonical JSON of the
//! arguments) and the answer are stored in the same transaction as the write itself, so
//! either both happened or neither did. Generated values (ids, times) are part of the answer,
//! not of the arguments, which is why a repeat returns the *stored* answer.

use rusqlite::OptionalExtension;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::canonical::{canonical_json, sha256_hex};
use crate::error::SqliteResultExt;
use crate::{Store, StoreError, Tx};

/// The longest request id accepted.
pub const MAX_REQUEST_ID_CHARS: usize = 64;

/// A request a client may send again after a lost answer: its id, and what it asked, as the
/// job's name and arguments (the request id left out). The same id with the same arguments is
/// answered what was stored the first time; with other arguments it is refused.
#[derive(Debug, Clone, PartialEq)]
pub struct Retry {
    pub id: String,
    pub operation: String,
    pub arguments: serde_json::Value,
}

impl Store {
    /// What the first `retry` stored, when there was one; refused when its id was used with
    /// other arguments. Writes nothing: the write itself goes through [`Store::write_once`].
    pub fn answer_of<R: DeserializeOwned>(&self, retry: &Retry) -> Result<Option<R>, StoreError> {
        let digest = request_digest(&retry.id, &retry.operation, &retry.arguments)?;
        let earlier: Option<(String, String)> = self
            .conn
            .query_row("SELECT args_digest, answer_json FROM requests WHERE request_id = ?1", [&retry.id], |row| {
                Ok((row.get(0)?, row.get(1)?))
            })
            .optional()
            .at(&self.path)?;
        let Some((earlier_digest, answer)) = earlier else { return Ok(None) };
        if earlier_digest != digest {
            return Err(StoreError::RequestIdReused {
                request_id: retry.id.clone(),
                operation: retry.operation.clone(),
            });
        }
        orrery_blueprint::json::from_str(&answer).map(Some).map_err(|e| StoreError::Corrupt {
            path: self.path.clone(),
            detail: format!("stored answer of request {:?} is unreadable: {e}", retry.id),
        })
    }

    /// Stores `answer` as what `retry` answered, unless the same request stored one first:
    /// then that one is answered (and other arguments under its id are refused). For a write
    /// that happened outside the store, journaled right after it.
    pub fn remember<R: Serialize + DeserializeOwned>(&mut self, retry: &Retry, answer: R) -> Result<R, StoreError> {
        self.write_once(Some(&retry.id), &retry.operation, &retry.arguments, |_| Ok(answer))
    }

    /// Runs `write` once per `request_id`; see the module notes.
    pub(crate) fn write_once<A, R>(
        &mut self,
        request_id: Option<&str>,
        operation: &str,
        args: &A,
        write: impl FnOnce(&Tx<'_>) -> Result<R, StoreError>,
    ) -> Result<R, StoreError>
    where
        A: Serialize + ?Sized,
        R: Serialize + DeserializeOwned,
    {
        self.write_once_in("", request_id, operation, args, write)
    }

    /// [`Store::write_once`] with request ids of their own `scope` (a project's): the same id
    /// in another scope is another request.
    pub(crate) fn write_once_in<A, R>(
        &mut self,
        scope: &str,
        request_id: Option<&str>,
        operation: &str,
        args: &A,
        write: impl FnOnce(&Tx<'_>) -> Result<R, StoreError>,
    ) -> Result<R, StoreError>
    where
        A: Serialize + ?Sized,
        R: Serialize + DeserializeOwned,
    {
        let Some(given) = request_id else {
            return self.write(write);
        };
        let digest = request_digest(given, operation, args)?;
        let scoped = format!("{scope}\u{1f}{given}");
        let request_id = if scope.is_empty() { given } else { scoped.as_str() };
        self.write(|tx| {
            let earlier: Option<(String, String, String)> = tx
                .sql
                .query_row(
                    "SELECT operation, args_digest, answer_json FROM requests WHERE request_id = ?1",
                    [request_id],
                    |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
                )
                .optional()
                .at(tx.path)?;
            if let Some((earlier_operation, earlier_digest, answer)) = earlier {
                if earlier_operation != operation || earlier_digest != digest {
                    return Err(StoreError::RequestIdReused {
                        request_id: given.to_string(),
                        operation: operation.to_string(),
                    });
                }
                return orrery_blueprint::json::from_str(&answer).map_err(|e| StoreError::Corrupt {
                    path: tx.path.to_path_buf(),
                    detail: format!("stored answer of request {given:?} is unreadable: {e}"),
                });
            }
            let answer = write(tx)?;
            let answer_json =
                serde_json::to_string(&answer).map_err(|e| StoreError::invalid(format!("answer is not JSON: {e}")))?;
            tx.sql
                .execute(
                    "INSERT INTO requests (request_id, operation, args_digest, answer_json, created_ms)
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                    rusqlite::params![request_id, operation, digest, answer_json, tx.now_ms],
                )
                .at(tx.path)?;
            Ok(answer)
        })
    }
}

/// The digest a request id is stored with: of the operation and the canonical JSON of its
/// arguments. Refuses an id that is empty or longer than [`MAX_REQUEST_ID_CHARS`].
fn request_digest(request_id: &str, operation: &str, args: &(impl Serialize + ?Sized)) -> Result<String, StoreError> {
    if request_id.is_empty() || request_id.chars().count() > MAX_REQUEST_ID_CHARS {
        return Err(StoreError::invalid(format!(
            "request id {request_id:?} must have 1 to {MAX_REQUEST_ID_CHARS} characters"
        )));
    }
    Ok(sha256_hex(&format!("{operation}\n{}", canonical_json(args)?)))
}
