//! The follower against real files that real writers append to, truncate and replace.

use orrery_logs::{follow, FollowOptions, Follower, LogChunk, LogError, LogEvent, WatchMode};
use proptest::prelude::*;
use std::io::Write;
use std::path::Path;
use std::time::Duration;

/// A test that hangs is a broken test: give up on it long after any sane run would have ended.
const HANG_GUARD: Duration = Duration::from_secs(30);

async fn next(f: &mut Follower) -> Option<Result<LogEvent, LogError>> {
    tokio::time::timeout(HANG_GUARD, f.next()).await.expect("the follower neither yielded nor ended")
}

/// Every event until the follower ends.
async fn rest(f: &mut Follower) -> Vec<LogEvent> {
    let mut events = Vec::new();
    while let Some(e) = next(f).await {
        events.push(e.expect("no error"));
    }
    events
}

/// Reads chunks until the follower has given everything before `offset`.
async fn read_to(f: &mut Follower, offset: u64) -> Vec<LogEvent> {
    let mut events = Vec::new();
    loop {
        let e = next(f).await.expect("the follower goes on").expect("no error");
        let reached = matches!(&e, LogEvent::Chunk(c) if c.next_offset >= offset);
        events.push(e);
        if reached {
            return events;
        }
    }
}

fn text(events: &[LogEvent]) -> String {
    events
        .iter()
        .map(|e| match e {
            LogEvent::Chunk(c) => c.content.clone(),
            LogEvent::Reset => "<reset>".to_string(),
        })
        .collect()
}

fn append(path: &Path, bytes: &[u8]) {
    std::fs::OpenOptions::new().create(true).append(true).open(path).unwrap().write_all(bytes).unwrap();
}

fn options(force_poll: bool) -> FollowOptions {
    FollowOptions { force_poll, ..FollowOptions::default() }
}

#[tokio::test]
async fn it_waits_for_a_log_that_does_not_exist_yet() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("k.attempt-1.log");
    let mut f = follow(&path, 0, options(false));
    assert_eq!(f.watch_mode(), WatchMode::Native, "the folder exists, so it can be watched");
    append(&path, "ünïcode\n".as_bytes());
    let seen = read_to(&mut f, 10).await;
    assert_eq!(text(&seen), "ünïcode\n", "no reset: the first file is not a replacement");
    f.writer_done();
    assert_eq!(rest(&mut f).await, vec![]);
}

#[tokio::test]
async fn it_polls_when_the_folder_cannot_be_watched_and_still_sees_everything() {
    let dir = tempfile::tempdir().unwrap();
    let session = dir.path().join("session-not-created-yet");
    let path = session.join("k.attempt-1.log");
    let mut f = follow(&path, 0, options(false));
    assert_eq!(f.watch_mode(), WatchMode::Poll, "a missing folder cannot be watched");
    std::fs::create_dir(&session).unwrap();
    append(&path, b"one\n");
    append(&path, b"two\n");
    f.writer_done();
    assert_eq!(text(&rest(&mut f).await), "one\ntwo\n");
}

#[tokio::test]
async fn a_truncated_log_is_a_reset_then_the_new_bytes_from_offset_zero() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("k.attempt-1.log");
    append(&path, b"first line\n");
    let mut f = follow(&path, 0, options(false));
    read_to(&mut f, 11).await;
    std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(0).unwrap();
    assert_eq!(next(&mut f).await.unwrap().unwrap(), LogEvent::Reset);
    append(&path, b"2nd\n");
    f.writer_done();
    let after = rest(&mut f).await;
    assert_eq!(
        after,
        vec![LogEvent::Chunk(LogChunk { content: "2nd\n".into(), start_offset: 0, next_offset: 4 })],
        "the new bytes exactly, from offset 0"
    );
}

#[tokio::test]
async fn a_replaced_log_gives_the_old_files_last_bytes_then_a_reset_then_the_new_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("k.attempt-1.log");
    append(&path, b"old\n");
    let mut f = follow(&path, 0, options(false));
    read_to(&mut f, 4).await;
    append(&path, b"old2\n");
    let fresh = dir.path().join("fresh");
    std::fs::write(&fresh, "new ✓\n").unwrap();
    std::fs::rename(&fresh, &path).unwrap();
    let mut replaced = Vec::new();
    while !text(&replaced).ends_with("new ✓\n") {
        replaced.push(next(&mut f).await.expect("the follower goes on").expect("no error"));
    }
    assert_eq!(text(&replaced), "old2\n<reset>new ✓\n", "the old file's bytes first, then the new file");
    // Removed, then written again: a replacement too.
    std::fs::remove_file(&path).unwrap();
    append(&path, b"third\n");
    f.writer_done();
    assert_eq!(text(&rest(&mut f).await), "<reset>third\n");
}

