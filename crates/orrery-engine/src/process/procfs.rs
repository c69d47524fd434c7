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

/// How many processes [`live_members_below`] looks at before it gives up (a tree that large,
/// or one that pids used again make look endless, is left to [`live_group_members`]).
const MOST_BELOW: usize = 1 << 14;

/// The members of process group `pgid` that have not exited among the descendants of `root`
/// (`root` left out), read down the tree from each thread's `/proc/PID/task/TID/children`: a
/// few small reads where [`live_group_members`] reads one entry of every process of the
/// system. `root` is a subreaper (`PR_SET_CHILD_SUBREAPER`), so every process of its tree whose
/// parent ended is its child. `None` when the system does not list children or the tree is
/// larger than [`MOST_BELOW`].
pub(crate) fn live_members_below(root: i32, pgid: i32) -> Option<Vec<i32>> {
    let mut members = Vec::new();
    let mut todo = children(root)?;
    let mut seen = 0;
    while let Some(pid) = todo.pop() {
        seen += 1;
        if seen > MOST_BELOW {
            return None;
        }
        // Gone meanwhile: neither a member nor a parent any more.
        let Ok(stat) = read_stat(pid) else { continue };
        if stat.pgrp == pgid && !stat.has_exited() {
            members.push(pid);
        }
        todo.extend(children(pid).unwrap_or_default());
    }
    Some(members)
}

/// The children of every thread of `pid`; `None` when they cannot be read.
fn children(pid: i32) -> Option<Vec<i32>> {
    let mut found = Vec::new();
    for task in fs::read_dir(format!("/proc/{pid}/task")).ok()?.flatten() {
        let listed = fs::read_to_string(task.path().join("children")).ok()?;
        found.extend(listed.split_ascii_whitespace().filter_map(|child| child.parse::<i32>().ok()));
    }
    Some(found)
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

    #[test]
    fn the_members_below_a_process_are_found_down_its_tree_and_nothing_else() {
        use std::os::unix::process::CommandExt;
        // A child in a group of its own, its own child in that group: both below this process.
        let mut child = std::process::Command::new("/bin/sh")
            .args(["-c", "sleep 30 & echo $!; wait"])
            .stdout(std::process::Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stdout.as_mut().unwrap()), &mut line).unwrap();
        let grandchild: i32 = line.trim().parse().unwrap();
        let pgid = child.id() as i32;
        let me = std::process::id() as i32;
        let mut below = live_members_below(me, pgid).expect("this system lists children");
        below.sort_unstable();
        assert_eq!(below, [pgid, grandchild]);
        assert_eq!(live_members_below(me, me), Some(vec![]), "this process itself is not below it");
        assert_eq!(live_members_below(i32::MAX, pgid), None, "no such process");
        // SAFETY: kill has no memory-safety preconditions.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
        child.wait().unwrap();
    }
}
