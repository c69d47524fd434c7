//! Where things are in a JSON text. serde_json's `Value` forgets positions, so when a load
//! fails (or a diagnostic wants a line) this module rescans the text: it finds the line and
//! column of a JSON path, and the JSON path that encloses a byte offset. The scanner is
//! tolerant of broken text, because it runs on exactly the files that failed to parse. It is
//! only used on error paths; placing any number of diagnostics costs at most one scan.

use crate::fsio;
use crate::skim::{ends_string, first, quote_or_bracket, ENDS_STRING, MATTERS_BELOW};
use compact_str::CompactString;
use foldhash::HashMap;
use std::borrow::Cow;
use std::io;

/// One step of a JSON path.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Segment {
    Key(CompactString),
    Index(usize),
}

/// Renders a path as JSONPath: `$.tasks[3].depends_on[0].type`.
pub fn render_path(segments: &[Segment]) -> String {
    let mut out = String::from("$");
    for segment in segments {
        match segment {
            Segment::Key(k) if is_plain_key(k) => {
                out.push('.');
                out.push_str(k);
            }
            Segment::Key(k) => {
                out.push('[');
                out.push_str(&serde_json::to_string(k).unwrap_or_default());
                out.push(']');
            }
            Segment::Index(i) => {
                out.push('[');
                out.push_str(&i.to_string());
                out.push(']');
            }
        }
    }
    out
}

fn is_plain_key(k: &str) -> bool {
    !k.is_empty()
        && !k.starts_with(|c: char| c.is_ascii_digit())
        && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Parses a path rendered by `render_path` back into segments.
pub fn parse_path(path: &str) -> Vec<Segment> {
    // At most a segment a dot or bracket: one allocation, of about the right size.
    let mut out = Vec::with_capacity(path.bytes().filter(|&b| b == b'.' || b == b'[').count());
    out.extend(steps(path).map(|step| match step {
        Step::Key(k) => Segment::Key(k.into()),
        Step::Index(i) => Segment::Index(i),
    }));
    out
}

/// A step of a path as [`steps`] reads it: a key as the path writes it when it needs no
/// decoding (a plain one: nothing is copied).
enum Step<'p> {
    Key(Cow<'p, str>),
    Index(usize),
}

/// The steps of a path rendered by [`render_path`], read one at a time ([`parse_path`] reads
/// them all); the reading stops at anything else.
fn steps(path: &str) -> Steps<'_> {
    Steps { rest: path.strip_prefix('$').unwrap_or(path) }
}

struct Steps<'p> {
    rest: &'p str,
}

impl<'p> Iterator for Steps<'p> {
    type Item = Step<'p>;

    fn next(&mut self) -> Option<Step<'p>> {
        let rest = std::mem::take(&mut self.rest);
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            self.rest = &r[end..];
            return Some(Step::Key(Cow::Borrowed(&r[..end])));
        }
        let r = rest.strip_prefix('[')?;
        if r.starts_with('"') {
            let mut de = serde_json::Deserializer::from_str(r).into_iter::<String>();
            let key = de.next()?.ok()?;
            self.rest = r[de.byte_offset()..].strip_prefix(']').unwrap_or("");
            Some(Step::Key(Cow::Owned(key)))
        } else {
            let end = r.find(']').unwrap_or(r.len());
            let index = r[..end].parse().ok()?;
            self.rest = r.get(end + 1..).unwrap_or("");
            Some(Step::Index(index))
        }
    }
}

/// Byte offset of the start of a (1-based) line and column.
pub fn offset_of_line_column(text: &str, line: usize, column: usize) -> usize {
    let mut offset = 0;
    for (i, l) in text.split_inclusive('\n').enumerate() {
        if i + 1 == line {
            let within: usize = l.chars().take(column.saturating_sub(1)).map(char::len_utf8).sum();
            return offset + within;
        }
        offset += l.len();
    }
    text.len()
}

/// The (1-based) line and column, in characters, of the byte at `offset`.
pub fn line_column_at(text: &str, offset: usize) -> (usize, usize) {
    let before = &text.as_bytes()[..offset.min(text.len())];
    let line_start = before.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    (line, String::from_utf8_lossy(&before[line_start..]).chars().count() + 1)
}

