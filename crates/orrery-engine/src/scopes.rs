//! Scope execution rules (docs/format.md §4), as pure functions over a [`SessionPlan`]: which
//! nodes a scope holds, what happens when its end task succeeds (loop or go on), what a skip
//! drags along with it, and what the intervention "reset a scope" resets. The session runner
//! applies the answers (states, cleared outputs, iteration counters in the store).
//!
//! # Where this follows the reference and where it does not
//!
//! * **Members** are, as in the reference (`scopes.py` `_find_scope_tasks`), the nodes reachable
//!   forward from the start and backward from the end in the *flattened* graph, so a composite
//!   inside a scope brings its inner instance along (through the `C -> I.start` and
//!   `I.end -> C` edges) and a loop resets the inner nodes too. The reference's search may
//!   leave the scope's own instance through those edges towards the caller: for a scope inside
//!   an inner blueprint, `I.end -> C -> I.start` is a cycle, so its member set becomes the
//!   whole inner instance *plus the running composite C*, which a loop then resets to PENDING
//!   under its own feet. Orrery's search never climbs to a caller: it stays in the scope's
//!   instance and the instances called from it. For every scope of a root blueprint both give
//!   the same set.
//! * **Identity**: the reference keys scopes and `scope_iterations` by the bare start task id
//!   (`ScopeRegistry._build`, `_handle_scope_completion`), so one inner blueprint used twice
//!   shares one scope and one counter. Here a scope is its start node ([`ScopeId`]); a store
//!   keeps its counter under the start node's key (`"{instance}.{task}"`).
//! * **Nesting** is the reference's `nested_within`: every other scope whose members are all
//!   members of this one (scopes of inner instances called from inside the scope included).
//! * **Pairing** start and end: the last task of the instance whose `scope_end` names a start
//!   closes it (as `orrery_blueprint::scope`); a start with no end has no scope. Tasks renamed by
//!   dynamic expansion (`T` becomes `T_0 ...`) no longer match a `scope_start`/`scope_end` that
//!   names `T`.

use crate::plan::SessionPlan;
use crate::scheduler::NodeState;
use orrery_blueprint::{ScopePolicy, ScopeStart};
use orrery_store::ScopeIteration;
use std::collections::{BTreeSet, HashMap};

/// A scope, named by its start node (one per blueprint instance, unlike the reference).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ScopeId(pub usize);

/// What a scope does when its end task succeeds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Policy {
    /// Never loops; a false condition on the start skips the whole scope.
    Skip,
    /// The body runs `1 + retries` times, unconditionally.
    Retry { retries: u64 },
    /// Loops while `condition` holds, at most `max_iterations` runs in all.
    While { condition: String, max_iterations: Option<u64> },
}

impl Policy {
    fn of(start: &ScopeStart) -> Policy {
        match start.policy() {
            ScopePolicy::Skip => Policy::Skip,
            ScopePolicy::Retry(r) => Policy::Retry { retries: r.retries },
            ScopePolicy::While(w) => Policy::While { condition: w.condition.clone(), max_iterations: w.max_iterations },
        }
    }
}

/// One scope of one blueprint instance, as plan node indices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    pub id: ScopeId,
    /// The start node's key, `"{instance}.{task}"`: what a store keys the counter by.
    pub key: String,
    /// The blueprint instance the scope is declared in.
    pub instance: usize,
    pub start: usize,
    pub end: usize,
    /// Every member, start and end included, inner instances of member composites included;
    /// ascending.
    pub members: Vec<usize>,
    /// The members that belong to inner instances (called by member composites); ascending.
    pub inner_members: Vec<usize>,
    pub policy: Policy,
    /// The scopes nested in this one (their members are a subset of these), ascending.
    pub nested: Vec<ScopeId>,
    /// The scopes this one is nested in, ascending.
    pub enclosing: Vec<ScopeId>,
}

