//! The lineage of protocol tasks: the graph their `source_tasks` make, and a task's context.

use super::*;

use std::collections::{BTreeMap, BTreeSet};

use super::status::{parts, TaskStatus};
use orrery_store::iso_8601 as iso;

#[derive(Debug, Serialize, JsonSchema)]
pub struct GraphNode {
    pub task_id: String,
    /// The first part of its id (the agent of its task type, or `blueprint`).
    pub kind: String,
    /// Its registered name.
    pub task_name: String,
    /// ISO 8601 with the offset (`+00:00`); null for a missing task.
    pub created_at: Option<String>,
    /// The tasks its `source_tasks` name.
    pub parent_ids: Vec<String>,
    /// Its current run's state; null for a missing task.
    pub state: Option<String>,
    /// Named as a source, never submitted (or deleted).
    pub missing: bool,
    /// Submitted, but its current run has not succeeded (yet): what it publishes may change.
    pub provisional: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct GraphEdge {
    /// The parent (a source task).
    pub from: String,
    /// The task that names it.
    pub to: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct TaskGraph {
    /// The component's first task: the earliest one with no parents.
    pub root_id: String,
    /// The task asked about.
    pub selected_id: String,
    pub nodes: Vec<GraphNode>,
    pub edges: Vec<GraphEdge>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Relations {
    pub direct_upstream: Vec<String>,
    /// Every task it comes from, through any number of steps.
    pub ancestors: Vec<String>,
    pub direct_downstream: Vec<String>,
    /// The component's missing tasks.
    pub missing: Vec<String>,
    /// The component's provisional tasks.
    pub provisional: Vec<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct TaskContext {
    pub task_id: String,
    pub status: TaskStatus,
    /// Whether its current run succeeded, so that what it published is there to read.
    pub metadata_exists: bool,
    /// Where the protocol keeps a task's published record, relative to its workspace
    /// (`{task_type}/{task_id}/metadata.json`); Orrery keeps it in its store.
    pub metadata_path: String,
    /// Its log file, when it has one.
    pub log_path: Option<String>,
    pub graph: TaskGraph,
    pub relations: Relations,
}

/// The graph of the tasks linked to `task_id` through `source_tasks`, up and down: the whole
/// connected component. `Err` when no task has that id.
pub(super) fn graph_of(store: &Store, task_id: &str) -> Result<TaskGraph, Failure> {
    let all: BTreeMap<String, SubmittedTask> =
        store.submitted_tasks()?.into_iter().map(|t| (t.task_id.clone(), t)).collect();
    if !all.contains_key(task_id) {
        return Err(key_error(task_id));
    }
    let parents_of = |id: &str| -> Vec<String> {
        let Some(task) = all.get(id) else { return Vec::new() };
        let mut parents: Vec<String> = task.source_tasks.iter().filter(|p| *p != id).cloned().collect();
        parents.dedup();
        parents
    };
    let mut children: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for id in all.keys() {
        for parent in parents_of(id) {
            children.entry(parent).or_default().insert(id.clone());
        }
    }
    // The connected component, following links both ways.
    let mut seen = BTreeSet::from([task_id.to_string()]);
    let mut frontier = vec![task_id.to_string()];
    while let Some(id) = frontier.pop() {
        let neighbours = parents_of(&id).into_iter().chain(children.get(&id).into_iter().flatten().cloned());
        for other in neighbours.collect::<Vec<_>>() {
            if seen.insert(other.clone()) {
                frontier.push(other);
            }
        }
    }
    let mut nodes = Vec::new();
    for id in &seen {
        let (kind, registered, _) = parts(id);
        let node = match all.get(id) {
            None => GraphNode {
                task_id: id.clone(),
                kind: kind.to_string(),
                task_name: registered.to_string(),
                created_at: None,
                parent_ids: Vec::new(),
                state: None,
                missing: true,
                provisional: false,
            },
            Some(task) => {
                let session = store.session(&task.session_id)?;
                GraphNode {
                    task_id: id.clone(),
                    kind: kind.to_string(),
                    task_name: registered.to_string(),
                    created_at: Some(iso(session.created_ms, "+00:00")),
                    parent_ids: parents_of(id),
                    state: Some(protocol_state(session.state).to_string()),
                    missing: false,
                    provisional: session.state != SessionState::Completed,
                }
            }
        };
        nodes.push(node);
    }
    let order = |n: &GraphNode| (n.created_at.clone().unwrap_or_default(), n.task_id.clone());
    nodes.sort_by_key(order);
    let roots: Vec<&GraphNode> = nodes.iter().filter(|n| n.parent_ids.is_empty()).collect();
    let root_id = roots.first().map_or_else(|| nodes[0].task_id.clone(), |n| n.task_id.clone());
    let mut edges: Vec<GraphEdge> = nodes
        .iter()
        .flat_map(|n| n.parent_ids.iter().map(|p| GraphEdge { from: p.clone(), to: n.task_id.clone() }))
        .collect();
    edges.sort_by(|a, b| (&a.from, &a.to).cmp(&(&b.from, &b.to)));
    Ok(TaskGraph { root_id, selected_id: task_id.to_string(), nodes, edges })
}

pub(super) fn relations_of(graph: &TaskGraph, task_id: &str) -> Relations {
    let parents: BTreeMap<&str, &[String]> =
        graph.nodes.iter().map(|n| (n.task_id.as_str(), n.parent_ids.as_slice())).collect();
    let mut ancestors = BTreeSet::new();
    let mut frontier: Vec<&str> = vec![task_id];
    while let Some(id) = frontier.pop() {
        for parent in parents.get(id).copied().unwrap_or_default() {
            if parent != task_id && ancestors.insert(parent.clone()) {
                frontier.push(parent);
            }
        }
    }
    let mut direct_upstream = parents.get(task_id).map(|p| p.to_vec()).unwrap_or_default();
    direct_upstream.sort();
    let sorted = |keep: &dyn Fn(&GraphNode) -> bool| -> Vec<String> {
        let mut ids: Vec<String> = graph.nodes.iter().filter(|n| keep(n)).map(|n| n.task_id.clone()).collect();
        ids.sort();
        ids
    };
    Relations {
        direct_upstream,
        ancestors: ancestors.into_iter().collect(),
        direct_downstream: sorted(&|n| n.parent_ids.iter().any(|p| p == task_id)),
        missing: sorted(&|n| n.missing),
        provisional: sorted(&|n| n.provisional),
    }
}

/// `KeyError: 'id'`: no task has that id.
pub(super) fn key_error(task_id: &str) -> Failure {
    Failure::new(FailureCode::NotFound, format!("KeyError: '{task_id}'"))
}
