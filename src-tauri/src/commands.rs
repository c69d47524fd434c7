//! The IPC surface: each command adapts one facade call or one file the user chose. The
//! surface is declared once here ([`surface`]); `bindings` turns it, with the facade's job
//! catalogue, into the UI's TypeScript types.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use orrery_api::{Api, CallError, Envelope, FailureCode, JobInfo};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{json, Value};
use tauri::{AppHandle, Manager, Runtime, State, WebviewWindow};
use tauri_plugin_dialog::DialogExt;

use crate::login_env::LoginShell;
use crate::recent::Recent;

/// A command refused or failed; crosses IPC as `{code, message}`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema, thiserror::Error)]
#[error("{message}")]
pub struct IpcError {
    /// The facade's codes, those of the shell among them (`not_granted`, `io`): the UI matches
    /// on these, never on messages.
    pub code: FailureCode,
    pub message: String,
}

impl IpcError {
    fn io(action: &str, path: &Path, e: std::io::Error) -> IpcError {
        IpcError { code: FailureCode::Io, message: format!("cannot {action} {}: {e}", path.display()) }
    }
}

impl From<CallError> for IpcError {
    fn from(e: CallError) -> IpcError {
        let code = match e {
            CallError::UnknownJob { .. } => FailureCode::UnknownJob,
            CallError::InvalidArguments { .. } => FailureCode::InvalidArgument,
        };
        IpcError { code, message: e.to_string() }
    }
}

/// A blueprint file and its text.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct OpenedFile {
    pub path: PathBuf,
    pub text: String,
}

/// The files this window may write: the one given at start and those the user picked in a
/// dialog. The web view never names an arbitrary path to write.
pub struct Files {
    startup: Option<PathBuf>,
    granted: Mutex<HashSet<PathBuf>>,
}

impl Files {
    pub fn new(startup: Option<PathBuf>) -> Files {
        Files { granted: Mutex::new(startup.iter().cloned().collect()), startup }
    }

    fn grant(&self, path: &Path) {
        self.granted.lock().unwrap_or_else(|p| p.into_inner()).insert(path.to_path_buf());
    }

    /// Refuses a blueprint that is not beside a file the user chose: the folder of an opened
    /// blueprint is its library, where the inner blueprints of its composites are found.
    fn require_library(&self, path: &Path) -> Result<(), IpcError> {
        let granted = self.granted.lock().unwrap_or_else(|p| p.into_inner());
        let beside = path.extension().is_some_and(|e| e == "json")
            && granted.iter().any(|g| g.parent().is_some() && g.parent() == path.parent());
        if beside {
            return Ok(());
        }
        Err(IpcError {
            code: FailureCode::NotGranted,
            message: format!("{} is not beside a blueprint opened in this window", path.display()),
        })
    }

    /// Refuses a path the user did not choose.
    fn require(&self, path: &Path) -> Result<(), IpcError> {
        if self.granted.lock().unwrap_or_else(|p| p.into_inner()).contains(path) {
            return Ok(());
        }
        Err(IpcError {
            code: FailureCode::NotGranted,
            message: format!("{} was not opened or chosen in this window", path.display()),
        })
    }
}

#[tauri::command]
pub fn list_jobs(api: State<'_, Api>) -> Vec<JobInfo> {
    api.jobs()
}

/// The jobs that write or run the file named by their `file` argument: the web view may call
/// them only for files the user chose, like [`save_blueprint_file`] (a page must not run a
/// blueprint of shell tasks it found somewhere on the disk).
const FILE_JOBS: [&str; 3] = ["write_blueprint_file", "save_layout", "start_session"];
/// Jobs that send the files of `files` away (to a server): only files the user opened or saved.
const FILES_JOBS: [&str; 1] = ["publish_blueprints"];