/// Every scope of every instance of a session.
#[derive(Debug, Clone, Default)]
pub struct ScopeIndex {
    scopes: Vec<Scope>,
    by_start: HashMap<usize, usize>,
    by_end: HashMap<usize, usize>,
    /// Per node: the looping scopes (retry, while) it is a member of, the outermost first, as
    /// indices of `scopes`.
    loops_holding: Vec<Vec<usize>>,
}

impl ScopeIndex {
    pub fn new(plan: &SessionPlan) -> ScopeIndex {
        let n = plan.graph.nodes.len();
        let mut successors = vec![Vec::new(); n];
        for (node, p) in plan.graph.nodes.iter().enumerate() {
            for &(from, _) in &p.predecessors {
                successors[from].push(node);
            }
        }
        // Instance -> whether it is `inside` (itself or called, at any depth, from inside) a given
        // instance, answered through the caller chain.
        let instance_inside = |mut i: usize, outer: usize| loop {
            if i == outer {
                return true;
            }
            match plan.instances[i].caller {
                Some((caller, _)) => i = caller,
                None => return false,
            }
        };
        let mut scopes = Vec::new();
        for instance in 0..plan.instances.len() {
            let nodes: Vec<usize> = (0..n).filter(|&node| plan.tasks[node].0 == instance).collect();
            let mut ends: HashMap<&str, usize> = HashMap::new();
            for &node in &nodes {
                if let Some(end) = plan.tasks[node].1.scope_end.as_deref().filter(|e| !e.is_empty()) {
                    ends.insert(end, node);
                }
            }
            for &start in &nodes {
                let task = &plan.tasks[start].1;
                let Some(scope_start) = &task.scope_start else {
                    continue;
                };
                let Some(&end) = ends.get(task.id.as_str()) else {
                    continue;
                };
                let within = |node: usize| instance_inside(plan.tasks[node].0, instance);
                let forward = reach(start, |x| &successors[x], within, n);
                let backward = reach(end, |x| plan.graph.nodes[x].predecessors.iter().map(|p| &p.0), within, n);
                let members: Vec<usize> = (0..n).filter(|&x| forward[x] && backward[x]).collect();
                let inner_members = members.iter().copied().filter(|&x| plan.tasks[x].0 != instance).collect();
                scopes.push(Scope {
                    id: ScopeId(start),
                    key: plan.graph.nodes[start].key.clone(),
                    instance,
                    start,
                    end,
                    members,
                    inner_members,
                    policy: Policy::of(scope_start),
                    nested: Vec::new(),
                    enclosing: Vec::new(),
                });
            }
        }
        scopes.sort_by_key(|s| s.start);
        let sets: Vec<BTreeSet<usize>> = scopes.iter().map(|s| s.members.iter().copied().collect()).collect();
        for a in 0..scopes.len() {
            for b in 0..scopes.len() {
                if a != b && sets[b].is_subset(&sets[a]) {
                    let (outer, inner) = (scopes[a].id, scopes[b].id);
                    scopes[a].nested.push(inner);
                    scopes[b].enclosing.push(outer);
                }
            }
        }
        let by_start = scopes.iter().enumerate().map(|(i, s)| (s.start, i)).collect();
        let by_end = scopes.iter().enumerate().map(|(i, s)| (s.end, i)).collect();
        // A scope holds every scope nested in it, so the more scopes hold one, the further in it is.
        let mut looping: Vec<usize> = (0..scopes.len()).filter(|&i| scopes[i].policy != Policy::Skip).collect();
        looping.sort_by_key(|&i| (scopes[i].enclosing.len(), scopes[i].start));
        let mut loops_holding = vec![Vec::new(); n];
        for i in looping {
            for &member in &scopes[i].members {
                loops_holding[member].push(i);
            }
        }
        ScopeIndex { scopes, by_start, by_end, loops_holding }
    }

    /// Every scope, by start node.
    pub fn scopes(&self) -> &[Scope] {
        &self.scopes
    }

    pub fn get(&self, id: ScopeId) -> Option<&Scope> {
        self.by_start.get(&id.0).map(|&i| &self.scopes[i])
    }

