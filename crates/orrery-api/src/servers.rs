//! Antikythera servers: the ones the user works with (`list_servers`, `save_server`,
//! `remove_server`, kept in the store so the app and the CLI share them), publishing blueprint
//! files to one (`publish_blueprints`), and its sessions (`remote_sessions`, `remote_run`,
//! `remote_control`, `remote_intervene`, `remote_wait`, which follows a session's event stream
//! to its end).
//!
//! Publishing checks every file first, with the blueprints of its folder as its library, as a
//! run does: nothing is sent when one of them has errors or would be refused by the server
//! (unless forced: then the server decides). The
//! inner blueprints the files' composites call (found beside them) go with them, each before
//! the blueprints that call it. Each is sent as the canonical antikythera JSON Orrery exports.
//! The first one the server refuses stops the rest; its answer comes back as the server gave
//! it, each problem with the task it names when it names one of the blueprint's tasks.

use super::*;

use std::collections::HashSet;

use orrery_blueprint::check::{blueprints_in, check_in_folder, Source};
use orrery_blueprint::{save, validate, Encoding};
use orrery_remote::{RemoteError, RemoteSession, Server, SessionAnswer};

use crate::catalogue::NoArguments;

impl From<RemoteError> for Failure {
    fn from(e: RemoteError) -> Failure {
        Failure::new(e.code(), e.to_string())
    }
}

/// A server as the facade shows it: its token is never given back, only whether it has one.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ServerInfo {
    pub name: String,
    pub url: String,
    pub has_token: bool,
}

