//! Where things are in a JSON text. serde_json's `Value` forgets positions, so when a load
//! fails (or a diagnostic wants a line) this module rescans the text: it finds the line and
//! column of a JSON path, and the JSON path that encloses a byte offset. The scanner is
//! tolerant of broken text, because it runs on exactly the files that failed to parse. It is
//! only used on error paths; placing any number of diagnostics costs one scan.

use foldhash::{HashMap, HashMapExt};

/// One step of a JSON path.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Segment {
    Key(String),
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
    let mut out = Vec::new();
    let mut rest = path.strip_prefix('$').unwrap_or(path);
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            out.push(Segment::Key(r[..end].to_string()));
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix('[') {
            if r.starts_with('"') {
                let mut de = serde_json::Deserializer::from_str(r).into_iter::<String>();
                match de.next() {
                    Some(Ok(key)) => {
                        let used = de.byte_offset();
                        out.push(Segment::Key(key));
                        rest = r[used..].strip_prefix(']').unwrap_or("");
                    }
                    _ => break,
                }
            } else {
                let end = r.find(']').unwrap_or(r.len());
                match r[..end].parse() {
                    Ok(i) => out.push(Segment::Index(i)),
                    Err(_) => break,
                }
                rest = r.get(end + 1..).unwrap_or("");
            }
        } else {
            break;
        }
    }
    out
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

/// Line and column of the value at each path, in one scan of the text.
pub fn locate_all(text: &str, paths: &[Vec<Segment>]) -> Vec<Option<(usize, usize)>> {
    let mut wanted: HashMap<&[Segment], Vec<usize>> = HashMap::new();
    for (i, p) in paths.iter().enumerate() {
        wanted.entry(p.as_slice()).or_default().push(i);
    }
    let mut remaining = wanted.len();
    let mut offsets: Vec<(usize, usize)> = Vec::with_capacity(paths.len());
    // Only what holds a wanted path is looked into; the rest (most of a large file) is skipped.
    let holds: foldhash::HashSet<&[Segment]> = paths.iter().flat_map(|p| (0..p.len()).map(|n| &p[..n])).collect();
    if remaining > 0 {
        let mut scanner = Scanner::new(text);
        scanner.descend = Some(&holds);
        scanner.scan(&mut |p, offset| {
            if let Some(indices) = wanted.remove(p) {
                offsets.extend(indices.into_iter().map(|i| (offset, i)));
                remaining -= 1;
            }
            remaining > 0
        });
    }
    // One sweep over the text turns the sorted offsets into lines and columns.
    offsets.sort_unstable();
    let mut out = vec![None; paths.len()];
    let (mut line, mut line_start, mut pos) = (1, 0, 0);
    for (offset, i) in offsets {
        let offset = offset.min(text.len());
        for (k, b) in text.as_bytes()[pos..offset].iter().enumerate() {
            if *b == b'\n' {
                line += 1;
                line_start = pos + k + 1;
            }
        }
        pos = offset;
        let column = String::from_utf8_lossy(&text.as_bytes()[line_start..offset]).chars().count() + 1;
        out[i] = Some((line, column));
    }
    out
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
    bytes: &'a [u8],
    pos: usize,
    path: Vec<Segment>,
    /// The paths whose value is looked into (none: every one); any other is skipped whole.
    descend: Option<&'a foldhash::HashSet<&'a [Segment]>>,
}

impl<'a> Scanner<'a> {
    fn new(text: &'a str) -> Self {
        Scanner { bytes: text.as_bytes(), pos: 0, path: Vec::new(), descend: None }
    }

    /// Calls `visit(path, offset)` at the start of every value; stops when it returns false.
    fn scan(&mut self, visit: &mut dyn FnMut(&[Segment], usize) -> bool) {
        let _ = self.value(visit, 0);
    }