/// Line and column of the value at each path. The paths make a tree, and only the values on it
/// are looked into: everything else is skipped by its strings and brackets alone, and a walk
/// stops once every path it looks for is found. A path into a task whose start is known (the
/// fast path's [`crate::Loaded::task_starts`]) is looked for from there, in a walk of that task
/// alone; the others in one walk from the top. A path found more than once (a key given twice)
/// is placed at its first value. The paths are JSONPath as [`render_path`] writes them; those
/// into a task are parsed a task at a time, as it is walked (a hundred thousand of them parsed
/// at once would be that many lists in fresh memory).
pub fn locate_all<P: AsRef<str> + Sync>(text: &str, paths: &[P], task_starts: &[usize]) -> Vec<Option<(usize, usize)>> {
    let (in_tasks, from_top) = by_task(paths, task_starts);
    let tasks: Vec<&[(usize, usize)]> = in_tasks.chunk_by(|a, b| a.0 == b.0).collect();
    // The walks of the tasks, in order: (offset, index of the path) of each path found.
    let walk_tasks = |tasks: &[&[(usize, usize)]]| {
        let mut walk = Walk::new();
        for task in tasks {
            walk.look_for(text.as_bytes(), task_starts[task[0].0], into_task(paths, task));
        }
        walk.found
    };
    // Many tasks to walk: half of them on a second core.
    let mut found = if in_tasks.len() >= WALKED_APART_FROM {
        let (first, second) = tasks.split_at(tasks.len() / 2);
        let (mut found, more) = crate::threads::join(|| walk_tasks(first), || walk_tasks(second));
        found.extend(more);
        found
    } else {
        walk_tasks(&tasks)
    };
    if !from_top.is_empty() {
        let mut walk = Walk::new();
        walk.look_for(text.as_bytes(), 0, from_top.iter().map(|&i| (steps(paths[i].as_ref()), i)));
        found.extend(walk.found);
    }
    lines_and_columns(text, found, paths.len())
}

/// The paths into a task whose start is known, as `(the task's index, the path's)` in task
/// order; the indices of the others.
fn by_task<P: AsRef<str>>(paths: &[P], task_starts: &[usize]) -> (Vec<(usize, usize)>, Vec<usize>) {
    let mut in_tasks = Vec::new();
    let mut from_top = Vec::new();
    for (i, path) in paths.iter().enumerate() {
        match task_of(path.as_ref()) {
            Some(t) if t < task_starts.len() => in_tasks.push((t, i)),
            _ => from_top.push(i),
        }
    }
    in_tasks.sort_unstable();
    (in_tasks, from_top)
}

/// The task a path goes into (`$.tasks[3]...`).
fn task_of(path: &str) -> Option<usize> {
    let mut steps = steps(path);
    match (steps.next()?, steps.next()?) {
        (Step::Key(k), Step::Index(t)) if k == "tasks" => Some(t),
        _ => None,
    }
}

/// The paths of one task's `(task, path)` pairs, each as steps from the task, with its index.
fn into_task<'t, 'p: 't, P: AsRef<str>>(
    paths: &'p [P],
    task: &'t [(usize, usize)],
) -> impl Iterator<Item = (Steps<'p>, usize)> + 't {
    task.iter().map(|&(_, i)| {
        let mut steps = steps(paths[i].as_ref());
        steps.nth(1);
        (steps, i)
    })
}

/// [`locate_all`] of a file's text given up after loading, read again ([`fsio::Reread`]): the
/// tasks are walked in order through a window on the file that moves on a chunk at a time
/// (holding a chunk and the task walked, not the text), and lines and columns are counted as
/// it moves, the second half of the tasks on a second core from where its first task begins.
/// A path not into a task whose start is known (the blueprint's own fields: rare in a large
/// file) has the whole text read again, and placed as [`locate_all`] places it. An error is a
/// file that no longer holds what was loaded.
pub(crate) fn locate_all_again<P: AsRef<str> + Sync>(
    file: &fsio::Reread,
    paths: &[P],
    task_starts: &[usize],
) -> io::Result<Vec<Option<(usize, usize)>>> {
    let (in_tasks, from_top) = by_task(paths, task_starts);
    if !from_top.is_empty() {
        return Ok(locate_all(&file.whole()?, paths, task_starts));
    }
    let tasks: Vec<&[(usize, usize)]> = in_tasks.chunk_by(|a, b| a.0 == b.0).collect();
    // The counts from `from` of the paths into `tasks`, and that of `then`, a place past them
    // all.
    let walk_tasks = |tasks: &[&[(usize, usize)]], from: usize, then: usize| {
        let mut window = Window::new(file, from);
        let mut placed = Vec::with_capacity(tasks.len());
        let mut walk = Walk::new();
        for task in tasks {
            let (t, start) = (task[0].0, task_starts[task[0].0]);
            window.hold(start, task_starts.get(t + 1).copied().unwrap_or(file.len()))?;
            walk.look_for(&window.bytes[..window.filled], start - window.from, into_task(paths, task));
            walk.found.sort_unstable();
            for (offset, i) in walk.found.drain(..) {
                placed.push((i, window.count_to(window.from + offset)));
            }
        }
        window.hold(then, then)?;
        Ok::<_, io::Error>((placed, window.count))
    };
    let placed = if in_tasks.len() >= WALKED_APART_FROM {
        let (first, second) = tasks.split_at(tasks.len() / 2);
        let middle = task_starts[second[0][0].0];
        let (first, second) =
            crate::threads::join(|| walk_tasks(first, 0, middle), || walk_tasks(second, middle, middle));
        let ((mut placed, middle), (more, _)) = (first?, second?);
        placed.extend(more.into_iter().map(|(i, later)| (i, middle.then(later))));
        placed
    } else {
        walk_tasks(&tasks, 0, 0)?.0
    };
    let mut out = vec![None; paths.len()];
    for (i, count) in placed {
        out[i] = Some(count.place());
    }
    Ok(out)
}

/// A window on a file read again: `bytes[..filled]` are the file's from `from`, which is past
/// whatever no task still to be walked needs; the count from where it began to `pos`.
struct Window<'f> {
    file: &'f fsio::Reread,
    bytes: Vec<u8>,
    filled: usize,
    from: usize,
    pos: usize,
    count: Count,
}

