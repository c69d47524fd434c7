//! `orrery run`: validate a blueprint with the blueprints of its folder (composites find their
//! inner blueprints there by id), run it as a new session in the task store, and print every
//! committed event as it happens. Exit 0 when the session completes, 1 when it fails or the
//! blueprint is invalid, 2 when a file or the store cannot be used, 130 when it was stopped.
//!
//! Ctrl-C (SIGINT) stops the session cleanly ([`SessionControl::stop`]): running processes get
//! SIGTERM, a grace period, then SIGKILL; their attempts are settled `cancelled` with their
//! tasks back to PENDING; the session ends `stopped`. The task processes run in their own
//! process groups, so the terminal's SIGINT reaches only `orrery`, which stops them itself.
//! Further Ctrl-Cs while it stops are acknowledged and change nothing. SIGTERM (`kill`, a
//! service manager's stop) and SIGHUP (the terminal closed) do exactly what Ctrl-C does, and
//! the exit code is the same 130 ([`crate::signals`]); after SIGHUP nothing written to a
//! terminal that is gone can make the runner fail. `orrery recover` stops at the session a
//! signal stopped and leaves the ones after it interrupted.
//!
//! `orrery resume SESSION` ([`resume`]) goes on with a stored session the same way.
//!
//! Prompts (`user_prompt.confirm`, `user_interaction.user_input`): `--answer TASK=VALUE`
//! (repeatable; TASK is the task id or its node key, VALUE JSON when it parses, else text)
//! answers them before they ask. A prompt with no such answer is asked on the terminal when
//! stdin is one (the line typed is the answer, read the same way; end of input stops the
//! session); otherwise it fails at once with `TOOL_FAILURE` naming `--answer TASK=VALUE`, so a
//! run in a script or a test never hangs. Notifications are printed as they are published.
//!
//! When standard output is a terminal and the format is text, the events are shown by the
//! live display ([`live`]) instead of one line each; the plain lines stay for pipes and files.

use crate::cli::{BrokerArgs, Driving, ReportFormat};
use crate::prompt::{ask, json_or_text};
use anyhow::{bail, Context, Result};
use orrery_api::broker::BrokerSettings;
use orrery_api::{
    Api, BrokerDispatch, Event, EventData, EventPayload, Launch, Run, SessionControl, SessionListing, Simulation,
    Unanswered,
};
use orrery_blueprint::{load_runnable, Runnable};
use serde_json::{json, Map, Value};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

pub fn run(
    file: &Path,
    params: &[String],
    driving: Driving,
    simulation: Option<Simulation>,
    alone: crate::cli::AloneFlags,
) -> Result<u8> {
    let params = parse_params(params)?;
    let inputs = parse_pairs("--input", &alone.inputs)?;
    let answers = parse_pairs("--answer", &driving.answers)?;
    let db = crate::db_path(driving.db.clone())?;
    let (root, library) = match load_with_folder(file)? {
        Ok(loaded) => loaded,
        Err(lines) => {
            for line in lines {
                say!("{line}");
            }
            return Ok(1);
        }
    };
    let run = match alone.alone {
        None => Run::Blueprint { root: Box::new(root), library, params },
        Some(task) => {
            let inputs_from = match alone.inputs_from.as_deref() {
                Some("latest") => match latest_completed(&db, &root.blueprint().id)? {
                    Some(id) => Some(id),
                    None => {
                        say!("orrery: blueprint {} has no completed session to take inputs from", root.blueprint().id);
                        return Ok(1);
                    }
                },
                other => other.map(str::to_string),
            };
            let alone = orrery_api::Alone { task, inputs, inputs_from };
            Run::Alone { root: Box::new(root), library, params, alone }
        }
    };
    drive(db, driving, answers, Some(file.to_path_buf()), simulation, run)
}

