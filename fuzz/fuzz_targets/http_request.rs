//! Orrery's own parsing of what an HTTP request carries (`crates/orrery-api/src/http/request.rs`,
//! included here alone: the transport is hyper's): any bytes as a `POST /jobs/{name}` body, as
//! the query and the `Last-Event-ID` of `GET /events`, and as a `Host` or `Origin` authority.
//! Never a panic; a body is accepted only as `null` or an object; a resume point comes only from
//! an `after=` pair or the header; an authority is taken for this server only when it is
//! `127.0.0.1`, `localhost` or `[::1]` with nothing but a port after it.

#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;

#[path = "../../crates/orrery-api/src/http/request.rs"]
mod request;

fuzz_target!(|data: &[u8]| {
    match request::arguments_of(data) {
        Ok(Value::Null | Value::Object(_)) => {}
        Ok(other) => panic!("arguments that are not an object: {other}"),
        Err(message) => assert!(!message.is_empty()),
    }

    let text = String::from_utf8_lossy(data);
    if let Ok(Some(_)) = request::resume_point(Some(&text), None) {
        assert!(text.contains("after="), "a resume point from {text:?}");
    }
    if let Ok(Some(after)) = request::resume_point(None, Some(data)) {
        assert_eq!(std::str::from_utf8(data).unwrap().trim().parse::<u64>(), Ok(after));
    }
    let _ = request::resume_point(Some(&text), Some(data));

    let port = u16::from_le_bytes([data.first().copied().unwrap_or(0), data.get(1).copied().unwrap_or(0)]);
    for authority in [&text[..], text.get(2..).unwrap_or("")] {
        if request::is_this_server(authority, port) {
            let lower = authority.to_ascii_lowercase();
            let rest = ["127.0.0.1", "localhost", "[::1]"]
                .iter()
                .find_map(|host| lower.strip_prefix(host))
                .unwrap_or_else(|| panic!("{authority:?} taken for this server"));
            let digits = rest.strip_prefix(':').unwrap_or(rest);
            assert!(
                rest.is_empty() || (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())),
                "{authority:?}"
            );
            assert!(rest.is_empty() || digits.parse() == Ok(port), "{authority:?} for port {port}");
        }
    }
});
