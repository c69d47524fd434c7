//! What agents report, and settling attempts: finish, fail, loop a scope, stop.

use super::*;

/// Names the process of an attempt; advisory, so an attempt settled meanwhile is no error.
fn record_process(
    store: &mut Store,
    run_id: &RunId,
    process: ProcessIdentity,
    environment: Option<&ProcessEnvironment>,
) -> Result<(), StoreError> {
    match store.set_attempt_process(run_id, process, environment) {
        Err(StoreError::StaleRun { .. }) => Ok(()),
        other => other,
    }
}

/// A failure whose details say the process's exit status was lost ([`shell::STATUS_LOST`]).
fn is_status_lost(error: &TaskError) -> bool {
    error.details.as_ref().and_then(|d| d.get(shell::STATUS_LOST)) == Some(&Value::Bool(true))
}

impl Runner {
    pub(super) async fn on_report(&mut self, report: Report) -> Step {
        match report {
            Report::Started { node, run_id, process, canceller, environment } => {
                let Some(run) = self.runs[node].as_mut().filter(|r| r.run_id == run_id) else {
                    canceller.cancel();
                    return Ok(None);
                };
                if run.cancel_on_start {
                    canceller.cancel();
                }
                run.canceller = Some(canceller);
                self.db.call_or_defer(move |s| record_process(s, &run_id, process, environment.as_ref()))?;
                Ok(None)
            }
            Report::Progress { node, run_id, line } => {
                self.record_progress(node, run_id, line).await?;
                Ok(None)
            }
            Report::Dispatch { node, run_id, progress } => {
                let step = broker::dispatch_event(&self.key(node), progress);
                self.publish(&run_id, EventData::BrokerDispatch(step)).await?;
                Ok(None)
            }
            Report::LogCapped { node, run_id, cap_bytes, dropped_bytes } => {
                self.log_capped(node, run_id, cap_bytes, dropped_bytes).await?;
                Ok(None)
            }
            Report::Ended { node, run_id, outcome } => {
                self.processes.remove(&run_id);
                let Some(run) = self.runs[node].as_mut().filter(|r| r.run_id == run_id && r.ended.is_none()) else {
                    return Ok(None);
                };
                run.canceller = None;
                run.sleep = None;
                match outcome {
                    AgentOutcome::Succeeded { outputs, exit_code } => {
                        if run.kind == RunKind::Prompt {
                            let answered = PromptAnswered { node: self.key(node), outputs: outputs.clone() };
                            self.publish(&run_id, EventData::PromptAnswered(answered)).await?;
                        }
                        let Some(run) = self.runs[node].as_mut() else { unreachable!("checked above") };
                        run.ended = Some((exit_code, outputs));
                        self.states[node] = NodeState::Finishing;
                        Ok(None)
                    }
                    AgentOutcome::Failed { error, .. } if is_status_lost(&error) => {
                        self.unknown_run(node, task_error_record(&error)).await?;
                        Ok(None)
                    }
                    AgentOutcome::Failed { error, exit_code } => {
                        self.fail_run(node, task_error_record(&error), exit_code).await
                    }
                    AgentOutcome::TimedOut { error, exit_code } => {
                        self.fail_run(node, task_error_record(&error), Some(exit_code)).await
                    }
                    AgentOutcome::Cancelled { exit_code } => {
                        // Only a cancel of this one task gets here (a stop settles its runs
                        // itself, see `stop_in_flight`).
                        let error =
                            ErrorRecord::new(ErrorCode::TaskFailed, format!("task '{}' was cancelled", self.key(node)));
                        self.cancelled_run(node, error, Some(exit_code)).await
                    }
                }
            }
        }
    }

