//! Interventions on a stored session that is not running (docs/format.md §4): skip a task,
//! reset a task (optionally with everything downstream, optionally clearing its outputs), reset
//! a scope. They change the store only; [`crate::runner::resume_session`] then goes on with the
//! session. The plan is rebuilt from the store as `resume_session` does.
//!
//! # Decisions
//!
//! - **Which sessions.** `stopped`, `failed` and `pending` ones. A `running` session is refused
//!   (stop it first: its runner owns its side effects), and so is a `completed` one. The reference
//!   (`orchestrator.py` `reset_task_state` L626-630, `reset_scope` L978-982) accepts a COMPLETED
//!   session and moves it to STOPPED; Orrery refuses it ([`InterventionError::NotAllowed`]): a
//!   completed session is a record, and running part of it again is a new session.
//! - **Session state.** As in the reference (same lines), a reset moves a `failed` session to
//!   `stopped` (its last error stays recorded). A skip leaves the session state alone (the
//!   reference's `skip_task_state` does too).
//! - **Naming a node.** `"{instance}.{task}"` as in the flattened plan, or a bare task id of the
//!   root blueprint. An unknown node is [`InterventionError::UnknownNode`].
//! - **Skip** (`skip_task_state` L635-674, the PENDING test at L667): the node becomes
//!   SKIP_REQUESTED; the runner makes it SKIPPED (with its cascade: the inner nodes of a composite,
//!   the members of a scope it starts) when it would dispatch, and its downstream then runs. The
//!   reference changes only a PENDING task and silently ignores any other while still reporting it
//!   as skipped. Orrery also accepts a FAILED task (and READY or RUNNING, which a session that is
//!   not running only holds after a crash): resuming would otherwise run it again, so "skip the
//!   task that failed" is the useful case. A task already SKIP_REQUESTED is left as is (nothing
//!   changes); a SUCCEEDED or SKIPPED one is refused ([`InterventionError::NotSkippable`]): it has
//!   already ended (reset it first). Unlike the reference, the inner tasks of a skipped composite
//!   are not marked SKIP_REQUESTED one by one: the runner's skip cascade makes them SKIPPED when
//!   the composite would dispatch, which ends the same.
//! - **Reset** (`reset_task_state` L575-633, outputs nulled at L618-622): the node, and with
//!   `include_downstream` every node reachable forward from it in the flattened graph (so through a
//!   composite's `C -> I.start` edge into its inner instance, and from an inner `I.end` out to the
//!   composite and on), goes to PENDING whatever its state. With `clear_outputs`, every reset
//!   node's declared outputs are set to **null** (not removed) under `set_to or name` in its
//!   instance's session data, as the reference's `session_storage.set(.., None)`. Scope counters
//!   are left alone, as in the reference.
//! - **Reset a scope** (`reset_scope` L948-988): named by its start node; every member (inner
//!   instances of member composites included) goes to PENDING and the counters of the scope and of
//!   the scopes nested in it are set to 0 ([`crate::scopes::reset_scope`]). Session data stays, as
//!   in the reference.
//!
//! # Gaps
//!
//! The changes of one intervention are several store transactions (states, then data, then
//! counters, then the session state), not one; and nothing stops a runner in another process
//! from starting the session between the state check and the writes (no session lease yet).
//! A session left `running` by a crash is refused: `resume` it (which recovers it) and stop it.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use orrery_blueprint::{SessionState, TaskState};
use orrery_store::{Store, StoreError};
use serde_json::Value;

use crate::plan::SessionPlan;
use crate::runner::{load_stored_plan, RunError};
use crate::scopes::{self, ScopeIndex};