impl<'f> Window<'f> {
    /// A window counting from `at`, before it holds anything.
    fn new(file: &'f fsio::Reread, at: usize) -> Window<'f> {
        let from = at / file.chunk() * file.chunk();
        Window { file, bytes: Vec::new(), filled: 0, from, pos: at, count: Count::default() }
    }

    /// Holds the file's bytes from `start` to `end` (the file's end at most), counted up to
    /// `start`; reads chunks on as needed, the bytes held before `pos` given up first (what is
    /// read next always begins a chunk).
    fn hold(&mut self, start: usize, end: usize) -> io::Result<()> {
        loop {
            let held = self.from + self.filled;
            if start.min(held) > self.pos {
                self.count_to(start.min(held));
            }
            if held >= end.min(self.file.len()) {
                return Ok(());
            }
            let gone = (self.pos - self.from).min(self.filled);
            self.bytes.copy_within(gone..self.filled, 0);
            (self.from, self.filled) = (self.from + gone, self.filled - gone);
            let chunk = held / self.file.chunk();
            let length = self.file.chunk().min(self.file.len() - held);
            if self.bytes.len() < self.filled + length {
                self.bytes.resize(self.filled + length, 0);
            }
            self.file.read_chunk(chunk, &mut self.bytes[self.filled..self.filled + length])?;
            self.filled += length;
        }
    }

    /// Counts on to `offset` (held, not before `pos`).
    fn count_to(&mut self, offset: usize) -> Count {
        self.count.past(&self.bytes[self.pos - self.from..offset - self.from]);
        self.pos = offset;
        self.count
    }
}

/// From this many paths into tasks, the tasks' walks are shared by two cores.
pub(crate) const WALKED_APART_FROM: usize = 4096;

/// The (1-based) line and column, in characters, of each `(offset, index)`, at `index` of a
/// list of `n`: one pass over the text up to the last offset, whatever the number of offsets
/// and the length of the lines. Many offsets are counted in two halves on two cores: the
/// second half's counts are from its first offset, then added to the first's at that offset.
fn lines_and_columns(text: &str, mut found: Vec<(usize, usize)>, n: usize) -> Vec<Option<(usize, usize)>> {
    found.sort_unstable();
    let bytes = text.as_bytes();
    let at = |&(offset, _): &(usize, usize)| offset.min(bytes.len());
    let counts = if found.len() >= COUNTED_APART_FROM {
        let (first, second) = found.split_at(found.len() / 2);
        let middle = at(&second[0]);
        let count_first = || counts_from(bytes, 0, first.iter().map(at).chain([middle]));
        let count_second = || counts_from(bytes, middle, second.iter().map(at));
        let (mut counts, second) = crate::threads::join(count_first, count_second);
        let middle = counts.pop().expect("the middle is counted");
        counts.extend(second.into_iter().map(|later| middle.then(later)));
        counts
    } else {
        counts_from(bytes, 0, found.iter().map(at))
    };
    let mut out = vec![None; n];
    for ((_, i), count) in found.into_iter().zip(counts) {
        out[i] = Some(count.place());
    }
    out
}

/// From this many offsets, lines and columns are counted on two cores.
const COUNTED_APART_FROM: usize = 4096;

/// For each of the ascending `offsets` (none before `from`): the line breaks between `from`
/// and it, and the characters between the last of them (or `from`) and it.
fn counts_from(bytes: &[u8], from: usize, offsets: impl Iterator<Item = usize>) -> Vec<Count> {
    let (mut count, mut pos) = (Count::default(), from);
    offsets
        .map(|offset| {
            count.past(&bytes[pos..offset]);
            pos = offset;
            count
        })
        .collect()
}

/// The line breaks counted from some place on, and the characters after the last of them (or
/// that place).
#[derive(Debug, Default, Clone, Copy)]
struct Count {
    lines: usize,
    columns: usize,
}

impl Count {
    /// Counted on past `bytes`.
    fn past(&mut self, bytes: &[u8]) {
        match memchr::memrchr(b'\n', bytes) {
            Some(last) => {
                self.lines += newlines(&bytes[..last]) + 1;
                self.columns = characters(&bytes[last + 1..]);
            }
            None => self.columns += characters(bytes),
        }
    }

    /// `later`, counted from where this count ends, counted from where this one begins.
    fn then(self, later: Count) -> Count {
        let columns = if later.lines == 0 { self.columns + later.columns } else { later.columns };
        Count { lines: self.lines + later.lines, columns }
    }

