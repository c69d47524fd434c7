//! Byte windows of real files: the edge cases one by one, then random files, offsets and limits
//! against a plain computation on the bytes.

use orrery_logs::{read_window, window_of, LogError, Window, DEFAULT_LIMIT, MAX_LIMIT, MIN_LIMIT};
use proptest::prelude::*;
use std::path::Path;

fn file_with(bytes: &[u8]) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.attempt-1.log");
    std::fs::write(&path, bytes).unwrap();
    (dir, path)
}

#[test]
fn the_tail_of_a_small_file_is_the_whole_file() {
    let (_d, path) = file_with("héllo\n".as_bytes());
    let w = read_window(&path, -1, None).unwrap();
    assert_eq!(
        w,
        Window {
            content: "héllo\n".into(),
            start_offset: 0,
            next_offset: 7,
            file_size: 7,
            has_more_before: false,
            has_more_after: false,
            reset: false
        }
    );
}

#[test]
fn the_limit_is_clamped_and_defaults_to_64_kib() {
    let (_d, path) = file_with(&vec![b'x'; 300_000]);
    assert_eq!(read_window(&path, 0, Some(1)).unwrap().next_offset, MIN_LIMIT, "a tiny limit reads 1 KiB");
    assert_eq!(read_window(&path, 0, Some(10_000_000)).unwrap().next_offset, MAX_LIMIT, "a huge one 256 KiB");
    let w = read_window(&path, 0, None).unwrap();
    assert_eq!(w.next_offset, DEFAULT_LIMIT);
    assert!(w.has_more_after && !w.has_more_before);
    let tail = read_window(&path, -1, None).unwrap();
    assert_eq!((tail.start_offset, tail.next_offset), (300_000 - DEFAULT_LIMIT, 300_000));
    assert!(tail.has_more_before && !tail.has_more_after);
}

#[test]
fn an_offset_at_the_end_is_an_empty_window_and_past_the_end_is_a_reset_to_the_tail() {
    let (_d, path) = file_with(b"abc");
    let at_end = read_window(&path, 3, None).unwrap();
    assert_eq!((at_end.content.as_str(), at_end.start_offset, at_end.next_offset, at_end.reset), ("", 3, 3, false));
    let past = read_window(&path, 10, None).unwrap();
    assert_eq!((past.content.as_str(), past.start_offset, past.reset), ("abc", 0, true), "truncated: read the tail");
}

#[test]
fn a_window_never_starts_or_ends_inside_a_character() {
    // 1023 ASCII bytes then a crab (4 bytes): a 1 KiB window from 0 would cut the crab.
    let mut bytes = vec![b'a'; 1023];
    bytes.extend_from_slice("🦀z".as_bytes());
    let (_d, path) = file_with(&bytes);
    let first = read_window(&path, 0, Some(1024)).unwrap();
    assert_eq!(first.next_offset, 1023, "the crab is not cut");
    let second = read_window(&path, first.next_offset as i64, Some(1024)).unwrap();
    assert_eq!(second.content, "🦀z");
    let inside = read_window(&path, 1025, None).unwrap();
    assert_eq!((inside.start_offset, inside.content.as_str()), (1027, "z"), "an offset inside moves past the crab");
}

#[test]
fn an_incomplete_character_at_the_end_waits_unless_it_is_all_that_is_left() {
    let crab = "🦀".as_bytes();
    let (_d, path) = file_with(&[b'a', b'b', crab[0], crab[1]]);
    let w = read_window(&path, 0, None).unwrap();
    assert_eq!((w.content.as_str(), w.next_offset, w.has_more_after), ("ab", 2, true), "a writer may be writing it");
    let rest = read_window(&path, 2, None).unwrap();
    assert_eq!(
        (rest.content.as_str(), rest.next_offset),
        ("\u{fffd}", 4),
        "a reader of a finished file gets to its end"
    );
}

