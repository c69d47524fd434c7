//! Judging a loaded blueprint. Every problem is reported at once. The reference's own rules
//! (`Blueprint.validate()`, the parser's choking points, `check_dataflow()`) are marked as
//! refused by the server; what Orrery adds (duplicates, cycles, wiring, composites,
//! portability, policy ranges) is reported beside them without claiming the server refuses it.

use crate::dataflow;
use crate::diagnostic::{quote_list, task_path, Code, Diagnostic};
use crate::graph::TaskGraph;
use crate::load::Encoding;
use crate::model::*;
use crate::scope::{self, ScopeSpan};
use crate::version::{self, VersionProblem};
use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};
use serde_json::Value;

/// Blueprints that composites may call, by id.
#[derive(Default, Clone)]
pub struct Library<'a> {
    by_id: HashMap<&'a str, &'a Blueprint>,
    by_file_name: HashMap<String, &'a Blueprint>,
}

impl<'a> Library<'a> {
    pub fn new() -> Self {
        Self::default()
    }
    /// Adds a blueprint; the first one with an id wins.
    pub fn add(&mut self, bp: &'a Blueprint) {
        self.by_id.entry(bp.id.as_str()).or_insert(bp);
    }
    /// Adds a blueprint read from a file, so that a composite naming the file instead of the
    /// id can be told what the id is.
    pub fn add_file(&mut self, bp: &'a Blueprint, file_name: &str) {
        self.add(bp);
        self.by_file_name.entry(file_name.to_string()).or_insert(bp);
    }
    pub fn get(&self, id: &str) -> Option<&'a Blueprint> {
        self.by_id.get(id).copied()
    }
    pub fn get_by_file_name(&self, name: &str) -> Option<&'a Blueprint> {
        self.by_file_name.get(name).copied()
    }
}

impl<'a> FromIterator<&'a Blueprint> for Library<'a> {
    fn from_iter<I: IntoIterator<Item = &'a Blueprint>>(iter: I) -> Self {
        let mut lib = Library::new();
        for bp in iter {
            lib.add(bp);
        }
        lib
    }
}

/// A blueprint in which validation found no error: the only form the engine accepts. Its
/// warnings travel with it, so a run can show them.
#[derive(Debug, Clone)]
pub struct ValidBlueprint {
    blueprint: Blueprint,
    warnings: Vec<Diagnostic>,
}

impl ValidBlueprint {
    /// Validates `blueprint` (composites resolve in `library`); every diagnostic when it has errors.
    pub fn new(blueprint: Blueprint, library: &Library<'_>) -> Result<ValidBlueprint, Vec<Diagnostic>> {
        let diagnostics = validate(&blueprint, library);
        if diagnostics.iter().any(Diagnostic::is_error) {
            return Err(diagnostics);
        }
        Ok(ValidBlueprint { blueprint, warnings: diagnostics })
    }
    pub fn blueprint(&self) -> &Blueprint {
        &self.blueprint
    }
    pub fn warnings(&self) -> &[Diagnostic] {
        &self.warnings
    }
    pub fn into_blueprint(self) -> Blueprint {
        self.blueprint
    }
}

/// Validates a blueprint file in the plain encoding; composites look their inner blueprints up
/// in `library`.
pub fn validate(bp: &Blueprint, library: &Library<'_>) -> Vec<Diagnostic> {
    validate_encoded(bp, Encoding::Plain, library)
}

/// Validates a blueprint as loaded from `encoding`: the reference's server checks envelopes
/// less (no version check, no `validate()` of an empty blueprint).
pub fn validate_encoded(bp: &Blueprint, encoding: Encoding, library: &Library<'_>) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let plain = encoding == Encoding::Plain;
    check_version(bp, &mut out);
    if !plain {
        out.iter_mut().for_each(|d| d.server_rejects = false);
    }
    let graph = TaskGraph::new(bp);
    let scopes = Scopes::new(bp, &graph);
    reference_rules(bp, &graph, &scopes, plain, &mut out);
    parser_rules(bp, &mut out);
    compas_objects(bp, &mut out);
    dataflow::check(bp, &graph, &mut out);
    identity_rules(bp, &graph, &mut out);
    nul_rules(bp, &mut out);
    composite_rules(bp, library, &mut out);
    crate::params::check(bp, &mut out);
    policy_rules(bp, &scopes, &mut out);
    out
}

fn check_version(bp: &Blueprint, out: &mut Vec<Diagnostic>) {
    match version::check(&bp.version) {
        Ok(()) => {}
        Err(VersionProblem::Invalid) => out.push(
            Diagnostic::error(
                Code::VersionInvalid,
                "$.version",
                format!("version '{}' is not a PEP 440 version", bp.version),
            )
            .rejected(),
        ),
        Err(VersionProblem::Unsupported { major }) => out.push(
            Diagnostic::error(
                Code::VersionUnsupported,
                "$.version",
                format!("unsupported blueprint version '{}': the major version must be 1, not {major}", bp.version),
            )
            .rejected(),
        ),
    }
}

