//! Reading JSON as Python's `json` reads it: bytes that are not UTF-8 told apart from bad JSON,
//! and values nested as deep as Python goes (serde_json stops at 128 levels by default).
//!
//! How deep Python reads was measured with the reference (antikythera 0.5.1 on CPython 3.11,
//! recursion limit 1000): its C scanner takes one step of the recursion limit per level, and
//! COMPAS's decoder hook one more for an object. Called from a shallow stack, as
//! `reference_verdict.py` calls the server's loader, an array 990 levels deep is read and 991 is
//! a `RecursionError`; an object 989, not 990. The server itself calls the loader from deeper
//! in its web framework's stack: its upload took between 961 and 969 levels, depending on where
//! the nesting sits. So a file up to [`SERVER_READS`] deep is read by every server, one deeper
//! than [`PYTHON_READS`] by none, and the band between gets a warning.

use crate::diagnostic::{Code, Diagnostic};
use serde::de::DeserializeOwned;

/// The deepest nesting Python's `json` reads from a shallow call stack, counted as
/// [`python_depth`] counts.
pub const PYTHON_READS: usize = 990;

/// The deepest nesting every measured upload to an antikythera server accepted.
pub const SERVER_READS: usize = 960;

/// The deepest nesting Orrery reads anywhere: a blueprint's values as deep as Python takes them,
/// plus the levels Orrery wraps around them when it stores or sends them.
pub const ORRERY_READS: usize = PYTHON_READS + 64;

