//! Process supervision with real processes in temp dirs: exit codes, the one interleaved log,
//! the minimal environment, typed spawn failures, cancel, timeout, and the rule that nothing
//! of a process group survives its attempt.
//!
//! Times are never asserted; a generous bound only turns a hang into a failure. Whether a stop
//! needed SIGKILL is read from `Finished::group`, not from a clock.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use orrery_engine::process::{
    is_alive, spawn, Exit, Finished, GroupCleanup, ProcessError, ProcessSpec, Program, INHERITED_ENV,
};

/// Only to detect a hang: nothing here should come close.
const HANG: Duration = Duration::from_secs(20);

fn log_in(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("logs").join("attempt-1.log")
}

async fn finish(supervised: orrery_engine::process::Supervised) -> Finished {
    tokio::time::timeout(HANG, supervised.wait())
        .await
        .expect("the attempt should have finished long before the hang bound")
}

async fn run(spec: ProcessSpec) -> (Finished, String) {
    let log_path = spec.log_path.clone();
    let supervised = spawn(spec).await.expect("the process should start");
    let finished = finish(supervised).await;
    // A process that wrote nothing has no log: an empty one.
    let log = match std::fs::read_to_string(&log_path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        read => read.expect("the log should be readable"),
    };
    (finished, log)
}

/// Waits until the log holds `needle`, so a test acts only once the child has set itself up
/// (a trap installed, grandchildren started).
async fn wait_for_log(path: &Path, needle: &str) -> String {
    let until = Instant::now() + HANG;
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if text.contains(needle) {
            return text;
        }
        assert!(Instant::now() < until, "the child never wrote {needle:?}; log so far: {text:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// `/proc/<pid>/stat`: (state, pgrp), or None when the process is gone (reaped).
fn state_and_group(pid: i32) -> Option<(char, i32)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = text[text.rfind(')')? + 1..].split_whitespace().collect();
    Some((fields[0].chars().next()?, fields[2].parse().ok()?))
}

/// The test's own scan, independent of the module's: members of `pgid` that still run (a
/// zombie has exited; the init of some containers never reaps orphans, so zombies of killed
/// grandchildren may stay, running nothing).
fn running_members(pgid: u32) -> Vec<i32> {
    let mut members = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        if let Some((state, group)) = state_and_group(pid) {
            if group == pgid as i32 && state != 'Z' && state != 'X' {
                members.push(pid);
            }
        }
    }
    members
}

fn is_running(pid: i32) -> bool {
    matches!(state_and_group(pid), Some((state, _)) if state != 'Z' && state != 'X')
}

#[tokio::test]
async fn a_process_that_succeeds_is_exited_with_code_zero() {
    let dir = tempfile::tempdir().unwrap();
    let (finished, _) = run(ProcessSpec::shell("true", log_in(&dir))).await;
    assert_eq!(finished.exit, Exit::Exited { code: 0 });
    assert!(finished.exit.is_success());
    assert_eq!(finished.group, GroupCleanup::NotNeeded, "nothing was left to stop");
}

#[tokio::test]
async fn a_non_zero_exit_code_is_reported_as_the_process_gave_it() {
    let dir = tempfile::tempdir().unwrap();
    let (by_shell, _) = run(ProcessSpec::shell("exit 3", log_in(&dir))).await;
    assert_eq!(by_shell.exit, Exit::Exited { code: 3 });
    let (by_argv, _) = run(ProcessSpec::argv(["/bin/sh", "-c", "exit 7"], log_in(&dir))).await;
    assert_eq!(by_argv.exit, Exit::Exited { code: 7 });
    assert_eq!(by_argv.exit.code(), 7);
}

#[tokio::test]
async fn a_leader_killed_by_someone_else_is_signalled_not_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    let (finished, _) = run(ProcessSpec::shell("kill -KILL $$", log_in(&dir))).await;
    assert_eq!(finished.exit, Exit::Signalled { signal: 9 });
    assert_eq!(finished.exit.code(), 137, "128 + signal, as a shell reports it");
}

