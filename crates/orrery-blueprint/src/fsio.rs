//! Safe file IO: the one place where Orrery turns ids into file names, reads the files a user
//! (or a blueprint's folder) hands it, and replaces files atomically. Every crate that reads or
//! writes such files (the CLI, the API, the engine, the desktop shell) goes through it.
//!
//! - **Ids as file names** ([`file_name`]): a blueprint id, a task id, a node key (with its
//!   instance path and scope iterations), an assignment id... becomes a file name only through
//!   this encoding. `[A-Za-z0-9_-]` are kept, and so is `.` except as the first character; every
//!   other byte is `%XX` (upper-case hex), so the name has no `/`, no NUL, is never `.` or `..`
//!   and never starts with `.`. It is reversible ([`decode_file_name`]), hence two distinct ids
//!   never share a name. The empty id is `%` (never produced otherwise). A name longer than
//!   [`MAX_NAME_BYTES`] keeps a prefix and ends with `~` and the first 128 bits of the id's
//!   SHA-256 in hex (`~` is escaped everywhere else, so a long name never equals a short one):
//!   with the suffixes the runner adds (`.attempt-N.outputs.json`) the name stays well within
//!   the 255 bytes a file name may have.
//! - **Reads** ([`read_limited`], [`read_to_string_limited`], [`read_blueprint`], and
//!   [`open_regular_file`] for readers that seek and bound themselves): the file is
//!   opened with `O_NONBLOCK` (a FIFO never blocks the open) and `O_NOCTTY`, the open descriptor
//!   is `fstat`ed and only a regular file is read (a symlink to one is fine); its size is
//!   checked against a limit ([`BLUEPRINT_LIMIT`], 128 MiB, for blueprints, layouts and the
//!   like) on the descriptor, and the read itself stops past the limit, since a file can grow.
//!   The errors say why ("not a regular file (a named pipe)", "larger than 128 MiB, the limit");
//!   the caller names the file. A missing file stays `NotFound`. Folder scans use
//!   [`is_regular_file`] to skip everything else. [`Reread`] reads a loaded file again, a chunk
//!   at a time, each chunk checked against what was loaded.
//! - **Atomic writes** ([`write_atomic`]): a temporary file with a random name
//!   (`.NAME.RANDOM.orrery-tmp`) is created exclusively (`O_CREAT|O_EXCL|O_NOFOLLOW`, mode 0600)
//!   in the target's folder, written, `fsync`ed, given the mode (and, where allowed, the owner)
//!   of the file it replaces (a new file: 0666 minus the umask, as `open` would give it),
//!   renamed over the target, and the folder is `fsync`ed. On any failure the temporary file is
//!   removed. A planted symlink at a temporary name is never followed: the name is random and
//!   the create fails on anything that already exists. A target that is a FIFO, a socket or a
//!   device is refused (never replaced by a file). When the target itself is a symlink the
//!   write goes through it, as editors do: the real file (the link resolved) is replaced in its
//!   own folder and the link is kept; a dangling link is an error.

use sha2::{Digest, Sha256};
use std::ffi::OsString;
use std::fmt::Write as _;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, Write};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{FileExt, FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The longest name [`file_name`] makes, in bytes (a file name may have 255; the rest is for
/// the suffixes callers add).
pub const MAX_NAME_BYTES: usize = 160;

/// The largest blueprint (or layout, server list, recent list...) Orrery reads: 128 MiB (a
/// blueprint of 100,000 tasks, the scale Orrery is built for, takes about 70).
pub const BLUEPRINT_LIMIT: u64 = 128 << 20;

/// The hex digits of the hash that ends a long name.
const HASH_HEX: usize = 32;

/// `id` as a file name that stays in its folder and that no other id shares (see the module
/// notes).
pub fn file_name(id: &str) -> String {
    if id.is_empty() {
        return "%".to_string();
    }
    let mut out = String::with_capacity(id.len());
    // Where each byte's encoding ends, to cut a long name between two of them.
    let mut ends = Vec::new();
    for (i, b) in id.bytes().enumerate() {
        if b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || (b == b'.' && i > 0) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
        ends.push(out.len());
    }
    if out.len() <= MAX_NAME_BYTES {
        return out;
    }
    let room = MAX_NAME_BYTES - 1 - HASH_HEX;
    let cut = ends.iter().copied().take_while(|&e| e <= room).last().unwrap_or(0);
    out.truncate(cut);
    out.push('~');
    let digest = Sha256::digest(id.as_bytes());
    for b in &digest[..HASH_HEX / 2] {
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// The id a [`file_name`] was made from; none for a name it cannot have made, or a long one
/// (which ends with a hash).
pub fn decode_file_name(name: &str) -> Option<String> {
    if name == "%" {
        return Some(String::new());
    }
    let bytes = name.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
                if hex.bytes().any(|h| h.is_ascii_lowercase()) {
                    return None;
                }
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'.' if i == 0 => return None,
            b if b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.' => {
                out.push(b);
                i += 1;
            }
            _ => return None,
        }
    }
    String::from_utf8(out).ok()
}

/// A megabyte count for messages: "64 MiB", or bytes below one.
fn size_text(bytes: u64) -> String {
    if bytes >= 1 << 20 && bytes % (1 << 20) == 0 {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{bytes} bytes")
    }
}

fn kind_of(t: std::fs::FileType) -> &'static str {
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a named pipe"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else {
        "not a plain file"
    }
}

