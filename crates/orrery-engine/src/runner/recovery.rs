//! Resume, restart and crash recovery.
//!
//! [`resume_session`] goes on with a stored session from the store alone, after a stop, a
//! failure (retry from failure) or a crash of the process that ran it. [`restart_session`] runs
//! it over as a new session (same blueprint versions, same params). [`interrupted_sessions`]
//! lists what a crash left behind (`running` or `pending` with no live runner): `orrery
//! sessions` shows them `interrupted`, `orrery recover` resumes them; the app will do the same
//! when it opens a store.
//!
//! - **Lease.** A runner takes its session's lease (its token, its process's pid and start
//!   time) when it creates or resumes the session and lets go when it ends, whatever happened.
//!   Resuming a session whose lease a live runner holds is refused ([`StoreError::Leased`]);
//!   a lease whose process is gone is taken over.
//!
//! - **What is stored for it.** The root blueprint version is the session's `blueprint_hash`;
//!   the versions of the inner blueprints the plan uses are stored too (`blueprint_versions`)
//!   and linked to the session by a `session_blueprints` event appended right after
//!   `session_created` (no new table: the event log is the session's own append-only record,
//!   and the link is written once). The plan is rebuilt from these versions and the stored
//!   session params, so it is the plan the session started with. A session with no link event
//!   resumes with its root only (enough unless it has composites).
//! - **States accepted.** `running` (a crash), `stopped`, `failed` and `pending` (a crash
//!   before it ran); `completed` is refused ([`RunError::NotResumable`]). An unknown session is
//!   [`StoreError::NotFound`].
//! - **Attempts left `running`.** A `shell.run` process runs under a supervisor of its own that
//!   outlives the runner and records the process's exit durably beside the attempt's files
//!   (a line of the folder's records file named by the attempt's stem,
//!   [`crate::process::supervisor`]). So each attempt left `running` is, in order:
//!   - *adopted* when its process is still run by a live supervisor (the recorded pid and
//!     start time, or, when the runner died before recording them, the group leader carrying
//!     the attempt's `ORRERY_RUN_ID`, [`crate::process::supervised_leader`]; a leader that has
//!     just exited, whose environment cannot be read, by the memory file named after its log
//!     that its supervisor holds, [`crate::process::supervisor_of_log`]): the resumed runner
//!     keeps the attempt and its node RUNNING and waits for the record instead of killing the
//!     process ([`shell::adopt`]); a stop or a cancel of the resumed session stops it as any
//!     other (TERM, grace, KILL of its group); its `timeout_s` still runs from the attempt's
//!     start (what is left of it, none if it expired meanwhile);
//!   - *settled from its record* when the record is there (the process finished while no
//!     runner lived): the same adoption, whose record is read at once, so the outcome is the
//!     one the runner would have given (its outputs file read, its log kept) and lands through
//!     the usual path (a success waits for FF/SF like any run). The leader is looked for before
//!     the record: a supervisor writes the record before it reaps the leader, so no exit falls
//!     between the two looks;
//!   - *cancelled* when its record says its runner cancelled it (a stop, a failure of the
//!     session) and died before settling it: settled `cancelled`, its node back to PENDING, as
//!     the runner would have;
//!   - otherwise *its outcome cannot be known*, as before supervisors: by its recorded process
//!     ([`is_alive`]) still alive but orphaned (its supervisor was killed): its process group
//!     gets SIGTERM, the grace period, then SIGKILL, and the attempt is settled `cancelled` (no
//!     exit code: it is not our child); then every process whose environment holds the
//!     attempt's `ORRERY_RUN_ID` is stopped the same way (a process the runner spawned but died
//!     before recording, a grandchild that left the group). Any found: settled `cancelled`.
//!     *Gone* (none found): settled `unknown` with a `TASK_FAILED` error saying its outcome
//!     cannot be known; an unreadable record is `unknown` too, the error naming the file.
//!     Either way its steps left in progress become `unknown` and its node goes back to
//!     PENDING, to run again as a new attempt.
//!
//!   Last, every process that carries the session's `ORRERY_SESSION_ID` is stopped, but those
//!   of adopted attempts: the runner starts a process before the commit of its attempt lands
//!   (so that no process waits for an fsync), and a crash in between leaves a process no
//!   attempt names.
//! - **Node states** come from `task_nodes`: SUCCEEDED, SKIPPED and SKIP_REQUESTED stay; every
//!   other state (PENDING, READY, RUNNING, FAILED: docs/format.md §4's retry from failure)
//!   becomes PENDING. Only the nodes whose state changes are written. Attempt numbers go on
//!   from the store's, scope counters are read back from the store, and session data is left
//!   as stored. Then the session is set RUNNING and the usual loop runs.
//!

