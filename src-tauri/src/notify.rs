//! Desktop notifications for what a user waits for while looking elsewhere: a run that ended,
//! a prompt that waits for an answer, a task held at a breakpoint. None while a window of the app has the focus: the run
//! views show the same, and a notification about what one is looking at is noise.

use orrery_api::{Api, Event, EventData};
use orrery_blueprint::SessionState;
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
    let (title, body) = match event.data()? {
        EventData::SessionStateChanged(changed) => match changed.state {
            SessionState::Completed => (format!("{run} completed"), "Every task is done.".to_string()),
            SessionState::Failed => {
                let why = changed.error.as_ref().map_or("A task failed.", |e| e.message.as_str());
                (format!("{run} failed"), why.to_string())
            }
            SessionState::Stopped => (format!("{run} stopped"), "It can be resumed from where it ended.".to_string()),
            SessionState::Pending | SessionState::Running => return None,
        },
        EventData::PromptWaiting(prompt) => {
            let node = if prompt.node.is_empty() { "A task" } else { prompt.node.as_str() };
            let question = if prompt.message.is_empty() { "It asks for an answer." } else { prompt.message.as_str() };
            (format!("{run} waits for an answer"), format!("{node}: {question}"))
        }
        EventData::Breakpoints(holds) if holds.what == "held" => {
            let at = holds.held.iter().find(|h| h.node == holds.node).map_or("", |h| h.at.as_str());
            (format!("{run} holds at a breakpoint"), format!("{} ({at}): continue, step or skip it", holds.node))
        }
        // Nothing else is waited for by someone looking elsewhere.
        EventData::SessionCreated(_)
        | EventData::TaskStateChanged(_)
        | EventData::AttemptStarted(_)
        | EventData::AttemptSettled(_)
        | EventData::Progress(_)
        | EventData::DataUpdated(_)
        | EventData::PromptAnswered(_)
        | EventData::Breakpoints(_)
        | EventData::DataEdited(_)
        | EventData::Notification(_)
        | EventData::SessionBlueprints(_)
        | EventData::BrokerDispatch(_)
        | EventData::LogCapped(_)
        | EventData::LogGrew(_)
        | EventData::RemoteLink(_) => return None,
    };
    Some(Notice { title, body })
}

/// Whether `event` is a run holding at a breakpoint.
fn holds(event: &Event) -> bool {
    matches!(event.data(), Some(EventData::Breakpoints(h)) if h.what == "held")
}

/// Shows the notification an event is worth, unless a window of the app has the focus; a run
/// that holds at a breakpoint also brings the window forward (someone set it to look there).
pub fn tell<R: Runtime>(app: &AppHandle<R>, event: &Event) {
    if !worth_telling(event) {
        return;
    }
    let focused = app.webview_windows().values().any(|w| w.is_focused().unwrap_or(false));
    if holds(event) && !focused {
        for window in app.webview_windows().values() {
            // A window manager may refuse the focus: the request for attention still marks it.
            let _ = window.unminimize();
            let _ = window.set_focus();
            let _ = window.request_user_attention(Some(tauri::UserAttentionType::Informational));
        }
    }
    if focused {
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

    use orrery_api::{
        BreakpointHolds, ErrorRecord, EventPayload, HeldTask, PromptWaiting, SessionStateChanged, TaskStateChanged,
    };
    use orrery_blueprint::TaskState;

    fn event(data: EventData) -> Event {
        Event {
            session_id: "s".into(),
            seq: 1,
            global_seq: 1,
            time_ms: 0,
            run_id: None,
            payload: EventPayload::Whole(Box::new(data)),
        }
    }

    fn session(state: SessionState, error: Option<&str>) -> EventData {
        let error = error.map(|m| ErrorRecord { code: "TASK_FAILED".into(), message: m.into(), details: None });
        EventData::SessionStateChanged(SessionStateChanged { state, error })
    }

    #[test]
    fn a_run_that_ends_or_waits_is_told_and_nothing_else() {
        let told = |data| notice(&event(data), "deploy");
        assert_eq!(
            told(session(SessionState::Failed, Some("check exited with 1"))),
            Some(Notice { title: "deploy failed".into(), body: "check exited with 1".into() })
        );
        assert_eq!(told(session(SessionState::Completed, None)).unwrap().title, "deploy completed");
        let asked = PromptWaiting {
            node: "deploy.ask".into(),
            task: "ask".into(),
            task_type: "user_prompt.confirm".into(),
            message: "Ship it?".into(),
            outputs: vec!["result".into()],
            inputs: Default::default(),
            options: None,
        };
        assert_eq!(
            told(EventData::PromptWaiting(asked)),
            Some(Notice { title: "deploy waits for an answer".into(), body: "deploy.ask: Ship it?".into() })
        );
        let held = |what: &str, held: Vec<HeldTask>| {
            EventData::Breakpoints(BreakpointHolds {
                node: "deploy.ship".into(),
                what: what.into(),
                held,
                breakpoints: Vec::new(),
            })
        };
        let ship = HeldTask { node: "deploy.ship".into(), at: "before".into() };
        assert_eq!(
            told(held("held", vec![ship])),
            Some(Notice {
                title: "deploy holds at a breakpoint".into(),
                body: "deploy.ship (before): continue, step or skip it".into()
            })
        );
        assert_eq!(told(held("continue", Vec::new())), None, "letting go is the user's own doing");
        assert_eq!(told(session(SessionState::Running, None)), None);
        let failed = TaskStateChanged {
            node: "deploy.check".into(),
            blueprint_id: "deploy".into(),
            task_id: "check".into(),
            state: TaskState::Failed,
            previous: Some(TaskState::Running),
        };
        assert_eq!(told(EventData::TaskStateChanged(failed)), None);
        let cut = Event {
            payload: EventPayload::Cut {
                kind: "session_state_changed".into(),
                prefix: "{".into(),
                full_len: 1,
                full_sha256: String::new(),
            },
            ..event(session(SessionState::Failed, None))
        };
        assert!(!worth_telling(&cut));
    }

    #[test]
    fn only_a_hold_brings_the_window_forward() {
        let breakpoints = |what: &str| {
            event(EventData::Breakpoints(BreakpointHolds {
                node: "deploy.ship".into(),
                what: what.into(),
                held: Vec::new(),
                breakpoints: Vec::new(),
            }))
        };
        assert!(holds(&breakpoints("held")));
        assert!(!holds(&breakpoints("set")) && !holds(&breakpoints("continue")));
        assert!(!holds(&event(session(SessionState::Failed, None))));
    }
}
