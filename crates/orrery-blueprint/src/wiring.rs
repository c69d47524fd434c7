//! Which output feeds which input: the data flow an editor draws beside the dependencies. An
//! input reads session data at its source key (`get_from`, else its name), an output writes at
//! its target key (`set_to`, else its name), and session data is one store per blueprint
//! instance, so the value an input reads is the one written last before its task starts: the
//! writer is the nearest task upstream through the dependencies that writes the key.
//!
//! - A writer is left out when another writer of the key runs after it and before the reader
//!   (it is upstream of that other writer): its value is overwritten by then.
//! - Writers on parallel branches (neither upstream of the other) are all wires: which one
//!   wrote last depends on the run.
//! - A writer that does not run before the reader is no wire (the value may not be there yet:
//!   validation warns of a `get_from` like that); nor is an input whose key nothing writes (it
//!   reads session parameters, a calling composite, or its own literal value).
//! - Every dependency type counts as "before", as in the check of `get_from`.

use crate::model::Blueprint;
use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};
use serde::Serialize;

/// One output feeding one input: `output` of task `from` writes `key`, which `input` of task
/// `to` reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Wire {
    pub from: String,
    pub to: String,
    pub key: String,
    pub output: String,
    pub input: String,
}

/// Every wire of a blueprint, in the order of its tasks and their inputs; a task id given twice
/// counts once, as its first task.
pub fn wiring(bp: &Blueprint) -> Vec<Wire> {
    let mut index: HashMap<&str, usize> = HashMap::new();
    for (i, t) in bp.tasks.iter().enumerate() {
        index.entry(t.id.as_str()).or_insert(i);
    }
    let tasks: Vec<usize> = (0..bp.tasks.len()).filter(|&i| index[bp.tasks[i].id.as_str()] == i).collect();
    let predecessors: Vec<Vec<usize>> = bp
        .tasks
        .iter()
        .map(|t| t.depends_on.iter().filter_map(|d| index.get(d.id.as_str()).copied()).collect())
        .collect();
    // Who writes each key, with the task's first output of that key.
    let mut writers: HashMap<&str, HashMap<usize, &str>> = HashMap::new();
    for &i in &tasks {
        for output in &bp.tasks[i].outputs {
            writers.entry(output.target_key()).or_default().entry(i).or_insert(output.io.name.as_str());
        }
    }
    // One search per key read, shared by every input that reads it.
    let mut searches: HashMap<&str, NearestWriters> = HashMap::new();
    let mut wires = Vec::new();
    for &i in &tasks {
        for input in &bp.tasks[i].inputs {
            let key = input.source_key();
            let Some(by_task) = writers.get(key) else { continue };
            let search = searches.entry(key).or_insert_with(|| NearestWriters::new(by_task.keys().copied().collect()));
            for from in search.of(i, &predecessors) {
                wires.push(Wire {
                    from: bp.tasks[from].id.to_string(),
                    to: bp.tasks[i].id.to_string(),
                    key: key.to_string(),
                    output: by_task[&from].to_string(),
                    input: input.io.name.to_string(),
                });
            }
        }
    }
    wires
}

/// For one key: the writers upstream of a task that no other writer upstream of it follows. A
/// task's answer is made of its predecessors': a predecessor that writes, or else the
/// predecessor's own answer; of those, a writer upstream of another is dropped. Answers are
/// kept, so a chain of thousands of readers costs one walk up it, not one per reader. Tasks on
/// a cycle (an error validation reports) see no writer through it.
struct NearestWriters {
    writes: HashSet<usize>,
    known: HashMap<usize, Vec<usize>>,
}

impl NearestWriters {
    fn new(writes: HashSet<usize>) -> Self {
        NearestWriters { writes, known: HashMap::new() }
    }

    fn of(&mut self, reader: usize, predecessors: &[Vec<usize>]) -> Vec<usize> {
        let mut open = HashSet::new();
        // Depth first without recursion: a long chain would overflow the stack.
        let mut stack = vec![(reader, false)];
        while let Some(&(top, expanded)) = stack.last() {
            if self.known.contains_key(&top) {
                stack.pop();
                continue;
            }
            let before = predecessors[top].iter().copied().filter(|&p| p != top);
            if !expanded {
                stack.last_mut().expect("the top is there").1 = true;
                open.insert(top);
                for p in before {
                    if !self.writes.contains(&p) && !self.known.contains_key(&p) && !open.contains(&p) {
                        stack.push((p, false));
                    }
                }
                continue;
            }
            let mut candidates = Vec::new();
            for p in before {
                if self.writes.contains(&p) {
                    candidates.push(p);
                } else {
                    candidates.extend(self.known.get(&p).into_iter().flatten().copied());
                }
            }
            let mut seen = HashSet::new();
            candidates.retain(|c| seen.insert(*c));
            open.remove(&top);
            self.known.insert(top, latest(candidates, predecessors));
            stack.pop();
        }
        // Through a cycle a task can come out upstream of itself; it never feeds itself.
        self.known.get(&reader).into_iter().flatten().copied().filter(|&w| w != reader).collect()
    }
}