/// The nine rules of the reference's `validate()`, which runs only when there are tasks.
fn reference_rules(bp: &Blueprint, graph: &TaskGraph<'_>, scopes: &Scopes, plain: bool, out: &mut Vec<Diagnostic>) {
    if bp.tasks.is_empty() {
        // Loading a plain file validates again, tasks or not; envelopes skip that.
        let mut d = Diagnostic::error(
            Code::EmptyBlueprint,
            "$.tasks",
            "the blueprint has no tasks: it needs exactly one system.start and one system.end task",
        );
        d.server_rejects = plain;
        out.push(d);
        return;
    }
    for (code, wanted, kind) in [(Code::StartCount, TaskType::START, "start"), (Code::EndCount, TaskType::END, "end")] {
        let found: Vec<usize> = (0..bp.tasks.len()).filter(|&i| bp.tasks[i].task_type.as_str() == wanted).collect();
        if found.len() != 1 {
            let mut message =
                format!("the blueprint must have exactly one {kind} task ({wanted}), found {}", found.len());
            if found.len() > 1 {
                let ids: Vec<String> = found.iter().map(|&i| format!("'{}'", bp.tasks[i].id)).collect();
                message.push_str(&format!(": {}", ids.join(", ")));
            }
            let d = match found.get(1) {
                Some(&i) => Diagnostic::error(code, format!("{}.type", task_path(i)), message).task(&bp.tasks[i].id),
                None => Diagnostic::error(code, "$.tasks", message),
            };
            out.push(d.rejected());
        }
    }
    for (i, t) in bp.tasks.iter().enumerate() {
        if !t.task_type.is_start() && t.depends_on.is_empty() {
            out.push(
                Diagnostic::error(
                    Code::OrphanTask,
                    task_path(i),
                    format!("task '{}' is an orphan: it has no dependencies and is not the start task", t.id),
                )
                .task(&t.id)
                .rejected(),
            );
        }
        for (j, d) in t.depends_on.iter().enumerate() {
            if !graph.node_of.contains_key(d.id.as_str()) {
                out.push(
                    Diagnostic::error(
                        Code::DanglingDependency,
                        format!("{}.depends_on[{j}].id", task_path(i)),
                        format!("task '{}' depends on '{}', which does not exist", t.id, d.id),
                    )
                    .task(&t.id)
                    .rejected(),
                );
            }
        }
    }
    scope_rules(bp, graph, scopes, out);
}

fn scope_rules(bp: &Blueprint, graph: &TaskGraph<'_>, scopes: &Scopes, out: &mut Vec<Diagnostic>) {
    let starts: HashSet<&str> = bp.tasks.iter().filter(|t| t.scope_start.is_some()).map(|t| t.id.as_str()).collect();
    let mut ends: HashMap<&str, &str> = HashMap::new();
    let mut broken = false;
    for (i, t) in bp.tasks.iter().enumerate() {
        let Some(end) = t.scope_end.as_deref().filter(|e| !e.is_empty()) else { continue };
        let path = format!("{}.scope_end", task_path(i));
        let problem = if !graph.node_of.contains_key(end) {
            Some((Code::ScopeEndMissingTask, format!("task '{}' closes scope '{end}', but no task has that id", t.id)))
        } else if !starts.contains(end) {
            Some((
                Code::ScopeEndNotAScope,
                format!("task '{}' has scope_end '{end}', but task '{end}' has no scope_start", t.id),
            ))
        } else if let Some(first) = ends.get(end) {
            Some((
                Code::ScopeEndDuplicate,
                format!("tasks '{first}' and '{}' both close scope '{end}': a scope has exactly one end", t.id),
            ))
        } else {
            ends.insert(end, t.id.as_str());
            None
        };
        if let Some((code, message)) = problem {
            broken = true;
            out.push(Diagnostic::error(code, path, message).task(&t.id).rejected());
        }
    }
    for (i, t) in bp.tasks.iter().enumerate() {
        if t.scope_start.is_some() && !ends.contains_key(t.id.as_str()) {
            broken = true;
            out.push(
                Diagnostic::error(
                    Code::ScopeUnclosed,
                    format!("{}.scope_start", task_path(i)),
                    format!("task '{}' opens a scope that no task closes (no task has scope_end '{}')", t.id, t.id),
                )
                .task(&t.id)
                .rejected(),
            );
        }
    }
    if !broken && starts.len() > 1 {
        if let Some(spans) = &scopes.spans {
            interlaced(bp, spans, out);
        }
    }
}

