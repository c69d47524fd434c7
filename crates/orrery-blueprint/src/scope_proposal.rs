//! Whether a set of tasks can become one scope, and which of them opens and closes it: what an
//! editor asks before it writes a `scope_start` and a `scope_end`. The scope must hold exactly
//! the tasks chosen, as [`crate::scope`] derives members (reachable forward from the start and
//! backward from the end), and nest with the scopes already there or stay apart from them.

use crate::model::Blueprint;
use crate::scope;
use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};

/// The scope the chosen tasks make: the one no other of them precedes opens it, the one that
/// precedes none of the others closes it (the same task for a scope of one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProposedScope {
    pub start: String,
    pub end: String,
}

/// The scope `ids` would make, or why they make none, in words the user acts on.
pub fn propose(bp: &Blueprint, ids: &[String]) -> Result<ProposedScope, String> {
    let mut chosen: Vec<&str> = Vec::new();
    for id in ids {
        if !chosen.contains(&id.as_str()) {
            chosen.push(id);
        }
    }
    if chosen.is_empty() {
        return Err("Select the tasks the scope should hold first.".into());
    }
    let mut by_id = HashMap::new();
    for (i, t) in bp.tasks.iter().enumerate() {
        by_id.entry(t.id.as_str()).or_insert(i);
    }
    let missing: Vec<&str> = chosen.iter().copied().filter(|id| !by_id.contains_key(id)).collect();
    if !missing.is_empty() {
        return Err(format!("There is no task {}.", list(&missing)));
    }
    let before = |id: &str| -> Vec<&str> {
        by_id.get(id).map_or_else(Vec::new, |&i| bp.tasks[i].depends_on.iter().map(|d| d.id.as_str()).collect())
    };
    let mut after_map: HashMap<&str, Vec<&str>> = HashMap::new();
    for t in &bp.tasks {
        for d in &t.depends_on {
            after_map.entry(d.id.as_str()).or_default().push(t.id.as_str());
        }
    }
    let after = |id: &str| -> Vec<&str> { after_map.get(id).cloned().unwrap_or_default() };
    let selected: HashSet<&str> = chosen.iter().copied().collect();
    // Entries: no other chosen task runs before them; exits: none runs after them.
    let entries: Vec<&str> = chosen.iter().copied().filter(|id| !some_reached(id, &before, &selected)).collect();
    let exits: Vec<&str> = chosen.iter().copied().filter(|id| !some_reached(id, &after, &selected)).collect();
    if entries.is_empty() || exits.is_empty() {
        return Err(format!(
            "The tasks {} depend on each other in a cycle: a scope needs a first and a last task.",
            list(&chosen)
        ));
    }
    if entries.len() > 1 {
        return Err(format!(
            "A scope has one first task, but {} each start the selection: select a task they all depend on too, or fewer tasks.",
            list(&entries)
        ));
    }
    if exits.len() > 1 {
        return Err(format!(
            "A scope has one last task, but {} each end the selection: select a task that depends on them all too, or fewer tasks.",
            list(&exits)
        ));
    }
    let (start, end) = (entries[0], exits[0]);
    if bp.tasks[by_id[start]].scope_start.is_some() {
        return Err(format!("{start} already opens a scope: a task opens one scope at most."));
    }
    if let Some(closes) = bp.tasks[by_id[end]].scope_end.as_deref().filter(|c| !c.is_empty()) {
        return Err(format!("{end} already closes the scope of {closes}: a task closes one scope at most."));
    }
    // The scope holds what lies between its start and its end, selected or not: the selection
    // must be that whole stretch, or the scope would take in tasks the user did not choose.
    let between = reach(start, &after);
    let to_end = reach(end, &before);
    let mut extra: Vec<&str> = Vec::new();
    for t in &bp.tasks {
        let id = t.id.as_str();
        if between.contains(id) && to_end.contains(id) && !selected.contains(id) && !extra.contains(&id) {
            extra.push(id);
        }
    }
    if !extra.is_empty() {
        let them = if extra.len() > 1 { "them" } else { "it" };
        return Err(format!("A scope from {start} to {end} would also hold {}: select {them} too.", list(&extra)));
    }
    // Scopes nest or stay apart: one that shares tasks with the new one must hold it or lie in it.
    for other in scope::scopes(bp) {
        let members: Vec<&str> = other.members.iter().map(|&m| bp.tasks[m].id.as_str()).collect();
        let shared: Vec<&str> = members.iter().copied().filter(|m| selected.contains(m)).collect();
        if shared.is_empty() || shared.len() == selected.len() || shared.len() == members.len() {
            continue;
        }
        return Err(format!(
            "The scope opened by {} shares {} with the selection, but neither holds the other: scopes must nest or stay apart.",
            bp.tasks[other.start].id,
            list(&shared)
        ));
    }
    Ok(ProposedScope { start: start.to_string(), end: end.to_string() })
}

/// Whether a task of `targets` other than `from` is reached from `from` by `next`.
fn some_reached<'a>(from: &'a str, next: &impl Fn(&'a str) -> Vec<&'a str>, targets: &HashSet<&str>) -> bool {
    let mut seen = reach(from, next);
    // A cycle back to `from` itself says nothing about the other tasks.
    seen.remove(from);
    seen.iter().any(|id| targets.contains(id))
}

