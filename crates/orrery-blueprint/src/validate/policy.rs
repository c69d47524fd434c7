//! Scope policies and dependency types that run differently (or not at all) on an antikythera
//! server, policy values beyond what anyone means, and scopes with no tasks: warnings only.

use super::scopes::Scopes;
use crate::diagnostic::{task_path, Code, Diagnostic};
use crate::model::*;

/// Scope policies and dependency types that run differently (or not at all) on an antikythera
/// server, and policy values beyond what anyone means.
pub(super) fn policy_rules(bp: &Blueprint, scopes: &Scopes, out: &mut Vec<Diagnostic>) {
    const MAX_RETRIES: u64 = 1_000;
    const MAX_ITERATIONS: u64 = 100_000;
    const MAX_BACKOFF_MS: u64 = 3_600_000;
    for (i, t) in bp.tasks.iter().enumerate() {
        for (j, d) in t.depends_on.iter().enumerate() {
            if d.dep_type == DependencyType::SF {
                out.push(
                    Diagnostic::warning(
                        Code::NotPortable,
                        format!("{}.depends_on[{j}].type", task_path(i)),
                        format!(
                            "task '{}' has a start-to-finish (SF) dependency on '{}': Orrery runs it, an antikythera server ignores it",
                            t.id, d.id
                        ),
                    )
                    .task(&t.id),
                );
            }
        }
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