/// The scopes validation needs: each closed scope and whether it is empty, from the scope tree
/// (linear in the nesting depth); only when scopes are interlaced (or the graph has a cycle)
/// every scope's members too, to name the interlaced pairs.
struct Scopes {
    closed: Vec<ClosedScope>,
    /// Every scope's members; `None` when the scopes nest (nothing is interlaced).
    spans: Option<Vec<ScopeSpan>>,
}

struct ClosedScope {
    start: usize,
    end: usize,
    empty: bool,
}

impl Scopes {
    fn new(bp: &Blueprint, graph: &TaskGraph<'_>) -> Self {
        match scope::scope_tree(bp, graph) {
            Some(tree) => Scopes {
                closed: tree
                    .scopes
                    .iter()
                    .map(|s| ClosedScope { start: s.start, end: s.end, empty: s.size == 0 })
                    .collect(),
                spans: None,
            },
            None => {
                let spans = scope::scopes_in(bp, graph);
                Scopes {
                    closed: spans
                        .iter()
                        .map(|s| ClosedScope { start: s.start, end: s.end, empty: s.members.is_empty() })
                        .collect(),
                    spans: Some(spans),
                }
            }
        }
    }
}

/// Scopes must nest or be disjoint. Processing scopes from the largest down, each member
/// remembers the smallest scope seen so far that holds it; a laminar family gives every
/// member of a scope the same owner, and any disagreement names an interlaced pair.
fn interlaced(bp: &Blueprint, scopes: &[ScopeSpan], out: &mut Vec<Diagnostic>) {
    let mut order: Vec<usize> = (0..scopes.len()).collect();
    order.sort_by_key(|&s| std::cmp::Reverse(scopes[s].members.len()));
    let mut owner: Vec<Option<usize>> = vec![None; bp.tasks.len()];
    let mut reported = HashSet::new();
    for &s in &order {
        let members = &scopes[s].members;
        let first = members.first().and_then(|&m| owner[m]);
        for &m in members {
            if owner[m] != first {
                let other = owner[m].or(first).expect("two owners differ, so one exists");
                let (a, b) = (bp.tasks[scopes[other].start].id.as_str(), bp.tasks[scopes[s].start].id.as_str());
                if reported.insert((a, b)) {
                    out.push(
                        Diagnostic::error(
                            Code::ScopesInterlaced,
                            format!("{}.scope_start", task_path(scopes[s].start)),
                            format!("scopes '{a}' and '{b}' are interlaced: scopes must be nested or disjoint"),
                        )
                        .task(b)
                        .rejected(),
                    );
                }
            }
        }
        for &m in members {
            owner[m] = Some(s);
        }
    }
}

/// Keys the reference's parser passes as keyword arguments and dies on.
fn parser_rules(bp: &Blueprint, out: &mut Vec<Diagnostic>) {
    for (i, t) in bp.tasks.iter().enumerate() {
        for (list, j, io) in t.io_items() {
            for key in io.extra.keys().filter(|k| *k != "type") {
                out.push(
                    Diagnostic::error(
                        Code::IoUnknownKey,
                        format!("{}.{list}[{j}].{key}", task_path(i)),
                        format!(
                            "task '{}': {list} item '{}' has key '{key}', which the reference parser refuses (allowed: {})",
                            t.id,
                            io.name,
                            allowed_io_keys(list)
                        ),
                    )
                    .task(&t.id)
                    .rejected(),
                );
            }
        }
        for (j, d) in t.depends_on.iter().enumerate() {
            for key in d.extra.keys() {
                out.push(
                    Diagnostic::error(
                        Code::DependencyUnknownKey,
                        format!("{}.depends_on[{j}].{key}", task_path(i)),
                        format!(
                            "task '{}': the dependency on '{}' has key '{key}', which the reference parser refuses (allowed: id, type)",
                            t.id, d.id
                        ),
                    )
                    .task(&t.id)
                    .rejected(),
                );
            }
        }
    }
}