#[derive(Debug, thiserror::Error)]
pub enum InterventionError {
    #[error("session {session_id} is {}: {}", .state.as_str(), not_allowed_hint(*.state))]
    NotAllowed { session_id: String, state: SessionState },
    #[error("session {session_id} has no task '{node}' (name it \"{{instance}}.{{task}}\" or by a task id of the root blueprint)")]
    UnknownNode { session_id: String, node: String },
    #[error("task '{node}' of session {session_id} is {}: only a task that has not ended can be skipped (reset it first)", .state.as_str())]
    NotSkippable { session_id: String, node: String, state: TaskState },
    #[error("task '{node}' of session {session_id} does not start a scope")]
    UnknownScope { session_id: String, node: String },
    #[error(transparent)]
    Run(#[from] RunError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

fn not_allowed_hint(state: SessionState) -> &'static str {
    match state {
        SessionState::Running => "stop it first; interventions apply to a session that is not running",
        SessionState::Completed => "a completed session cannot be changed; start a new session",
        _ => "interventions apply to a stopped, failed or pending session",
    }
}

impl InterventionError {
    /// Whether the intervention was refused (unknown node or scope, a session or task in the
    /// wrong state), as opposed to a store or plan that cannot be used.
    pub fn is_refusal(&self) -> bool {
        match self {
            InterventionError::NotAllowed { .. }
            | InterventionError::UnknownNode { .. }
            | InterventionError::NotSkippable { .. }
            | InterventionError::UnknownScope { .. } => true,
            InterventionError::Store(e) | InterventionError::Run(RunError::Store(e)) => {
                e.code() == orrery_store::FailureCode::NotFound
            }
            InterventionError::Run(_) => false,
        }
    }
}

/// One node an intervention changed (or, for a reset, targeted: `from` may equal `to`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeChange {
    pub node: String,
    pub from: TaskState,
    pub to: TaskState,
}

/// What an intervention did.
#[derive(Debug, Clone, PartialEq)]
pub struct Intervention {
    pub session_id: String,
    /// The session state before and after (a reset moves `failed` to `stopped`).
    pub session_before: SessionState,
    pub session_after: SessionState,
    /// The nodes, in plan order.
    pub nodes: Vec<NodeChange>,
    /// Session data keys set to null, as `(instance, key)`.
    pub cleared_data: Vec<(String, String)>,
    /// Scope counters set to 0, as `(instance, scope key)`.
    pub cleared_counters: Vec<(String, String)>,
}

/// The session, its plan and its node states, once checked it may be changed.
struct Loaded {
    session_id: String,
    state: SessionState,
    plan: SessionPlan,
    states: HashMap<String, TaskState>,
}

impl Loaded {
    fn open(store: &Store, session_id: &str) -> Result<Loaded, InterventionError> {
        let session = store.session(session_id)?;
        if matches!(session.state, SessionState::Running | SessionState::Completed) {
            return Err(InterventionError::NotAllowed { session_id: session.id, state: session.state });
        }
        let (_, plan) = load_stored_plan(store, session_id)?;
        let states = store.task_nodes(session_id)?.into_iter().map(|n| (n.node, n.state)).collect();
        Ok(Loaded { session_id: session.id, state: session.state, plan, states })
    }

    /// A node by `"{instance}.{task}"` or by a task id of the root instance.
    fn node(&self, name: &str) -> Result<usize, InterventionError> {
        self.plan.node_named(name).ok_or_else(|| InterventionError::UnknownNode {
            session_id: self.session_id.clone(),
            node: name.to_string(),
        })
    }

    fn key(&self, n: usize) -> &str {
        &self.plan.graph.nodes[n].key
    }

    /// A node's stored state (PENDING when the store never saw it).
    fn state(&self, n: usize) -> TaskState {
        self.states.get(self.key(n)).copied().unwrap_or(TaskState::Pending)
    }

    /// Every node reachable forward from `n`, `n` included, ascending.
    fn downstream(&self, n: usize) -> Vec<usize> {
        let count = self.plan.graph.nodes.len();
        let mut successors = vec![Vec::new(); count];
        for (node, p) in self.plan.graph.nodes.iter().enumerate() {
            for &(from, _) in &p.predecessors {
                successors[from].push(node);
            }
        }
        let mut seen = BTreeSet::from([n]);
        let mut stack = vec![n];
        while let Some(x) = stack.pop() {
            for &y in &successors[x] {
                if seen.insert(y) {
                    stack.push(y);
                }
            }
        }
        seen.into_iter().collect()
    }

