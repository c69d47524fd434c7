//! The reliability suite (issue 16): each module reproduces one way Orrery broke under load,
//! faults or hostile input, against the real `orrery` binary, real SQLite files, real
//! processes and real sockets, and asserts that it now holds. `docs/reliability.md` lists what
//! each module shows and the figures it measured.

mod blink;
mod conditions;
mod connections;
mod crash;
mod encoding;
mod load;
mod nesting;
mod paths;
mod signals;