/// The reference decodes every object with a `dtype` key as a COMPAS object, wherever it is
/// (even in a param value); one that does not decode makes the upload fail. Objects of the
/// packages a server has (compas, antikythera) decode; anything else names a module the server
/// would have to import.
fn compas_objects(bp: &Blueprint, out: &mut Vec<Diagnostic>) {
    fn walk(v: &Value, path: &mut String, found: &mut Vec<(String, String)>) {
        match v {
            Value::Object(m) => {
                if let Some(dtype) = m.get("dtype") {
                    let decodes = dtype.as_str().is_some_and(|d| {
                        d.split_once('/').is_some_and(|(module, class)| {
                            !class.is_empty()
                                && (module == "compas"
                                    || module.starts_with("compas.")
                                    || module.starts_with("compas_")
                                    || module.starts_with("antikythera"))
                        })
                    }) && m.contains_key("data");
                    if !decodes {
                        found.push((path.clone(), dtype.to_string()));
                    }
                }
                for (k, x) in m {
                    let len = path.len();
                    path.push('.');
                    path.push_str(k);
                    walk(x, path, found);
                    path.truncate(len);
                }
            }
            Value::Array(items) => {
                for (i, x) in items.iter().enumerate() {
                    let len = path.len();
                    path.push_str(&format!("[{i}]"));
                    walk(x, path, found);
                    path.truncate(len);
                }
            }
            _ => {}
        }
    }
    let mut found = Vec::new();
    // An object that itself has a `dtype` key among the keys Orrery does not know.
    let own = |extra: &Extra,
               path: &dyn Fn() -> String,
               task: Option<&str>,
               found: &mut Vec<(String, String, Option<String>)>| {
        if let Some(dtype) = extra.get("dtype") {
            found.push((path(), dtype.to_string(), task.map(str::to_string)));
        }
    };
    own(&bp.extra, &|| "$".into(), None, &mut found);
    for (i, t) in bp.tasks.iter().enumerate() {
        own(&t.extra, &|| task_path(i), Some(&t.id), &mut found);
        for (j, d) in t.depends_on.iter().enumerate() {
            own(&d.extra, &|| format!("{}.depends_on[{j}]", task_path(i)), Some(&t.id), &mut found);
        }
    }
    fn has_dtype(v: &Value) -> bool {
        match v {
            Value::Object(m) => m.contains_key("dtype") || m.values().any(has_dtype),
            Value::Array(items) => items.iter().any(has_dtype),
            _ => false,
        }
    }
    let scan = |v: &Value,
                base: &dyn Fn() -> String,
                task: Option<&str>,
                found: &mut Vec<(String, String, Option<String>)>| {
        if !has_dtype(v) {
            return;
        }
        let mut hits = Vec::new();
        let mut path = base();
        walk(v, &mut path, &mut hits);
        found.extend(hits.into_iter().map(|(p, d)| (p, d, task.map(str::to_string))));
    };
    for (k, v) in &bp.extra {
        scan(v, &|| format!("$.{k}"), None, &mut found);
    }
    for (i, t) in bp.tasks.iter().enumerate() {
        for (k, v) in &t.extra {
            scan(v, &|| format!("{}.{k}", task_path(i)), Some(&t.id), &mut found);
        }
        for (list, j, io) in t.io_items() {
            if let Some(v) = &io.value {
                scan(v, &|| format!("{}.{list}[{j}].value", task_path(i)), Some(&t.id), &mut found);
            }
        }
    }
    for (path, dtype, task) in found {
        let mut d = Diagnostic::error(
            Code::CompasObject,
            path,
            format!("an object with \"dtype\": {dtype} is decoded by the reference as a COMPAS object, and this one does not decode (it needs \"dtype\": \"<compas or antikythera module>/<Class>\" and \"data\")"),
        )
        .rejected();
        d.task_id = task;
        out.push(d);
    }
}

fn allowed_io_keys(list: &str) -> &'static str {
    match list {
        "inputs" => "name, value, type_hint, description, get_from",
        "outputs" => "name, value, type_hint, description, set_to",
        _ => "name, value, type_hint, description",
    }
}