impl From<orrery_store::ServerEntry> for ServerInfo {
    fn from(s: orrery_store::ServerEntry) -> Self {
        ServerInfo { name: s.name, url: s.url, has_token: s.token.is_some() }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SaveServerArguments {
    /// What the user calls it: `orrery publish --server NAME`.
    pub name: String,
    /// `http://host:port` or `https://host[:port][/prefix]`.
    pub url: String,
    /// The server's token, when it wants one; absent or empty: none.
    pub token: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ServerNameArguments {
    pub name: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Removed {
    /// Whether there was a server of that name.
    pub removed: bool,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PublishArguments {
    /// A server's name (`save_server`) or address (`http://host:port`).
    pub server: String,
    /// The token for an address given as is (a named server has its own).
    pub token: Option<String>,
    /// The blueprint files to publish; the inner blueprints they call go with them.
    pub files: Vec<PathBuf>,
    /// Send them even when Orrery finds errors or predicts a refusal: the server decides.
    #[serde(default)]
    pub force: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Published {
    /// The server's address.
    pub server: String,
    /// Every blueprint, in the order they were (or would have been) sent: the inner ones first.
    pub blueprints: Vec<PublishedBlueprint>,
    /// Whether every one of them is now on the server.
    pub all_uploaded: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct PublishedBlueprint {
    pub file: String,
    pub blueprint_id: String,
    /// Whether it was given, or goes with one that calls it.
    pub given: bool,
    pub outcome: PublishOutcome,
    /// The server's message (uploaded or refused), or why it was not sent.
    pub message: Option<String>,
    /// Why it cannot go (Orrery's errors, the server's problems), each with its task when known.
    pub problems: Vec<Problem>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PublishOutcome {
    /// The server took it.
    Uploaded,
    /// Checked here and found wanting: Orrery's errors, or what the server would refuse.
    Invalid,
    /// The server refused it: its own problems.
    Refused,
    /// The server could not be asked (unreachable, an answer Orrery cannot read).
    Failed,
    /// Not sent: another blueprint was invalid or refused first.
    NotSent,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Problem {
    pub task_id: Option<String>,
    pub message: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RemoteArguments {
    /// A server's name (`save_server`) or address (`http://host:port`).
    pub server: String,
    /// The token for an address given as is.
    pub token: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RemoteRunArguments {
    pub server: String,
    pub token: Option<String>,
    /// A blueprint the server holds (`publish_blueprints` puts it there).
    pub blueprint_id: String,
    /// Session parameters (the server keeps them as text).
    #[serde(default)]
    pub params: serde_json::Map<String, Value>,
    /// The session's id on the server (slugified by it); a fresh one when absent.
    pub name: Option<String>,
    /// Start it at once (default); when false it waits, pending, for `remote_wait` with
    /// `start: true` (which misses none of its events) or `remote_control` resume.
    pub start: Option<bool>,
    /// Follow it into a local mirror (`follow_remote_session`) before it starts; the answer
    /// then names the mirror (`mirror`).
    #[serde(default)]
    pub follow: bool,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FollowArguments {
    pub server: String,
    pub token: Option<String>,
    /// The session's id on the server.
    pub session_id: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct RemoteRunAnswer {
    #[serde(flatten)]
    pub answer: SessionAnswer,
    /// The local session that mirrors it, when it is followed.
    pub mirror: Option<String>,
}

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RemoteAction {
    Pause,
    Stop,
    /// Runs it again from where it stopped or failed.
    Resume,
    /// A new session of the same blueprint.
    Restart,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RemoteControlArguments {
    pub server: String,
    pub token: Option<String>,
    pub session_id: String,
    pub action: RemoteAction,
}

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RemoteIntervention {
    /// The task back to PENDING (and what runs after it unless `downstream` is false).
    Reset,
    /// The task skipped when it would start.
    Skip,
    /// The scope that `task` names (its name, or its start task's id) back to PENDING.
    ResetScope,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RemoteInterveneArguments {
    pub server: String,
    pub token: Option<String>,
    pub session_id: String,
    pub action: RemoteIntervention,
    /// `{blueprint_id}.{task_id}` (a scope's name for `reset_scope`).
    pub task: String,
    /// Reset what runs after the task too (default true).
    pub downstream: Option<bool>,
    /// Clear the task's outputs (default true).
    pub clear_outputs: Option<bool>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RemoteWaitArguments {
    pub server: String,
    pub token: Option<String>,
    pub session_id: String,
    /// The longest to wait (default 600 s).
    pub timeout_s: Option<f64>,
    /// Start (or resume) the session once its stream is open: no event is missed.
    #[serde(default)]
    pub start: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct RemoteWaited {
    /// The session as the server lists it at the end of the wait.
    pub session: RemoteSession,
    /// Whether it has ended (completed, failed or stopped).
    pub ended: bool,
    /// The task states the stream announced while waiting, in order: `{blueprint_id, task_id, state}`.
    pub tasks: Vec<Value>,
}

/// The server `name_or_url` names: a saved one by name, else an address.
fn server_for(db: &Path, name_or_url: &str, token: Option<String>) -> Result<Server, Failure> {
    match open(db)?.server(name_or_url)? {
        Some(saved) => Ok(Server::new(&saved.url, saved.token)?),
        None if name_or_url.contains("://") => Ok(Server::new(name_or_url, token)?),
        None => Err(Failure::new(
            FailureCode::NotFound,
            format!("no server named {name_or_url:?}: give its address (http://host:port) or save it first"),
        )),
    }
}

async fn server_named(api: &Api, name_or_url: String, token: Option<String>) -> Result<Server, Failure> {
    api.blocking(move |db| server_for(db, &name_or_url, token)).await
}

/// A blueprint to publish: its file, what it is, and the text that goes to the server.
struct Outgoing {
    file: PathBuf,
    blueprint_id: String,
    given: bool,
    text: String,
    /// Orrery's errors and what the server would refuse, when there are any.
    problems: Vec<Problem>,
}

/// Every blueprint `files` publish, inner ones first: each given file and, depth first, the
/// blueprints its composites call (by id, among the files of its folder) before it.
fn outgoing(files: &[PathBuf]) -> Result<Vec<Outgoing>, Failure> {
    let mut out: Vec<Outgoing> = Vec::new();
    let mut placed: HashSet<String> = HashSet::new();
    let given: HashSet<PathBuf> = files.iter().filter_map(|f| f.canonicalize().ok()).collect();
    for file in files {
        let text = orrery_blueprint::fsio::read_blueprint(file)
            .map_err(|e| Failure::new(FailureCode::Io, format!("cannot read {}: {e}", file.display())))?;
        let folder = file.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let beside = blueprints_in(folder, Some(file)).map_err(|e| {
            Failure::new(FailureCode::Io, format!("cannot read the blueprints of {}: {e}", folder.display()))
        })?;
        let root = Source::new(file.clone(), text.clone(), orrery_blueprint::load(&text).map_err(|e| e.diagnostics));
        if root.loaded.is_err() {
            let report = check_in_folder(file, text).map_err(|e| Failure::new(FailureCode::Io, e.to_string()))?;
            out.push(invalid_file(file, report));
            continue;
        }
        // Depth first: a blueprint goes once everything it calls is placed.
        let mut order: Vec<&Source> = Vec::new();
        visit(&root, &beside, &mut HashSet::new(), &mut order);
        for source in order {
            let Ok(l) = &source.loaded else { continue };
            if !placed.insert(l.blueprint.id.clone()) {
                continue;
            }
            let report = check_in_folder(&source.path, source.text.clone())
                .map_err(|e| Failure::new(FailureCode::Io, e.to_string()))?;
            let problems = report
                .diagnostics
                .iter()
                .filter(|d| d.is_error() || d.server_rejects)
                .map(|d| Problem { task_id: d.task_id.clone(), message: d.to_string() })
                .collect();
            out.push(Outgoing {
                file: source.path.clone(),
                blueprint_id: l.blueprint.id.clone(),
                given: source.path.canonicalize().is_ok_and(|p| given.contains(&p)),
                text: save::to_string(&l.blueprint, Encoding::Plain),
                problems,
            });
        }
    }
    Ok(out)
}

fn visit<'a>(source: &'a Source, beside: &'a [Source], seen: &mut HashSet<String>, order: &mut Vec<&'a Source>) {
    let Ok(loaded) = &source.loaded else { return };
    if !seen.insert(loaded.blueprint.id.clone()) {
        return;
    }
    // The first file of the folder with that id, as composites find blueprints (check.rs).
    for id in validate::calls(&loaded.blueprint) {
        if let Some(inner) = beside.iter().find(|s| s.loaded.as_ref().is_ok_and(|l| l.blueprint.id == id)) {
            visit(inner, beside, seen, order);
        }
    }
    order.push(source);
}

fn invalid_file(file: &Path, report: orrery_blueprint::check::FileReport) -> Outgoing {
    Outgoing {
        file: file.to_path_buf(),
        blueprint_id: String::new(),
        given: true,
        text: String::new(),
        problems: report
            .diagnostics
            .iter()
            .map(|d| Problem { task_id: d.task_id.clone(), message: d.to_string() })
            .collect(),
    }
}

/// The task a server's problem names (`Task 'b': ...`), when it is one of `blueprint`'s.
fn task_named(problem: &str, tasks: &HashSet<String>) -> Option<String> {
    let rest = problem.split("Task '").nth(1)?;
    let id = &rest[..rest.find('\'')?];
    tasks.contains(id).then(|| id.to_string())
}

async fn publish(server: Server, files: Vec<PathBuf>, force: bool) -> Result<Published, Failure> {
    let blueprints = tokio::task::spawn_blocking(move || outgoing(&files))
        .await
        .map_err(|e| Failure::new(FailureCode::Internal, format!("a blocking task failed: {e}")))??;
    // A file Orrery cannot read cannot be sent, forced or not.
    let unreadable = |b: &Outgoing| b.blueprint_id.is_empty();
    let held = |b: &Outgoing| !b.problems.is_empty() && (!force || unreadable(b));
    let mut stop = blueprints.iter().any(held).then(|| "another blueprint cannot go: nothing was sent".to_string());
    let mut answers = Vec::with_capacity(blueprints.len());
    for b in blueprints {
        let mut answer = PublishedBlueprint {
            file: b.file.display().to_string(),
            blueprint_id: b.blueprint_id.clone(),
            given: b.given,
            outcome: PublishOutcome::NotSent,
            message: None,
            problems: Vec::new(),
        };
        if held(&b) {
            answer.outcome = PublishOutcome::Invalid;
            answer.message = Some(if b.blueprint_id.is_empty() {
                "it is not a blueprint Orrery can read".into()
            } else {
                "it has errors, or the server would refuse it".into()
            });
            answer.problems = b.problems;
        } else if let Some(why) = &stop {
            answer.message = Some(why.clone());
        } else {
            let name = b
                .file
                .file_name()
                .map_or_else(|| format!("{}.json", b.blueprint_id), |n| n.to_string_lossy().into_owned());
            let name = if name.ends_with(".json") { name } else { format!("{name}.json") };
            match server.upload(&name, &b.text).await {
                Ok(uploaded) => {
                    answer.outcome = PublishOutcome::Uploaded;
                    answer.message = Some(uploaded.message);
                }
                Err(RemoteError::Refused { status, message, problems }) => {
                    let tasks: HashSet<String> = orrery_blueprint::load(&b.text)
                        .map(|l| l.blueprint.tasks.into_iter().map(|t| t.id.into()).collect())
                        .unwrap_or_default();
                    answer.outcome = PublishOutcome::Refused;
                    answer.message = Some(format!("{message} ({status})"));
                    answer.problems =
                        problems.into_iter().map(|p| Problem { task_id: task_named(&p, &tasks), message: p }).collect();
                    stop = Some(format!("{} was refused first", b.blueprint_id));
                }
                Err(e) => {
                    answer.outcome = PublishOutcome::Failed;
                    answer.message = Some(e.to_string());
                    stop = Some(format!("{} could not be sent", b.blueprint_id));
                }
            }
        }
        answers.push(answer);
    }
    let all_uploaded = answers.iter().all(|a| a.outcome == PublishOutcome::Uploaded);
    Ok(Published { server: server.url().to_string(), blueprints: answers, all_uploaded })
}

/// Follows a session until it ends or `timeout` passes: the task states seen meanwhile.
async fn wait_remote(
    server: &Server,
    session_id: &str,
    start: bool,
    timeout: std::time::Duration,
) -> Result<RemoteWaited, Failure> {
    // The stream first, then the state: an end between the two is then seen one way or the other.
    let mut events = server.follow(session_id).await?;
    if start {
        server.resume(session_id).await?;
    }
    let mut tasks = Vec::new();
    let deadline = tokio::time::Instant::now() + timeout;
    if !server.session(session_id).await?.ended() {
        loop {
            match tokio::time::timeout_at(deadline, events.recv()).await {
                Err(_) | Ok(None) => break,
                Ok(Some(event)) => {
                    let event = event?;
                    match event.event.as_str() {
                        "task_state_changed" => tasks.push(event.data),
                        "session_state_changed" if event.data["state"].as_str().is_some_and(orrery_remote::ended) => {
                            break
                        }
                        _ => {}
                    }
                }
            }
        }
    }
    let session = server.session(session_id).await?;
    Ok(RemoteWaited { ended: session.ended(), session, tasks })
}

pub(crate) fn register(jobs: &mut Vec<Job>) {
    jobs.push(job(
        "remote_sessions",
        "A server's sessions, as it lists them.",
        |api: Api, args: RemoteArguments| async move {
            let server = server_named(&api, args.server, args.token).await?;
            Ok(server.sessions(1000).await?)
        },
    ));
    jobs.push(
        job(
            "remote_run",
            "Starts a session of a blueprint the server holds (created, then started unless `start` is false); its id.",
            |api: Api, args: RemoteRunArguments| async move {
                let server = server_named(&api, args.server, args.token).await?;
                let created = server.create_session(&args.blueprint_id, &args.params, args.name.as_deref()).await?;
                let mirror = match args.follow {
                    true => Some(api.mirror_opened(server.clone(), &created.session_id).await?),
                    false => None,
                };
                if args.start == Some(false) {
                    return Ok(RemoteRunAnswer { answer: created, mirror });
                }
                Ok::<RemoteRunAnswer, Failure>(RemoteRunAnswer {
                    answer: server.resume(&created.session_id).await?,
                    mirror,
                })
            },
        )
        .writing(),
    );
    jobs.push(job(
        "follow_remote_session",
        "Follows a session of a server into a local mirror, which the run views show like a local run \
         (its actions go to the server); the mirror's id.",
        |api: Api, args: FollowArguments| async move {
            let server = server_named(&api, args.server, args.token).await?;
            Ok::<crate::sessions::Started, Failure>(crate::sessions::Started {
                session_id: api.mirror(server, &args.session_id).await?,
            })
        },
    ));
    jobs.push(
        job(
            "remote_control",
            "Pauses, stops, resumes or restarts a session on a server (a restart answers the new session).",
            |api: Api, args: RemoteControlArguments| async move {
                let server = server_named(&api, args.server, args.token).await?;
                let id = &args.session_id;
                Ok::<SessionAnswer, Failure>(match args.action {
                    RemoteAction::Pause => server.pause(id).await?,
                    RemoteAction::Stop => server.stop(id).await?,
                    RemoteAction::Resume => server.resume(id).await?,
                    RemoteAction::Restart => {
                        // The server makes the new session pending: started here, as a restart means.
                        let again = server.restart(id).await?;
                        server.resume(&again.session_id).await?;
                        again
                    }
                })
            },
        )
        .writing(),
    );
    jobs.push(
        job(
            "remote_intervene",
            "Resets or skips a task, or resets a scope, of a session on a server that is not running.",
            |api: Api, args: RemoteInterveneArguments| async move {
                let server = server_named(&api, args.server, args.token).await?;
                let (session, task) = (&args.session_id, &args.task);
                if let RemoteIntervention::ResetScope = args.action {
                    return Ok::<SessionAnswer, Failure>(server.reset_scope(session, task).await?);
                }
                // A node key: the instance is everything before the last dot (a task id has none).
                let Some((blueprint_id, task_id)) = task.rsplit_once('.') else {
                    return Err(Failure::new(
                        FailureCode::InvalidArgument,
                        format!("name the task as blueprint_id.task_id, not {task:?}"),
                    ));
                };
                Ok(match args.action {
                    RemoteIntervention::Skip => server.skip_task(session, blueprint_id, task_id).await?,
                    _ => {
                        server
                            .reset_task(
                                session,
                                blueprint_id,
                                task_id,
                                args.downstream.unwrap_or(true),
                                args.clear_outputs.unwrap_or(true),
                            )
                            .await?
                    }
                })
            },
        )
        .writing(),
    );
    jobs.push(job(
        "remote_wait",
        "Follows a session on a server (its event stream) until it ends, at most `timeout_s`.",
        |api: Api, args: RemoteWaitArguments| async move {
            let server = server_named(&api, args.server, args.token).await?;
            let timeout = std::time::Duration::from_secs_f64(args.timeout_s.unwrap_or(600.0).clamp(0.0, 86_400.0));
            wait_remote(&server, &args.session_id, args.start, timeout).await
        },
    ));
    jobs.push(job(
        "list_servers",
        "The antikythera servers saved, by name (their tokens are not given back).",
        |api: Api, _: NoArguments| async move {
            api.blocking(|db| Ok(open(db)?.servers()?.into_iter().map(ServerInfo::from).collect::<Vec<_>>())).await
        },
    ));
    jobs.push(
        job(
            "save_server",
            "Saves an antikythera server by name (a new one, or new details for that name).",
            |api: Api, args: SaveServerArguments| async move {
                let name = args.name.trim().to_string();
                if name.is_empty() || name.contains("://") {
                    return Err(Failure::new(
                        FailureCode::InvalidArgument,
                        "a server's name must be a word, not empty or an address",
                    ));
                }
                // Checked now: a server saved is one that can be asked.
                Server::new(&args.url, None)?;
                let url = args.url.trim().trim_end_matches('/').to_string();
                let token = args.token.filter(|t| !t.is_empty());
                api.blocking(move |db| Ok(ServerInfo::from(open(db)?.put_server(&name, &url, token.as_deref())?))).await
            },
        )
        .writing(),
    );
    jobs.push(
        job("remove_server", "Forgets a saved server.", |api: Api, args: ServerNameArguments| async move {
            api.blocking(move |db| Ok(Removed { removed: open(db)?.remove_server(&args.name)? })).await
        })
        .writing(),
    );
    jobs.push(
        job(
            "publish_blueprints",
            "Uploads blueprint files to an antikythera server, the inner blueprints they call first; nothing \
         is sent when one has errors or would be refused; the server's own answer when it refuses.",
            |api: Api, args: PublishArguments| async move {
                if args.files.is_empty() {
                    return Err(Failure::new(FailureCode::InvalidArgument, "give the blueprint files to publish"));
                }
                let server = server_named(&api, args.server, args.token).await?;
                publish(server, args.files, args.force).await
            },
        )
        .writing(),
    );
}