    fn skip_ws(&mut self) {
        while self.pos < self.bytes.len() && self.bytes[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    /// Returns None to stop the whole scan.
    fn value(&mut self, visit: &mut dyn FnMut(&[Segment], usize) -> bool, depth: usize) -> Option<()> {
        self.skip_ws();
        if depth > 512 || !visit(&self.path, self.pos) {
            return None;
        }
        if self.descend.is_some_and(|holds| !holds.contains(self.path.as_slice())) {
            return self.skip_value();
        }
        match self.peek()? {
            b'{' => {
                self.pos += 1;
                loop {
                    self.skip_ws();
                    match self.peek()? {
                        b'}' => {
                            self.pos += 1;
                            return Some(());
                        }
                        b',' => self.pos += 1,
                        b'"' => {
                            let key = self.string()?;
                            self.skip_ws();
                            if self.peek()? == b':' {
                                self.pos += 1;
                            }
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
                self.pos += 1;
                let mut index = 0;
                loop {
                    self.skip_ws();
                    match self.peek()? {
                        b']' => {
                            self.pos += 1;
                            return Some(());
                        }
                        b',' => {
                            self.pos += 1;
                            index += 1;
                        }
                        _ => {
                            self.path.push(Segment::Index(index));
                            let before = self.pos;
                            let r = self.value(visit, depth + 1);
                            self.path.pop();
                            r?;
                            if self.pos == before {
                                return None;
                            }
                        }
                    }
                }
            }
            b'"' => self.string().map(|_| ()),
            _ => {
                let start = self.pos;
                while let Some(b) = self.peek() {
                    if matches!(b, b',' | b'}' | b']') || b.is_ascii_whitespace() {
                        break;
                    }
                    self.pos += 1;
                }
                (self.pos > start).then_some(())
            }
        }
    }

    /// Past the value at `pos`, without looking into it: its strings and brackets only.
    fn skip_value(&mut self) -> Option<()> {
        match self.peek()? {
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    match self.peek()? {
                        b'"' => self.skip_string()?,
                        b'{' | b'[' => {
                            depth += 1;
                            self.pos += 1;
                        }
                        b'}' | b']' => {
                            depth -= 1;
                            self.pos += 1;
                            if depth == 0 {
                                return Some(());
                            }
                        }
                        _ => self.pos += 1,
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

    fn skip_string(&mut self) -> Option<()> {
        self.pos += 1;
        loop {
            match self.peek()? {
                b'\\' => self.pos += 2,
                b'"' => {
                    self.pos += 1;
                    return Some(());
                }
                _ => self.pos += 1,
            }
        }
    }

    fn string(&mut self) -> Option<String> {
        let start = self.pos;
        self.pos += 1;
        while let Some(b) = self.peek() {
            self.pos += 1;
            match b {
                b'\\' => self.pos += 1,
                b'"' => {
                    let raw = std::str::from_utf8(&self.bytes[start..self.pos]).ok()?;
                    return Some(serde_json::from_str(raw).unwrap_or_else(|_| raw.to_string()));
                }
                _ => {}
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locates_a_nested_value_by_path() {
        let text = "{\n  \"tasks\": [\n    {\"id\": \"a\"},\n    {\"id\": 5}\n  ]\n}";
        let path = [Segment::Key("tasks".into()), Segment::Index(1), Segment::Key("id".into())];
        assert_eq!(locate_all(text, &[path.to_vec()]), [Some((4, 12))]);
        assert_eq!(render_path(&path), "$.tasks[1].id");
    }

    #[test]
    fn what_holds_no_wanted_path_is_skipped_whatever_its_strings_hold() {
        let text =
            r#"{"tasks": [{"id": "a", "x": ["]", "\"}", {"y": "[{"}]}, {"id": "b", "z": [1, [2]]}, {"id": "c"}]}"#;
        let at = |i: usize| vec![Segment::Key("tasks".into()), Segment::Index(i), Segment::Key("id".into())];
        let found = locate_all(text, &[at(2), at(1), at(2)]);
        let column = |needle: &str| text.find(needle).unwrap() + 1;
        assert_eq!(found, [Some((1, column("\"c\""))), Some((1, column("\"b\""))), Some((1, column("\"c\"")))]);
        assert_eq!(locate_all(text, &[at(3)]), [None], "no fourth task");
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