/// Duplicate ids, cycles, self-dependencies and repeated names: what the reference never checks.
fn identity_rules(bp: &Blueprint, graph: &TaskGraph<'_>, out: &mut Vec<Diagnostic>) {
    let mut first_of: HashMap<&str, usize> = HashMap::new();
    for (i, t) in bp.tasks.iter().enumerate() {
        if let Some(&first) = first_of.get(t.id.as_str()) {
            out.push(
                Diagnostic::error(
                    Code::DuplicateTaskId,
                    format!("{}.id", task_path(i)),
                    format!("task id '{}' is used again (first by task {first}): ids must be unique", t.id),
                )
                .task(&t.id),
            );
        } else {
            first_of.insert(&t.id, i);
        }
        if !t.task_type.as_str().contains('.')
            || t.task_type.as_str().starts_with('.')
            || t.task_type.as_str().ends_with('.')
        {
            out.push(
                Diagnostic::warning(
                    Code::TaskTypeFormat,
                    format!("{}.type", task_path(i)),
                    format!(
                        "task '{}' has type '{}', not of the form 'agent.tool': no agent will claim it",
                        t.id, t.task_type
                    ),
                )
                .task(&t.id),
            );
        }
        for (j, d) in t.depends_on.iter().enumerate() {
            if d.id == t.id {
                let path = format!("{}.depends_on[{j}]", task_path(i));
                out.push(
                    Diagnostic::error(Code::SelfDependency, path, format!("task '{}' depends on itself", t.id))
                        .task(&t.id),
                );
            }
        }
        for j in repeats(&t.depends_on, |d| &d.id) {
            let d = &t.depends_on[j];
            if d.id != t.id {
                out.push(
                    Diagnostic::warning(
                        Code::DuplicateDependency,
                        format!("{}.depends_on[{j}]", task_path(i)),
                        format!("task '{}' depends on '{}' more than once", t.id, d.id),
                    )
                    .task(&t.id),
                );
            }
        }
        repeated_names(out, i, t, "inputs", &t.inputs, |x| &x.io.name);
        repeated_names(out, i, t, "outputs", &t.outputs, |x| &x.io.name);
        repeated_names(out, i, t, "params", &t.params, |x| &x.io.name);
    }
    for cycle in graph.cycles() {
        if cycle.len() == 1 {
            continue; // a self-dependency, reported above
        }
        let ids: Vec<&str> = cycle.iter().map(|&n| bp.tasks[graph.task_of[n]].id.as_str()).collect();
        let first = graph.task_of[cycle[0]];
        out.push(
            Diagnostic::error(
                Code::Cycle,
                format!("{}.depends_on", task_path(first)),
                format!("tasks {} depend on each other in a cycle: none of them can ever start", quote_list(&ids)),
            )
            .task(ids[0]),
        );
    }
}

/// Ids and names with a NUL character ([`Code::NulInId`]): every string that names something
/// (the blueprint, a task, a scope, a dependency, an input, output or param and the session data
/// key it reads or writes). Orrery-only: the reference accepts them.
fn nul_rules(bp: &Blueprint, out: &mut Vec<Diagnostic>) {
    fn shown(text: &str) -> String {
        text.replace('\0', "\\0")
    }
    let mut report = |task: Option<&str>, path: String, what: String, text: &str| {
        if !text.contains('\0') {
            return;
        }
        let message = format!(
            "{what} '{}' contains a NUL character, which no file name or process argument can hold",
            shown(text)
        );
        let diagnostic = Diagnostic::error(Code::NulInId, path, message);
        out.push(match task {
            Some(task) => diagnostic.task(task),
            None => diagnostic,
        });
    };
    report(None, "$.id".into(), "the blueprint id".into(), &bp.id);
    for (i, t) in bp.tasks.iter().enumerate() {
        let task = Some(t.id.as_str());
        let at = task_path(i);
        report(task, format!("{at}.id"), "the task id".into(), &t.id);
        if let Some(name) = t.scope_start.as_ref().and_then(|s| s.name.as_deref()) {
            report(task, format!("{at}.scope_start.name"), format!("task '{}': the scope name", shown(&t.id)), name);
        }
        if let Some(end) = t.scope_end.as_deref() {
            report(task, format!("{at}.scope_end"), format!("task '{}': scope_end", shown(&t.id)), end);
        }
        for (j, d) in t.depends_on.iter().enumerate() {
            let what = format!("task '{}': the dependency id", shown(&t.id));
            report(task, format!("{at}.depends_on[{j}].id"), what, &d.id);
        }
        for (list, j, io) in t.io_items() {
            let what = format!("task '{}': the name of {list} item {j}", shown(&t.id));
            report(task, format!("{at}.{list}[{j}].name"), what, &io.name);
        }
        for (j, input) in t.inputs.iter().enumerate() {
            if let Some(key) = input.get_from.as_deref() {
                let what = format!("task '{}': get_from of input '{}'", shown(&t.id), shown(&input.io.name));
                report(task, format!("{at}.inputs[{j}].get_from"), what, key);
            }
        }
        for (j, output) in t.outputs.iter().enumerate() {
            if let Some(key) = output.set_to.as_deref() {
                let what = format!("task '{}': set_to of output '{}'", shown(&t.id), shown(&output.io.name));
                report(task, format!("{at}.outputs[{j}].set_to"), what, key);
            }
        }
    }
}

fn repeated_names<T>(
    out: &mut Vec<Diagnostic>,
    i: usize,
    t: &Task,
    list: &str,
    items: &[T],
    name: impl Fn(&T) -> &str,
) {
    for j in repeats(items, &name) {
        out.push(
            Diagnostic::warning(
                Code::DuplicateIoName,
                format!("{}.{list}[{j}].name", task_path(i)),
                format!("task '{}' declares {list} item '{}' twice; only the first is used", t.id, name(&items[j])),
            )
            .task(&t.id),
        );
    }
}