#[test]
fn invalid_bytes_are_shown_as_replacement_characters_and_offsets_stay_byte_offsets() {
    let (_d, path) = file_with(&[b'o', 0xff, b'k', 0xc3, 0x28]);
    let w = read_window(&path, 0, None).unwrap();
    assert_eq!(w.content, "o\u{fffd}k\u{fffd}(");
    assert_eq!(w.next_offset, 5, "five bytes, whatever the decoded length");
}

#[test]
fn a_missing_file_reads_as_an_empty_log() {
    let dir = tempfile::tempdir().unwrap();
    let w = read_window(&dir.path().join("not-yet.log"), -1, None).unwrap();
    assert_eq!((w.content.as_str(), w.file_size, w.reset), ("", 0, false));
    assert!(read_window(&dir.path().join("not-yet.log"), 5, None).unwrap().reset, "an offset past 0 was truncated");
}

#[test]
fn a_negative_offset_other_than_minus_one_names_the_argument_and_the_file() {
    let (_d, path) = file_with(b"abc");
    let e = read_window(&path, -2, None).unwrap_err();
    assert!(matches!(e, LogError::InvalidOffset { offset: -2, .. }), "{e:?}");
    assert_eq!(e.code(), orrery_blueprint::FailureCode::InvalidOffset);
    let message = e.to_string();
    assert!(message.contains("offset -2") && message.contains("t.attempt-1.log"), "{message}");
}

#[test]
fn a_directory_is_not_a_log() {
    let dir = tempfile::tempdir().unwrap();
    let e = read_window(dir.path(), 0, None).unwrap_err();
    assert!(matches!(e, LogError::NotAFile { .. }), "{e:?}");
    assert!(e.to_string().contains(&dir.path().display().to_string()), "{e}");
}

#[test]
fn a_path_that_cannot_be_opened_is_an_io_error_naming_it() {
    // A regular file used as a folder: ENOTDIR, whoever runs the test (root reads anything).
    let (_d, path) = file_with(b"abc");
    let below = path.join("log");
    let e = read_window(&below, 0, None).unwrap_err();
    assert!(matches!(e, LogError::Io { .. }), "{e:?}");
    assert!(e.to_string().contains(&below.display().to_string()), "{e}");
}

// ---- the property: a window is what a plain computation on the bytes says ----

/// The unit (a complete character, or what one U+FFFD stands for) that begins at `i`, walking
/// the file from its start; `None` for an incomplete character at the end of the file.
fn model_unit(bytes: &[u8], i: usize) -> Option<usize> {
    if let Some(n) = (1..=4)
        .find(|&n| i + n <= bytes.len() && std::str::from_utf8(&bytes[i..i + n]).is_ok_and(|s| s.chars().count() == 1))
    {
        return Some(n);
    }
    std::str::from_utf8(&bytes[i..(i + 4).min(bytes.len())]).unwrap_err().error_len()
}

fn model_char(bytes: &[u8], i: usize) -> Option<usize> {
    (1..=4)
        .find(|&n| i + n <= bytes.len() && std::str::from_utf8(&bytes[i..i + n]).is_ok_and(|s| s.chars().count() == 1))
}

/// Where the file ends with the beginning of a character that some bytes would complete.
fn model_incomplete_tail(bytes: &[u8]) -> Option<usize> {
    (1..=3.min(bytes.len())).map(|k| bytes.len() - k).find(|&q| {
        let have = bytes.len() - q;
        (have + 1..=4).any(|total| {
            (0x80..=0xbfu8).any(|second| {
                let mut c = bytes[q..].to_vec();
                c.push(second);
                c.resize(total, 0x80);
                c.len() == total && std::str::from_utf8(&c).is_ok_and(|s| s.chars().count() == 1) && have >= 1
            })
        }) && model_char(bytes, q).is_none()
    })
}