    /// Stores one progress line of a run still in the books and announces its event.
    pub(super) async fn record_progress(
        &mut self,
        node: usize,
        run_id: RunId,
        line: ProgressLine,
    ) -> Result<(), RunError> {
        if self.runs[node].as_ref().is_none_or(|r| r.run_id != run_id) {
            return Ok(());
        }
        let report = orrery_store::ProgressReport {
            step: line.step,
            state: store_step_state(line.state),
            percentage: line.percentage,
        };
        let update = self
            .db
            .call_relaxed(move |s| match s.report_progress(&run_id, &report) {
                Ok(update) => Ok(update.event),
                // Advisory: a settled attempt or a refused report loses nothing else.
                Err(StoreError::StaleRun { .. } | StoreError::InvalidArgument { .. }) => Ok(None),
                Err(e) => Err(e),
            })
            .await?;
        self.db.announce(update);
        Ok(())
    }

    /// Appends the event saying that a run's log reached its cap.
    async fn log_capped(
        &mut self,
        node: usize,
        run_id: RunId,
        cap_bytes: u64,
        dropped_bytes: u64,
    ) -> Result<(), RunError> {
        if self.runs[node].as_ref().is_none_or(|r| r.run_id != run_id) {
            return Ok(());
        }
        let capped = LogCapped { cap_bytes, dropped_bytes, node: self.key(node) };
        self.publish(&run_id, EventData::LogCapped(capped)).await
    }

    /// Settles a run whose outcome cannot be known (its process's exit status was lost):
    /// `unknown`, its steps in progress too, and its node back to PENDING, to run again.
    async fn unknown_run(&mut self, n: usize, error: ErrorRecord) -> Result<(), RunError> {
        let Some(run) = self.runs[n].take() else { return Ok(()) };
        self.states[n] = NodeState::Pending;
        self.db
            .write(move |s| {
                s.mark_unknown_in_progress(&run.run_id)?;
                s.settle_attempt(
                    &run.run_id,
                    Settlement {
                        outcome: Outcome::Unknown { error },
                        node_state: Some(TaskState::Pending),
                        data: Vec::new(),
                    },
                )
            })
            .await
    }

    /// Settles a failed run: the node FAILED, the session fails with its error.
    pub(super) async fn fail_run(&mut self, n: usize, error: ErrorRecord, exit_code: Option<i32>) -> Step {
        let outcome = Outcome::Failed { exit_code, error: error.clone() };
        self.end_run_failing(n, error, outcome).await
    }

    /// Settles a run cancelled on request (`cancel_task`): the attempt `cancelled` (exit code
    /// 130 for a process), the node FAILED, and the session fails with `error`.
    pub(super) async fn cancelled_run(&mut self, n: usize, error: ErrorRecord, exit_code: Option<i32>) -> Step {
        self.end_run_failing(n, error, Outcome::Cancelled { exit_code }).await
    }

    async fn end_run_failing(&mut self, n: usize, error: ErrorRecord, outcome: Outcome) -> Step {
        let Some(run) = self.runs[n].take() else { return Ok(None) };
        self.states[n] = NodeState::Failed;
        self.db
            .write(move |s| {
                s.settle_attempt(
                    &run.run_id,
                    Settlement { outcome, node_state: Some(TaskState::Failed), data: Vec::new() },
                )
            })
            .await?;
        Ok(Some(error))
    }

