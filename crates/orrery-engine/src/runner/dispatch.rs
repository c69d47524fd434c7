//! Dispatching a node: skip, fail to dispatch, or begin an attempt.

use super::*;

impl Runner {
    /// Dispatches one startable node: skip, fail to dispatch, or begin an attempt.
    pub(super) async fn start(&mut self, n: usize) -> Step {
        let (instance, task) = self.plan.tasks[n].clone();
        let instance_id = self.plan.instances[instance].id.clone();
        let context = self.plan.instances[instance].context.clone();
        // Read only when wanted: a read waits for the commit of the round before.
        let data = if task.inputs.is_empty() && task.effective_condition().is_none() {
            Data::new()
        } else {
            self.data_of(instance_id.clone()).await?
        };
        let inputs = match data::resolve_inputs(&task, &data) {
            Ok(inputs) => inputs,
            Err(e) => return self.dispatch_failed(n, e.to_string()).await,
        };
        let mut skip = self.states[n] == NodeState::SkipRequested;
        if !skip {
            if let Some((source, _)) = task.effective_condition() {
                let namespace = data::condition_namespace(&task, &inputs, &context, &data);
                let result = condition::parse(source)
                    .map_err(|e| e.to_string())
                    .and_then(|c| c.evaluate(&namespace).map_err(|e| e.to_string()));
                match result {
                    Ok(holds) => skip = !holds,
                    Err(e) => {
                        let message = format!("task '{}': cannot evaluate condition '{source}': {e}", self.key(n));
                        return self.dispatch_failed(n, message).await;
                    }
                }
            }
        }
        if skip {
            self.skip(n).await?;
            return Ok(None);
        }

        let interaction = interaction::interaction(task.task_type.as_str());
        let kind = match task.task_type.as_str() {
            name if self.broker.as_ref().is_some_and(|b| b.takes(name)) => RunKind::Broker,
            orrery_blueprint::TaskType::START | orrery_blueprint::TaskType::END => RunKind::Instant,
            orrery_blueprint::TaskType::SLEEP => RunKind::Sleep,
            orrery_blueprint::TaskType::COMPOSITE => RunKind::Composite,
            _ if interaction == Some(Interaction::Display) => RunKind::Instant,
            _ if interaction == Some(Interaction::Prompt) => RunKind::Prompt,
            _ => RunKind::Shell,
        };
        let kind = match kind {
            RunKind::Shell | RunKind::Broker | RunKind::Prompt | RunKind::Sleep if self.simulator.is_some() => {
                RunKind::Simulated
            }
            kind => kind,
        };
        let session = self.session_id.clone();
        let key = self.key(n);
        // The store numbers attempts too; the runner, sole owner of a new session, counts the
        // same way without a read, so the log can be named before the attempt begins.
        self.attempt_counts[n] += 1;
        let attempt_no = self.attempt_counts[n];
        let stem = self.work_dir.join(format!("{}.attempt-{attempt_no}", orrery_blueprint::fsio::file_name(&key)));
        let log_path = shell::attempt_file(&stem, "log");
        let input_sources = task
            .inputs
            .iter()
            .map(|i| InputSource {
                input: i.io.name.to_string(),
                instance: instance_id.clone(),
                key: i.source_key().to_string(),
            })
            .collect();
        let new = NewAttempt {
            agent: task.task_type.as_str().to_string(),
            log_path: (kind == RunKind::Shell).then(|| log_path.clone()),
            inputs: Some(Value::Object(inputs.clone())),
            process: None,
            input_sources,
            iterations: self.iterations_of(n),
            times_unknown: false,
        };
        let run_id = self.db.new_run_id();
        {
            let (session, key, run_id) = (session.clone(), key.clone(), run_id.clone());
            self.db.behind(move |s| Ok(s.begin_attempt_as(run_id, &session, &key, &new)?.1))?;
        }
        self.states[n] = NodeState::Running;
        let mut run =
            Run { run_id: run_id.clone(), kind, ended: None, canceller: None, sleep: None, cancel_on_start: false };
        match kind {
            RunKind::Instant => {
                let mut outputs = Map::new();
                // As the reference's system agents: the time it ran, in seconds since the epoch.
                let clock = match task.task_type.as_str() {
                    orrery_blueprint::TaskType::START => Some("process_start_time"),
                    orrery_blueprint::TaskType::END => Some("process_end_time"),
                    _ => None,
                };
                if let Some(key) = clock {
                    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
                    outputs.insert(key.to_string(), json!(now.as_secs_f64()));
                }
                if interaction == Some(Interaction::Display) {
                    let (shown, displayed) = interaction::display(&key, &task, &inputs, &context);
                    outputs = displayed;
                    self.publish(&run_id, EventData::Notification(shown)).await?;
                }
                run.ended = Some((None, outputs));
                self.states[n] = NodeState::Finishing;
            }
            RunKind::Prompt => {
                self.publish(&run_id, EventData::PromptWaiting(interaction::prompt(&key, &task, &inputs))).await?;
                let answers = self.answers.clone();
                let given = answers.as_ref().and_then(|a| a.get(&key, &task.id));
                match (given, answers) {
                    (Some(answer), _) => match interaction::answer_outputs(&task, answer) {
                        Ok(outputs) => {
                            let answered = PromptAnswered { node: key.clone(), outputs: outputs.clone() };
                            self.publish(&run_id, EventData::PromptAnswered(answered)).await?;
                            run.ended = Some((None, outputs));
                            self.states[n] = NodeState::Finishing;
                        }
                        Err(error) => {
                            self.runs[n] = Some(run);
                            return self.fail_run(n, task_error_record(&error), None).await;
                        }
                    },
                    (None, Some(answers)) if answers.when_unanswered() == WhenUnanswered::Wait => {
                        let tx = self.tx.clone();
                        let handle = tokio::spawn({
                            let (run_id, key, task) = (run_id.clone(), key.clone(), task.clone());
                            async move {
                                let answer = answers.wait(&key, &task.id).await;
                                let outcome = match interaction::answer_outputs(&task, answer) {
                                    Ok(outputs) => AgentOutcome::Succeeded { outputs, exit_code: None },
                                    Err(error) => AgentOutcome::Failed { error, exit_code: None },
                                };
                                let _ = tx.send(Report::Ended { node: n, run_id, outcome });
                            }
                        });
                        // Dropped like a sleep when the session stops or fails.
                        run.sleep = Some(handle.abort_handle());
                    }
                    (None, _) => {
                        self.runs[n] = Some(run);
                        let error = interaction::unanswered_error(&key);
                        return self.fail_run(n, task_error_record(&error), None).await;
                    }
                }
            }
            RunKind::Composite => {
                let inner = self.plan.instances.iter().position(|i| i.caller.is_some_and(|(_, c)| c == n));
                if let Some(inner) = inner {
                    let inner_id = self.plan.instances[inner].id.clone();
                    let values = data::composite_inputs(&inputs);
                    if !values.is_empty() {
                        let composite_run = run_id.clone();
                        self.db
                            .write(move |s| {
                                let refs: Vec<(&str, Value)> =
                                    values.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
                                Ok(vec![s.put_data_from(&session, &inner_id, &refs, Some(&composite_run))?])
                            })
                            .await?;
                    }
                }
                self.states[n] = NodeState::Finishing;
            }
            RunKind::Sleep => {
                let seconds = match task.param_value("duration") {
                    None | Some(Value::Null) => Ok(1.0),
                    Some(v) => v.as_f64().filter(|s| s.is_finite() && *s >= 0.0).ok_or_else(|| {
                        TaskError::binding(
                            "duration",
                            format!("param 'duration' must be a number of seconds >= 0, got {v}"),
                        )
                    }),
                };
                let tx = self.tx.clone();
                let handle = tokio::spawn({
                    let run_id = run_id.clone();
                    async move {
                        let outcome = match seconds {
                            Ok(s) => {
                                tokio::time::sleep(Duration::from_secs_f64(s)).await;
                                AgentOutcome::Succeeded { outputs: Map::new(), exit_code: None }
                            }
                            Err(error) => AgentOutcome::Failed { error, exit_code: None },
                        };
                        let _ = tx.send(Report::Ended { node: n, run_id, outcome });
                    }
                });
                run.sleep = Some(handle.abort_handle());
            }
            RunKind::Broker => {
                let Some(options) = self.broker.clone() else { unreachable!("a broker run needs a broker") };
                let policy = match broker::policy_for(&task, &options.policy) {
                    Ok(policy) => policy,
                    Err(error) => {
                        self.runs[n] = Some(run);
                        return self.fail_run(n, task_error_record(&error), None).await;
                    }
                };
                let assignment = orrery_broker::Assignment {
                    id: format!("{key}@{}", run_id.as_str()),
                    task_type: task.task_type.as_str().to_string(),
                    inputs,
                    params: broker::params_of(&task),
                    output_keys: task.outputs.iter().map(|o| o.io.name.to_string()).collect(),
                    context,
                    mode: broker::mode_of(&task),
                };
                let tx = self.tx.clone();
                let handle = tokio::spawn({
                    let run_id = run_id.clone();
                    async move {
                        let steps = tx.clone();
                        let on_progress = |progress| {
                            let _ = steps.send(Report::Dispatch { node: n, run_id: run_id.clone(), progress });
                        };
                        let outcome = match options.dispatcher.execute(assignment, &policy, on_progress).await {
                            Ok(ending) => broker::outcome(ending),
                            Err(e) => AgentOutcome::Failed {
                                error: TaskError::new(
                                    ErrorCode::LauncherFailure,
                                    format!("{e} (broker {})", options.dispatcher.address()),
                                ),
                                exit_code: None,
                            },
                        };
                        let _ = tx.send(Report::Ended { node: n, run_id, outcome });
                    }
                });
                // Dropped like a sleep when the session stops or fails: the agents are told.
                run.sleep = Some(handle.abort_handle());
            }
            RunKind::Simulated => {
                let Some(simulator) = self.simulator.as_mut() else {
                    unreachable!("a simulated run needs a simulator")
                };
                let simulation::Simulated { outcome, after } = simulator.attempt(n, attempt_no, &key);
                let tx = self.tx.clone();
                let run_id = run_id.clone();
                match after {
                    None => {
                        let _ = tx.send(Report::Ended { node: n, run_id, outcome });
                    }
                    Some(after) => {
                        let handle = tokio::spawn(async move {
                            tokio::time::sleep(after).await;
                            let _ = tx.send(Report::Ended { node: n, run_id, outcome });
                        });
                        // Dropped like a sleep when the session stops or fails.
                        run.sleep = Some(handle.abort_handle());
                    }
                }
            }
            RunKind::Shell => {
                let params = broker::params_of(&task);
                let mut attempt = shell::ShellAttempt::new(params, inputs, stem, log_path.clone());
                attempt.run_id = Some(run_id.as_str().to_string());
                attempt.session_id = Some(self.session_id.clone());
                self.processes.insert(run_id.clone());
                // Spawned by `launch`, once this round of decisions is over.
                self.launches.push(Launch { node: n, run_id: run_id.clone(), attempt, log_path });
            }
        }
        self.runs[n] = Some(run);
        Ok(None)
    }

