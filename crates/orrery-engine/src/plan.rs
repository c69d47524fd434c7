//! Flattening a session (docs/format.md §4): the root blueprint and every inner blueprint
//! its composites call become one graph whose nodes are `"{instance}.{task}"`. A composite C
//! with inner instance I gets two extra edges, `C -> I.start` (SS) and `I.end -> C` (FF).
//!
//! Dynamic composites expand once, here, into a chain `T_0 ... T_{n-1}` (FS), one per element:
//! `T_0` takes T's dependencies, tasks that depended on T depend on `T_{n-1}`, and each `T_i`
//! calls its own inner instance whose context is the element. The elements come from the
//! session parameter `elements`, an object keyed by the composite's node key
//! (`"{instance}.{task}"`) or, failing that, its bare task id; each element is an object with a
//! string `element_id` (and any other keys, all part of the context) or a bare string, which is
//! the `element_id`. Unlike the reference, an expansion over no elements keeps the order of
//! the graph: the tasks after T inherit T's own dependencies instead of losing them.
//!
//! Instance ids follow the reference (`{inner}_{task}`; `{inner}_{T_i}_{element_id[..8]}` for
//! dynamic ones) so that session data lines up with an antikythera server's; where the
//! reference would reuse an id (one inner blueprint reached twice through equally named
//! composites), Orrery appends `~2`, `~3`, ... instead of letting the instances collide.

use crate::data::element_of;
use crate::scheduler::{Plan, PlanNode};
use orrery_blueprint::validate::composite_target;
use orrery_blueprint::{
    model::CompactString, Blueprint, CompositeTarget, Dependency, DependencyType, Diagnostic, Library, Task,
    ValidBlueprint,
};
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet, VecDeque};

/// One blueprint as it runs in a session.
#[derive(Debug, Clone)]
pub struct Instance {
    pub id: String,
    pub blueprint_id: String,
    /// The instance and node that call it; `None` for the root.
    pub caller: Option<(usize, usize)>,
    /// What the dynamic element gives the inner namespace; empty for static instances.
    pub context: Map<String, Value>,
}

/// The flattened session graph with what each node runs.
#[derive(Debug, Clone)]
pub struct SessionPlan {
    pub graph: Plan,
    pub instances: Vec<Instance>,
    /// Per graph node: its instance and its task (expanded tasks are new tasks).
    pub tasks: Vec<(usize, Task)>,
}

impl SessionPlan {
    pub fn node(&self, key: &str) -> Option<usize> {
        self.graph.nodes.iter().position(|n| n.key == key)
    }

    /// The node a person names: its key `"{instance}.{task}"`, or a task id of the root instance.
    pub fn node_named(&self, name: &str) -> Option<usize> {
        self.node(name).or_else(|| self.node(&format!("{}.{name}", self.instances[0].id)))
    }

