//! Ids and names, which the reference never checks: duplicate task ids, self-dependencies,
//! cycles, repeated dependencies and io names, task types not of the form `agent.tool`, and ids
//! or names with a NUL character.

use crate::diagnostic::{quote_list, task_path, Code, Diagnostic};
use crate::graph::TaskGraph;
use crate::model::*;
use foldhash::{HashSet, HashSetExt};

/// Duplicate ids, cycles, self-dependencies and repeated names: what the reference never checks.
pub(super) fn identity_rules(bp: &Blueprint, graph: &TaskGraph<'_>, out: &mut Vec<Diagnostic>) {
    for (i, t) in bp.tasks.iter().enumerate() {
        // A node of the graph stands for the first task with its id.
        let first = graph.task_of[graph.node_of_task[i]];
        if first != i {
            out.push(
                Diagnostic::error(
                    Code::DuplicateTaskId,
                    format!("{}.id", task_path(i)),
                    format!("task id '{}' is used again (first by task {first}): ids must be unique", t.id),
                )
                .task(&t.id),
            );
        }
        if !t.task_type.as_str().contains('.')
            || t.task_type.as_str().starts_with('.')
            || t.task_type.as_str().ends_with('.')
        {
            out.push(
                Diagnostic::warning(
                    Code::TaskTypeFormat,
                    format!("{}.type", task_path(i)),
                    format!(
                        "task '{}' has type '{}', not of the form 'agent.tool': no agent will claim it",
                        t.id, t.task_type
                    ),
                )
                .task(&t.id),
            );
        }
        for (j, d) in t.depends_on.iter().enumerate() {
            if d.id == t.id {
                let path = format!("{}.depends_on[{j}]", task_path(i));
                out.push(
                    Diagnostic::error(Code::SelfDependency, path, format!("task '{}' depends on itself", t.id))
                        .task(&t.id),
                );
            }
        }
        for j in repeats(&t.depends_on, |d| &d.id) {
            let d = &t.depends_on[j];
            if d.id != t.id {
                out.push(
                    Diagnostic::warning(
                        Code::DuplicateDependency,
                        format!("{}.depends_on[{j}]", task_path(i)),
                        format!("task '{}' depends on '{}' more than once", t.id, d.id),
                    )
                    .task(&t.id),
                );
            }
        }
        repeated_names(out, i, t, "inputs", &t.inputs, |x| &x.io.name);
        repeated_names(out, i, t, "outputs", &t.outputs, |x| &x.io.name);
        repeated_names(out, i, t, "params", &t.params, |x| &x.io.name);
    }
    for cycle in graph.cycles() {
        if cycle.len() == 1 {
            continue; // a self-dependency, reported above
        }
        let ids: Vec<&str> = cycle.iter().map(|&n| bp.tasks[graph.task_of[n]].id.as_str()).collect();
        let first = graph.task_of[cycle[0]];
        out.push(
            Diagnostic::error(
                Code::Cycle,
                format!("{}.depends_on", task_path(first)),
                format!(
                    "tasks {} depend on each other in a cycle: none of them can ever start (an antikythera 0.5.1 server takes the file; upstream's main branch refuses cycles, ADR-0005)",
                    quote_list(ids.iter().copied())
                ),
            )
            .task(ids[0]),
        );
    }
}

/// Ids and names with a NUL character ([`Code::NulInId`]): every string that names something
/// (the blueprint, a task, a scope, a dependency, an input, output or param and the session data
/// key it reads or writes). Orrery-only: the reference accepts them.
pub(super) fn nul_rules(bp: &Blueprint, out: &mut Vec<Diagnostic>) {
    fn shown(text: &str) -> String {
        text.replace('\0', "\\0")
    }
    // The place and the words are made only for a string that has a NUL: most have none.
    let mut report = |task: Option<&str>, text: &str, place: &dyn Fn() -> (String, String)| {
        if !text.contains('\0') {
            return;
        }
        let (path, what) = place();
        let message = format!(
            "{what} '{}' contains a NUL character, which no file name or process argument can hold",
            shown(text)
        );
        let diagnostic = Diagnostic::error(Code::NulInId, path, message);
        out.push(match task {
            Some(task) => diagnostic.task(task),
            None => diagnostic,
        });
    };
    report(None, &bp.id, &|| ("$.id".into(), "the blueprint id".into()));
    for (i, t) in bp.tasks.iter().enumerate() {
        let task = Some(t.id.as_str());
        let at = || task_path(i);
        report(task, &t.id, &|| (format!("{}.id", at()), "the task id".into()));
        if let Some(name) = t.scope_start.as_ref().and_then(|s| s.name.as_deref()) {
            let place = || (format!("{}.scope_start.name", at()), format!("task '{}': the scope name", shown(&t.id)));
            report(task, name, &place);
        }
        if let Some(end) = t.scope_end.as_deref() {
            report(task, end, &|| (format!("{}.scope_end", at()), format!("task '{}': scope_end", shown(&t.id))));
        }
        for (j, d) in t.depends_on.iter().enumerate() {
            let place =
                || (format!("{}.depends_on[{j}].id", at()), format!("task '{}': the dependency id", shown(&t.id)));
            report(task, &d.id, &place);
        }
        for (list, j, io) in t.io_items() {
            let place = || {
                (format!("{}.{list}[{j}].name", at()), format!("task '{}': the name of {list} item {j}", shown(&t.id)))
            };
            report(task, &io.name, &place);
        }
        for (j, input) in t.inputs.iter().enumerate() {
            if let Some(key) = input.get_from.as_deref() {
                let place = || {
                    let what = format!("task '{}': get_from of input '{}'", shown(&t.id), shown(&input.io.name));
                    (format!("{}.inputs[{j}].get_from", at()), what)
                };
                report(task, key, &place);
            }
        }
        for (j, output) in t.outputs.iter().enumerate() {
            if let Some(key) = output.set_to.as_deref() {
                let place = || {
                    let what = format!("task '{}': set_to of output '{}'", shown(&t.id), shown(&output.io.name));
                    (format!("{}.outputs[{j}].set_to", at()), what)
                };
                report(task, key, &place);
            }
        }
    }
}

fn repeated_names<T>(
    out: &mut Vec<Diagnostic>,
    i: usize,
    t: &Task,
    list: &str,
    items: &[T],
    name: impl Fn(&T) -> &str,
) {
    for j in repeats(items, &name) {
        out.push(
            Diagnostic::warning(
                Code::DuplicateIoName,
                format!("{}.{list}[{j}].name", task_path(i)),
                format!("task '{}' declares {list} item '{}' twice; only the first is used", t.id, name(&items[j])),
            )
            .task(&t.id),
        );
    }
}

/// Positions of the items that repeat an earlier one. Lists are short, so a scan beats
/// hashing, until they are not.
fn repeats<T>(items: &[T], key: impl Fn(&T) -> &str) -> Vec<usize> {
    if items.len() <= 32 {
        return (0..items.len()).filter(|&j| items[..j].iter().any(|e| key(e) == key(&items[j]))).collect();
    }
    let mut seen = HashSet::new();
    (0..items.len()).filter(|&j| !seen.insert(key(&items[j]))).collect()
}
