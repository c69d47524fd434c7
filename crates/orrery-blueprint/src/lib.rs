//! The antikythera blueprint model (docs/format.md §1-4): types, loading and canonical
//! saving in both encodings, validation with the reference server's verdict kept apart from
//! Orrery's own findings, dataflow, and the condition language.

pub mod changes;
pub mod check;
pub mod compas;
pub mod condition;
pub mod dataflow;
mod declared;
pub mod diagnostic;
pub mod failure;
pub mod fsio;
pub mod graph;
pub mod json;
pub mod load;
pub mod model;
pub mod params;
mod python_ids;
pub mod render;
pub mod save;
pub mod scope;
pub mod scope_proposal;
mod skim;
pub mod span;
pub mod task_types;
mod threads;
mod typed_load;
pub mod validate;
pub mod version;
pub mod wiring;

pub use check::{
    blueprints_in, check_files, check_first, check_in_folder, check_read_sources, check_sources, load_runnable,
    write_reports_pretty, FileReport, Runnable, Source,
};
pub use diagnostic::{Code, Diagnostic, Severity};
pub use failure::FailureCode;
pub use load::{load, Encoding, LoadError, Loaded};
pub use model::*;
pub use validate::{validate, Library, ValidBlueprint};
