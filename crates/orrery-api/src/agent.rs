//! Orrery's built-in agents offered on an MQTT broker, for a face that serves them from its own
//! process (`orrery agent`): the agent loop itself is the engine's (`orrery_engine::broker::agent`).

pub use orrery_engine::broker::agent::{offered, serve, AgentNote, AgentOptions};
pub use orrery_engine::broker::matches_pattern;
