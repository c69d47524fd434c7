//! Which names flow where. The reference's `check_dataflow()`: a condition may read the names
//! that outputs produce (`set_to or name`) plus its task's own param and input names; a while
//! condition only produced names; an unparsable condition is a problem too; the server refuses
//! a blueprint with any. Orrery adds: an input's `get_from` that no upstream task produces.

use crate::condition;
use crate::diagnostic::{quote_list, task_path, Code, Diagnostic};
use crate::graph::TaskGraph;
use crate::model::*;
use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};
use std::collections::VecDeque;

/// The names a blueprint's outputs write to session data.
pub fn produced_names(bp: &Blueprint) -> HashSet<&str> {
    let mut names = HashSet::with_capacity(bp.tasks.iter().map(|t| t.outputs.len()).sum());
    names.extend(bp.tasks.iter().flat_map(|t| t.outputs.iter().map(TaskOutput::target_key)));
    names
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

/// Below this many conditions, parsing them costs less than starting a thread.
pub(crate) const PARSED_APART_FROM: usize = 256;

/// Whether a blueprint has enough conditions to check them on a thread of their own.
pub(crate) fn conditions_worth_a_thread(bp: &Blueprint) -> bool {
    bp.tasks
        .iter()
        .filter(|t| t.effective_condition().is_some() || t.while_condition().is_some())
        .nth(PARSED_APART_FROM)
        .is_some()
}

/// The reference's dataflow check: each condition parses and reads only names some output
/// writes (or its task's own params and inputs). It needs no graph, so validation makes it on
/// a second core beside the rules that do; Orrery's other dataflow check, [`get_from_wiring`],
/// needs the graph.
pub(crate) fn check_conditions(bp: &Blueprint, out: &mut Vec<Diagnostic>) {
    let sites = condition_sites(bp);
    // Each distinct expression parsed once: the names it reads, or why it does not parse.
    let mut parsed = HashMap::new();
    for s in &sites {
        parsed.entry(s.expression).or_insert_with(|| condition::free_names(s.expression));
    }
    let produced = produced_names(bp);
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
                        && (t.params.iter().any(|p| p.io.name == *name) || t.inputs.iter().any(|x| x.io.name == *name))
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
}

/// Inputs whose `get_from` names a key that no task running before them produces.
pub(crate) fn get_from_wiring(bp: &Blueprint, graph: &TaskGraph<'_>, out: &mut Vec<Diagnostic>) {
    let producers = Producers::new(bp, graph);
    // The inputs not answered by a look at their task's predecessors, in blueprint order:
    // (task index, input index, the number of the key read when some task produces it).
    let mut open: Vec<(usize, usize, Option<u32>)> = Vec::new();
    for (i, (t, &node)) in bp.tasks.iter().zip(&graph.node_of_task).enumerate() {
        for (j, input) in t.inputs.iter().enumerate() {
            let Some(key) = input.get_from.as_deref().filter(|k| !k.is_empty()) else { continue };
            let number = producers.number.get(key).copied();
            if let Some(k) = number {
                let nodes = producers.nodes(k);
                let produced_by = |n: usize| n != node && nodes.binary_search(&n).is_ok();
                if graph.predecessors[node].iter().any(|&(p, _)| produced_by(p)) {
                    continue;
                }
            }
            open.push((i, j, number));
        }
    }
    let unwired = reached_by_producers(graph, &producers, &open);
    // Room for every open input's finding at once (a list grown by doubling copies them into
    // fresh memory each time: 87,000 findings, some 11 MB, copied twice over).
    out.reserve(open.len());
    for (&(i, j, number), unwired) in open.iter().zip(unwired) {
        let (t, input) = (&bp.tasks[i], &bp.tasks[i].inputs[j]);
        let key = input.get_from.as_deref().unwrap_or_default();
        let message = match number {
            // Joined from its pieces: with `format!` 87,000 findings took 14 ms more to make
            // than none, about half that so.
            None => [
                "task '",
                &t.id,
                "': input '",
                &input.io.name,
                "' reads '",
                key,
                "', which no task in this blueprint produces (it must come from session parameters or a calling composite)",
            ]
            .concat(),
            Some(k) if unwired => {
                let ids = producers.nodes(k).iter().map(|&n| bp.tasks[graph.task_of[n]].id.as_str());
                format!(
                    "task '{}': input '{}' reads '{key}', produced by {} but not by any task it depends on: the value may not be there yet",
                    t.id,
                    input.io.name,
                    quote_list(ids)
                )
            }
            Some(_) => continue,
        };
        let path = format!("{}.inputs[{j}].get_from", task_path(i));
        out.push(Diagnostic::warning(Code::GetFromUnproduced, path, message).task(&t.id));
    }
}

/// The keys outputs write, each given a number in the order first written, and the nodes of
/// the tasks writing each.
struct Producers<'a> {
    number: HashMap<&'a str, u32>,
    /// The nodes writing key `k` are `nodes[first[k]..first[k + 1]]`, in order, once each.
    first: Vec<usize>,
    nodes: Vec<usize>,
}

