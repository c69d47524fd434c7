//! Breakpoints (Orrery's own; docs/format.md §4, "Breakpoints"): the session holds at a task,
//! before it starts or after it ended, until it is let go.
//!
//! - **Held before** a task: the task does not start (it stays PENDING); what runs elsewhere
//!   goes on, and so does what does not depend on it.
//! - **Held after** a task: it ended (SUCCEEDED); no task that depends on it starts.
//! - **Let go** ([`Release`]): *continue* (the task starts, or what follows it may), *step* (held
//!   before: the task runs and the session holds again after it; held after: the tasks that
//!   depend on it hold before they start), *skip* (held before: the task is skipped, as a skip
//!   intervention does; held after: refused, it has ended).
//! - A breakpoint holds each time its task would start or ends: every iteration of a loop, every
//!   attempt of a retry. A session that would complete while a task is held after waits too.
//! - **Held on failure** ([`super::RunOptions::hold_on_failure`]): a task that fails does not fail
//!   the session; it holds there (its attempt settled FAILED). *Continue* lets the session fail
//!   with its error, *step* runs it again (and holds after it if it succeeds, again here if it
//!   fails), *skip* skips it so that what follows runs.
//! - Each change is an event (`breakpoints`: the task, what happened, every task held now),
//!   written before anyone is told, like every other.
//! - While a task is held, a person may set a value of the session's data (what the held task
//!   is about to read): an intervention kept with the value it replaced (`data_edited`), which
//!   lineage names as the value's source.
//!
//! Breakpoints belong to one run of a session (given when it starts, [`super::RunOptions`], and
//! set or cleared while it runs, [`orrery_store::Request::Breakpoint`]): a resume runs without
//! them unless it is given some. Each event says the breakpoints of the run then.

use std::collections::{BTreeMap, HashSet};

use orrery_store::{BreakpointHolds, EventData, HeldTask, NewEvent};
use serde_json::Value;

use super::{ErrorRecord, RunError, Runner};
use crate::plan::SessionPlan;
use crate::scheduler::NodeState;

/// Where a breakpoint holds its task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum BreakAt {
    /// Before the task starts.
    Before,
    /// After it ended: nothing that depends on it starts.
    After,
    /// After it failed, instead of failing the session.
    Failure,
}

impl BreakAt {
    pub fn as_str(self) -> &'static str {
        match self {
            BreakAt::Before => "before",
            BreakAt::After => "after",
            BreakAt::Failure => "failure",
        }
    }

    pub fn parse(text: &str) -> Option<BreakAt> {
        [BreakAt::Before, BreakAt::After].into_iter().find(|at| at.as_str() == text)
    }
}

/// A breakpoint of a run: a task (a node key `instance.task`, or a task id: that task in every
/// instance that runs it) and where it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Breakpoint {
    pub task: String,
    pub at: BreakAt,
}

/// How a held task is let go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Release {
    Continue,
    Step,
    Skip,
}

impl Release {
    pub fn as_str(self) -> &'static str {
        match self {
            Release::Continue => "continue",
            Release::Step => "step",
            Release::Skip => "skip",
        }
    }

    pub fn parse(text: &str) -> Option<Release> {
        [Release::Continue, Release::Step, Release::Skip].into_iter().find(|r| r.as_str() == text)
    }
}

/// The breakpoints given, resolved to nodes; a task the plan does not have is named in the error.
pub(super) fn resolve(plan: &SessionPlan, given: &[Breakpoint], on_failure: bool) -> Result<Holds, RunError> {
    let mut holds = Holds { on_failure, ..Holds::default() };
    for b in given {
        let nodes = plan.nodes_named(&b.task);
        if nodes.is_empty() {
            return Err(RunError::UnknownBreakpoint { task: b.task.clone() });
        }
        let set = match b.at {
            BreakAt::Before => &mut holds.before,
            BreakAt::After | BreakAt::Failure => &mut holds.after,
        };
        set.extend(nodes);
    }
    Ok(holds)
}

/// The breakpoints of a run and where it holds now.
#[derive(Debug, Default)]
pub(super) struct Holds {
    before: HashSet<usize>,
    after: HashSet<usize>,
    /// Holds of one time, left by a step.
    once_before: HashSet<usize>,
    once_after: HashSet<usize>,
    /// Let go before they started: they start without holding again, once.
    passing: HashSet<usize>,
    /// The nodes held now.
    held: BTreeMap<usize, BreakAt>,
    /// Whether a task that fails holds instead of failing the session.
    on_failure: bool,
    /// The error of each task held on its failure: the session's, if it is let fail.
    failed_with: BTreeMap<usize, ErrorRecord>,
    /// A failure let go with continue: the session ends with it.
    give_up: Option<ErrorRecord>,
}