use super::*;

/// Resumes a session of the store at `store_path` from what the store alone holds (see the
/// module notes on recovery): settles the attempts a crash left `running`, puts every
/// unfinished node back to PENDING and runs the session on to completion, failure or a stop.
/// A `completed` session is refused ([`RunError::NotResumable`]).
pub async fn resume_session(store_path: &Path, session_id: &str, options: RunOptions) -> Result<RunReport, RunError> {
    let db = Db::open(store_path, &options).await?;
    let (session, root_version, inner_versions) = stored_versions(&db, session_id).await?;
    if session.state == SessionState::Completed {
        return Err(RunError::NotResumable { session_id: session.id, state: session.state });
    }
    let plan = plan_from_versions(&session, &root_version, &inner_versions)?;
    // A simulated session goes on simulated, as it was started.
    let simulator = match &session.simulation {
        Some(simulation) => Some(Simulator::resolve(&plan, simulation, &db).await?),
        None => {
            check_agents(&plan, options.broker.as_ref())?;
            None
        }
    };
    let holds = breakpoints::resolve(&plan, &options.breakpoints, options.hold_on_failure)?;

    // Refused while another runner drives the session; from here on, the session is ours.
    db.take_lease(&session.id).await?;
    match settle_interrupted(&db, &session, &plan, &options.work_dir.join(&session.id)).await {
        Ok((states, initial, attempt_counts, iterations, adopted)) => {
            let mut runner = Runner::new(session.id.clone(), plan, db, &options, attempt_counts, iterations, holds);
            runner.simulator = simulator;
            runner.states = states_of(&runner.plan, states);
            runner.adopt(adopted);
            runner.run(initial).await
        }
        Err(e) => {
            db.abandon().await;
            db.release_lease(&session.id).await?;
            Err(e)
        }
    }
}

/// A stored session with its root and inner blueprint versions.
async fn stored_versions(
    db: &Db,
    session_id: &str,
) -> Result<(orrery_store::Session, orrery_store::BlueprintVersion, Vec<orrery_store::BlueprintVersion>), RunError> {
    let sid = session_id.to_string();
    db.read(move |s| read_versions(s, &sid)).await
}

fn read_versions(
    store: &Store,
    session_id: &str,
) -> Result<(orrery_store::Session, orrery_store::BlueprintVersion, Vec<orrery_store::BlueprintVersion>), StoreError> {
    let session = store.session(session_id)?;
    let root = store.blueprint_version(&session.blueprint_hash)?;
    let mut inner = Vec::new();
    for hash in inner_links(store, session_id)? {
        inner.push(store.blueprint_version(&hash)?);
    }
    Ok((session, root, inner))
}

/// Whether a runner whose process lives drives `session_id`. A session `running` or `pending`
/// without one was interrupted (its runner crashed): [`resume_session`] goes on with it.
pub fn is_driven(store: &Store, session_id: &str) -> Result<bool, StoreError> {
    Ok(store.lease(session_id)?.is_some_and(|l| is_alive(l.process.pid, l.process.start_time)))
}

/// The sessions of the store that were interrupted: `running` or `pending` with no live runner,
/// oldest first. What a program that opens a store (the app, `orrery recover`) resumes.
pub fn interrupted_sessions(store: &Store) -> Result<Vec<orrery_store::Session>, StoreError> {
    let mut found = Vec::new();
    for state in [SessionState::Running, SessionState::Pending] {
        let filter = orrery_store::SessionFilter { state: Some(state), ..Default::default() };
        for session in store.sessions(&filter)? {
            // A mirror of a server's session is driven there.
            if session.remote.is_none() && !is_driven(store, &session.id)? {
                found.push(session);
            }
        }
    }
    found.sort_by_key(|s| s.created_ms);
    Ok(found)
}