#[tauri::command]
pub async fn call_job(
    api: State<'_, Api>,
    files: State<'_, Files>,
    name: String,
    arguments: Value,
) -> Result<Envelope, IpcError> {
    if FILE_JOBS.contains(&name.as_str()) {
        let file = arguments.get("file").and_then(Value::as_str).map(Path::new);
        files.require(file.unwrap_or(Path::new("")))?;
    }
    if FILES_JOBS.contains(&name.as_str()) {
        let given = arguments.get("files").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        for file in given {
            files.require(Path::new(file.as_str().unwrap_or("")))?;
        }
    }
    Ok(api.call(&name, arguments).await?)
}

/// The blueprint given at start (first argument or `ORRERY_OPEN`), if any.
#[tauri::command]
pub async fn startup_blueprint_file<R: Runtime>(
    window: WebviewWindow<R>,
    files: State<'_, Files>,
    recent: State<'_, Recent>,
) -> Result<Option<OpenedFile>, IpcError> {
    match &files.startup {
        Some(path) => read(&window, &recent, path.clone()).await.map(Some),
        None => Ok(None),
    }
}

/// Asks for a blueprint with the native dialog and reads it; `None` when the user cancels.
#[tauri::command]
pub async fn open_blueprint_file<R: Runtime>(
    app: AppHandle<R>,
    window: WebviewWindow<R>,
    files: State<'_, Files>,
    recent: State<'_, Recent>,
) -> Result<Option<OpenedFile>, IpcError> {
    let Some(path) = ask_path(&app, Dialog::Open).await else { return Ok(None) };
    files.grant(&path);
    read(&window, &recent, path).await.map(Some)
}

/// What the app is and where it keeps things: its About dialog.
#[derive(Debug, Serialize, JsonSchema)]
pub struct About {
    /// The version of the app, which is the command line's (`orrery --version`).
    pub version: String,
    /// The task store.
    pub store: PathBuf,
    /// The folder of the attempts' logs.
    pub logs: PathBuf,
    /// The login shell whose `PATH` and locale the app's tasks run with, if it answered
    /// (docs/desktop.md#environment).
    pub login_shell: Option<PathBuf>,
    /// The `PATH` tasks run with.
    pub path: Option<String>,
}

/// What the app started with that is not the facade's.
pub struct Launch {
    /// The login shell the app's tasks take `PATH` and the locale from, if it answers.
    pub login: Arc<LoginShell>,
}

/// The app's version and folders, for the About dialog. Asked in the first moments after start,
/// it waits for the login shell's answer, off the window's thread.
#[tauri::command]
pub async fn about<R: Runtime>(
    app: AppHandle<R>,
    api: State<'_, Api>,
    launch: State<'_, Launch>,
) -> Result<About, IpcError> {
    let login = launch.login.clone();
    let found = tauri::async_runtime::spawn_blocking(move || login.answer().cloned()).await.ok().flatten();
    Ok(About {
        version: app.package_info().version.to_string(),
        store: api.db().to_path_buf(),
        logs: api.work_dir().to_path_buf(),
        path: found.as_ref().and_then(|f| f.taken.get("PATH").cloned()).or_else(|| std::env::var("PATH").ok()),
        login_shell: found.map(|f| f.shell),
    })
}

/// The blueprint files opened or saved lately, newest first.
#[tauri::command]
pub fn recent_blueprint_files(recent: State<'_, Recent>) -> Vec<PathBuf> {
    recent.list()
}

/// Opens a file of the recent list again (only those: the web view names no other path).
#[tauri::command]
pub async fn open_recent_blueprint_file<R: Runtime>(
    window: WebviewWindow<R>,
    files: State<'_, Files>,
    recent: State<'_, Recent>,
    path: PathBuf,
) -> Result<OpenedFile, IpcError> {
    if !recent.contains(&path) {
        return Err(IpcError {
            code: FailureCode::NotGranted,
            message: format!("{} is not among the recent files", path.display()),
        });
    }
    files.grant(&path);
    read(&window, &recent, path).await
}

