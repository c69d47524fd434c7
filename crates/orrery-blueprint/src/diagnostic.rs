//! Structured findings about a blueprint. Every diagnostic carries a stable code (tools and the
//! editor match on it, never on the message), the task and JSON path it concerns, and whether
//! the reference server would refuse the blueprint for it: Orrery's own verdict ("valid": no
//! errors) and the server's ("accepts": nothing it refuses) are kept apart. The helpers every
//! rule uses to word its findings (a task's path, a list of ids) and to place them at their
//! line and column in the file are here too, so that loading, validation and dataflow share
//! them without depending on one another.

use crate::span;
use serde::Serialize;
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
    Info,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Error => "error",
            Self::Warning => "warning",
            Self::Info => "info",
        }
    }
}

macro_rules! codes {
    ($($variant:ident = $text:literal),* $(,)?) => {
        /// The stable code of a diagnostic.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Code { $($variant),* }
        impl Code {
            /// Every code, in declaration order.
            pub const ALL: &'static [Code] = &[$(Code::$variant),*];
            pub fn as_str(self) -> &'static str {
                match self { $(Code::$variant => $text),* }
            }
        }
    };
}

codes! {
    // The file itself.
    TextEncoding = "text-encoding",
    JsonSyntax = "json-syntax",
    JsonDepth = "json-depth",
    JsonNonStandard = "json-nonstandard",
    CompasObject = "compas-object",
    NotABlueprint = "not-a-blueprint",
    SchemaType = "schema-type",
    SchemaRequired = "schema-required",
    SchemaEnum = "schema-enum",
    SchemaRange = "schema-range",
    SchemaUnknownKey = "schema-unknown-key",
    VersionInvalid = "version-invalid",
    VersionUnsupported = "version-unsupported",
    IoUnknownKey = "io-unknown-key",
    DependencyUnknownKey = "dependency-unknown-key",
    DeprecatedIoType = "deprecated-io-type",
    // The reference's validate().
    StartCount = "start-count",
    EndCount = "end-count",
    OrphanTask = "orphan-task",
    DanglingDependency = "dangling-dependency",
    ScopeEndMissingTask = "scope-end-missing-task",
    ScopeEndNotAScope = "scope-end-not-a-scope",
    ScopeEndDuplicate = "scope-end-duplicate",
    ScopeUnclosed = "scope-unclosed",
    ScopesInterlaced = "scopes-interlaced",
    // The reference's check_dataflow().
    ConditionSyntax = "condition-syntax",
    ConditionUnknownName = "condition-unknown-name",
    // What the reference misses.
    EmptyBlueprint = "empty-blueprint",
    DuplicateBlueprintId = "duplicate-blueprint-id",
    DuplicateTaskId = "duplicate-task-id",
    Cycle = "cycle",
    SelfDependency = "self-dependency",
    DuplicateDependency = "duplicate-dependency",
    GetFromUnproduced = "get-from-unproduced",
    DuplicateIoName = "duplicate-io-name",
    TaskTypeFormat = "task-type-format",
    CompositeParam = "composite-param",
    // A param that breaks its task type's params schema: the agent would refuse it at run time.
    ParamSchema = "param-schema",
    CompositeTargetMissing = "composite-target-missing",
    CompositeRecursion = "composite-recursion",
    ExecutionModeInvalid = "execution-mode-invalid",
    ScopeEndUnreachable = "scope-end-unreachable",
    PolicyRange = "policy-range",
    NotPortable = "not-portable",
    // A task besides the end task that nothing depends on: an antikythera server ends the
    // session when the first of them finishes; upstream's main branch refuses it.
    EndNotOnlySink = "end-not-only-sink",
    // An id or name with a NUL character: the reference stores any JSON string (its schema has
    // no pattern and Redis keys are binary-safe), but Orrery makes ids and names into file
    // names, process arguments and environment variables, none of which can hold a NUL; the
    // run would fail part-way instead. Only NUL is refused: `/`, `..` and the like are made
    // safe by the engine's encoding of ids into file names, so they need no rule here.
    NulInId = "nul-in-id",
}

/// A code is its text on the wire.
impl schemars::JsonSchema for Code {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "DiagnosticCode".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let codes: Vec<&str> = Code::ALL.iter().map(|c| c.as_str()).collect();
        schemars::json_schema!({ "type": "string", "enum": codes })
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Code {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// One finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Diagnostic {
    pub code: Code,
    pub severity: Severity,
    /// The task concerned, when there is one.
    pub task_id: Option<String>,
    /// JSONPath of the field concerned, e.g. `$.tasks[3].depends_on[0].id`.
    pub path: String,
    pub message: String,
    /// Whether the reference server refuses a blueprint for this alone.
    pub server_rejects: bool,
    /// Where the field is in the file (1-based), when the text was available.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<usize>,
    /// The byte of the file concerned, when the finding is about the bytes themselves.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub byte_offset: Option<usize>,
}

impl Diagnostic {
    pub fn new(code: Code, severity: Severity, path: impl Into<String>, message: impl Into<String>) -> Self {
        Diagnostic {
            code,
            severity,
            task_id: None,
            path: path.into(),
            message: message.into(),
            server_rejects: false,
            line: None,
            column: None,
            byte_offset: None,
        }
    }
    pub fn error(code: Code, path: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(code, Severity::Error, path, message)
    }
    pub fn warning(code: Code, path: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(code, Severity::Warning, path, message)
    }
    /// Marks the diagnostic as one the reference server refuses the blueprint for.
    pub fn rejected(mut self) -> Self {
        self.server_rejects = true;
        self
    }
    pub fn task(mut self, task_id: &str) -> Self {
        self.task_id = Some(task_id.to_owned());
        self
    }
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}[{}]: {}", self.severity.as_str(), self.code, self.message)
    }
}