    /// Every node a name may mean: its key, else each node running a task with that id (in any
    /// instance).
    pub fn nodes_named(&self, name: &str) -> Vec<usize> {
        match self.node(name) {
            Some(n) => vec![n],
            None => (0..self.tasks.len()).filter(|&n| self.tasks[n].1.id == name).collect(),
        }
    }
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum PlanError {
    #[error("composite task '{node}' calls blueprint '{blueprint_id}', which is not available")]
    InnerBlueprintMissing { node: String, blueprint_id: String },
    #[error("inner blueprint '{blueprint_id}' (called by '{node}') is not valid: {}", first_message(.diagnostics))]
    InnerBlueprintInvalid { node: String, blueprint_id: String, diagnostics: Vec<Diagnostic> },
    #[error("composite task '{node}' has no usable 'blueprint' param: {message}")]
    CompositeParam { node: String, message: String },
    #[error("composite task '{node}' calls '{blueprint_id}' from inside itself ({chain}): it would expand forever")]
    Recursion { node: String, blueprint_id: String, chain: String },
    #[error("dynamic composite '{node}' has no elements: give the session parameter elements.{{\"{node}\" or its task id: [...]}}")]
    ElementsMissing { node: String },
    #[error("dynamic composite '{node}': element {index} must be a string or an object with a string 'element_id'")]
    ElementInvalid { node: String, index: usize },
}

fn first_message(diagnostics: &[Diagnostic]) -> String {
    diagnostics.iter().find(|d| d.is_error()).map_or_else(String::new, |d| format!("{} ({})", d.message, d.code))
}

/// Flattens `root` and everything it calls. Inner blueprints are looked up in `library` by id
/// and must themselves be valid.
pub fn build(
    root: &ValidBlueprint,
    library: &Library<'_>,
    params: &Map<String, Value>,
) -> Result<SessionPlan, PlanError> {
    let mut builder = Builder {
        instances: Vec::new(),
        tasks: Vec::new(),
        keys: HashMap::new(),
        predecessors: Vec::new(),
        taken: HashSet::new(),
    };
    let mut queue = VecDeque::new();
    builder.taken.insert(root.blueprint().id.clone());
    builder.instances.push(Instance {
        id: root.blueprint().id.clone(),
        blueprint_id: root.blueprint().id.clone(),
        caller: None,
        context: Map::new(),
    });
    queue.push_back((0usize, root.blueprint().clone()));
    let elements = params.get("elements").and_then(Value::as_object);
    while let Some((instance, blueprint)) = queue.pop_front() {
        let instance_id = builder.instances[instance].id.clone();
        let tasks = expand_dynamic(&instance_id, blueprint.tasks, elements)?;
        let first = builder.tasks.len();
        for task in &tasks {
            let key = format!("{instance_id}.{}", task.id);
            builder.keys.insert(key, builder.tasks.len());
            builder.tasks.push((instance, task.clone()));
            builder.predecessors.push(Vec::new());
        }
        for (offset, task) in tasks.iter().enumerate() {
            let node = first + offset;
            for d in &task.depends_on {
                let from = builder.keys[&format!("{instance_id}.{}", d.id)];
                builder.predecessors[node].push((from, d.dep_type));
            }
            if task.task_type.is_composite() {
                let (inner_instance, inner) = builder.call(library, instance, node, task)?;
                queue.push_back((inner_instance, inner));
            }
        }
    }
    builder.wire_composites();
    let graph = Plan {
        nodes: builder
            .tasks
            .iter()
            .zip(builder.predecessors)
            .map(|((instance, task), predecessors)| PlanNode {
                key: format!("{}.{}", builder.instances[*instance].id, task.id),
                predecessors,
            })
            .collect(),
    };
    Ok(SessionPlan { graph, instances: builder.instances, tasks: builder.tasks })
}

struct Builder {
    instances: Vec<Instance>,
    tasks: Vec<(usize, Task)>,
    keys: HashMap<String, usize>,
    predecessors: Vec<Vec<(usize, DependencyType)>>,
    taken: HashSet<String>,
}

impl Builder {
    fn key(&self, node: usize) -> String {
        let (instance, task) = &self.tasks[node];
        format!("{}.{}", self.instances[*instance].id, task.id)
    }

    /// Creates the inner instance a composite node calls.
    fn call(
        &mut self,
        library: &Library<'_>,
        instance: usize,
        node: usize,
        task: &Task,
    ) -> Result<(usize, Blueprint), PlanError> {
        let key = self.key(node);
        let target = composite_target(task.param_value("blueprint"))
            .map_err(|(_, message)| PlanError::CompositeParam { node: key.clone(), message })?;
        let blueprint_id = target.blueprint_id().to_string();
        let chain = self.callers(instance);
        if chain.contains(&blueprint_id) {
            let mut chain: Vec<&str> = chain.iter().rev().map(String::as_str).collect();
            chain.push(&blueprint_id);
            return Err(PlanError::Recursion {
                node: key,
                blueprint_id: blueprint_id.clone(),
                chain: chain.join(" -> "),
            });
        }
        let inner = library.get(&blueprint_id).ok_or_else(|| PlanError::InnerBlueprintMissing {
            node: key.clone(),
            blueprint_id: blueprint_id.clone(),
        })?;
        let inner = ValidBlueprint::new(inner.clone(), library)
            .map_err(|diagnostics| PlanError::InnerBlueprintInvalid {
                node: key.clone(),
                blueprint_id: blueprint_id.clone(),
                diagnostics,
            })?
            .into_blueprint();
        let (base, context) = match (&target, element_of(task)) {
            (CompositeTarget::Dynamic { .. }, Some(element)) => {
                let element_id = element.get("element_id").and_then(Value::as_str).unwrap_or_default();
                let short: String = element_id.chars().take(8).collect();
                (format!("{blueprint_id}_{}_{short}", task.id), element.clone())
            }
            _ => (format!("{blueprint_id}_{}", task.id), Map::new()),
        };
        let mut id = base.clone();
        let mut n = 1;
        while !self.taken.insert(id.clone()) {
            n += 1;
            id = format!("{base}~{n}");
        }
        self.instances.push(Instance { id, blueprint_id, caller: Some((instance, node)), context });
        Ok((self.instances.len() - 1, inner))
    }

