//! Scopes as the reference derives them: a task with `scope_start` opens a scope, the task whose
//! `scope_end` names it closes it, and the members are the tasks reachable forward from the
//! start and backward from the end. On an acyclic graph every member lies between start and end
//! in a topological order, so both searches stay inside that window: the cost follows the size
//! of the scopes, not of the blueprint.

use crate::graph::TaskGraph;
use crate::model::Blueprint;
use foldhash::{HashMap, HashMapExt};

/// One scope, as task indices (the first task of each id).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopeSpan {
    pub start: usize,
    pub end: usize,
    /// Members including start and end, ascending task index.
    pub members: Vec<usize>,
}

/// Every scope whose start has a closing task, in task order.
pub fn scopes(bp: &Blueprint) -> Vec<ScopeSpan> {
    let graph = TaskGraph::new(bp);
    scopes_in(bp, &graph)
}

pub fn scopes_in(bp: &Blueprint, graph: &TaskGraph<'_>) -> Vec<ScopeSpan> {
    // The reference keeps the last closing task of each start.
    let mut ends: HashMap<&str, usize> = HashMap::new();
    for (i, t) in bp.tasks.iter().enumerate() {
        if let Some(end) = t.scope_end.as_deref().filter(|e| !e.is_empty()) {
            ends.insert(end, i);
        }
    }
    let mut out = Vec::new();
    let mut scratch = Scratch::new(graph.len());
    let mut seen_start = vec![false; graph.len()];
    for (i, t) in bp.tasks.iter().enumerate() {
        if t.scope_start.is_none() {
            continue;
        }
        let Some(&end_task) = ends.get(t.id.as_str()) else { continue };
        let start = graph.node_of[t.id.as_str()];
        if std::mem::replace(&mut seen_start[start], true) {
            continue;
        }
        let end = graph.node_of[bp.tasks[end_task].id.as_str()];
        let mut members: Vec<usize> =
            member_nodes(graph, start, end, &mut scratch).into_iter().map(|n| graph.task_of[n]).collect();
        members.sort_unstable();
        // The task that opens it (with duplicate ids, not necessarily the first of its id).
        out.push(ScopeSpan { start: i, end: graph.task_of[end], members });
    }
    out
}

/// Marks reused across scopes, cleared after each use, so that many small scopes in a large
/// blueprint cost their own size only.
pub struct Scratch {
    forward: Vec<bool>,
    backward: Vec<bool>,
}

impl Scratch {
    pub fn new(nodes: usize) -> Self {
        Scratch { forward: vec![false; nodes], backward: vec![false; nodes] }
    }
}

/// Nodes reachable forward from `start` and backward from `end`.
pub fn member_nodes(graph: &TaskGraph<'_>, start: usize, end: usize, scratch: &mut Scratch) -> Vec<usize> {
    if start == end {
        return vec![start];
    }
    let (lo, hi) = match &graph.topo_position {
        Some(pos) if pos[start] > pos[end] => return Vec::new(),
        Some(pos) => (pos[start], pos[end]),
        None => (0, usize::MAX),
    };
    let within = |n: usize| graph.topo_position.as_ref().is_none_or(|pos| pos[n] >= lo && pos[n] <= hi);
    let reached = graph.reachable_into(start, &graph.successors, within, &mut scratch.forward);
    let back = graph.reachable_into(end, &graph.predecessors, within, &mut scratch.backward);
    let members = reached.iter().copied().filter(|&n| scratch.backward[n]).collect();
    for n in reached {
        scratch.forward[n] = false;
    }
    for n in back {
        scratch.backward[n] = false;
    }
    members
}
