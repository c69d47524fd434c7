//! Checking files: load each, let composites find their inner blueprints among all the files
//! given, validate, and place every diagnostic at its line and column. This is what
//! `orrery validate` prints and what the differential test compares with the reference.

use crate::declared;
use crate::diagnostic::{self, Code, Diagnostic};
use crate::fsio;
use crate::json;
use crate::load::{self, Loaded};
use crate::validate::{self, Library};
use foldhash::{HashMap, HashMapExt};
use serde::Serialize;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The verdict on one file.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct FileReport {
    pub file: String,
    /// Orrery finds no error.
    pub valid: bool,
    /// The reference server would accept the blueprint.
    pub server_accepts: bool,
    pub diagnostics: Vec<Diagnostic>,
}

/// Writes `reports` exactly as `serde_json::to_writer_pretty` does, each diagnostic field by
/// field. A long list of diagnostics (a report may hold 100,000) is laid out by two threads in
/// turns, a batch each, through a few buffers used again and again: no memory the size of the
/// report is made (fresh memory costs a page fault a page, more than laying the text out).
pub fn write_reports_pretty(out: &mut impl Write, reports: &[FileReport]) -> std::io::Result<()> {
    if reports.is_empty() {
        return out.write_all(b"[]");
    }
    for (i, r) in reports.iter().enumerate() {
        out.write_all(if i == 0 { b"[\n  {\n    \"file\": " } else { b",\n  {\n    \"file\": " })?;
        write_str(out, &r.file)?;
        write!(
            out,
            ",\n    \"valid\": {},\n    \"server_accepts\": {},\n    \"diagnostics\": ",
            r.valid, r.server_accepts
        )?;
        if r.diagnostics.is_empty() {
            out.write_all(b"[]")?;
        } else {
            write_diagnostics_in_turns(out, &r.diagnostics)?;
            out.write_all(b"\n    ]")?;
        }
        out.write_all(b"\n  }")?;
    }
    out.write_all(b"\n]")
}

/// From this many diagnostics in a report, two threads lay them out in turns.
const WRITTEN_IN_TURNS_FROM: usize = 4096;

/// Diagnostics a thread lays out at its turn: some 400 KB of report, which stays in the cache.
const TURN: usize = 1024;

/// [`write_diagnostics`] of a list, the first after `[`. A long one in turns: this thread writes
/// the even batches to `out`, a second thread lays the odd ones out meanwhile into buffers that
/// this one writes after each even batch and hands back. A short one, or without a second
/// thread, all here.
fn write_diagnostics_in_turns(out: &mut impl Write, diagnostics: &[Diagnostic]) -> std::io::Result<()> {
    use std::sync::mpsc;
    if diagnostics.len() < WRITTEN_IN_TURNS_FROM {
        return write_diagnostics(out, diagnostics, b"[");
    }
    let (laid_out, to_write) = mpsc::sync_channel::<Vec<u8>>(1);
    let (written, to_reuse) = mpsc::channel::<Vec<u8>>();
    let lay_out_odd = move || {
        for batch in diagnostics.chunks(TURN).skip(1).step_by(2) {
            let mut buffer = to_reuse.try_recv().unwrap_or_default();
            buffer.clear();
            write_diagnostics(&mut buffer, batch, b",").expect("writing to memory does not fail");
            // The writer stopped (its output failed): nothing more is wanted.
            if laid_out.send(buffer).is_err() {
                return;
            }
        }
    };
    // Moved in: a failed write drops the receiver, and the second thread then stops.
    std::thread::scope(move |s| {
        if crate::threads::spawn(s, lay_out_odd).is_none() {
            return write_diagnostics(out, diagnostics, b"[");
        }
        for (k, batch) in diagnostics.chunks(TURN).enumerate() {
            if k % 2 == 0 {
                write_diagnostics(out, batch, if k == 0 { b"[" } else { b"," })?;
            } else {
                let buffer = to_write.recv().expect("the second thread lays out every odd batch");
                out.write_all(&buffer)?;
                // The second thread may have finished: the buffer is then freed here.
                let _ = written.send(buffer);
            }
        }
        Ok(())
    })
}

