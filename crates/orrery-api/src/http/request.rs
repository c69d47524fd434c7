//! Orrery's own parsing of what a request carries, apart from the transport so that it can
//! be fuzzed alone (`fuzz/fuzz_targets/http_request.rs` includes this file): the body's
//! `{"arguments": ...}`, the resume point of `GET /events`, and the `Host` / `Origin`
//! authorities. Only the standard library, `serde_json` and `orrery_blueprint::load::kind_of`.

use orrery_blueprint::load::kind_of;
use serde_json::Value;

/// The arguments of a `POST /jobs/{name}` body: `{"arguments": {...}}`; an empty body, an
/// absent or `null` `arguments` are `null` (which `Api::call` takes as `{}`).
pub fn arguments_of(body: &[u8]) -> Result<Value, String> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Value::Null);
    }
    let value: Value = orrery_blueprint::json::from_slice(body).map_err(|e| format!("the body is not JSON: {e}"))?;
    let Value::Object(mut fields) = value else {
        return Err(format!("the body must be a JSON object {{\"arguments\": {{...}}}}, not {}", kind_of(&value)));
    };
    if let Some(other) = fields.keys().find(|k| *k != "arguments") {
        return Err(format!("the body has an unknown field {other:?}: it takes only \"arguments\""));
    }
    match fields.remove("arguments") {
        None | Some(Value::Null) => Ok(Value::Null),
        Some(arguments @ Value::Object(_)) => Ok(arguments),
        Some(other) => Err(format!("\"arguments\" must be a JSON object, not {}", kind_of(&other))),
    }
}

/// Where a client resumes: `?after=N`, or the `Last-Event-ID` an EventSource sends when it
/// reconnects (every event's `id` is its `global_seq`); none: live events only.
pub fn resume_point(query: Option<&str>, last_event_id: Option<&[u8]>) -> Result<Option<u64>, String> {
    let mut after = None;
    for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=').unwrap_or((pair, "")) {
            ("after", value) => {
                let value =
                    value.parse().map_err(|_| format!("`after` must be a global_seq (0 or more), got {value:?}"))?;
                after = Some(value);
            }
            (other, _) => return Err(format!("unknown query parameter {other:?}; the only one is `after`")),
        }
    }
    if after.is_some() {
        return Ok(after);
    }
    match last_event_id {
        None => Ok(None),
        Some(id) => std::str::from_utf8(id)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .map(Some)
            .ok_or_else(|| "`Last-Event-ID` must be a global_seq".to_string()),
    }
}

/// Whether `authority` (`HOST` or `HOST:PORT`) is `127.0.0.1`, `localhost` (any case) or
/// `[::1]`, with no port or `port`.
pub fn is_this_server(authority: &str, port: u16) -> bool {
    let (host, rest) = match authority.strip_prefix('[') {
        Some(v6) => match v6.split_once(']') {
            Some((address, rest)) => (&authority[..address.len() + 2], rest),
            None => return false,
        },
        None => match authority.find(':') {
            Some(colon) => (&authority[..colon], &authority[colon..]),
            None => (authority, ""),
        },
    };
    let port_ok = match rest.strip_prefix(':') {
        None => rest.is_empty(),
        Some(digits) => !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) && digits.parse() == Ok(port),
    };
    port_ok && (host == "127.0.0.1" || host == "[::1]" || host.eq_ignore_ascii_case("localhost"))
}
