//! What a restart keeps of the session it restarts ([`super::Restart::keep_done`]): a retry from
//! failure as a new session, which may run a blueprint saved since the session started.
//!
//! A node of the new plan is kept when the old session finished it (SUCCEEDED or SKIPPED), its
//! task is the same in both plans (its description aside) in an instance of the same context, it
//! is no composite (its inner instance runs again), it opens no scope and no loop holds it (a
//! scope's counters start over with the new session), and every node it depends on is kept. So
//! what is kept is what the new plan would have computed the same way. A kept node starts in its
//! old state with the data it wrote, each value with the attempt that wrote it (lineage names the
//! old session's attempt); it has no attempt of its own in the new session. A run from a task
//! ([`super::Restart::from`]) keeps the same, less that task: so nothing after it is kept.

use std::collections::{HashMap, HashSet, VecDeque};

use orrery_blueprint::TaskState;
use orrery_store::{Attempt, RunId, TaskNode};

use crate::plan::SessionPlan;
use crate::scheduler::NodeState;
use crate::scopes::ScopeIndex;

/// What a new session starts with from the one it restarts.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Kept {
    /// Kept nodes of the new plan with their state.
    pub states: Vec<(usize, NodeState)>,
    /// The `(instance, key)` data values they wrote, to copy.
    pub data: Vec<(String, String)>,
    /// The session `data` is copied from, when not the one restarted (a task run alone reads a
    /// past session's values, [`super::alone`]).
    pub data_from: Option<String>,
    /// `(instance, key, value)` a person gave, written as their edits (a task run alone with
    /// inputs typed in).
    pub given: Vec<(String, String, serde_json::Value)>,
    /// The new session's name, when not its blueprint's.
    pub label: Option<String>,
}

/// What the old session left, as the store holds it.
pub(crate) struct Finished<'a> {
    pub plan: &'a SessionPlan,
    pub nodes: &'a [TaskNode],
    pub attempts: &'a [Attempt],
    /// `(instance, key, writer)` of every data value.
    pub writers: &'a [(String, String, Option<RunId>)],
}

/// What `new` keeps of `old`; with `from`, not that node (nor, so, anything after it).
pub(crate) fn kept(old: &Finished<'_>, new: &SessionPlan, from: Option<usize>) -> Kept {
    let states: HashMap<&str, TaskState> = old.nodes.iter().map(|n| (n.node.as_str(), n.state)).collect();
    let scopes = ScopeIndex::new(new);
    let candidate = |n: usize| -> Option<NodeState> {
        if from == Some(n) {
            return None;
        }
        let key = new.graph.nodes[n].key.as_str();
        let state = match states.get(key) {
            Some(TaskState::Succeeded) => NodeState::Succeeded,
            Some(TaskState::Skipped) => NodeState::Skipped,
            _ => return None,
        };
        let before = old.plan.node(key)?;
        let ((new_instance, task), (old_instance, old_task)) = (&new.tasks[n], &old.plan.tasks[before]);
        let same_task = task.task_type == old_task.task_type
            && orrery_blueprint::changes::task_fields(old_task, task).iter().all(|f| f == "description");
        let same_context = new.instances[*new_instance].context == old.plan.instances[*old_instance].context;
        let runs_inner = task.task_type.is_composite();
        let loops = scopes.started_by(n).is_some() || scopes.loops_holding(n).next().is_some();
        (same_task && same_context && !runs_inner && !loops).then_some(state)
    };
    let mut keep: Vec<Option<NodeState>> = (0..new.graph.nodes.len()).map(candidate).collect();
    // A node whose predecessor is not kept is not kept either, and so on downstream.
    let mut successors = vec![Vec::new(); keep.len()];
    for (n, node) in new.graph.nodes.iter().enumerate() {
        for &(from, _) in &node.predecessors {
            successors[from].push(n);
        }
    }
    let mut dropped: VecDeque<usize> = (0..keep.len()).filter(|&n| keep[n].is_none()).collect();
    while let Some(n) = dropped.pop_front() {
        for &s in &successors[n] {
            if keep[s].take().is_some() {
                dropped.push_back(s);
            }
        }
    }

    let written_by: HashMap<&str, &str> = old.attempts.iter().map(|a| (a.run_id.as_str(), a.node.as_str())).collect();
    let mut found = Kept::default();
    let mut kept_keys: HashSet<&str> = HashSet::new();
    for (n, state) in keep.iter().enumerate() {
        let Some(state) = *state else { continue };
        found.states.push((n, state));
        kept_keys.insert(new.graph.nodes[n].key.as_str());
        if state == NodeState::Skipped {
            // A skipped task's defaults are written by no attempt.
            let (instance, task) = &new.tasks[n];
            let instance = &new.instances[*instance].id;
            for output in &task.outputs {
                let key = output.target_key();
                if old.writers.iter().any(|(i, k, w)| i == instance && k == key && w.is_none()) {
                    found.data.push((instance.clone(), key.to_string()));
                }
            }
        }
    }
    for (instance, key, writer) in old.writers {
        let by = writer.as_ref().and_then(|w| written_by.get(w.as_str()));
        if by.is_some_and(|node| kept_keys.contains(node)) {
            found.data.push((instance.clone(), key.clone()));
        }
    }
    found
}
