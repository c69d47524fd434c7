//! What the kernel says about a process, read from `/proc` (Linux). Supervision needs two
//! facts the standard library does not give: a process's start time (so that a pid recorded
//! before a crash is not confused with a new process that reused it) and which processes of a
//! process group are still alive (a zombie is not: it has exited and only waits to be reaped).

use std::fs;
use std::io;

/// The fields of `/proc/<pid>/stat` that supervision reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stat {
    /// One letter: `R`, `S`, `D`, `T`, `Z` (zombie), `X` (dead), ...
    pub state: char,
    pub ppid: i32,
    pub pgrp: i32,
    /// Field 22: clock ticks since boot when the process started.
    pub start_time: u64,
}

impl Stat {
    /// A zombie or dead process has exited: it runs nothing and holds no resources but its
    /// process-table entry.
    pub fn has_exited(&self) -> bool {
        matches!(self.state, 'Z' | 'X' | 'x')
    }
}

pub(crate) fn read_stat(pid: i32) -> io::Result<Stat> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat"))?;
    parse_stat(&text)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, format!("unexpected /proc/{pid}/stat: {text:?}")))
}

/// `pid (comm) state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime
/// stime cutime cstime priority nice num_threads itrealvalue starttime ...`. The command name
/// may hold spaces and parentheses, so fields are counted from the last `)`.
fn parse_stat(text: &str) -> Option<Stat> {
    let after_comm = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = after_comm.split_ascii_whitespace().collect();
    let state = fields.first()?.chars().next()?;
    let ppid = fields.get(1)?.parse().ok()?;
    let pgrp = fields.get(2)?.parse().ok()?;
    let start_time = fields.get(19)?.parse().ok()?;
    Some(Stat { state, ppid, pgrp, start_time })
}

/// The live processes (pid, start time) whose environment holds `name=value`. Processes of
/// other users (whose environment cannot be read) are not seen.
pub(crate) fn with_env(name: &str, value: &str) -> Vec<(i32, u64)> {
    with_env_except(name, value, "", &[])
}

/// [`with_env`], leaving out the processes whose environment holds `except=V` for any V of
/// `values`.
pub(crate) fn with_env_except(name: &str, value: &str, except: &str, values: &[String]) -> Vec<(i32, u64)> {
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    let wanted = format!("{name}={value}");
    let unwanted: Vec<String> = values.iter().map(|v| format!("{except}={v}")).collect();
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|name| name.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(environ) = fs::read(format!("/proc/{pid}/environ")) else { continue };
        if !environ.split(|b| *b == 0).any(|var| var == wanted.as_bytes()) {
            continue;
        }
        if environ.split(|b| *b == 0).any(|var| unwanted.iter().any(|u| var == u.as_bytes())) {
            continue;
        }
        if let Ok(stat) = read_stat(pid) {
            if !stat.has_exited() {
                found.push((pid, stat.start_time));
            }
        }
    }
    found
}

/// The children of `parent` (pid, start time), zombies included.
pub(crate) fn children_of(parent: i32) -> Vec<(i32, u64)> {
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|name| name.parse::<i32>().ok()) else {
            continue;
        };
        if let Ok(stat) = read_stat(pid) {
            if stat.ppid == parent {
                found.push((pid, stat.start_time));
            }
        }
    }
    found
}

/// The pids of the members of process group `pgid` that have not exited, the leader included.
/// Zombies are left out on purpose: a grandchild orphaned to an init that does not reap (as in
/// some containers) stays a zombie forever, and `kill(-pgid, 0)` would count it.
pub(crate) fn live_group_members(pgid: i32) -> Vec<i32> {
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut members = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|name| name.parse::<i32>().ok()) else {
            continue;
        };
        // One cheap system call filters out every process of another group before any file
        // is read.
        // SAFETY: getpgid has no memory-safety preconditions.
        if unsafe { libc::getpgid(pid) } != pgid {
            continue;
        }
        // The process may vanish between the two reads: then it is not alive.
        if let Ok(stat) = read_stat(pid) {
            if stat.pgrp == pgid && !stat.has_exited() {
                members.push(pid);
            }
        }
    }
    members
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_name_with_spaces_and_parentheses_does_not_shift_the_fields() {
        let line = "4242 (my (odd) name) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 \
                    987654 1234 56 18446744073709551615\n";
        let stat = parse_stat(line).expect("a well-formed stat line parses");
        assert_eq!(stat, Stat { state: 'S', ppid: 1, pgrp: 4242, start_time: 987654 });
    }

    #[test]
    fn a_truncated_stat_line_is_refused_rather_than_misread() {
        assert_eq!(parse_stat("4242 (sh) S 1 4242"), None);
    }

    #[test]
    fn this_process_is_a_live_member_of_its_own_group() {
        let stat = read_stat(std::process::id() as i32).expect("our own stat is readable");
        assert!(!stat.has_exited());
        // SAFETY: getpgrp has no preconditions.
        let pgid = unsafe { libc::getpgrp() };
        assert!(live_group_members(pgid).contains(&(std::process::id() as i32)));
    }
}