/// Opens a blueprint beside one the user opened (an inner blueprint of a composite, found with
/// the `list_blueprint_files` job); it may then be saved like the others.
#[tauri::command]
pub async fn open_library_blueprint_file<R: Runtime>(
    window: WebviewWindow<R>,
    files: State<'_, Files>,
    recent: State<'_, Recent>,
    path: PathBuf,
) -> Result<OpenedFile, IpcError> {
    files.require_library(&path)?;
    let opened = read(&window, &recent, path).await?;
    files.grant(&opened.path);
    Ok(opened)
}

/// Writes a blueprint back to a file the user chose.
#[tauri::command]
pub async fn save_blueprint_file(
    api: State<'_, Api>,
    files: State<'_, Files>,
    path: PathBuf,
    text: String,
) -> Result<(), IpcError> {
    files.require(&path)?;
    write(&api, &path, text).await.map(|_| ())
}

/// The answer of a job that succeeded; a failure becomes the command's error: its code is what
/// `code` makes of the failure's, its message the job's (`otherwise` when it gave none).
fn answer_of(
    envelope: Envelope,
    otherwise: &str,
    code: impl FnOnce(Option<FailureCode>) -> FailureCode,
) -> Result<Value, IpcError> {
    if envelope.success {
        return Ok(envelope.answer);
    }
    let code = code(envelope.failure().map(|f| f.code));
    Err(IpcError { code, message: envelope.answer.as_str().unwrap_or(otherwise).to_string() })
}

/// Writes through the core: the canonical text, atomically (a crash never leaves half a file);
/// answers the text written.
async fn write(api: &Api, path: &Path, text: String) -> Result<String, IpcError> {
    let envelope = api.call("write_blueprint_file", json!({"file": path, "text": text})).await?;
    // A text that does not load says so; any other failure is the file's.
    let written = answer_of(envelope, "the file was not written", |code| match code {
        Some(FailureCode::InvalidBlueprint) => FailureCode::InvalidBlueprint,
        _ => FailureCode::Io,
    })?;
    Ok(written["text"].as_str().unwrap_or_default().to_string())
}

/// Asks where to save with the native dialog and writes there; the file and the text written,
/// `None` when the user cancels. With `name_from_file`, the blueprint takes its id and name from
/// the file's name first ([`names_from_file`]).
#[tauri::command(rename_all = "snake_case")]
pub async fn save_blueprint_file_as<R: Runtime>(
    app: AppHandle<R>,
    api: State<'_, Api>,
    files: State<'_, Files>,
    recent: State<'_, Recent>,
    text: String,
    name_from_file: Option<bool>,
) -> Result<Option<OpenedFile>, IpcError> {
    let Some(path) = ask_path(&app, Dialog::Save).await else { return Ok(None) };
    files.grant(&path);
    let text = if name_from_file.unwrap_or(false) { named_from_file(&text, &path) } else { text };
    let text = write(&api, &path, text).await?;
    remember(&app, &recent, &path);
    Ok(Some(OpenedFile { path, text }))
}

/// The id and name a blueprint saved as `file` takes: `nightly report.blueprint.json` gives
/// `nightly_report` and "Nightly report" (letters and digits of any script kept, the rest an
/// underscore); `None` when the name holds nothing to make an id of.
pub fn names_from_file(file: &Path) -> Option<(String, String)> {
    let name = file.file_name()?.to_string_lossy();
    let stem = name.strip_suffix(".json").unwrap_or(&name);
    let stem = stem.strip_suffix(".blueprint").unwrap_or(stem).trim();
    let mut id = String::new();
    for c in stem.chars() {
        if c.is_alphanumeric() || c == '_' || c == '-' {
            id.push(c);
        } else if !id.ends_with('_') {
            id.push('_');
        }
    }
    let id = id.trim_matches('_').to_string();
    if id.is_empty() {
        return None;
    }
    let words: Vec<&str> =
        stem.split(|c: char| c == '_' || c == '-' || c.is_whitespace()).filter(|w| !w.is_empty()).collect();
    let words = words.join(" ");
    let mut chars = words.chars();
    let name = chars.next().map(|c| c.to_uppercase().chain(chars).collect()).unwrap_or_default();
    Some((id, name))
}