fn not_regular(t: std::fs::FileType) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, format!("not a regular file ({})", kind_of(t)))
}

fn too_large(limit: u64) -> io::Error {
    io::Error::new(io::ErrorKind::FileTooLarge, format!("larger than {}, the limit", size_text(limit)))
}

/// Opens `path` for reading without blocking on a FIFO or taking a terminal, and checks on the
/// open descriptor that it is a regular file of at most `limit` bytes.
fn open_regular(path: &Path, limit: u64) -> io::Result<(File, u64)> {
    let file =
        OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC).open(path)?;
    let meta = file.metadata()?;
    if !meta.file_type().is_file() {
        return Err(not_regular(meta.file_type()));
    }
    if meta.len() > limit {
        return Err(too_large(limit));
    }
    Ok((file, meta.len()))
}

/// The regular file `path` (a symlink to one is fine), open for reading, opened without
/// blocking on a FIFO: for readers that seek or follow a file (logs, progress files) and bound
/// what they read themselves.
pub fn open_regular_file(path: &Path) -> io::Result<File> {
    open_regular(path, u64::MAX).map(|(file, _)| file)
}

/// The bytes of the regular file `path`, at most `limit` of them (see the module notes).
pub fn read_limited(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    let (file, len) = open_regular(path, limit)?;
    read_open(&file, len, limit)
}

/// The bytes of `file`, `len` long when it was opened, at most `limit` of them. A large file
/// is read by halves, then whatever it holds past them (it grew since); should the halves fail
/// (it shrank, say), it is read from the start.
fn read_open(file: &File, len: u64, limit: u64) -> io::Result<Vec<u8>> {
    let mut bytes = match len >= READ_BY_HALVES_FROM {
        true => read_halves(file, len).unwrap_or_default(),
        false => Vec::with_capacity(len as usize),
    };
    let mut file = file;
    file.seek(io::SeekFrom::Start(bytes.len() as u64))?;
    file.take(limit.saturating_add(1) - bytes.len() as u64).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(too_large(limit));
    }
    Ok(bytes)
}

/// From this size a file is read by two threads, each from its own offset: the copies from the
/// page cache and the faults of the fresh pages they fill (most of what a large read costs)
/// are shared by two cores.
const READ_BY_HALVES_FROM: u64 = 8 << 20;

/// The first `len` bytes of `file`, the two halves read at once.
fn read_halves(file: &File, len: u64) -> io::Result<Vec<u8>> {
    let mut bytes = vec![0; len as usize];
    read_into_halves(file, &mut bytes)?;
    Ok(bytes)
}

/// `bytes` filled from the start of `file`, the two halves read at once (an error when no
/// thread is had, and when the file is shorter).
fn read_into_halves(file: &File, bytes: &mut [u8]) -> io::Result<()> {
    let (first, second) = bytes.split_at_mut(bytes.len() / 2);
    let middle = first.len() as u64;
    std::thread::scope(|s| {
        let other = crate::threads::spawn(s, || file.read_exact_at(second, middle))
            .ok_or_else(|| io::Error::other("no thread to read with"))?;
        let read = file.read_exact_at(first, 0);
        other.join().expect("a read does not panic").and(read)
    })
}