/// Node states to go on from.
type Resumed = (Vec<NodeState>, Vec<(usize, NodeState)>, Vec<u32>, HashMap<usize, u32>, Vec<Adopted>);

/// An attempt left `running` that the resumed runner goes on with (see the module notes).
pub(super) struct Adopted {
    pub node: usize,
    pub run_id: RunId,
    pub adoption: shell::Adoption,
}

/// The stem of attempt `attempt_no` of node `key`, as [`Runner::start`] names it.
fn attempt_stem(work_dir: &Path, key: &str, attempt_no: u32) -> PathBuf {
    work_dir.join(format!("{}.attempt-{attempt_no}", orrery_blueprint::fsio::file_name(key)))
}

/// See [`settle_interrupted`]: the attempts whose process finished by itself (its record says
/// an exit code, and no stop on purpose) but which never landed in the store, begun now (its
/// inputs read back from its inputs file) and adopted. Nodes done, or with an attempt that was
/// left `running` (the next attempt number is theirs), are left out.
async fn adopt_unlanded(
    db: &Db,
    session: &orrery_store::Session,
    plan: &SessionPlan,
    work_dir: &Path,
    adopted: &HashSet<usize>,
    settled: &HashSet<String>,
) -> Result<Vec<Adopted>, RunError> {
    let sid = session.id.clone();
    let (nodes, attempts) = db.call(move |s| Ok((s.task_nodes(&sid)?, s.attempts(&sid)?))).await?;
    let mut found = Vec::new();
    for (n, node) in plan.graph.nodes.iter().enumerate() {
        let (instance, task) = &plan.tasks[n];
        if task.task_type.as_str() != shell::TYPE || adopted.contains(&n) || settled.contains(&node.key) {
            continue;
        }
        let state = nodes.iter().find(|s| s.node == node.key).map(|s| s.state);
        if matches!(state, Some(TaskState::Succeeded | TaskState::Skipped | TaskState::SkipRequested)) {
            continue;
        }
        let next = attempts.iter().filter(|a| a.node == node.key).map(|a| a.attempt).max().unwrap_or(0) + 1;
        let stem = attempt_stem(work_dir, &node.key, next);
        let stem = std::path::absolute(&stem).unwrap_or(stem);
        // Its run id is not known: the last process started under the stem is the one.
        let read_record = || crate::process::supervisor::read_record(&stem, None);
        // A supervisor still at work on it (its leader just ended, or was stopped by the sweep
        // above): its record comes in a moment.
        let until = std::time::Instant::now() + crate::process::DEFAULT_GRACE;
        while matches!(read_record(), Ok(None))
            && std::time::Instant::now() < until
            && crate::process::supervisor_of_log(&shell::attempt_file(&stem, "log")).is_some()
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let Ok(Some(record)) = read_record() else {
            continue;
        };
        let (Some(run_id), Some(_), None) = (record.run_id.clone(), record.code, record.stopped.as_ref()) else {
            continue;
        };
        let inputs = std::fs::read(shell::attempt_file(&stem, shell::INPUTS_FILE))
            .ok()
            .and_then(|bytes| orrery_blueprint::json::from_slice::<Value>(&bytes).ok())
            .unwrap_or_else(|| json!({}));
        let instance_id = plan.instances[*instance].id.clone();
        // It ran before the crash, in the passes the store's counters still say.
        let index = ScopeIndex::new(plan);
        let holding: Vec<(String, String)> =
            index.loops_holding(n).map(|sc| (plan.instances[sc.instance].id.clone(), sc.key.clone())).collect();
        let sid = session.id.clone();
        let passes = db
            .call(move |s| holding.iter().map(|(instance, key)| s.scope_iterations(&sid, instance, key)).collect())
            .await?;
        let mut passes: std::vec::IntoIter<u32> = Vec::into_iter(passes);
        let iterations = scopes::iterations_of(plan, &index, n, |_| passes.next().unwrap_or(0));
        let new = NewAttempt {
            agent: shell::TYPE.to_string(),
            log_path: Some(shell::attempt_file(&stem, "log")),
            inputs: Some(inputs),
            process: None,
            input_sources: task
                .inputs
                .iter()
                .map(|i| InputSource {
                    input: i.io.name.to_string(),
                    instance: instance_id.clone(),
                    key: i.source_key().to_string(),
                })
                .collect(),
            iterations,
            times_unknown: false,
        };
        let (sid, key) = (session.id.clone(), node.key.clone());
        let (attempt, events) = db.call(move |s| s.begin_attempt(&sid, &key, &new)).await?;
        db.announce(events);
        let adoption = shell::Adoption {
            params: broker::params_of(task),
            log_path: shell::attempt_file(&stem, "log"),
            stem,
            run_id,
            leader: None,
            grace: crate::process::DEFAULT_GRACE,
            started_ms: None,
        };
        found.push(Adopted { node: n, run_id: attempt.run_id, adoption });
    }
    Ok(found)
}