impl Holds {
    /// Whether node `n` holds before it starts now (it was not let go since it last held).
    fn holds_before(&self, n: usize) -> bool {
        (self.before.contains(&n) || self.once_before.contains(&n)) && !self.passing.contains(&n)
    }

    /// Whether a task that depends on `predecessors` waits for one held after it ended.
    fn waits_on_held(&self, predecessors: impl IntoIterator<Item = usize>) -> bool {
        predecessors.into_iter().any(|p| self.held.get(&p) == Some(&BreakAt::After))
    }

    pub(super) fn any_held(&self) -> bool {
        !self.held.is_empty()
    }

    /// The breakpoints set, by node: where each holds.
    fn set(&self) -> BTreeMap<usize, BreakAt> {
        let before = self.before.iter().map(|&n| (n, BreakAt::Before));
        before.chain(self.after.iter().map(|&n| (n, BreakAt::After))).collect()
    }

    /// The failure a continue let go: the session ends with it.
    pub(super) fn given_up(&mut self) -> Option<ErrorRecord> {
        self.give_up.take()
    }
}

impl Runner {
    /// Whether node `n`, which the scheduler lets start, must not start now: it holds before
    /// (held now, announced the first time), or a task it depends on is held after it ended.
    pub(super) async fn held_back(&mut self, n: usize) -> Result<bool, RunError> {
        if self.states[n] == NodeState::SkipRequested {
            return Ok(false);
        }
        let predecessors = self.plan.graph.nodes[n].predecessors.iter().map(|&(p, _)| p);
        if self.holds.waits_on_held(predecessors) {
            return Ok(true);
        }
        // Held now, it waits to be let go, even if its breakpoint was cleared meanwhile.
        if self.holds.held.get(&n) == Some(&BreakAt::Before) {
            return Ok(true);
        }
        if !self.holds.holds_before(n) {
            return Ok(false);
        }
        self.hold(n, BreakAt::Before).await?;
        Ok(true)
    }

    /// Node `n` is starting: a let-go or a step's hold before it is used up.
    pub(super) fn starting(&mut self, n: usize) {
        self.holds.passing.remove(&n);
        self.holds.once_before.remove(&n);
    }

    /// Node `n` ended SUCCEEDED: it holds there if a breakpoint says so.
    pub(super) async fn ended(&mut self, n: usize) -> Result<(), RunError> {
        let once = self.holds.once_after.remove(&n);
        if once || self.holds.after.contains(&n) {
            self.hold(n, BreakAt::After).await?;
        }
        Ok(())
    }

    /// A task failed with `error`: the session's failure (`Some`), unless the run holds on
    /// failure: then each task that failed and is not held yet holds there, and the loop goes on.
    pub(super) async fn failed(&mut self, error: ErrorRecord) -> Result<Option<ErrorRecord>, RunError> {
        if !self.holds.on_failure {
            return Ok(Some(error));
        }
        let failed: Vec<usize> = (0..self.states.len())
            .filter(|&n| self.states[n] == NodeState::Failed && !self.holds.held.contains_key(&n))
            .collect();
        if failed.is_empty() {
            return Ok(Some(error));
        }
        for n in failed {
            self.holds.failed_with.insert(n, error.clone());
            self.hold(n, BreakAt::Failure).await?;
        }
        Ok(None)
    }

    async fn hold(&mut self, n: usize, at: BreakAt) -> Result<(), RunError> {
        self.holds.held.insert(n, at);
        self.announce_holds(n, "held").await
    }

    async fn announce_holds(&mut self, n: usize, what: &str) -> Result<(), RunError> {
        let task = |(&h, at): (&usize, &BreakAt)| HeldTask { node: self.key(h), at: at.as_str().into() };
        let held = self.holds.held.iter().map(task).collect();
        let breakpoints = self.holds.set().iter().map(task).collect();
        let data = BreakpointHolds { node: self.key(n), what: what.to_string(), held, breakpoints };
        let session = self.session_id.clone();
        let event = NewEvent { run_id: None, data: EventData::Breakpoints(data) };
        self.db.write(move |s| Ok(vec![s.append_event(&session, &event, None)?])).await
    }

    /// The run's breakpoints as it starts, when it has any: an event says them.
    pub(super) async fn announce_breakpoints(&mut self) -> Result<(), RunError> {
        match self.holds.set().keys().next() {
            Some(&first) => self.announce_holds(first, "set").await,
            None => Ok(()),
        }
    }

