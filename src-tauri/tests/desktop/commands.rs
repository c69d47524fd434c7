//! The commands through Tauri's real IPC path (capabilities included), on the mock runtime.

use std::path::{Path, PathBuf};

use orrery_desktop::{configure, Settings};
use serde_json::{json, Value};
use tauri::ipc::{CallbackFn, InvokeBody};
use tauri::test::{get_ipc_response, mock_builder, INVOKE_KEY};
use tauri::webview::InvokeRequest;
use tauri::{App, Listener, Manager, WebviewWindow, WebviewWindowBuilder};

struct Shell {
    _app: App<tauri::test::MockRuntime>,
    window: WebviewWindow<tauri::test::MockRuntime>,
    dir: tempfile::TempDir,
}

fn shell(open: Option<PathBuf>) -> Shell {
    let dir = tempfile::tempdir().unwrap();
    let settings = Settings {
        db: dir.path().join("orrery.db"),
        open,
        recent: Some(dir.path().join("config/recent.json")),
        window: Some(dir.path().join("config/window.json")),
        login: Default::default(),
    };
    let app = configure(mock_builder(), settings).build(tauri::generate_context!()).expect("the app builds");
    // `run` would open the configured windows; the mock app is never run, so open it here.
    let config = app.config().app.windows.first().expect("tauri.conf.json declares the main window").clone();
    let window = WebviewWindowBuilder::from_config(&app, &config).unwrap().build().expect("the main window opens");
    Shell { _app: app, window, dir }
}

impl Shell {
    /// Invokes `cmd` as the web view would: the answer, or the error value that crossed IPC.
    fn invoke(&self, cmd: &str, args: Value) -> Result<Value, Value> {
        let request = InvokeRequest {
            cmd: cmd.into(),
            callback: CallbackFn(0),
            error: CallbackFn(1),
            url: "tauri://localhost".parse().unwrap(),
            body: InvokeBody::Json(args),
            headers: Default::default(),
            invoke_key: INVOKE_KEY.to_string(),
        };
        get_ipc_response(&self.window, request).map(|body| body.deserialize::<Value>().unwrap())
    }
}

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples").join(name).canonicalize().unwrap()
}

#[test]
fn list_jobs_answers_the_facades_catalogue_with_schemas() {
    let shell = shell(None);
    let jobs = shell.invoke("list_jobs", json!({})).expect("list_jobs answers");
    let validate = jobs.as_array().unwrap().iter().find(|j| j["name"] == "validate_blueprint");
    let validate = validate.expect("the catalogue has validate_blueprint, which the editor calls");
    assert_eq!(validate["arguments"]["type"], "object", "each job carries the JSON Schema of its arguments");
}

#[test]
fn call_job_answers_the_facades_envelope() {
    let shell = shell(None);
    let text = std::fs::read_to_string(example("assembly.json")).unwrap();
    let envelope =
        shell.invoke("call_job", json!({"name": "validate_blueprint", "arguments": {"text": text}})).unwrap();
    assert_eq!(envelope["success"], true, "{envelope}");
    assert_eq!(envelope["answer"][0]["valid"], true, "the example is a valid blueprint: {envelope}");
    assert_eq!(envelope["metadata"]["job"], "validate_blueprint");
}

#[test]
fn a_refused_call_crosses_ipc_as_a_stable_code_and_a_message() {
    let shell = shell(None);
    let unknown = shell.invoke("call_job", json!({"name": "no_such_job", "arguments": {}})).unwrap_err();
    assert_eq!(unknown["code"], "unknown_job", "{unknown}");
    assert!(unknown["message"].as_str().unwrap().contains("no_such_job"), "the message names the job: {unknown}");

    let invalid =
        shell.invoke("call_job", json!({"name": "format_blueprint", "arguments": {"txt": "{}"}})).unwrap_err();
    assert_eq!(invalid["code"], "invalid_argument", "{invalid}");
}

