//! One app per task store: launched again on the same store (a file opened from the file
//! manager while Orrery runs), the new process hands its files to the running app, which opens
//! them in its window and comes forward, and ends.
//!
//! The running app listens on a Unix socket in the user's runtime folder (`$XDG_RUNTIME_DIR`,
//! else a folder of the user's own in the temporary folder), named after the store, so apps on
//! other stores (`ORRERY_DB`) are left alone. A launch sends one line, the JSON array of its
//! files' absolute paths, and waits for the running app's `ok`. No D-Bus: a launcher's bare
//! environment has none to find.

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a launch waits for the running app to take its files.
const ANSWER_WITHIN: Duration = Duration::from_secs(5);
/// The longest line a launch may send (its files' paths): more is not a launch.
const MOST_BYTES: u64 = 1 << 20;

/// What a launch found.
#[derive(Debug)]
pub enum Claim {
    /// No app runs on this store: this one does, and answers the later launches
    /// ([`serve`]).
    First(UnixListener),
    /// The running app took the files: this launch is done.
    HandedOver,
    /// This launch cannot tell (the runtime folder is not usable, the running app does not
    /// answer): it runs on its own, as the reason says.
    Alone(String),
}

/// The socket of the app on `db`, in `runtime` (see [`runtime_dir`]).
pub fn socket_path(runtime: &Path, db: &Path) -> PathBuf {
    let db = std::path::absolute(db).unwrap_or_else(|_| db.to_path_buf());
    let db = db.canonicalize().unwrap_or(db);
    runtime.join(format!("orrery-desktop-{:016x}.sock", fnv1a(db.as_os_str().as_encoded_bytes())))
}

/// `$XDG_RUNTIME_DIR`, else `orrery-UID` in the temporary folder, made private to the user (and
/// refused when someone else owns it).
pub fn runtime_dir() -> Result<PathBuf, String> {
    if let Some(dir) = std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    // SAFETY: getuid cannot fail and touches no memory.
    let uid = unsafe { libc::getuid() };
    let dir = std::env::temp_dir().join(format!("orrery-{uid}"));
    match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
        Err(e) => return Err(format!("{}: {e}", dir.display())),
    }
    let meta = std::fs::symlink_metadata(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    if !meta.is_dir() || meta.uid() != uid || meta.permissions().mode() & 0o077 != 0 {
        return Err(format!("{} is not a private folder of this user", dir.display()));
    }
    Ok(dir)
}

/// Hands `files` to the app already running on the socket, or becomes that app.
pub fn claim(socket: &Path, files: &[PathBuf]) -> Claim {
    // Two launches at once: one binds, the other finds it on its second look.
    for _ in 0..3 {
        match UnixStream::connect(socket) {
            Ok(stream) => {
                return match hand_over(stream, files) {
                    Ok(()) => Claim::HandedOver,
                    Err(e) => Claim::Alone(format!("the running app on {} did not answer: {e}", socket.display())),
                }
            }
            // Nobody listens: a socket left by an app that ended without removing it.
            Err(e) if e.kind() == ErrorKind::ConnectionRefused => {
                let _ = std::fs::remove_file(socket);
            }
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => return Claim::Alone(format!("{}: {e}", socket.display())),
        }
        match UnixListener::bind(socket) {
            Ok(listener) => return Claim::First(listener),
            Err(e) if e.kind() == ErrorKind::AddrInUse => continue,
            Err(e) => return Claim::Alone(format!("{}: {e}", socket.display())),
        }
    }
    Claim::Alone(format!("{} is taken by another launch", socket.display()))
}

fn hand_over(mut stream: UnixStream, files: &[PathBuf]) -> std::io::Result<()> {
    stream.set_read_timeout(Some(ANSWER_WITHIN))?;
    stream.set_write_timeout(Some(ANSWER_WITHIN))?;
    let files: Vec<PathBuf> = files.iter().map(|f| std::path::absolute(f).unwrap_or_else(|_| f.clone())).collect();
    let line = serde_json::to_string(&files).map_err(std::io::Error::other)?;
    stream.write_all(line.as_bytes())?;
    stream.write_all(b"\n")?;
    let mut answer = String::new();
    BufReader::new(stream).read_line(&mut answer)?;
    match answer.trim_end() {
        "ok" => Ok(()),
        other => Err(std::io::Error::other(format!("it answered {other:?}"))),
    }
}

/// Answers the launches that come to `listener`, on a thread of its own: each one's files go
/// to `open` (none: the app is only brought forward), then it is told `ok`.
pub fn serve(listener: UnixListener, open: impl Fn(Vec<PathBuf>) + Send + 'static) {
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            if let Err(e) = answer(stream, &open) {
                eprintln!("orrery-desktop: a second launch could not be answered: {e}");
            }
        }
    });
}

fn answer(stream: UnixStream, open: &impl Fn(Vec<PathBuf>)) -> std::io::Result<()> {
    stream.set_read_timeout(Some(ANSWER_WITHIN))?;
    let mut line = String::new();
    BufReader::new((&stream).take(MOST_BYTES)).read_line(&mut line)?;
    let files: Vec<PathBuf> = serde_json::from_str(&line).map_err(|e| std::io::Error::other(format!("{e}")))?;
    open(files);
    (&stream).write_all(b"ok\n")
}

/// FNV-1a: a name for the store's socket that every build computes the same.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn a_second_launch_hands_its_files_to_the_first_and_a_left_socket_is_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let socket = socket_path(dir.path(), &dir.path().join("orrery.db"));
        let Claim::First(listener) = claim(&socket, &[]) else { panic!("the first launch runs the app") };
        let (sent, opened) = mpsc::channel();
        serve(listener, move |files| sent.send(files).unwrap());

        let file = PathBuf::from("relative/nightly.blueprint.json");
        assert!(matches!(claim(&socket, std::slice::from_ref(&file)), Claim::HandedOver));
        let handed = opened.recv_timeout(ANSWER_WITHIN).unwrap();
        assert_eq!(handed, [std::path::absolute(&file).unwrap()], "as an absolute path: the app runs elsewhere");
        assert!(matches!(claim(&socket, &[]), Claim::HandedOver), "a launch without a file brings the app forward");
        assert_eq!(opened.recv_timeout(ANSWER_WITHIN).unwrap(), Vec::<PathBuf>::new());

        // Another store is another app.
        let other = socket_path(dir.path(), &dir.path().join("other.db"));
        assert_ne!(other, socket);
        assert!(matches!(claim(&other, &[]), Claim::First(_)));

        // An app that ended without removing its socket: the next launch is the app.
        let left = dir.path().join("left.sock");
        drop(UnixListener::bind(&left).unwrap());
        assert!(left.exists());
        assert!(matches!(claim(&left, &[]), Claim::First(_)));
    }

    #[test]
    fn a_running_app_that_does_not_answer_leaves_the_launch_on_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("mute.sock");
        let _mute = UnixListener::bind(&socket).unwrap(); // listens, never answers
        let started = std::time::Instant::now();
        let Claim::Alone(why) = claim(&socket, &[]) else { panic!("no answer is no hand-over") };
        assert!(why.contains("did not answer"), "{why}");
        assert!(started.elapsed() < ANSWER_WITHIN * 2, "it waited at most about {ANSWER_WITHIN:?}");
    }

    #[test]
    fn the_runtime_folder_is_the_users_own() {
        let dir = runtime_dir().unwrap();
        let meta = std::fs::metadata(&dir).unwrap();
        // SAFETY: as above.
        assert_eq!(meta.uid(), unsafe { libc::getuid() });
        assert!(meta.is_dir());
    }
}
