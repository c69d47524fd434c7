//! The id a blueprint file declares, read without building the file: what finding a composite's
//! inner blueprint by id among the files of a folder needs of each file (`check.rs`, `Folder`).
//!
//! One pass over the bytes, in chunks of fixed size, so a large file costs a read and a little
//! memory: strings are skipped by searching for their closing quote, and only the keys of the
//! top-level object and the value of its `"id"` are kept. The answer is the id loading the file
//! would give it whenever the file loads: none when it would take loading to tell (not an
//! object, a COMPAS envelope, `"id"` given twice or not a string, bytes that end before the
//! object does). A file this reads an id from but that does not load is found out when it is
//! loaded, as a file that is no candidate.

use crate::skim::{ends_string, first, quote_or_bracket, ENDS_STRING, MATTERS_BELOW};
use std::io::{self, Read};

/// How much of a file is read at a time.
const CHUNK: usize = 64 << 10;
/// A top-level key or id longer than this is no id a composite names: the file is loaded to
/// be told.
const MOST_KEPT: usize = 4 << 10;

/// The top-level `"id"` string of the JSON object `reader` holds (see the module notes).
pub(crate) fn declared_id(reader: impl Read) -> io::Result<Option<String>> {
    declared_id_in_chunks(reader, CHUNK)
}

