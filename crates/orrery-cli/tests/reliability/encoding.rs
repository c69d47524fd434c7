//! Files as Python's `json` reads them (docs/format.md §1.1): values nested far deeper than
//! serde_json's 128 levels are read, and run, up to where Python stops; deeper, and bytes that
//! are not UTF-8, are a report with the place (exit 1), never "cannot read", a crash or a hang.

use crate::nesting::{orrery, Scratch};
use serde_json::{json, Value};

/// A blueprint whose shell task carries `payload`, a param nested `depth` levels (arrays)
/// below the task's params.
fn with_payload(depth: usize) -> String {
    let bp = json!({"version": "1.0", "id": "deep", "name": "deep", "tasks": [
        {"id": "start", "type": "system.start"},
        {"id": "a", "type": "shell.run", "depends_on": [{"id": "start"}],
         "params": [{"name": "command", "value": "true"}, {"name": "payload", "value": "PAYLOAD"}]},
        {"id": "end", "type": "system.end", "depends_on": [{"id": "a"}]}]});
    bp.to_string().replace("\"PAYLOAD\"", &format!("{}{}", "[".repeat(depth), "]".repeat(depth)))
}

fn report(out: &str) -> Value {
    let reports: Value = serde_json::from_str(out).unwrap_or_else(|e| panic!("{e}: {out:.500}"));
    reports[0].clone()
}

fn codes(report: &Value) -> Vec<String> {
    report["diagnostics"].as_array().unwrap().iter().map(|d| d["code"].as_str().unwrap().to_string()).collect()
}

#[test]
fn a_value_nested_500_deep_validates_and_runs_and_its_attempt_keeps_it() {
    let s = Scratch::new("deep-run");
    std::fs::write(s.0.join("deep.json"), with_payload(500)).unwrap();
    let (code, out, err, _) = orrery(&s.0, &["validate", "--format", "json", "deep.json"]);
    assert_eq!(code, Some(0), "{out} {err}");
    let r = report(&out);
    assert_eq!((r["valid"].as_bool(), r["server_accepts"].as_bool()), (Some(true), Some(true)), "{r}");

    let db = s.0.join("store.db");
    let db = db.to_str().unwrap();
    let (code, _, err, _) = orrery(&s.0, &["run", "--db", db, "--format", "json", "deep.json"]);
    assert_eq!(code, Some(0), "{err}");
    let (code, out, err, _) = orrery(&s.0, &["sessions", "--db", db, "--format", "json"]);
    assert_eq!(code, Some(0), "{err}");
    let sessions: Value = serde_json::from_str(&out).unwrap();
    let id = sessions[0]["id"].as_str().unwrap();
    // The session's blueprint, as stored and read back, still holds the whole depth.
    let (code, out, err, _) = orrery(&s.0, &["status", "--db", db, "--format", "json", id]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("completed"), "{out:.800}");
    let args = json!({"session_id": id}).to_string();
    let (code, out, err, _) = orrery(&s.0, &["job", "--db", db, "get_session_blueprints", &args]);
    assert_eq!(code, Some(0), "{err}");
    let answer: Value = serde_json::from_str(&out).unwrap();
    let text = answer["answer"]["root"]["text"].as_str().unwrap();
    assert_eq!(text.matches('[').count(), 500 + 4, "the payload's 500 levels and the blueprint's own 4 lists");
}

#[test]
fn nesting_deeper_than_python_reads_is_a_report_at_the_place() {
    let s = Scratch::new("deep-refused");
    // 995 below the params: deeper than the 990 levels Python's json reads.
    for (depth, file) in [(995, "over.json"), (200_000, "hostile.json")] {
        std::fs::write(s.0.join(file), with_payload(depth)).unwrap();
        let (code, out, err, _) = orrery(&s.0, &["validate", "--format", "json", file]);
        assert_eq!(code, Some(1), "{depth}: {err}");
        let r = report(&out);
        assert_eq!(codes(&r), ["json-depth"], "{r}");
        let d = &r["diagnostics"][0];
        assert_eq!(d["server_rejects"], true);
        assert_eq!(d["line"], 1);
        assert!(d["byte_offset"].as_u64().unwrap() > 100, "{d}");
        assert!(d["message"].as_str().unwrap().contains("RecursionError"), "{d}");
    }
    // Between what every server read and what Python reads from a shallow stack: accepted, with
    // a warning.
    std::fs::write(s.0.join("band.json"), with_payload(970)).unwrap();
    let (code, out, err, _) = orrery(&s.0, &["validate", "--format", "json", "band.json"]);
    assert_eq!(code, Some(0), "{err}");
    let r = report(&out);
    assert_eq!((codes(&r), r["server_accepts"].as_bool()), (vec!["json-depth".to_string()], Some(true)), "{r}");
    assert_eq!(r["diagnostics"][0]["severity"], "warning");
}

#[test]
fn a_file_that_is_not_utf8_gets_a_report_with_the_byte_and_the_rest_checked() {
    let s = Scratch::new("encoding");
    // A dangling dependency besides the encoding: the rest of the file is still checked.
    let text = json!({"version": "1.0", "id": "enc", "name": "MARK", "tasks": [
        {"id": "start", "type": "system.start"},
        {"id": "end", "type": "system.end", "depends_on": [{"id": "start"}, {"id": "ghost"}]}]})
    .to_string();
    let utf16: Vec<u8> = [0xFF, 0xFE].into_iter().chain(text.encode_utf16().flat_map(u16::to_le_bytes)).collect();
    let bom = [b"\xEF\xBB\xBF".as_slice(), text.as_bytes()].concat();
    let latin1 = text.replace("MARK", "caf\u{E9}").chars().map(|c| c as u8).collect::<Vec<u8>>();
    let at = latin1.iter().position(|&b| b == 0xE9).unwrap() as u64;
    for (file, bytes, offset, says) in [
        ("utf16.json", utf16, 0, "UTF-16 (little-endian"),
        ("bom.json", bom, 0, "byte order mark"),
        ("latin1.json", latin1, at, "offset"),
    ] {
        std::fs::write(s.0.join(file), bytes).unwrap();
        let (code, out, err, _) = orrery(&s.0, &["validate", "--format", "json", file]);
        assert_eq!(code, Some(1), "{file}: {err}");
        let r = report(&out);
        assert_eq!(r["server_accepts"], false, "{r}");
        assert_eq!(codes(&r)[0], "text-encoding", "{file}: {r}");
        assert!(codes(&r).contains(&"dangling-dependency".to_string()), "{file}: {r}");
        let d = &r["diagnostics"][0];
        assert_eq!((d["byte_offset"].as_u64(), d["server_rejects"].as_bool()), (Some(offset), Some(true)), "{d}");
        assert!(d["message"].as_str().unwrap().contains(says), "{file}: {d}");
        // The plain text report names the place too.
        let (code, out, _, _) = orrery(&s.0, &["validate", file]);
        assert_eq!(code, Some(1));
        assert!(out.contains("text-encoding") && out.contains("line 1"), "{out}");
    }
}