    /// Sets `nodes` to PENDING; with `clear_outputs`, their declared outputs to null; moves a
    /// failed session to stopped.
    fn reset(
        self,
        store: &mut Store,
        nodes: &[usize],
        clear_outputs: bool,
        counters: Vec<(String, String)>,
    ) -> Result<Intervention, InterventionError> {
        let changes: Vec<NodeChange> = nodes
            .iter()
            .map(|&n| NodeChange { node: self.key(n).to_string(), from: self.state(n), to: TaskState::Pending })
            .collect();
        let writes: Vec<(&str, TaskState)> = changes.iter().map(|c| (c.node.as_str(), TaskState::Pending)).collect();
        store.set_task_states(&self.session_id, &writes)?;
        let mut cleared = Vec::new();
        if clear_outputs {
            let mut by_instance: BTreeMap<String, Vec<String>> = BTreeMap::new();
            for &n in nodes {
                let (instance, task) = &self.plan.tasks[n];
                for o in &task.outputs {
                    let keys = by_instance.entry(self.plan.instances[*instance].id.clone()).or_default();
                    if !keys.iter().any(|k| k == o.target_key()) {
                        keys.push(o.target_key().to_string());
                    }
                }
            }
            for (instance, keys) in by_instance {
                let values: Vec<(&str, Value)> = keys.iter().map(|k| (k.as_str(), Value::Null)).collect();
                store.put_data(&self.session_id, &instance, &values)?;
                cleared.extend(keys.into_iter().map(|k| (instance.clone(), k)));
            }
        }
        for (instance, key) in &counters {
            store.set_scope_iterations(&self.session_id, instance, key, 0)?;
        }
        let after = if self.state == SessionState::Failed {
            store.set_session_state(&self.session_id, SessionState::Stopped, None, None)?;
            SessionState::Stopped
        } else {
            self.state
        };
        Ok(Intervention {
            session_id: self.session_id,
            session_before: self.state,
            session_after: after,
            nodes: changes,
            cleared_data: cleared,
            cleared_counters: counters,
        })
    }
}

fn open_store(store_path: &Path) -> Result<Store, InterventionError> {
    Ok(Store::open(store_path)?)
}

/// Skips `node` of a session that is not running: it becomes SKIP_REQUESTED and turns SKIPPED
/// when the resumed session would dispatch it (see the module notes for the states accepted).
pub fn skip_task(store_path: &Path, session_id: &str, node: &str) -> Result<Intervention, InterventionError> {
    let mut store = open_store(store_path)?;
    let loaded = Loaded::open(&store, session_id)?;
    let n = loaded.node(node)?;
    let from = loaded.state(n);
    let key = loaded.key(n).to_string();
    let nodes = match from {
        TaskState::SkipRequested => Vec::new(),
        TaskState::Succeeded | TaskState::Skipped => {
            return Err(InterventionError::NotSkippable { session_id: loaded.session_id, node: key, state: from })
        }
        _ => {
            store.set_task_states(&loaded.session_id, &[(key.as_str(), TaskState::SkipRequested)])?;
            vec![NodeChange { node: key, from, to: TaskState::SkipRequested }]
        }
    };
    Ok(Intervention {
        session_id: loaded.session_id,
        session_before: loaded.state,
        session_after: loaded.state,
        nodes,
        cleared_data: Vec::new(),
        cleared_counters: Vec::new(),
    })
}

/// Resets `node` (with `include_downstream`, everything reachable forward from it) of a session
/// that is not running to PENDING; with `clear_outputs` their declared outputs become null in
/// session data. [`Intervention::nodes`] lists every node reset, in plan order.
pub fn reset_task(
    store_path: &Path,
    session_id: &str,
    node: &str,
    include_downstream: bool,
    clear_outputs: bool,
) -> Result<Intervention, InterventionError> {
    let mut store = open_store(store_path)?;
    let loaded = Loaded::open(&store, session_id)?;
    let n = loaded.node(node)?;
    let nodes = if include_downstream { loaded.downstream(n) } else { vec![n] };
    loaded.reset(&mut store, &nodes, clear_outputs, Vec::new())
}

/// Resets the scope that `scope_start` (its start node) opens: every member to PENDING, its
/// counter and its nested scopes' counters to 0. Session data stays.
pub fn reset_scope(store_path: &Path, session_id: &str, scope_start: &str) -> Result<Intervention, InterventionError> {
    let mut store = open_store(store_path)?;
    let loaded = Loaded::open(&store, session_id)?;
    let n = loaded.node(scope_start)?;
    let index = ScopeIndex::new(&loaded.plan);
    let Some((members, counters)) = index.started_by(n).and_then(|s| scopes::reset_scope(&index, s.id)) else {
        return Err(InterventionError::UnknownScope {
            session_id: loaded.session_id.clone(),
            node: loaded.key(n).to_string(),
        });
    };
    let counters: Vec<(String, String)> = counters
        .iter()
        .filter_map(|id| index.get(*id))
        .map(|s| (loaded.plan.instances[s.instance].id.clone(), s.key.clone()))
        .collect();
    loaded.reset(&mut store, &members, false, counters)
}
