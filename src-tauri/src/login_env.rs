//! The environment of the user's login shell, taken at start (docs/desktop.md#environment). An
//! app started from a desktop launcher gets the session manager's environment, not what the
//! user's shell profile sets up: without this, a `shell.run` task would not find the tools under
//! `~/.local/bin`, `~/.cargo/bin` or a version manager's shims that the same command finds in a
//! terminal. So the app asks the login shell once, in the background as the app starts, and runs
//! its tasks with that shell's `PATH` (followed by any folder of its own `PATH` the shell's lacks)
//! and locale.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long the login shell may take to start and print its environment.
const TIMEOUT: Duration = Duration::from_secs(5);

/// Marks the start and the end of the environment in what the shell prints (its profile may
/// print too).
const MARK: &str = "__ORRERY_LOGIN_ENVIRONMENT__";

/// The environment the app took at start, and where from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoginEnvironment {
    /// The login shell asked.
    pub shell: PathBuf,
    /// The variables taken from it: `PATH` and the locale (`LANG`, `LANGUAGE`, `LC_*`).
    pub taken: BTreeMap<String, String>,
}

/// The user's login shell: `$SHELL`, else the shell of the user's entry in `/etc/passwd`, else
/// `/bin/sh`.
pub fn login_shell() -> PathBuf {
    if let Some(shell) = std::env::var_os("SHELL").filter(|s| !s.is_empty()) {
        return PathBuf::from(shell);
    }
    passwd_shell().unwrap_or_else(|| PathBuf::from("/bin/sh"))
}

fn passwd_shell() -> Option<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let uid = std::fs::metadata("/proc/self").ok()?.uid().to_string();
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    let entry = passwd.lines().map(|l| l.split(':').collect::<Vec<_>>()).find(|f| f.len() >= 7 && f[2] == uid)?;
    Some(PathBuf::from(entry[6])).filter(|s| !s.as_os_str().is_empty())
}

/// What `shell`, started as a login shell (interactive too, as a terminal starts it, so that
/// what its rc file sets counts), sets of `PATH` and the locale, merged over `current`'s: the
/// shell's `PATH` first, then each folder of the current `PATH` it lacks. An error says why the
/// shell could not be asked (it does not start, fails, prints no environment or hangs).
pub fn ask(shell: &Path, current: &BTreeMap<String, String>) -> Result<LoginEnvironment, String> {
    let script = format!("printf '%s' '{MARK}'; env -0; printf '%s' '{MARK}'");
    let mut child = Command::new(shell)
        .args(["-l", "-i", "-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start the login shell {}: {e}", shell.display()))?;
    let mut stdout = child.stdout.take().expect("piped stdout");
    let (sent, output) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        // Until the end mark: something the profile started in the background may hold the
        // output open long after the shell is gone.
        let (mut out, mut chunk) = (Vec::new(), [0u8; 8192]);
        let read = loop {
            match stdout.read(&mut chunk) {
                Ok(0) => break Ok(out),
                Ok(n) => out.extend_from_slice(&chunk[..n]),
                Err(e) => break Err(e),
            }
            if String::from_utf8_lossy(&out).matches(MARK).count() >= 2 {
                break Ok(out);
            }
        };
        let _ = sent.send(read);
    });
    let late = || format!("the login shell {} did not answer within {TIMEOUT:?}", shell.display());
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if started.elapsed() < TIMEOUT => std::thread::sleep(Duration::from_millis(5)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(late());
            }
        }
    }
    let out = output.recv_timeout(TIMEOUT.saturating_sub(started.elapsed())).map_err(|_| late())?;
    let out = out.map_err(|e| format!("cannot read the login shell's output: {e}"))?;
    let text = String::from_utf8_lossy(&out);
    let env = text
        .split(MARK)
        .nth(1)
        .filter(|_| text.matches(MARK).count() >= 2)
        .ok_or_else(|| format!("the login shell {} printed no environment", shell.display()))?;
    let mut taken = BTreeMap::new();
    for (name, value) in env.split('\0').filter_map(|entry| entry.split_once('=')) {
        let locale = matches!(name, "LANG" | "LANGUAGE") || name.starts_with("LC_");
        if name == "PATH" || locale {
            taken.insert(name.to_string(), value.to_string());
        }
    }
    if let Some(path) = taken.get_mut("PATH") {
        let mine: Vec<&str> = path.split(':').collect();
        let missing: Vec<&str> = current
            .get("PATH")
            .map(|p| p.split(':').filter(|d| !d.is_empty() && !mine.contains(d)).collect())
            .unwrap_or_default();
        for folder in missing {
            path.push(':');
            path.push_str(folder);
        }
    }
    Ok(LoginEnvironment { shell: shell.to_path_buf(), taken })
}

/// The login shell's answer, asked on a thread of its own as the app starts (it takes 100-150 ms,
/// which the window's start no longer waits for): what needs it (the tasks' environment, the
/// About dialog) waits for it. The app's own environment is left as it was: changing it once
/// threads run would race with them reading it.
#[derive(Debug, Default)]
pub struct LoginShell {
    asking: Mutex<Option<JoinHandle<Option<LoginEnvironment>>>>,
    answer: OnceLock<Option<LoginEnvironment>>,
}

impl LoginShell {
    /// Starts asking the user's login shell, with the app's environment as it is now.
    pub fn ask_in_background() -> LoginShell {
        LoginShell::asking(login_shell(), std::env::vars().collect())
    }