/// Each of `diagnostics` as in a pretty report, the first after `before`, the others after a comma.
fn write_diagnostics(out: &mut impl Write, diagnostics: &[Diagnostic], before: &[u8]) -> std::io::Result<()> {
    for (i, d) in diagnostics.iter().enumerate() {
        out.write_all(if i == 0 { before } else { b"," })?;
        out.write_all(b"\n      ")?;
        write_diagnostic(out, d)?;
    }
    Ok(())
}

/// A diagnostic as the derived `Serialize` lays it out, three levels down a pretty document.
fn write_diagnostic(out: &mut impl Write, d: &Diagnostic) -> std::io::Result<()> {
    out.write_all(b"{\n        \"code\": ")?;
    write_str(out, d.code.as_str())?;
    out.write_all(b",\n        \"severity\": ")?;
    write_str(out, d.severity.as_str())?;
    out.write_all(b",\n        \"task_id\": ")?;
    match &d.task_id {
        Some(id) => write_str(out, id)?,
        None => out.write_all(b"null")?,
    }
    out.write_all(b",\n        \"path\": ")?;
    write_str(out, &d.path)?;
    out.write_all(b",\n        \"message\": ")?;
    write_str(out, &d.message)?;
    out.write_all(if d.server_rejects {
        b",\n        \"server_rejects\": true"
    } else {
        b",\n        \"server_rejects\": false"
    })?;
    let fields: [(&[u8], _); 3] = [
        (b",\n        \"line\": ", d.line),
        (b",\n        \"column\": ", d.column),
        (b",\n        \"byte_offset\": ", d.byte_offset),
    ];
    for (name, value) in fields {
        if let Some(value) = value {
            out.write_all(name)?;
            out.write_all(itoa::Buffer::new().format(value).as_bytes())?;
        }
    }
    out.write_all(b"\n      }")
}

/// A JSON string: as it is between quotes when nothing in it needs escaping (most messages),
/// else as serde_json escapes it.
fn write_str(out: &mut impl Write, s: &str) -> std::io::Result<()> {
    // Without a branch a byte, so the compiler checks many bytes at once.
    if !s.bytes().fold(false, |escaped, b| escaped | (b < 0x20) | (b == b'"') | (b == b'\\')) {
        out.write_all(b"\"")?;
        out.write_all(s.as_bytes())?;
        out.write_all(b"\"")
    } else {
        serde_json::to_writer(out, s).map_err(std::io::Error::from)
    }
}

/// One file read from disk: its text and what loading made of it.
pub struct Source {
    pub path: PathBuf,
    /// Empty when the text was given up ([`Source::read_given_up`]).
    pub text: String,
    pub loaded: Result<Loaded, Vec<Diagnostic>>,
    /// The file to read again for the text given up.
    again: Option<fsio::Reread>,
}

impl Source {
    /// A file's `text` (saved or not) and what loading made of it.
    pub fn new(path: PathBuf, text: String, loaded: Result<Loaded, Vec<Diagnostic>>) -> Source {
        Source { path, text, loaded, again: None }
    }

    /// Reads and loads a file; an unreadable file is an `Err` (the caller decides the exit).
    /// Only a regular file of at most [`fsio::BLUEPRINT_LIMIT`] is read (see [`fsio`]): a FIFO,
    /// a device or a folder is an error saying so, never a hang. Bytes that are not UTF-8 are
    /// read all the same: the file gets a diagnostic at the byte (the server refuses it), and
    /// the rest of it is checked as [`json::decode`] decodes it.
    pub fn read(path: &Path) -> std::io::Result<Source> {
        let (text, encoding) = json::decode(fsio::read_limited(path, fsio::BLUEPRINT_LIMIT)?);
        let mut loaded = load::load(&text).map_err(|e| e.diagnostics);
        if let Some(d) = encoding {
            match &mut loaded {
                Ok(l) => l.notes.insert(0, d),
                Err(ds) => ds.insert(0, d),
            }
        }
        Ok(Source::new(path.to_path_buf(), text, loaded))
    }