/// Whether an interrupted attempt can be adopted: a `shell.run` attempt whose process a live
/// supervisor still runs, or whose exit record is there. An unreadable record is an error
/// naming it.
fn adoption_of(attempt: &orrery_store::Attempt, plan: &SessionPlan) -> Result<Option<Adopted>, String> {
    let Some(node) = plan.node(&attempt.node) else { return Ok(None) };
    let task = &plan.tasks[node].1;
    if attempt.agent != shell::TYPE || task.task_type.as_str() != shell::TYPE {
        return Ok(None);
    }
    let Some(log_path) = attempt.log_path.clone() else { return Ok(None) };
    let Some(stem) = shell::stem_of_log(&log_path) else { return Ok(None) };
    // The leader first, then the record (see the module notes).
    let leader = attempt
        .process
        .map(|p| (p.pid, p.start_time))
        .filter(|&(pid, start_time)| crate::process::has_supervisor(pid, start_time))
        .or_else(|| crate::process::supervised_leader(shell::RUN_ID_VAR, attempt.run_id.as_str()))
        // A leader that has just exited (a zombie: its environment cannot be read any more)
        // while its supervisor writes the record: found by the mark of the log its supervisor
        // holds.
        .or_else(|| crate::process::supervisor_of_log(&log_path).and_then(|(_, leader)| leader));
    let found = crate::process::supervisor::read_record(&stem, Some(attempt.run_id.as_str()))?;
    // Its runner cancelled it (a stop, a failure) and died before settling it: as before.
    if leader.is_none() && found.as_ref().is_some_and(|r| r.exit() == crate::process::Exit::Cancelled) {
        return Ok(None);
    }
    if leader.is_none() && found.is_none() {
        return Ok(None);
    }
    let adoption = shell::Adoption {
        params: broker::params_of(task),
        stem,
        log_path,
        run_id: attempt.run_id.as_str().to_string(),
        leader,
        grace: crate::process::DEFAULT_GRACE,
        started_ms: Some(attempt.started_ms),
    };
    Ok(Some(Adopted { node, run_id: attempt.run_id.clone(), adoption }))
}