    /// The (1-based) line and column of where a count from the text's start ends.
    fn place(self) -> (usize, usize) {
        (self.lines + 1, self.columns + 1)
    }
}

/// The line breaks in `bytes`, counted in blocks small enough for a byte-wide count, which the
/// compiler turns into vector instructions.
fn newlines(bytes: &[u8]) -> usize {
    bytes.chunks(255).map(|block| block.iter().fold(0u8, |n, &b| n + u8::from(b == b'\n')) as usize).sum()
}

/// The characters in `bytes` (whole UTF-8 ones).
fn characters(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| !is_continuation(b)).count()
}

/// A byte that continues a UTF-8 character: not counted as a column.
fn is_continuation(b: u8) -> bool {
    b & 0xC0 == 0x80
}

/// No path; no node.
const NONE: u32 = u32::MAX;

/// A value some wanted path goes through.
#[derive(Clone, Copy)]
struct Node {
    /// Whether some wanted path goes on into a key of it; into an index of it.
    keys: bool,
    indices: bool,
    /// The first of the paths that end at this value (the rest follow in `next_end`).
    first_end: u32,
}

impl Default for Node {
    fn default() -> Node {
        Node { keys: false, indices: false, first_end: NONE }
    }
}

/// A walk of [`locate_all`]: the tree of the paths it looks for (its edges in two maps, keyed
/// by the node they leave), and where each path was found. One walk looks for the paths of
/// task after task, its lists and maps used again.
struct Walk<'p> {
    tree: Vec<Node>,
    keys: HashMap<(u32, Cow<'p, str>), u32>,
    indices: HashMap<(u32, usize), u32>,
    /// The index (among all the paths of `locate_all`) of each path this walk looks for.
    paths: Vec<usize>,
    /// For each path looked for, the next one that ends at the same value.
    next_end: Vec<u32>,
    /// `(offset, index of the path)` of each path found, by every look.
    found: Vec<(usize, usize)>,
    /// Paths this walk has not found yet.
    remaining: usize,
}

impl<'p> Walk<'p> {
    fn new() -> Walk<'p> {
        Walk {
            tree: Vec::new(),
            keys: HashMap::default(),
            indices: HashMap::default(),
            paths: Vec::new(),
            next_end: Vec::new(),
            found: Vec::new(),
            remaining: 0,
        }
    }

    /// Looks for `paths` (each as its steps, with its index) in the value of `bytes` at
    /// `start`, their root.
    fn look_for(
        &mut self,
        bytes: &[u8],
        start: usize,
        paths: impl Iterator<Item = (impl Iterator<Item = Step<'p>>, usize)>,
    ) {
        self.tree.clear();
        self.tree.push(Node::default());
        self.keys.clear();
        self.indices.clear();
        self.paths.clear();
        self.next_end.clear();
        for (path, index) in paths {
            self.want(path, self.paths.len());
            self.paths.push(index);
        }
        self.remaining = self.paths.len();
        let _ = self.value(&mut Cursor { bytes, pos: start }, 0);
    }

    /// Adds the path that is the walk's `index`th to the tree.
    fn want(&mut self, path: impl Iterator<Item = Step<'p>>, index: usize) {
        let mut node = 0u32;
        for step in path {
            let next = self.tree.len() as u32;
            let child = match step {
                Step::Key(k) => {
                    self.tree[node as usize].keys = true;
                    *self.keys.entry((node, k)).or_insert(next)
                }
                Step::Index(i) => {
                    self.tree[node as usize].indices = true;
                    *self.indices.entry((node, i)).or_insert(next)
                }
            };
            if child == next {
                self.tree.push(Node::default());
            }
            node = child;
        }
        let node = &mut self.tree[node as usize];
        self.next_end.push(node.first_end);
        node.first_end = index as u32;
    }

    /// Reads the value at the cursor (after any whitespace), which is the tree's `node`. None
    /// stops the scan: every path is found, or the text is broken here.
    fn value(&mut self, at: &mut Cursor<'_>, node: u32) -> Option<()> {
        at.skip_ws();
        let Node { keys, indices, first_end } = self.tree[node as usize];
        // A value found twice (a key given twice) is placed at its first.
        self.tree[node as usize].first_end = NONE;
        let mut end = first_end;
        while end != NONE {
            self.found.push((at.pos, self.paths[end as usize]));
            self.remaining -= 1;
            end = self.next_end[end as usize];
        }
        if self.remaining == 0 {
            return None;
        }
        match at.peek()? {
            b'{' if keys => {
                at.pos += 1;
                loop {
                    at.skip_ws();
                    match at.peek()? {
                        b'}' => {
                            at.pos += 1;
                            return Some(());
                        }
                        b',' => at.pos += 1,
                        b'"' => {
                            let child = child(&self.keys, node, &at.key()?);
                            at.colon()?;
                            at.skip_ws();
                            match child {
                                Some(child) => self.value(at, child)?,
                                None => at.skip_value()?,
                            }
                        }
                        _ => return None,
                    }
                }
            }
            b'[' if indices => {
                at.pos += 1;
                let mut index = 0;
                loop {
                    at.skip_ws();
                    match at.peek()? {
                        b']' => {
                            at.pos += 1;
                            return Some(());
                        }
                        b',' => {
                            at.pos += 1;
                            index += 1;
                        }
                        _ => {
                            let before = at.pos;
                            match self.indices.get(&(node, index)).copied() {
                                Some(child) => self.value(at, child)?,
                                None => at.skip_value()?,
                            }
                            if at.pos == before {
                                return None;
                            }
                        }
                    }
                }
            }
            _ => at.skip_value(),
        }
    }
}