/// The tasks reachable from `from` by `next`, `from` included.
fn reach<'a>(from: &'a str, next: &impl Fn(&'a str) -> Vec<&'a str>) -> HashSet<&'a str> {
    let mut seen = HashSet::new();
    seen.insert(from);
    let mut todo = vec![from];
    while let Some(id) = todo.pop() {
        for n in next(id) {
            if seen.insert(n) {
                todo.push(n);
            }
        }
    }
    seen
}

/// Task ids for a message: `a`, `a and b`, `a, b and c`.
fn list(ids: &[&str]) -> String {
    match ids {
        [] => String::new(),
        [one] => one.to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn fs(ids: &[&str]) -> Value {
        ids.iter().map(|id| json!({"id": id, "type": "FS"})).collect()
    }

    fn blueprint(tasks: Value) -> Blueprint {
        let text = json!({"id": "bp", "name": "bp", "version": "1.0", "tasks": tasks}).to_string();
        crate::load(&text).expect("the blueprint loads").blueprint
    }

    /// start -> a -> b -> d -> end, and a -> c -> d beside b.
    fn diamond() -> Value {
        json!([
            {"id": "start", "type": "system.start"},
            {"id": "a", "type": "shell.run", "depends_on": fs(&["start"])},
            {"id": "b", "type": "shell.run", "depends_on": fs(&["a"])},
            {"id": "c", "type": "shell.run", "depends_on": fs(&["a"])},
            {"id": "d", "type": "shell.run", "depends_on": fs(&["b", "c"])},
            {"id": "end", "type": "system.end", "depends_on": fs(&["d"])}
        ])
    }

    fn propose_ids(bp: &Blueprint, ids: &[&str]) -> Result<ProposedScope, String> {
        propose(bp, &ids.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    fn scope(start: &str, end: &str) -> Result<ProposedScope, String> {
        Ok(ProposedScope { start: start.into(), end: end.into() })
    }

    #[test]
    fn the_one_first_task_opens_the_scope_and_the_one_last_task_closes_it() {
        let bp = blueprint(diamond());
        assert_eq!(propose_ids(&bp, &["d", "b", "a", "c"]), scope("a", "d"));
        assert_eq!(propose_ids(&bp, &["b"]), scope("b", "b"), "a scope of one task opens and closes there");
    }

    #[test]
    fn two_first_or_two_last_tasks_are_named() {
        let bp = blueprint(diamond());
        assert!(propose_ids(&bp, &["b", "c", "d"]).unwrap_err().contains("but b and c each start the selection"));
        assert!(propose_ids(&bp, &["a", "b", "c"]).unwrap_err().contains("but b and c each end the selection"));
    }

    #[test]
    fn a_task_left_out_between_the_first_and_the_last_is_named() {
        let bp = blueprint(diamond());
        assert_eq!(
            propose_ids(&bp, &["a", "b", "d"]),
            Err("A scope from a to d would also hold c: select it too.".into())
        );
    }

    #[test]
    fn nothing_an_unknown_task_and_tasks_that_open_or_close_a_scope_already_are_refused() {
        let bp = blueprint(diamond());
        assert!(propose_ids(&bp, &[]).is_err());
        assert_eq!(propose_ids(&bp, &["zz"]), Err("There is no task zz.".into()));
        let mut tasks = diamond();
        tasks[2]["scope_start"] = json!({});
        tasks[2]["scope_end"] = json!("b");
        let scoped = blueprint(tasks);
        assert_eq!(
            propose_ids(&scoped, &["b", "d"]),
            Err("b already opens a scope: a task opens one scope at most.".into())
        );
        assert_eq!(
            propose_ids(&scoped, &["a", "b"]),
            Err("b already closes the scope of b: a task closes one scope at most.".into())
        );
    }

    #[test]
    fn a_selection_that_interlaces_with_a_scope_is_refused_and_one_around_or_inside_it_fits() {
        // a -> b -> c -> d -> e, with a scope from b to d.
        let bp = blueprint(json!([
            {"id": "a", "type": "a.b"},
            {"id": "b", "type": "a.b", "depends_on": fs(&["a"]), "scope_start": {}},
            {"id": "c", "type": "a.b", "depends_on": fs(&["b"])},
            {"id": "d", "type": "a.b", "depends_on": fs(&["c"]), "scope_end": "b"},
            {"id": "e", "type": "a.b", "depends_on": fs(&["d"])}
        ]));
        assert_eq!(
            propose_ids(&bp, &["a", "b"]),
            Err("The scope opened by b shares b with the selection, but neither holds the other: scopes must nest or stay apart.".into())
        );
        assert!(propose_ids(&bp, &["c", "d", "e"]).unwrap_err().contains("shares c and d with the selection"));
        assert_eq!(propose_ids(&bp, &["a", "b", "c", "d", "e"]), scope("a", "e"));
        assert_eq!(propose_ids(&bp, &["c"]), scope("c", "c"));
    }

    #[test]
    fn tasks_that_depend_on_each_other_in_a_cycle_are_refused() {
        let bp = blueprint(json!([
            {"id": "x", "type": "a.b", "depends_on": fs(&["y"])},
            {"id": "y", "type": "a.b", "depends_on": fs(&["x"])}
        ]));
        assert!(propose_ids(&bp, &["x", "y"]).unwrap_err().contains("in a cycle"));
    }
}