/// The newest completed real session of blueprint `blueprint_id` (`list_sessions`; a
/// simulation's data never feeds a real task).
fn latest_completed(db: &Path, blueprint_id: &str) -> Result<Option<String>> {
    let filter = json!({ "blueprint_id": blueprint_id, "state": "completed", "limit": 100 });
    let envelope = crate::face::call(Some(db.to_path_buf()), "list_sessions", filter)?;
    let listed = envelope.answer.as_array().cloned().unwrap_or_default();
    Ok(listed.iter().find(|s| s.get("simulation").is_none()).and_then(|s| s["id"].as_str()).map(str::to_string))
}

/// A stored session to go on with.
pub enum Stored {
    /// `orrery resume SESSION`: runs it on from where it stopped, crashed or failed, from the
    /// store alone (no blueprint file); an unknown session or a completed one is exit 1.
    Resume,
    /// `orrery restart SESSION`: runs it over as a new session with its params: the exact
    /// blueprint versions it ran, or a file as saved now; from the start or keeping what it did.
    Restart(orrery_api::Restart),
}

/// `orrery resume` and `orrery restart`: same output and exit codes as `orrery run`.
pub fn go_on(session: &str, how: Stored, driving: Driving) -> Result<u8> {
    let answers = parse_pairs("--answer", &driving.answers)?;
    let db = crate::db_path(driving.db.clone())?;
    let session_id = session.to_string();
    let run = match how {
        Stored::Resume => Run::Resume { session_id },
        Stored::Restart(how) => Run::Restart { session_id, how },
    };
    drive(db, driving, answers, None, None, run)
}

/// The sessions of the store a crash interrupted, oldest first (`list_sessions`).
async fn interrupted(api: &Api) -> Result<Result<Vec<SessionListing>, u8>> {
    let listed = crate::face::answer::<Vec<SessionListing>>(api.call("list_sessions", json!({})).await?)?;
    Ok(listed.map(|listed| {
        let mut interrupted: Vec<SessionListing> = listed.into_iter().filter(|l| l.interrupted).collect();
        interrupted.sort_by_key(|l| l.session.created_ms);
        interrupted
    }))
}

/// `orrery recover`: resumes, one after the other, every session of the store whose runner was
/// interrupted (`running` or `pending` with no live runner: a crash, a power cut). Exit 0 when
/// there was none or all completed, else the first other exit code of `orrery resume`.
pub fn recover(
    max_parallel: Option<usize>,
    broker: BrokerArgs,
    db: Option<PathBuf>,
    format: ReportFormat,
) -> Result<u8> {
    let path = crate::db_path(db)?;
    let api = crate::face::api(Some(path.clone()), None)?;
    let interrupted = match crate::face::runtime()?.block_on(interrupted(&api))? {
        Ok(interrupted) => interrupted,
        Err(code) => return Ok(code),
    };
    if interrupted.is_empty() {
        say!("orrery: no interrupted session in {}", path.display());
        return Ok(0);
    }
    let mut code = 0;
    for SessionListing { session, .. } in interrupted {
        // A stop signal (Ctrl-C, SIGTERM, SIGHUP) ends the recovery: the session it stopped is
        // `stopped`, the others stay interrupted, for a later `recover`.
        if crate::signals::received() {
            say!("orrery: stopped; session {} and any after it are left for `orrery recover`", session.id);
            return Ok(if code == 0 { 130 } else { code });
        }
        say!(
            "orrery: resuming session {} ({}), interrupted while {}",
            session.id,
            session.blueprint_id,
            session.state.as_str()
        );
        let driving = Driving {
            answers: Vec::new(),
            max_parallel,
            db: Some(path.clone()),
            format,
            broker: broker.clone(),
            log_cap: None,
            breakpoints: Vec::new(),
            break_on_failure: false,
        };
        let ended = go_on(&session.id, Stored::Resume, driving)?;
        if code == 0 {
            code = ended;
        }
    }
    Ok(code)
}