/// Positions of the items that repeat an earlier one. Lists are short, so a scan beats
/// hashing, until they are not.
fn repeats<T>(items: &[T], key: impl Fn(&T) -> &str) -> Vec<usize> {
    if items.len() <= 32 {
        return (0..items.len()).filter(|&j| items[..j].iter().any(|e| key(e) == key(&items[j]))).collect();
    }
    let mut seen = HashSet::new();
    (0..items.len()).filter(|&j| !seen.insert(key(&items[j]))).collect()
}

/// The `blueprint` param of composites, their targets, and `execution_mode` on any task.
fn composite_rules(bp: &Blueprint, library: &Library<'_>, out: &mut Vec<Diagnostic>) {
    for (i, t) in bp.tasks.iter().enumerate() {
        if let Some(j) = t.params.iter().position(|p| p.io.name == "execution_mode") {
            let value = t.params[j].io.value.as_ref();
            if value.and_then(Value::as_str).is_none_or(|m| ExecutionMode::parse(m).is_none()) {
                let shown = value.map_or_else(|| "nothing".to_string(), Value::to_string);
                out.push(
                    Diagnostic::error(
                        Code::ExecutionModeInvalid,
                        format!("{}.params[{j}].value", task_path(i)),
                        format!(
                            "task '{}': execution_mode must be \"EXCLUSIVE\" or \"COMPETITIVE\", found {shown}",
                            t.id
                        ),
                    )
                    .task(&t.id),
                );
            }
        }
        if !t.task_type.is_composite() {
            continue;
        }
        let Some(j) = t.params.iter().position(|p| p.io.name == "blueprint") else {
            out.push(
                Diagnostic::error(
                    Code::CompositeParam,
                    format!("{}.params", task_path(i)),
                    format!(
                        "composite task '{}' has no 'blueprint' param: give {{\"static\": \"<blueprint id>\"}} or {{\"dynamic\": {{\"blueprint_id\": ..., \"sequencer\": ...}}}}",
                        t.id
                    ),
                )
                .task(&t.id),
            );
            continue;
        };
        let path = format!("{}.params[{j}].value", task_path(i));
        match composite_target(t.params[j].io.value.as_ref()) {
            Err((sub, message)) => out.push(
                Diagnostic::error(
                    Code::CompositeParam,
                    format!("{path}{sub}"),
                    format!("composite task '{}': {message}", t.id),
                )
                .task(&t.id),
            ),
            Ok(target) => {
                let id = target.blueprint_id();
                if id == bp.id {
                    out.push(
                        Diagnostic::error(
                            Code::CompositeRecursion,
                            path,
                            format!(
                                "composite task '{}' calls its own blueprint '{id}': it would expand forever",
                                t.id
                            ),
                        )
                        .task(&t.id),
                    );
                } else if let Some(inner) = library.get(id) {
                    if let Some(chain) = calls_back(inner, &bp.id, library) {
                        out.push(
                            Diagnostic::error(
                                Code::CompositeRecursion,
                                path,
                                format!(
                                    "composite task '{}' calls '{id}', which calls back into '{}' ({} -> {chain})",
                                    t.id, bp.id, bp.id
                                ),
                            )
                            .task(&t.id),
                        );
                    }
                } else {
                    let message = match library.get_by_file_name(id) {
                        Some(named) => format!(
                            "composite task '{}' names blueprint '{id}' by file name, but blueprints are looked up by id: that file's id is '{}'",
                            t.id, named.id
                        ),
                        None if id.ends_with(".json") => format!(
                            "composite task '{}' calls blueprint '{id}', which looks like a file name: blueprints are looked up by their id",
                            t.id
                        ),
                        None => format!(
                            "composite task '{}' calls blueprint '{id}', which is not among the blueprints given: the server must already have it",
                            t.id
                        ),
                    };
                    out.push(Diagnostic::warning(Code::CompositeTargetMissing, path, message).task(&t.id));
                }
            }
        }
    }
}