/// `text` with the id and name [`names_from_file`] gives; a text that is not a plain blueprint
/// object (an envelope, not JSON) is left as it is, for the write to judge.
fn named_from_file(text: &str, file: &Path) -> String {
    let Some((id, name)) = names_from_file(file) else { return text.to_string() };
    match orrery_blueprint::json::from_str::<Value>(text) {
        Ok(Value::Object(mut blueprint)) if blueprint.contains_key("tasks") => {
            blueprint.insert("id".into(), Value::String(id));
            blueprint.insert("name".into(), Value::String(name));
            Value::Object(blueprint).to_string()
        }
        _ => text.to_string(),
    }
}

/// Exports a blueprint for an antikythera server (the `export_blueprint` job: refused, with the
/// reasons, when the server would refuse it) to a file the user picks; `None` when cancelled.
#[tauri::command]
pub async fn export_blueprint_file<R: Runtime>(
    app: AppHandle<R>,
    api: State<'_, Api>,
    text: String,
    to: Option<String>,
) -> Result<Option<PathBuf>, IpcError> {
    let mut arguments = json!({"text": text});
    if let Some(to) = to {
        arguments["to"] = json!(to);
    }
    let envelope = api.call("export_blueprint", arguments).await?;
    let answer = answer_of(envelope, "the blueprint cannot be exported", |_| FailureCode::InvalidBlueprint)?;
    let exported = answer["text"].as_str().unwrap_or_default().to_string();
    let Some(path) = ask_path(&app, Dialog::Save).await else { return Ok(None) };
    write(&api, &path, exported).await?;
    Ok(Some(path))
}

/// Saves an attempt's whole log (not only what the viewer loaded) to a file the user picks;
/// `None` when cancelled. The log is copied as it is, colour codes and all.
#[tauri::command(rename_all = "snake_case")]
pub async fn save_attempt_log<R: Runtime>(
    app: AppHandle<R>,
    api: State<'_, Api>,
    session_id: String,
    task: String,
    attempt: u32,
) -> Result<Option<PathBuf>, IpcError> {
    let envelope = api.call("get_attempt", json!({"session_id": session_id, "task": task, "attempt": attempt})).await?;
    let no_log = format!("{task} #{attempt} has no log");
    let answer = answer_of(envelope, &no_log, |_| FailureCode::Io)?;
    let Some(log) = answer["attempt"]["log_path"].as_str().map(PathBuf::from) else {
        return Err(IpcError { code: FailureCode::Io, message: no_log });
    };
    let name = format!("{}-{attempt}.log", task.replace(['/', '\\'], "_"));
    let Some(path) = ask_path(&app, Dialog::SaveLog(name)).await else { return Ok(None) };
    let (from, to) = (log.clone(), path.clone());
    tokio::task::spawn_blocking(move || copy_log(&from, &to))
        .await
        .map_err(|e| IpcError {
            code: FailureCode::Io,
            message: format!("the copy of {} stopped: {e}", log.display()),
        })?
        .map_err(|e| IpcError::io("copy the log to", &path, e))?;
    Ok(Some(path))
}

/// Copies what the log holds now (it may still grow) to `to`. Only a regular file is read, and
/// opened without blocking: a task can replace its own log with a FIFO or a link to a device.
/// A log not made (the task wrote nothing yet) is an empty one.
fn copy_log(from: &std::path::Path, to: &std::path::Path) -> std::io::Result<u64> {
    use std::io::Read;
    let file = match orrery_blueprint::fsio::open_regular_file(from) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        opened => Some(opened.map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", from.display())))?),
    };
    let mut out = std::fs::File::create(to)?;
    let Some(file) = file else { return Ok(0) };
    let len = file.metadata()?.len();
    std::io::copy(&mut file.take(len), &mut out)
}

