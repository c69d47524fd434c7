//! How a log grew over time, kept beside it (`{log}.sizes`, one line `time_ms size` per
//! record, appended as the log is seen to grow): what an attempt had written at a moment, for
//! time travel ([`size_at`]). The records are a log's growth as its watcher saw it, a tenth of a
//! second apart at most when it grows steadily; a line that cannot be read is passed over.

use std::io::Write;
use std::path::{Path, PathBuf};

/// Where the records of the log at `log` are.
fn sizes_path(log: &Path) -> PathBuf {
    let mut name = log.as_os_str().to_owned();
    name.push(".sizes");
    PathBuf::from(name)
}

/// Records that the log at `log` had `size` bytes at `time_ms`.
pub fn record_size(log: &Path, time_ms: i64, size: u64) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(sizes_path(log))?;
    file.write_all(format!("{time_ms} {size}\n").as_bytes())
}

/// The log's size at `time_ms` as recorded: that of the last record at or before it (0 before
/// the first); `None` when its growth was never recorded.
pub fn size_at(log: &Path, time_ms: i64) -> Option<u64> {
    let text = std::fs::read_to_string(sizes_path(log)).ok()?;
    let mut size = 0;
    for line in text.lines() {
        let Some((at, bytes)) = line.split_once(' ') else { continue };
        let (Ok(at), Ok(bytes)) = (at.parse::<i64>(), bytes.parse::<u64>()) else { continue };
        if at > time_ms {
            break;
        }
        size = bytes;
    }
    Some(size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_size_at_a_moment_is_the_last_recorded_before_it() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("attempt.log");
        assert_eq!(size_at(&log, 100), None, "never recorded");
        record_size(&log, 100, 10).unwrap();
        record_size(&log, 200, 25).unwrap();
        std::fs::OpenOptions::new().append(true).open(sizes_path(&log)).unwrap().write_all(b"garbage\n").unwrap();
        record_size(&log, 300, 40).unwrap();
        assert_eq!(
            [size_at(&log, 99), size_at(&log, 100), size_at(&log, 250), size_at(&log, 1000)],
            [Some(0), Some(10), Some(25), Some(40)]
        );
        assert_eq!(sizes_path(&log), dir.path().join("attempt.log.sizes"));
    }

    #[test]
    fn a_window_up_to_a_size_reads_the_log_as_it_was_then() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("attempt.log");
        std::fs::write(&log, "first\nsecond\n").unwrap();
        let then = crate::read_window_upto(&log, -1, None, Some(6)).unwrap();
        assert_eq!((then.content.as_str(), then.file_size, then.has_more_after), ("first\n", 6, false));
        let from = crate::read_window_upto(&log, 6, None, Some(6)).unwrap();
        assert_eq!((from.content.as_str(), from.reset), ("", false));
        assert_eq!(crate::read_window_upto(&log, -1, None, Some(999)).unwrap().content, "first\nsecond\n");
    }
}