#[tokio::test]
async fn stdout_and_stderr_are_interleaved_in_order_in_one_log() {
    let dir = tempfile::tempdir().unwrap();
    let (finished, log) = run(ProcessSpec::shell("echo a; echo b >&2; echo c; echo d >&2", log_in(&dir))).await;
    assert_eq!(finished.exit, Exit::Exited { code: 0 });
    assert_eq!(log, "a\nb\nc\nd\n", "both streams, in the order they were written");
}

#[tokio::test]
async fn the_environment_holds_only_the_inherited_list_and_the_given_variables() {
    let dir = tempfile::tempdir().unwrap();
    // Only this test touches this name; std serialises its own environment access.
    std::env::set_var("ORRERY_TEST_SHOULD_NOT_LEAK", "leaked");
    let mut spec = ProcessSpec::argv(["env"], log_in(&dir));
    spec.env = vec![("ORRERY_GIVEN".into(), "given value".into())];
    let (finished, log) = run(spec).await;
    assert_eq!(finished.exit, Exit::Exited { code: 0 });

    assert!(!log.contains("ORRERY_TEST_SHOULD_NOT_LEAK"), "the engine's variables leaked: {log}");
    assert!(log.lines().any(|l| l == "ORRERY_GIVEN=given value"), "the given variable: {log}");
    let names: BTreeSet<&str> = log.lines().filter_map(|l| l.split_once('=')).map(|(n, _)| n).collect();
    let mut expected: BTreeSet<&str> =
        INHERITED_ENV.iter().copied().filter(|n| std::env::var_os(n).is_some()).collect();
    expected.insert("PATH");
    expected.insert("ORRERY_GIVEN");
    assert_eq!(names, expected, "exactly the inherited list (as set here) plus the given ones");
}

#[tokio::test]
async fn what_a_process_was_started_with_is_what_it_saw_but_orrerys_own_variables() {
    let dir = tempfile::tempdir().unwrap();
    let workdir = dir.path().join("work");
    std::fs::create_dir(&workdir).unwrap();
    let mut spec = ProcessSpec::argv(["env"], log_in(&dir));
    spec.cwd = Some(workdir.clone());
    spec.env = vec![("ORRERY_INPUTS".into(), "/x/inputs.json".into()), ("LANG".into(), "C.UTF-8".into())];
    let log_path = spec.log_path.clone();
    let supervised = spawn(spec).await.expect("the process should start");
    let environment = supervised.environment().cloned().expect("a spawned process says what it was started with");
    finish(supervised).await;
    let log = std::fs::read_to_string(&log_path).unwrap();
    let seen: std::collections::BTreeMap<String, String> = log
        .lines()
        .filter_map(|l| l.split_once('='))
        .filter(|(name, _)| !name.starts_with("ORRERY_"))
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
    assert_eq!(environment.variables, seen, "the variables the process printed, ORRERY_* aside");
    assert_eq!(environment.variables["LANG"], "C.UTF-8", "a given variable as given");
    let found = std::env::split_paths(&seen["PATH"]).map(|d| d.join("env")).find(|p| p.is_file()).unwrap();
    assert_eq!(environment.program, found.display().to_string(), "the program as found on its PATH");
    assert_eq!(environment.cwd, workdir.display().to_string());
}

#[tokio::test]
async fn a_process_starts_with_every_signal_at_its_default_and_none_blocked() {
    let dir = tempfile::tempdir().unwrap();
    // `grep` is exec'd by the shell: a signal ignored or blocked by the engine would reach it.
    let (finished, log) = run(ProcessSpec::shell("grep -E '^Sig(Ign|Blk):' /proc/self/status", log_in(&dir))).await;
    assert_eq!(finished.exit, Exit::Exited { code: 0 });
    assert_eq!(log, "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n");
}

