//! The dependency graph of one blueprint, as the reference builds it: one node per distinct
//! task id (tasks sharing an id share a node), an edge `dependency -> task` for every
//! dependency naming an existing task. Validation, scopes and rendering all read this one
//! structure.

use crate::model::{Blueprint, DependencyType};
use foldhash::{HashMap, HashMapExt};
use petgraph::graph::{DiGraph, NodeIndex};

pub struct TaskGraph<'a> {
    /// Node of each distinct task id.
    pub node_of: HashMap<&'a str, usize>,
    /// Index (in `blueprint.tasks`) of the first task with each node's id.
    pub task_of: Vec<usize>,
    /// The node of each task (by its index in `blueprint.tasks`): `node_of` without hashing.
    pub node_of_task: Vec<usize>,
    pub successors: Adjacency,
    pub predecessors: Adjacency,
    /// Position of each node in a topological order, when the graph has no cycle.
    pub topo_position: Option<Vec<usize>>,
}

impl<'a> TaskGraph<'a> {
    pub fn new(bp: &'a Blueprint) -> Self {
        let mut node_of: HashMap<&str, usize> = HashMap::with_capacity(bp.tasks.len());
        let mut task_of = Vec::with_capacity(bp.tasks.len());
        let mut node_of_task = Vec::with_capacity(bp.tasks.len());
        for (i, t) in bp.tasks.iter().enumerate() {
            let node = *node_of.entry(t.id.as_str()).or_insert_with(|| {
                task_of.push(i);
                task_of.len() - 1
            });
            node_of_task.push(node);
        }
        let mut edges = Vec::new();
        for (t, &to) in bp.tasks.iter().zip(&node_of_task) {
            for d in &t.depends_on {
                if let Some(&from) = node_of.get(d.id.as_str()) {
                    edges.push((from, to, d.dep_type));
                }
            }
        }
        let n = task_of.len();
        let successors = Adjacency::new(n, edges.iter().map(|&(from, to, kind)| (from, (to, kind))));
        let predecessors = Adjacency::new(n, edges.iter().map(|&(from, to, kind)| (to, (from, kind))));
        let topo_position = topological_positions(&successors, &predecessors);
        TaskGraph { node_of, task_of, node_of_task, successors, predecessors, topo_position }
    }

    pub fn len(&self) -> usize {
        self.task_of.len()
    }

    pub fn is_empty(&self) -> bool {
        self.task_of.is_empty()
    }

    /// Strongly connected components with a cycle (more than one node, or a self-loop), each
    /// as nodes in dependency order where possible.
    pub fn cycles(&self) -> Vec<Vec<usize>> {
        if self.topo_position.is_some() {
            return Vec::new();
        }
        let mut cycles: Vec<Vec<usize>> = self
            .components()
            .into_iter()
            .filter(|c| self.is_cycle(c))
            .map(|mut c| {
                c.sort_unstable();
                c
            })
            .collect();
        cycles.sort();
        cycles
    }

    /// The graph with each strongly connected component as one node: for each node, the
    /// position of its component in a topological order of the components; for each position,
    /// whether its component holds a cycle. On an acyclic graph, the topological positions.
    pub fn condensed(&self) -> (Vec<usize>, Vec<bool>) {
        if let Some(position) = &self.topo_position {
            return (position.clone(), vec![false; self.len()]);
        }
        let components = self.components();
        let mut position = vec![0; self.len()];
        let mut cyclic = Vec::with_capacity(components.len());
        // Kosaraju's components come in reverse topological order.
        for (at, component) in components.iter().rev().enumerate() {
            for &n in component {
                position[n] = at;
            }
            cyclic.push(self.is_cycle(component));
        }
        (position, cyclic)
    }

    fn is_cycle(&self, component: &[usize]) -> bool {
        component.len() > 1 || self.successors[component[0]].iter().any(|&(to, _)| to == component[0])
    }

    /// The strongly connected components, in reverse topological order.
    fn components(&self) -> Vec<Vec<usize>> {
        let mut g: DiGraph<(), ()> = DiGraph::with_capacity(self.len(), 0);
        for _ in 0..self.len() {
            g.add_node(());
        }
        for (from, succ) in self.successors.iter().enumerate() {
            for &(to, _) in succ {
                g.add_edge(NodeIndex::new(from), NodeIndex::new(to), ());
            }
        }
        petgraph::algo::kosaraju_scc(&g).into_iter().map(|c| c.into_iter().map(|n| n.index()).collect()).collect()
    }

