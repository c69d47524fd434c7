//! Checking and formatting blueprints.

use super::*;

use orrery_blueprint::{
    blueprints_in, check_files, check_in_folder, check_sources, load, save, FileReport, Severity, Source,
};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ValidateArguments {
    /// Blueprint files, checked together (composites find their inner blueprints among them).
    #[serde(default)]
    pub files: Vec<PathBuf>,
    /// Or one blueprint as text (antikythera JSON or a COMPAS envelope).
    pub text: Option<String>,
    /// With `text`: the file it is (or will be) saved as. The other blueprints of its folder
    /// are then the candidates for its composites, as when it runs.
    pub file: Option<PathBuf>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FormatArguments {
    /// A blueprint as text.
    pub text: String,
    /// The encoding to write: `antikythera` (plain JSON) or `compas` (the envelope); by
    /// default the text's own.
    pub to: Option<TextEncoding>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Formatted {
    /// The canonical text: byte-identical for equal blueprints.
    pub text: String,
    /// Whether it differs from the text given.
    pub changed: bool,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExportArguments {
    /// A blueprint as text (antikythera JSON or a COMPAS envelope).
    pub text: String,
    /// What to write: `antikythera` (plain JSON, the default) or `compas` (the envelope).
    #[serde(default)]
    pub to: TextEncoding,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TextEncoding {
    #[default]
    Antikythera,
    Compas,
}

impl TextEncoding {
    fn encoding(self) -> orrery_blueprint::Encoding {
        match self {
            TextEncoding::Antikythera => orrery_blueprint::Encoding::Plain,
            TextEncoding::Compas => orrery_blueprint::Encoding::Compas,
        }
    }

    fn of(encoding: orrery_blueprint::Encoding) -> TextEncoding {
        match encoding {
            orrery_blueprint::Encoding::Plain => TextEncoding::Antikythera,
            orrery_blueprint::Encoding::Compas => TextEncoding::Compas,
        }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EncodingArguments {
    /// A blueprint as text, loadable or not.
    pub text: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct TextEncodingOf {
    /// `compas` for a COMPAS envelope (an object with `dtype` and `data`), else `antikythera`.
    pub encoding: TextEncoding,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Exported {
    /// The canonical text, for an antikythera server.
    pub text: String,
    /// Its warnings (an export is refused on any error).
    pub diagnostics: Vec<orrery_blueprint::Diagnostic>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskNamesArguments {
    /// A blueprint as text (antikythera JSON or a COMPAS envelope).
    pub text: String,
    pub task_id: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BlueprintText {
    /// A blueprint as text (antikythera JSON or a COMPAS envelope).
    pub text: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScopeCheckArguments {
    /// A blueprint as text (antikythera JSON or a COMPAS envelope).
    pub text: String,
    /// The tasks the new scope should hold, by id.
    pub tasks: Vec<String>,
}

/// Whether some tasks can become one scope.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum ScopeCheck {
    /// They make one scope: `start` opens it, `end` closes it (the same task for one task).
    Fits { start: String, end: String },
    /// They make none, for this reason (in words the user acts on).
    Refused { reason: String },
}

/// One scope of a blueprint, as an editor draws and edits it.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Scope {
    /// The task that opens it (the one with `scope_start`).
    pub start: String,
    /// The task whose `scope_end` names the start; null when no task closes it (validation
    /// says why).
    pub end: Option<String>,
    /// The `name` of its `scope_start`, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// What it does when its end succeeds: retry wins over while, and a scope with neither
    /// policy is a skip scope.
    pub policy: ScopePolicyKind,
    /// A retry scope: how many times it runs again after its first run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retries: Option<u64>,
    /// A retry scope: the constant wait between its runs, in milliseconds, when it declares one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backoff_ms: Option<u64>,
    /// A while scope: the condition that runs it again. A skip scope: the start task's own
    /// condition, whose falsity skips the whole scope (absent when the start has none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
    /// A while scope: how many runs it may make in all, when it declares a bound.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_iterations: Option<u64>,
    /// Its tasks, start and end included, in blueprint order: those reachable forward from the
    /// start and backward from the end. Just the start when no task closes the scope or its end
    /// does not depend on its start (the reference counts no members then), so that an editor
    /// can still show it where it begins.
    pub members: Vec<String>,
    /// The start of the innermost scope that holds this one, when one does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// How many scopes hold it: 0 for a scope at the top level.
    pub depth: usize,
}

/// The policy of a scope, after the reference's precedence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ScopePolicyKind {
    Skip,
    Retry,
    While,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FolderArguments {
    pub folder: PathBuf,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct BlueprintFile {
    pub file: PathBuf,
    pub blueprint_id: String,
    pub name: String,
    pub version: String,
    /// Its tasks' count.
    pub tasks: usize,
}

/// A blueprint given as text, loaded; one that does not load is `invalid_blueprint`.
pub(crate) fn loaded(text: &str) -> Result<orrery_blueprint::Loaded, Failure> {
    load(text).map_err(|e| Failure::new(FailureCode::InvalidBlueprint, e.to_string()))
}

/// Every scope of a blueprint, in the order of the tasks that open them: the closed ones with
/// the members the core derives, and the unclosed ones with their start alone.
pub(crate) fn scopes_of(bp: &orrery_blueprint::Blueprint) -> Vec<Scope> {
    use orrery_blueprint::{scope, ScopePolicy};
    let spans = scope::scopes(bp);
    let closed: HashMap<&str, &scope::ScopeSpan> = spans.iter().map(|s| (bp.tasks[s.start].id.as_str(), s)).collect();
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for t in &bp.tasks {
        let Some(start) = &t.scope_start else { continue };
        // A duplicated id opens one scope, as the core counts it.
        if !seen.insert(t.id.as_str()) {
            continue;
        }
        let span = closed.get(t.id.as_str()).copied();
        let members = match span {
            Some(s) if !s.members.is_empty() => s.members.iter().map(|&m| bp.tasks[m].id.to_string()).collect(),
            _ => vec![t.id.to_string()],
        };
        let mut scope = Scope {
            start: t.id.to_string(),
            end: span.map(|s| bp.tasks[s.end].id.to_string()),
            name: start.name.clone(),
            policy: ScopePolicyKind::Skip,
            retries: None,
            backoff_ms: None,
            condition: None,
            max_iterations: None,
            members,
            parent: None,
            depth: 0,
        };
        match start.policy() {
            ScopePolicy::Skip => {
                scope.condition = t.effective_condition().map(|(c, _)| c.to_string()).filter(|c| !c.is_empty());
            }
            ScopePolicy::Retry(r) => {
                scope.policy = ScopePolicyKind::Retry;
                scope.retries = Some(r.retries);
                scope.backoff_ms = r.backoff.as_ref().and_then(|b| b.constant_ms);
            }
            ScopePolicy::While(w) => {
                scope.policy = ScopePolicyKind::While;
                scope.condition = Some(w.condition.clone());
                scope.max_iterations = w.max_iterations;
            }
        }
        out.push(scope);
    }
    nest(&mut out);
    out
}

/// Sets each scope's parent and depth. Taken from the largest scope down, each task remembers
/// the smallest scope seen so far that holds it, so the owner of a scope's start when the scope
/// comes up is the innermost scope around it. Scopes that interlace (which validation refuses)
/// still get one parent each: the smallest earlier one that holds their start.
fn nest(scopes: &mut [Scope]) {
    let mut order: Vec<usize> = (0..scopes.len()).collect();
    // On a tie the earlier start counts as the outer scope, for an answer that does not depend
    // on the sort.
    order.sort_by_key(|&s| (std::cmp::Reverse(scopes[s].members.len()), s));
    let mut owner: HashMap<String, usize> = HashMap::new();
    for s in order {
        if let Some(&p) = owner.get(&scopes[s].start) {
            scopes[s].parent = Some(scopes[p].start.clone());
            scopes[s].depth = scopes[p].depth + 1;
        }
        for m in &scopes[s].members {
            owner.insert(m.clone(), s);
        }
    }
}

/// The canonical text of a blueprint given as text, in encoding `to` (default: its own);
/// refused when loading noted an error (Python-only JSON, say), which a rewrite would lose.
pub(crate) fn canonical(text: &str, to: Option<TextEncoding>) -> Result<String, Failure> {
    let loaded = loaded(text)?;
    if let Some(note) = loaded.notes.iter().find(|d| d.severity == Severity::Error) {
        return Err(Failure::new(FailureCode::InvalidBlueprint, format!("it cannot be rewritten: {}", note.message)));
    }
    Ok(save::to_string(&loaded.blueprint, to.map_or(loaded.encoding, TextEncoding::encoding)))
}

/// The report on a blueprint given as text and already loaded.
pub(crate) fn report_of(text: String, loaded: orrery_blueprint::Loaded) -> FileReport {
    check_sources(&[Source::new(PathBuf::from("blueprint.json"), text, Ok(loaded))]).swap_remove(0)
}

pub(crate) fn register(jobs: &mut Vec<Job>) {
    jobs.push(job(
        "validate_blueprint",
        "Checks blueprints: every diagnostic with its stable code, task, JSON path, line and column, \
         Orrery's verdict (`valid`) and the reference server's (`server_accepts`).",
        |api: Api, args: ValidateArguments| async move {
            api.blocking(move |_| match (args.files.is_empty(), args.text, args.file) {
                (false, None, None) => Ok(check_files(&args.files)),
                (true, Some(text), None) => {
                    let loaded = load(&text).map_err(|e| e.diagnostics);
                    Ok(check_sources(&[Source::new(PathBuf::from("blueprint.json"), text, loaded)]))
                }
                (true, Some(text), Some(file)) => check_in_folder(&file, text).map(|r| vec![r]).map_err(|e| {
                    let folder = file.parent().unwrap_or(Path::new(".")).display().to_string();
                    Failure::new(FailureCode::Io, format!("cannot read the blueprints of {folder}: {e}"))
                }),
                _ => Err(Failure::new(
                    FailureCode::InvalidArgument,
                    "give either `files`, or `text` (and perhaps its `file`)",
                )),
            })
            .await
            .map(|reports: Vec<FileReport>| reports)
        },
    ));
    jobs.push(job(
        "format_blueprint",
        "The canonical text of a blueprint (the key order and layout `orrery fmt` writes), in its own \
         encoding or the one asked for (an editor edits a COMPAS envelope as plain JSON).",
        |_api, args: FormatArguments| async move {
            let text = canonical(&args.text, args.to)?;
            Ok(Formatted { changed: text != args.text, text })
        },
    ));
    jobs.push(job(
        "export_blueprint",
        "The text to hand an antikythera server (plain JSON or the COMPAS envelope), refused with its \
         errors when the server would refuse it or Orrery finds errors in it.",
        |api: Api, args: ExportArguments| async move {
            api.blocking(move |_| {
                let loaded = loaded(&args.text)?;
                let report = report_of(args.text, loaded.clone());
                if !report.valid || !report.server_accepts {
                    let why = if report.server_accepts {
                        "Orrery finds errors in it"
                    } else {
                        "an antikythera server would refuse it"
                    };
                    let errors: Vec<String> =
                        report.diagnostics.iter().filter(|d| d.is_error()).map(ToString::to_string).collect();
                    return Err(Failure::new(
                        FailureCode::InvalidBlueprint,
                        format!("not exported: {why}: {}", errors.join("; ")),
                    ));
                }
                Ok(Exported {
                    text: save::to_string(&loaded.blueprint, args.to.encoding()),
                    diagnostics: report.diagnostics,
                })
            })
            .await
        },
    ));
    jobs.push(job(
        "blueprint_encoding",
        "For an editor: which encoding a text is in, as loading decides it, whether or not the \
         blueprint in it loads (an envelope is converted to plain JSON to be edited).",
        |_api, args: EncodingArguments| async move {
            Ok::<_, Failure>(TextEncodingOf {
                encoding: TextEncoding::of(orrery_blueprint::load::encoding_of(&args.text)),
            })
        },
    ));
    jobs.push(job(
        "blueprint_wiring",
        "For an editor: which output feeds which input, each input wired to the nearest writers of \
         the key it reads upstream through the dependencies (all of them on parallel branches).",
        |_api, args: BlueprintText| async move {
            let loaded = loaded(&args.text)?;
            Ok::<_, Failure>(orrery_blueprint::wiring::wiring(&loaded.blueprint))
        },
    ));
    jobs.push(job(
        "check_scope",
        "For an editor: whether some tasks can become one scope, holding exactly them as the core \
         derives members and nesting with the scopes already there, and which of them opens and \
         closes it; why not otherwise.",
        |_api, args: ScopeCheckArguments| async move {
            let loaded = loaded(&args.text)?;
            Ok::<_, Failure>(match orrery_blueprint::scope_proposal::propose(&loaded.blueprint, &args.tasks) {
                Ok(scope) => ScopeCheck::Fits { start: scope.start, end: scope.end },
                Err(reason) => ScopeCheck::Refused { reason },
            })
        },
    ));
    jobs.push(job(
        "task_names",
        "For an editor: the names one task's condition and inputs may read (what the blueprint's \
         outputs write, with their producers and whether one runs before the task; its own params \
         and inputs).",
        |_api, args: TaskNamesArguments| async move {
            let loaded = loaded(&args.text)?;
            orrery_blueprint::dataflow::task_names(&loaded.blueprint, &args.task_id).ok_or_else(|| {
                Failure::new(FailureCode::NotFound, format!("the blueprint has no task {:?}", args.task_id))
            })
        },
    ));
    jobs.push(job(
        "blueprint_scopes",
        "For an editor: the scopes of a blueprint, each with its policy, its members as the \
         reference derives them, and the scope that holds it; a scope that no task closes too.",
        |_api, args: BlueprintText| async move {
            let loaded = loaded(&args.text)?;
            Ok::<_, Failure>(scopes_of(&loaded.blueprint))
        },
    ));
    jobs.push(job(
        "list_blueprint_files",
        "The blueprint files of a folder (`*.json` that load), by path: what a composite may call \
         when the blueprint runs from that folder.",
        |api: Api, args: FolderArguments| async move {
            api.blocking(move |_| {
                let found = blueprints_in(&args.folder, None).map_err(|e| {
                    Failure::new(FailureCode::Io, format!("cannot read the folder {}: {e}", args.folder.display()))
                })?;
                Ok(found
                    .into_iter()
                    .filter_map(|s| {
                        let b = s.loaded.ok()?.blueprint;
                        Some(BlueprintFile {
                            file: s.path,
                            blueprint_id: b.id,
                            name: b.name,
                            version: b.version,
                            tasks: b.tasks.len(),
                        })
                    })
                    .collect::<Vec<_>>())
            })
            .await
        },
    ));
}