fn model(bytes: &[u8], offset: i64, limit: Option<u64>) -> Window {
    let size = bytes.len();
    let limit = limit.map_or(65_536, |l| l.clamp(1024, 262_144)) as usize;
    let mut inside = vec![false; size + 1];
    let mut i = 0;
    while i < size {
        match model_unit(bytes, i) {
            Some(n) => {
                for flag in &mut inside[i + 1..i + n] {
                    *flag = true;
                }
                i += n;
            }
            None => i += 1,
        }
    }
    let reset = offset > size as i64;
    let wanted = if offset == -1 || reset { size.saturating_sub(limit) } else { offset as usize };
    let start = (wanted..=size).find(|&p| !inside[p]).unwrap();
    let e0 = (start + limit).min(size);
    let mut end = (start..=e0).rev().find(|&p| !inside[p]).unwrap();
    if let Some(q) = model_incomplete_tail(bytes) {
        if end > q && q > start {
            end = q;
        }
    }
    Window {
        content: String::from_utf8_lossy(&bytes[start..end]).into_owned(),
        start_offset: start as u64,
        next_offset: end as u64,
        file_size: size as u64,
        has_more_before: start > 0,
        has_more_after: end < size,
        reset,
    }
}

/// Log-like bytes: ASCII runs, any characters, and any bytes at all.
fn log_bytes(max_pieces: usize) -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        4 => "[ -~\n]{0,400}".prop_map(String::into_bytes),
        3 => proptest::collection::vec(any::<char>(), 0..40).prop_map(|cs| cs.into_iter().collect::<String>().into_bytes()),
        1 => proptest::collection::vec(any::<u8>(), 0..6),
    ];
    proptest::collection::vec(piece, 0..max_pieces).prop_map(|pieces| pieces.concat())
}

fn check(path: &Path, bytes: &[u8], offset: i64, limit: Option<u64>) -> Result<(), TestCaseError> {
    let got = read_window(path, offset, limit).unwrap();
    prop_assert_eq!(&got, &model(bytes, offset, limit), "offset {} limit {:?} size {}", offset, limit, bytes.len());
    // The same bytes held in memory are cut the same way.
    prop_assert_eq!(window_of(bytes, u64::try_from(offset).ok(), limit), got);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn a_window_is_the_slice_the_bytes_say(
        bytes in log_bytes(40),
        offsets in proptest::collection::vec(any::<prop::sample::Index>(), 4),
        limit in prop_oneof![Just(None), (0u64..4000).prop_map(Some)],
    ) {
        let (_d, path) = file_with(&bytes);
        check(&path, &bytes, -1, limit)?;
        check(&path, &bytes, bytes.len() as i64 + 1, limit)?;
        for o in offsets {
            check(&path, &bytes, o.index(bytes.len() + 1) as i64, limit)?;
        }
    }

    #[test]
    fn reading_window_after_window_from_next_offset_gives_every_byte_once(bytes in log_bytes(60), limit in 0u64..3000) {
        let (_d, path) = file_with(&bytes);
        let mut offset = 0u64;
        let mut text = String::new();
        loop {
            let w = read_window(&path, offset as i64, Some(limit)).unwrap();
            prop_assert_eq!(w.start_offset, offset, "windows follow each other");
            text.push_str(&w.content);
            if !w.has_more_after {
                break;
            }
            prop_assert!(w.next_offset > offset, "every window moves on");
            offset = w.next_offset;
        }
        prop_assert_eq!(text, String::from_utf8_lossy(&bytes).into_owned());
    }
}

#[test]
fn a_fifo_is_not_a_log_and_reading_it_does_not_wait_for_a_writer() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let e = read_window(&fifo, -1, None).unwrap_err();
    assert!(matches!(e, LogError::NotAFile { .. }), "{e:?}");
}

#[test]
fn a_window_never_cuts_an_invalid_run_so_windows_decode_as_the_whole_file() {
    // `e2 82 (` decodes as one U+FFFD then '(': a cut between e2 and 82 would give two.
    let mut bytes = vec![b'a'; 1023];
    bytes.extend_from_slice(&[0xe2, 0x82, b'(']);
    let (_d, path) = file_with(&bytes);
    let first = read_window(&path, 0, Some(1024)).unwrap();
    assert_eq!(first.next_offset, 1023);
    let second = read_window(&path, 1023, Some(1024)).unwrap();
    assert_eq!(second.content, "\u{fffd}(");
}