    /// Spawns the processes of the attempts begun since the last launch, then commits what was
    /// written (their attempts with it) behind the runner while they start
    /// ([`Db::commit_behind`]): the runner waits for the next report meanwhile. A crash between
    /// the two leaves processes the store does not know; they carry the session's id, by which
    /// recovery stops them (see [`super::recovery`]). So a process never waits for SQLite to
    /// start: its attempt was begun behind the runner too ([`Db::behind`]).
    ///
    /// Each attempt is run here up to its first wait (its files made, its supervisor asked
    /// for), and only then handed to a task of its own: the commit's writes would otherwise
    /// take the core its supervisor's fork waits for.
    pub(super) fn launch(&mut self) {
        for Launch { node, run_id, attempt, log_path } in std::mem::take(&mut self.launches) {
            let tx = self.tx.clone();
            let (started, progress) = self.shell_reports(node, &run_id, log_path);
            let mut run = Box::pin(async move {
                let end = shell::run_attempt(attempt, started, progress).await;
                report_end(&tx, node, run_id, end);
            });
            // Polled again, with its own waker, by the task.
            let mut here = std::task::Context::from_waker(std::task::Waker::noop());
            if std::future::Future::poll(run.as_mut(), &mut here).is_pending() {
                tokio::spawn(run);
            }
        }
        self.db.commit_behind();
    }

