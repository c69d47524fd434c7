//! The reference's own rules on the blueprint as a whole: the version its server checks and
//! the nine rules of its `Blueprint.validate()` (one start and one end task, no orphans, no
//! dependency on a task that does not exist, and the scope rules of [`super::scopes`]). All of
//! them are marked as refused by the server.

use super::scopes::{self, Scopes};
use crate::diagnostic::{task_path, Code, Diagnostic};
use crate::graph::TaskGraph;
use crate::model::*;
use crate::version::{self, VersionProblem};

/// The version the reference's server checks in a plain file: a PEP 440 version of major 1.
pub(super) fn check_version(bp: &Blueprint, out: &mut Vec<Diagnostic>) {
    match version::check(&bp.version) {
        Ok(()) => {}
        Err(VersionProblem::Invalid) => out.push(
            Diagnostic::error(
                Code::VersionInvalid,
                "$.version",
                format!("version '{}' is not a PEP 440 version", bp.version),
            )
            .rejected(),
        ),
        Err(VersionProblem::Unsupported { major }) => out.push(
            Diagnostic::error(
                Code::VersionUnsupported,
                "$.version",
                format!("unsupported blueprint version '{}': the major version must be 1, not {major}", bp.version),
            )
            .rejected(),
        ),
    }
}

/// The nine rules of the reference's `validate()`, which runs only when there are tasks.
pub(super) fn reference_rules(
    bp: &Blueprint,
    graph: &TaskGraph<'_>,
    scopes: &Scopes,
    plain: bool,
    out: &mut Vec<Diagnostic>,
) {
    if bp.tasks.is_empty() {
        // Loading a plain file validates again, tasks or not; envelopes skip that.
        let mut d = Diagnostic::error(
            Code::EmptyBlueprint,
            "$.tasks",
            "the blueprint has no tasks: it needs exactly one system.start and one system.end task",
        );
        d.server_rejects = plain;
        out.push(d);
        return;
    }
    for (code, wanted, kind) in [(Code::StartCount, TaskType::START, "start"), (Code::EndCount, TaskType::END, "end")] {
        let found: Vec<usize> = (0..bp.tasks.len()).filter(|&i| bp.tasks[i].task_type.as_str() == wanted).collect();
        if found.len() != 1 {
            let mut message =
                format!("the blueprint must have exactly one {kind} task ({wanted}), found {}", found.len());
            if found.len() > 1 {
                let ids: Vec<String> = found.iter().map(|&i| format!("'{}'", bp.tasks[i].id)).collect();
                message.push_str(&format!(": {}", ids.join(", ")));
            }
            let d = match found.get(1) {
                Some(&i) => Diagnostic::error(code, format!("{}.type", task_path(i)), message).task(&bp.tasks[i].id),
                None => Diagnostic::error(code, "$.tasks", message),
            };
            out.push(d.rejected());
        }
    }
    for (i, t) in bp.tasks.iter().enumerate() {
        if !t.task_type.is_start() && t.depends_on.is_empty() {
            out.push(
                Diagnostic::error(
                    Code::OrphanTask,
                    task_path(i),
                    format!("task '{}' is an orphan: it has no dependencies and is not the start task", t.id),
                )
                .task(&t.id)
                .rejected(),
            );
        }
        for (j, d) in t.depends_on.iter().enumerate() {
            if !graph.node_of.contains_key(d.id.as_str()) {
                out.push(
                    Diagnostic::error(
                        Code::DanglingDependency,
                        format!("{}.depends_on[{j}].id", task_path(i)),
                        format!("task '{}' depends on '{}', which does not exist", t.id, d.id),
                    )
                    .task(&t.id)
                    .rejected(),
                );
            }
        }
    }
    scopes::scope_rules(bp, graph, scopes, out);
}
