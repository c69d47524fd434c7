//! The client against a loopback server that answers as an antikythera server does (canned
//! answers over a real socket), for what the real server cannot be made to do on cue: refuse
//! a token, answer garbage, go silent. The real server is exercised by tests/compat (publish).

use orrery_blueprint::FailureCode;
use orrery_remote::{RemoteError, Server};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// Serves one request with `status` and `body`; gives back the request's text.
async fn answer_once(status: &'static str, body: &'static str) -> (String, tokio::task::JoinHandle<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let served = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut request = Vec::new();
        let mut buf = [0u8; 4096];
        // Headers, then the body by its Content-Length.
        loop {
            let n = socket.read(&mut buf).await.unwrap();
            request.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&request).to_string();
            if let Some(end) = text.find("\r\n\r\n") {
                let length = text
                    .lines()
                    .find_map(|l| {
                        l.to_ascii_lowercase()
                            .strip_prefix("content-length: ")
                            .map(|v| v.trim().parse::<usize>().unwrap())
                    })
                    .unwrap_or(0);
                if request.len() >= end + 4 + length {
                    break;
                }
            }
            if n == 0 {
                break;
            }
        }
        let response = format!(
            "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        socket.write_all(response.as_bytes()).await.unwrap();
        String::from_utf8_lossy(&request).to_string()
    });
    (url, served)
}