#[tokio::test]
async fn a_given_variable_overrides_an_inherited_one() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = ProcessSpec::shell("echo \"home=$HOME\"", log_in(&dir));
    spec.env = vec![("HOME".into(), "/nowhere".into())];
    let (_, log) = run(spec).await;
    assert_eq!(log, "home=/nowhere\n");
}

#[tokio::test]
async fn the_working_directory_is_honoured() {
    let dir = tempfile::tempdir().unwrap();
    let workdir = dir.path().join("work");
    std::fs::create_dir(&workdir).unwrap();
    let mut spec = ProcessSpec::argv(["pwd", "-P"], log_in(&dir));
    spec.cwd = Some(workdir.clone());
    let (_, log) = run(spec).await;
    assert_eq!(log.trim_end(), workdir.canonicalize().unwrap().to_str().unwrap());
}

#[tokio::test]
async fn a_missing_program_is_a_typed_spawn_error() {
    let dir = tempfile::tempdir().unwrap();
    let error = spawn(ProcessSpec::argv(["orrery-no-such-program"], log_in(&dir))).await.unwrap_err();
    assert!(
        matches!(&error, ProcessError::ProgramNotFound { program } if program == "orrery-no-such-program"),
        "got {error:?}"
    );
    let missing = dir.path().join("absent").to_str().unwrap().to_owned();
    let error = spawn(ProcessSpec::argv([missing], log_in(&dir))).await.unwrap_err();
    assert!(matches!(error, ProcessError::ProgramNotFound { .. }), "got {error:?}");
}

#[tokio::test]
async fn a_program_without_execute_permission_is_a_typed_spawn_error() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.sh");
    std::fs::write(&script, "#!/bin/sh\necho hi\n").unwrap();
    let error = spawn(ProcessSpec::argv([script.to_str().unwrap()], log_in(&dir))).await.unwrap_err();
    assert!(matches!(error, ProcessError::ProgramNotExecutable { .. }), "got {error:?}");
}

#[tokio::test]
async fn an_empty_argument_list_is_a_typed_spawn_error() {
    let dir = tempfile::tempdir().unwrap();
    let error = spawn(ProcessSpec::new(Program::Argv(vec![]), log_in(&dir))).await.unwrap_err();
    assert!(matches!(error, ProcessError::EmptyArgv), "got {error:?}");
}

#[tokio::test]
async fn a_missing_working_directory_is_a_typed_spawn_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = ProcessSpec::shell("true", log_in(&dir));
    spec.cwd = Some(dir.path().join("not-there"));
    let error = spawn(spec).await.unwrap_err();
    assert!(matches!(error, ProcessError::CwdMissing { ref cwd } if cwd.ends_with("not-there")), "got {error:?}");
}

#[tokio::test]
async fn a_log_path_that_cannot_be_written_is_a_typed_spawn_error() {
    let dir = tempfile::tempdir().unwrap();
    // A directory cannot be opened for writing, even by root.
    let error = spawn(ProcessSpec::shell("true", dir.path())).await.unwrap_err();
    assert!(matches!(error, ProcessError::LogUnwritable { .. }), "got {error:?}");
}

#[tokio::test]
async fn an_invalid_variable_name_is_a_typed_spawn_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = ProcessSpec::shell("true", log_in(&dir));
    spec.env = vec![("A=B".into(), "x".into())];
    let error = spawn(spec).await.unwrap_err();
    assert!(matches!(error, ProcessError::InvalidEnv { ref name } if name == "A=B"), "got {error:?}");
}

#[tokio::test]
async fn cancelling_a_sleep_ends_it_as_cancelled_by_sigterm_within_the_grace() {
    let dir = tempfile::tempdir().unwrap();
    let supervised = spawn(ProcessSpec::shell("sleep 60", log_in(&dir))).await.unwrap();
    let pgid = supervised.pid();
    supervised.canceller().cancel();
    let finished = finish(supervised).await;
    assert_eq!(finished.exit, Exit::Cancelled);
    assert_eq!(finished.exit.code(), 130);
    assert_eq!(finished.group, GroupCleanup::Terminated, "SIGTERM was enough: no SIGKILL needed");
    assert_eq!(running_members(pgid), Vec::<i32>::new());
    eprintln!("cancel of sleep 60 took {:?}", finished.duration);
}

