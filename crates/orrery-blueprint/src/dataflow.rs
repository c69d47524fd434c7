//! Which names flow where. The reference's `check_dataflow()`: a condition may read the names
//! that outputs produce (`set_to or name`) plus its task's own param and input names; a while
//! condition only produced names; an unparsable condition is a problem too; the server refuses
//! a blueprint with any. Orrery adds: an input's `get_from` that no upstream task produces.

use crate::condition::{self, ConditionSyntaxError};
use crate::diagnostic::{quote_list, task_path, Code, Diagnostic};
use crate::graph::TaskGraph;
use crate::model::*;
use foldhash::{HashMap, HashMapExt, HashSet};
use std::collections::{BTreeSet, VecDeque};

/// The names a blueprint's outputs write to session data.
pub fn produced_names(bp: &Blueprint) -> HashSet<&str> {
    bp.tasks.iter().flat_map(|t| t.outputs.iter().map(TaskOutput::target_key)).collect()
}

/// A condition the reference's dataflow check examines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConditionSite<'a> {
    pub task_index: usize,
    pub kind: ConditionKind,
    pub expression: &'a str,
    /// Where a task's condition is declared (a while condition is always in its scope_start).
    pub source: ConditionSource,
}

impl ConditionSite<'_> {
    /// JSONPath of the expression.
    pub fn path(&self, bp: &Blueprint) -> String {
        let task = task_path(self.task_index);
        match (self.kind, self.source) {
            (ConditionKind::While, _) => format!("{task}.scope_start.while_policy.condition"),
            (ConditionKind::Condition, ConditionSource::Field) => format!("{task}.condition"),
            (ConditionKind::Condition, ConditionSource::Param) => {
                let j = bp.tasks[self.task_index].params.iter().position(|p| p.io.name == "condition").unwrap_or(0);
                format!("{task}.params[{j}].value")
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConditionKind {
    /// A task's skip condition: sees produced names and the task's params and inputs.
    Condition,
    /// A scope's while condition: sees produced names only.
    While,
}

impl ConditionKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Condition => "condition",
            Self::While => "while condition",
        }
    }
}

/// Every condition of a blueprint, in the order the reference examines them.
pub fn condition_sites(bp: &Blueprint) -> Vec<ConditionSite<'_>> {
    let mut out = Vec::new();
    for (i, t) in bp.tasks.iter().enumerate() {
        if let Some((expression, source)) = t.effective_condition() {
            out.push(ConditionSite { task_index: i, kind: ConditionKind::Condition, expression, source });
        }
        if let Some(expression) = t.while_condition() {
            out.push(ConditionSite {
                task_index: i,
                kind: ConditionKind::While,
                expression,
                source: ConditionSource::Field,
            });
        }
    }
    out
}

/// A blueprint's conditions with the names each distinct expression reads (or why it does not
/// parse): the part of the dataflow check that needs no graph, and most of its time on a large
/// blueprint, so validation makes it on a second core while the other rules run.
pub(crate) struct ParsedConditions<'a> {
    sites: Vec<ConditionSite<'a>>,
    names: HashMap<&'a str, Result<BTreeSet<String>, ConditionSyntaxError>>,
}

/// Below this many conditions, parsing them costs less than starting a thread.
pub(crate) const PARSED_APART_FROM: usize = 256;

impl<'a> ParsedConditions<'a> {
    pub(crate) fn of(bp: &'a Blueprint) -> Self {
        let sites = condition_sites(bp);
        let mut names = HashMap::new();
        for s in &sites {
            names.entry(s.expression).or_insert_with(|| condition::free_names(s.expression));
        }
        Self { sites, names }
    }

    /// Whether a blueprint has enough conditions to parse them on a thread of their own.
    pub(crate) fn worth_a_thread(bp: &Blueprint) -> bool {
        bp.tasks
            .iter()
            .filter(|t| t.effective_condition().is_some() || t.while_condition().is_some())
            .nth(PARSED_APART_FROM)
            .is_some()
    }
}