    /// Goes on with the attempts a dead runner left (see [`super::recovery`]): each is a
    /// `shell.run` run in flight whose end comes from its exit record.
    pub(super) fn adopt(&mut self, adopted: Vec<super::recovery::Adopted>) {
        for super::recovery::Adopted { node, run_id, adoption } in adopted {
            self.runs[node] = Some(Run {
                run_id: run_id.clone(),
                kind: RunKind::Shell,
                ended: None,
                canceller: None,
                sleep: None,
                cancel_on_start: false,
            });
            self.states[node] = NodeState::Running;
            self.processes.insert(run_id.clone());
            let tx = self.tx.clone();
            let (started, _) = self.shell_reports(node, &run_id, adoption.log_path.clone());
            tokio::spawn(async move {
                let end = shell::adopt(adoption, started).await;
                report_end(&tx, node, run_id, end);
            });
        }
    }

    /// What a `shell.run` task reports while it runs: its start and its progress lines.
    fn shell_reports(
        &self,
        node: usize,
        run_id: &RunId,
        log_path: PathBuf,
    ) -> (impl FnOnce(shell::Started) + Send + 'static, impl FnMut(ProgressEvent) + Send + 'static) {
        let (started_tx, started_run) = (self.tx.clone(), run_id.clone());
        let (progress_tx, progress_run) = (self.tx.clone(), run_id.clone());
        let started = move |started: shell::Started| {
            let process = ProcessIdentity { pid: started.pid, start_time: started.start_time };
            let _ = started_tx.send(Report::Started {
                node,
                run_id: started_run,
                process,
                canceller: started.canceller,
                environment: started.environment,
            });
        };
        let progress = move |progress| match progress {
            ProgressEvent::Report(line) => {
                let _ = progress_tx.send(Report::Progress { node, run_id: progress_run.clone(), line });
            }
            ProgressEvent::Warning(warning) => log_warning(&log_path, &warning.message),
        };
        (started, progress)
    }