/// Runs `run` (a new run, a resume, a restart) in this process through the facade, with the
/// event printer and the stop signals, and maps how it ended to the exit code.
fn drive(
    db: PathBuf,
    driving: Driving,
    answers: Map<String, Value>,
    file: Option<PathBuf>,
    simulation: Option<Simulation>,
    run: Run,
) -> Result<u8> {
    let Driving { max_parallel, format, broker, breakpoints, break_on_failure, .. } = driving;
    let api = crate::face::api(Some(db.clone()), max_parallel)?;
    // SIGINT, SIGTERM and SIGHUP stop the session alike, from here on (crate::signals).
    let mut stops = crate::signals::watch()?;
    crate::face::engine_runtime()?.block_on(async move {
        if let Run::Blueprint { .. } = run {
            if let Ok(Ok(found)) = interrupted(&api).await {
                if !found.is_empty() {
                    say!(
                        "orrery: {} interrupted session(s) in {}: `orrery recover` goes on with them",
                        found.len(),
                        db.display()
                    );
                }
            }
        }
        let broker = match broker_settings(&api, &broker).await {
            Ok(broker) => broker,
            Err(e) => {
                say!("orrery: {e:#}");
                return Ok(2);
            }
        };
        let interactive = std::io::stdin().is_terminal();
        let how = Launch {
            answers,
            unanswered: if interactive { Unanswered::Wait } else { Unanswered::Fail },
            broker: Some(broker),
            file,
            breakpoints,
            hold_on_failure: break_on_failure,
            simulation,
        };
        let here = match api.run_here(run, how).await {
            Ok(here) => here,
            Err(failure) => {
                say!("orrery: {} (store {})", failure.message, db.display());
                return Ok(crate::face::exit_code(failure.code));
            }
        };
        let orrery_api::Here { session_id, events: mut receiver, driver } = here;
        // A simulation (started so, or a resume or restart of one) says so first and last.
        let simulated = match api.call("get_session", json!({ "session_id": session_id })).await {
            Ok(envelope) => envelope.answer["session"].get("simulation").is_some(),
            Err(_) => false,
        };
        if simulated {
            say!("orrery: session {session_id} is a simulation: no process starts");
        }
        // A mirror's server drives it: a stop signal only stops following it here.
        let control = driver.control().cloned();
        // The live display prints the stop acknowledgements itself, above its block.
        let live = matches!(format, ReportFormat::Text) && std::io::stdout().is_terminal();
        let (notes, notes_receiver) = tokio::sync::mpsc::unbounded_channel::<String>();
        let printer = crate::face::on_own_thread("orrery-printer", {
            let control = control.clone().unwrap_or_else(SessionControl::new);
            let (api, session_id) = (api.clone(), session_id.clone());
            async move {
                if live {
                    return crate::live::follow(receiver, notes_receiver, control, interactive, api).await;
                }
                // The commit order of the last stored event shown.
                let mut through = 0;
                loop {
                    match receiver.recv().await {
                        Ok(event) if event.seq > 0 && event.global_seq <= through => {}
                        Ok(event) => {
                            through = through.max(event.global_seq);
                            show(&event, format, interactive, &control).await;
                        }
                        // The output fell behind the session: the store has what was missed.
                        Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                            through =
                                show_stored_after(&api, &session_id, through, format, interactive, &control).await;
                        }
                        Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
                    }
                }
            }
        })?;
        let interrupts = async {
            while let Some(name) = stops.next().await {
                let Some(control) = &control else {
                    say!("{name}: stopped following session {session_id}; it runs on on its server");
                    return;
                };
                let note = if control.is_stop_requested() {
                    "already stopping: waiting for the running tasks to end"
                } else {
                    control.stop();
                    "stopping: cancelling the running tasks"
                };
                // Ctrl-C is seen on the terminal; another signal is named.
                let note = if name == "SIGINT" { note.to_string() } else { format!("{name}: {note}") };
                if !live || notes.send(note.clone()).is_err() {
                    say!("{note}");
                }
            }
            std::future::pending::<()>().await
        };
        let ended = tokio::select! {
            ended = driver.ended() => ended,
            // The printer is left as it is: the process ends.
            () = interrupts => return Ok(130),
        };
        let _ = printer.await;
        let ended = match ended {
            Ok(ended) => ended,
            Err(failure) => bail!("{} (store {})", failure.message, db.display()),
        };
        let kind = if simulated { "simulated session" } else { "session" };
        say!("{kind} {} {} (store {})", ended.session_id, ended.state.as_str(), db.display());
        if let Some(error) = &ended.error {
            say!("{}: {}", error.code, error.message);
        }
        Ok(match ended.state {
            orrery_blueprint::SessionState::Completed => 0,
            orrery_blueprint::SessionState::Stopped => 130,
            _ => 1,
        })
    })
}

