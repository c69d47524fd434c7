//! The interactive agents (issue 3 item 3): `user_interaction.notify`,
//! `user_interaction.user_output`, `user_interaction.user_input` and `user_prompt.confirm`.
//!
//! # Decisions (mirroring the reference, `antikythera_agents/user_interaction.py`)
//!
//! - **Displays need no answer.** `notify` (user_interaction.py:46-99) resolves `title`
//!   (default `"Notification"`), `message` (default `""`) and `level` (default `"info"`) from
//!   the task's inputs first, then its params; `{key}` placeholders in title and message are
//!   filled from the instance context and the inputs (inputs win); a template naming an unknown
//!   key is kept as written (the reference's `.format` raising and being ignored). It returns
//!   `{"status": "displayed"}`. `user_output` (user_interaction.py:32-44) shows every input and
//!   returns nothing. Neither waits: the runner publishes a `notification` event
//!   ([`NotificationShown`]) and the task succeeds at once.
//! - **Prompts wait for an answer.** `user_input` (user_interaction.py:15-29) asks one value per
//!   declared output; the answer is that value when the task declares one output, else a JSON
//!   object holding every declared output name. `user_prompt.confirm` has no agent in the
//!   reference package (only blueprints use it: `toy_problem_7/8/10/12/13`, always with params
//!   `message` and `options` and one declared output `result`, type_hint `str`); the answer
//!   becomes every declared output (`result` when none is declared). When `options` is a
//!   non-empty list the answer must be one of them, otherwise any JSON value (a boolean
//!   included) is taken. A negative answer ("No", `false`) is an output, not a failure: the
//!   corpus branches on it with conditions downstream.
//! - **Answers** come through an [`Answers`] handle (cloneable; keyed by node key, falling back
//!   to the task id). They are not consumed: a prompt run again (a loop, a resume in the same
//!   process) gets the same answer. When a prompt has no answer: with
//!   [`WhenUnanswered::Wait`] the task stays RUNNING until one is given; with
//!   [`WhenUnanswered::Fail`] it fails at once (`TOOL_FAILURE`, naming `--answer TASK=...`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use orrery_blueprint::{ErrorCode, Task, TaskType};
use orrery_store::{NotificationShown, PromptWaiting};
use serde_json::{json, Map, Value};
use tokio::sync::watch;

use super::TaskError;

pub const NOTIFY: &str = TaskType::NOTIFY;
pub const USER_OUTPUT: &str = TaskType::USER_OUTPUT;
pub const USER_INPUT: &str = TaskType::USER_INPUT;
pub const CONFIRM: &str = TaskType::CONFIRM;

/// What an interactive task type does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interaction {
    /// Shows something and succeeds at once.
    Display,
    /// Waits for an answer.
    Prompt,
}

pub fn interaction(task_type: &str) -> Option<Interaction> {
    match task_type {
        NOTIFY | USER_OUTPUT => Some(Interaction::Display),
        USER_INPUT | CONFIRM => Some(Interaction::Prompt),
        _ => None,
    }
}

/// What a prompt does when nobody answered it yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhenUnanswered {
    /// The task stays RUNNING until [`Answers::answer`] is called for it.
    Wait,
    /// The task fails at once (no one can answer: a non-interactive run).
    Fail,
}

#[derive(Debug)]
struct AnswersInner {
    values: Mutex<HashMap<String, Value>>,
    changed: watch::Sender<u64>,
    when_unanswered: WhenUnanswered,
}

/// Answers to prompts, given from outside the runner; clones share one set.
#[derive(Debug, Clone)]
pub struct Answers {
    inner: Arc<AnswersInner>,
}

impl Answers {
    pub fn new(when_unanswered: WhenUnanswered) -> Answers {
        let (changed, _) = watch::channel(0);
        Answers { inner: Arc::new(AnswersInner { values: Mutex::new(HashMap::new()), changed, when_unanswered }) }
    }

    pub fn when_unanswered(&self) -> WhenUnanswered {
        self.inner.when_unanswered
    }

    /// Answers the prompt of `task` (a node key, or a task id): wakes it if it waits.
    pub fn answer(&self, task: &str, value: Value) {
        self.inner.values.lock().unwrap_or_else(|p| p.into_inner()).insert(task.to_string(), value);
        self.inner.changed.send_modify(|n| *n += 1);
    }

    /// The answer for a node key, else for its task id.
    pub fn get(&self, node_key: &str, task_id: &str) -> Option<Value> {
        let values = self.inner.values.lock().unwrap_or_else(|p| p.into_inner());
        values.get(node_key).or_else(|| values.get(task_id)).cloned()
    }

    /// Resolves with the answer once there is one.
    pub async fn wait(&self, node_key: &str, task_id: &str) -> Value {
        let mut rx = self.inner.changed.subscribe();
        loop {
            if let Some(v) = self.get(node_key, task_id) {
                return v;
            }
            if rx.changed().await.is_err() {
                // Cannot happen: `self` holds the sender.
                std::future::pending::<()>().await;
            }
        }
    }
}

/// The message an unanswered prompt fails with in a non-interactive run.
pub fn unanswered_error(node_key: &str) -> TaskError {
    TaskError::new(
        ErrorCode::ToolFailure,
        format!("task '{node_key}' waits for an answer and nobody can give it here: pass --answer {node_key}=VALUE"),
    )
    .with_details(json!({ "node": node_key }))
}