/// The child of `node` by the key `key` (read from the text: the map's keys, from the paths,
/// are looked at for as long as both live).
fn child<'k>(keys: &HashMap<(u32, Cow<'k, str>), u32>, node: u32, key: &'k str) -> Option<u32> {
    keys.get(&(node, Cow::Borrowed(key))).copied()
}

/// A place in a JSON text, and the moves the scans make: past whitespace, a key, a value.
struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn skip_ws(&mut self) {
        while self.bytes.get(self.pos).is_some_and(u8::is_ascii_whitespace) {
            self.pos += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    /// Past the colon after a key (a missing one is forgiven: the text may be broken).
    fn colon(&mut self) -> Option<()> {
        self.skip_ws();
        if self.peek()? == b':' {
            self.pos += 1;
        }
        Some(())
    }

    /// Reads the key whose quote is at `pos`: as written when it has no escape, else decoded
    /// (else as written, quotes and all).
    fn key(&mut self) -> Option<Cow<'a, str>> {
        let start = self.pos;
        self.skip_string()?;
        let raw = std::str::from_utf8(&self.bytes[start..self.pos]).ok()?;
        let inner = &raw[1..raw.len() - 1];
        Some(if inner.contains('\\') {
            Cow::Owned(serde_json::from_str(raw).unwrap_or_else(|_| raw.to_string()))
        } else {
            Cow::Borrowed(inner)
        })
    }

    /// Past the value at `pos`, without looking into it: its strings and brackets only.
    fn skip_value(&mut self) -> Option<()> {
        match self.peek()? {
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    self.pos += first(self.bytes.get(self.pos..)?, &MATTERS_BELOW, quote_or_bracket)?;
                    match self.bytes[self.pos] {
                        b'"' => self.skip_string()?,
                        b'{' | b'[' => {
                            depth += 1;
                            self.pos += 1;
                        }
                        _ => {
                            depth -= 1;
                            self.pos += 1;
                            if depth == 0 {
                                return Some(());
                            }
                        }
                    }
                }
            }
            b'"' => self.skip_string(),
            _ => {
                let start = self.pos;
                while self.peek().is_some_and(|b| !matches!(b, b',' | b'}' | b']') && !b.is_ascii_whitespace()) {
                    self.pos += 1;
                }
                (self.pos > start).then_some(())
            }
        }
    }

    /// Past the string whose quote is at `pos`.
    fn skip_string(&mut self) -> Option<()> {
        self.pos += 1;
        loop {
            self.pos += first(self.bytes.get(self.pos..)?, &ENDS_STRING, ends_string)?;
            if self.bytes[self.pos] == b'"' {
                self.pos += 1;
                return Some(());
            }
            self.pos += 2;
        }
    }
}

/// The path of the innermost value that starts at or before `offset`.
pub fn path_at(text: &str, offset: usize) -> Vec<Segment> {
    let mut last = Vec::new();
    Scanner::new(text).scan(&mut |p, start| {
        if start > offset {
            return false;
        }
        last = p.to_vec();
        true
    });
    last
}

struct Scanner<'a> {
    at: Cursor<'a>,
    path: Vec<Segment>,
}

impl<'a> Scanner<'a> {
    fn new(text: &'a str) -> Self {
        Scanner { at: Cursor { bytes: text.as_bytes(), pos: 0 }, path: Vec::new() }
    }

    /// Calls `visit(path, offset)` at the start of every value; stops when it returns false.
    fn scan(&mut self, visit: &mut dyn FnMut(&[Segment], usize) -> bool) {
        let _ = self.value(visit, 0);
    }