/// The bytes of the regular file `path` (at most `limit`), read by halves into memory mapped
/// for them alone (transparent huge pages asked for), with the file, open: dropping them gives
/// the memory back at once, where the allocator would keep freed memory a while. `None` when
/// the file is not as long as it was when opened (it changed while it was read: the caller
/// reads it the usual way, [`read_limited`]).
pub(crate) fn read_mapped(path: &Path, limit: u64) -> io::Result<Option<(File, memmap2::MmapMut)>> {
    let (file, len) = open_regular(path, limit)?;
    let mut bytes = memmap2::MmapMut::map_anon(len as usize)?;
    // Without huge pages the reading costs more faults; the bytes are the same.
    let _ = bytes.advise(memmap2::Advice::HugePage);
    let read = read_into_halves(&file, &mut bytes);
    let past_the_end = file.read_at(&mut [0], len)?;
    Ok((read.is_ok() && past_the_end == 0).then_some((file, bytes)))
}

/// A file whose text was loaded, then given up, read again a chunk at a time (placing the
/// diagnostics of a large blueprint so: [`crate::span`]). Each chunk read is checked against
/// the text that was loaded (a hash a chunk, taken before the text was given up): a file
/// changed since is an error, never a wrong line. The file stays open, so one replaced by a
/// rename (as editors save) is still read as it was.
pub(crate) struct Reread {
    file: File,
    path: PathBuf,
    len: usize,
    chunk: usize,
    hashes: Vec<u64>,
}

/// The chunk a file is read again by: few reads, little held.
const REREAD_CHUNK: usize = 4 << 20;

impl Reread {
    /// `path`, which held `text` when it was read, opened again to be read by chunks of
    /// `chunk` bytes; `None` when it cannot be, or is no longer as long (it changed already).
    #[cfg(test)]
    pub(crate) fn by_chunks_of(path: &Path, text: &[u8], chunk: usize) -> Option<Reread> {
        let (file, len) = open_regular(path, u64::MAX).ok()?;
        (len == text.len() as u64).then(|| Reread::with_chunks(file, path, text, chunk))
    }

    /// `file`, open at `path`, just read whole: `text`.
    pub(crate) fn of_read(file: File, path: &Path, text: &[u8]) -> Reread {
        Reread::with_chunks(file, path, text, REREAD_CHUNK)
    }

    fn with_chunks(file: File, path: &Path, text: &[u8], chunk: usize) -> Reread {
        let hash_all = |part: &[u8]| part.chunks(chunk).map(chunk_hash).collect::<Vec<_>>();
        let (first, second) = text.split_at(text.len() / 2 / chunk * chunk);
        let (mut hashes, more) = crate::threads::join(|| hash_all(first), || hash_all(second));
        hashes.extend(more);
        Reread { file, path: path.to_path_buf(), len: text.len(), chunk, hashes }
    }

    /// The length of the text.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The bytes of each chunk but maybe the last.
    pub(crate) fn chunk(&self) -> usize {
        self.chunk
    }

    /// Chunk `k` read into `into`, as long as that chunk: an error when it is not what was loaded.
    pub(crate) fn read_chunk(&self, k: usize, into: &mut [u8]) -> io::Result<()> {
        let read = self.file.read_exact_at(into, (k * self.chunk) as u64);
        match read {
            Ok(()) if self.hashes.get(k) == Some(&chunk_hash(into)) => Ok(()),
            Ok(()) => Err(self.changed("it no longer holds what was loaded")),
            Err(e) => Err(self.changed(&e.to_string())),
        }
    }

    /// The whole text, read again and checked.
    pub(crate) fn whole(&self) -> io::Result<String> {
        let mut text = vec![0; self.len];
        for (k, into) in text.chunks_mut(self.chunk).enumerate() {
            self.read_chunk(k, into)?;
        }
        String::from_utf8(text).map_err(|_| self.changed("it is no longer UTF-8"))
    }

    fn changed(&self, why: &str) -> io::Error {
        io::Error::other(format!(
            "{} changed while it was checked (read again to place its diagnostics: {why}); check it again",
            self.path.display()
        ))
    }
}

fn chunk_hash(bytes: &[u8]) -> u64 {
    use std::hash::BuildHasher;
    foldhash::fast::FixedState::with_seed(0x6f72_7265_7279).hash_one(bytes)
}

/// The text of the regular file `path`, at most `limit` bytes of UTF-8.
pub fn read_to_string_limited(path: &Path, limit: u64) -> io::Result<String> {
    String::from_utf8(read_limited(path, limit)?)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("not UTF-8 text ({})", e.utf8_error())))
}

/// The text of a blueprint file (or any file Orrery keeps beside one), at most
/// [`BLUEPRINT_LIMIT`].
pub fn read_blueprint(path: &Path) -> io::Result<String> {
    read_to_string_limited(path, BLUEPRINT_LIMIT)
}