/// Reads a composite's `blueprint` param; on failure, the sub-path and what is wrong.
pub fn composite_target(value: Option<&Value>) -> Result<CompositeTarget, (String, String)> {
    let shape = "expected {\"static\": \"<blueprint id>\"} or {\"dynamic\": {\"blueprint_id\": \"<id>\", \"sequencer\": \"basic_sequencer\" | \"basic_stock_sequencer\" | \"basic_element_sequencer\"}}";
    let Some(Value::Object(map)) = value else {
        return Err((String::new(), format!("the 'blueprint' param must be an object: {shape}")));
    };
    match (map.get("static"), map.get("dynamic")) {
        (Some(Value::String(id)), None) if !id.is_empty() => Ok(CompositeTarget::Static { blueprint_id: id.clone() }),
        (Some(_), None) => Err((".static".into(), "'static' must name a blueprint id (a non-empty string)".into())),
        (None, Some(Value::Object(d))) => {
            let blueprint_id = match (d.get("blueprint_id"), d.get("blueprint")) {
                (Some(Value::String(id)), _) if !id.is_empty() => id.clone(),
                (None, Some(_)) => {
                    return Err((
                        ".dynamic.blueprint".into(),
                        "'dynamic' names its blueprint with 'blueprint', but the reference reads 'blueprint_id' (the server fails at session start)".into(),
                    ))
                }
                _ => return Err((".dynamic.blueprint_id".into(), "'dynamic' must name a blueprint in 'blueprint_id'".into())),
            };
            let sequencer = match d.get("sequencer") {
                Some(Value::String(s)) => Sequencer::parse(s),
                _ => None,
            };
            match sequencer {
                Some(sequencer) => Ok(CompositeTarget::Dynamic { blueprint_id, sequencer }),
                None => Err((
                    ".dynamic.sequencer".into(),
                    "'sequencer' must be \"basic_sequencer\", \"basic_stock_sequencer\" or \"basic_element_sequencer\""
                        .into(),
                )),
            }
        }
        (None, Some(_)) => Err((".dynamic".into(), format!("'dynamic' must be an object: {shape}"))),
        _ => Err((String::new(), shape.into())),
    }
}

/// The ids of the blueprints `bp`'s composites call (static or dynamic), in task order; a
/// composite whose `blueprint` param is malformed calls none.
pub fn calls(bp: &Blueprint) -> Vec<String> {
    bp.tasks
        .iter()
        .filter(|t| t.task_type.is_composite())
        .filter_map(|t| composite_target(t.param_value("blueprint")).ok())
        .map(|target| target.blueprint_id().to_string())
        .collect()
}

/// Whether `from` (transitively) calls blueprint `target`; the chain of ids when it does.
fn calls_back(from: &Blueprint, target: &str, library: &Library<'_>) -> Option<String> {
    let mut stack = vec![(from, vec![from.id.clone()])];
    let mut visited = HashSet::new();
    while let Some((bp, chain)) = stack.pop() {
        if !visited.insert(bp.id.clone()) {
            continue;
        }
        for id in calls(bp) {
            let mut next = chain.clone();
            next.push(id.clone());
            if id == target {
                return Some(next.join(" -> "));
            }
            if let Some(inner) = library.get(&id) {
                stack.push((inner, next));
            }
        }
    }
    None
}

/// Scope policies and dependency types that run differently (or not at all) on an antikythera
/// server, and policy values beyond what anyone means.
fn policy_rules(bp: &Blueprint, scopes: &Scopes, out: &mut Vec<Diagnostic>) {
    const MAX_RETRIES: u64 = 1_000;
    const MAX_ITERATIONS: u64 = 100_000;
    const MAX_BACKOFF_MS: u64 = 3_600_000;
    for (i, t) in bp.tasks.iter().enumerate() {
        for (j, d) in t.depends_on.iter().enumerate() {
            if d.dep_type == DependencyType::SF {
                out.push(
                    Diagnostic::warning(
                        Code::NotPortable,
                        format!("{}.depends_on[{j}].type", task_path(i)),
                        format!(
                            "task '{}' has a start-to-finish (SF) dependency on '{}': Orrery runs it, an antikythera server ignores it",
                            t.id, d.id
                        ),
                    )
                    .task(&t.id),
                );
            }
        }
        let Some(scope) = &t.scope_start else { continue };
        let path = format!("{}.scope_start", task_path(i));
        if let Some(r) = &scope.retry_policy {
            if r.retries > MAX_RETRIES {
                out.push(
                    Diagnostic::warning(
                        Code::PolicyRange,
                        format!("{path}.retry_policy.retries"),
                        format!(
                            "scope '{}' repeats {} times: more than {MAX_RETRIES} is almost certainly a mistake",
                            t.id, r.retries
                        ),
                    )
                    .task(&t.id),
                );
            }
            if let Some(ms) = r.backoff.as_ref().and_then(|b| b.constant_ms) {
                if ms > MAX_BACKOFF_MS {
                    out.push(
                        Diagnostic::warning(
                            Code::PolicyRange,
                            format!("{path}.retry_policy.backoff.constant_ms"),
                            format!("scope '{}' waits {ms} ms between runs: more than an hour", t.id),
                        )
                        .task(&t.id),
                    );
                }
                out.push(
                    Diagnostic::warning(
                        Code::NotPortable,
                        format!("{path}.retry_policy.backoff"),
                        format!("scope '{}' declares a backoff: Orrery waits, an antikythera server does not (not enforced there)", t.id),
                    )
                    .task(&t.id),
                );
            }
            if scope.while_policy.is_some() {
                out.push(
                    Diagnostic::warning(
                        Code::NotPortable,
                        format!("{path}.while_policy"),
                        format!("scope '{}' declares both a retry and a while policy: the retry policy wins and the while policy is ignored", t.id),
                    )
                    .task(&t.id),
                );
            }
        }
        if let Some(w) = &scope.while_policy {
            match w.max_iterations {
                None => out.push(
                    Diagnostic::warning(
                        Code::PolicyRange,
                        format!("{path}.while_policy"),
                        format!("while scope '{}' has no max_iterations: it loops forever if its condition stays true", t.id),
                    )
                    .task(&t.id),
                ),
                Some(n) if n > MAX_ITERATIONS => out.push(
                    Diagnostic::warning(
                        Code::PolicyRange,
                        format!("{path}.while_policy.max_iterations"),
                        format!("while scope '{}' allows {n} iterations: more than {MAX_ITERATIONS} is almost certainly a mistake", t.id),
                    )
                    .task(&t.id),
                ),
                Some(_) => {}
            }
        }
    }
    for s in &scopes.closed {
        if s.empty {
            let t = &bp.tasks[s.start];
            out.push(
                Diagnostic::warning(
                    Code::ScopeEndUnreachable,
                    format!("{}.scope_start", task_path(s.start)),
                    format!(
                        "scope '{}' is closed by '{}', which does not depend on it: the scope has no tasks",
                        t.id, bp.tasks[s.end].id
                    ),
                )
                .task(&t.id),
            );
        }
    }
}

