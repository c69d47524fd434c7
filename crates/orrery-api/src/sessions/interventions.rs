//! Interventions on a session that is not running: skip a task, reset a task (and what follows
//! it) or a scope. A mirror's server does them for the mirror.

use crate::*;

use crate::mirror::RemoteStep;

use orrery_blueprint::SessionState;

use orrery_engine::interventions::{self, Intervention, InterventionError};

use super::arguments::TaskArguments;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResetArguments {
    pub session_id: String,
    pub task: String,
    /// Also reset every task downstream of it.
    #[serde(default)]
    pub downstream: bool,
    /// Set the session data its outputs wrote (and its downstream's) to null.
    #[serde(default)]
    pub clear_outputs: bool,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResetScopeArguments {
    pub session_id: String,
    /// The scope's start task.
    pub scope_start: String,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct NodeChangeView {
    pub node: String,
    pub from: orrery_blueprint::TaskState,
    pub to: orrery_blueprint::TaskState,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct InterventionView {
    pub session_id: String,
    pub session_before: SessionState,
    pub session_after: SessionState,
    pub tasks: Vec<NodeChangeView>,
    /// `[instance, key]` pairs set to null.
    pub cleared_data: Vec<(String, String)>,
    /// `[instance, scope key]` counters set to 0.
    pub cleared_counters: Vec<(String, String)>,
}

impl From<Intervention> for InterventionView {
    fn from(done: Intervention) -> Self {
        InterventionView {
            session_id: done.session_id,
            session_before: done.session_before,
            session_after: done.session_after,
            tasks: done.nodes.into_iter().map(|c| NodeChangeView { node: c.node, from: c.from, to: c.to }).collect(),
            cleared_data: done.cleared_data,
            cleared_counters: done.cleared_counters,
        }
    }
}

fn intervention_failure(e: InterventionError) -> Failure {
    if e.is_refusal() {
        let code = match &e {
            InterventionError::Store(s) => s.code(),
            _ => FailureCode::Refused,
        };
        Failure::new(code, e.to_string())
    } else {
        Failure::new(FailureCode::Store, e.to_string())
    }
}

impl Api {
    /// An intervention on a mirror, done by its server: the view of what the mirror became.
    async fn remote_intervention(
        &self,
        local: &str,
        server: orrery_remote::Server,
        step: RemoteStep<'_>,
    ) -> Result<InterventionView, Failure> {
        let before = self
            .blocking({
                let local = local.to_string();
                move |db| Ok(open(db)?.session(&local)?.state)
            })
            .await?;
        self.remote_step(local, server, step).await?;
        let after = self
            .blocking({
                let local = local.to_string();
                move |db| Ok(open(db)?.session(&local)?.state)
            })
            .await?;
        Ok(InterventionView {
            session_id: local.to_string(),
            session_before: before,
            session_after: after,
            tasks: Vec::new(),
            cleared_data: Vec::new(),
            cleared_counters: Vec::new(),
        })
    }
}

pub(super) fn register(jobs: &mut Vec<Job>) {
    jobs.push(
        job(
            "skip_task",
            "On a session that is not running: the task is skipped when it would start.",
            |api: Api, args: TaskArguments| async move {
                if let Some(server) = api.remote_of(&args.session_id).await? {
                    return api
                        .remote_intervention(&args.session_id, server, RemoteStep::Skip { node: &args.task })
                        .await;
                }
                api.blocking(move |db| {
                    interventions::skip_task(db, &args.session_id, &args.task)
                        .map(InterventionView::from)
                        .map_err(intervention_failure)
                })
                .await
            },
        )
        .writing(),
    );
    jobs.push(
        job(
            "reset_task",
            "On a session that is not running: the task (and with `downstream`, everything after it) \
         goes back to PENDING; `clear_outputs` sets the data they wrote to null.",
            |api: Api, args: ResetArguments| async move {
                if let Some(server) = api.remote_of(&args.session_id).await? {
                    let step = RemoteStep::Reset {
                        node: &args.task,
                        downstream: args.downstream,
                        clear_outputs: args.clear_outputs,
                    };
                    return api.remote_intervention(&args.session_id, server, step).await;
                }
                api.blocking(move |db| {
                    interventions::reset_task(db, &args.session_id, &args.task, args.downstream, args.clear_outputs)
                        .map(InterventionView::from)
                        .map_err(intervention_failure)
                })
                .await
            },
        )
        .writing(),
    );
    jobs.push(
        job(
            "reset_scope",
            "On a session that is not running: a scope's members go back to PENDING, its counters to 0.",
            |api: Api, args: ResetScopeArguments| async move {
                if let Some(server) = api.remote_of(&args.session_id).await? {
                    return api
                        .remote_intervention(
                            &args.session_id,
                            server,
                            RemoteStep::ResetScope { node: &args.scope_start },
                        )
                        .await;
                }
                api.blocking(move |db| {
                    interventions::reset_scope(db, &args.session_id, &args.scope_start)
                        .map(InterventionView::from)
                        .map_err(intervention_failure)
                })
                .await
            },
        )
        .writing(),
    );
}