#[tokio::test]
async fn a_child_that_ignores_sigterm_is_killed_after_the_grace() {
    let dir = tempfile::tempdir().unwrap();
    let log = log_in(&dir);
    let mut spec = ProcessSpec::shell("trap '' TERM; echo ready; sleep 60", &log);
    spec.grace = Duration::from_millis(300);
    let supervised = spawn(spec).await.unwrap();
    let pgid = supervised.pid();
    wait_for_log(&log, "ready").await;
    supervised.canceller().cancel();
    let finished = finish(supervised).await;
    assert_eq!(finished.exit, Exit::Cancelled);
    assert_eq!(finished.group, GroupCleanup::Killed, "TERM was ignored, so KILL was needed");
    assert_eq!(running_members(pgid), Vec::<i32>::new());
    eprintln!("cancel of a TERM-ignoring child took {:?}", finished.duration);
}

#[tokio::test]
async fn grandchildren_that_ignore_sigterm_are_all_gone_after_cancel() {
    let dir = tempfile::tempdir().unwrap();
    let log = log_in(&dir);
    let mut spec = ProcessSpec::shell("trap '' TERM; sleep 60 & sleep 60 & echo ready; wait", &log);
    spec.grace = Duration::from_millis(300);
    let supervised = spawn(spec).await.unwrap();
    let pgid = supervised.pid();
    assert_eq!(pgid as i32, unsafe { libc::getpgid(pgid as i32) }, "the child leads its own group");
    wait_for_log(&log, "ready").await;
    let before = running_members(pgid);
    assert!(before.len() >= 3, "the shell and two sleeps should run in the group: {before:?}");

    supervised.canceller().cancel();
    let finished = finish(supervised).await;
    assert_eq!(finished.exit, Exit::Cancelled);
    assert_eq!(finished.group, GroupCleanup::Killed);
    assert_eq!(running_members(pgid), Vec::<i32>::new(), "no member of the group may survive");
    for pid in before {
        assert!(!is_running(pid), "process {pid} of the group still runs");
    }
}

#[tokio::test]
async fn a_timeout_ends_the_attempt_as_timed_out() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = ProcessSpec::shell("sleep 60", log_in(&dir));
    spec.timeout = Some(Duration::from_millis(200));
    let supervised = spawn(spec).await.unwrap();
    let pgid = supervised.pid();
    let finished = finish(supervised).await;
    assert_eq!(finished.exit, Exit::TimedOut);
    assert_eq!(finished.exit.code(), 124);
    assert_eq!(running_members(pgid), Vec::<i32>::new());
    eprintln!("timeout of 200 ms ended after {:?}", finished.duration);
}

#[tokio::test]
async fn a_timeout_that_does_not_expire_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = ProcessSpec::shell("exit 4", log_in(&dir));
    spec.timeout = Some(Duration::from_secs(60));
    let (finished, _) = run(spec).await;
    assert_eq!(finished.exit, Exit::Exited { code: 4 });
}

#[tokio::test]
async fn is_alive_knows_a_running_child_by_pid_and_start_time_only() {
    let dir = tempfile::tempdir().unwrap();
    let supervised = spawn(ProcessSpec::shell("sleep 60", log_in(&dir))).await.unwrap();
    let (pid, start_time) = (supervised.pid(), supervised.start_time());
    assert!(is_alive(pid, start_time), "the running child is alive");
    assert!(!is_alive(pid, start_time + 1), "the same pid with another start time is not it");
    supervised.canceller().cancel();
    finish(supervised).await;
    assert!(!is_alive(pid, start_time), "after wait the child is gone");
    assert!(!is_alive(0, 0));
    assert!(!is_alive(u32::MAX, start_time));
}