/// Settles the attempts an interrupted runner left `running`, and reads back where the session
/// stands: node states (and those to write), attempt numbers, scope counters.
async fn settle_interrupted(
    db: &Db,
    session: &orrery_store::Session,
    plan: &SessionPlan,
    work_dir: &Path,
) -> Result<Resumed, RunError> {
    // Settle what a crash (or a runner that is gone) left running.
    let sid = session.id.clone();
    let running: Vec<orrery_store::Attempt> =
        db.call(move |s| Ok(s.running_attempts()?.into_iter().filter(|a| a.session_id == sid).collect())).await?;
    // Not holding the store's write lock through the grace periods below.
    db.flush().await?;
    // Adopted: a live supervisor runs it, or its record is there.
    let mut adopted = Vec::new();
    let mut unreadable: HashMap<RunId, String> = HashMap::new();
    let cancelled_by_record = |attempt: &orrery_store::Attempt| {
        let stem = attempt.log_path.as_deref().and_then(shell::stem_of_log);
        stem.and_then(|stem| {
            crate::process::supervisor::read_record(&stem, Some(attempt.run_id.as_str())).ok().flatten()
        })
        .is_some_and(|r| r.exit() == crate::process::Exit::Cancelled)
    };
    let mut left = Vec::with_capacity(running.len());
    for attempt in running {
        match adoption_of(&attempt, plan) {
            Ok(Some(a)) => adopted.push(a),
            Ok(None) => left.push(attempt),
            Err(message) => {
                unreadable.insert(attempt.run_id.clone(), message);
                left.push(attempt);
            }
        }
    }
    let running = left;
    // Which attempts still had a process: the one recorded, or any carrying its run id (the
    // runner died before recording it, or a grandchild left the group).
    let mut had_process = Vec::with_capacity(running.len());
    for attempt in &running {
        let alive = attempt.process.filter(|p| is_alive(p.pid, p.start_time));
        if let Some(process) = alive {
            crate::process::terminate_group(process.pid, process.start_time).await;
        }
        let tagged = crate::process::terminate_tagged(shell::RUN_ID_VAR, attempt.run_id.as_str()).await;
        had_process.push(alive.is_some() || tagged > 0 || cancelled_by_record(attempt));
    }
    // Then whatever else the session's runner left: a process it spawned for an attempt whose
    // start it had not committed yet.
    let spared: Vec<String> = adopted.iter().map(|a| a.adoption.run_id.clone()).collect();
    crate::process::terminate_tagged_except(shell::SESSION_ID_VAR, &session.id, shell::RUN_ID_VAR, &spared).await;
    // Then the processes whose attempt never landed (the runner died between their spawn and
    // its commit) that finished by themselves meanwhile: their record is at the stem of the
    // node's next attempt. Such an attempt is begun now and adopted (settled from its record).
    let adopted_nodes: HashSet<usize> = adopted.iter().map(|a| a.node).collect();
    let settled_nodes: HashSet<String> = running.iter().map(|a| a.node.clone()).collect();
    adopted.extend(adopt_unlanded(db, session, plan, work_dir, &adopted_nodes, &settled_nodes).await?);
    for (attempt, had_process) in running.into_iter().zip(had_process) {
        let outcome = if let Some(message) = unreadable.get(&attempt.run_id) {
            Outcome::Unknown {
                error: ErrorRecord::new(
                    ErrorCode::TaskFailed,
                    format!(
                        "attempt {} of task '{}' was interrupted and its outcome cannot be known: {message}",
                        attempt.attempt, attempt.node
                    ),
                ),
            }
        } else if had_process {
            Outcome::Cancelled { exit_code: None }
        } else {
            Outcome::Unknown {
                error: ErrorRecord::new(
                    ErrorCode::TaskFailed,
                    format!(
                        "attempt {} of task '{}' was interrupted and its process is gone: its outcome cannot be known",
                        attempt.attempt, attempt.node
                    ),
                ),
            }
        };
        let run_id = attempt.run_id.clone();
        db.write(move |s| {
            s.mark_unknown_in_progress(&run_id)?;
            s.settle_attempt(&run_id, Settlement { outcome, node_state: Some(TaskState::Pending), data: Vec::new() })
        })
        .await?;
    }

    // Node states, attempt numbers and scope counters from the store.
    let scopes = ScopeIndex::new(plan);
    let counters: Vec<(usize, String, String)> =
        scopes.scopes().iter().map(|sc| (sc.start, plan.instances[sc.instance].id.clone(), sc.key.clone())).collect();
    let sid = session.id.clone();
    let (stored_nodes, attempts, counts) = db
        .call(move |s| {
            let nodes = s.task_nodes(&sid)?;
            let attempts = s.attempts(&sid)?;
            let mut counts = Vec::new();
            for (start, instance, key) in &counters {
                counts.push((*start, s.scope_iterations(&sid, instance, key)?));
            }
            Ok((nodes, attempts, counts))
        })
        .await?;
    let stored: HashMap<&str, TaskState> = stored_nodes.iter().map(|n| (n.node.as_str(), n.state)).collect();
    let mut attempt_counts = vec![0u32; plan.graph.nodes.len()];
    for attempt in &attempts {
        if let Some(n) = plan.node(&attempt.node) {
            attempt_counts[n] = attempt_counts[n].max(attempt.attempt);
        }
    }
    let iterations: HashMap<usize, u32> = counts.into_iter().filter(|(_, c)| *c > 0).collect();
    let mut initial = Vec::new();
    let mut states = Vec::with_capacity(plan.graph.nodes.len());
    for (n, node) in plan.graph.nodes.iter().enumerate() {
        let state = match stored.get(node.key.as_str()) {
            // Its attempt goes on (adopted): still running.
            _ if adopted.iter().any(|a| a.node == n) => NodeState::Running,
            Some(TaskState::Succeeded) => NodeState::Succeeded,
            Some(TaskState::Skipped) => NodeState::Skipped,
            Some(TaskState::SkipRequested) => NodeState::SkipRequested,
            // PENDING, READY, RUNNING (interrupted) and FAILED (retry from failure).
            _ => NodeState::Pending,
        };
        states.push(state);
        if stored.get(node.key.as_str()).copied() != Some(store_state(state)) {
            initial.push((states.len() - 1, state));
        }
    }
    Ok((states, initial, attempt_counts, iterations, adopted))
}