    /// [`Source::read`], but a file of [`GIVEN_UP_FROM`] or more that loads is read into
    /// memory of its own ([`fsio::read_mapped`]), loaded, and its text given up at once (the
    /// memory given back): [`check_read_sources`] places its diagnostics from the file read
    /// again, a chunk at a time, each chunk checked against what was loaded. So the text and
    /// the model of a large file are held together only while it loads.
    pub fn read_given_up(path: &Path) -> std::io::Result<Source> {
        let large = std::fs::metadata(path).is_ok_and(|m| m.len() >= GIVEN_UP_FROM);
        let Some((file, bytes)) = (if large { fsio::read_mapped(path, fsio::BLUEPRINT_LIMIT)? } else { None }) else {
            return Source::read(path);
        };
        // An encoding to mend: read the usual way, which says what.
        let Some(text) = json::as_is(&bytes) else { return Source::read(path) };
        Ok(match load::load(text) {
            Ok(loaded) => {
                let again = Some(fsio::Reread::of_read(file, path, &bytes));
                Source { path: path.to_path_buf(), text: String::new(), loaded: Ok(loaded), again }
            }
            // Its diagnostics are placed as it loads: the text is kept, not read and loaded again.
            Err(e) => Source::new(path.to_path_buf(), text.to_string(), Err(e.diagnostics)),
        })
    }

    /// Whether the file loads and the server would read it: a candidate for the composites of
    /// another.
    fn usable(&self) -> bool {
        self.loaded.as_ref().is_ok_and(|l| diagnostic::server_accepts(&l.notes))
    }
}

/// Checks already read sources against each other.
pub fn check_sources(sources: &[Source]) -> Vec<FileReport> {
    let Ok(reports) = check_some(sources, sources.len(), held_text::<std::convert::Infallible>);
    reports
}

/// [`check_sources`] of sources some of which gave up their texts ([`Source::read_given_up`],
/// as `orrery validate` reads them): their diagnostics are placed from their files read again.
/// A file changed since it was read (its diagnostics would be placed in a text that was not
/// checked) is the error.
pub fn check_read_sources(sources: &[Source]) -> std::io::Result<Vec<FileReport>> {
    check_some(sources, sources.len(), |source, loaded, found| match &source.again {
        Some(file) => diagnostic::place_again(file, &loaded.task_starts, found),
        None => held_text(source, loaded, found),
    })
}

/// From this size a file read by [`Source::read_given_up`] gives up its text.
const GIVEN_UP_FROM: u64 = 8 << 20;

/// The report of `sources[0]` alone, the others being only candidates for its composites.
pub fn check_first(sources: &[Source]) -> FileReport {
    let Ok(mut reports) = check_some(sources, 1, held_text::<std::convert::Infallible>);
    reports.swap_remove(0)
}

/// Places diagnostics in the text a source holds: never an error.
fn held_text<E>(source: &Source, loaded: &Loaded, found: &mut [Diagnostic]) -> Result<(), E> {
    diagnostic::place(&source.text, &loaded.task_starts, found);
    Ok(())
}

