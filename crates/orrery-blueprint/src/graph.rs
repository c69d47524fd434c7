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
    pub successors: Vec<Vec<(usize, DependencyType)>>,
    pub predecessors: Vec<Vec<(usize, DependencyType)>>,
    /// Position of each node in a topological order, when the graph has no cycle.
    pub topo_position: Option<Vec<usize>>,
}

impl<'a> TaskGraph<'a> {
    pub fn new(bp: &'a Blueprint) -> Self {
        let mut node_of: HashMap<&str, usize> = HashMap::with_capacity(bp.tasks.len());
        let mut task_of = Vec::with_capacity(bp.tasks.len());
        for (i, t) in bp.tasks.iter().enumerate() {
            node_of.entry(t.id.as_str()).or_insert_with(|| {
                task_of.push(i);
                task_of.len() - 1
            });
        }
        let n = task_of.len();
        let mut successors = vec![Vec::new(); n];
        let mut predecessors = vec![Vec::new(); n];
        for t in &bp.tasks {
            let to = node_of[t.id.as_str()];
            for d in &t.depends_on {
                if let Some(&from) = node_of.get(d.id.as_str()) {
                    successors[from].push((to, d.dep_type));
                    predecessors[to].push((from, d.dep_type));
                }
            }
        }
        let topo_position = topological_positions(&successors, &predecessors);
        TaskGraph { node_of, task_of, successors, predecessors, topo_position }
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
        adjacency: &[Vec<(usize, DependencyType)>],
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

/// Kahn's algorithm; `None` when there is a cycle.
fn topological_positions(
    successors: &[Vec<(usize, DependencyType)>],
    predecessors: &[Vec<(usize, DependencyType)>],
) -> Option<Vec<usize>> {
    let n = successors.len();
    let mut indegree: Vec<usize> = predecessors.iter().map(Vec::len).collect();
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