    fn asking(shell: PathBuf, current: BTreeMap<String, String>) -> LoginShell {
        let asking = std::thread::Builder::new().name("login-shell".into()).spawn(move || {
            ask(&shell, &current)
                .inspect_err(|why| {
                    eprintln!("orrery-desktop: running tasks with the environment the app was started with: {why}");
                })
                .ok()
        });
        match asking {
            Ok(thread) => LoginShell { asking: Mutex::new(Some(thread)), answer: OnceLock::new() },
            Err(e) => {
                eprintln!("orrery-desktop: running tasks with the environment the app was started with: {e}");
                LoginShell::default()
            }
        }
    }

    /// What the shell answered, once it has (at most [`TIMEOUT`] after the start); none when it
    /// was not asked or could not be.
    pub fn answer(&self) -> Option<&LoginEnvironment> {
        self.answer
            .get_or_init(|| {
                let thread = self.asking.lock().unwrap_or_else(|e| e.into_inner()).take();
                thread.and_then(|t| t.join().ok().flatten())
            })
            .as_ref()
    }

    /// The variables tasks take from it instead of the app's own (`PATH`, the locale).
    pub fn taken(&self) -> Vec<(String, OsString)> {
        self.answer().map(|found| found.taken.iter().map(|(k, v)| (k.clone(), v.into())).collect()).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn home_with_profile(profile: &str) -> tempfile::TempDir {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(home.path().join(".bash_profile"), profile).unwrap();
        home
    }

    /// A shell script standing in for the login shell: bash with this HOME and nothing else.
    /// Written by a child (`sh`), never opened for writing by this process: a file open here for
    /// writing while another test's thread forks stays open in the fork until that execs, and
    /// running the file meanwhile fails ("Text file busy").
    fn bash_at(home: &Path) -> PathBuf {
        let wrapper = home.join("shell");
        let script = format!("#!/bin/sh\nexec env -i HOME='{}' /bin/bash \"$@\"\n", home.display());
        let written = Command::new("/bin/sh")
            .args(["-c", r#"printf '%s' "$1" > "$2" && chmod 755 "$2""#, "sh", &script])
            .arg(&wrapper)
            .status()
            .unwrap();
        assert!(written.success(), "cannot write {}", wrapper.display());
        wrapper
    }

    fn ask_bash(home: &Path, current: &[(&str, &str)]) -> Result<LoginEnvironment, String> {
        let current = current.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        ask(&bash_at(home), &current)
    }

    #[test]
    fn asked_in_the_background_the_answer_is_waited_for_by_whoever_needs_it_first() {
        let home = home_with_profile("sleep 0.3\nexport PATH=/opt/tools/bin:/bin\n");
        let login = std::sync::Arc::new(LoginShell::asking(bash_at(home.path()), BTreeMap::new()));
        // Two at once, as a task's launch and the About dialog may: both get the one answer.
        let other = login.clone();
        let waiting = std::thread::spawn(move || other.taken());
        let taken = login.taken();
        assert_eq!(taken, vec![("PATH".to_string(), OsString::from("/opt/tools/bin:/bin"))]);
        assert_eq!(waiting.join().unwrap(), taken);
        assert_eq!(login.answer().unwrap().shell, home.path().join("shell"));
        // A shell that cannot be asked leaves the app's own environment: nothing is taken.
        let failed = LoginShell::asking(PathBuf::from("/nonexistent/shell"), BTreeMap::new());
        assert!(failed.answer().is_none() && failed.taken().is_empty());
        assert!(LoginShell::default().answer().is_none(), "not asked");
    }

    #[test]
    fn the_login_shells_path_and_locale_are_taken_before_the_apps_own_folders() {
        let home = home_with_profile(
            "echo 'a profile that talks'\nexport PATH=/opt/tools/bin:/usr/bin:/bin\nexport LANG=de_CH.UTF-8\nexport EDITOR=vi\n",
        );
        let found = ask_bash(home.path(), &[("PATH", "/usr/bin:/snap/bin"), ("LANG", "C")]).unwrap();
        assert_eq!(found.taken.get("PATH").map(String::as_str), Some("/opt/tools/bin:/usr/bin:/bin:/snap/bin"));
        assert_eq!(found.taken.get("LANG").map(String::as_str), Some("de_CH.UTF-8"));
        assert!(!found.taken.contains_key("EDITOR"), "only PATH and the locale: {:?}", found.taken);
    }

    #[test]
    fn a_shell_that_fails_hangs_or_prints_nothing_is_an_error_that_says_so() {
        let missing = ask(Path::new("/nonexistent/shell"), &BTreeMap::new()).unwrap_err();
        assert!(missing.contains("cannot start"), "{missing}");
        let home = home_with_profile("exit 3\n");
        let silent = ask_bash(home.path(), &[]).unwrap_err();
        assert!(silent.contains("printed no environment"), "{silent}");
        let home = home_with_profile("sleep 30\n");
        let hung = ask_bash(home.path(), &[]).unwrap_err();
        assert!(hung.contains("did not answer"), "{hung}");
        // A profile that leaves something running with the output open still answers.
        let home = home_with_profile("sleep 30 &\nexport LANG=C.UTF-8\n");
        let held = ask_bash(home.path(), &[]).unwrap();
        assert_eq!(held.taken.get("LANG").map(String::as_str), Some("C.UTF-8"));
    }
}