/// The reports of the first `n` sources, checked against all of them, each placed by `place`.
fn check_some<E>(
    sources: &[Source],
    n: usize,
    place: impl Fn(&Source, &Loaded, &mut [Diagnostic]) -> Result<(), E>,
) -> Result<Vec<FileReport>, E> {
    let mut library = Library::new();
    let mut first_with_id: HashMap<&str, &Path> = HashMap::new();
    for s in sources {
        if let Ok(loaded) = &s.loaded {
            let name = s.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            library.add_file(&loaded.blueprint, &name);
            first_with_id.entry(loaded.blueprint.id.as_str()).or_insert(&s.path);
        }
    }
    sources
        .iter()
        .take(n)
        .map(|s| {
            let diagnostics = match &s.loaded {
                Err(d) => d.clone(),
                Ok(loaded) => {
                    let mut d = loaded.notes.clone();
                    let first = first_with_id[loaded.blueprint.id.as_str()];
                    if first != s.path {
                        d.push(Diagnostic::warning(
                            Code::DuplicateBlueprintId,
                            "$.id",
                            format!(
                                "blueprint id '{}' is also the id of {}: composites (and servers) find blueprints by id, so only one of them can be used",
                                loaded.blueprint.id,
                                first.display()
                            ),
                        ));
                    }
                    // The file's own findings before the rules' (which may be 100,000: they are
                    // not copied into a new list).
                    let mut found = validate::validate_encoded(&loaded.blueprint, loaded.encoding, &library);
                    found.splice(0..0, d);
                    place(s, loaded, &mut found)?;
                    found
                }
            };
            Ok(report(&s.path, diagnostics))
        })
        .collect()
}

/// Reads and checks files; a file that cannot be read gets a report saying so.
pub fn check_files(paths: &[PathBuf]) -> Vec<FileReport> {
    let mut sources = Vec::new();
    let mut unreadable = Vec::new();
    for p in paths {
        match Source::read(p) {
            Ok(s) => sources.push(s),
            Err(e) => unreadable.push((p.clone(), e)),
        }
    }
    let mut reports = check_sources(&sources);
    for (p, e) in unreadable {
        let d = Diagnostic::error(Code::NotABlueprint, "$", format!("cannot read {}: {e}", p.display())).rejected();
        reports.push(report(&p, vec![d]));
    }
    // Keep the order the files were given in.
    reports.sort_by_key(|r| paths.iter().position(|p| p.display().to_string() == r.file));
    reports
}

/// A blueprint file ready to run: the validated root and every blueprint of the run's library
/// (the root first).
pub type Runnable = (validate::ValidBlueprint, Vec<crate::Blueprint>);

/// Reads `file` and the blueprints of its folder its composites call (they find their inner
/// blueprints there by id; files of the folder that do not load are not candidates) and checks
/// `file`: its report when it is not valid. An unreadable file or folder is the `io::Error`.
pub fn load_runnable(file: &Path) -> std::io::Result<Result<Runnable, FileReport>> {
    let root = Source::read(file)?;
    let library = folder_library(file, &root)?;
    let mut sources = vec![root];
    sources.extend(library);
    let report = check_first(&sources);
    if !report.valid {
        return Ok(Err(report));
    }
    let blueprints: Vec<crate::Blueprint> =
        sources.into_iter().filter_map(|s| s.loaded.ok()).map(|l| l.blueprint).collect();
    let library: Library = blueprints.iter().collect();
    match validate::ValidBlueprint::new(blueprints[0].clone(), &library) {
        Ok(root) => Ok(Ok((root, blueprints))),
        Err(diagnostics) => Ok(Err(self::report(file, diagnostics))),
    }
}

/// Checks `text` as the content of `file` (saved or not), the other blueprints of its folder
/// being the candidates for its composites, as when it runs. An unreadable folder is the
/// `io::Error`.
pub fn check_in_folder(file: &Path, text: String) -> std::io::Result<FileReport> {
    let loaded = load::load(&text).map_err(|e| e.diagnostics);
    let root = Source::new(file.to_path_buf(), text, loaded);
    let library = folder_library(file, &root)?;
    let mut sources = vec![root];
    sources.extend(library);
    Ok(check_first(&sources))
}

