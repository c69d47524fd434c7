//! Simulation: a run without processes (docs/format.md §4, "Simulation").
//!
//! A simulated session runs its plan as any other: conditions, scopes, while loops, composites
//! and dynamic fan-out are the runner's own. Only the tasks that would start a process, ask a
//! person, reach an agent on the broker or sleep are simulated: each succeeds (at once, or after
//! the time it took in the past run) with its outputs taken from, in order, the values set for
//! it, its outputs in the past run (the n-th time it ran there for the n-th time it succeeds
//! here, the last one again once they run out), and its declared defaults; or it fails, when
//! the simulation says so. The session keeps its [`Simulation`], so a resume or restart of it
//! is simulated too and its data never feeds a real run.

use super::*;

pub use orrery_store::{SimulatedFailure, Simulation};

/// A [`Simulation`] resolved against a plan: what each node does when it would start.
#[derive(Debug, Default)]
pub(super) struct Simulator {
    /// The outputs set for each node.
    outputs: Vec<Option<Map<String, Value>>>,
    /// For each node set to fail: how many of its attempts fail (`None`: every one).
    fails: Vec<Option<Option<std::num::NonZeroU32>>>,
    /// Each node's successful attempts in the past run, in order.
    past: Vec<Vec<Past>>,
    /// The simulated successes of each node so far (which past attempt the next one takes).
    successes: Vec<usize>,
    durations: bool,
}

/// A successful attempt of the past run: its outputs and how long it took.
type Past = (Map<String, Value>, Option<Duration>);

/// How a simulated attempt ends, and when.
pub(super) struct Simulated {
    pub outcome: AgentOutcome,
    /// `None`: at once.
    pub after: Option<Duration>,
}

impl Simulator {
    /// Resolves `simulation`'s task names against `plan` and reads its past run from the store.
    /// A name the plan does not have, or a past session the store does not, is refused.
    pub(super) async fn resolve(plan: &SessionPlan, simulation: &Simulation, db: &Db) -> Result<Simulator, RunError> {
        let nodes = plan.tasks.len();
        let named = |task: &str| {
            let found = plan.nodes_named(task);
            if found.is_empty() {
                Err(RunError::UnknownSimulated { task: task.to_string() })
            } else {
                Ok(found)
            }
        };
        let mut outputs = vec![None; nodes];
        // A task id first, then node keys over it: the more precise name wins.
        let mut given: Vec<_> = simulation.outputs.iter().collect();
        given.sort_by_key(|(name, _)| name.contains('.'));
        for (task, values) in given {
            for n in named(task)? {
                outputs[n] = Some(values.clone());
            }
        }
        let mut fails = vec![None; nodes];
        for failure in &simulation.fail {
            for n in named(&failure.task)? {
                fails[n] = Some(failure.attempts);
            }
        }
        let mut past = vec![Vec::new(); nodes];
        if let Some(from) = simulation.outputs_from.clone() {
            let mut attempts = db
                .read(move |s| {
                    s.session(&from)?;
                    s.attempts(&from)
                })
                .await?;
            attempts.sort_by_key(|a| a.attempt);
            let index: HashMap<&str, usize> =
                plan.graph.nodes.iter().enumerate().map(|(n, node)| (node.key.as_str(), n)).collect();
            for attempt in attempts.iter().filter(|a| a.state == orrery_store::AttemptState::Succeeded) {
                let Some(&n) = index.get(attempt.node.as_str()) else { continue };
                let values = match &attempt.outputs {
                    Some(Value::Object(values)) => values.clone(),
                    _ => Map::new(),
                };
                let took =
                    attempt.finished_ms.map(|end| Duration::from_millis((end - attempt.started_ms).max(0) as u64));
                past[n].push((values, took));
            }
        }
        Ok(Simulator { outputs, fails, past, successes: vec![0; nodes], durations: simulation.durations })
    }

    /// What node `n`'s attempt number `attempt` does.
    pub(super) fn attempt(&mut self, n: usize, attempt: u32, key: &str) -> Simulated {
        let past = self.past[n].get(self.successes[n]).or(self.past[n].last());
        let after = past.and_then(|(_, took)| *took).filter(|_| self.durations);
        if let Some(fails) = self.fails[n] {
            if fails.is_none_or(|count| attempt <= count.get()) {
                let message = format!("task '{key}' fails: the simulation sets it to fail");
                let error = TaskError::new(ErrorCode::TaskFailed, message);
                return Simulated { outcome: AgentOutcome::Failed { error, exit_code: None }, after };
            }
        }
        let mut outputs = past.map(|(values, _)| values.clone()).unwrap_or_default();
        if let Some(set) = &self.outputs[n] {
            outputs.extend(set.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        self.successes[n] += 1;
        Simulated { outcome: AgentOutcome::Succeeded { outputs, exit_code: None }, after }
    }
}
