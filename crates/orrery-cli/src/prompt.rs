//! The terminal prompt: a waiting prompt asked on standard error and answered with the line
//! typed. Apart from `run` and `live` because both ask (the plain lines and the live display),
//! and a value typed or given as `--answer`/`--param` is read the same way ([`json_or_text`]).

use orrery_api::{Event, EventData, SessionControl};
use serde_json::Value;
use std::io::{BufRead, Write};

pub(crate) fn json_or_text(value: &str) -> Value {
    orrery_blueprint::json::from_str(value).unwrap_or_else(|_| Value::String(value.to_string()))
}

/// Asks a waiting prompt on the terminal (unless `--answer` answered it already) and gives the
/// line typed as its answer. The line is read on its own thread, so that a Ctrl-C stop is not
/// held up by a read nobody finishes; end of input stops the session.
pub(crate) async fn ask(event: &Event, control: &SessionControl) {
    let Some(EventData::PromptWaiting(prompt)) = event.data() else { return };
    let node = &prompt.node;
    if control.answers().get(node, &prompt.task).is_some() {
        return;
    }
    let options = match &prompt.options {
        Some(Value::Array(options)) if !options.is_empty() => {
            let list: Vec<String> =
                options.iter().map(|o| o.as_str().map_or_else(|| o.to_string(), str::to_string)).collect();
            format!(" [{}]", list.join("/"))
        }
        _ => String::new(),
    };
    eprint!("? {node}: {}{options} > ", prompt.message);
    let _ = std::io::stderr().flush();
    let (tx, mut rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let read = std::io::stdin().lock().read_line(&mut line);
        let _ = tx.send(read.ok().filter(|n| *n > 0).map(|_| line));
    });
    let line = loop {
        tokio::select! {
            line = &mut rx => break line.ok().flatten(),
            () = tokio::time::sleep(std::time::Duration::from_millis(100)) => {
                if control.is_stop_requested() {
                    return;
                }
            }
        }
    };
    match line {
        Some(line) => control.answer(&node, json_or_text(line.trim_end_matches(['\n', '\r']))),
        None => {
            say!("no answer (end of input): stopping");
            control.stop();
        }
    }
}
