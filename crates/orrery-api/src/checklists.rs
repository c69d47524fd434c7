//! Agents' checklists (docs/format.md §7, `orrery_store`'s checklists): an agent's top-level
//! tasks with ordered subtasks, per thread of its work; the project and the agent are the
//! caller's ([`Caller`]).

use super::*;

use orrery_store::{AgentSubtaskStatus, Thread};

fn main_thread() -> String {
    "main".into()
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ThreadArguments {
    /// The thread of the agent's work (default `main`).
    #[serde(default = "main_thread")]
    pub thread: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AddAgentTaskArguments {
    #[serde(default = "main_thread")]
    pub thread: String,
    /// A short title.
    pub title: String,
    /// What the task covers and what it does not.
    #[serde(default)]
    pub description: Option<String>,
    /// Its subtasks' titles, in order; the task is completed only once every one is done.
    #[serde(default)]
    pub subtasks: Vec<String>,
    /// Makes the write safe to send again (at most 64 characters).
    #[serde(default)]
    pub request_id: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentTaskArguments {
    #[serde(default = "main_thread")]
    pub thread: String,
    pub task_id: u64,
    #[serde(default)]
    pub request_id: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SubtaskArguments {
    #[serde(default = "main_thread")]
    pub thread: String,
    pub task_id: u64,
    /// Which subtask (0 first).
    pub index: usize,
    pub status: AgentSubtaskStatus,
    #[serde(default)]
    pub request_id: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CompleteArguments {
    #[serde(default = "main_thread")]
    pub thread: String,
    pub task_id: u64,
    /// What came of it.
    pub conclusion: String,
    #[serde(default)]
    pub request_id: Option<String>,
}

/// Runs `f` on the store for the caller's thread `thread`.
async fn on_thread<R: Send + 'static>(
    api: &Api,
    thread: String,
    f: impl FnOnce(&mut orrery_store::Store, Thread<'_>) -> Result<R, orrery_store::StoreError> + Send + 'static,
) -> Result<R, Failure> {
    let caller = api.caller().clone();
    api.blocking(move |db| {
        let t = Thread { project: &caller.project, agent: &caller.agent, name: &thread };
        Ok(f(&mut open(db)?, t)?)
    })
    .await
}

pub(crate) fn register(jobs: &mut Vec<Job>) {
    jobs.push(job(
        "list_agent_tasks",
        "Checklist: the caller's tasks of a thread, in order, each with its status, subtasks and conclusion.",
        |api: Api, args: ThreadArguments| async move {
            on_thread(&api, args.thread, |store, t| store.agent_tasks(t)).await
        },
    ));
    jobs.push(
        job(
            "add_agent_task",
            "Checklist: adds a pending task (title, description, subtasks in order) at the end of a thread; \
             answers its id and status.",
            |api: Api, args: AddAgentTaskArguments| async move {
                on_thread(&api, args.thread, move |store, t| {
                    store.add_agent_task(
                        t,
                        &args.title,
                        args.description.as_deref(),
                        &args.subtasks,
                        args.request_id.as_deref(),
                    )
                })
                .await
            },
        )
        .writing(),
    );
    jobs.push(
        job(
            "start_agent_task",
            "Checklist: makes a task the thread's one task in progress; refused while another is in progress \
             (complete it first) and for a completed task.",
            |api: Api, args: AgentTaskArguments| async move {
                on_thread(&api, args.thread, move |store, t| {
                    store.start_agent_task(t, args.task_id, args.request_id.as_deref())
                })
                .await
            },
        )
        .writing(),
    );
    jobs.push(
        job(
            "update_agent_subtask",
            "Checklist: marks a subtask of a task (index, 0 first) done or pending.",
            |api: Api, args: SubtaskArguments| async move {
                on_thread(&api, args.thread, move |store, t| {
                    store.set_agent_subtask(t, args.task_id, args.index, args.status, args.request_id.as_deref())
                })
                .await
            },
        )
        .writing(),
    );
    jobs.push(
        job(
            "complete_agent_task",
            "Checklist: completes a task with its conclusion; refused while a subtask is not done.",
            |api: Api, args: CompleteArguments| async move {
                on_thread(&api, args.thread, move |store, t| {
                    store.complete_agent_task(t, args.task_id, &args.conclusion, args.request_id.as_deref())
                })
                .await
            },
        )
        .writing(),
    );
}