#[cfg(test)]
mod nul_tests {
    use super::*;
    use crate::diagnostic::server_accepts;

    fn blueprint(id: &str, task: &str, scope_name: &str, input: &str, set_to: &str) -> Blueprint {
        let text = serde_json::json!({
            "id": id, "name": "N", "version": "1.0",
            "tasks": [
                {"id": "start", "type": "system.start"},
                {"id": task, "type": "shell.run", "depends_on": [{"id": "start"}],
                 "scope_start": {"name": scope_name},
                 "inputs": [{"name": input}],
                 "outputs": [{"name": "o", "set_to": set_to}],
                 "params": [{"name": "command", "value": "true"}]},
                {"id": "close", "type": "shell.run", "depends_on": [{"id": task}], "scope_end": task,
                 "params": [{"name": "command", "value": "true"}]},
                {"id": "end", "type": "system.end", "depends_on": [{"id": "close"}]}
            ]
        })
        .to_string();
        crate::load(&text).expect("loads").blueprint
    }

    fn nul_paths(bp: &Blueprint) -> Vec<(String, Option<String>)> {
        validate(bp, &Library::new())
            .into_iter()
            .filter(|d| d.code == Code::NulInId)
            .map(|d| {
                assert!(d.is_error(), "{d}");
                assert!(!d.server_rejects, "the reference accepts any string: {d}");
                assert!(d.message.contains("NUL"), "{d}");
                (d.path, d.task_id)
            })
            .collect()
    }

    #[test]
    fn a_nul_in_any_id_or_name_is_an_error_naming_its_path() {
        let clean = blueprint("b", "work", "loop", "x", "y");
        assert!(nul_paths(&clean).is_empty());
        assert!(crate::diagnostic::is_valid(&validate(&clean, &Library::new())));

        let bp = blueprint("b\0", "w\0rk", "lo\0op", "x\0", "y\0");
        let paths = nul_paths(&bp);
        let task = Some("w\0rk".to_string());
        for expected in [
            ("$.id".to_string(), None),
            ("$.tasks[1].id".to_string(), task.clone()),
            ("$.tasks[1].scope_start.name".to_string(), task.clone()),
            ("$.tasks[1].inputs[0].name".to_string(), task.clone()),
            ("$.tasks[1].outputs[0].set_to".to_string(), task.clone()),
            ("$.tasks[2].depends_on[0].id".to_string(), Some("close".to_string())),
            ("$.tasks[2].scope_end".to_string(), Some("close".to_string())),
        ] {
            assert!(paths.contains(&expected), "{expected:?} not in {paths:?}");
        }
        let diagnostics = validate(&bp, &Library::new());
        assert!(!crate::diagnostic::is_valid(&diagnostics));
        assert!(server_accepts(&diagnostics), "NUL alone is an Orrery-only error");
        let message = &diagnostics.iter().find(|d| d.path == "$.tasks[1].id").unwrap().message;
        assert!(message.contains("'w\\0rk'"), "the NUL is shown escaped: {message}");
    }

    #[test]
    fn path_like_ids_are_left_to_the_engine_encoding() {
        let bp = blueprint(".", "/../../../tmp/x", "a/b", "../in", "..");
        assert!(nul_paths(&bp).is_empty());
    }
}