#[tokio::test]
async fn an_upload_is_a_multipart_file_with_the_token_and_its_answer_is_read() {
    let (url, served) =
        answer_once("201 Created", r#"{"blueprint_id": "flow", "message": "Blueprint uploaded successfully."}"#).await;
    let server = Server::new(&format!("{url}/"), Some("s3cret".into())).unwrap();
    let uploaded = server.upload("flow.json", r#"{"id": "flow"}"#).await.unwrap();
    assert_eq!(uploaded.blueprint_id, "flow");
    let request = served.await.unwrap();
    assert!(request.starts_with("POST /blueprints/upload HTTP/1.1\r\n"), "{request}");
    assert!(request.contains("authorization: Bearer s3cret\r\n"), "{request}");
    assert!(request.contains("content-type: multipart/form-data; boundary=orrery-"), "{request}");
    assert!(request.contains("Content-Disposition: form-data; name=\"file\"; filename=\"flow.json\""), "{request}");
    assert!(request.contains("\r\n\r\n{\"id\": \"flow\"}\r\n--orrery-"), "the text goes as it is: {request}");
    assert!(!format!("{server:?}").contains("s3cret"), "the token stays out of debug output");
}

#[tokio::test]
async fn a_refusal_carries_the_servers_message_and_problems() {
    let detail = r#"{"detail": {"message": "Blueprint 'flow' has 1 dataflow problem(s).", "problems": ["Task 'b': condition 'x > 1' reads 'x', which no task produces."]}}"#;
    let (url, _) = answer_once("400 Bad Request", detail).await;
    let err = Server::new(&url, None).unwrap().upload("flow.json", "{}").await.unwrap_err();
    assert_eq!(
        err,
        RemoteError::Refused {
            status: 400,
            message: "Blueprint 'flow' has 1 dataflow problem(s).".into(),
            problems: vec!["Task 'b': condition 'x > 1' reads 'x', which no task produces.".into()],
        }
    );
    assert_eq!(err.code(), FailureCode::Refused);

    let (url, _) = answer_once("400 Bad Request", r#"{"detail": "Only JSON files are accepted."}"#).await;
    let err = Server::new(&url, None).unwrap().upload("flow.txt", "{}").await.unwrap_err();
    assert!(
        matches!(&err, RemoteError::Refused { message, problems, .. } if message == "Only JSON files are accepted." && problems.is_empty()),
        "{err:?}"
    );

    let (url, _) =
        answer_once("422 Unprocessable Entity", r#"{"detail": [{"loc": ["body", "file"], "msg": "Field required"}]}"#)
            .await;
    let err = Server::new(&url, None).unwrap().upload("flow.json", "{}").await.unwrap_err();
    assert!(
        matches!(&err, RemoteError::Refused { status: 422, problems, .. } if problems == &["Field required"]),
        "{err:?}"
    );

    let (url, _) = answer_once("401 Unauthorized", "").await;
    let err = Server::new(&url, Some("wrong".into())).unwrap().blueprints().await.unwrap_err();
    assert!(err.to_string().contains("the token was refused"), "{err}");
}

#[tokio::test]
async fn a_failure_on_the_servers_side_is_no_refusal() {
    let (url, _) = answer_once(
        "500 Internal Server Error",
        r#"{"detail": "Failed to save blueprint: Error 111 connecting to 127.0.0.1:6379."}"#,
    )
    .await;
    let err = Server::new(&url, None).unwrap().upload("flow.json", "{}").await.unwrap_err();
    assert_eq!(
        err,
        RemoteError::ServerFailed {
            status: 500,
            message: "Failed to save blueprint: Error 111 connecting to 127.0.0.1:6379.".into()
        }
    );
    assert_eq!(err.code(), FailureCode::Remote);
    let (url, _) = answer_once("502 Bad Gateway", "<html>proxy error</html>").await;
    let err = Server::new(&url, None).unwrap().blueprints().await.unwrap_err();
    assert_eq!(err, RemoteError::ServerFailed { status: 502, message: "<html>proxy error</html>".into() });
}

#[tokio::test]
async fn an_answer_that_is_not_the_servers_is_unexpected_and_names_what_came() {
    let (url, _) = answer_once("200 OK", "not json").await;
    let err = Server::new(&url, None).unwrap().blueprints().await.unwrap_err();
    assert_eq!(err.code(), FailureCode::Remote);
}

#[tokio::test]
async fn a_server_that_is_not_there_is_unreachable_at_once() {
    // A port that was free a moment ago: nothing listens there.
    let port = TcpListener::bind("127.0.0.1:0").await.unwrap().local_addr().unwrap().port();
    let err = Server::new(&format!("http://127.0.0.1:{port}"), None).unwrap().blueprints().await.unwrap_err();
    assert_eq!(err.code(), FailureCode::Unreachable);
    assert!(err.to_string().contains(&format!("127.0.0.1:{port}")) && err.to_string().contains("refused"), "{err}");
}

#[test]
fn addresses_that_are_not_http_servers_are_refused_with_the_reason() {
    for (url, why) in [
        ("ftp://host", "must start with http://"),
        ("localhost:8000", "must start with http://"),
        ("http://", "not a server address"),
        ("not a url at all", "not a server address"),
    ] {
        let err = Server::new(url, None).unwrap_err();
        assert!(err.to_string().contains(why), "{url}: {err}");
        assert_eq!(err.code(), FailureCode::InvalidArgument);
    }
    assert_eq!(Server::new(" http://127.0.0.1:8000/ ", None).unwrap().url(), "http://127.0.0.1:8000");
    assert_eq!(Server::new("https://lab.example/api/", None).unwrap().url(), "https://lab.example/api");
}

#[test]
fn server_sent_events_are_read_from_chunks_cut_anywhere() {
    let stream = "event: session_state_changed\ndata: {\"state\": \"running\"}\n\n: a comment\nevent: task_state_changed\r\ndata: {\"blueprint_id\": \"b\", \"task_id\": \"t\", \"state\": \"R\u{00c9}ADY\"}\r\n\r\ndata: plain\n\n";
    let whole = orrery_remote::SseParser::default().push(stream.as_bytes());
    let kinds: Vec<(&str, String)> = whole.iter().map(|e| (e.event.as_str(), e.data.to_string())).collect();
    assert_eq!(
        kinds,
        [
            ("session_state_changed", r#"{"state":"running"}"#.to_string()),
            ("task_state_changed", r#"{"blueprint_id":"b","task_id":"t","state":"RÉADY"}"#.to_string()),
            ("message", r#""plain""#.to_string()),
        ]
    );
    // Byte by byte, a two-byte character cut in two included: the same events.
    let mut parser = orrery_remote::SseParser::default();
    let mut one_by_one = Vec::new();
    for b in stream.as_bytes() {
        one_by_one.extend(parser.push(&[*b]));
    }
    assert_eq!(one_by_one, whole);
}

#[tokio::test]
async fn a_session_is_created_with_its_params_as_text_and_found_in_the_servers_list() {
    let (url, served) =
        answer_once("202 Accepted", r#"{"session_id": "run-1", "message": "Blueprint execution started."}"#).await;
    let params = serde_json::json!({"n": 3, "who": "me"});
    let answer = Server::new(&url, None)
        .unwrap()
        .create_session("flow", params.as_object().unwrap(), Some("run 1"))
        .await
        .unwrap();
    assert_eq!(answer.session_id, "run-1");
    let request = served.await.unwrap();
    assert!(request.starts_with("POST /blueprints/start HTTP/1.1"), "{request}");
    assert!(
        request.ends_with(r#"{"blueprint_id":"flow","params":{"n":"3","who":"me"},"session_name":"run 1"}"#),
        "{request}"
    );

    let listed = r#"[{"session_id": "a/b", "blueprint_id": "flow", "broker_host": "h", "broker_port": 1, "started_at": null, "ended_at": null, "state": "completed"}]"#;
    let (url, served) = answer_once("200 OK", listed).await;
    let found = Server::new(&url, None).unwrap().session("a/b").await.unwrap();
    assert!(found.ended() && found.blueprint_id == "flow", "{found:?}");
    assert!(served.await.unwrap().starts_with("GET /sessions?limit=1000 HTTP/1.1"));
    let (url, served) = answer_once("200 OK", r#"{"session_id": "a/b", "message": "Session paused."}"#).await;
    Server::new(&url, None).unwrap().pause("a/b").await.unwrap();
    assert!(served.await.unwrap().starts_with("POST /sessions/a%2Fb/pause HTTP/1.1"), "an id is one path segment");
    let (url, _) = answer_once("200 OK", "[]").await;
    let err = Server::new(&url, None).unwrap().session("gone").await.unwrap_err();
    assert!(err.to_string().contains("no session gone"), "{err}");
}

#[tokio::test]
async fn task_interventions_name_the_blueprint_and_the_task() {
    let ok = r#"{"session_id": "s", "message": "Reset 2 task(s) to PENDING."}"#;
    let (url, served) = answer_once("200 OK", ok).await;
    let answer = Server::new(&url, None).unwrap().reset_task("s", "flow", "b", true, false).await.unwrap();
    assert_eq!(answer.message, "Reset 2 task(s) to PENDING.");
    let request = served.await.unwrap();
    assert!(request.starts_with("POST /sessions/s/tasks/reset HTTP/1.1"), "{request}");
    assert!(
        request.ends_with(r#"{"blueprint_id":"flow","task_id":"b","include_downstream":true,"clear_outputs":false}"#),
        "{request}"
    );
    let (url, served) = answer_once("200 OK", ok).await;
    Server::new(&url, None).unwrap().skip_task("s", "flow", "b").await.unwrap();
    assert!(served.await.unwrap().ends_with(r#""task_id":"b"}"#));
    let (url, served) = answer_once("200 OK", ok).await;
    Server::new(&url, None).unwrap().reset_scope("s", "retry loop").await.unwrap();
    assert!(served.await.unwrap().starts_with("POST /sessions/s/scopes/retry%20loop/reset HTTP/1.1"));
    let (url, _) =
        answer_once("409 Conflict", r#"{"detail": "Session is running. Pause it before skipping tasks."}"#).await;
    let err = Server::new(&url, None).unwrap().skip_task("s", "flow", "b").await.unwrap_err();
    assert!(matches!(&err, RemoteError::Refused { status: 409, .. }) && err.to_string().contains("Pause it"), "{err}");
}
