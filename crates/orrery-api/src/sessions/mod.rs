//! Sessions and their tasks: start, watch, control, intervene, read their data.
//!
//! The jobs live by purpose, one file each; `arguments` holds what several of them take, and
//! none of the others imports another:
//! - `launch`: start, resume and restart a session in the background (`start_session`, ...).
//! - `views`: what the run views show of the sessions and their attempts (`list_sessions`,
//!   `get_session`, `get_attempt`), and waiting for a session to end (`wait_session`).
//! - `control`: requests to a running session: stop, pause, cancel a task, answer a prompt.
//! - `interventions`: changes to a session that is not running: skip a task, reset a task or
//!   a scope.
//! - `records`: what a session recorded: its lineage, its blueprint versions, its attempts'
//!   logs, the event log, its data.

mod arguments;
mod control;
mod interventions;
mod launch;
mod records;
mod views;

use crate::Job;

pub use control::Done;
pub use interventions::{InterventionView, NodeChangeView};
pub(crate) use launch::runnable;
pub use launch::{BreakAtArgument, Started};
pub(crate) use records::attempt_window;
pub use records::AttemptLog;
pub use views::{AttemptDetails, SessionListing, SessionView, Waited};

/// The session jobs, in the catalogue's order.
pub(crate) fn register(jobs: &mut Vec<Job>) {
    launch::register(jobs);
    views::register(jobs);
    control::register(jobs);
    interventions::register(jobs);
    records::register(jobs);
}