pub(crate) fn check(
    bp: &Blueprint,
    graph: &TaskGraph<'_>,
    conditions: ParsedConditions<'_>,
    out: &mut Vec<Diagnostic>,
) {
    let produced = produced_names(bp);
    let ParsedConditions { sites, names: parsed } = conditions;
    for site in sites {
        let t = &bp.tasks[site.task_index];
        let names = &parsed[site.expression];
        let what = site.kind.as_str();
        match names {
            Err(e) => out.push(
                Diagnostic::error(
                    Code::ConditionSyntax,
                    site.path(bp),
                    format!("task '{}': {what} '{}' is not a valid expression ({e})", t.id, site.expression),
                )
                .task(&t.id)
                .rejected(),
            ),
            Ok(names) => {
                let local = |name: &str| {
                    site.kind == ConditionKind::Condition
                        && (t.params.iter().any(|p| p.io.name == name) || t.inputs.iter().any(|x| x.io.name == name))
                };
                for name in names.iter().filter(|n| !produced.contains(n.as_str()) && !local(n)) {
                    let hint = if site.kind == ConditionKind::While
                        && (t.params.iter().any(|p| &p.io.name == name) || t.inputs.iter().any(|x| &x.io.name == name))
                    {
                        " (a while condition sees session data only, not the task's own params and inputs)"
                    } else {
                        ""
                    };
                    out.push(
                        Diagnostic::error(
                            Code::ConditionUnknownName,
                            site.path(bp),
                            format!(
                                "task '{}': {what} '{}' reads '{name}', which no task in this blueprint declares as an output{hint}",
                                t.id, site.expression
                            ),
                        )
                        .task(&t.id)
                        .rejected(),
                    );
                }
            }
        }
    }
    get_from_wiring(bp, graph, out);
}

/// Inputs whose `get_from` names a key that no task running before them produces.
fn get_from_wiring(bp: &Blueprint, graph: &TaskGraph<'_>, out: &mut Vec<Diagnostic>) {
    let mut producers: HashMap<&str, Vec<usize>> = HashMap::new();
    for t in &bp.tasks {
        let node = graph.node_of[t.id.as_str()];
        for o in &t.outputs {
            producers.entry(o.target_key()).or_default().push(node);
        }
    }
    for nodes in producers.values_mut() {
        nodes.sort_unstable();
        nodes.dedup();
    }
    let mut search = Search { seen: vec![false; graph.len()], marked: Vec::new(), queue: VecDeque::new() };
    let unwired = keys_read_widely(bp, graph, &producers, &mut search);
    for (i, t) in bp.tasks.iter().enumerate() {
        let node = graph.node_of[t.id.as_str()];
        for (j, input) in t.inputs.iter().enumerate() {
            let Some(key) = input.get_from.as_deref().filter(|k| !k.is_empty()) else { continue };
            let message = match producers.get(key) {
                None => format!(
                    "task '{}': input '{}' reads '{key}', which no task in this blueprint produces (it must come from session parameters or a calling composite)",
                    t.id, input.io.name
                ),
                Some(nodes)
                    if match unwired.get(key) {
                        Some(unwired) => unwired.contains(&node),
                        None => !has_upstream(graph, node, nodes, &mut search),
                    } =>
                {
                    let ids: Vec<&str> = nodes.iter().map(|&n| bp.tasks[graph.task_of[n]].id.as_str()).collect();
                    format!(
                        "task '{}': input '{}' reads '{key}', produced by {} but not by any task it depends on: the value may not be there yet",
                        t.id,
                        input.io.name,
                        quote_list(&ids)
                    )
                }
                Some(_) => continue,
            };
            let path = format!("{}.inputs[{j}].get_from", task_path(i));
            out.push(Diagnostic::warning(Code::GetFromUnproduced, path, message).task(&t.id));
        }
    }
}

