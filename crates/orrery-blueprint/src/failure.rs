//! The stable codes of a failure at every boundary: a job's business failure (the envelope's
//! `metadata.error`, HTTP's `error`, the CLI's `--format json`), the shell's IPC errors, and
//! the store's and the remote client's errors that become them. One enum, below every crate
//! that fails, so that a face matches on a variant (the UI on its generated union) and never on
//! a code it spelled itself.

use serde::{Deserialize, Serialize};

/// Why something failed, for a program to match on; the message says it for people.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FailureCode {
    /// An argument is not one the call takes: a job's arguments that break its schema, a value
    /// out of range, an address that is not one.
    InvalidArgument,
    /// The facade has no job of that name.
    UnknownJob,
    /// What was named (a session, an attempt, a file, a server) does not exist.
    NotFound,
    /// The call is not allowed in the state things are in (a session that cannot resume, a
    /// server that said no).
    Refused,
    /// The text is not a blueprint that loads, or its plan cannot run.
    InvalidBlueprint,
    /// A layout file that is not Orrery's.
    InvalidLayout,
    /// A file could not be read or written.
    Io,
    /// The file was not chosen by the user (opened or saved through a dialog, or given at start).
    NotGranted,
    /// A log offset outside the file.
    InvalidOffset,
    /// A log path that is not a regular file.
    NotAFile,
    /// A write for an attempt that is no longer running.
    StaleRun,
    /// A request id used again with other arguments.
    RequestIdReused,
    /// An agent's task memory has no task of that name (in the caller's project).
    TaskNotFound,
    /// A step's `result_event_seq` names no event of its task.
    EventNotFound,
    /// A task memory's task exists under that name with another goal.
    TaskExists,
    /// A task memory's request id is empty or longer than 64 characters.
    InvalidRequestId,
    /// A job-protocol task's run ended without succeeding (`wait_task`, `stream_task`): the
    /// answer is its status, not a message.
    TaskFailed,
    /// Another live runner holds the session.
    Leased,
    /// The store's file is damaged.
    Corrupt,
    /// The store can only be read here.
    ReadOnly,
    /// The disk is full.
    DiskFull,
    /// The store stayed locked by another writer for too long.
    Busy,
    /// The store's schema could not be brought up to date.
    Migration,
    /// SQLite failed otherwise.
    Storage,
    /// A store operation failed while the job ran.
    Store,
    /// The session runner failed.
    Engine,
    /// A server did not answer.
    Unreachable,
    /// A server answered with a failure or with what it should not.
    Remote,
    /// The MQTT broker did not answer.
    BrokerUnreachable,
    /// A fault of Orrery itself.
    Internal,
    /// HTTP: a body that cannot be read, or that is not `{"arguments": {...}}`.
    InvalidRequest,
    /// HTTP: no bearer token, or the wrong one.
    Unauthorized,
    /// HTTP: an `Origin` other than the server's own.
    WrongOrigin,
    /// HTTP: a `Host` other than the loopback names with this port.
    WrongHost,
    /// HTTP: a known path with another method.
    MethodNotAllowed,
    /// HTTP: a body not all there in time.
    BodyTimeout,
    /// HTTP: a body over the limit.
    BodyTooLarge,
    /// HTTP: a request still in flight when the server's grace was over.
    ShuttingDown,
}

impl FailureCode {
    /// The code as it crosses a boundary.
    pub fn as_str(self) -> &'static str {
        match self {
            FailureCode::InvalidArgument => "invalid_argument",
            FailureCode::UnknownJob => "unknown_job",
            FailureCode::NotFound => "not_found",
            FailureCode::Refused => "refused",
            FailureCode::InvalidBlueprint => "invalid_blueprint",
            FailureCode::InvalidLayout => "invalid_layout",
            FailureCode::Io => "io",
            FailureCode::NotGranted => "not_granted",
            FailureCode::InvalidOffset => "invalid_offset",
            FailureCode::NotAFile => "not_a_file",
            FailureCode::StaleRun => "stale_run",
            FailureCode::RequestIdReused => "request_id_reused",
            FailureCode::TaskFailed => "task_failed",
            FailureCode::TaskNotFound => "task_not_found",
            FailureCode::EventNotFound => "event_not_found",
            FailureCode::TaskExists => "task_exists",
            FailureCode::InvalidRequestId => "invalid_request_id",
            FailureCode::Leased => "leased",
            FailureCode::Corrupt => "corrupt",
            FailureCode::ReadOnly => "read_only",
            FailureCode::DiskFull => "disk_full",
            FailureCode::Busy => "busy",
            FailureCode::Migration => "migration",
            FailureCode::Storage => "storage",
            FailureCode::Store => "store",
            FailureCode::Engine => "engine",
            FailureCode::Unreachable => "unreachable",
            FailureCode::Remote => "remote",
            FailureCode::BrokerUnreachable => "broker_unreachable",
            FailureCode::Internal => "internal",
            FailureCode::InvalidRequest => "invalid_request",
            FailureCode::Unauthorized => "unauthorized",
            FailureCode::WrongOrigin => "wrong_origin",
            FailureCode::WrongHost => "wrong_host",
            FailureCode::MethodNotAllowed => "method_not_allowed",
            FailureCode::BodyTimeout => "body_timeout",
            FailureCode::BodyTooLarge => "body_too_large",
            FailureCode::ShuttingDown => "shutting_down",
        }
    }
}

impl std::fmt::Display for FailureCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_code_crosses_as_its_serde_name() {
        let all = [
            FailureCode::InvalidArgument,
            FailureCode::UnknownJob,
            FailureCode::NotFound,
            FailureCode::Refused,
            FailureCode::InvalidBlueprint,
            FailureCode::InvalidLayout,
            FailureCode::Io,
            FailureCode::NotGranted,
            FailureCode::InvalidOffset,
            FailureCode::NotAFile,
            FailureCode::StaleRun,
            FailureCode::RequestIdReused,
            FailureCode::TaskFailed,
            FailureCode::TaskNotFound,
            FailureCode::EventNotFound,
            FailureCode::TaskExists,
            FailureCode::InvalidRequestId,
            FailureCode::Leased,
            FailureCode::Corrupt,
            FailureCode::ReadOnly,
            FailureCode::DiskFull,
            FailureCode::Busy,
            FailureCode::Migration,
            FailureCode::Storage,
            FailureCode::Store,
            FailureCode::Engine,
            FailureCode::Unreachable,
            FailureCode::Remote,
            FailureCode::BrokerUnreachable,
            FailureCode::Internal,
            FailureCode::InvalidRequest,
            FailureCode::Unauthorized,
            FailureCode::WrongOrigin,
            FailureCode::WrongHost,
            FailureCode::MethodNotAllowed,
            FailureCode::BodyTimeout,
            FailureCode::BodyTooLarge,
            FailureCode::ShuttingDown,
        ];
        for code in all {
            assert_eq!(serde_json::to_value(code).unwrap(), code.as_str(), "{code:?}");
            assert_eq!(serde_json::from_value::<FailureCode>(code.as_str().into()).unwrap(), code);
        }
        assert!(serde_json::from_value::<FailureCode>("invalid_arguments".into()).is_err(), "one spelling only");
    }
}
