//! Blueprint files as an editor keeps them: the blueprint itself, canonical and byte-stable
//! (so that a saved file diffs cleanly), and its layout beside it, never inside it.
//!
//! - `write_blueprint_file` writes the canonical text of a blueprint (its encoding kept)
//!   atomically (`orrery_blueprint::fsio::write_atomic`): a temporary file with a random name,
//!   created exclusively in the same folder (a planted symlink is never followed), given the
//!   file's mode, then a rename, so a crash never leaves a half-written blueprint.
//! - The layout of `flow.json` lives in `flow.json.layout` (not `*.json`, so that globs of
//!   blueprints do not pick it up): `{"orrery_layout": 1, "positions": {task id: [x, y]}}`,
//!   task ids sorted, coordinates rounded to whole pixels, one task per line: moving one node
//!   changes one line. A missing layout is no layout; an unreadable one is an error that names
//!   the file and the line (a layout that is not a regular file, or over 64 MiB, is refused
//!   without blocking: `fsio`). The breakpoints the editor set are kept there too (`"breakpoints":
//!   {task id: "before" | "after"}`, left out when there are none): an editor's, not the
//!   blueprint's, so a blueprint file never changes for them.

use super::*;

use crate::sessions::BreakAtArgument;
use orrery_blueprint::fsio;
use std::collections::BTreeMap;