/// The keys better answered for all their readers at once, each with its readers that no
/// producer of it precedes. A search back from each reader to the earliest producer costs, on
/// an acyclic graph, about the tasks between the two in topological order; one search forward
/// from the producers to the last reader costs about the tasks between the earliest producer
/// and that reader. A key produced early and read by many tasks (a session parameter the start
/// task declares, read everywhere) takes the one search forward: searching back from each
/// reader would cost the blueprint's size for every one of them.
fn keys_read_widely<'a>(
    bp: &'a Blueprint,
    graph: &TaskGraph<'_>,
    producers: &HashMap<&'a str, Vec<usize>>,
    search: &mut Search,
) -> HashMap<&'a str, HashSet<usize>> {
    let mut decided = HashMap::new();
    let Some(pos) = &graph.topo_position else { return decided };
    let mut readers: HashMap<&str, Vec<usize>> = HashMap::new();
    for t in &bp.tasks {
        let node = graph.node_of[t.id.as_str()];
        for key in t.inputs.iter().filter_map(|x| x.get_from.as_deref()).filter(|k| producers.contains_key(k)) {
            readers.entry(key).or_default().push(node);
        }
    }
    for (key, mut readers) in readers {
        let floor = producers[key].iter().map(|&p| pos[p]).min().unwrap_or(0);
        let back: usize = readers.iter().map(|&r| pos[r].saturating_sub(floor)).sum();
        let ceiling = readers.iter().map(|&r| pos[r]).max().unwrap_or(0);
        if ceiling.saturating_sub(floor) >= back {
            continue;
        }
        // Forward from the producers' successors: a reader reached has a producer as a proper
        // ancestor (a producer that reads its own key is reached only from another one).
        search.queue.extend(producers[key].iter().flat_map(|&p| graph.successors[p].iter().map(|&(s, _)| s)));
        while let Some(n) = search.queue.pop_front() {
            if search.seen[n] || pos[n] > ceiling {
                continue;
            }
            search.seen[n] = true;
            search.marked.push(n);
            search.queue.extend(graph.successors[n].iter().map(|&(s, _)| s));
        }
        readers.retain(|&r| !search.seen[r]);
        for n in search.marked.drain(..) {
            search.seen[n] = false;
        }
        decided.insert(key, readers.into_iter().collect());
    }
    decided
}

/// Reusable marks and queue for the ancestor searches, cleared after each.
struct Search {
    seen: Vec<bool>,
    marked: Vec<usize>,
    queue: VecDeque<usize>,
}

/// Whether one of `producers` (sorted) is a proper ancestor of `node`. The search goes
/// breadth first, so the usual case (a producer just upstream) is found at once; on an acyclic
/// graph it stays above the earliest producer in topological order.
fn has_upstream(graph: &TaskGraph<'_>, node: usize, producers: &[usize], search: &mut Search) -> bool {
    let wanted = |n: usize| n != node && producers.binary_search(&n).is_ok();
    if graph.predecessors[node].iter().any(|&(p, _)| wanted(p)) {
        return true;
    }
    let floor = match &graph.topo_position {
        Some(pos) => match producers.iter().map(|&p| pos[p]).filter(|&p| p < pos[node]).min() {
            Some(lowest) => lowest,
            None => return false,
        },
        None => 0,
    };
    let within = |n: usize| graph.topo_position.as_ref().is_none_or(|pos| pos[n] >= floor);
    let mut found = false;
    search.queue.extend(graph.predecessors[node].iter().map(|&(p, _)| p));
    while let Some(n) = search.queue.pop_front() {
        if search.seen[n] || !within(n) {
            continue;
        }
        search.seen[n] = true;
        search.marked.push(n);
        if wanted(n) {
            found = true;
            break;
        }
        search.queue.extend(graph.predecessors[n].iter().map(|&(p, _)| p));
    }
    search.queue.clear();
    for n in search.marked.drain(..) {
        search.seen[n] = false;
    }
    found
}