/// `KEY=VALUE` pairs; a VALUE that parses as JSON is taken as JSON.
fn parse_params(params: &[String]) -> Result<Map<String, Value>> {
    parse_pairs("--param", params)
}

/// `KEY=VALUE` pairs of option `flag`; a VALUE that parses as JSON is taken as JSON.
fn parse_pairs(flag: &str, pairs: &[String]) -> Result<Map<String, Value>> {
    let mut out = Map::new();
    for p in pairs {
        let Some((key, value)) = p.split_once('=') else { bail!("{flag} {p:?} is not KEY=VALUE") };
        if key.is_empty() {
            bail!("{flag} {p:?} has an empty key");
        }
        out.insert(key.to_string(), json_or_text(value));
    }
    Ok(out)
}

/// The blueprint, validated against the blueprints of its folder; the diagnostics as lines when
/// it has errors.
fn load_with_folder(file: &Path) -> Result<Result<Runnable, Vec<String>>> {
    let loaded = load_runnable(file).with_context(|| format!("cannot read {} or its folder", file.display()))?;
    Ok(loaded.map_err(|report| {
        report
            .diagnostics
            .iter()
            .filter(|d| d.is_error())
            .map(|d| format!("{}:{}:{}: {}", report.file, d.task_id.as_deref().unwrap_or(""), d.path, d))
            .collect()
    }))
}

/// Prints an event; asks the question of a prompt on the terminal when `interactive`.
async fn show(event: &Event, format: ReportFormat, interactive: bool, control: &SessionControl) {
    print_event(event, format);
    if interactive && matches!(event.data(), Some(EventData::PromptWaiting(_))) {
        ask(event, control).await;
    }
}

/// Shows the session's stored events after `through` (a `global_seq`) as [`show`] does, a page
/// at a time, up to the last one stored (fewer when the store cannot be read): the last
/// `global_seq` read.
async fn show_stored_after(
    api: &Api,
    session_id: &str,
    mut through: u64,
    format: ReportFormat,
    interactive: bool,
    control: &SessionControl,
) -> u64 {
    loop {
        let Ok(envelope) = api.call("read_events", json!({ "after": through })).await else { return through };
        let Ok(events) = serde_json::from_value::<Vec<Event>>(envelope.answer["events"].clone()) else {
            return through;
        };
        let Some(last) = events.last() else { return through };
        through = last.global_seq;
        for event in events.iter().filter(|e| e.session_id == session_id) {
            show(event, format, interactive, control).await;
        }
    }
}

fn print_event(event: &Event, format: ReportFormat) {
    match format {
        ReportFormat::Json => {
            if let Ok(line) = serde_json::to_string(event) {
                out!("{line}");
            }
        }
        ReportFormat::Text => {
            let kind = event.kind();
            let line = match &event.payload {
                EventPayload::Whole(data) => text_line(kind, data),
                // A kind of another build: its name and node, as far as they can be read.
                EventPayload::Unknown { value, .. } => {
                    format!("{kind:<10} {}", value.get("node").and_then(Value::as_str).unwrap_or(""))
                }
                EventPayload::Cut { .. } => format!("{kind:<10} "),
            };
            out!("{:>5} {line}", event.seq);
        }
    }
}

