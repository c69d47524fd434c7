//! Runner leases and requests to a running session.

use orrery_store::FailureCode;
use orrery_store::{Lease, ProcessIdentity, Request, StoreError};
use serde_json::json;

use crate::Fixture;

fn lease(token: &str, pid: u32) -> Lease {
    Lease { token: token.into(), process: ProcessIdentity { pid, start_time: 77 } }
}

#[test]
fn a_lease_held_by_a_live_runner_is_refused_and_one_left_by_a_dead_runner_is_taken_over() {
    let mut fixture = Fixture::open();
    let session = fixture.session();
    assert_eq!(fixture.store.lease(&session.id).unwrap(), None);
    assert_eq!(fixture.store.acquire_lease(&session.id, &lease("a", 10), |_| true).unwrap(), None);
    // The holder itself may take it again.
    assert_eq!(fixture.store.acquire_lease(&session.id, &lease("a", 10), |_| true).unwrap(), None);

    let refused = fixture.store.acquire_lease(&session.id, &lease("b", 11), |p| p.pid == 10);
    match refused {
        Err(e @ StoreError::Leased { .. }) => {
            assert_eq!(e.code(), FailureCode::Leased);
            assert!(e.to_string().contains("process 10"), "{e}");
        }
        other => panic!("expected Leased, got {other:?}"),
    }
    assert_eq!(fixture.store.lease(&session.id).unwrap(), Some(lease("a", 10)));

    // Runner a is gone: b takes over and is told whom it replaced.
    let replaced = fixture.store.acquire_lease(&session.id, &lease("b", 11), |_| false).unwrap();
    assert_eq!(replaced, Some(lease("a", 10)));
    // a's late release does not free b's lease.
    fixture.store.release_lease(&session.id, "a").unwrap();
    assert_eq!(fixture.store.lease(&session.id).unwrap(), Some(lease("b", 11)));
    fixture.store.release_lease(&session.id, "b").unwrap();
    assert_eq!(fixture.store.lease(&session.id).unwrap(), None);
}

#[test]
fn leases_and_requests_of_an_unknown_session_are_not_found() {
    let mut fixture = Fixture::open();
    assert!(matches!(fixture.store.lease("nope"), Err(StoreError::NotFound { .. })));
    assert!(matches!(fixture.store.acquire_lease("nope", &lease("a", 1), |_| true), Err(StoreError::NotFound { .. })));
    assert!(matches!(fixture.store.request("nope", &Request::Stop), Err(StoreError::NotFound { .. })));
    assert!(matches!(fixture.store.request_outcome(12345), Err(StoreError::NotFound { .. })));
}

#[test]
fn requests_are_listed_in_order_until_handled_and_keep_their_outcome() {
    let mut fixture = Fixture::open();
    let session = fixture.session();
    let other = fixture.session();
    let stop = fixture.store.request(&session.id, &Request::Stop).unwrap();
    let cancel = fixture.store.request(&session.id, &Request::Cancel { task: "hello.greet".into() }).unwrap();
    let answer = fixture
        .store
        .request(&session.id, &Request::Answer { task: "ask".into(), value: json!({"ok": [1, 2]}) })
        .unwrap();
    fixture.store.request(&other.id, &Request::Pause).unwrap();

    let open = fixture.second_handle().open_requests(&session.id).unwrap();
    let listed: Vec<(i64, Request)> = open.into_iter().map(|r| (r.id, r.request)).collect();
    assert_eq!(
        listed,
        vec![
            (stop, Request::Stop),
            (cancel, Request::Cancel { task: "hello.greet".into() }),
            (answer, Request::Answer { task: "ask".into(), value: json!({"ok": [1, 2]}) }),
        ]
    );
    assert_eq!(fixture.store.request_outcome(cancel).unwrap(), None);
    fixture.store.mark_request_handled(cancel, "cancelled attempt 1").unwrap();
    // Handled once: a second mark changes nothing.
    fixture.store.mark_request_handled(cancel, "again").unwrap();
    assert_eq!(fixture.store.request_outcome(cancel).unwrap().as_deref(), Some("cancelled attempt 1"));
    let ids: Vec<i64> = fixture.store.open_requests(&session.id).unwrap().iter().map(|r| r.id).collect();
    assert_eq!(ids, vec![stop, answer]);
}
