//! Where a log may be cut, and how its bytes are shown.
//!
//! A log is whatever a process wrote, so it may hold bytes that are not UTF-8. The rules:
//!
//! - A **character** is a complete, valid UTF-8 sequence (1 to 4 bytes; no overlong forms, no
//!   surrogates). An **invalid run** is what one U+FFFD stands for: the longest start of a
//!   sequence that a later byte breaks (`e2 82` in `e2 82 28`), or one byte that begins nothing.
//!   Both are **units** ([`unit_at`]).
//! - A window or chunk never starts inside a unit and never ends inside one, so the contents of
//!   consecutive windows put together are exactly the decoding of the whole file.
//! - An **incomplete character** is 1 to 3 bytes at the very end of what is there that begin a
//!   valid sequence (its writer may not have written the rest yet). A reader holds it back until
//!   it is complete, unless nothing else is left to give (see `read_window` and `follow`).
//! - Content is decoded with [`decode`]: valid characters as they are, each maximal invalid run
//!   (Unicode's "maximal subpart" practice, as `String::from_utf8_lossy`) as one U+FFFD. So the
//!   length of the content says nothing about the bytes: offsets are always file byte offsets.

/// The length of the character that `bytes` begins with, when it is complete and valid.
pub fn char_at(bytes: &[u8]) -> Option<usize> {
    let n = match *bytes.first()? {
        0x00..=0x7f => 1,
        0xc2..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf4 => 4,
        _ => return None,
    };
    let head = bytes.get(..n)?;
    std::str::from_utf8(head).ok().map(|_| n)
}

/// The length of the unit (a character or an invalid run) that `bytes` begins with, when it is
/// complete: `None` for an incomplete character (more bytes may complete it) or no bytes.
pub fn unit_at(bytes: &[u8]) -> Option<usize> {
    let head = &bytes[..bytes.len().min(4)];
    match std::str::from_utf8(head) {
        Ok(text) => text.chars().next().map(char::len_utf8),
        Err(e) if e.valid_up_to() > 0 => char_at(head),
        Err(e) => e.error_len(),
    }
}

/// Whether `bytes` is the beginning of a valid character that is not complete yet.
pub fn is_incomplete_char(bytes: &[u8]) -> bool {
    !bytes.is_empty()
        && bytes.len() < 4
        && matches!(std::str::from_utf8(bytes), Err(e) if e.valid_up_to() == 0 && e.error_len().is_none())
}

/// How many bytes of `bytes` can be given now: all of them, less an incomplete character at
/// the end.
pub fn complete_prefix_len(bytes: &[u8]) -> usize {
    let len = bytes.len();
    (1..=len.min(3)).map(|k| len - k).find(|&q| is_incomplete_char(&bytes[q..])).unwrap_or(len)
}

/// The text of `bytes`: invalid runs shown as U+FFFD.
pub fn decode(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The text of `bytes`, as [`decode`], without a copy when they are valid UTF-8.
pub fn decode_owned(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_character_is_complete_and_valid() {
        assert_eq!(char_at(b"a"), Some(1));
        assert_eq!(char_at("é".as_bytes()), Some(2));
        assert_eq!(char_at("€x".as_bytes()), Some(3));
        assert_eq!(char_at("🦀".as_bytes()), Some(4));
        assert_eq!(char_at(&"🦀".as_bytes()[..3]), None, "three bytes of four are not a character yet");
        assert_eq!(char_at(&[0xc0, 0x80]), None, "an overlong form is not a character");
        assert_eq!(char_at(&[0xed, 0xa0, 0x80]), None, "a surrogate is not a character");
        assert_eq!(char_at(&[0x80]), None, "a continuation byte alone is not a character");
    }

    #[test]
    fn a_unit_is_a_character_or_what_one_replacement_character_stands_for() {
        assert_eq!(unit_at("é!".as_bytes()), Some(2));
        assert_eq!(unit_at(&[0xe2, 0x82, 0x28]), Some(2), "one U+FFFD for e2 82, then '('");
        assert_eq!(unit_at(&[0x80, 0x80]), Some(1), "a stray continuation byte alone");
        assert_eq!(unit_at(&[0xe2, 0x82]), None, "incomplete: the next byte decides");
        assert_eq!(unit_at(&[]), None);
    }

    #[test]
    fn an_incomplete_character_is_held_back_and_an_invalid_byte_is_not() {
        let crab = "🦀".as_bytes();
        assert_eq!(complete_prefix_len(&[b'a', crab[0], crab[1]]), 1);
        assert_eq!(complete_prefix_len(crab), 4);
        assert_eq!(complete_prefix_len(&[b'a', 0xff]), 2, "0xff never begins a character");
        assert_eq!(complete_prefix_len(&[b'a', 0xe2, 0x28]), 3, "0xe2 0x28 can never become a character");
        assert_eq!(complete_prefix_len(&[]), 0);
    }
}