    /// Marks into `seen` the nodes reachable from `origin` (itself included) along `adjacency`,
    /// visiting only nodes that `keep` allows; returns the nodes it marked, so the caller can
    /// clear them again.
    pub fn reachable_into(
        &self,
        origin: usize,
        adjacency: &Adjacency,
        keep: impl Fn(usize) -> bool,
        seen: &mut [bool],
    ) -> Vec<usize> {
        let mut marked = Vec::new();
        let mut stack = vec![origin];
        while let Some(n) = stack.pop() {
            if seen[n] {
                continue;
            }
            seen[n] = true;
            marked.push(n);
            for &(m, _) in &adjacency[n] {
                if !seen[m] && keep(m) {
                    stack.push(m);
                }
            }
        }
        marked
    }
}

/// The edges of each node in one direction, all in one list (a list per node took most of a
/// large blueprint's graph: each grows to room for four).
pub struct Adjacency {
    /// The edges of node `n` are `edges[start[n]..start[n + 1]]`.
    start: Vec<usize>,
    edges: Vec<(usize, DependencyType)>,
}

impl Adjacency {
    /// From `(node, edge)` pairs; each node's edges keep their order among the pairs.
    fn new(nodes: usize, pairs: impl Iterator<Item = (usize, (usize, DependencyType))> + Clone) -> Adjacency {
        let mut start = vec![0; nodes + 1];
        for (node, _) in pairs.clone() {
            start[node + 1] += 1;
        }
        for n in 0..nodes {
            start[n + 1] += start[n];
        }
        let mut next = start.clone();
        let mut edges = vec![(0, DependencyType::FS); start[nodes]];
        for (node, edge) in pairs {
            edges[next[node]] = edge;
            next[node] += 1;
        }
        Adjacency { start, edges }
    }

    pub fn len(&self) -> usize {
        self.start.len() - 1
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Each node's edges, in node order.
    pub fn iter(&self) -> impl Iterator<Item = &[(usize, DependencyType)]> {
        (0..self.len()).map(|n| &self[n])
    }
}

impl std::ops::Index<usize> for Adjacency {
    type Output = [(usize, DependencyType)];
    fn index(&self, node: usize) -> &[(usize, DependencyType)] {
        &self.edges[self.start[node]..self.start[node + 1]]
    }
}

/// Kahn's algorithm; `None` when there is a cycle.
fn topological_positions(successors: &Adjacency, predecessors: &Adjacency) -> Option<Vec<usize>> {
    let n = successors.len();
    let mut indegree: Vec<usize> = predecessors.iter().map(<[_]>::len).collect();
    let mut ready: Vec<usize> = (0..n).filter(|&i| indegree[i] == 0).rev().collect();
    let mut position = vec![usize::MAX; n];
    let mut next = 0;
    while let Some(node) = ready.pop() {
        position[node] = next;
        next += 1;
        for &(m, _) in &successors[node] {
            indegree[m] -= 1;
            if indegree[m] == 0 {
                ready.push(m);
            }
        }
    }
    (next == n).then_some(position)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::load;

    #[test]
    fn each_node_has_its_edges_both_ways_in_dependency_order() {
        let text = r#"{"id": "b", "name": "B", "version": "1.0", "tasks": [
            {"id": "start", "type": "system.start"},
            {"id": "a", "type": "x.y", "depends_on": [{"id": "start"}]},
            {"id": "c", "type": "x.y", "depends_on": [{"id": "start", "type": "SS"}, {"id": "gone"}, {"id": "a", "type": "FF"}]},
            {"id": "a", "type": "x.y", "depends_on": [{"id": "c", "type": "SF"}]},
            {"id": "end", "type": "system.end", "depends_on": [{"id": "c"}, {"id": "a"}]}]}"#;
        let bp = load(text).unwrap().blueprint;
        let g = TaskGraph::new(&bp);
        let node = |id: &str| g.node_of[id];
        let edges = |list: &[(usize, DependencyType)]| -> Vec<String> {
            list.iter().map(|&(n, kind)| format!("{} {}", bp.tasks[g.task_of[n]].id, kind.as_str())).collect()
        };
        let named = |pairs: &[&str]| -> Vec<String> { pairs.iter().map(|p| p.to_string()).collect() };
        assert_eq!(g.len(), 4, "the two tasks 'a' share a node");
        assert_eq!(g.successors.len(), 4);
        assert_eq!(edges(&g.predecessors[node("c")]), named(&["start SS", "a FF"]), "the dangling one is left out");
        assert_eq!(edges(&g.predecessors[node("a")]), named(&["start FS", "c SF"]));
        assert_eq!(edges(&g.successors[node("start")]), named(&["a FS", "c SS"]));
        assert_eq!(edges(&g.successors[node("c")]), named(&["a SF", "end FS"]));
        assert_eq!(edges(&g.successors[node("end")]), named(&[]));
        let degrees: Vec<usize> = g.predecessors.iter().map(<[_]>::len).collect();
        assert_eq!(degrees, [0, 2, 2, 2]);
        assert!(g.topo_position.is_none(), "a and c depend on each other");
    }
}