#[test]
fn the_blueprint_given_at_start_is_read_and_may_be_saved_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("assembly.json");
    std::fs::copy(example("assembly.json"), &path).unwrap();
    let shell = shell(Some(path.clone()));

    let opened = shell.invoke("startup_blueprint_file", json!({})).unwrap();
    assert_eq!(opened["path"], json!(path), "{opened}");
    assert_eq!(opened["text"], json!(std::fs::read_to_string(&path).unwrap()));

    // Saved through the core: canonical, whatever the layout of the text given.
    let compact =
        serde_json::to_string(&serde_json::from_str::<Value>(opened["text"].as_str().unwrap()).unwrap()).unwrap();
    shell.invoke("save_blueprint_file", json!({"path": path, "text": compact})).unwrap();
    let canonical =
        shell.invoke("call_job", json!({"name": "format_blueprint", "arguments": {"text": compact}})).unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), canonical["answer"]["text"].as_str().unwrap());

    // Text that is not a blueprint is refused, and the file keeps what it had.
    let before = std::fs::read_to_string(&path).unwrap();
    let refused = shell.invoke("save_blueprint_file", json!({"path": path, "text": "{\"saved\": true}"})).unwrap_err();
    assert_eq!(refused["code"], "invalid_blueprint", "{refused}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), before);

    // Its layout may be kept beside it: the user chose the file.
    let positions = json!({"start": {"x": 1, "y": 2}});
    let kept =
        shell.invoke("call_job", json!({"name": "save_layout", "arguments": {"file": path, "positions": positions}}));
    assert_eq!(kept.unwrap()["success"], true);
    assert!(dir.path().join("assembly.json.layout").exists());
}

#[test]
fn without_a_blueprint_at_start_there_is_nothing_to_read() {
    let shell = shell(None);
    assert_eq!(shell.invoke("startup_blueprint_file", json!({})).unwrap(), Value::Null);
}

#[test]
fn the_web_view_cannot_write_run_or_publish_a_file_the_user_did_not_choose() {
    let shell = shell(None);
    let target = shell.dir.path().join("elsewhere.json");
    let refused = shell.invoke("save_blueprint_file", json!({"path": target, "text": "{}"})).unwrap_err();
    assert_eq!(refused["code"], "not_granted", "{refused}");
    // Nor through the jobs that write files.
    let text = std::fs::read_to_string(example("assembly.json")).unwrap();
    for (job, arguments) in [
        ("write_blueprint_file", json!({"file": target, "text": text})),
        ("save_layout", json!({"file": target, "positions": {}})),
        ("save_layout", json!({"positions": {}})),
        // A page must not run a blueprint of shell tasks it found on the disk,
        ("start_session", json!({"file": example("assembly.json")})),
        // nor send files it found to a server.
        ("publish_blueprints", json!({"server": "http://127.0.0.1:9", "files": [example("assembly.json")]})),
        ("publish_blueprints", json!({"server": "http://127.0.0.1:9", "files": [42]})),
    ] {
        let refused = shell.invoke("call_job", json!({"name": job, "arguments": arguments})).unwrap_err();
        assert_eq!(refused["code"], "not_granted", "{job}: {refused}");
    }
    assert!(!target.exists(), "nothing was written");
    assert!(!shell.dir.path().join("elsewhere.json.layout").exists());
}

#[test]
fn the_capability_grants_no_plugin_command_the_ui_does_not_use() {
    let shell = shell(None);
    // Dialogs are opened by the shell's own commands, never by the web view directly.
    let refused = shell.invoke("plugin:dialog|open", json!({"options": {}})).unwrap_err();
    assert!(refused.to_string().contains("not allowed"), "{refused}");
}

#[test]
fn events_of_a_session_started_through_the_shell_reach_the_windows() {
    let files = tempfile::tempdir().unwrap();
    let blueprint = files.path().join("tiny.json");
    let tasks = json!({"id": "tiny", "name": "Tiny", "version": "1.0", "tasks": [
        {"id": "start", "type": "system.start"},
        {"id": "end", "type": "system.end", "depends_on": [{"id": "start", "type": "FS"}]}
    ]});
    std::fs::write(&blueprint, tasks.to_string()).unwrap();
    // The file the app was started with: the user chose it, so it may run.
    let shell = shell(Some(blueprint.clone()));
    let (tx, rx) = std::sync::mpsc::channel();
    shell.window.listen(orrery_desktop::EVENT, move |event| {
        let _ = tx.send(serde_json::from_str::<Value>(event.payload()).unwrap());
    });
    orrery_desktop::forward_events(shell.window.app_handle().clone());

    let started = shell.invoke("call_job", json!({"name": "start_session", "arguments": {"file": blueprint}})).unwrap();
    assert_eq!(started["success"], true, "{started}");
    let event = rx.recv_timeout(std::time::Duration::from_secs(20)).expect("an event within 20 s");
    assert!(event["session_id"].is_string() && event["global_seq"].is_u64(), "a store event: {event}");
}

