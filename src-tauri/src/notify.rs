//! Desktop notifications for what a user waits for while looking elsewhere: a run that ended,
//! a prompt that waits for an answer. None while a window of the app has the focus: the run
//! views show the same, and a notification about what one is looking at is noise.

use orrery_api::{Api, PROMPT_WAITING};
use orrery_store::{kinds, Event, EventPayload};
use serde_json::json;
use tauri::{AppHandle, Manager, Runtime};
use tauri_plugin_notification::NotificationExt;

#[derive(Debug, PartialEq, Eq)]
pub struct Notice {
    pub title: String,
    pub body: String,
}

/// Whether an event is worth a notification (a run ended, a prompt waits).
pub fn worth_telling(event: &Event) -> bool {
    notice(event, "").is_some()
}

/// What to tell about an event of the run named `run`, if anything.
pub fn notice(event: &Event, run: &str) -> Option<Notice> {
    let EventPayload::Whole { value } = &event.payload else { return None };
    let (title, body) = match event.kind.as_str() {
        kinds::SESSION_STATE_CHANGED => match value["state"].as_str()? {
            "completed" => (format!("{run} completed"), "Every task is done.".to_string()),
            "failed" => {
                let why = value["error"]["message"].as_str().unwrap_or("A task failed.");
                (format!("{run} failed"), why.to_string())
            }
            "stopped" => (format!("{run} stopped"), "It can be resumed from where it ended.".to_string()),
            _ => return None,
        },
        PROMPT_WAITING => {
            let node = value["node"].as_str().unwrap_or("A task");
            let question = value["message"].as_str().filter(|m| !m.is_empty()).unwrap_or("It asks for an answer.");
            (format!("{run} waits for an answer"), format!("{node}: {question}"))
        }
        _ => return None,
    };
    Some(Notice { title, body })
}

/// Shows the notification an event is worth, unless a window of the app has the focus.
pub fn tell<R: Runtime>(app: &AppHandle<R>, event: &Event) {
    if !worth_telling(event) || app.webview_windows().values().any(|w| w.is_focused().unwrap_or(false)) {
        return;
    }
    let (app, event) = (app.clone(), event.clone());
    tauri::async_runtime::spawn(async move {
        let api = app.state::<Api>();
        let named = api.call("get_session", json!({"session_id": event.session_id})).await;
        let run = named.ok().and_then(|e| e.answer["session"]["name"].as_str().map(str::to_string));
        let Some(notice) = notice(&event, run.as_deref().unwrap_or("A run")) else { return };
        if let Err(e) = app.notification().builder().title(notice.title).body(notice.body).show() {
            // No notification service (a bare X session): the run views still say it.
            eprintln!("orrery-desktop: no desktop notification: {e}");
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(kind: &str, value: serde_json::Value) -> Event {
        Event {
            session_id: "s".into(),
            seq: 1,
            global_seq: 1,
            time_ms: 0,
            kind: kind.into(),
            run_id: None,
            payload: EventPayload::Whole { value },
        }
    }

    #[test]
    fn a_run_that_ends_or_waits_is_told_and_nothing_else() {
        let told = |kind, value| notice(&event(kind, value), "deploy");
        assert_eq!(
            told(kinds::SESSION_STATE_CHANGED, json!({"state": "failed", "error": {"message": "check exited with 1"}})),
            Some(Notice { title: "deploy failed".into(), body: "check exited with 1".into() })
        );
        assert_eq!(
            told(kinds::SESSION_STATE_CHANGED, json!({"state": "completed"})).unwrap().title,
            "deploy completed"
        );
        assert_eq!(
            told(PROMPT_WAITING, json!({"node": "deploy.ask", "message": "Ship it?"})),
            Some(Notice { title: "deploy waits for an answer".into(), body: "deploy.ask: Ship it?".into() })
        );
        assert_eq!(told(kinds::SESSION_STATE_CHANGED, json!({"state": "running"})), None);
        assert_eq!(told(kinds::TASK_STATE_CHANGED, json!({"state": "FAILED"})), None);
        let cut = Event {
            payload: EventPayload::Cut { prefix: "{".into(), full_len: 1, full_sha256: String::new() },
            ..event(kinds::SESSION_STATE_CHANGED, json!(null))
        };
        assert!(!worth_telling(&cut));
    }
}
