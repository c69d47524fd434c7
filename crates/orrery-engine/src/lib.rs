//! The orchestrator (docs/architecture.md): a pure scheduler that decides what may start and which
//! completions may land, the session flattening, data and scope rules it applies, the session
//! runner that owns each session's side effects, and the agents that execute tasks.

pub mod agents;
pub mod broker;
pub mod data;
pub mod interventions;
pub mod plan;
pub mod process;
pub mod requests;
pub mod runner;
pub mod scheduler;
pub mod scopes;
pub mod timing;