#[test]
fn the_capability_grants_exactly_the_declared_commands() {
    let capability: Value =
        serde_json::from_str(include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/capabilities/main.json"))).unwrap();
    let mut granted: Vec<String> = capability["permissions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p.as_str()?.strip_prefix("allow-"))
        .map(|p| p.replace('-', "_"))
        .collect();
    let mut declared: Vec<String> = orrery_desktop::commands::surface().iter().map(|c| c.name.to_string()).collect();
    granted.sort();
    declared.sort();
    assert_eq!(granted, declared, "capabilities/main.json grants the commands that commands::surface declares");
}

#[test]
fn about_names_the_apps_version_its_store_and_its_log_folder() {
    let shell = shell(None);
    let about = shell.invoke("about", json!({})).unwrap();
    assert_eq!(about["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(about["store"], json!(shell.dir.path().join("orrery.db")));
    assert_eq!(about["logs"], json!(shell.dir.path().join("runs")));
    assert_eq!(about["login_shell"], json!(null), "no login shell was asked");
}

#[test]
fn files_opened_are_offered_again_and_only_those_may_be_opened_from_the_list() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("assembly.json");
    std::fs::copy(example("assembly.json"), &path).unwrap();
    let shell = shell(Some(path.clone()));
    assert_eq!(shell.invoke("recent_blueprint_files", json!({})).unwrap(), json!([]));
    shell.invoke("startup_blueprint_file", json!({})).unwrap();
    assert_eq!(shell.invoke("recent_blueprint_files", json!({})).unwrap(), json!([path]));

    let again = shell.invoke("open_recent_blueprint_file", json!({"path": path})).unwrap();
    assert_eq!(again["text"], json!(std::fs::read_to_string(&path).unwrap()));
    let other = dir.path().join("other.json");
    std::fs::write(&other, "{}").unwrap();
    let refused = shell.invoke("open_recent_blueprint_file", json!({"path": other})).unwrap_err();
    assert_eq!(refused["code"], "not_granted", "{refused}");
    let kept = std::fs::read_to_string(shell.dir.path().join("config/recent.json")).unwrap();
    assert!(kept.contains("assembly.json"), "the list is kept for the next start: {kept}");
}

#[test]
fn blueprints_beside_an_opened_file_may_be_opened_and_saved_and_no_others() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("assembly.json");
    std::fs::copy(example("assembly.json"), &path).unwrap();
    let inner = dir.path().join("place_element.json");
    std::fs::copy(example("place_element.json"), &inner).unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let stranger = elsewhere.path().join("place_element.json");
    std::fs::copy(example("place_element.json"), &stranger).unwrap();
    // Nothing is opened: no folder is a library.
    let refused = shell(None).invoke("open_library_blueprint_file", json!({"path": inner})).unwrap_err();
    assert_eq!(refused["code"], "not_granted", "{refused}");

    let shell = shell(Some(path.clone()));
    let opened = shell.invoke("open_library_blueprint_file", json!({"path": inner})).unwrap();
    assert_eq!(opened["text"], json!(std::fs::read_to_string(&inner).unwrap()));
    // Opened, it may be saved (through the core: canonical).
    let text = opened["text"].as_str().unwrap();
    shell.invoke("save_blueprint_file", json!({"path": inner, "text": text})).expect("the inner blueprint is saved");

    for (path, why) in [(&stranger, "in another folder"), (&dir.path().join("assembly.json.layout"), "not a blueprint")]
    {
        let refused = shell.invoke("open_library_blueprint_file", json!({"path": path})).unwrap_err();
        assert_eq!(refused["code"], "not_granted", "{why}: {refused}");
    }
}

#[test]
fn an_export_the_server_would_refuse_is_refused_with_its_reasons_before_any_dialog() {
    let shell = shell(None);
    let orphan = json!({"id": "x", "name": "X", "version": "1.0", "tasks": [
        {"id": "start", "type": "system.start"},
        {"id": "lost", "type": "shell.run"},
        {"id": "end", "type": "system.end", "depends_on": [{"id": "start", "type": "FS"}]}
    ]});
    let refused = shell.invoke("export_blueprint_file", json!({"text": orphan.to_string()})).unwrap_err();
    assert_eq!(refused["code"], "invalid_blueprint", "{refused}");
    assert!(refused["message"].as_str().unwrap().contains("lost"), "the reason names the task: {refused}");
}

#[test]
fn closing_a_window_with_unsaved_changes_asks_the_ui_instead() {
    let shell = shell(None);
    let (tx, rx) = std::sync::mpsc::channel();
    shell.window.listen(orrery_desktop::CLOSE_REQUESTED, move |_| {
        let _ = tx.send(());
    });
    shell.invoke("set_window_state", json!({"title": "Orrery — a.json •", "unsaved": true})).unwrap();
    // What a close request meets (the mock runtime sends none itself).
    let window = shell.window.as_ref().window();
    assert!(orrery_desktop::ask_before_closing(&window), "the window stays open");
    rx.recv_timeout(std::time::Duration::from_secs(5)).expect("the UI is asked");

    shell.invoke("set_window_state", json!({"title": "Orrery — a.json", "unsaved": false})).unwrap();
    assert!(!orrery_desktop::ask_before_closing(&window), "the window closes");
    assert!(rx.recv_timeout(std::time::Duration::from_millis(300)).is_err(), "nothing to ask");
}

#[test]
fn the_menu_lists_the_recent_files_and_hands_each_choice_to_the_ui() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("assembly.json");
    std::fs::copy(example("assembly.json"), &path).unwrap();
    let shell = shell(Some(path.clone()));
    let app = shell.window.app_handle().clone();
    let recent_labels = || {
        let submenu = orrery_desktop::menu::recent_submenu(&app).expect("File > Open Recent");
        submenu.items().unwrap().iter().map(|i| i.as_menuitem().unwrap().text().unwrap()).collect::<Vec<_>>()
    };
    assert_eq!(recent_labels(), ["No Recent Blueprints"]);
    shell.invoke("startup_blueprint_file", json!({})).unwrap();
    let labels = recent_labels();
    assert_eq!(labels.len(), 1);
    assert!(labels[0].starts_with("assembly.json  ("), "{labels:?}");

    let (tx, rx) = std::sync::mpsc::channel();
    shell.window.listen(orrery_desktop::menu::MENU, move |event| {
        let _ = tx.send(serde_json::from_str::<Value>(event.payload()).unwrap());
    });
    for (id, expected) in [
        ("file.save", json!({"command": "file.save", "path": null})),
        ("recent:0", json!({"command": "open_recent", "path": path})),
    ] {
        orrery_desktop::menu::on_event(&app, tauri::menu::MenuEvent { id: id.into() });
        assert_eq!(rx.recv_timeout(std::time::Duration::from_secs(5)).unwrap(), expected);
    }
}

#[test]
fn every_command_takes_its_arguments_by_the_names_its_declaration_gives_the_ui() {
    // Called with none of its arguments, a command names the first one it misses, before it
    // runs: that name must be one the declaration (and so the generated types) gives. Tauri
    // expects camelCase unless told otherwise, which `session_id` in the types would miss.
    let shell = shell(None);
    let mut checked = 0;
    for command in orrery_desktop::commands::surface() {
        let required: Vec<&str> = command.arguments["required"]
            .as_array()
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if required.is_empty() {
            continue; // it would run: a dialog, a window closed
        }
        let refused = shell.invoke(command.name, json!({})).unwrap_err();
        let said = refused.as_str().map(String::from).unwrap_or_else(|| refused.to_string());
        let key = said.split("missing required key ").nth(1).map(str::trim);
        assert!(
            key.is_some_and(|k| required.contains(&k)),
            "{}: declared {required:?}, the command says {said:?}",
            command.name
        );
        checked += 1;
    }
    assert!(checked >= 5, "only {checked} commands take arguments");
}