    /// Lands a finished run: outcome, SUCCEEDED and outputs in one transaction; then the scope
    /// it ends, if any, decides whether to loop.
    pub(super) async fn finish(&mut self, n: usize) -> Step {
        let Some(run) = self.runs[n].take() else { unreachable!("a finishing node has a run") };
        let (instance, task) = self.plan.tasks[n].clone();
        let instance_id = self.plan.instances[instance].id.clone();
        let (exit_code, writes) = match run.kind {
            RunKind::Composite => {
                let outer = self.data_of(instance_id.clone()).await?;
                let inner = match self.plan.instances.iter().find(|i| i.caller.is_some_and(|(_, c)| c == n)) {
                    Some(i) => self.data_of(i.id.clone()).await?,
                    None => Data::new(),
                };
                (None, data::composite_outputs(&task, &inner, &outer))
            }
            _ => {
                let (exit_code, outputs) = run.ended.clone().unwrap_or_default();
                (exit_code, data::outputs_to_write(&task, Some(&outputs)))
            }
        };
        let outputs: Map<String, Value> = match run.kind {
            RunKind::Composite => writes.iter().cloned().collect(),
            _ => run.ended.clone().map(|(_, o)| o).unwrap_or_default(),
        };
        let data: Vec<(String, String, Value)> = writes.into_iter().map(|(k, v)| (instance_id.clone(), k, v)).collect();
        let run_id = run.run_id.clone();
        self.states[n] = NodeState::Succeeded;
        let settle = move |s: &mut Store| {
            s.settle_attempt(
                &run_id,
                Settlement {
                    outcome: Outcome::Succeeded { exit_code, outputs: Value::Object(outputs) },
                    node_state: Some(TaskState::Succeeded),
                    data,
                },
            )
        };
        match self.scopes.ended_by(n).cloned() {
            // In the batch of what its scope decides (to loop or go on): recovery finds the two
            // together or neither.
            Some(scope) => {
                self.db.write(settle).await?;
                self.end_scope(&scope, instance_id).await
            }
            None => {
                self.db.behind(settle)?;
                Ok(None)
            }
        }
    }

    /// The end of `scope` succeeded: loop, go on, or fail.
    pub(super) async fn end_scope(&mut self, scope: &scopes::Scope, instance_id: String) -> Step {
        let so_far = self.iterations.get(&scope.start).copied().unwrap_or(0);
        let needs_data = matches!(scope.policy, scopes::Policy::While { .. });
        let data = if needs_data { self.data_of(instance_id.clone()).await? } else { Data::new() };
        let context = self.plan.instances[scope.instance].context.clone();
        let decision = scopes::decide_scope_end(&self.scopes, scope.id, so_far, || {
            let scopes::Policy::While { condition, .. } = &scope.policy else { return Ok(false) };
            let parsed = condition::parse(condition).map_err(|e| e.to_string())?;
            parsed.evaluate(&data::while_namespace(&context, &data)).map_err(|e| e.to_string())
        });
        match decision {
            ScopeDecision::Continue => Ok(None),
            ScopeDecision::Fail { message, .. } => Ok(Some(ErrorRecord::new(ErrorCode::ScopeConditionError, message))),
            ScopeDecision::Loop { reset, reset_counters, .. } => {
                let session = self.session_id.clone();
                let key = scope.key.clone();
                let nested: Vec<(String, String)> = reset_counters
                    .iter()
                    .filter_map(|id| self.scopes.get(*id))
                    .map(|s| (self.plan.instances[s.instance].id.clone(), s.key.clone()))
                    .collect();
                let counter = self
                    .db
                    .call(move |s| {
                        let n = s.increment_scope_iterations(&session, &instance_id, &key)?;
                        for (instance, key) in &nested {
                            s.set_scope_iterations(&session, instance, key, 0)?;
                        }
                        Ok(n)
                    })
                    .await?;
                self.iterations.insert(scope.start, counter);
                for id in &reset_counters {
                    self.iterations.remove(&id.0);
                }
                for &r in &reset {
                    // A member still in flight (possible through an SS edge) is cut short.
                    self.abandon_run(r).await?;
                }
                self.set_states(reset.iter().map(|&r| (r, NodeState::Pending)).collect()).await?;
                Ok(None)
            }
        }
    }

    /// Cancels the run of `n`, if any, without waiting for it, and settles its attempt
    /// `cancelled` with the node back to PENDING: a scope that loops over it, a prompt withdrawn
    /// by a pause. Its process, if one started, reports its end later and is no longer in the
    /// books.
    pub(super) async fn abandon_run(&mut self, n: usize) -> Result<(), RunError> {
        let Some(run) = self.runs[n].take() else { return Ok(()) };
        run.cancel();
        if let Some(i) = self.launches.iter().position(|l| l.run_id == run.run_id) {
            self.launches.remove(i);
            self.processes.remove(&run.run_id);
        }
        self.states[n] = NodeState::Pending;
        self.db
            .write(move |s| {
                s.settle_attempt(
                    &run.run_id,
                    Settlement {
                        outcome: Outcome::Cancelled { exit_code: None },
                        node_state: Some(TaskState::Pending),
                        data: Vec::new(),
                    },
                )
            })
            .await
    }