#[tokio::test]
async fn grandchildren_left_behind_by_an_exiting_leader_are_stopped_before_wait_returns() {
    let dir = tempfile::tempdir().unwrap();
    let (finished, log) = run(ProcessSpec::shell("sleep 60 & echo $!; exit 0", log_in(&dir))).await;
    let grandchild: i32 = log.trim().parse().expect("the log holds the grandchild's pid");
    assert_eq!(finished.exit, Exit::Exited { code: 0 }, "the exit is still the leader's own");
    assert_eq!(finished.group, GroupCleanup::Terminated, "the straggler was sent SIGTERM");
    assert!(!is_running(grandchild), "the grandchild {grandchild} must not outlive the attempt");
}

#[tokio::test]
async fn a_straggler_that_ignores_sigterm_is_killed_after_the_leader_exits() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = ProcessSpec::shell("trap '' TERM; sleep 60 & echo $!; exit 5", log_in(&dir));
    spec.grace = Duration::from_millis(300);
    let (finished, log) = run(spec).await;
    let grandchild: i32 = log.trim().parse().expect("the log holds the grandchild's pid");
    assert_eq!(finished.exit, Exit::Exited { code: 5 });
    assert_eq!(finished.group, GroupCleanup::Killed);
    assert!(!is_running(grandchild), "the grandchild {grandchild} must not outlive the attempt");
}

#[tokio::test]
async fn cancelling_after_the_process_ended_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let supervised = spawn(ProcessSpec::shell("exit 2", log_in(&dir))).await.unwrap();
    let canceller = supervised.canceller();
    let finished = finish(supervised).await;
    canceller.cancel();
    canceller.cancel();
    assert_eq!(finished.exit, Exit::Exited { code: 2 });
    assert!(canceller.is_cancel_requested());
}

#[tokio::test]
async fn a_dropped_handle_still_reaps_its_process() {
    let dir = tempfile::tempdir().unwrap();
    let supervised = spawn(ProcessSpec::shell("exit 0", log_in(&dir))).await.unwrap();
    let pid = supervised.pid() as i32;
    drop(supervised);
    // Our child, once reaped, vanishes from /proc; unreaped, it would stay a zombie of ours.
    let until = Instant::now() + HANG;
    while state_and_group(pid).is_some_and(|_| parent_of(pid) == Some(std::process::id() as i32)) {
        assert!(Instant::now() < until, "process {pid} was never reaped");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn parent_of(pid: i32) -> Option<i32> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    text[text.rfind(')')? + 1..].split_whitespace().nth(1)?.parse().ok()
}

#[tokio::test]
async fn each_attempt_appends_to_its_log_file() {
    let dir = tempfile::tempdir().unwrap();
    let log = log_in(&dir);
    run(ProcessSpec::shell("echo first", &log)).await;
    let (_, text) = run(ProcessSpec::shell("echo second", &log)).await;
    assert_eq!(text, "first\nsecond\n", "a reused log path is appended to, never truncated");
}

/// Supervisors come from the spawner, a process of this binary started once, not from forks of
/// the engine (`ORRERY_SPAWNER=off`: from the engine, as `process_forked.rs` runs these tests).
#[tokio::test]
async fn supervisors_are_forked_by_the_spawner_unless_it_is_turned_off() {
    let dir = tempfile::tempdir().unwrap();
    let mut parents = Vec::new();
    for i in 0..2 {
        let spec = ProcessSpec::new(Program::Shell("sleep 30".into()), dir.path().join(format!("{i}.log")));
        let supervised = spawn(spec).await.unwrap();
        let supervisor = parent_of(supervised.pid() as i32).unwrap();
        parents.push(parent_of(supervisor).unwrap() as u32);
        supervised.canceller().cancel();
        finish(supervised).await;
    }
    let off = std::env::var_os("ORRERY_SPAWNER").is_some_and(|v| v == "off");
    let engine = std::process::id();
    if off {
        assert_eq!(parents, [engine, engine]);
    } else {
        assert_ne!(parents[0], engine, "the supervisor's parent is the spawner");
        assert_eq!(parents[0], parents[1], "one spawner serves every spawn");
        let exe = |pid: u32| std::fs::read_link(format!("/proc/{pid}/exe")).unwrap();
        assert_eq!(exe(parents[0]), exe(engine), "the spawner runs this very binary");
    }
}

#[tokio::test]
async fn the_log_is_created_at_the_first_output_so_a_silent_process_leaves_none() {
    let dir = tempfile::tempdir().unwrap();
    let silent = dir.path().join("silent.log");
    let finished = finish(spawn(ProcessSpec::shell("true", &silent)).await.unwrap()).await;
    assert_eq!((finished.exit, finished.log.written), (Exit::Exited { code: 0 }, 0));
    assert!(!silent.exists(), "a process that wrote nothing has no log");
    assert!(silent.parent().unwrap().is_dir(), "its folder is made all the same");
    // Past a cap of nothing, the note alone is the log.
    let mut capped = ProcessSpec::shell("echo dropped", dir.path().join("capped.log"));
    capped.log_cap = 0;
    let (finished, text) = run(capped).await;
    assert_eq!((finished.log.written, finished.log.dropped), (0, 8));
    assert!(text.starts_with("orrery: this attempt's log reached its cap of 0 bytes"), "{text:?}");
}

/// A temp dir holding `target`, a file reading "kept\n" that a link put in a log's place points at.
fn dir_with_target() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("target");
    std::fs::write(&target, "kept\n").unwrap();
    (dir, target)
}