    /// The scope a node opens.
    pub fn started_by(&self, node: usize) -> Option<&Scope> {
        self.get(ScopeId(node))
    }

    /// The scope a node closes: what to ask [`decide_scope_end`] about when it succeeds.
    pub fn ended_by(&self, node: usize) -> Option<&Scope> {
        self.by_end.get(&node).map(|&i| &self.scopes[i])
    }

    /// The looping scopes (retry, while) that hold a node, the outermost first.
    pub fn loops_holding(&self, node: usize) -> impl Iterator<Item = &Scope> {
        self.loops_holding.get(node).into_iter().flatten().map(|&i| &self.scopes[i])
    }

    /// The scope whose start node has this key (`"{instance}.{task}"`).
    pub fn by_key(&self, key: &str) -> Option<&Scope> {
        self.scopes.iter().find(|s| s.key == key)
    }
}

/// The iteration of each looping scope that holds node `n`, the outermost first: one more than
/// the passes `completed` says the scope has finished (the store's counter).
pub fn iterations_of(
    plan: &SessionPlan,
    index: &ScopeIndex,
    n: usize,
    mut completed: impl FnMut(&Scope) -> u32,
) -> Vec<ScopeIteration> {
    index
        .loops_holding(n)
        .map(|scope| {
            let start = &plan.tasks[scope.start].1;
            let named = start.scope_start.as_ref().and_then(|s| s.name.as_deref()).filter(|name| !name.is_empty());
            ScopeIteration {
                instance: plan.instances[scope.instance].id.clone(),
                scope: start.id.to_string(),
                name: named.unwrap_or(&start.id).to_string(),
                iteration: completed(scope).saturating_add(1),
            }
        })
        .collect()
}

/// Nodes reachable from `origin` along `next`, never entering a node outside `within`.
fn reach<'a, I>(origin: usize, next: impl Fn(usize) -> I, within: impl Fn(usize) -> bool, n: usize) -> Vec<bool>
where
    I: IntoIterator<Item = &'a usize>,
{
    let mut seen = vec![false; n];
    let mut stack = vec![origin];
    seen[origin] = true;
    while let Some(x) = stack.pop() {
        for &y in next(x) {
            if !seen[y] && within(y) {
                seen[y] = true;
                stack.push(y);
            }
        }
    }
    seen
}

/// The error code of a while condition that cannot be evaluated.
pub const SCOPE_CONDITION_ERROR: &str = "SCOPE_CONDITION_ERROR";

/// What follows a scope's end task succeeding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScopeDecision {
    /// No (more) loop: the session goes on past the end task.
    Continue,
    /// Another run of the body.
    Loop {
        /// Back to PENDING with their outputs cleared (session data stays): every member,
        /// start and end included, and the nodes of inner instances of member composites.
        reset: Vec<usize>,
        /// The subset of `reset` that lies in inner instances (see [`Scope::inner_members`]).
        inner_reset: Vec<usize>,
        /// Counters of nested scopes to clear (the scope's own counter is not among them).
        reset_counters: Vec<ScopeId>,
        /// The scope's own counter from now on: `iterations_so_far + 1` extra runs.
        iterations: u32,
    },
    /// The session fails with `code` (always [`SCOPE_CONDITION_ERROR`]).
    Fail { code: &'static str, message: String },
}