/// Whether `path` is a regular file (a symlink to one counts): what a folder scan reads.
pub fn is_regular_file(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.file_type().is_file())
}

/// Why a folder scan leaves `path` out, if it does: none for a regular file (or a symlink to
/// one) and for a name that is gone.
pub fn skipped_because(path: &Path) -> Option<String> {
    match std::fs::metadata(path) {
        Ok(m) if m.file_type().is_file() => None,
        Ok(m) => Some(format!("not a regular file ({})", kind_of(m.file_type()))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => Some(e.to_string()),
    }
}

/// The process's umask, read without changing it (`umask(2)` would, for every thread).
fn umask() -> u32 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Umask:"))
        .and_then(|m| u32::from_str_radix(m.trim(), 8).ok())
        .unwrap_or(0o022)
}

/// A random hex word for a temporary name.
fn random_hex() -> String {
    let mut bytes = [0u8; 8];
    let got = File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes));
    if got.is_err() {
        // Still distinct per call; O_EXCL keeps it safe, the randomness only spares retries.
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        bytes = (now.as_nanos() as u64 ^ ((std::process::id() as u64) << 32) ^ n.rotate_left(17)).to_le_bytes();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The file a write to `path` replaces: `path` itself, or the file its symlink (chain) names.
fn real_target(path: &Path) -> io::Result<PathBuf> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => std::fs::canonicalize(path)
            .map_err(|e| io::Error::new(e.kind(), format!("it is a symlink whose target cannot be resolved ({e})"))),
        _ => Ok(path.to_path_buf()),
    }
}