    /// Returns None to stop the whole scan.
    fn value(&mut self, visit: &mut dyn FnMut(&[Segment], usize) -> bool, depth: usize) -> Option<()> {
        self.at.skip_ws();
        if depth > 512 || !visit(&self.path, self.at.pos) {
            return None;
        }
        match self.at.peek()? {
            b'{' => {
                self.at.pos += 1;
                loop {
                    self.at.skip_ws();
                    match self.at.peek()? {
                        b'}' => {
                            self.at.pos += 1;
                            return Some(());
                        }
                        b',' => self.at.pos += 1,
                        b'"' => {
                            let key = CompactString::from(self.at.key()?);
                            self.at.colon()?;
                            self.path.push(Segment::Key(key));
                            let r = self.value(visit, depth + 1);
                            self.path.pop();
                            r?;
                        }
                        _ => return None,
                    }
                }
            }
            b'[' => {
                self.at.pos += 1;
                let mut index = 0;
                loop {
                    self.at.skip_ws();
                    match self.at.peek()? {
                        b']' => {
                            self.at.pos += 1;
                            return Some(());
                        }
                        b',' => {
                            self.at.pos += 1;
                            index += 1;
                        }
                        _ => {
                            self.path.push(Segment::Index(index));
                            let before = self.at.pos;
                            let r = self.value(visit, depth + 1);
                            self.path.pop();
                            r?;
                            if self.at.pos == before {
                                return None;
                            }
                        }
                    }
                }
            }
            _ => self.at.skip_value(),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn locates_a_nested_value_by_path() {
        let text = "{\n  \"tasks\": [\n    {\"id\": \"a\"},\n    {\"id\": 5}\n  ]\n}";
        let path = [Segment::Key("tasks".into()), Segment::Index(1), Segment::Key("id".into())];
        assert_eq!(locate_all(text, &[render_path(&path)], &[]), [Some((4, 12))]);
        assert_eq!(render_path(&path), "$.tasks[1].id");
    }

    #[test]
    fn a_path_into_a_task_is_placed_however_it_is_spelled() {
        let text = r#"{"tasks": [{"id": "a"}, {"id": "b"}, {"x": [1, {"y": 2}], "id": "c"}]}"#;
        let starts = task_starts(text);
        let column = |needle: &str| text.find(needle).unwrap() + 1;
        let spelled =
            ["$.tasks[2].id", r#"$["tasks"][2]["id"]"#, "$.tasks[2].x[1].y", "$.tasks[9].id", "$.tasks[x].id"];
        // No tenth task; a path that stops being read is placed where its steps read lead.
        let expected = [
            Some((1, column("\"c\""))),
            Some((1, column("\"c\""))),
            Some((1, column("2}"))),
            None,
            Some((1, column("[{"))),
        ];
        assert_eq!(locate_all(text, &spelled, &starts), expected);
        assert_eq!(locate_all(text, &spelled, &[]), expected, "from the top");
    }

    #[test]
    fn what_holds_no_wanted_path_is_skipped_whatever_its_strings_hold() {
        let text =
            r#"{"tasks": [{"id": "a", "x": ["]", "\"}", {"y": "[{"}]}, {"id": "b", "z": [1, [2]]}, {"id": "c"}]}"#;
        let at = |i: usize| format!("$.tasks[{i}].id");
        let found = locate_all(text, &[at(2), at(1), at(2)], &[]);
        let column = |needle: &str| text.find(needle).unwrap() + 1;
        assert_eq!(found, [Some((1, column("\"c\""))), Some((1, column("\"b\""))), Some((1, column("\"c\"")))]);
        assert_eq!(locate_all(text, &[at(3)], &[]), [None], "no fourth task");
    }

    #[test]
    fn columns_are_characters_on_a_long_line_and_after_each_line_break() {
        let text =
            "{\"tasks\": [{\"d\": \"été 東京\", \"id\": \"a\"}, {\"d\": \"✓\", \"id\": \"b\"},\n {\"id\": \"c\"}]}";
        let at = |i: usize| format!("$.tasks[{i}].id");
        let column = |needle: &str| text[..text.find(needle).unwrap()].chars().count() + 1;
        assert_eq!(
            locate_all(text, &[at(1), at(0), at(2)], &[]),
            [Some((1, column("\"b\""))), Some((1, column("\"a\""))), Some((2, 9))]
        );
    }

    /// Every value's path with the offset of its first occurrence, read by the scanner that
    /// looks into everything.
    fn every_path(text: &str) -> Vec<(Vec<Segment>, usize)> {
        let mut seen: Vec<(Vec<Segment>, usize)> = Vec::new();
        Scanner::new(text).scan(&mut |path, offset| {
            if !seen.iter().any(|(p, _)| p == path) {
                seen.push((path.to_vec(), offset));
            }
            true
        });
        seen
    }

    /// Any JSON value, its strings and keys full of quotes, backslashes, brackets and commas.
    pub(crate) fn json_value() -> impl Strategy<Value = serde_json::Value> {
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<i32>().prop_map(serde_json::Value::from),
            "[a-z\"\\\\{}\\[\\]:,é\u{1F600}\n ]{0,8}".prop_map(serde_json::Value::from),
        ];
        leaf.prop_recursive(4, 32, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::from),
                prop::collection::btree_map("[a-z\"\\\\é]{0,3}", inner, 0..4)
                    .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// Skipping what holds no wanted path places each path where reading everything does.
        #[test]
        fn it_places_each_path_where_a_full_scan_finds_it(
            value in json_value(),
            pretty in any::<bool>(),
            picks in prop::collection::vec(any::<prop::sample::Index>(), 1..6),
        ) {
            let text = if pretty { serde_json::to_string_pretty(&value).unwrap() } else { value.to_string() };
            let every = every_path(&text);
            let mut wanted: Vec<String> = picks.iter().map(|i| render_path(&every[i.index(every.len())].0)).collect();
            wanted.push("$.absent".into());
            let expected: Vec<Option<(usize, usize)>> = picks
                .iter()
                .map(|i| Some(line_column_at(&text, every[i.index(every.len())].1)))
                .chain([None])
                .collect();
            prop_assert_eq!(locate_all(&text, &wanted, &[]), expected);
        }

        /// Paths into tasks looked for from where each task begins are placed where a walk
        /// from the top places them, whatever else the file holds and however it is laid out.
        #[test]
        fn a_path_into_a_task_is_placed_from_its_start_where_the_top_walk_places_it(
            tasks in prop::collection::vec(prop::collection::btree_map("[a-z\"]{0,3}", json_value(), 0..4), 1..6),
            around in json_value(),
            pretty in any::<bool>(),
            known in any::<bool>(),
            picks in prop::collection::vec(any::<prop::sample::Index>(), 1..8),
        ) {
            let tasks: Vec<serde_json::Value> =
                tasks.into_iter().map(|t| serde_json::Value::Object(t.into_iter().collect())).collect();
            let value = serde_json::json!({"before": around, "tasks": tasks, "after": around});
            let text = if pretty { serde_json::to_string_pretty(&value).unwrap() } else { value.to_string() };
            let every = every_path(&text);
            let starts: Vec<usize> = (0..tasks.len())
                .map(|i| {
                    let task = [Segment::Key("tasks".into()), Segment::Index(i)];
                    every.iter().find(|(p, _)| p[..] == task).expect("every task is a value").1
                })
                .collect();
            let mut wanted: Vec<String> = picks.iter().map(|i| render_path(&every[i.index(every.len())].0)).collect();
            wanted.push("$.tasks[0].absent".into());
            // The starts of every task, or of none (the careful path's).
            let starts = if known { &starts[..] } else { &[] };
            prop_assert_eq!(locate_all(&text, &wanted, starts), locate_all(&text, &wanted, &[]));
        }
    }

    #[test]
    fn many_paths_into_tasks_walked_on_two_cores_are_placed_as_one_walk_from_the_top_places_them() {
        let tasks: Vec<serde_json::Value> = (0..3000)
            .map(|i| serde_json::json!({"id": format!("t{i}"), "d": "é}\"[", "inputs": [{"name": "a"}, {"name": i}]}))
            .collect();
        let text = serde_json::to_string_pretty(&serde_json::json!({"tasks": tasks, "id": "b"})).unwrap();
        let starts = task_starts(&text);
        assert_eq!(starts.len(), 3000);
        let mut wanted: Vec<String> =
            (0..3000).rev().flat_map(|i| [format!("$.tasks[{i}]"), format!("$.tasks[{i}].inputs[1].name")]).collect();
        wanted.push("$.id".into());
        assert!(wanted.len() > WALKED_APART_FROM);
        let placed = locate_all(&text, &wanted, &starts);
        assert!(placed.iter().all(Option::is_some));
        assert_eq!(placed, locate_all(&text, &wanted, &[]));
        // No second thread to be had: all walked on this one.
        assert_eq!(crate::threads::refused(|| locate_all(&text, &wanted, &starts)), placed);
    }

    /// Where each task of `text` begins, by a full scan.
    fn task_starts(text: &str) -> Vec<usize> {
        let mut starts = Vec::new();
        Scanner::new(text).scan(&mut |p, at| {
            if matches!(p, [Segment::Key(k), Segment::Index(_)] if k == "tasks") {
                starts.push(at);
            }
            true
        });
        starts
    }

    /// `text` written to `b.json` in `dir`, to be read again by chunks of `chunk` bytes.
    fn written_again(dir: &tempfile::TempDir, text: &str, chunk: usize) -> fsio::Reread {
        let path = dir.path().join("b.json");
        std::fs::write(&path, text).unwrap();
        fsio::Reread::by_chunks_of(&path, text.as_bytes(), chunk).expect("opens again")
    }

    #[test]
    fn a_file_read_again_a_chunk_at_a_time_places_every_path_where_its_held_text_places_it() {
        let dir = tempfile::tempdir().unwrap();
        let tasks: Vec<serde_json::Value> = (0..3000)
            .map(|i| serde_json::json!({"id": format!("t{i}"), "d": "é}\"[\n東", "inputs": [{"name": "a"}, {"name": i}]}))
            .collect();
        let blueprint = serde_json::json!({"id": "b", "tasks": tasks, "name": "n"});
        for text in [serde_json::to_string_pretty(&blueprint).unwrap(), blueprint.to_string()] {
            let starts = task_starts(&text);
            let wanted: Vec<String> = (0..3000)
                .rev()
                .flat_map(|i| {
                    [format!("$.tasks[{i}]"), format!("$.tasks[{i}].inputs[1].name"), format!("$.tasks[{i}].no")]
                })
                .collect();
            assert!(wanted.len() > 2 * WALKED_APART_FROM);
            let held = locate_all(&text, &wanted, &starts);
            assert!(held.iter().filter(|p| p.is_some()).count() == 6000);
            // Chunks shorter than a task, shorter than the text, longer than it.
            for chunk in [7, 4096, 1 << 20] {
                let file = written_again(&dir, &text, chunk);
                assert_eq!(locate_all_again(&file, &wanted, &starts).unwrap(), held, "chunks of {chunk}");
                // Few paths (one core), and no second thread to be had.
                let few = &wanted[2000..2010];
                assert_eq!(locate_all_again(&file, few, &starts).unwrap(), locate_all(&text, few, &starts));
                let alone = crate::threads::refused(|| locate_all_again(&file, &wanted, &starts).unwrap());
                assert_eq!(alone, held, "chunks of {chunk}, one core");
            }
            // A path outside the tasks: the whole text is read again.
            let file = written_again(&dir, &text, 4096);
            let mut with_top = wanted[..100].to_vec();
            with_top.push("$.name".into());
            let placed = locate_all_again(&file, &with_top, &starts).unwrap();
            assert_eq!(placed, locate_all(&text, &with_top, &starts));
            assert!(placed[100].is_some());
        }
    }

    #[test]
    fn a_file_changed_since_it_was_loaded_is_an_error_never_a_wrong_place() {
        let dir = tempfile::tempdir().unwrap();
        let tasks: Vec<serde_json::Value> = (0..200).map(|i| serde_json::json!({"id": format!("t{i}")})).collect();
        let text = serde_json::to_string_pretty(&serde_json::json!({"tasks": tasks})).unwrap();
        let starts = task_starts(&text);
        let wanted = ["$.tasks[199].id"];
        let held = locate_all(&text, &wanted, &starts);
        let path = dir.path().join("b.json");
        let changed = |file: &fsio::Reread| {
            let e = locate_all_again(file, &wanted, &starts).expect_err("changed");
            assert!(e.to_string().contains("b.json changed while it was checked"), "{e}");
        };
        // A byte changed, the length kept.
        let file = written_again(&dir, &text, 64);
        std::fs::write(&path, text.replace("\"t150\"", "\"t15x\"")).unwrap();
        changed(&file);
        // Cut short.
        let file = written_again(&dir, &text, 64);
        std::fs::write(&path, &text[..text.len() / 2]).unwrap();
        changed(&file);
        // Replaced by a rename, as editors save: the file opened is read as it was.
        let file = written_again(&dir, &text, 64);
        std::fs::write(dir.path().join("new.json"), "{}").unwrap();
        std::fs::rename(dir.path().join("new.json"), &path).unwrap();
        assert_eq!(locate_all_again(&file, &wanted, &starts).unwrap(), held);
        // No longer as long when it is opened again: nothing to read again (the text is kept).
        assert!(fsio::Reread::by_chunks_of(&path, text.as_bytes(), 64).is_none());
    }

    #[test]
    fn many_offsets_counted_in_two_halves_get_the_lines_and_columns_of_one_count() {
        // Lines of every length, some with several offsets (the second half then begins within
        // a line), characters of one to four bytes; and the same on a single line.
        let lines: Vec<String> = (0..3000).map(|i| "é x 東 ".repeat(i % 5) + &"a😀".repeat(i % 3)).collect();
        for text in [lines.join("\n"), lines.join(" ")] {
            let mut found: Vec<(usize, usize)> =
                text.match_indices('x').map(|(at, _)| at).enumerate().map(|(i, at)| (at, i)).collect();
            let n = found.len() + 2;
            // Two paths at one place, and one past the end (placed at the end).
            found.push((found[found.len() / 2].0, n - 2));
            found.push((text.len() + 5, n - 1));
            assert!(found.len() >= COUNTED_APART_FROM);
            let expected: Vec<Option<(usize, usize)>> =
                (0..n).map(|i| Some(line_column_at(&text, found.iter().find(|f| f.1 == i).unwrap().0))).collect();
            found.reverse();
            assert_eq!(lines_and_columns(&text, found.clone(), n), expected);
            assert_eq!(crate::threads::refused(|| lines_and_columns(&text, found, n)), expected);
        }
    }

    #[test]
    fn finds_the_enclosing_path_of_a_broken_spot() {
        let text = "{\"tasks\": [{\"id\": \"a\", \"type\": }]}";
        let offset = text.find('}').unwrap();
        assert_eq!(render_path(&path_at(text, offset)), "$.tasks[0].type");
    }

    #[test]
    fn odd_keys_are_quoted_in_paths() {
        assert_eq!(render_path(&[Segment::Key("a b".into())]), "$[\"a b\"]");
    }
}