/// Whether the window holds changes not saved yet: closing it then asks the UI first.
#[derive(Default)]
pub struct Unsaved(AtomicBool);

impl Unsaved {
    pub fn get(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// The window's title (the open blueprint) and whether it holds unsaved changes.
#[tauri::command]
pub fn set_window_state<R: Runtime>(
    window: WebviewWindow<R>,
    flag: State<'_, Unsaved>,
    title: String,
    unsaved: bool,
) -> Result<(), IpcError> {
    flag.0.store(unsaved, Ordering::SeqCst);
    window
        .set_title(&title)
        .map_err(|e| IpcError { code: FailureCode::Io, message: format!("cannot set the title: {e}") })
}

/// Closes the window for good: the UI calls it once the user chose what to do with unsaved work.
#[tauri::command]
pub fn close_window<R: Runtime>(window: WebviewWindow<R>) -> Result<(), IpcError> {
    window.destroy().map_err(|e| IpcError { code: FailureCode::Io, message: format!("cannot close the window: {e}") })
}

enum Dialog {
    Open,
    Save,
    /// Saving a log, under a proposed file name.
    SaveLog(String),
}

/// The file the user picks in the native dialog (a blueprint, or where a log goes); none when
/// cancelled.
async fn ask_path<R: Runtime>(app: &AppHandle<R>, dialog: Dialog) -> Option<PathBuf> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let chosen = move |p| {
        let _ = tx.send(p);
    };
    let files = app.dialog().file();
    match dialog {
        Dialog::Open => files.add_filter("Blueprint", &["json"]).pick_file(chosen),
        Dialog::Save => files.add_filter("Blueprint", &["json"]).save_file(chosen),
        Dialog::SaveLog(name) => files.add_filter("Log", &["log", "txt"]).set_file_name(name).save_file(chosen),
    }
    rx.await.ok().flatten().and_then(|p| p.into_path().ok())
}

async fn read<R: Runtime>(window: &WebviewWindow<R>, recent: &Recent, path: PathBuf) -> Result<OpenedFile, IpcError> {
    // A regular file only, at most 64 MiB (a FIFO or a device is refused, never waited on).
    let file = path.clone();
    let text = tauri::async_runtime::spawn_blocking(move || orrery_api::fsio::read_blueprint(&file))
        .await
        .map_err(|e| IpcError::io("read", &path, std::io::Error::other(e)))?
        .map_err(|e| IpcError::io("read", &path, e))?;
    remember(window.app_handle(), recent, &path);
    Ok(OpenedFile { path, text })
}

/// Puts a file first in the recent list, and in the menu's.
fn remember<R: Runtime>(app: &AppHandle<R>, recent: &Recent, path: &Path) {
    recent.add(path);
    crate::menu::refresh_recent(app);
}

/// One command as the UI sees it: the JSON Schemas of its arguments and of its answer.
pub struct CommandInfo {
    pub name: &'static str,
    pub arguments: Value,
    pub answer: Value,
}

fn declare<A: JsonSchema, R: JsonSchema>(name: &'static str) -> CommandInfo {
    CommandInfo { name, arguments: schemars::schema_for!(A).to_value(), answer: schemars::schema_for!(R).to_value() }
}

/// The arguments of each command, by name as the UI passes them (the command functions take
/// them one by one, as Tauri wants).
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct NoArguments {}

#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct CallJobArguments {
    pub name: String,
    pub arguments: Value,
}

#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct SaveArguments {
    pub path: PathBuf,
    pub text: String,
}

#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct PathArguments {
    pub path: PathBuf,
}

#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct SaveAsArguments {
    pub text: String,
    /// A new blueprint (still Untitled) takes its id and name from the file's name.
    pub name_from_file: Option<bool>,
}

#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ExportArguments {
    pub text: String,
    /// `antikythera` (plain JSON, the default) or `compas` (the envelope).
    pub to: Option<String>,
}

