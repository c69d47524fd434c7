//! Scope policies and dependency types that run differently (or not at all) on an antikythera
//! server, policy values beyond what anyone means, and scopes with no tasks: warnings only.

use super::scopes::Scopes;
use crate::diagnostic::{task_path, Code, Diagnostic};
use crate::graph::TaskGraph;
use crate::model::*;

/// Scope policies and dependency types that run differently (or not at all) on an antikythera
/// server, and policy values beyond what anyone means.
pub(super) fn policy_rules(bp: &Blueprint, graph: &TaskGraph<'_>, scopes: &Scopes, out: &mut Vec<Diagnostic>) {
    const MAX_RETRIES: u64 = 1_000;
    const MAX_ITERATIONS: u64 = 100_000;
    const MAX_BACKOFF_MS: u64 = 3_600_000;
    dependency_types(bp, out);
    sinks(bp, graph, out);
    for (i, t) in bp.tasks.iter().enumerate() {
        let Some(scope) = &t.scope_start else { continue };
        let path = format!("{}.scope_start", task_path(i));
        if let Some(r) = &scope.retry_policy {
            if r.retries > MAX_RETRIES {
                out.push(
                    Diagnostic::warning(
                        Code::PolicyRange,
                        format!("{path}.retry_policy.retries"),
                        format!(
                            "scope '{}' repeats {} times: more than {MAX_RETRIES} is almost certainly a mistake",
                            t.id, r.retries
                        ),
                    )
                    .task(&t.id),
                );
            }
            if let Some(ms) = r.backoff.as_ref().and_then(|b| b.constant_ms) {
                if ms > MAX_BACKOFF_MS {
                    out.push(
                        Diagnostic::warning(
                            Code::PolicyRange,
                            format!("{path}.retry_policy.backoff.constant_ms"),
                            format!("scope '{}' waits {ms} ms between runs: more than an hour", t.id),
                        )
                        .task(&t.id),
                    );
                }
                out.push(
                    Diagnostic::warning(
                        Code::NotPortable,
                        format!("{path}.retry_policy.backoff"),
                        format!("scope '{}' declares a backoff: Orrery waits, an antikythera server does not (not enforced there)", t.id),
                    )
                    .task(&t.id),
                );
            }
            if scope.while_policy.is_some() {
                out.push(
                    Diagnostic::warning(
                        Code::NotPortable,
                        format!("{path}.while_policy"),
                        format!("scope '{}' declares both a retry and a while policy: the retry policy wins and the while policy is ignored", t.id),
                    )
                    .task(&t.id),
                );
            }
        }
        if let Some(w) = &scope.while_policy {
            match w.max_iterations {
                None => out.push(
                    Diagnostic::warning(
                        Code::PolicyRange,
                        format!("{path}.while_policy"),
                        format!("while scope '{}' has no max_iterations: it loops forever if its condition stays true", t.id),
                    )
                    .task(&t.id),
                ),
                Some(n) if n > MAX_ITERATIONS => out.push(
                    Diagnostic::warning(
                        Code::PolicyRange,
                        format!("{path}.while_policy.max_iterations"),
                        format!("while scope '{}' allows {n} iterations: more than {MAX_ITERATIONS} is almost certainly a mistake", t.id),
                    )
                    .task(&t.id),
                ),
                Some(_) => {}
            }
        }
    }
    for s in &scopes.closed {
        if s.empty {
            let t = &bp.tasks[s.start];
            out.push(
                Diagnostic::warning(
                    Code::ScopeEndUnreachable,
                    format!("{}.scope_start", task_path(s.start)),
                    format!(
                        "scope '{}' is closed by '{}', which does not depend on it: the scope has no tasks",
                        t.id, bp.tasks[s.end].id
                    ),
                )
                .task(&t.id),
            );
        }
    }
}

/// How an antikythera server (0.5.1, measured on the reference orchestrator with its own system
/// agents; docs/format.md §4) runs each dependency type other than FS, where Orrery runs it as
/// the type means: not portable, whatever the file says.
fn dependency_types(bp: &Blueprint, out: &mut Vec<Diagnostic>) {
    for (i, t) in bp.tasks.iter().enumerate() {
        let fs_too = t.depends_on.iter().any(|d| d.dep_type == DependencyType::FS);
        for (j, d) in t.depends_on.iter().enumerate() {
            let (b, a) = (&t.id, &d.id);
            let mut says = match d.dep_type {
                DependencyType::FS => continue,
                DependencyType::SS => format!(
                    "task '{b}' has a start-to-start (SS) dependency on '{a}': Orrery starts '{b}' as soon as '{a}' starts; on an antikythera server, '{b}' starts only when some task finishes after '{a}' has started (when nothing else finishes first, only when '{a}' ends)"
                ),
                DependencyType::FF => {
                    let start = if fs_too { "when its other dependencies allow" } else { "at once, before the start task has run" };
                    format!(
                        "task '{b}' has a finish-to-finish (FF) dependency on '{a}': on an antikythera server, '{b}' starts {start} and its finish waits for '{a}' as in Orrery, but is looked at again only when another task reports back: a chain of FF dependencies whose tasks finish out of order never completes there"
                    )
                }
                DependencyType::SF => format!(
                    "task '{b}' has a start-to-finish (SF) dependency on '{a}': Orrery lets '{b}' finish only once '{a}' has started; an antikythera server ignores SF ('{b}' waits for '{a}' neither to start nor to end), and upstream's main branch drops the type (ADR-0005)"
                ),
            };
            if t.depends_on.iter().filter(|e| e.id == d.id).count() > 1 {
                let last = t.depends_on.iter().rev().find(|e| e.id == d.id).map_or("FS", |e| e.dep_type.as_str());
                says.push_str(&format!(
                    "; '{b}' depends on '{a}' more than once, and a server keeps only the last ({last})"
                ));
            }
            out.push(
                Diagnostic::warning(Code::NotPortable, format!("{}.depends_on[{j}].type", task_path(i)), says)
                    .task(&t.id),
            );
        }
    }
}

/// Tasks nothing depends on besides the end task. An antikythera 0.5.1 server completes the
/// session when the first such task finishes, with the others still pending or running;
/// upstream's main branch requires the end task to be the only one (ADR-0005).
fn sinks(bp: &Blueprint, graph: &TaskGraph<'_>, out: &mut Vec<Diagnostic>) {
    let Some(end) = bp.tasks.iter().position(|t| t.task_type.is_end()) else { return };
    if bp.tasks.iter().filter(|t| t.task_type.is_end()).count() != 1 {
        return; // end-count says what is wrong
    }
    // A task is depended on when its id's node has a successor.
    let depended = |i: usize| !graph.successors[graph.node_of_task[i]].is_empty();
    let others: Vec<(usize, &Task)> = bp.tasks.iter().enumerate().filter(|&(i, _)| i != end && !depended(i)).collect();
    let end_id = &bp.tasks[end].id;
    for (i, t) in others {
        out.push(
            Diagnostic::warning(
                Code::EndNotOnlySink,
                task_path(i),
                format!(
                    "nothing depends on task '{}', so the end task '{end_id}' is not the only task the run ends with: an antikythera server completes the session when the first of them finishes, with the other still pending or running, and upstream's main branch refuses it (ADR-0005); make '{end_id}' depend on '{}'",
                    t.id, t.id
                ),
            )
            .task(&t.id),
        );
    }
}
