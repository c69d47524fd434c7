//! The live progress display of `orrery run` and `orrery resume` when standard output is a
//! terminal (and `--format text`): a small block redrawn in place at the bottom of the terminal,
//! with permanent lines scrolling above it for what the user must keep.
//!
//! Three parts, each a module of its own, so that what is drawn can be tested without a
//! terminal:
//! - [`LiveState`] (`state`) folds the session's committed events into what the display shows: each
//!   task's state, the attempt and progress step of the running ones, and the [`Notice`]s
//!   (failed tasks with their error, notifications, prompts, scope loops) still to print.
//! - [`block`], [`Notice::line`] and [`summary`] (`render`) render that state into [`Line`]s: pure
//!   functions of the state, the time and the terminal [`Size`]; [`Line::paint`] truncates a
//!   line to the width (never wrapping it) and colours it, or not (`NO_COLOR`).
//! - [`Screen`] (`screen`) owns the terminal output: it erases the block it drew (cursor up, clear to the
//!   end of the screen), prints the new permanent lines, and draws the block again, all in one
//!   write. [`follow`] (here) drives it from the event channel and a 100 ms ticker: events are
//!   coalesced, so the block is redrawn at most ten times a second, and the ticker moves the
//!   elapsed times; an unchanged frame is not written again.
//!
//! No alternate screen and no hidden cursor: whatever happens to the process, the terminal is
//! left usable. A prompt asked on the terminal erases the block first and the display waits
//! while the answer is typed. Messages that would otherwise be written over the block (the
//! Ctrl-C acknowledgements) come in as notes and are printed as permanent lines.

use crate::prompt::ask;
use orrery_api::{Api, Event, EventData, SessionControl, SessionView};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{broadcast, mpsc};

pub(crate) mod render;
mod screen;
mod state;
#[cfg(test)]
mod tests;

use render::{block, summary, Line};
use screen::{terminal_size, Screen};
use state::{LiveState, Notice};

fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

/// Reads from the store what a resume does not announce; a store that cannot be read leaves
/// the display with what the events say.
async fn seed_from_store(state: &mut LiveState, api: &Api, session_id: &str, overwrite: bool) {
    let Ok(envelope) = api.call("get_session", serde_json::json!({ "session_id": session_id })).await else { return };
    let Ok(view) = serde_json::from_value::<SessionView>(envelope.answer) else { return };
    state.seed(&view.session.blueprint_id, view.tasks.into_iter().map(|n| (n.node, n.state)), overwrite);
}

/// Shows the session's events live on the terminal until the event channel closes, then
/// replaces the block with the summary. `notes` are messages to print above the block;
/// prompts are asked on the terminal when `interactive`.
pub async fn follow(
    mut events: broadcast::Receiver<Arc<Event>>,
    mut notes: mpsc::UnboundedReceiver<String>,
    control: SessionControl,
    interactive: bool,
    api: Api,
) {
    let mut state = LiveState::new(now_ms());
    let mut screen = Screen::new(std::io::stdout(), crate::commands::colour(true));
    let mut ticker = tokio::time::interval(Duration::from_millis(100));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut notes_open = true;
    loop {
        tokio::select! {
            event = events.recv() => match event {
                Ok(event) => {
                    if state.needs_seed(&event) {
                        seed_from_store(&mut state, &api, &event.session_id, false).await;
                    }
                    state.apply(&event);
                    if interactive && matches!(event.data(), Some(EventData::PromptWaiting(_))) {
                        // The question asked is the line kept: no `prompt` notice besides it.
                        let mut notices = state.take_notices();
                        notices.retain(|n| !matches!(n, Notice::Prompt { .. }));
                        screen.clear(&notices.iter().map(Notice::line).collect::<Vec<_>>());
                        ask(&event, &control).await;
                    }
                }
                // Events were missed (the display waited for an answer): the store has them.
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    let id = state.session_id.clone();
                    if !id.is_empty() {
                        seed_from_store(&mut state, &api, &id, true).await;
                    }
                }
                Err(broadcast::error::RecvError::Closed) => break,
            },
            note = notes.recv(), if notes_open => match note {
                Some(note) => state.notices.push(Notice::Said(note)),
                None => notes_open = false,
            },
            // Nothing is drawn before the tasks are known.
            _ = ticker.tick(), if state.begun => {
                let size = terminal_size();
                let above: Vec<Line> = state.take_notices().iter().map(Notice::line).collect();
                screen.draw(&above, &block(&state, now_ms(), size), size.width);
            }
        }
    }
    while let Ok(note) = notes.try_recv() {
        state.notices.push(Notice::Said(note));
    }
    state.finish();
    let mut above: Vec<Line> = state.take_notices().iter().map(Notice::line).collect();
    above.extend(summary(&state, now_ms()));
    screen.clear(&above);
}