/// A blueprint instance of a session, as its plan has it: the root, and one per composite
/// (per element for a dynamic one).
#[derive(Debug, Clone, PartialEq, serde::Serialize, schemars::JsonSchema)]
pub struct InstanceInfo {
    /// `"{blueprint}"` for the root, `"{inner blueprint}_{composite task}"` for an inner one.
    pub id: String,
    pub blueprint_id: String,
    /// The composite node that runs it; none for the root.
    pub composite: Option<String>,
    /// What a dynamic element gives its namespace (`element_id`, ...); empty otherwise.
    pub context: Map<String, Value>,
}

/// The blueprint instances of a stored session, the root first, each inner one under its
/// composite.
pub fn session_instances(store: &Store, session_id: &str) -> Result<Vec<InstanceInfo>, RunError> {
    let (_, plan) = load_stored_plan(store, session_id)?;
    Ok(plan
        .instances
        .iter()
        .map(|i| InstanceInfo {
            id: i.id.clone(),
            blueprint_id: i.blueprint_id.clone(),
            composite: i.caller.map(|(_, node)| plan.graph.nodes[node].key.clone()),
            context: i.context.clone(),
        })
        .collect())
}

/// The flattened plan of a stored session, rebuilt from its stored blueprint versions and
/// params: each node's task and instance, as its runner (or a mirror's follower) sees them.
pub fn session_plan(store: &Store, session_id: &str) -> Result<SessionPlan, RunError> {
    Ok(load_stored_plan(store, session_id)?.1)
}

/// The blueprint versions a stored session runs: its root, then the inner blueprints its
/// composites call, exactly as they were when it started (what a run view draws).
pub fn session_blueprints(
    store: &Store,
    session_id: &str,
) -> Result<(orrery_store::BlueprintVersion, Vec<orrery_store::BlueprintVersion>), StoreError> {
    let (_, root, inner) = read_versions(store, session_id)?;
    Ok((root, inner))
}

/// Reads a stored session and rebuilds its plan from the store alone (see the module notes on
/// resume): what [`resume_session`] and the interventions ([`crate::interventions`]) start from.
pub(crate) fn load_stored_plan(
    store: &Store,
    session_id: &str,
) -> Result<(orrery_store::Session, SessionPlan), RunError> {
    let (session, root, inner) = read_versions(store, session_id)?;
    let plan = plan_from_versions(&session, &root, &inner)?;
    Ok((session, plan))
}

/// The session's plan from its stored root and inner blueprint versions and its stored params.
fn plan_from_versions(
    session: &orrery_store::Session,
    root_version: &orrery_store::BlueprintVersion,
    inner_versions: &[orrery_store::BlueprintVersion],
) -> Result<SessionPlan, RunError> {
    let (root, blueprints) = blueprints_from_versions(root_version, inner_versions)?;
    let lib: Library = blueprints.iter().collect();
    let params = session.params.as_object().cloned().unwrap_or_default();
    Ok(plan::build(&root, &lib, &params)?)
}

/// The stored root blueprint, validated, and every stored blueprint (root first).
fn blueprints_from_versions(
    root_version: &orrery_store::BlueprintVersion,
    inner_versions: &[orrery_store::BlueprintVersion],
) -> Result<(ValidBlueprint, Vec<Blueprint>), RunError> {
    let mut blueprints = Vec::new();
    for version in std::iter::once(root_version).chain(inner_versions) {
        let loaded = orrery_blueprint::load(&version.canonical_json).map_err(|e| RunError::StoredBlueprint {
            hash: version.hash.clone(),
            message: e.diagnostics.first().map_or_else(|| "it does not load".to_string(), ToString::to_string),
        })?;
        blueprints.push(loaded.blueprint);
    }
    let lib: Library = blueprints.iter().collect();
    let root = ValidBlueprint::new(blueprints[0].clone(), &lib).map_err(|d| RunError::StoredBlueprint {
        hash: root_version.hash.clone(),
        message: d.iter().find(|d| d.is_error()).map_or_else(|| "it is not valid".to_string(), ToString::to_string),
    })?;
    Ok((root, blueprints))
}

