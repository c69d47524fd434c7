//! Scopes: every scope_end closes a scope that exists, once; every scope is closed; scopes nest
//! or are disjoint (the reference's rules, refused by its server). [`Scopes`] is what the other
//! rules need to know of them.

use crate::diagnostic::{task_path, Code, Diagnostic};
use crate::graph::TaskGraph;
use crate::model::*;
use crate::scope::{self, ScopeSpan};
use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};

pub(super) fn scope_rules(bp: &Blueprint, graph: &TaskGraph<'_>, scopes: &Scopes, out: &mut Vec<Diagnostic>) {
    let starts: HashSet<&str> = bp.tasks.iter().filter(|t| t.scope_start.is_some()).map(|t| t.id.as_str()).collect();
    let mut ends: HashMap<&str, &str> = HashMap::new();
    let mut broken = false;
    for (i, t) in bp.tasks.iter().enumerate() {
        let Some(end) = t.scope_end.as_deref().filter(|e| !e.is_empty()) else { continue };
        let path = format!("{}.scope_end", task_path(i));
        let problem = if !graph.node_of.contains_key(end) {
            Some((Code::ScopeEndMissingTask, format!("task '{}' closes scope '{end}', but no task has that id", t.id)))
        } else if !starts.contains(end) {
            Some((
                Code::ScopeEndNotAScope,
                format!("task '{}' has scope_end '{end}', but task '{end}' has no scope_start", t.id),
            ))
        } else if let Some(first) = ends.get(end) {
            Some((
                Code::ScopeEndDuplicate,
                format!("tasks '{first}' and '{}' both close scope '{end}': a scope has exactly one end", t.id),
            ))
        } else {
            ends.insert(end, t.id.as_str());
            None
        };
        if let Some((code, message)) = problem {
            broken = true;
            out.push(Diagnostic::error(code, path, message).task(&t.id).rejected());
        }
    }
    for (i, t) in bp.tasks.iter().enumerate() {
        if t.scope_start.is_some() && !ends.contains_key(t.id.as_str()) {
            broken = true;
            out.push(
                Diagnostic::error(
                    Code::ScopeUnclosed,
                    format!("{}.scope_start", task_path(i)),
                    format!("task '{}' opens a scope that no task closes (no task has scope_end '{}')", t.id, t.id),
                )
                .task(&t.id)
                .rejected(),
            );
        }
    }
    if !broken && starts.len() > 1 {
        if let Some(spans) = &scopes.spans {
            interlaced(bp, spans, out);
        }
    }
}

/// The scopes validation needs: each closed scope and whether it is empty, from the scope tree
/// (linear in the nesting depth); only when scopes are interlaced (or the graph has a cycle)
/// every scope's members too, to name the interlaced pairs.
pub(super) struct Scopes {
    pub(super) closed: Vec<ClosedScope>,
    /// Every scope's members; `None` when the scopes nest (nothing is interlaced).
    spans: Option<Vec<ScopeSpan>>,
}

pub(super) struct ClosedScope {
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) empty: bool,
}

impl Scopes {
    pub(super) fn new(bp: &Blueprint, graph: &TaskGraph<'_>) -> Self {
        match scope::scope_tree(bp, graph) {
            Some(tree) => Scopes {
                closed: tree
                    .scopes
                    .iter()
                    .map(|s| ClosedScope { start: s.start, end: s.end, empty: s.size == 0 })
                    .collect(),
                spans: None,
            },
            None => {
                let spans = scope::scopes_in(bp, graph);
                Scopes {
                    closed: spans
                        .iter()
                        .map(|s| ClosedScope { start: s.start, end: s.end, empty: s.members.is_empty() })
                        .collect(),
                    spans: Some(spans),
                }
            }
        }
    }
}

/// Scopes must nest or be disjoint. Processing scopes from the largest down, each member
/// remembers the smallest scope seen so far that holds it; a laminar family gives every
/// member of a scope the same owner, and any disagreement names an interlaced pair.
fn interlaced(bp: &Blueprint, scopes: &[ScopeSpan], out: &mut Vec<Diagnostic>) {
    let mut order: Vec<usize> = (0..scopes.len()).collect();
    order.sort_by_key(|&s| std::cmp::Reverse(scopes[s].members.len()));
    let mut owner: Vec<Option<usize>> = vec![None; bp.tasks.len()];
    let mut reported = HashSet::new();
    for &s in &order {
        let members = &scopes[s].members;
        let first = members.first().and_then(|&m| owner[m]);
        for &m in members {
            if owner[m] != first {
                let other = owner[m].or(first).expect("two owners differ, so one exists");
                let (a, b) = (bp.tasks[scopes[other].start].id.as_str(), bp.tasks[scopes[s].start].id.as_str());
                if reported.insert((a, b)) {
                    out.push(
                        Diagnostic::error(
                            Code::ScopesInterlaced,
                            format!("{}.scope_start", task_path(scopes[s].start)),
                            format!("scopes '{a}' and '{b}' are interlaced: scopes must be nested or disjoint"),
                        )
                        .task(b)
                        .rejected(),
                    );
                }
            }
        }
        for &m in members {
            owner[m] = Some(s);
        }
    }
}
