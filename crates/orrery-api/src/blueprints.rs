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

#[derive(Debug, Default, Clone, Copy, Deserialize, JsonSchema)]
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
    load(text).map_err(|e| Failure::new("invalid_blueprint", e.to_string()))
}

/// The canonical text of a blueprint given as text, in encoding `to` (default: its own);
/// refused when loading noted an error (Python-only JSON, say), which a rewrite would lose.
pub(crate) fn canonical(text: &str, to: Option<TextEncoding>) -> Result<String, Failure> {
    let loaded = loaded(text)?;
    if let Some(note) = loaded.notes.iter().find(|d| d.severity == Severity::Error) {
        return Err(Failure::new("invalid_blueprint", format!("it cannot be rewritten: {}", note.message)));
    }
    Ok(save::to_string(&loaded.blueprint, to.map_or(loaded.encoding, TextEncoding::encoding)))
}

/// The report on a blueprint given as text and already loaded.
pub(crate) fn report_of(text: String, loaded: orrery_blueprint::Loaded) -> FileReport {
    check_sources(&[Source { path: PathBuf::from("blueprint.json"), text, loaded: Ok(loaded) }]).swap_remove(0)
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
                    Ok(check_sources(&[Source { path: PathBuf::from("blueprint.json"), text, loaded }]))
                }
                (true, Some(text), Some(file)) => check_in_folder(&file, text).map(|r| vec![r]).map_err(|e| {
                    let folder = file.parent().unwrap_or(Path::new(".")).display().to_string();
                    Failure::new("io", format!("cannot read the blueprints of {folder}: {e}"))
                }),
                _ => Err(Failure::new("invalid_argument", "give either `files`, or `text` (and perhaps its `file`)")),
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
                        "invalid_blueprint",
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
        "task_names",
        "For an editor: the names one task's condition and inputs may read (what the blueprint's \
         outputs write, with their producers and whether one runs before the task; its own params \
         and inputs).",
        |_api, args: TaskNamesArguments| async move {
            let loaded = loaded(&args.text)?;
            orrery_blueprint::dataflow::task_names(&loaded.blueprint, &args.task_id)
                .ok_or_else(|| Failure::new("not_found", format!("the blueprint has no task {:?}", args.task_id)))
        },
    ));
    jobs.push(job(
        "list_blueprint_files",
        "The blueprint files of a folder (`*.json` that load), by path: what a composite may call \
         when the blueprint runs from that folder.",
        |api: Api, args: FolderArguments| async move {
            api.blocking(move |_| {
                let found = blueprints_in(&args.folder, None).map_err(|e| {
                    Failure::new("io", format!("cannot read the folder {}: {e}", args.folder.display()))
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