    /// Blueprint ids from `instance` up to the root.
    fn callers(&self, mut instance: usize) -> Vec<String> {
        let mut out = vec![self.instances[instance].blueprint_id.clone()];
        while let Some((caller, _)) = self.instances[instance].caller {
            out.push(self.instances[caller].blueprint_id.clone());
            instance = caller;
        }
        out
    }

    /// `C -> I.start` (SS) and `I.end -> C` (FF) for every composite C calling instance I.
    fn wire_composites(&mut self) {
        for (i, inst) in self.instances.iter().enumerate() {
            let Some((_, composite)) = inst.caller else { continue };
            let ends: Vec<(usize, bool)> = self
                .tasks
                .iter()
                .enumerate()
                .filter(|(_, (instance, t))| *instance == i && (t.task_type.is_start() || t.task_type.is_end()))
                .map(|(node, (_, t))| (node, t.task_type.is_start()))
                .collect();
            for (node, is_start) in ends {
                if is_start {
                    self.predecessors[node].push((composite, DependencyType::SS));
                } else {
                    self.predecessors[composite].push((node, DependencyType::FF));
                }
            }
        }
    }
}

/// Replaces every dynamic composite of one instance by its chain of per-element tasks.
fn expand_dynamic(
    instance_id: &str,
    tasks: Vec<Task>,
    elements: Option<&Map<String, Value>>,
) -> Result<Vec<Task>, PlanError> {
    let mut out: Vec<Task> = Vec::with_capacity(tasks.len());
    // Task id -> the ids that replace it as a predecessor (its last expansion, or its own
    // dependencies when it expanded to nothing).
    let mut replaced: HashMap<CompactString, Vec<Dependency>> = HashMap::new();
    for task in tasks {
        let dynamic = task.task_type.is_composite()
            && matches!(composite_target(task.param_value("blueprint")), Ok(CompositeTarget::Dynamic { .. }));
        if !dynamic {
            out.push(task);
            continue;
        }
        let node = format!("{instance_id}.{}", task.id);
        let list = elements
            .and_then(|e| e.get(&node).or_else(|| e.get(task.id.as_str())))
            .and_then(Value::as_array)
            .ok_or_else(|| PlanError::ElementsMissing { node: node.clone() })?;
        let mut previous: Option<CompactString> = None;
        for (i, element) in list.iter().enumerate() {
            let element = match element {
                Value::String(id) => Map::from_iter([("element_id".to_string(), Value::String(id.clone()))]),
                Value::Object(m) if m.get("element_id").is_some_and(Value::is_string) => m.clone(),
                _ => return Err(PlanError::ElementInvalid { node, index: i }),
            };
            let mut t = task.clone();
            t.id = format!("{}_{i}", task.id).into();
            if let Some(desc) = &task.description {
                let element_id = element["element_id"].as_str().unwrap_or_default();
                t.description = Some(format!("{desc} - {element_id}"));
            }
            if let Some(p) = t.params.iter_mut().find(|p| p.io.name == "blueprint") {
                if let Some(Value::Object(dynamic)) = p.io.value.as_mut().and_then(|v| v.get_mut("dynamic")) {
                    dynamic.insert("element".into(), Value::Object(element));
                    dynamic.insert("expanded".into(), Value::Bool(true));
                }
            }
            if let Some(prev) = &previous {
                t.depends_on =
                    vec![Dependency { id: prev.clone(), dep_type: DependencyType::FS, extra: Default::default() }];
            }
            previous = Some(t.id.clone());
            out.push(t);
        }
        let replacement = match previous {
            Some(last) => vec![Dependency { id: last, dep_type: DependencyType::FS, extra: Default::default() }],
            // Its own dependencies, themselves resolved if they expanded to nothing earlier.
            None => task
                .depends_on
                .iter()
                .flat_map(|d| replaced.get(&d.id).cloned().unwrap_or_else(|| vec![d.clone()]))
                .collect(),
        };
        replaced.insert(task.id.clone(), replacement);
    }
    if replaced.is_empty() {
        return Ok(out);
    }
    for t in &mut out {
        let mut deps = Vec::with_capacity(t.depends_on.len());
        for d in std::mem::take(&mut t.depends_on) {
            match replaced.get(&d.id) {
                // The dependency keeps its own type towards the replacement.
                Some(instead) => deps.extend(instead.iter().map(|r| Dependency {
                    id: r.id.clone(),
                    dep_type: d.dep_type,
                    extra: Default::default(),
                })),
                None => deps.push(d),
            }
        }
        t.depends_on = deps;
    }
    Ok(out)
}
