//! One task alone, "test this task" (docs/format.md §4, "One task alone"): a new session of a
//! blueprint that runs one of its tasks and nothing else. The tasks it waits for, however far
//! back, count as done without running, every other task as skipped, and what a composite task
//! calls runs with it. Its inputs read, first to last: the values given for them (written as a
//! person's edits, which lineage names), the values a past session of the blueprint held under
//! their keys (copied with the attempts that wrote them; a simulation's feed only a simulation),
//! their declared values. Its condition
//! counts as in any run: a task whose condition is false is skipped.

use std::collections::HashSet;

use orrery_blueprint::{Blueprint, Library, ValidBlueprint};
use serde_json::{Map, Value};

use super::kept::Kept;
use super::{run_new_session, Db, RunError, RunOptions, RunReport};
use crate::plan::{self, SessionPlan};
use crate::scheduler::NodeState;

/// What to run alone, and with what.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Alone {
    /// Its id in the root blueprint, or its node `"{instance}.{task}"`.
    pub task: String,
    /// Values of its inputs, by input name.
    pub inputs: Map<String, Value>,
    /// A past session of the same blueprint whose data its other inputs read.
    pub inputs_from: Option<String>,
}

/// Runs `alone.task` of `root` as a new session (see the module notes), to its end like
/// [`super::run_session`].
pub async fn run_task_alone(
    store_path: &std::path::Path,
    root: ValidBlueprint,
    library: Vec<Blueprint>,
    params: Map<String, Value>,
    alone: Alone,
    options: RunOptions,
) -> Result<RunReport, RunError> {
    let plan = {
        let lib: Library = library.iter().collect();
        plan::build(&root, &lib, &params)?
    };
    let target = plan.node_named(&alone.task).ok_or_else(|| RunError::UnknownAlone { task: alone.task.clone() })?;
    let (instance, task) = &plan.tasks[target];
    let instance = plan.instances[*instance].id.clone();
    if let Some(name) = alone.inputs.keys().find(|name| !task.inputs.iter().any(|i| i.io.name == **name)) {
        return Err(RunError::UnknownInput { task: plan.graph.nodes[target].key.clone(), input: name.clone() });
    }
    let mut kept = Kept { states: states(&plan, target), ..Kept::default() };
    kept.label = Some(format!("{} · {} alone", root.blueprint().name, task.id));
    for input in &task.inputs {
        let key = input.source_key().to_string();
        match alone.inputs.get(input.io.name.as_str()) {
            Some(value) => kept.given.push((instance.clone(), key, value.clone())),
            None if alone.inputs_from.is_some() => kept.data.push((instance.clone(), key)),
            None => {}
        }
    }
    if let Some(from) = &alone.inputs_from {
        // The past session must be one of this blueprint: another's keys mean something else.
        let db = Db::open(store_path, &options).await?;
        let id = from.clone();
        let past = db.read(move |s| s.session(&id)).await?;
        if past.blueprint_id != root.blueprint().id {
            return Err(RunError::OtherBlueprint {
                session_id: past.id,
                blueprint_id: past.blueprint_id,
                wanted: root.blueprint().id.clone(),
            });
        }
        if past.simulation.is_some() && options.simulation.is_none() {
            return Err(RunError::SimulatedInputs { session_id: past.id });
        }
        kept.data_from = Some(past.id);
    }
    run_new_session(store_path, root, library, params, None, kept, options).await
}

/// The state every node but `target` starts in: done when `target` waits for it, else skipped;
/// the nodes of the instances `target` calls (a composite's inner blueprint) run.
fn states(plan: &SessionPlan, target: usize) -> Vec<(usize, NodeState)> {
    let mut before = HashSet::new();
    let mut stack = vec![target];
    while let Some(n) = stack.pop() {
        for &(p, _) in &plan.graph.nodes[n].predecessors {
            if before.insert(p) {
                stack.push(p);
            }
        }
    }
    // Whether instance `i` is called, however deep, by the target.
    let called = |mut i: usize| loop {
        match plan.instances[i].caller {
            Some((_, node)) if node == target => return true,
            Some((caller, _)) => i = caller,
            None => return false,
        }
    };
    (0..plan.graph.nodes.len())
        .filter(|&n| n != target && !called(plan.tasks[n].0))
        .map(|n| (n, if before.contains(&n) { NodeState::Succeeded } else { NodeState::Skipped }))
        .collect()
}