fn declared_id_in_chunks(mut reader: impl Read, chunk: usize) -> io::Result<Option<String>> {
    let mut scan = Scan::default();
    let mut buffer = vec![0; chunk];
    loop {
        let n = match reader.read(&mut buffer) {
            Ok(0) => return Ok(None), // the object never closed
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        match scan.feed(&buffer[..n]) {
            Step::More => {}
            Step::Done(id) => return Ok(id),
        }
    }
}

/// At the top level, the keys and values: any byte but JSON's whitespace.
const MATTERS_ON_TOP: [bool; 256] = {
    let mut t = [true; 256];
    let mut k = 0;
    while k < 4 {
        t[b" \t\n\r"[k] as usize] = false;
        k += 1;
    }
    t
};

/// What the top-level object's keys said so far.
#[derive(Default)]
struct Scan {
    started: bool,
    depth: usize,
    /// Inside a string; after a backslash in it.
    string: Option<Role>,
    escaped: bool,
    /// The bytes of the string being kept (a top-level key, the id).
    kept: Vec<u8>,
    /// At depth 1, what comes next: a key (after `{` or `,`), or the value of this key.
    expect_key: bool,
    value_of: Option<Key>,
    ids: usize,
    id: Option<Vec<u8>>,
    id_not_a_string: bool,
    dtype: bool,
    data: bool,
}

#[derive(Clone, Copy, PartialEq)]
enum Role {
    Key,
    Id,
    Skipped,
}

#[derive(Clone, Copy, PartialEq)]
enum Key {
    Id,
    Dtype,
    Data,
    Other,
}

enum Step {
    More,
    Done(Option<String>),
}

impl Scan {
    fn feed(&mut self, bytes: &[u8]) -> Step {
        let mut i = 0;
        while i < bytes.len() {
            if let Some(role) = self.string {
                // To the closing quote, past escaped ones.
                if self.escaped {
                    self.escaped = false;
                    if role != Role::Skipped && !self.keep(&bytes[i..=i]) {
                        return Step::Done(None);
                    }
                    i += 1;
                    continue;
                }
                let at = first(&bytes[i..], &ENDS_STRING, ends_string).map_or(bytes.len(), |k| i + k);
                if role != Role::Skipped && !self.keep(&bytes[i..at]) {
                    return Step::Done(None);
                }
                match bytes.get(at) {
                    None => return Step::More,
                    Some(b'\\') => {
                        if role != Role::Skipped && !self.keep(b"\\") {
                            return Step::Done(None);
                        }
                        self.escaped = true;
                    }
                    Some(_) => self.close_string(role),
                }
                i = at + 1;
                continue;
            }
            // To the next byte that matters: most of a file is indentation, digits and punctuation
            // of the tasks.
            let found = if self.depth == 1 || !self.started {
                bytes[i..].iter().position(|&b| MATTERS_ON_TOP[b as usize])
            } else {
                first(&bytes[i..], &MATTERS_BELOW, quote_or_bracket)
            };
            match found {
                Some(k) => i += k,
                None => return Step::More,
            }
            let b = bytes[i];
            i += 1;
            if !self.started {
                if b != b'{' {
                    return Step::Done(None); // not an object (a BOM, an array, UTF-16)
                }
                self.started = true;
                self.depth = 1;
                self.expect_key = true;
                continue;
            }
            let value_of = if self.depth == 1 { self.value_of.take() } else { None };
            match b {
                b'"' => {
                    self.string = Some(match (self.depth, self.expect_key, value_of) {
                        (1, true, _) => Role::Key,
                        (1, false, Some(Key::Id)) => Role::Id,
                        _ => Role::Skipped,
                    });
                    self.kept.clear();
                }
                b':' if self.depth == 1 => {
                    // The key's kind waits for its value.
                    self.value_of = value_of;
                }
                b',' if self.depth == 1 => self.expect_key = true,
                b'{' | b'[' => {
                    self.id_not_a_string |= value_of == Some(Key::Id);
                    self.depth += 1;
                }
                b'}' | b']' => {
                    self.depth -= 1;
                    if self.depth == 0 {
                        return Step::Done(self.verdict());
                    }
                }
                // A number, true, false, null, NaN...
                _ => self.id_not_a_string |= value_of == Some(Key::Id),
            }
        }
        Step::More
    }

    fn keep(&mut self, bytes: &[u8]) -> bool {
        self.kept.extend_from_slice(bytes);
        self.kept.len() <= MOST_KEPT
    }

    fn close_string(&mut self, role: Role) {
        self.string = None;
        match role {
            Role::Key => {
                self.expect_key = false;
                let key = match decoded(&self.kept).as_deref() {
                    Some("id") => Key::Id,
                    Some("dtype") => Key::Dtype,
                    Some("data") => Key::Data,
                    _ => Key::Other,
                };
                match key {
                    Key::Id => self.ids += 1,
                    Key::Dtype => self.dtype = true,
                    Key::Data => self.data = true,
                    Key::Other => {}
                }
                self.value_of = Some(key);
            }
            Role::Id => self.id = Some(std::mem::take(&mut self.kept)),
            Role::Skipped => {}
        }
    }

    fn verdict(&self) -> Option<String> {
        if self.ids != 1 || self.id_not_a_string || (self.dtype && self.data) {
            return None;
        }
        decoded(self.id.as_deref()?)
    }
}

/// A JSON string's content (between its quotes) as text; none when it is not valid.
fn decoded(raw: &[u8]) -> Option<String> {
    if !raw.contains(&b'\\') {
        return std::str::from_utf8(raw).ok().map(str::to_string);
    }
    let mut quoted = Vec::with_capacity(raw.len() + 2);
    quoted.push(b'"');
    quoted.extend_from_slice(raw);
    quoted.push(b'"');
    serde_json::from_slice(&quoted).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    /// The id loading gives a plain file, when it is one of those this reads.
    fn oracle(text: &str) -> Option<String> {
        #[derive(serde::Deserialize)]
        struct Declares {
            id: Option<String>,
            dtype: Option<serde::de::IgnoredAny>,
            data: Option<serde::de::IgnoredAny>,
        }
        let d: Declares = serde_json::from_str(text).ok()?;
        if d.dtype.is_some() && d.data.is_some() {
            return None;
        }
        d.id
    }

    fn every_chunking(text: &str) -> Option<String> {
        let whole = declared_id(text.as_bytes()).unwrap();
        for chunk in [1, 2, 3, 7, 64] {
            assert_eq!(declared_id_in_chunks(text.as_bytes(), chunk).unwrap(), whole, "chunks of {chunk}: {text}");
        }
        whole
    }

    #[test]
    fn the_top_level_id_is_read_and_what_takes_loading_to_tell_is_not() {
        let cases = [
            (r#"{"id": "a", "tasks": [{"id": "t"}]}"#, Some("a")),
            (r#"{"tasks": [{"id": "t", "x": {"id": "deep"}}], "id": "late"}"#, Some("late")),
            (r#" {"name": "}\"{", "\u0069d": "esc\"aped\u00e9"}"#, Some("esc\"apedé")),
            (r#"{"id": "a", "id": "b"}"#, None),
            (r#"{"id": 5}"#, None),
            (r#"{"id": ["a"]}"#, None),
            (r#"{"id": null}"#, None),
            (r#"{"tasks": []}"#, None),
            (r#"{"dtype": "x/Blueprint", "data": {"id": "a"}, "id": "b"}"#, None),
            (r#"{"dtype": "x/Blueprint", "id": "b"}"#, Some("b")),
            ("[1, 2]", None),
            ("\u{feff}{\"id\": \"a\"}", None),
            (r#"{"id": "a", "tasks": ["#, None),
            ("", None),
        ];
        for (text, id) in cases {
            assert_eq!(every_chunking(text).as_deref(), id, "{text}");
        }
    }

    #[test]
    fn a_key_or_id_too_long_to_be_a_name_leaves_the_file_to_be_loaded() {
        let long = "x".repeat(MOST_KEPT + 1);
        assert_eq!(every_chunking(&json!({ "id": long }).to_string()), None);
        assert_eq!(every_chunking(&json!({ long.clone(): 1, "id": "a" }).to_string()), None);
        assert_eq!(every_chunking(&json!({ "id": "a", "name": long }).to_string()).as_deref(), Some("a"));
    }

    fn json_value() -> impl Strategy<Value = serde_json::Value> {
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::from),
            any::<i32>().prop_map(serde_json::Value::from),
            "[a-z\"\\\\{}\\[\\]:,é\u{1F600} ]{0,8}".prop_map(serde_json::Value::from),
        ];
        leaf.prop_recursive(4, 32, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::from),
                prop::collection::btree_map(prop_oneof![Just("id".to_string()), "[a-z\"{}]{0,4}"], inner, 0..4)
                    .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn it_reads_what_loading_reads(top in prop::collection::btree_map(
            prop_oneof![Just("id".to_string()), Just("dtype".to_string()), Just("data".to_string()), "[a-z\"]{0,3}"],
            json_value(), 0..5), pretty in any::<bool>()) {
            let value = serde_json::Value::Object(top.into_iter().collect());
            let text = if pretty { serde_json::to_string_pretty(&value).unwrap() } else { value.to_string() };
            prop_assert_eq!(every_chunking(&text), oracle(&text));
        }
    }
}