/// Orrery's verdict: no errors.
pub fn is_valid(diagnostics: &[Diagnostic]) -> bool {
    !diagnostics.iter().any(Diagnostic::is_error)
}

/// The reference server's verdict: nothing it refuses.
pub fn server_accepts(diagnostics: &[Diagnostic]) -> bool {
    !diagnostics.iter().any(|d| d.server_rejects)
}

/// The JSON path of the task at `index`, where the path of every finding about it begins:
/// written straight into the finding's path (`format!("{}.id", task_path(i))`), never a string
/// of its own first.
pub(crate) fn task_path(index: usize) -> TaskPath {
    TaskPath(index)
}

#[derive(Clone, Copy)]
pub(crate) struct TaskPath(usize);

impl fmt::Display for TaskPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "$.tasks[{}]", self.0)
    }
}

impl From<TaskPath> for String {
    fn from(path: TaskPath) -> String {
        path.to_string()
    }
}

/// Ids quoted for a message: the first twelve, then how many more there are.
pub(crate) fn quote_list<'a>(ids: impl ExactSizeIterator<Item = &'a str>) -> String {
    const SHOWN: usize = 12;
    let all = ids.len();
    let mut parts: Vec<String> = ids.take(SHOWN).map(|id| format!("'{id}'")).collect();
    if all > SHOWN {
        parts.push(format!("and {} more", all - SHOWN));
    }
    parts.join(", ")
}

/// Fills in line and column of the diagnostics that have none, from the file's `text` and
/// where its tasks begin in it, as far as known ([`crate::Loaded::task_starts`]).
pub(crate) fn place(text: &str, task_starts: &[usize], diagnostics: &mut [Diagnostic]) {
    place_all(text, task_starts, diagnostics.iter_mut().filter(|d| d.line.is_none()).collect());
}

/// Sets line and column of every diagnostic given to where its path is in `text`.
pub(crate) fn place_all(text: &str, task_starts: &[usize], mut diagnostics: Vec<&mut Diagnostic>) {
    let places = span::locate_all(text, &paths(&diagnostics), task_starts);
    set_places(&mut diagnostics, places);
}

/// [`place`] from the file read again ([`span::locate_all_again`]), its text given up: an
/// error when it no longer holds what was loaded.
pub(crate) fn place_again(
    file: &crate::fsio::Reread,
    task_starts: &[usize],
    diagnostics: &mut [Diagnostic],
) -> std::io::Result<()> {
    let mut diagnostics: Vec<&mut Diagnostic> = diagnostics.iter_mut().filter(|d| d.line.is_none()).collect();
    let places = span::locate_all_again(file, &paths(&diagnostics), task_starts)?;
    set_places(&mut diagnostics, places);
    Ok(())
}

fn paths<'a>(diagnostics: &'a [&mut Diagnostic]) -> Vec<&'a str> {
    diagnostics.iter().map(|d| d.path.as_str()).collect()
}

fn set_places(diagnostics: &mut [&mut Diagnostic], places: Vec<Option<(usize, usize)>>) {
    for (d, place) in diagnostics.iter_mut().zip(places) {
        if let Some((line, column)) = place {
            d.line = Some(line);
            d.column = Some(column);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn many_diagnostics_are_placed_as_few_are_whatever_the_threads() {
        let tasks: Vec<serde_json::Value> =
            (0..3000).map(|i| serde_json::json!({"id": format!("t{i}"), "type": "shell.run", "inputs": [{"name": "é", "get_from": "k"}]})).collect();
        let text = serde_json::to_string_pretty(
            &serde_json::json!({"id": "b", "name": "n", "version": "1.0", "tasks": tasks}),
        )
        .unwrap();
        let loaded = crate::load(&text).expect("loads");
        let diagnostics: Vec<Diagnostic> = (0..3000)
            .rev()
            .flat_map(|i| {
                let task = task_path(i);
                [format!("{task}.id"), format!("{task}.inputs[0].get_from"), format!("{task}.absent")]
            })
            .chain(["$.id".to_string()])
            .map(|path| Diagnostic::warning(Code::GetFromUnproduced, path, "m"))
            .collect();
        assert!(diagnostics.len() >= crate::span::WALKED_APART_FROM);
        let placed = |diagnostics: &[Diagnostic]| {
            let mut diagnostics = diagnostics.to_vec();
            place(&text, &loaded.task_starts, &mut diagnostics);
            diagnostics.into_iter().map(|d| (d.line, d.column)).collect::<Vec<_>>()
        };
        // Each placed where it is placed among a thousand (below the thresholds of every second core).
        let alone: Vec<_> = diagnostics.chunks(1000).flat_map(placed).collect();
        let (line, column) = crate::span::line_column_at(&text, text.find("\"t2999\"").unwrap());
        assert_eq!(alone[0], (Some(line), Some(column)), "the last task's id");
        assert_eq!(alone[2], (None, None), "no such key");
        assert_eq!(placed(&diagnostics), alone);
        assert_eq!(crate::threads::refused(|| placed(&diagnostics)), alone);
    }
}