#[tokio::test]
async fn a_start_offset_past_the_end_is_a_reset_and_one_inside_a_character_moves_past_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("k.attempt-1.log");
    append(&path, "a€b".as_bytes());
    let mut past = follow(&path, 99, options(true));
    past.writer_done();
    assert_eq!(text(&rest(&mut past).await), "<reset>a€b");
    let mut inside = follow(&path, 2, options(true));
    inside.writer_done();
    assert_eq!(
        rest(&mut inside).await,
        vec![LogEvent::Chunk(LogChunk { content: "b".into(), start_offset: 4, next_offset: 5 })]
    );
}

#[tokio::test]
async fn a_directory_ends_the_follower_with_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut f = follow(dir.path(), 0, options(false));
    let e = next(&mut f).await.expect("an error").unwrap_err();
    assert!(matches!(e, LogError::NotAFile { .. }), "{e:?}");
    assert!(e.to_string().contains(&dir.path().display().to_string()), "{e}");
    assert!(next(&mut f).await.is_none(), "the follower ended");
}

#[tokio::test]
async fn a_path_below_a_file_ends_the_follower_with_an_io_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plain");
    std::fs::write(&file, b"x").unwrap();
    let mut f = follow(&file.join("log"), 0, options(true));
    let e = next(&mut f).await.expect("an error").unwrap_err();
    assert!(matches!(e, LogError::Io { .. }), "{e:?}");
    assert!(next(&mut f).await.is_none(), "the follower ended");
}

#[tokio::test]
async fn an_incomplete_character_waits_for_its_last_byte_and_is_given_when_the_writer_ends_without_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("k.attempt-1.log");
    let crab = "🦀".as_bytes();
    append(&path, &[b'a', crab[0], crab[1]]);
    let mut f = follow(&path, 0, options(false));
    let first = read_to(&mut f, 1).await;
    assert_eq!(text(&first), "a");
    append(&path, &crab[2..]);
    append(&path, &[b'b', 0xe2, 0x82]);
    let second = read_to(&mut f, 6).await;
    assert_eq!(text(&second), "🦀b", "the crab whole, once its last byte is there");
    f.writer_done();
    assert_eq!(
        rest(&mut f).await,
        vec![LogEvent::Chunk(LogChunk { content: "\u{fffd}".into(), start_offset: 6, next_offset: 8 })],
        "never completed: given as U+FFFD so the reader gets to the end"
    );
}

