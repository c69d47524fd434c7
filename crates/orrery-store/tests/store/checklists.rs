//! Agents' checklists: one task in progress per thread, completion only with every subtask done
//! and a conclusion, threads apart by project, agent and name, retried writes once.

use orrery_store::{AgentSubtaskStatus, AgentTaskStatus, FailureCode, Thread};

use crate::Fixture;

const MAIN: Thread<'static> = Thread { project: "p", agent: "a", name: "main" };

#[test]
fn a_threads_tasks_are_started_one_at_a_time_and_completed_only_when_all_their_subtasks_are_done() {
    let mut fx = Fixture::open();
    let subtasks = ["read the log".to_string(), "fix the test".to_string()];
    let first = fx.store.add_agent_task(MAIN, "fix CI", Some("only the flaky test"), &subtasks, None).unwrap();
    let second = fx.store.add_agent_task(MAIN, "write the note", None, &[], None).unwrap();
    assert_eq!((first.task_id, second.task_id, first.status), (1, 2, AgentTaskStatus::Pending));

    assert_eq!(fx.store.start_agent_task(MAIN, 1, None).unwrap().status, AgentTaskStatus::InProgress);
    let busy = fx.store.start_agent_task(MAIN, 2, None).unwrap_err();
    assert_eq!(busy.code(), FailureCode::Refused);
    assert!(busy.to_string().contains("task 1 (\"fix CI\") is in progress"), "{busy}");
    let elsewhere = Thread { name: "other", ..MAIN };
    assert!(fx.store.add_agent_task(elsewhere, "x", None, &[], None).is_ok());
    assert!(fx.store.start_agent_task(elsewhere, 1, None).is_ok(), "another thread has its own task in progress");

    let open = fx.store.complete_agent_task(MAIN, 1, "done", None).unwrap_err();
    assert!(open.to_string().contains("0 (\"read the log\"), 1 (\"fix the test\")"), "{open}");
    for i in 0..2 {
        fx.store.set_agent_subtask(MAIN, 1, i, AgentSubtaskStatus::Done, None).unwrap();
    }
    let no_such = fx.store.set_agent_subtask(MAIN, 1, 2, AgentSubtaskStatus::Done, None).unwrap_err();
    assert_eq!(no_such.code(), FailureCode::InvalidArgument);
    assert_eq!(fx.store.complete_agent_task(MAIN, 1, "  ", None).unwrap_err().code(), FailureCode::InvalidArgument);
    assert_eq!(
        fx.store.complete_agent_task(MAIN, 1, "the test waits now", None).unwrap().status,
        AgentTaskStatus::Completed
    );
    assert_eq!(fx.store.start_agent_task(MAIN, 1, None).unwrap_err().code(), FailureCode::Refused, "completed");
    assert_eq!(fx.store.start_agent_task(MAIN, 2, None).unwrap().status, AgentTaskStatus::InProgress);
    assert_eq!(fx.store.start_agent_task(MAIN, 9, None).unwrap_err().code(), FailureCode::NotFound);

    let tasks = fx.store.agent_tasks(MAIN).unwrap();
    assert_eq!(tasks.len(), 2);
    assert_eq!(tasks[0].conclusion.as_deref(), Some("the test waits now"));
    assert!(tasks[0].started_at.is_some() && tasks[0].completed_at.is_some());
    assert!(tasks[0].subtasks.iter().all(|s| s.status == AgentSubtaskStatus::Done));
    assert_eq!((tasks[1].position, tasks[1].status), (1, AgentTaskStatus::InProgress));
    assert!(fx.store.agent_tasks(Thread { agent: "b", ..MAIN }).unwrap().is_empty(), "another agent's");
}

#[test]
fn a_checklist_write_sent_again_with_its_request_id_happens_once_across_a_reopen() {
    let mut fx = Fixture::open();
    let added = fx.store.add_agent_task(MAIN, "once", None, &[], Some("add-1")).unwrap();
    let mut fx = fx.reopen();
    assert_eq!(fx.store.add_agent_task(MAIN, "once", None, &[], Some("add-1")).unwrap(), added);
    assert_eq!(fx.store.agent_tasks(MAIN).unwrap().len(), 1);
    let other = fx.store.add_agent_task(MAIN, "twice", None, &[], Some("add-1")).unwrap_err();
    assert_eq!(other.code(), FailureCode::RequestIdReused);
}