/// The candidates that are not upstream of another one: one walk up from all of them at once.
fn latest(candidates: Vec<usize>, predecessors: &[Vec<usize>]) -> Vec<usize> {
    if candidates.len() < 2 {
        return candidates;
    }
    let mut upstream = HashSet::new();
    let mut queue: Vec<usize> = candidates.iter().flat_map(|&c| predecessors[c].iter().copied()).collect();
    while let Some(id) = queue.pop() {
        if upstream.insert(id) {
            queue.extend(predecessors[id].iter().copied());
        }
    }
    candidates.into_iter().filter(|c| !upstream.contains(c)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    /// A shell.run task depending (FS) on `after`, with its inputs and outputs as in a file.
    fn task(id: &str, after: &[&str], io: Value) -> Value {
        let mut t = json!({"id": id, "type": "shell.run", "params": [{"name": "command", "value": "true"}]});
        if !after.is_empty() {
            t["depends_on"] = after.iter().map(|a| json!({"id": a, "type": "FS"})).collect();
        }
        for field in ["inputs", "outputs"] {
            if let Some(list) = io.get(field) {
                t[field] = list.clone();
            }
        }
        t
    }

    fn wires_of(tasks: Vec<Value>) -> Vec<Wire> {
        let text = json!({"id": "bp", "name": "bp", "version": "1.0", "tasks": tasks}).to_string();
        wiring(&crate::load(&text).expect("the blueprint loads").blueprint)
    }

    fn pairs(wires: &[Wire]) -> Vec<String> {
        wires.iter().map(|w| format!("{}.{} -> {}.{}", w.from, w.output, w.to, w.input)).collect()
    }

    #[test]
    fn an_inputs_get_from_is_wired_to_the_output_whose_set_to_writes_it() {
        let wires = wires_of(vec![
            task("start", &[], json!({})),
            task("plan", &["start"], json!({"outputs": [{"name": "result", "set_to": "total"}]})),
            task("use", &["plan"], json!({"inputs": [{"name": "sum", "get_from": "total"}]})),
        ]);
        let expected = Wire {
            from: "plan".into(),
            to: "use".into(),
            key: "total".into(),
            output: "result".into(),
            input: "sum".into(),
        };
        assert_eq!(wires, vec![expected]);
    }

    #[test]
    fn an_input_without_get_from_reads_its_own_name() {
        let wires = wires_of(vec![
            task("a", &[], json!({"outputs": [{"name": "count"}]})),
            task("b", &["a"], json!({"inputs": [{"name": "count"}]})),
        ]);
        assert_eq!(pairs(&wires), ["a.count -> b.count"]);
    }

    #[test]
    fn the_nearest_writer_upstream_wins_over_an_earlier_one_it_overwrites() {
        let wires = wires_of(vec![
            task("first", &[], json!({"outputs": [{"name": "x"}]})),
            task("second", &["first"], json!({"outputs": [{"name": "y", "set_to": "x"}]})),
            // Depends on both: `first` also reaches it directly, yet `second` writes after it.
            task("reader", &["second", "first"], json!({"inputs": [{"name": "x"}]})),
        ]);
        assert_eq!(pairs(&wires), ["second.y -> reader.x"]);
    }

    #[test]
    fn every_writer_on_parallel_branches_is_a_wire_since_either_may_write_last() {
        let wires = wires_of(vec![
            task("start", &[], json!({})),
            task("left", &["start"], json!({"outputs": [{"name": "v"}]})),
            task("right", &["start"], json!({"outputs": [{"name": "v"}]})),
            task("join", &["left", "right"], json!({"inputs": [{"name": "in", "get_from": "v"}]})),
        ]);
        assert_eq!(pairs(&wires), ["left.v -> join.in", "right.v -> join.in"]);
    }

    #[test]
    fn a_writer_that_runs_later_or_aside_and_a_name_nothing_writes_are_no_wires() {
        let wires = wires_of(vec![
            task("start", &[], json!({})),
            task(
                "reader",
                &["start"],
                json!({"inputs": [{"name": "late"}, {"name": "param", "get_from": "from_session"}]}),
            ),
            task("writer", &["reader"], json!({"outputs": [{"name": "late"}]})),
            task("aside", &["start"], json!({"outputs": [{"name": "late"}]})),
        ]);
        assert_eq!(wires, vec![]);
    }

    #[test]
    fn a_task_never_feeds_itself_and_a_cycle_is_survived() {
        let wires = wires_of(vec![
            task("a", &["b"], json!({"inputs": [{"name": "n"}], "outputs": [{"name": "n"}]})),
            task("b", &["a"], json!({"outputs": [{"name": "m"}]})),
        ]);
        assert_eq!(wires, vec![]);
    }

    #[test]
    fn a_long_chain_is_walked_once_not_once_per_reader() {
        // 20,000 tasks in a chain, each reading a name the first one writes: one search per
        // reader would walk 200 million steps; kept answers walk the chain once.
        let n = 20_000;
        let tasks = (0..n)
            .map(|i| match i {
                0 => task("t0", &[], json!({"outputs": [{"name": "x"}]})),
                _ => task(&format!("t{i}"), &[&format!("t{}", i - 1)], json!({"inputs": [{"name": "x"}]})),
            })
            .collect();
        let started = std::time::Instant::now();
        let wires = wires_of(tasks);
        assert_eq!(wires.len(), n - 1);
        assert!(wires.iter().all(|w| w.from == "t0"));
        assert!(started.elapsed() < std::time::Duration::from_secs(5), "{:?}", started.elapsed());
    }
}