#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct AttemptLogArguments {
    pub session_id: String,
    /// `{instance}.{task}`, or a task id of the root blueprint.
    pub task: String,
    pub attempt: u32,
}

#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct WindowStateArguments {
    pub title: String,
    /// Whether closing the window must ask first.
    pub unsaved: bool,
}

/// Every command registered by [`crate::configure`], with its arguments (by name, as the UI
/// passes them) and its answer on success; a failure is an [`IpcError`].
pub fn surface() -> Vec<CommandInfo> {
    vec![
        declare::<NoArguments, Vec<JobInfo>>("list_jobs"),
        declare::<CallJobArguments, Envelope>("call_job"),
        declare::<NoArguments, Option<OpenedFile>>("startup_blueprint_file"),
        declare::<NoArguments, Option<OpenedFile>>("open_blueprint_file"),
        declare::<SaveArguments, ()>("save_blueprint_file"),
        declare::<SaveAsArguments, Option<OpenedFile>>("save_blueprint_file_as"),
        declare::<NoArguments, Vec<PathBuf>>("recent_blueprint_files"),
        declare::<PathArguments, OpenedFile>("open_recent_blueprint_file"),
        declare::<PathArguments, OpenedFile>("open_library_blueprint_file"),
        declare::<ExportArguments, Option<PathBuf>>("export_blueprint_file"),
        declare::<WindowStateArguments, ()>("set_window_state"),
        declare::<NoArguments, ()>("close_window"),
        declare::<AttemptLogArguments, Option<PathBuf>>("save_attempt_log"),
        declare::<NoArguments, About>("about"),
    ]
}

#[cfg(test)]
mod tests {
    use super::{copy_log, named_from_file, names_from_file};
    use std::path::Path;

    #[test]
    fn a_blueprint_saved_as_a_file_is_named_from_it() {
        let names = |f: &str| names_from_file(Path::new(f));
        assert_eq!(names("/w/nightly-report.blueprint.json"), Some(("nightly-report".into(), "Nightly report".into())));
        assert_eq!(names("/w/nightly report.json"), Some(("nightly_report".into(), "Nightly report".into())));
        assert_eq!(names("/w/été 2026.json"), Some(("été_2026".into(), "Été 2026".into())));
        assert_eq!(names("/w/..json"), None, "nothing to make an id of");
        let named =
            named_from_file(r#"{"id": "untitled", "name": "Untitled", "tasks": []}"#, Path::new("/w/built.json"));
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&named).unwrap(),
            serde_json::json!({"id": "built", "name": "Built", "tasks": []})
        );
        let envelope = r#"{"dtype": "antikythera/Blueprint", "data": {}}"#;
        assert_eq!(named_from_file(envelope, Path::new("/w/built.json")), envelope, "an envelope is left as it is");
    }

    #[test]
    fn a_log_is_copied_as_it_is_and_a_fifo_in_its_place_is_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let (log, to) = (dir.path().join("a.log"), dir.path().join("saved.log"));
        std::fs::write(&log, "line 1\n\x1b[31mred\x1b[0m\n").unwrap();
        assert_eq!(copy_log(&log, &to).unwrap(), std::fs::metadata(&log).unwrap().len());
        assert_eq!(std::fs::read(&to).unwrap(), std::fs::read(&log).unwrap());

        let fifo = dir.path().join("b.log");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        // Without a writer, opening a FIFO for reading would wait for ever.
        let e = copy_log(&fifo, &dir.path().join("other.log")).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        assert!(!dir.path().join("other.log").exists(), "nothing is written for a refused log");

        // A task that wrote nothing has no log: saved as an empty file.
        let empty = dir.path().join("empty.log");
        assert_eq!(copy_log(&dir.path().join("never-made.log"), &empty).unwrap(), 0);
        assert_eq!(std::fs::read(&empty).unwrap(), b"");
    }
}