    /// Sets (`at`) or clears (`None`) the breakpoint of `task` while the session runs; what came
    /// of it, as a request's outcome. A task held now stays held until it is let go.
    pub(super) async fn set_breakpoint(&mut self, task: &str, at: Option<BreakAt>) -> Result<String, RunError> {
        let nodes = self.plan.nodes_named(task);
        let Some(&first) = nodes.first() else {
            return Ok(format!("refused: no task {task} in this session"));
        };
        for &n in &nodes {
            self.holds.before.remove(&n);
            self.holds.after.remove(&n);
            match at {
                Some(BreakAt::Before) => self.holds.before.insert(n),
                Some(_) => self.holds.after.insert(n),
                None => false,
            };
        }
        self.announce_holds(first, if at.is_some() { "set" } else { "cleared" }).await?;
        Ok(match at {
            Some(BreakAt::Before) => format!("{task} holds before it starts"),
            Some(_) => format!("{task} holds after it ends"),
            None => format!("the breakpoint of {task} is cleared"),
        })
    }

    /// Sets a value of the session's data on behalf of a person, while a task is held (what it
    /// is about to read may be changed before it starts); what came of it, as a request's outcome.
    pub(super) async fn set_data(
        &mut self,
        instance: Option<String>,
        key: String,
        value: Value,
        by: String,
    ) -> Result<String, RunError> {
        if !self.holds.any_held() {
            return Ok("refused: the session's data is set only while a task is held at a breakpoint".to_string());
        }
        let instance = instance.unwrap_or_else(|| self.plan.instances[0].id.clone());
        if !self.plan.instances.iter().any(|i| i.id == instance) {
            return Ok(format!("refused: no blueprint instance {instance} in this session"));
        }
        let session = self.session_id.clone();
        let said = format!("set {instance}.{key}");
        self.db.write(move |s| Ok(s.edit_data(&session, &instance, &key, &value, &by)?.1)).await?;
        Ok(said)
    }

    /// Lets go of the held task named `task` (every held task when `None`); what came of it, as
    /// a request's outcome ("refused: ..." when nothing was let go).
    pub(super) async fn release(&mut self, task: Option<&str>, how: Release) -> Result<String, RunError> {
        let targets: Vec<(usize, BreakAt)> = match task {
            None => self.holds.held.iter().map(|(&n, &at)| (n, at)).collect(),
            Some(name) => {
                let nodes = self.plan.nodes_named(name);
                if nodes.is_empty() {
                    return Ok(format!("refused: no task {name} in this session"));
                }
                nodes.into_iter().filter_map(|n| self.holds.held.get(&n).map(|&at| (n, at))).collect()
            }
        };
        if targets.is_empty() {
            return Ok(match task {
                Some(name) => format!("refused: task {name} is not held at a breakpoint"),
                None => "refused: no task is held at a breakpoint".to_string(),
            });
        }
        if how == Release::Skip {
            if let Some(&(n, _)) = targets.iter().find(|(_, at)| *at == BreakAt::After) {
                return Ok(format!("refused: {} is held after it ended: continue or step", self.key(n)));
            }
        }
        let mut done = Vec::new();
        for (n, at) in targets {
            self.holds.held.remove(&n);
            match (how, at) {
                (Release::Continue, BreakAt::Before) => {
                    self.holds.passing.insert(n);
                }
                (Release::Step, BreakAt::Before) => {
                    self.holds.passing.insert(n);
                    self.holds.once_after.insert(n);
                }
                (Release::Continue, BreakAt::After) => {}
                (Release::Step, BreakAt::After) => {
                    let next = self
                        .plan
                        .graph
                        .nodes
                        .iter()
                        .enumerate()
                        .filter(|(_, node)| node.predecessors.iter().any(|&(p, _)| p == n));
                    let next: Vec<usize> = next.map(|(s, _)| s).collect();
                    self.holds.once_before.extend(next);
                }
                (Release::Continue, BreakAt::Failure) => {
                    self.holds.give_up = self.holds.failed_with.remove(&n);
                }
                (Release::Step, BreakAt::Failure) => {
                    // Run it again; held after it when it succeeds, here again when it fails.
                    self.holds.failed_with.remove(&n);
                    self.holds.passing.insert(n);
                    self.holds.once_after.insert(n);
                    self.set_states(vec![(n, NodeState::Pending)]).await?;
                }
                (Release::Skip, _) => {
                    self.holds.failed_with.remove(&n);
                    self.holds.passing.insert(n);
                    self.set_states(vec![(n, NodeState::SkipRequested)]).await?;
                }
            }
            self.announce_holds(n, how.as_str()).await?;
            done.push(self.key(n));
        }
        let verb = match how {
            Release::Continue => "continuing",
            Release::Step => "stepping",
            Release::Skip => "skipping",
        };
        Ok(format!("{verb} {}", done.join(", ")))
    }
}