/// What [`restart_session`] runs, and what it keeps of the session it restarts.
#[derive(Debug, Default)]
pub struct Restart {
    /// A blueprint to run instead of the versions the session ran (its file as saved since),
    /// with the blueprints its composites may call; `None`: the exact versions it ran.
    pub blueprint: Option<(ValidBlueprint, Vec<Blueprint>)>,
    /// Keep what the session finished and what the new plan would compute the same way (see
    /// [`kept`](super::kept)): a retry from failure as a new session. Otherwise everything runs.
    pub keep_done: bool,
    /// Run from this task (`"{instance}.{task}"`, or a task id of the root blueprint): keep what
    /// the session finished as `keep_done` does, but not this task nor anything after it, which
    /// run again. Implies `keep_done`.
    pub from: Option<String>,
}

/// Starts a stored session over as a new session, with its params: the exact blueprint versions
/// it ran (root and inner) from the store alone, or `how.blueprint`; from the start, keeping
/// what it finished (`how.keep_done`), or from one task (`how.from`). The old session is left as it is; the new one records it
/// as the session it restarts (and its file, unless `options` names one), and runs to
/// completion, failure or a stop like [`run_session`].
pub async fn restart_session(
    store_path: &Path,
    session_id: &str,
    how: Restart,
    mut options: RunOptions,
) -> Result<RunReport, RunError> {
    let db = Db::open(store_path, &options).await?;
    let (session, root_version, inner_versions) = stored_versions(&db, session_id).await?;
    let (root, library) = match how.blueprint {
        Some(given) => given,
        None => blueprints_from_versions(&root_version, &inner_versions)?,
    };
    let params = session.params.as_object().cloned().unwrap_or_default();
    let kept = if how.keep_done || how.from.is_some() {
        let old = plan_from_versions(&session, &root_version, &inner_versions)?;
        let new = {
            let lib: Library = library.iter().collect();
            plan::build(&root, &lib, &params)?
        };
        let from = match &how.from {
            None => None,
            Some(name) => Some(
                new.node_named(name)
                    .ok_or_else(|| RunError::UnknownTask { session_id: session.id.clone(), task: name.clone() })?,
            ),
        };
        let sid = session.id.clone();
        let (nodes, attempts, writers) =
            db.read(move |s| Ok((s.task_nodes(&sid)?, s.attempts(&sid)?, s.data_writers(&sid)?))).await?;
        let finished = super::kept::Finished { plan: &old, nodes: &nodes, attempts: &attempts, writers: &writers };
        super::kept::kept(&finished, &new, from)
    } else {
        Default::default()
    };
    drop(db);
    if options.file.is_none() {
        options.file = session.file.clone();
    }
    // A simulated session restarts simulated: its data never feeds a real run.
    if session.simulation.is_some() {
        options.simulation = session.simulation.clone();
    }
    run_new_session(store_path, root, library, params, Some(session.id), kept, options).await
}

/// The inner blueprint versions linked to a session by its `session_blueprints` event (none
/// for a session created before the link existed or with no composite).
fn inner_links(store: &Store, session_id: &str) -> Result<Vec<String>, StoreError> {
    let mut after = 0;
    loop {
        let page = store.events_after(session_id, after, 200)?;
        let Some(last) = page.last() else { return Ok(Vec::new()) };
        after = last.seq;
        let kind = orrery_store::EventKind::SessionBlueprints.as_str();
        if let Some(event) = page.iter().find(|e| e.kind() == kind) {
            let Some(EventData::SessionBlueprints(links)) = event.data() else {
                return Err(StoreError::Corrupt {
                    path: PathBuf::new(),
                    detail: format!("the {kind} event of session {session_id:?} was cut or unreadable"),
                });
            };
            return Ok(links.inner.values().cloned().collect());
        }
    }
}