#[tokio::test]
async fn a_link_or_a_fifo_in_place_of_the_log_is_refused_before_the_start() {
    let (dir, target) = dir_with_target();
    let link = dir.path().join("link.log");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let fifo = dir.path().join("fifo.log");
    let c_fifo = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c_fifo.as_ptr(), 0o644) }, 0);
    for log in [&link, &fifo] {
        let error = spawn(ProcessSpec::shell("echo hi", log)).await.unwrap_err();
        assert!(matches!(error, ProcessError::LogUnwritable { .. }), "{}: got {error:?}", log.display());
        assert!(error.to_string().contains("not a regular file"), "{error}");
    }
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "kept\n");
}

#[tokio::test]
async fn a_link_the_task_puts_in_place_of_its_log_is_not_followed() {
    let (dir, target) = dir_with_target();
    let log = dir.path().join("a.log");
    let command = format!("ln -s '{}' '{}' && echo written", target.display(), log.display());
    let finished = finish(spawn(ProcessSpec::shell(command, &log)).await.unwrap()).await;
    assert_eq!((finished.exit, finished.log.written), (Exit::Exited { code: 0 }, 0));
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "kept\n", "the output did not go through the link");
}

/// Recovery finds the supervisor of an attempt by its log even when the task wrote nothing yet
/// (so no log exists), by the memory file each supervisor holds named after its log.
#[tokio::test]
async fn the_supervisor_of_a_log_is_found_before_the_log_exists() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("quiet.log");
    let supervised = spawn(ProcessSpec::shell("exec sleep 30", &log)).await.unwrap();
    let found = orrery_engine::process::supervisor_of_log(&log).expect("found by its mark");
    assert!(!log.exists());
    assert_eq!(found.0 .0 as i32, parent_of(supervised.pid() as i32).unwrap(), "the task's parent");
    assert_eq!(found.1.map(|(pid, _)| pid), Some(supervised.pid()), "and its leader");
    assert!(orrery_engine::process::supervisor_of_log(&dir.path().join("other.log")).is_none());
    supervised.canceller().cancel();
    finish(supervised).await;
    // The supervisor exits just after it hands over its record, so it may still be there.
    let until = Instant::now() + HANG;
    while orrery_engine::process::supervisor_of_log(&log).is_some() {
        assert!(Instant::now() < until, "the mark outlived its supervisor");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