/// The layout format's version.
const LAYOUT_VERSION: u64 = 1;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteArguments {
    pub file: PathBuf,
    /// The blueprint as text; it is written in its canonical form, in its own encoding.
    pub text: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Written {
    /// What the file now holds.
    pub text: String,
    /// Whether the file's bytes changed (false: it already held exactly this).
    pub changed: bool,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LayoutFileArguments {
    /// The blueprint file (not the layout file).
    pub file: PathBuf,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SaveLayoutArguments {
    /// The blueprint file (not the layout file).
    pub file: PathBuf,
    pub positions: BTreeMap<String, Point>,
    /// The way the tasks are laid out, kept for the next automatic layout.
    #[serde(default)]
    pub direction: Direction,
    /// The breakpoints set in the editor, by task id: what a run started from it holds at.
    #[serde(default)]
    pub breakpoints: BTreeMap<String, BreakAtArgument>,
}

/// Which way a blueprint's tasks flow in its layout: each task below (`down`) or to the right
/// of (`right`) what it depends on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    #[default]
    Down,
    Right,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Point {
    pub x: f64,
    pub y: f64,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Layout {
    /// The layout file.
    pub layout_file: PathBuf,
    /// Whether it exists (no layout yet: lay the blueprint out).
    pub found: bool,
    pub positions: BTreeMap<String, Point>,
    pub direction: Direction,
    /// The breakpoints set in the editor, by task id (left out when there are none).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub breakpoints: BTreeMap<String, BreakAtArgument>,
}

/// Where the layout of `file` lives.
pub fn layout_file(file: &Path) -> PathBuf {
    let mut name = file.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(".layout");
    file.with_file_name(name)
}

/// Writes `text` to `path` atomically: `fsio::write_atomic` (a random, exclusive temporary name
/// in the same folder, never a planted symlink followed, the file's mode kept, then a rename).
fn write_atomically(path: &Path, text: &str) -> Result<(), Failure> {
    fsio::write_atomic(path, text.as_bytes())
        .map_err(|e| Failure::new(FailureCode::Io, format!("cannot write {}: {e}", path.display())))
}

fn layout_text(
    positions: &BTreeMap<String, Point>,
    direction: Direction,
    breakpoints: &BTreeMap<String, BreakAtArgument>,
) -> String {
    let mut text = format!("{{\n    \"orrery_layout\": {LAYOUT_VERSION},\n");
    // Down is what a layout without the key means: files of earlier versions read the same.
    if direction == Direction::Right {
        text.push_str("    \"direction\": \"right\",\n");
    }
    if !breakpoints.is_empty() {
        let each: Vec<String> = breakpoints
            .iter()
            .map(|(id, at)| format!("{}: {}", Value::from(id.as_str()), serde_json::to_string(at).unwrap_or_default()))
            .collect();
        text.push_str(&format!("    \"breakpoints\": {{{}}},\n", each.join(", ")));
    }
    text.push_str("    \"positions\": {");
    for (i, (id, p)) in positions.iter().enumerate() {
        let id = serde_json::to_string(id).unwrap_or_default();
        text.push_str(if i == 0 { "\n" } else { ",\n" });
        text.push_str(&format!("        {id}: [{}, {}]", p.x as i64, p.y as i64));
    }
    text.push_str(if positions.is_empty() { "}\n}\n" } else { "\n    }\n}\n" });
    text
}

fn read_layout(file: &Path) -> Result<Layout, Failure> {
    let layout_file = layout_file(file);
    let text = match fsio::read_blueprint(&layout_file) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let (positions, breakpoints) = (BTreeMap::new(), BTreeMap::new());
            return Ok(Layout { layout_file, found: false, positions, direction: Direction::Down, breakpoints });
        }
        Err(e) => return Err(Failure::new(FailureCode::Io, format!("cannot read {}: {e}", layout_file.display()))),
    };
    let bad = |why: String| Failure::new(FailureCode::InvalidLayout, format!("{}: {why}", layout_file.display()));
    let value: Value = serde_json::from_str(&text).map_err(|e| bad(format!("line {}: {e}", e.line())))?;
    match value.get("orrery_layout").and_then(Value::as_u64) {
        Some(LAYOUT_VERSION) => {}
        Some(other) => {
            return Err(bad(format!("layout version {other} is newer than this Orrery reads ({LAYOUT_VERSION})")))
        }
        None => return Err(bad("it has no \"orrery_layout\" version: not an Orrery layout".into())),
    }
    let direction = match value.get("direction") {
        None => Direction::Down,
        Some(Value::String(d)) if d == "down" => Direction::Down,
        Some(Value::String(d)) if d == "right" => Direction::Right,
        Some(other) => return Err(bad(format!("\"direction\" is \"down\" or \"right\", not {other}"))),
    };
    let mut positions = BTreeMap::new();
    for (id, at) in value.get("positions").and_then(Value::as_object).into_iter().flatten() {
        let xy = at.as_array().filter(|a| a.len() == 2).and_then(|a| Some((a[0].as_f64()?, a[1].as_f64()?)));
        let (x, y) = xy.ok_or_else(|| bad(format!("the position of task {id:?} is not [x, y]: {at}")))?;
        positions.insert(id.clone(), Point { x, y });
    }
    let mut breakpoints = BTreeMap::new();
    for (id, at) in value.get("breakpoints").and_then(Value::as_object).into_iter().flatten() {
        let at = serde_json::from_value(at.clone())
            .map_err(|_| bad(format!("the breakpoint of task {id:?} is \"before\" or \"after\", not {at}")))?;
        breakpoints.insert(id.clone(), at);
    }
    Ok(Layout { layout_file, found: true, positions, direction, breakpoints })
}

pub(crate) fn register(jobs: &mut Vec<Job>) {
    jobs.push(
        job(
            "write_blueprint_file",
            "Writes a blueprint to a file in its canonical form (its encoding kept), atomically.",
            |api: Api, args: WriteArguments| async move {
                api.blocking(move |_| {
                    let text = crate::blueprints::canonical(&args.text, None)?;
                    // Only a regular file is compared (a FIFO there is refused by the write).
                    let old = fsio::read_limited(&args.file, fsio::BLUEPRINT_LIMIT);
                    let changed = old.map_or(true, |old| old != text.as_bytes());
                    if changed {
                        write_atomically(&args.file, &text)?;
                    }
                    Ok(Written { text, changed })
                })
                .await
            },
        )
        .writing(),
    );
    jobs.push(job(
        "read_layout",
        "The node positions kept beside a blueprint file (`FILE.layout`); none yet when it is missing.",
        |api: Api, args: LayoutFileArguments| async move { api.blocking(move |_| read_layout(&args.file)).await },
    ));
    jobs.push(
        job(
            "save_layout",
            "Keeps node positions beside a blueprint file (`FILE.layout`: sorted, whole pixels, one task \
         per line), atomically.",
            |api: Api, args: SaveLayoutArguments| async move {
                api.blocking(move |_| {
                    let layout_file = layout_file(&args.file);
                    let positions: BTreeMap<String, Point> = args
                        .positions
                        .into_iter()
                        .map(|(id, p)| (id, Point { x: p.x.round(), y: p.y.round() }))
                        .collect();
                    write_atomically(&layout_file, &layout_text(&positions, args.direction, &args.breakpoints))?;
                    let (direction, breakpoints) = (args.direction, args.breakpoints);
                    Ok(Layout { layout_file, found: true, positions, direction, breakpoints })
                })
                .await
            },
        )
        .writing(),
    );
}