/// The blueprint files beside `file` (`*.json` of its folder, `file` itself left out) that load
/// and that checking `root` (the content of `file`) reads: the blueprints its composites call,
/// and theirs, found by id ([`Folder`]), and a file named as such an id; none, without reading
/// the folder, for a blueprint without composites. In path order, as [`blueprints_in`] gives
/// them: the library all the usable files of the folder would make, as far as checking `root`
/// reads it.
fn folder_library(file: &Path, root: &Source) -> std::io::Result<Vec<Source>> {
    let folder = file.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let Ok(loaded) = &root.loaded else { return Ok(Vec::new()) };
    if validate::calls(&loaded.blueprint).is_empty() {
        return Ok(Vec::new()); // nothing to find: the folder is not read
    }
    Ok(Folder::scan(folder, Some(file))?.called_by(&loaded.blueprint))
}

/// The blueprint files of a folder, each with the id it declares, read without building any
/// blueprint ([`declared::declared_id`]), so that a composite's inner blueprint is found by id
/// and only the files called are loaded.
struct Folder {
    /// In path order.
    files: Vec<(PathBuf, Option<String>)>,
}

impl Folder {
    fn scan(folder: &Path, except: Option<&Path>) -> std::io::Result<Folder> {
        let mut files = Vec::new();
        for path in json_files(folder, except)? {
            // Unreadable: not a candidate, as when loading every file.
            if let Some(declared) = declared_id_of(&path) {
                files.push((path, declared));
            }
        }
        files.sort();
        Ok(Folder { files })
    }

    /// The usable files `root` reads (see [`folder_library`]), in path order.
    fn called_by(&self, root: &crate::Blueprint) -> Vec<Source> {
        let mut loaded: Vec<Option<Source>> = self.files.iter().map(|_| None).collect();
        let mut tried = vec![false; self.files.len()];
        let mut wanted: Vec<String> = validate::calls(root);
        // Loads file `i` once; a usable one joins the library, and what it calls is wanted too.
        let mut load = |i: usize, loaded: &mut [Option<Source>], wanted: &mut Vec<String>| {
            if std::mem::replace(&mut tried[i], true) {
                return loaded[i].is_some();
            }
            let Some(source) = Source::read(&self.files[i].0).ok().filter(Source::usable) else { return false };
            if let Ok(l) = &source.loaded {
                wanted.extend(validate::calls(&l.blueprint));
            }
            loaded[i] = Some(source);
            true
        };
        // A file whose id takes loading to know is loaded: any of them might be called.
        for i in 0..self.files.len() {
            if self.files[i].1.is_none() {
                load(i, &mut loaded, &mut wanted);
            }
        }
        let mut looked_up = std::collections::HashSet::new();
        while let Some(id) = wanted.pop() {
            if !looked_up.insert(id.clone()) {
                continue;
            }
            // The first usable file declaring the id is the one a composite finds.
            for i in 0..self.files.len() {
                if self.files[i].1.as_deref() == Some(id.as_str()) && load(i, &mut loaded, &mut wanted) {
                    break;
                }
            }
            // A file of that name: what a composite naming a file instead of an id is told about.
            if let Some(i) = self.files.iter().position(|(p, _)| p.file_name().is_some_and(|n| *n == *id)) {
                load(i, &mut loaded, &mut wanted);
            }
        }
        loaded.into_iter().flatten().collect()
    }
}

/// What a file's size and modification time were when its id was read.
type Stamp = (u64, Option<std::time::SystemTime>);

/// The ids read so far in this process, by file: an editor checks its blueprint in its folder
/// after every change, and a file that has not changed since is not read again.
static DECLARED: std::sync::Mutex<Option<HashMap<PathBuf, (Stamp, Option<String>)>>> = std::sync::Mutex::new(None);
/// More files than that remembered: forget them all and start again.
const DECLARED_MOST: usize = 16_384;

