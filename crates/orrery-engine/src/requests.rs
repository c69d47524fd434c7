//! Acting on a session that runs in another process (another `orrery`, the app): a request is
//! left in the store for the session's runner, which reads it within
//! [`crate::runner::REQUEST_POLL`], acts and says what came of it (see the runner's control
//! notes). Only a session that is `running` and whose runner's process lives can be asked; a
//! session whose runner is gone (a crash) is told to be resumed instead.

use std::path::Path;
use std::time::{Duration, Instant};

use orrery_blueprint::SessionState;
use orrery_store::{Request, Store, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    #[error("session {session_id} is not running (it is {}): nothing to ask of it", .state.as_str())]
    NotRunning { session_id: String, state: SessionState },
    #[error(
        "session {session_id} was running, but its runner is gone (a crash): go on with `orrery resume {session_id}`"
    )]
    Interrupted { session_id: String },
    #[error("the runner of session {session_id} did not answer within {seconds} s (request {id} stays open)")]
    NoAnswer { session_id: String, id: i64, seconds: u64 },
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl RequestError {
    /// Whether the request was refused (an unknown session, its state, no answer), as opposed
    /// to a store that cannot be used.
    pub fn is_refusal(&self) -> bool {
        match self {
            RequestError::Store(e) => matches!(e, StoreError::NotFound { .. }),
            _ => true,
        }
    }
}

/// Leaves `request` for the runner of `session_id` and waits (at most `wait`) for what came of
/// it: the runner's answer (it starts with `refused:` when it would not act).
pub fn ask(store_path: &Path, session_id: &str, request: &Request, wait: Duration) -> Result<String, RequestError> {
    let mut store = Store::open(store_path)?;
    let session = store.session(session_id)?;
    if session.state != SessionState::Running {
        return Err(RequestError::NotRunning { session_id: session.id, state: session.state });
    }
    if !crate::runner::is_driven(&store, &session.id)? {
        return Err(RequestError::Interrupted { session_id: session.id });
    }
    let id = store.request(&session.id, request)?;
    let until = Instant::now() + wait;
    loop {
        if let Some(outcome) = store.request_outcome(id)? {
            return Ok(outcome);
        }
        if Instant::now() >= until {
            return Err(RequestError::NoAnswer { session_id: session.id, id, seconds: wait.as_secs() });
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