fn params_of(task: &Task) -> Map<String, Value> {
    task.params.iter().map(|p| (p.io.name.to_string(), p.io.value.clone().unwrap_or(Value::Null))).collect()
}

/// Python's `str.format(**data)` for plain `{key}` fields; the template unchanged when a key is
/// unknown or a brace is unmatched (the reference ignores the error).
fn interpolate(template: &str, data: &Map<String, Value>) -> String {
    let mut out = String::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else { return template.to_string() };
        let key = &after[..close];
        match data.get(key) {
            Some(Value::String(s)) => out.push_str(s),
            Some(v) => out.push_str(&v.to_string()),
            None => return template.to_string(),
        }
        rest = &after[close + 1..];
    }
    if rest.contains('}') {
        return template.to_string();
    }
    out.push_str(rest);
    out
}

/// A display task: what it shows and the task's outputs.
pub fn display(
    node_key: &str,
    task: &Task,
    inputs: &Map<String, Value>,
    context: &Map<String, Value>,
) -> (NotificationShown, Map<String, Value>) {
    let mut shown = NotificationShown {
        node: node_key.to_string(),
        task: task.id.to_string(),
        task_type: task.task_type.as_str().to_string(),
        title: None,
        message: None,
        level: None,
        values: None,
    };
    let mut outputs = Map::new();
    if task.task_type.as_str() == NOTIFY {
        let params = params_of(task);
        let pick = |name: &str| inputs.get(name).or_else(|| params.get(name)).filter(|v| !v.is_null()).cloned();
        let mut data = context.clone();
        data.extend(inputs.clone());
        let text = |v: Option<Value>, default: &str| match v {
            Some(Value::String(s)) => interpolate(&s, &data),
            Some(other) => other.to_string(),
            None => default.to_string(),
        };
        shown.title = Some(text(pick("title"), "Notification"));
        shown.message = Some(text(pick("message"), ""));
        shown.level = Some(pick("level").unwrap_or_else(|| Value::String("info".into())));
        outputs.insert("status".into(), Value::String("displayed".into()));
    } else {
        shown.values = Some(inputs.clone());
    }
    (shown, outputs)
}

/// A prompt task: what it asks.
pub fn prompt(node_key: &str, task: &Task, inputs: &Map<String, Value>) -> PromptWaiting {
    let params = params_of(task);
    let outputs: Vec<&str> = task.outputs.iter().map(|o| o.io.name.as_str()).collect();
    let message = match params.get("message") {
        Some(Value::String(s)) => s.clone(),
        Some(v) if !v.is_null() => v.to_string(),
        _ if task.task_type.as_str() == USER_INPUT => format!("Enter {}", outputs.join(", ")),
        _ => format!("Confirm {node_key}?"),
    };
    PromptWaiting {
        node: node_key.to_string(),
        task: task.id.to_string(),
        task_type: task.task_type.as_str().to_string(),
        message,
        outputs: outputs.into_iter().map(str::to_string).collect(),
        inputs: inputs.clone(),
        options: params.get("options").filter(|v| !v.is_null()).cloned(),
    }
}

/// The outputs an answer gives a prompt task, or why it is not a valid answer.
pub fn answer_outputs(task: &Task, answer: Value) -> Result<Map<String, Value>, TaskError> {
    let names: Vec<String> = task.outputs.iter().map(|o| o.io.name.to_string()).collect();
    let mut outputs = Map::new();
    if task.task_type.as_str() == CONFIRM {
        if let Some(Value::Array(options)) = task.param_value("options") {
            if !options.is_empty() && !options.contains(&answer) {
                let list: Vec<String> = options.iter().map(Value::to_string).collect();
                return Err(TaskError::new(
                    ErrorCode::ToolFailure,
                    format!("task '{}': the answer {answer} is not one of its options: {}", task.id, list.join(", ")),
                )
                .with_details(json!({ "answer": answer, "options": options })));
            }
        }
        if names.is_empty() {
            outputs.insert("result".into(), answer);
        } else {
            for name in names {
                outputs.insert(name, answer.clone());
            }
        }
        return Ok(outputs);
    }
    match names.as_slice() {
        [] => {}
        [one] => {
            outputs.insert(one.clone(), answer);
        }
        many => {
            let Value::Object(given) = &answer else {
                return Err(TaskError::new(
                    ErrorCode::ToolFailure,
                    format!(
                        "task '{}' declares outputs {}: its answer must be a JSON object with each",
                        task.id,
                        many.join(", ")
                    ),
                ));
            };
            for name in many {
                let Some(v) = given.get(name) else {
                    return Err(TaskError::new(
                        ErrorCode::ToolFailure,
                        format!("task '{}': the answer has no '{name}'", task.id),
                    ));
                };
                outputs.insert(name.clone(), v.clone());
            }
        }
    }
    Ok(outputs)
}

/// The params schemas of the four types, for the registry.
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interpolates_like_python_format() {
        let data: Map<String, Value> = json!({"a": "x", "n": 3}).as_object().unwrap().clone();
        assert_eq!(interpolate("{a}-{n}", &data), "x-3");
        assert_eq!(interpolate("{a} {missing}", &data), "{a} {missing}");
        assert_eq!(interpolate("plain", &data), "plain");
    }
}