impl<'a> Producers<'a> {
    fn new(bp: &'a Blueprint, graph: &TaskGraph<'_>) -> Producers<'a> {
        let outputs = bp.tasks.iter().map(|t| t.outputs.len()).sum();
        let mut number: HashMap<&str, u32> = HashMap::with_capacity(outputs);
        let mut written: Vec<(u32, usize)> = Vec::with_capacity(outputs);
        for (t, &node) in bp.tasks.iter().zip(&graph.node_of_task) {
            for o in &t.outputs {
                let next = number.len() as u32;
                written.push((*number.entry(o.target_key()).or_insert(next), node));
            }
        }
        written.sort_unstable();
        written.dedup();
        let mut first = vec![0; number.len() + 1];
        for &(k, _) in &written {
            first[k as usize + 1] += 1;
        }
        for k in 0..number.len() {
            first[k + 1] += first[k];
        }
        Producers { number, first, nodes: written.into_iter().map(|(_, node)| node).collect() }
    }

    fn nodes(&self, k: u32) -> &[usize] {
        &self.nodes[self.first[k as usize]..self.first[k as usize + 1]]
    }
}

/// For each of the `open` inputs, whether it is unwired: its key is produced, but by no task
/// that precedes the reader (other than the reader itself). The tasks are taken in a
/// topological order of the graph's strongly connected components (the tasks of a cycle
/// together, each preceding the others), and the keys 64 at a time, each a bit of a word: one
/// pass, from the component of the earliest producer of the 64 to that of their last reader,
/// gives every component the bits of the keys produced before it. A search back from each
/// reader instead costs up to the blueprint's size for each (a key the start task writes and
/// every task reads; one task reading the keys of all the others), which made large blueprints
/// take minutes.
fn reached_by_producers(
    graph: &TaskGraph<'_>,
    producers: &Producers<'_>,
    open: &[(usize, usize, Option<u32>)],
) -> Vec<bool> {
    let mut unwired = vec![false; open.len()];
    // The readers of produced keys: (key, reader node, place in `open`).
    let mut readers: Vec<(u32, usize, usize)> = open
        .iter()
        .enumerate()
        .filter_map(|(at, &(i, _, number))| Some((number?, graph.node_of_task[i], at)))
        .collect();
    if readers.is_empty() {
        return unwired;
    }
    let (position, cyclic) = graph.condensed();
    let floor = |k: u32| producers.nodes(k).iter().map(|&p| position[p]).min().unwrap_or(0);
    // Keys produced near one another share their passes' stretch of the order.
    readers.sort_by_cached_key(|&(k, _, _)| (floor(k), k));
    // The nodes of each position, one after the other: those of position `at` begin at `first[at]`.
    let mut first = vec![0; cyclic.len() + 1];
    for &at in &position {
        first[at + 1] += 1;
    }
    for at in 0..cyclic.len() {
        first[at + 1] += first[at];
    }
    let mut members = vec![0; position.len()];
    let mut filled = first.clone();
    for (node, &at) in position.iter().enumerate() {
        members[filled[at]] = node;
        filled[at] += 1;
    }
    // By position: the keys produced there; the keys produced before it.
    let mut produced = vec![0u64; cyclic.len()];
    let mut reached = vec![0u64; cyclic.len()];
    // Each key's readers together, in the order sorted.
    let keys: Vec<&[(u32, usize, usize)]> = readers.chunk_by(|a, b| a.0 == b.0).collect();
    for batch in keys.chunks(64) {
        let low = batch.iter().map(|readers| floor(readers[0].0)).min().unwrap_or(0);
        let high =
            batch.iter().flat_map(|readers| readers.iter().map(|&(_, r, _)| position[r])).max().unwrap_or(0).max(low);
        // In a cycle, how many producers of each key share it, and one of them.
        let mut within: HashMap<(usize, usize), (usize, usize)> = HashMap::new();
        for (bit, readers) in batch.iter().enumerate() {
            for &p in producers.nodes(readers[0].0) {
                produced[position[p]] |= 1 << bit;
                if cyclic[position[p]] {
                    within.entry((bit, position[p])).and_modify(|(n, _)| *n += 1).or_insert((1, p));
                }
            }
        }
        for at in low..=high {
            reached[at] = members[first[at]..first[at + 1]]
                .iter()
                .flat_map(|&n| graph.predecessors[n].iter().map(|&(p, _)| position[p]))
                .filter(|&p| p != at && p >= low)
                .fold(0, |bits, p| bits | reached[p] | produced[p]);
        }
        for (bit, readers) in batch.iter().enumerate() {
            for &(_, r, at) in *readers {
                let wired = reached[position[r]] & 1 << bit != 0
                    || within.get(&(bit, position[r])).is_some_and(|&(n, one)| n > 1 || one != r);
                unwired[at] = !wired;
            }
        }
        reached[low..=high].fill(0);
        for readers in batch {
            for &p in producers.nodes(readers[0].0) {
                produced[position[p]] = 0;
            }
        }
    }
    unwired
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
            if !name.producers.iter().any(|p| *p == t.id) {
                name.producers.push(t.id.to_string());
            }
            name.upstream |= before;
        }
    }
    produced.sort_by(|a, b| a.key.cmp(&b.key));
    let mut own: Vec<String> = task
        .params
        .iter()
        .map(|p| p.io.name.to_string())
        .chain(task.inputs.iter().map(|i| i.io.name.to_string()))
        .collect();
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
    fn a_key_the_start_writes_and_every_task_reads_and_keys_read_far_from_their_writers() {
        // A chain t1..t199 reading `region`, which the start writes; t200 writes `late`, read by
        // the chain's last tasks, which do not follow it; t1..t199 also write k1..k199, all read
        // by t201 at the chain's end, and k1..k99 by t202 beside the chain.
        let mut tasks = vec![(vec![], vec!["region".to_string()], vec![])];
        for i in 1..200 {
            let reads =
                if i > 190 { vec!["region".to_string(), "late".to_string()] } else { vec!["region".to_string()] };
            tasks.push((vec![i - 1], vec![format!("k{i}")], reads));
        }
        tasks.push((vec![0], vec!["late".to_string()], vec![]));
        tasks.push((vec![199], vec![], (1..200).map(|i| format!("k{i}")).collect()));
        tasks.push((vec![0], vec![], (1..100).map(|i| format!("k{i}")).collect()));
        let bp = blueprint(&tasks);
        let reported = unwired_reported(&bp);
        assert_eq!(reported, unwired_by_brute_force(&bp));
        let expected: Vec<(usize, usize)> = (191..200).map(|i| (i, 1)).chain((0..99).map(|j| (202, j))).collect();
        assert_eq!(reported, expected);
    }

    proptest! {
        /// The inputs reported are those no producer precedes, with cycles (a dependency on any
        /// task, itself included) or without.
        #[test]
        fn the_inputs_reported_are_those_no_producer_precedes(
            cyclic in any::<bool>(),
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
                    let deps = match (i, cyclic) {
                        (0, _) => vec![],
                        (_, true) => deps.iter().map(|d| d.index(shape.len())).collect(),
                        (_, false) => deps.iter().map(|d| d.index(i)).collect(),
                    };
                    (deps, writes.iter().map(key).collect(), reads.iter().map(key).collect())
                })
                .collect();
            let bp = blueprint(&tasks);
            prop_assert_eq!(unwired_reported(&bp), unwired_by_brute_force(&bp));
        }
    }
}