    /// Tells every run to stop without waiting for it. Attempts begun whose process never
    /// started are forgotten: there is nothing to wait for.
    fn cancel_every_run(&mut self) {
        for launch in std::mem::take(&mut self.launches) {
            self.processes.remove(&launch.run_id);
        }
        for run in self.runs.iter().flatten() {
            run.cancel();
        }
    }

    /// After an error of the store (nothing more can be written): stops what runs and waits for
    /// its processes to end, so that none outlives the runner. Their attempts stay `running` in
    /// the store; a resume settles them.
    pub(super) async fn abandon_in_flight(&mut self) {
        self.cancel_every_run();
        while !self.processes.is_empty() {
            match self.rx.recv().await {
                Some(Report::Started { canceller, .. }) => canceller.cancel(),
                Some(Report::Ended { run_id, .. }) => {
                    self.processes.remove(&run_id);
                }
                Some(Report::Progress { .. } | Report::Dispatch { .. } | Report::LogCapped { .. }) => {}
                None => break,
            }
        }
    }

    /// After a failure: cancels what still runs and settles every open attempt as cancelled,
    /// its node back to PENDING.
    pub(super) async fn stop_in_flight(&mut self) -> Result<(), RunError> {
        self.cancel_every_run();
        // The exit code each run's agent reported: a run that already ended keeps its own.
        let mut exit_codes: HashMap<RunId, Option<i32>> = HashMap::new();
        for run in self.runs.iter().flatten() {
            if let Some((exit_code, _)) = &run.ended {
                exit_codes.insert(run.run_id.clone(), *exit_code);
            }
        }
        // Shell processes report their end; wait for them so no process outlives the session.
        while !self.processes.is_empty() {
            self.db.flush().await?;
            let Some(report) = self.rx.recv().await else { break };
            match report {
                Report::Started { node, run_id, process, canceller, environment } => {
                    canceller.cancel();
                    // Still name the process on its attempt: it ran.
                    if self.runs[node].as_ref().is_some_and(|r| r.run_id == run_id) {
                        self.db.call_or_defer(move |s| record_process(s, &run_id, process, environment.as_ref()))?;
                    }
                }
                Report::Progress { node, run_id, line } => self.record_progress(node, run_id, line).await?,
                Report::Dispatch { .. } => {}
                Report::LogCapped { node, run_id, cap_bytes, dropped_bytes } => {
                    self.log_capped(node, run_id, cap_bytes, dropped_bytes).await?
                }
                Report::Ended { run_id, outcome, .. } => {
                    self.processes.remove(&run_id);
                    let exit_code = match outcome {
                        AgentOutcome::Succeeded { exit_code, .. } | AgentOutcome::Failed { exit_code, .. } => exit_code,
                        AgentOutcome::TimedOut { exit_code, .. } | AgentOutcome::Cancelled { exit_code } => {
                            Some(exit_code)
                        }
                    };
                    exit_codes.entry(run_id).or_insert(exit_code);
                }
            }
        }
        for n in 0..self.runs.len() {
            let Some(run) = self.runs[n].take() else { continue };
            self.states[n] = NodeState::Pending;
            let exit_code = exit_codes.get(&run.run_id).copied().flatten();
            self.db
                .write(move |s| {
                    s.settle_attempt(
                        &run.run_id,
                        Settlement {
                            outcome: Outcome::Cancelled { exit_code },
                            node_state: Some(TaskState::Pending),
                            data: Vec::new(),
                        },
                    )
                })
                .await?;
        }
        Ok(())
    }
}