/// The id the file at `path` declares ([`declared::declared_id`]), remembered while the file
/// does not change; none when it cannot be read (or is larger than a blueprint may be).
fn declared_id_of(path: &Path) -> Option<Option<String>> {
    let file = fsio::open_regular_file(path).ok()?;
    let meta = file.metadata().ok()?;
    if meta.len() > fsio::BLUEPRINT_LIMIT {
        return None;
    }
    let stamp = (meta.len(), meta.modified().ok());
    let remembered = || DECLARED.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((known, declared)) = remembered().as_ref().and_then(|m| m.get(path)) {
        if *known == stamp {
            return Some(declared.clone());
        }
    }
    let declared = declared::declared_id(file).ok()?;
    let mut remembered = remembered();
    let map = remembered.get_or_insert_with(HashMap::new);
    if map.len() >= DECLARED_MOST {
        map.clear();
    }
    map.insert(path.to_path_buf(), (stamp, declared.clone()));
    Some(declared)
}

/// The `*.json` regular files (or symlinks to them) of `folder`, `except` left out; a folder that
/// does not exist has none.
fn json_files(folder: &Path, except: Option<&Path>) -> std::io::Result<Vec<PathBuf>> {
    let entries = match std::fs::read_dir(folder) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        entries => entries?,
    };
    let mut found = Vec::new();
    for entry in entries {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "json")
            && fsio::is_regular_file(&path)
            && !except.is_some_and(|f| same_file(&path, f))
        {
            found.push(path);
        }
    }
    Ok(found)
}