/// How deep a JSON text nests, as Python's recursion limit counts it: each array or object one
/// level, an object one more for the decoder hook called at its depth. Answers the depth and
/// the byte offset of the first container that reaches it. Strings are skipped (brackets in them
/// do not count); the text need not be valid JSON.
pub fn python_depth(text: &str) -> (usize, usize) {
    let bytes = text.as_bytes();
    let (mut depth, mut deepest, mut at) = (0usize, 0usize, 0usize);
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
            }
            open @ (b'[' | b'{') => {
                depth += 1;
                let counted = depth + usize::from(open == b'{');
                if counted > deepest {
                    (deepest, at) = (counted, i);
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    (deepest, at)
}

/// Parses `text` as serde_json does, but also values nested deeper than serde_json's 128 levels,
/// up to `limit` levels (counted as [`python_depth`] counts); deeper is the error. The deep case
/// is parsed on a stack that grows as it needs, so no depth up to the limit overflows a thread's
/// stack, and a text nested deeper is refused before it is parsed at all.
pub fn from_str_deep<T: DeserializeOwned>(text: &str, limit: usize) -> serde_json::Result<T> {
    match serde_json::from_str(text) {
        Err(e) if is_recursion_limit(&e) => {
            let (depth, _) = python_depth(text);
            if depth > limit {
                return Err(e);
            }
            let mut de = serde_json::Deserializer::from_str(text);
            de.disable_recursion_limit();
            let value = T::deserialize(serde_stacker::Deserializer::new(&mut de))?;
            de.end()?;
            Ok(value)
        }
        other => other,
    }
}

/// [`from_str_deep`] with the depth Orrery reads anywhere: what every reader of JSON Orrery
/// may have written (stored values, requests, messages) uses.
pub fn from_str<T: DeserializeOwned>(text: &str) -> serde_json::Result<T> {
    from_str_deep(text, ORRERY_READS)
}

/// [`from_str`] of bytes: the same error as serde_json's for bytes that are not UTF-8.
pub fn from_slice<T: DeserializeOwned>(bytes: &[u8]) -> serde_json::Result<T> {
    match std::str::from_utf8(bytes) {
        Ok(text) => from_str(text),
        Err(_) => serde_json::from_slice(bytes),
    }
}

/// Whether serde_json gave up for its own nesting limit (not for the text).
pub fn is_recursion_limit(e: &serde_json::Error) -> bool {
    e.to_string().starts_with("recursion limit exceeded")
}

/// The text of a file's bytes, and what is wrong with them when they are not plain UTF-8.
///
/// The server decodes an upload as strict UTF-8 and hands the text to Python's `json`, so it
/// refuses bytes that are not UTF-8 (a UTF-16 file among them) and a UTF-8 byte order mark
/// (`json` answers "Unexpected UTF-8 BOM"). Orrery says where, as a diagnostic the server
/// refuses the file for, and still decodes what it can (UTF-16 as UTF-16, a stray byte as
/// U+FFFD, the mark dropped) so that the rest of the file is checked too.
pub fn decode(bytes: Vec<u8>) -> (String, Option<Diagnostic>) {
    let refused = |offset: usize, text: &str, message: String| {
        let mut d = Diagnostic::error(Code::TextEncoding, "$", message).rejected();
        d.byte_offset = Some(offset);
        let (line, column) = crate::span::line_column_at(text, offset);
        (d.line, d.column) = (Some(line), Some(column));
        d
    };
    if let Some((order, big_endian)) = utf16_order(&bytes) {
        let units = bytes[2..].chunks(2).map(|p| {
            let pair = [p[0], p.get(1).copied().unwrap_or(0)];
            if big_endian {
                u16::from_be_bytes(pair)
            } else {
                u16::from_le_bytes(pair)
            }
        });
        let text: String = char::decode_utf16(units).map(|c| c.unwrap_or('\u{FFFD}')).collect();
        let message = format!(
            "the file is UTF-16 ({order}, byte order mark at byte 0), not UTF-8: the server decodes an upload as UTF-8 and refuses it; save it as UTF-8"
        );
        return (text, Some(refused(0, "", message)));
    }
    match String::from_utf8(bytes) {
        Ok(text) => match text.strip_prefix('\u{FEFF}') {
            Some(rest) => {
                let d = refused(
                    0,
                    "",
                    "the file begins with a UTF-8 byte order mark (bytes EF BB BF): the server's JSON parser refuses it (\"Unexpected UTF-8 BOM\"); save it without the mark".to_string(),
                );
                (rest.to_string(), Some(d))
            }
            None => {
                let nul = memchr::memchr(0, text.as_bytes());
                let d = nul.filter(|_| looks_like_utf16(text.as_bytes())).map(|at| {
                    let message = format!(
                        "byte {at} is NUL: the file looks like UTF-16 without a byte order mark, and is not JSON as UTF-8; the server refuses it; save it as UTF-8"
                    );
                    refused(at, &text, message)
                });
                (text, d)
            }
        },
        Err(e) => {
            let at = e.utf8_error().valid_up_to();
            let bytes = e.into_bytes();
            let shown: Vec<String> = bytes[at..].iter().take(4).map(|b| format!("{b:02X}")).collect();
            let prefix = std::str::from_utf8(&bytes[..at]).unwrap_or_default();
            let message = format!(
                "the file is not UTF-8: the byte at offset {at} ({}) is not valid UTF-8 there; the server decodes an upload as UTF-8 and refuses it",
                shown.join(" ")
            );
            let d = refused(at, prefix, message);
            (String::from_utf8_lossy(&bytes).into_owned(), Some(d))
        }
    }
}

/// `bytes` as the text [`decode`] makes of them when it has nothing to say: UTF-8 without a
/// byte order mark, nothing like UTF-16. `None` otherwise ([`decode`] then says what).
pub(crate) fn as_is(bytes: &[u8]) -> Option<&str> {
    if utf16_order(bytes).is_some() {
        return None;
    }
    let text = std::str::from_utf8(bytes).ok()?;
    let like_utf16 = memchr::memchr(0, bytes).is_some() && looks_like_utf16(bytes);
    (!text.starts_with('\u{FEFF}') && !like_utf16).then_some(text)
}

/// The byte order of a UTF-16 byte order mark at the start, if there is one (a UTF-32 little
/// endian mark also begins FF FE; it decodes as UTF-16 with NULs, refused all the same).
fn utf16_order(bytes: &[u8]) -> Option<(&'static str, bool)> {
    match bytes {
        [0xFF, 0xFE, ..] => Some(("little-endian", false)),
        [0xFE, 0xFF, ..] => Some(("big-endian", true)),
        _ => None,
    }
}

/// ASCII text in UTF-16 has a NUL in every other byte: what a JSON file saved as UTF-16
/// without a mark looks like.
fn looks_like_utf16(bytes: &[u8]) -> bool {
    let head = &bytes[..bytes.len().min(64)];
    let nuls = head.iter().filter(|&&b| b == 0).count();
    head.len() >= 4 && nuls * 3 >= head.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn nested(depth: usize) -> String {
        format!("{}{}", "[".repeat(depth), "]".repeat(depth))
    }

    #[test]
    fn depth_counts_containers_and_objects_one_more_and_skips_strings() {
        assert_eq!(python_depth("[]"), (1, 0));
        assert_eq!(python_depth(r#"{"a": [1]}"#), (2, 0));
        assert_eq!(python_depth(r#"[{"a": 1}]"#), (3, 1));
        assert_eq!(python_depth(r#"["[[[\"[[", {}]"#), (3, 12));
        assert_eq!(python_depth("plain"), (0, 0));
    }

    #[test]
    fn values_deeper_than_serde_json_reads_are_read_up_to_the_limit() {
        let v: Value = from_str(&nested(PYTHON_READS)).unwrap();
        let mut depth = 0;
        let mut at = &v;
        while let Some(inner) = at.as_array().and_then(|a| a.first()) {
            at = inner;
            depth += 1;
        }
        assert_eq!(depth + 1, PYTHON_READS);
        let e = from_str::<Value>(&nested(ORRERY_READS + 1)).unwrap_err();
        assert!(is_recursion_limit(&e), "{e}");
        // Shallow text takes the ordinary path, and its errors are serde_json's.
        assert!(from_str::<Value>("[1,").unwrap_err().is_eof());
    }

    #[test]
    fn a_deep_value_is_read_on_a_small_thread_stack() {
        // A quarter of the 2 MiB a Rust or tokio thread gets; serde_json alone overflows it.
        let text = nested(ORRERY_READS);
        let read = std::thread::Builder::new()
            .stack_size(512 * 1024)
            .spawn(move || from_str::<Value>(&text).is_ok())
            .unwrap()
            .join()
            .unwrap();
        assert!(read);
    }

    #[test]
    fn hostile_depth_is_refused_without_parsing() {
        let text = "[".repeat(5_000_000);
        assert!(is_recursion_limit(&from_str::<Value>(&text).unwrap_err()));
    }

    #[test]
    fn text_that_is_not_utf8_is_decoded_and_placed_at_its_byte() {
        let (text, d) = decode(b"{\n  \"id\": \"caf\xE9\"}".to_vec());
        let d = d.unwrap();
        assert_eq!((d.code, d.byte_offset, d.line, d.column), (Code::TextEncoding, Some(14), Some(2), Some(13)));
        assert!(d.server_rejects && d.message.contains("offset 14 (E9 22 7D)"), "{}", d.message);
        assert_eq!(text, "{\n  \"id\": \"caf\u{FFFD}\"}");

        let (text, d) = decode(b"\xEF\xBB\xBF{}".to_vec());
        assert_eq!(text, "{}");
        assert!(d.unwrap().message.contains("byte order mark"));

        let utf16: Vec<u8> =
            [0xFF, 0xFE].into_iter().chain("{\"a\": 1}".encode_utf16().flat_map(u16::to_le_bytes)).collect();
        let (text, d) = decode(utf16);
        assert_eq!(text, "{\"a\": 1}");
        assert!(d.unwrap().message.contains("UTF-16 (little-endian"));
        let be: Vec<u8> = [0xFE, 0xFF].into_iter().chain("[]".encode_utf16().flat_map(u16::to_be_bytes)).collect();
        assert_eq!(decode(be).0, "[]");

        let no_mark: Vec<u8> = "{\"a\": 1}".encode_utf16().flat_map(u16::to_le_bytes).collect();
        let (_, d) = decode(no_mark);
        let d = d.unwrap();
        assert_eq!((d.byte_offset, d.column), (Some(1), Some(2)));
        assert!(d.message.contains("UTF-16 without a byte order mark"));

        assert!(decode(b"{\"a\": \"\\u0000\"}".to_vec()).1.is_none());
    }
}