/// What an editor can offer for one task: the names its condition and inputs may read.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct TaskNames {
    pub task_id: String,
    /// Every name the blueprint's outputs write (`set_to` or the output's name), by name.
    pub produced: Vec<ProducedName>,
    /// The task's own param and input names: its condition may read them too (its scope's
    /// while condition may not).
    pub own: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct ProducedName {
    pub key: String,
    /// The tasks whose outputs write it, in blueprint order.
    pub producers: Vec<String>,
    /// One of them runs before the task (it depends on it, directly or not): an input may
    /// `get_from` it without a warning.
    pub upstream: bool,
}

/// The names around task `task_id`; `None` when the blueprint has no such task.
pub fn task_names(bp: &Blueprint, task_id: &str) -> Option<TaskNames> {
    let task = bp.tasks.iter().find(|t| t.id == task_id)?;
    let graph = TaskGraph::new(bp);
    let node = graph.node_of[task_id];
    // Every ancestor, whatever the dependency type.
    let mut ancestor = vec![false; graph.len()];
    let mut queue: VecDeque<usize> = graph.predecessors[node].iter().map(|&(p, _)| p).collect();
    while let Some(n) = queue.pop_front() {
        if n != node && !std::mem::replace(&mut ancestor[n], true) {
            queue.extend(graph.predecessors[n].iter().map(|&(p, _)| p));
        }
    }
    let mut produced: Vec<ProducedName> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    for t in &bp.tasks {
        let before = ancestor[graph.node_of[t.id.as_str()]];
        for key in t.outputs.iter().map(TaskOutput::target_key) {
            let at = *index.entry(key).or_insert_with(|| {
                produced.push(ProducedName { key: key.to_string(), producers: Vec::new(), upstream: false });
                produced.len() - 1
            });
            let name = &mut produced[at];
            if !name.producers.contains(&t.id) {
                name.producers.push(t.id.clone());
            }
            name.upstream |= before;
        }
    }
    produced.sort_by(|a, b| a.key.cmp(&b.key));
    let mut own: Vec<String> =
        task.params.iter().map(|p| p.io.name.clone()).chain(task.inputs.iter().map(|i| i.io.name.clone())).collect();
    own.sort();
    own.dedup();
    Some(TaskNames { task_id: task_id.to_string(), produced, own })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    /// Tasks `t0` (the start) .. `t{n-1}`, each depending on the earlier tasks given, writing the
    /// keys given and reading (one input each) the keys given.
    fn blueprint(tasks: &[(Vec<usize>, Vec<String>, Vec<String>)]) -> Blueprint {
        let tasks: Vec<_> = tasks
            .iter()
            .enumerate()
            .map(|(i, (deps, writes, reads))| {
                json!({
                    "id": format!("t{i}"),
                    "type": if i == 0 { "system.start" } else { "system.sleep" },
                    "depends_on": deps.iter().map(|d| json!({"id": format!("t{d}")})).collect::<Vec<_>>(),
                    "outputs": writes.iter().map(|k| json!({"name": k})).collect::<Vec<_>>(),
                    "inputs": reads.iter().enumerate().map(|(j, k)| json!({"name": format!("in{j}"), "get_from": k})).collect::<Vec<_>>(),
                })
            })
            .collect();
        let text = json!({"id": "bp", "name": "bp", "version": "1.0", "tasks": tasks}).to_string();
        crate::load::load(&text).expect("loads").blueprint
    }

    /// The inputs (task, input) whose key some task produces but none that precedes the reader:
    /// what `get_from_wiring` reports, told by searching every reader's ancestors whole.
    fn unwired_by_brute_force(bp: &Blueprint) -> Vec<(usize, usize)> {
        let graph = TaskGraph::new(bp);
        let mut out = Vec::new();
        for (i, t) in bp.tasks.iter().enumerate() {
            let node = graph.node_of[t.id.as_str()];
            let mut ancestors = HashSet::default();
            let mut stack: Vec<usize> = graph.predecessors[node].iter().map(|&(p, _)| p).collect();
            while let Some(n) = stack.pop() {
                if ancestors.insert(n) {
                    stack.extend(graph.predecessors[n].iter().map(|&(p, _)| p));
                }
            }
            for (j, input) in t.inputs.iter().enumerate() {
                let key = input.get_from.as_deref().unwrap();
                let producers: Vec<usize> = bp
                    .tasks
                    .iter()
                    .filter(|p| p.outputs.iter().any(|o| o.target_key() == key))
                    .map(|p| graph.node_of[p.id.as_str()])
                    .collect();
                if !producers.is_empty() && !producers.iter().any(|p| *p != node && ancestors.contains(p)) {
                    out.push((i, j));
                }
            }
        }
        out
    }

    fn unwired_reported(bp: &Blueprint) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        get_from_wiring(bp, &TaskGraph::new(bp), &mut out);
        out.iter()
            .filter(|d| d.message.contains("not by any task it depends on"))
            .map(|d| {
                let path = crate::span::parse_path(&d.path);
                match path.as_slice() {
                    [_, crate::span::Segment::Index(i), _, crate::span::Segment::Index(j), _] => (*i, *j),
                    _ => panic!("unexpected path {}", d.path),
                }
            })
            .collect()
    }

    #[test]
    fn a_key_the_start_writes_and_every_task_reads_is_answered_by_one_search_forward() {
        // A chain t1..t59 reading `region`, which the start writes; a side task t60 writes `late`,
        // read by the chain's last tasks, which do not follow it.
        let mut tasks = vec![(vec![], vec!["region".to_string()], vec![])];
        for i in 1..60 {
            let reads =
                if i > 50 { vec!["region".to_string(), "late".to_string()] } else { vec!["region".to_string()] };
            tasks.push((vec![i - 1], vec![], reads));
        }
        tasks.push((vec![0], vec!["late".to_string()], vec![]));
        let bp = blueprint(&tasks);
        let graph = TaskGraph::new(&bp);
        let mut search = Search { seen: vec![false; graph.len()], marked: Vec::new(), queue: VecDeque::new() };
        let mut producers: HashMap<&str, Vec<usize>> = HashMap::new();
        producers.insert("region", vec![graph.node_of["t0"]]);
        producers.insert("late", vec![graph.node_of["t60"]]);
        let decided = keys_read_widely(&bp, &graph, &producers, &mut search);
        assert_eq!(decided.get("region").map(HashSet::len), Some(0), "every reader follows the start");
        assert!(search.marked.is_empty() && !search.seen.contains(&true), "the marks are cleared");
        assert_eq!(unwired_reported(&bp), unwired_by_brute_force(&bp));
        assert_eq!(unwired_reported(&bp).len(), 9, "t51..t59 read `late` without following t60");
    }

    proptest! {
        /// Whichever way each key is searched, the inputs reported are those no producer precedes.
        #[test]
        fn the_inputs_reported_are_those_no_producer_precedes(
            shape in prop::collection::vec(
                (prop::collection::vec(any::<prop::sample::Index>(), 0..3),
                 prop::collection::vec(0..4usize, 0..2),
                 prop::collection::vec(0..4usize, 0..4)),
                2..40),
        ) {
            let key = |k: &usize| format!("k{k}");
            let tasks: Vec<_> = shape
                .iter()
                .enumerate()
                .map(|(i, (deps, writes, reads))| {
                    let deps = if i == 0 { vec![] } else { deps.iter().map(|d| d.index(i)).collect() };
                    (deps, writes.iter().map(key).collect(), reads.iter().map(key).collect())
                })
                .collect();
            let bp = blueprint(&tasks);
            prop_assert_eq!(unwired_reported(&bp), unwired_by_brute_force(&bp));
        }
    }
}