/// Replaces `path` with `bytes` atomically (see the module notes). The error says what failed;
/// the caller names the file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let target = real_target(path)?;
    let name =
        target.file_name().ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the path has no file name"))?;
    let dir = target.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let old = match std::fs::metadata(&target) {
        // Never replace a FIFO, a socket or a device (`-o /dev/null` must not become a file);
        // a folder is refused by the rename.
        Ok(m) if !m.is_file() && !m.is_dir() => return Err(not_regular(m.file_type())),
        Ok(m) => Some(m),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    // A short prefix of the name, so that the temporary name fits in 255 bytes too.
    let prefix: Vec<u8> = name.as_bytes().iter().copied().take(100).collect();
    let (tmp, mut file) = {
        let mut tries = 0;
        loop {
            let mut tmp_name = OsString::from(".");
            tmp_name.push(OsString::from_vec(prefix.clone()));
            tmp_name.push(format!(".{}.orrery-tmp", random_hex()));
            let tmp = dir.join(tmp_name);
            let opened = OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                .open(&tmp);
            match opened {
                Ok(file) => break (tmp, file),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && tries < 8 => tries += 1,
                Err(e) => {
                    return Err(io::Error::new(e.kind(), format!("cannot create a file in {}: {e}", dir.display())))
                }
            }
        }
    };
    let written = (|| {
        file.write_all(bytes)?;
        match &old {
            Some(m) => {
                // The owner first (a chown clears the set-id bits), where allowed.
                let _ = std::os::unix::fs::fchown(&file, Some(m.uid()), Some(m.gid()));
                file.set_permissions(std::fs::Permissions::from_mode(m.mode() & 0o7777))?;
            }
            None => file.set_permissions(std::fs::Permissions::from_mode(0o666 & !umask()))?,
        }
        file.sync_all()?;
        drop(file);
        std::fs::rename(&tmp, &target)
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    // The rename itself made durable; a folder that cannot be synced does not undo the write.
    if let Ok(folder) = File::open(dir) {
        let _ = folder.sync_all();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::ffi::CString;

    #[test]
    fn a_large_file_read_by_halves_is_read_whole_even_when_it_grows_or_shrinks_meanwhile() {
        let dir = temp_dir("halves");
        let path = dir.join("large.json");
        let content: Vec<u8> = (0..READ_BY_HALVES_FROM + 12_345).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &content).unwrap();
        assert_eq!(read_limited(&path, BLUEPRINT_LIMIT).unwrap(), content);
        assert_eq!(crate::threads::refused(|| read_limited(&path, BLUEPRINT_LIMIT)).unwrap(), content, "no thread");
        // Grown since it was opened: the halves, then the rest; past the limit, an error.
        let (file, len) = open_regular(&path, BLUEPRINT_LIMIT).unwrap();
        OpenOptions::new().append(true).open(&path).unwrap().write_all(b"more").unwrap();
        let grown = read_open(&file, len, BLUEPRINT_LIMIT).unwrap();
        assert_eq!((&grown[..content.len()], &grown[content.len()..]), (&content[..], &b"more"[..]));
        let error = read_open(&file, len, len + 2).unwrap_err();
        assert!(error.to_string().contains("larger than"), "{error}");
        // Shrunk since: read from the start as it is now.
        let (file, len) = open_regular(&path, BLUEPRINT_LIMIT).unwrap();
        OpenOptions::new().write(true).open(&path).unwrap().set_len(READ_BY_HALVES_FROM / 2).unwrap();
        assert_eq!(read_open(&file, len, BLUEPRINT_LIMIT).unwrap(), content[..(READ_BY_HALVES_FROM / 2) as usize]);
        std::fs::remove_dir_all(dir).unwrap();
    }

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("orrery-fsio-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn mkfifo(path: &Path) {
        let c = CString::new(path.as_os_str().as_bytes()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0, "mkfifo {}", path.display());
    }

    fn tricky_ids() -> Vec<String> {
        let mut ids: Vec<String> = [
            "",
            ".",
            "..",
            "...",
            "/",
            "/../../../tmp/x",
            "a/b",
            "a%2Fb",
            "a_2Fb",
            "~",
            "%",
            "%%",
            "a.b",
            ".hidden",
            "bp.t@r/1#2",
            "bp.t_r_1_2",
            "A",
            "a",
            "é",
            "\u{0}",
            "a\u{0}b",
            "tab\there",
            "new\nline",
            " ",
            "-",
            "_",
            "a.",
            "a..",
            "日本語",
            "%41",
            "A%",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        ids.push("x".repeat(300));
        ids.push("x".repeat(301));
        ids.push("/".repeat(200));
        ids.push(format!("{}a", "é".repeat(100)));
        ids.push(format!("{}b", "é".repeat(100)));
        ids.push("y".repeat(MAX_NAME_BYTES));
        ids.push("y".repeat(MAX_NAME_BYTES + 1));
        ids
    }

    #[test]
    fn names_stay_in_the_folder_and_are_bounded() {
        for id in tricky_ids() {
            let name = file_name(&id);
            assert!(!name.is_empty(), "{id:?}");
            assert!(!name.contains('/') && !name.contains('\0'), "{id:?} -> {name:?}");
            assert!(name != "." && name != ".." && !name.starts_with('.'), "{id:?} -> {name:?}");
            assert!(name.len() <= MAX_NAME_BYTES, "{id:?} -> {} bytes", name.len());
            assert!(name.is_ascii(), "{id:?} -> {name:?}");
            // Joined to a folder it is one component below it.
            let joined = Path::new("/runs").join(&name);
            assert_eq!(joined.parent(), Some(Path::new("/runs")), "{id:?}");
            assert_eq!(joined.components().count(), 3, "{id:?} -> {name:?}");
        }
    }

    #[test]
    fn names_round_trip_and_distinct_ids_stay_distinct() {
        let ids = tricky_ids();
        let mut seen = HashSet::new();
        for id in &ids {
            let name = file_name(id);
            assert!(seen.insert(name.clone()), "{id:?} -> {name:?} collides");
            if name.contains('~') {
                assert!(name.len() > MAX_NAME_BYTES - 1 - HASH_HEX, "only long names are hashed: {name}");
                assert_eq!(decode_file_name(&name), None);
            } else {
                assert_eq!(decode_file_name(&name).as_deref(), Some(id.as_str()), "{name:?}");
            }
        }
        // Plain ids keep their names, so logs stay readable.
        assert_eq!(file_name("root.t2"), "root.t2");
        assert_eq!(file_name("assembly.cut-1_b"), "assembly.cut-1_b");
        assert_eq!(file_name("."), "%2E");
        assert_eq!(file_name(".."), "%2E.");
        assert_eq!(file_name("/../x"), "%2F..%2Fx");
        // A long name keeps a prefix and its hash; the same id always gets the same name.
        let long = "z".repeat(1000);
        assert_eq!(file_name(&long), file_name(&long.clone()));
        assert!(file_name(&long).starts_with("zzzz"));
        // Names a file_name cannot have made.
        for bad in [".x", "a/b", "%4", "%zz", "%2e", "a b", "~"] {
            assert_eq!(decode_file_name(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn reads_refuse_special_files_and_bound_their_size() {
        let dir = temp_dir("read");
        let fifo = dir.join("x.json");
        mkfifo(&fifo);
        let started = std::time::Instant::now();
        let e = read_blueprint(&fifo).unwrap_err();
        assert!(e.to_string().contains("not a regular file (a named pipe)"), "{e}");
        println!("FIFO refused in {:?}", started.elapsed());

        let e = read_limited(Path::new("/dev/zero"), BLUEPRINT_LIMIT).unwrap_err();
        assert!(e.to_string().contains("not a regular file (a character device)"), "{e}");
        let e = read_blueprint(&dir).unwrap_err();
        assert!(e.to_string().contains("not a regular file (a directory)"), "{e}");

        let big = dir.join("big.json");
        std::fs::write(&big, vec![b' '; 1025]).unwrap();
        let e = read_limited(&big, 1024).unwrap_err();
        assert_eq!(e.to_string(), "larger than 1024 bytes, the limit");
        assert_eq!(read_limited(&big, 1025).unwrap().len(), 1025);
        assert!(too_large(BLUEPRINT_LIMIT).to_string().contains("128 MiB"));

        let plain = dir.join("plain.json");
        std::fs::write(&plain, "{}").unwrap();
        let link = dir.join("link.json");
        std::os::unix::fs::symlink(&plain, &link).unwrap();
        assert_eq!(read_blueprint(&link).unwrap(), "{}", "a symlink to a regular file reads");
        let e = read_blueprint(&dir.join("gone.json")).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        std::fs::write(&plain, b"\xff").unwrap();
        assert!(read_blueprint(&plain).unwrap_err().to_string().contains("not UTF-8"));

        assert!(open_regular_file(&link).is_ok());
        let e = open_regular_file(&fifo).unwrap_err();
        assert!(e.to_string().contains("a named pipe"), "{e}");
        assert!(is_regular_file(&link) && !is_regular_file(&fifo) && !is_regular_file(&dir));
        assert_eq!(skipped_because(&fifo).as_deref(), Some("not a regular file (a named pipe)"));
        assert_eq!(skipped_because(&plain), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn leftovers(dir: &Path) -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains("tmp"))
            .collect()
    }

    #[test]
    fn writes_never_follow_a_planted_symlink_and_keep_the_mode() {
        let dir = temp_dir("write");
        let target = dir.join("flow.json");
        let victim = dir.join("victim");
        std::fs::write(&victim, "precious").unwrap();
        // Every name the old writers used for their temporary file, planted.
        for planted in [".flow.json.orrery-tmp", "flow.json.tmp", "flow.json.json.tmp"] {
            std::os::unix::fs::symlink(&victim, dir.join(planted)).unwrap();
        }
        std::fs::write(&target, "old").unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o600)).unwrap();
        write_atomic(&target, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "new");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious", "the symlink was not followed");
        assert_eq!(std::fs::metadata(&target).unwrap().mode() & 0o7777, 0o600);

        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o755)).unwrap();
        write_atomic(&target, b"newer").unwrap();
        assert_eq!(std::fs::metadata(&target).unwrap().mode() & 0o7777, 0o755);

        let fresh = dir.join("fresh.json");
        write_atomic(&fresh, b"{}").unwrap();
        assert_eq!(std::fs::metadata(&fresh).unwrap().mode() & 0o777, 0o666 & !umask());

        // A target that is a symlink: the real file is replaced, the link kept.
        let real = dir.join("real.json");
        std::fs::write(&real, "a").unwrap();
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o640)).unwrap();
        let link = dir.join("link.json");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        write_atomic(&link, b"b").unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "b");
        assert_eq!(std::fs::metadata(&real).unwrap().mode() & 0o7777, 0o640);
        let dangling = dir.join("dangling.json");
        std::os::unix::fs::symlink(dir.join("nowhere"), &dangling).unwrap();
        assert!(write_atomic(&dangling, b"x").is_err());
        assert!(!dir.join("nowhere").exists());

        // Special files are not replaced.
        let fifo = dir.join("pipe.json");
        mkfifo(&fifo);
        let e = write_atomic(&fifo, b"x").unwrap_err();
        assert!(e.to_string().contains("a named pipe"), "{e}");
        assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());

        // A failure (a folder where the file should be) leaves no temporary file.
        let blocked = dir.join("blocked.json");
        std::fs::create_dir_all(blocked.join("inside")).unwrap();
        assert!(write_atomic(&blocked, b"x").is_err());
        assert!(write_atomic(&dir.join("no-such-folder/x.json"), b"x").is_err());
        let left = leftovers(&dir);
        assert_eq!(left.len(), 3, "only the planted names: {left:?}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
