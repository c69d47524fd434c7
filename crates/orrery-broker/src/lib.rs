//! The antikythera agent protocol (docs/format.md §4) on the wire: the reference's protobuf
//! messages in COMPAS envelopes ([`wire`]), an MQTT connection to the broker ([`bus`]), and the
//! orchestrator's side of a task's dispatch ([`dispatch`]). The agent's side, which executes
//! Orrery's built-in task types, lives with them in `orrery-engine`.

pub mod bus;
pub mod dispatch;
pub mod wire;

pub use bus::{BrokerAddress, Bus, BusError, BusEvent, Topic};
pub use dispatch::{Assignment, Dispatcher, Ending, Policy, Progress};
pub use wire::{ExecutionMode, Message, TaskState};