/// Decides, when the END task of `scope` has SUCCEEDED (scopes loop only then; call nothing on
/// a skipped or failed end), whether the body runs again. `iterations_so_far` is the scope's
/// counter: the extra runs done so far (0 after the first run). `while_result` evaluates the
/// while condition on the session data of the scope's instance plus its context only (not the
/// task namespace); it is called only when the condition decides (not for retry or skip, not
/// once `max_iterations` is reached, not for an empty condition). The reference:
/// `scopes.py` `RuntimeScope.should_loop`, `_evaluate_retry`, `_evaluate_while`, and
/// `orchestrator.py` `_handle_scope_completion`.
///
/// An unknown scope continues (the reference logs and continues).
pub fn decide_scope_end(
    index: &ScopeIndex,
    scope: ScopeId,
    iterations_so_far: u32,
    while_result: impl FnOnce() -> Result<bool, String>,
) -> ScopeDecision {
    let Some(s) = index.get(scope) else {
        return ScopeDecision::Continue;
    };
    let again = match &s.policy {
        Policy::Skip => false,
        Policy::Retry { retries } => u64::from(iterations_so_far) < *retries,
        Policy::While { condition, max_iterations } => {
            // `iterations_so_far >= max_iterations - 1`, in Python's integers: 0 stops at once.
            let capped = max_iterations.is_some_and(|max| max == 0 || u64::from(iterations_so_far) >= max - 1);
            if capped || condition.is_empty() {
                false
            } else {
                match while_result() {
                    Ok(b) => b,
                    Err(e) => {
                        return ScopeDecision::Fail {
                            code: SCOPE_CONDITION_ERROR,
                            message: format!("Scope '{}': cannot evaluate while condition '{condition}' ({e}).", s.key),
                        }
                    }
                }
            }
        }
    };
    if !again {
        return ScopeDecision::Continue;
    }
    ScopeDecision::Loop {
        reset: s.members.clone(),
        inner_reset: s.inner_members.clone(),
        reset_counters: s.nested.clone(),
        iterations: iterations_so_far.saturating_add(1),
    }
}

/// The nodes that become SKIPPED along with `node` (which is not in the result): when `node` is
/// a composite, every node of the instance it calls and, recursively, of the instances those
/// call (`orchestrator.py` `_handle_skipped_task`, `_set_inner_blueprint_tasks_state`); when it
/// starts a scope, every other member of the scope (`scopes.py` `skip_tasks`), which includes
/// the inner nodes of member composites. Both when it is both. Ascending.
///
/// Only nodes that have not run may change: apply it with [`apply_skip`].
pub fn skip_cascade(plan: &SessionPlan, index: &ScopeIndex, node: usize) -> Vec<usize> {
    let mut out = BTreeSet::new();
    let mut called = vec![node];
    while let Some(caller) = called.pop() {
        for (i, inst) in plan.instances.iter().enumerate() {
            if inst.caller.is_some_and(|(_, c)| c == caller) {
                for (x, (instance, task)) in plan.tasks.iter().enumerate() {
                    if *instance == i {
                        out.insert(x);
                        if task.task_type.is_composite() {
                            called.push(x);
                        }
                    }
                }
            }
        }
    }
    if let Some(scope) = index.started_by(node) {
        out.extend(scope.members.iter().copied());
    }
    out.remove(&node);
    out.into_iter().collect()
}

/// Marks SKIPPED the nodes of a cascade that have not started: PENDING and SKIP_REQUESTED ones.
/// Returns those it changed. (The reference skips only PENDING scope members, leaving
/// SKIP_REQUESTED ones to become SKIPPED when they would dispatch, which ends the same; its
/// composite cascade also overwrites READY and RUNNING inner tasks, which cannot exist while
/// the composite itself is being dispatched.)
pub fn apply_skip(states: &mut [NodeState], nodes: &[usize]) -> Vec<usize> {
    let mut changed = Vec::new();
    for &n in nodes {
        if matches!(states[n], NodeState::Pending | NodeState::SkipRequested) {
            states[n] = NodeState::Skipped;
            changed.push(n);
        }
    }
    changed
}

/// The intervention "reset a scope" (`orchestrator.py` `reset_scope`): every member back to
/// PENDING with outputs cleared, and the counters to clear: the scope's own first, then its
/// nested scopes'. `None` for an unknown scope (the reference raises `KeyError`). Moving a
/// FAILED or COMPLETED session to STOPPED is the runner's part.
pub fn reset_scope(index: &ScopeIndex, scope: ScopeId) -> Option<(Vec<usize>, Vec<ScopeId>)> {
    let s = index.get(scope)?;
    let mut counters = vec![s.id];
    counters.extend(s.nested.iter().copied());
    Some((s.members.clone(), counters))
}
