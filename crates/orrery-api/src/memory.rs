//! Agents' task memory (docs/format.md §7, `orrery_store`'s memory): six jobs an agent keeps
//! its own durable state with. The project and the author are the caller's ([`Caller`]: the
//! HTTP headers `X-Orrery-Project` and `X-Orrery-Agent`, the MCP client, `orrery job
//! --project --agent`), never an argument.

use super::*;

use crate::bounds::{NonEmpty, PageLimit};
use orrery_store::{
    MemoryEvent, MemoryEventKind, MemoryStep, MemoryStepKind, MemoryStepState, MemoryTask, NewMemoryEvent, StepUpdate,
    Store, StoreError,
};

/// What a write of the task memory answers: `recorded`, else the `error` that refused it (also
/// the envelope's `metadata.error`, with `success: false`), and the record.
#[derive(Debug, Serialize, JsonSchema)]
pub struct WriteResult<T> {
    pub recorded: bool,
    /// task_exists, task_not_found, event_not_found, request_id_reused or invalid_request_id.
    pub error: Option<FailureCode>,
    #[serde(flatten)]
    pub record: T,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct CreateTaskResult {
    pub task: Option<MemoryTask>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct RecordEventResult {
    pub event: Option<MemoryEvent>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct SetStepResult {
    pub step: Option<MemoryStep>,
}

/// Runs a write of the task memory: its record, or the refusal as a result that says why.
async fn write<T, R>(
    api: &Api,
    request_id: Option<String>,
    empty: T,
    record: impl FnOnce(&mut Store, Option<&str>) -> Result<R, StoreError> + Send + 'static,
    wrap: impl FnOnce(R) -> T,
) -> Result<WriteResult<T>, Failure>
where
    T: Serialize,
    R: Send + 'static,
{
    let refused = |code: FailureCode, message: String, empty: T| {
        Failure::answering(code, message, WriteResult { recorded: false, error: Some(code), record: empty })
    };
    if let Some(id) = &request_id {
        let n = id.chars().count();
        let most = orrery_store::MAX_REQUEST_ID_CHARS;
        if !(1..=most).contains(&n) {
            let message = format!("request_id must have 1 to {most} characters, not {n}");
            return Err(refused(FailureCode::InvalidRequestId, message, empty));
        }
    }
    let done = api.blocking(move |db| Ok(record(&mut open(db)?, request_id.as_deref()))).await?;
    match done {
        Ok(r) => Ok(WriteResult { recorded: true, error: None, record: wrap(r) }),
        Err(e) => match e.code() {
            code @ (FailureCode::TaskExists
            | FailureCode::TaskNotFound
            | FailureCode::EventNotFound
            | FailureCode::RequestIdReused) => Err(refused(code, e.to_string(), empty)),
            _ => Err(e.into()),
        },
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateTaskArguments {
    /// The task's name, unique within the project.
    pub name: NonEmpty,
    /// Its goal; an existing task of the same name must have the same one (else
    /// `task_exists`).
    pub goal: NonEmpty,
    /// Makes the write safe to send again (at most 64 characters): the same id and arguments
    /// answer the stored result, other arguments are refused (`request_id_reused`).
    #[serde(default)]
    pub request_id: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetTaskArguments {
    pub name: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListEventsArguments {
    pub task_name: String,
    /// Events with a larger sequence number than this (default 0: from the first).
    #[serde(default)]
    pub after_seq: u64,
    /// At most this many events, 1 to 200 (default 50).
    #[serde(default)]
    pub limit: PageLimit,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListStepsArguments {
    pub task_name: String,
    /// The state to select.
    pub state: MemoryStepState,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecordEventArguments {
    pub task_name: String,
    pub kind: MemoryEventKind,
    /// The speaker of a message.
    #[serde(default)]
    pub role: Option<String>,
    /// The tool or source of a tool event.
    #[serde(default)]
    pub name: Option<String>,
    /// The event's text; longer than 32,000 characters, its start is kept (`truncated`) with
    /// the sha256 of the whole.
    pub payload: String,
    /// Makes the write safe to send again (at most 64 characters).
    #[serde(default)]
    pub request_id: Option<String>,
}

fn other() -> MemoryStepKind {
    MemoryStepKind::Other
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetStepArguments {
    pub task_name: String,
    /// The step's name, unique within the task.
    pub name: NonEmpty,
    /// Its new state: not_started, in_progress, completed, failed, or unknown when its outcome
    /// is not known.
    pub state: MemoryStepState,
    /// Its broad category (default `other`).
    #[serde(default = "other")]
    pub kind: MemoryStepKind,
    /// The event that holds its result; it must exist (`event_not_found`).
    #[serde(default)]
    pub result_event_seq: Option<u64>,
    /// Makes the write safe to send again (at most 64 characters).
    #[serde(default)]
    pub request_id: Option<String>,
}

pub(crate) fn register(jobs: &mut Vec<Job>) {
    jobs.push(
        job(
            "create_task",
            "Task memory: creates a task of the caller's project (name, goal), or answers the existing task \
             of that name when its goal is the same; another goal is refused (task_exists).",
            |api: Api, args: CreateTaskArguments| async move {
                let caller = api.caller().clone();
                let create = move |store: &mut Store, id: Option<&str>| {
                    store.create_memory_task(&caller.project, &caller.agent, &args.name.0, &args.goal.0, id)
                };
                let wrap = |task| CreateTaskResult { task: Some(task) };
                write(&api, args.request_id, CreateTaskResult { task: None }, create, wrap).await
            },
        )
        .writing(),
    );
    jobs.push(job(
        "get_task",
        "Task memory: the bounded resume view of a task: its goal, status, last event number, at most 50 \
         steps by state (in progress, failed, unknown, not started, completed, first to last) and the count \
         of steps in every state (no event bodies); found false when the project has no such task.",
        |api: Api, args: GetTaskArguments| async move {
            let caller = api.caller().clone();
            api.blocking(move |db| Ok(open(db)?.memory_task(&caller.project, &args.name)?)).await
        },
    ));
    jobs.push(job(
        "list_events",
        "Task memory: a task's events in sequence order, a page at a time: those after `after_seq`, at \
         most `limit` (1 to 200, default 50); found false and no events when there is no such task.",
        |api: Api, args: ListEventsArguments| async move {
            let caller = api.caller().clone();
            api.blocking(move |db| {
                Ok(open(db)?.memory_events(&caller.project, &args.task_name, args.after_seq, args.limit.0)?)
            })
            .await
        },
    ));
    jobs.push(job(
        "list_steps",
        "Task memory: every step of a task in one state, by name (not capped); none when there is no \
         such task.",
        |api: Api, args: ListStepsArguments| async move {
            let caller = api.caller().clone();
            api.blocking(move |db| Ok(open(db)?.memory_steps(&caller.project, &args.task_name, args.state)?)).await
        },
    ));
    jobs.push(
        job(
            "record_event",
            "Task memory: appends one raw event (kind: message, tool_call, tool_result or note; role, name, \
             payload) to a task, numbered after its last; a long payload is cut, keeping the sha256 of the whole.",
            |api: Api, args: RecordEventArguments| async move {
                let caller = api.caller().clone();
                let event = NewMemoryEvent { kind: args.kind, role: args.role, name: args.name, payload: args.payload };
                let task = args.task_name;
                let record = move |store: &mut Store, id: Option<&str>| {
                    store.record_memory_event(&caller.project, &caller.agent, &task, &event, id)
                };
                let wrap = |event| RecordEventResult { event: Some(event) };
                write(&api, args.request_id, RecordEventResult { event: None }, record, wrap).await
            },
        )
        .writing(),
    );
    jobs.push(
        job(
            "set_step",
            "Task memory: creates or updates a step of a task (name, state, kind, the event holding its \
             result). task_not_found when there is no such task, event_not_found when result_event_seq names \
             no event of it.",
            |api: Api, args: SetStepArguments| async move {
                let caller = api.caller().clone();
                let update = StepUpdate {
                    name: args.name.0,
                    state: args.state,
                    kind: args.kind,
                    result_event_seq: args.result_event_seq,
                };
                let task = args.task_name;
                let set = move |store: &mut Store, id: Option<&str>| {
                    store.set_memory_step(&caller.project, &task, &update, id)
                };
                let wrap = |step| SetStepResult { step: Some(step) };
                write(&api, args.request_id, SetStepResult { step: None }, set, wrap).await
            },
        )
        .writing(),
    );
}