    /// The iteration of each looping scope holding `n` for an attempt beginning now.
    fn iterations_of(&self, n: usize) -> Vec<ScopeIteration> {
        scopes::iterations_of(&self.plan, &self.scopes, n, |scope| {
            self.iterations.get(&scope.start).copied().unwrap_or(0)
        })
    }

    /// Appends an event for the attempt `run_id`, announced once committed.
    pub(super) async fn publish(&self, run_id: &RunId, data: EventData) -> Result<(), RunError> {
        let session = self.session_id.clone();
        let event = NewEvent { run_id: Some(run_id.clone()), data };
        self.db.write(move |s| Ok(vec![s.append_event(&session, &event, None)?])).await
    }

    /// A node that cannot dispatch (its inputs or condition): it fails, and so does the
    /// session. The failure is an attempt of its own, begun and settled at once, so a timeline
    /// shows it where it happened, with its error.
    pub(super) async fn dispatch_failed(&mut self, n: usize, message: String) -> Step {
        let error = ErrorRecord::new(ErrorCode::TaskDispatchFailed, message);
        self.attempt_counts[n] += 1;
        self.states[n] = NodeState::Failed;
        let (session, key, record) = (self.session_id.clone(), self.key(n), error.clone());
        let new = NewAttempt {
            agent: self.plan.tasks[n].1.task_type.as_str().to_string(),
            log_path: None,
            inputs: None,
            process: None,
            input_sources: Vec::new(),
            iterations: self.iterations_of(n),
            times_unknown: false,
        };
        self.db
            .write(move |s| {
                let (attempt, mut events) = s.begin_attempt(&session, &key, &new)?;
                events.extend(s.settle_attempt(
                    &attempt.run_id,
                    Settlement {
                        outcome: Outcome::Failed { exit_code: None, error: record },
                        node_state: Some(TaskState::Failed),
                        data: Vec::new(),
                    },
                )?);
                Ok(events)
            })
            .await?;
        Ok(Some(error))
    }

    /// Skips a node and its cascade; each writes its declared output defaults.
    pub(super) async fn skip(&mut self, n: usize) -> Result<(), RunError> {
        let cascade = scopes::skip_cascade(&self.plan, &self.scopes, n);
        let mut states = self.states.to_vec();
        states[n] = NodeState::Skipped;
        let mut skipped = vec![n];
        skipped.extend(scopes::apply_skip(&mut states, &cascade));
        // Each instance's data as the writes so far leave it: skipped dynamic elements merge
        // into what is there.
        // (instance, its data with the writes so far, the writes)
        type Writes = (String, Data, Vec<(String, Value)>);
        let mut by_instance: Vec<Writes> = Vec::new();
        for &s in &skipped {
            let instance = self.instance_id(s);
            let i = match by_instance.iter().position(|(id, _, _)| *id == instance) {
                Some(i) => i,
                None => {
                    let data = self.data_of(instance.clone()).await?;
                    by_instance.push((instance, data, Vec::new()));
                    by_instance.len() - 1
                }
            };
            let (_, data, writes) = &mut by_instance[i];
            for (k, v) in data::skipped_outputs(&self.plan.tasks[s].1, data) {
                data.insert(k.clone(), v.clone());
                writes.push((k, v));
            }
        }
        self.set_states(skipped.iter().map(|&s| (s, NodeState::Skipped)).collect()).await?;
        let session = self.session_id.clone();
        let by_instance: Vec<(String, Vec<(String, Value)>)> =
            by_instance.into_iter().filter(|(_, _, w)| !w.is_empty()).map(|(i, _, w)| (i, w)).collect();
        if by_instance.is_empty() {
            return Ok(());
        }
        self.db
            .write(move |s| {
                let mut events = Vec::new();
                for (instance, values) in &by_instance {
                    let refs: Vec<(&str, Value)> = values.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
                    events.push(s.put_data(&session, instance, &refs)?);
                }
                Ok(events)
            })
            .await
    }
}

/// Sends the end of a `shell.run` run: first that its log was capped, if it was.
fn report_end(tx: &mpsc::UnboundedSender<Report>, node: usize, run_id: RunId, end: shell::ShellEnd) {
    if let Some(log) = end.log.filter(|l| l.is_capped()) {
        let capped = Report::LogCapped { node, run_id: run_id.clone(), cap_bytes: log.cap, dropped_bytes: log.dropped };
        let _ = tx.send(capped);
    }
    let _ = tx.send(Report::Ended { node, run_id, outcome: end.outcome });
}
