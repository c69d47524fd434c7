//! The blueprint files opened or saved lately, newest first, at most [`MAX_RECENT`]: what the
//! editor offers to open again. Kept in `recent.json` in Orrery's config folder, written
//! atomically after each change (`fsio::write_atomic`: a random exclusive temporary name, never
//! a planted symlink followed, the file's mode kept) and read only when it is a regular file of
//! at most 64 MiB; a list that cannot be read or written costs the list, never the file the
//! user works on (a note on stderr says why).

use orrery_api::fsio;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// How many files the list keeps.
pub const MAX_RECENT: usize = 10;

pub struct Recent {
    /// Where the list is kept; none: only in memory.
    file: Option<PathBuf>,
    list: Mutex<Vec<PathBuf>>,
}

impl Recent {
    /// The list kept in `file` (an empty one when it does not exist yet).
    pub fn load(file: Option<PathBuf>) -> Recent {
        let list = match &file {
            None => Vec::new(),
            Some(path) => match fsio::read_to_string_limited(path, fsio::BLUEPRINT_LIMIT) {
                Ok(text) => serde_json::from_str::<Vec<PathBuf>>(&text).unwrap_or_else(|e| {
                    eprintln!(
                        "orrery-desktop: the recent files list {} does not read ({e}); starting a new one",
                        path.display()
                    );
                    Vec::new()
                }),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
                Err(e) => {
                    eprintln!("orrery-desktop: cannot read the recent files list {}: {e}", path.display());
                    Vec::new()
                }
            },
        };
        Recent { file, list: Mutex::new(list.into_iter().take(MAX_RECENT).collect()) }
    }

    /// Newest first.
    pub fn list(&self) -> Vec<PathBuf> {
        self.list.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub fn contains(&self, path: &Path) -> bool {
        self.list.lock().unwrap_or_else(|p| p.into_inner()).iter().any(|p| p == path)
    }

    /// Puts `path` first (once), and keeps the list.
    pub fn add(&self, path: &Path) {
        let list = {
            let mut list = self.list.lock().unwrap_or_else(|p| p.into_inner());
            list.retain(|p| p != path);
            list.insert(0, path.to_path_buf());
            list.truncate(MAX_RECENT);
            list.clone()
        };
        if let Some(file) = &self.file {
            if let Err(e) = keep(file, &list) {
                eprintln!("orrery-desktop: cannot keep the recent files list in {}: {e}", file.display());
            }
        }
    }
}

fn keep(file: &Path, list: &[PathBuf]) -> std::io::Result<()> {
    if let Some(folder) = file.parent() {
        std::fs::create_dir_all(folder)?;
    }
    let text = serde_json::to_string_pretty(list).map_err(std::io::Error::other)?;
    fsio::write_atomic(file, (text + "\n").as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_keeps_the_newest_first_once_each_at_most_ten_across_restarts() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config/recent.json");
        let recent = Recent::load(Some(file.clone()));
        assert!(recent.list().is_empty(), "no list yet");
        for i in 0..12 {
            recent.add(&dir.path().join(format!("{i}.json")));
        }
        recent.add(&dir.path().join("5.json"));
        let again = Recent::load(Some(file.clone()));
        let names: Vec<String> =
            again.list().iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
        assert_eq!(
            names,
            ["5.json", "11.json", "10.json", "9.json", "8.json", "7.json", "6.json", "4.json", "3.json", "2.json"]
        );
        assert!(again.contains(&dir.path().join("5.json")) && !again.contains(&dir.path().join("1.json")));
    }

    #[test]
    fn the_list_is_never_written_through_a_planted_symlink_nor_read_from_a_fifo() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("recent.json");
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        // The temporary name the list was written through before.
        std::os::unix::fs::symlink(&victim, dir.path().join("recent.json.tmp")).unwrap();
        std::fs::write(&file, "[]").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        let recent = Recent::load(Some(file.clone()));
        recent.add(Path::new("/a.json"));
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious", "the symlink was followed");
        assert_eq!(Recent::load(Some(file.clone())).list(), [PathBuf::from("/a.json")]);
        assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600, "its mode kept");

        // A FIFO where the list should be: refused at once (not waited on), an empty list.
        let fifo = dir.path().join("fifo.json");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        assert!(Recent::load(Some(fifo)).list().is_empty());
    }

    #[test]
    fn an_unreadable_list_is_a_new_one_and_an_unwritable_one_stays_in_memory() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("recent.json");
        std::fs::write(&file, "{ not a list").unwrap();
        let recent = Recent::load(Some(file.clone()));
        assert!(recent.list().is_empty());
        recent.add(Path::new("/a.json"));
        assert_eq!(Recent::load(Some(file)).list(), [PathBuf::from("/a.json")], "rewritten whole");

        // A folder where the list's file should be: it cannot be written, the list still works.
        let blocked = dir.path().join("blocked");
        std::fs::create_dir_all(blocked.join("recent.json")).unwrap();
        let recent = Recent::load(Some(blocked.join("recent.json")));
        recent.add(Path::new("/b.json"));
        assert_eq!(recent.list(), [PathBuf::from("/b.json")]);
    }
}