/// Log-like bytes: ASCII runs, any characters, and any bytes at all.
fn log_bytes() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        3 => "[ -~\n]{0,200}".prop_map(String::into_bytes),
        3 => proptest::collection::vec(any::<char>(), 0..30).prop_map(|cs| cs.into_iter().collect::<String>().into_bytes()),
        1 => proptest::collection::vec(any::<u8>(), 0..5),
    ];
    proptest::collection::vec(piece, 0..30).prop_map(|pieces| pieces.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// The writer appends in random pieces (splitting characters across writes), sometimes
    /// pausing; the follower reads in small random chunks. What it gives is the file, byte-exact.
    #[test]
    fn a_follower_reassembles_a_file_appended_to_in_random_pieces(
        bytes in log_bytes(),
        cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..20),
        pauses in proptest::collection::vec(0u64..3, 20),
        chunk_size in 4usize..200,
        force_poll in any::<bool>(),
    ) {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        let events = runtime.block_on(async {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("k.attempt-1.log");
            let mut at: Vec<usize> = cuts.iter().map(|c| c.index(bytes.len() + 1)).collect();
            at.push(0);
            at.push(bytes.len());
            at.sort_unstable();
            let options = FollowOptions {
                chunk_size,
                poll: Duration::from_millis(5),
                rescan: Duration::from_millis(50),
                force_poll,
            };
            let mut f = follow(&path, 0, options);
            let writer = {
                let (path, bytes) = (path.clone(), bytes.clone());
                tokio::spawn(async move {
                    for (i, w) in at.windows(2).enumerate() {
                        append(&path, &bytes[w[0]..w[1]]);
                        if pauses[i % pauses.len()] > 0 {
                            tokio::time::sleep(Duration::from_millis(pauses[i % pauses.len()])).await;
                        }
                    }
                })
            };
            let mut events = Vec::new();
            let mut writer = Some(writer);
            loop {
                tokio::select! {
                    e = f.next() => match e {
                        Some(e) => events.push(e.expect("no error")),
                        None => break,
                    },
                    _ = async { writer.as_mut().unwrap().await }, if writer.is_some() => {
                        writer = None;
                        f.writer_done();
                    }
                }
            }
            events
        });
        let mut offset = 0;
        let mut text = String::new();
        for e in &events {
            let LogEvent::Chunk(c) = e else { panic!("no reset while only appending: {events:?}") };
            prop_assert_eq!(c.start_offset, offset, "chunks follow each other");
            prop_assert!(c.next_offset > c.start_offset, "no empty chunk");
            prop_assert_eq!(&c.content, &String::from_utf8_lossy(&bytes[c.start_offset as usize..c.next_offset as usize]));
            offset = c.next_offset;
            text.push_str(&c.content);
        }
        prop_assert_eq!(offset, bytes.len() as u64, "every byte, up to the end");
        prop_assert_eq!(text, String::from_utf8_lossy(&bytes).into_owned(), "decoded incrementally, as a whole");
    }
}

/// Checks that `events` are chunks that give `bytes` exactly, from offset 0.
fn assert_gives(events: &[LogEvent], bytes: &[u8]) -> Result<(), TestCaseError> {
    let mut offset = 0;
    for e in events {
        let LogEvent::Chunk(c) = e else { return Err(TestCaseError::fail(format!("a reset among {events:?}"))) };
        prop_assert_eq!(c.start_offset, offset, "chunks follow each other");
        prop_assert_eq!(&c.content, &String::from_utf8_lossy(&bytes[c.start_offset as usize..c.next_offset as usize]));
        offset = c.next_offset;
    }
    prop_assert_eq!(offset, bytes.len() as u64, "every byte, up to the end");
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// A log read to its end is truncated, or replaced (renamed over, or removed and written
    /// again), then written in random pieces: one reset, then the new content exactly.
    #[test]
    fn a_truncated_or_replaced_log_resets_then_gives_the_new_content_exactly(
        old in log_bytes(),
        new in log_bytes(),
        cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..8),
        how in 0u8..3,
        force_poll in any::<bool>(),
    ) {
        // A complete last character, so that reading to the end of the old file can end.
        let old = [b"start\n".as_slice(), &old, b"\n"].concat();
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        let (before, after) = runtime.block_on(async {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("k.attempt-1.log");
            append(&path, &old);
            let options = FollowOptions { poll: Duration::from_millis(5), force_poll, ..FollowOptions::default() };
            let mut f = follow(&path, 0, options);
            let before = read_to(&mut f, old.len() as u64).await;
            let mut at: Vec<usize> = cuts.iter().map(|c| c.index(new.len() + 1)).collect();
            at.extend([0, new.len()]);
            at.sort_unstable();
            let mut after = Vec::new();
            match how {
                0 => {
                    std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(0).unwrap();
                    // Writing before the follower saw the truncation could hide it (as for tail -f).
                    after.push(next(&mut f).await.unwrap().unwrap());
                }
                1 => {
                    let fresh = dir.path().join("fresh");
                    std::fs::write(&fresh, &new[..at[1]]).unwrap();
                    std::fs::rename(&fresh, &path).unwrap();
                    at.remove(0);
                }
                _ => std::fs::remove_file(&path).unwrap(),
            }
            for w in at.windows(2) {
                append(&path, &new[w[0]..w[1]]);
                tokio::task::yield_now().await;
            }
            f.writer_done();
            after.extend(rest(&mut f).await);
            (before, after)
        });
        assert_gives(&before, &old)?;
        prop_assert_eq!(after.first(), Some(&LogEvent::Reset), "one reset first: {:?}", after);
        assert_gives(&after[1..], &new)?;
    }
}