/// The text report's line for an event of kind `kind`.
fn text_line(kind: &str, data: &EventData) -> String {
    match data {
        EventData::TaskStateChanged(changed) => format!("{:<10} {}", changed.state.as_str(), changed.node),
        EventData::SessionStateChanged(changed) => format!("session    {}", changed.state.as_str()),
        EventData::Notification(shown) => {
            let text = match &shown.values {
                Some(values) => Value::Object(values.clone()).to_string(),
                None => {
                    let level = shown.level.as_ref().and_then(Value::as_str).unwrap_or("");
                    let said = |t: &Option<String>| t.clone().unwrap_or_default();
                    format!("[{level}] {}: {}", said(&shown.title), said(&shown.message))
                }
            };
            format!("{:<10} {} {text}", "notify", shown.node)
        }
        EventData::PromptWaiting(prompt) => format!("{:<10} {} {}", "prompt", prompt.node, prompt.message),
        EventData::DataEdited(edit) => {
            let old = edit.old.as_ref().map_or("nothing".to_string(), Value::to_string);
            format!("{kind:<10} {}.{} = {} (was {old}; by {})", edit.instance, edit.key, edit.new, edit.by)
        }
        EventData::Breakpoints(holds) => {
            let held: Vec<String> = holds.held.iter().map(|h| format!("{} ({})", h.node, h.at)).collect();
            let held = if held.is_empty() { "nothing".to_string() } else { held.join(", ") };
            format!("{:<10} {} {}; held now: {held}", "break", holds.what, holds.node)
        }
        EventData::AttemptSettled(settled) => {
            format!("settled    {} {}", settled.node, serde_json::to_string(&settled.outcome()).unwrap_or_default())
        }
        EventData::BrokerDispatch(step) => {
            let (node, step) = match step {
                BrokerDispatch::Allocated { node, agent, .. } => (node, format!("allocated to agent {agent}")),
                BrokerDispatch::Republished { node, n, .. } => (node, format!("unclaimed, published again ({n})")),
                BrokerDispatch::Silent { node, agents, assignment } => {
                    let agents = serde_json::to_string(agents).unwrap_or_default();
                    (node, format!("agents {agents} went silent: published again as {assignment}"))
                }
            };
            format!("{:<10} {node} {step}", "broker")
        }
        EventData::AttemptStarted(started) => format!("{kind:<10} {}", started.node),
        EventData::PromptAnswered(answered) => format!("{kind:<10} {}", answered.node),
        EventData::LogCapped(capped) => format!("{kind:<10} {}", capped.node),
        EventData::LogGrew(grew) => format!("{kind:<10} {}", grew.node),
        EventData::SessionCreated(_)
        | EventData::Progress(_)
        | EventData::DataUpdated(_)
        | EventData::SessionBlueprints(_)
        | EventData::RemoteLink(_) => format!("{kind:<10} "),
    }
}

/// The broker settings of a run: the saved ones, each replaced by its flag when given.
pub async fn broker_settings(api: &Api, args: &BrokerArgs) -> Result<BrokerSettings> {
    let mut settings = api.broker_settings().await.map_err(|f| anyhow::anyhow!("{}", f.message))?;
    if let Some(broker) = &args.broker {
        settings.broker = Some(broker.clone());
    }
    let policy = &args.policy;
    if !policy.via_broker.is_empty() {
        settings.via_broker = policy.via_broker.clone();
    }
    if policy.agent_timeout.is_some() {
        settings.agent_timeout_s = policy.agent_timeout;
    }
    if let Some(n) = policy.agent_retries {
        settings.agent_retries = n;
    }
    if policy.claim_wait.is_some() {
        settings.claim_wait_s = policy.claim_wait;
    }
    Ok(settings)
}