/// The blueprint files of `folder` (`*.json`, `except` left out) that load, by path. A folder
/// that does not exist has none. Only regular files (or symlinks to them) are read: a FIFO,
/// socket, device or folder named `*.json` is left out, as is a file that cannot be read.
pub fn blueprints_in(folder: &Path, except: Option<&Path>) -> std::io::Result<Vec<Source>> {
    let mut found = Vec::new();
    for path in json_files(folder, except)? {
        if let Ok(source) = Source::read(&path) {
            if source.usable() {
                found.push(source);
            }
        }
    }
    // A stable order: the first file with an id is the one composites find.
    found.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(found)
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

fn report(path: &Path, diagnostics: Vec<Diagnostic>) -> FileReport {
    FileReport {
        file: path.display().to_string(),
        valid: diagnostic::is_valid(&diagnostics),
        server_accepts: diagnostic::server_accepts(&diagnostics),
        diagnostics,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reports(counts: &[usize]) -> Vec<FileReport> {
        counts
            .iter()
            .enumerate()
            .map(|(f, &n)| {
                let diagnostics = (0..n)
                    .map(|i| {
                        // Strings that need escaping, and strings that need none.
                        let message = match i % 4 {
                            0 => format!("task 't{i}' reads \"k{i}\"\n\té 東 \\ \u{1}\u{7f}"),
                            1 => format!("task 't{i}' reads 'k{i}' (é 東)"),
                            2 => format!("\\{i}"),
                            _ => String::new(),
                        };
                        let mut d = Diagnostic::warning(Code::GetFromUnproduced, format!("$.tasks[{i}].x"), message);
                        if i % 3 == 0 {
                            d = d.task(&format!("t{i}")).rejected();
                        }
                        if i % 2 == 0 {
                            (d.line, d.column) = (Some(i + 1), Some(7));
                        }
                        if i % 5 == 0 {
                            d.byte_offset = Some(i * 10);
                        }
                        d
                    })
                    .collect();
                FileReport { file: format!("dir/\"{f}\".json"), valid: n % 2 == 0, server_accepts: f == 0, diagnostics }
            })
            .collect()
    }

    fn written(reports: &[FileReport]) -> String {
        let mut out = Vec::new();
        write_reports_pretty(&mut out, reports).expect("writes to memory");
        String::from_utf8(out).expect("UTF-8")
    }

    #[test]
    fn a_large_file_checked_with_its_text_given_up_gets_the_report_of_its_held_text() {
        let dir = tempfile::tempdir().unwrap();
        // Each task reads a session parameter no task writes: a warning each, placed.
        let tasks: Vec<serde_json::Value> = std::iter::once(serde_json::json!({"id": "start", "type": "system.start"}))
            .chain((0..24_000).map(|i| {
                serde_json::json!({"id": format!("t{i}"), "type": "system.sleep", "description": "é".repeat(150),
                    "inputs": [{"name": "x", "get_from": "nobody"}],
                    "depends_on": [{"id": if i == 0 { "start".to_string() } else { format!("t{}", i - 1) }}]})
            }))
            .collect();
        let text = serde_json::to_string_pretty(&serde_json::json!({"id": "b", "name": "B", "version": "1.0",
            "tasks": tasks}))
        .unwrap();
        assert!(text.len() as u64 >= GIVEN_UP_FROM);
        let path = dir.path().join("big.json");
        std::fs::write(&path, &text).unwrap();
        let held = serde_json::to_string(&check_sources(&[Source::read(&path).unwrap()])).unwrap();
        let sources = [Source::read_given_up(&path).unwrap()];
        assert!(sources[0].text.is_empty() && sources[0].again.is_some(), "the text is given up");
        let again = check_read_sources(&sources).unwrap();
        assert!(again[0].diagnostics.iter().filter(|d| d.line.is_some()).count() > 24_000);
        assert_eq!(serde_json::to_string(&again).unwrap(), held);
        // Changed (the same length) after it was read: the error names it.
        std::fs::write(&path, text.replacen("nobody", "nobodY", 1)).unwrap();
        let e = check_read_sources(&sources).expect_err("changed");
        assert!(e.to_string().contains("big.json changed while it was checked"), "{e}");
        // Small, not loading, or with an encoding to mend: read the usual way, the text kept.
        let small = serde_json::json!({"id": "s", "name": "S", "version": "1.0", "tasks": []}).to_string();
        for (name, text) in [
            ("small.json", small.as_str()),
            ("broken.json", &text[..text.len() - 1]),
            ("bom.json", &format!("\u{FEFF}{text}")),
        ] {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            let (usual, given_up) = (Source::read(&path).unwrap(), Source::read_given_up(&path).unwrap());
            assert_eq!((given_up.text.as_str(), given_up.again.is_none()), (usual.text.as_str(), true), "{name}");
            assert_eq!(check_read_sources(&[given_up]).unwrap()[0].diagnostics, check_sources(&[usual])[0].diagnostics);
        }
    }

    /// Takes `room` bytes, then fails, as a closed pipe does.
    struct Failing {
        room: usize,
    }

    impl Write for Failing {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if self.room == 0 {
                return Err(std::io::Error::from(std::io::ErrorKind::BrokenPipe));
            }
            let n = buf.len().min(self.room);
            self.room -= n;
            Ok(n)
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_report_whose_output_fails_is_an_error_whichever_thread_lays_it_out() {
        let reports = reports(&[10 * TURN]);
        let whole = written(&reports).len();
        // In the first batch, in a later one of this thread's and in one of the second thread's.
        for room in [10, whole / 2, whole * 19 / 20] {
            let e = write_reports_pretty(&mut Failing { room }, &reports).expect_err("the output failed");
            assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{room}");
        }
    }

    #[test]
    fn reports_are_written_as_serde_json_writes_them_pretty_however_many_diagnostics() {
        for counts in [
            &[][..],
            &[0],
            &[1],
            &[0, 2, 1],
            &[WRITTEN_IN_TURNS_FROM, 3],
            &[5, 5 * TURN + 1],
            &[2 * WRITTEN_IN_TURNS_FROM + 7],
        ] {
            let reports = reports(counts);
            let expected = serde_json::to_string_pretty(&reports).expect("serializes");
            assert_eq!(written(&reports), expected, "{counts:?}");
            // No second thread to be had: the same text.
            assert_eq!(crate::threads::refused(|| written(&reports)), expected, "{counts:?}");
        }
    }
}
