//! Scopes as the reference derives them: a task with `scope_start` opens a scope, the task whose
//! `scope_end` names it closes it, and the members are the tasks reachable forward from the
//! start and backward from the end. On an acyclic graph every member lies between start and end
//! in a topological order, so both searches stay inside that window: the cost follows the size
//! of the scopes, not of the blueprint. Listing members is quadratic for scopes nested N deep
//! (N²/2 entries), so validation and rendering use [`scope_tree`] instead: the nesting (each
//! scope's parent and size, each task's innermost scope) in time linear in N, falling back to
//! the member lists only to name interlaced scopes (or on a graph with a cycle).

use crate::graph::TaskGraph;
use crate::model::Blueprint;
use foldhash::{HashMap, HashMapExt};

/// One scope, as task indices (the first task of each id).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopeSpan {
    pub start: usize,
    pub end: usize,
    /// Members including start and end, ascending task index.
    pub members: Vec<usize>,
}

/// Every scope whose start has a closing task, in task order.
pub fn scopes(bp: &Blueprint) -> Vec<ScopeSpan> {
    let graph = TaskGraph::new(bp);
    scopes_in(bp, &graph)
}

pub fn scopes_in(bp: &Blueprint, graph: &TaskGraph<'_>) -> Vec<ScopeSpan> {
    let mut out = Vec::new();
    let mut scratch = Scratch::new(graph.len());
    for c in closed_scopes(bp, graph) {
        let mut members: Vec<usize> =
            member_nodes(graph, c.start_node, c.end_node, &mut scratch).into_iter().map(|n| graph.task_of[n]).collect();
        members.sort_unstable();
        out.push(ScopeSpan { start: c.start, end: c.end, members });
    }
    out
}

/// A scope whose start has a closing task: its tasks and their graph nodes.
#[derive(Debug, Clone, Copy)]
struct Closed {
    /// The task that opens it (with duplicate ids, not necessarily the first of its id).
    start: usize,
    /// The first task with the closing task's id.
    end: usize,
    start_node: usize,
    end_node: usize,
}

/// Every scope whose start has a closing task, in task order, once per start node.
fn closed_scopes(bp: &Blueprint, graph: &TaskGraph<'_>) -> Vec<Closed> {
    // The reference keeps the last closing task of each start.
    let mut ends: HashMap<&str, usize> = HashMap::new();
    for (i, t) in bp.tasks.iter().enumerate() {
        if let Some(end) = t.scope_end.as_deref().filter(|e| !e.is_empty()) {
            ends.insert(end, i);
        }
    }
    let mut out = Vec::new();
    let mut seen_start = vec![false; graph.len()];
    for (i, t) in bp.tasks.iter().enumerate() {
        if t.scope_start.is_none() {
            continue;
        }
        let Some(&end_task) = ends.get(t.id.as_str()) else { continue };
        let start_node = graph.node_of[t.id.as_str()];
        if std::mem::replace(&mut seen_start[start_node], true) {
            continue;
        }
        let end_node = graph.node_of[bp.tasks[end_task].id.as_str()];
        out.push(Closed { start: i, end: graph.task_of[end_node], start_node, end_node });
    }
    out
}

/// One scope of a [`ScopeTree`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeScope {
    /// The task that opens it.
    pub start: usize,
    /// The (first) task with the closing task's id.
    pub end: usize,
    /// The smallest scope that holds this one.
    pub parent: Option<usize>,
    /// Its members, including start and end (0 when the end does not depend on the start).
    pub size: usize,
}

/// Scopes that are nested or disjoint, as a tree: what validation and rendering need, without
/// listing every scope's members (which, for scopes nested N deep, is N²/2 entries).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopeTree {
    /// In the order of [`scopes_in`].
    pub scopes: Vec<TreeScope>,
    /// The innermost scope of each node of the task graph.
    pub home: Vec<Option<usize>>,
}

/// The scopes as a tree, or `None` when two scopes are interlaced or the graph has a cycle
/// (then [`scopes_in`] is the answer, at the cost of every scope's members).
///
/// Scopes are taken innermost first (by the topological position of their starts, latest
/// first: a scope nested in another starts after it). Each scope found becomes one node of a
/// contracted graph (a union-find set, with the edges that leave it), so the searches of the
/// scope around it step over it in one move instead of walking its members again: for N
/// nested scopes the whole computation is linear in N. Contraction is exact while every
/// contracted scope a search meets is entered at its start (forward) and left at its end
/// (backward); when one is not, that scope's members are computed plainly, as
/// [`member_nodes`] does, and a scope found to hold part of an earlier one (interlaced)
/// answers `None`. Iterative throughout: no recursion that a file's nesting could drive.
pub fn scope_tree(bp: &Blueprint, graph: &TaskGraph<'_>) -> Option<ScopeTree> {
    let pos = graph.topo_position.as_ref()?;
    let closed = closed_scopes(bp, graph);
    let n = graph.len();
    let mut tree = Contraction::new(n);
    let mut scopes: Vec<TreeScope> =
        closed.iter().map(|c| TreeScope { start: c.start, end: c.end, parent: None, size: 0 }).collect();
    let mut home: Vec<Option<usize>> = vec![None; n];
    let mut order: Vec<usize> = (0..closed.len()).collect();
    order.sort_unstable_by_key(|&k| std::cmp::Reverse(pos[closed[k].start_node]));
    let mut scratch = Scratch::new(n);
    for &k in &order {
        let Closed { start_node: s, end_node: e, .. } = closed[k];
        if pos[s] > pos[e] {
            continue; // the end comes first: no member
        }
        let members = if s == e { Some(vec![s]) } else { tree.contracted_members(graph, pos, s, e) };
        let members = match members {
            Some(members) => members,
            None => {
                // Plain members, then grouped by the contracted scope (if any) holding them.
                let plain = member_nodes(graph, s, e, &mut scratch);
                tree.group(&plain)?
            }
        };
        if members.is_empty() {
            continue;
        }
        let mut size = 0;
        for &r in &members {
            match tree.scope[r] {
                Some(child) => {
                    scopes[child].parent = Some(k);
                    size += tree.size[r];
                }
                None => {
                    home[r] = Some(k);
                    size += 1;
                }
            }
        }
        scopes[k].size = size;
        tree.merge(graph, s, e, k, size, &members);
    }
    Some(ScopeTree { scopes, home })
}

/// The union-find of contracted scopes. Each set is named by its start node (`rep`), and
/// keeps the edges that leave it: `exits` (targets of edges out of it), `entries` (sources of
/// edges into it).
struct Contraction {
    parent: Vec<usize>,
    /// At a set's name: the scope it is, its size, its end node, its edges.
    scope: Vec<Option<usize>>,
    size: Vec<usize>,
    end: Vec<usize>,
    exits: Vec<Vec<usize>>,
    entries: Vec<Vec<usize>>,
    /// Search marks, by generation (no clearing between searches).
    generation: u32,
    forward: Vec<u32>,
    backward: Vec<u32>,
    entered_at_start: Vec<u32>,
    left_at_end: Vec<u32>,
}

impl Contraction {
    fn new(n: usize) -> Self {
        Contraction {
            parent: (0..n).collect(),
            scope: vec![None; n],
            size: vec![1; n],
            end: (0..n).collect(),
            exits: vec![Vec::new(); n],
            entries: vec![Vec::new(); n],
            generation: 0,
            forward: vec![0; n],
            backward: vec![0; n],
            entered_at_start: vec![0; n],
            left_at_end: vec![0; n],
        }
    }

    fn find(&mut self, mut x: usize) -> usize {
        while self.parent[x] != x {
            let grandparent = self.parent[self.parent[x]];
            self.parent[x] = grandparent;
            x = grandparent;
        }
        x
    }

    /// The sets between `s` and `e` (forward from `s`, backward from `e`), if contraction
    /// gives them exactly.
    fn contracted_members(&mut self, graph: &TaskGraph<'_>, pos: &[usize], s: usize, e: usize) -> Option<Vec<usize>> {
        self.generation += 1;
        let generation = self.generation;
        // Forward from s, within the window: a set starts at its name's position.
        let mut reached = vec![s];
        self.forward[s] = generation;
        let mut stack = vec![s];
        while let Some(u) = stack.pop() {
            let targets =
                if self.scope[u].is_some() { std::mem::take(&mut self.exits[u]) } else { successors(graph, u) };
            for &v in &targets {
                let r = self.find(v);
                if r == u {
                    continue;
                }
                if self.scope[r].is_some() && v == r {
                    self.entered_at_start[r] = generation;
                }
                if self.forward[r] != generation && pos[r] <= pos[e] {
                    self.forward[r] = generation;
                    reached.push(r);
                    stack.push(r);
                }
            }
            if self.scope[u].is_some() {
                self.exits[u] = targets;
            }
        }
        // Backward from e, within the window: a set ends at its end's position.
        let e0 = self.find(e);
        if self.forward[e0] != generation {
            return Some(Vec::new()); // the end does not depend on the start
        }
        self.backward[e0] = generation;
        if self.scope[e0].is_some() && self.end[e0] == e {
            self.left_at_end[e0] = generation;
        }
        let mut stack = vec![e0];
        while let Some(u) = stack.pop() {
            let sources =
                if self.scope[u].is_some() { std::mem::take(&mut self.entries[u]) } else { predecessors(graph, u) };
            for &p in &sources {
                let r = self.find(p);
                if r == u {
                    continue;
                }
                if self.scope[r].is_some() && self.end[r] == p {
                    self.left_at_end[r] = generation;
                }
                let last = if self.scope[r].is_some() { pos[self.end[r]] } else { pos[r] };
                // Only what the forward search reached can be a member.
                if self.backward[r] != generation && last >= pos[s] && self.forward[r] == generation {
                    self.backward[r] = generation;
                    stack.push(r);
                }
            }
            if self.scope[u].is_some() {
                self.entries[u] = sources;
            }
        }
        let mut members = Vec::new();
        for r in reached {
            if self.backward[r] != generation {
                continue;
            }
            if self.scope[r].is_some() && (self.entered_at_start[r] != generation || self.left_at_end[r] != generation)
            {
                return None; // met part-way: contraction may over-reach
            }
            members.push(r);
        }
        Some(members)
    }

    /// Plain member nodes grouped by their sets; `None` when one set is only partly inside
    /// (two scopes interlaced).
    fn group(&mut self, plain: &[usize]) -> Option<Vec<usize>> {
        self.generation += 1;
        let generation = self.generation;
        let mut sets = Vec::new();
        let mut counts: HashMap<usize, usize> = HashMap::new();
        for &m in plain {
            let r = self.find(m);
            if self.forward[r] != generation {
                self.forward[r] = generation;
                sets.push(r);
            }
            *counts.entry(r).or_insert(0) += 1;
        }
        for &r in &sets {
            if self.scope[r].is_some() && counts[&r] != self.size[r] {
                return None;
            }
        }
        Some(sets)
    }

    /// Makes `members` (sets) one set named `s`, scope `k`, keeping the edges that leave it.
    fn merge(&mut self, graph: &TaskGraph<'_>, s: usize, e: usize, k: usize, size: usize, members: &[usize]) {
        for &r in members {
            self.parent[r] = s;
        }
        self.parent[s] = s;
        let mut exits = Vec::new();
        let mut entries = Vec::new();
        for &r in members {
            if self.scope[r].is_some() {
                exits.append(&mut self.exits[r]);
                entries.append(&mut self.entries[r]);
            } else {
                exits.extend(successors(graph, r));
                entries.extend(predecessors(graph, r));
            }
        }
        exits.retain(|&v| self.find(v) != s);
        entries.retain(|&p| self.find(p) != s);
        self.exits[s] = exits;
        self.entries[s] = entries;
        self.scope[s] = Some(k);
        self.size[s] = size;
        self.end[s] = e;
    }
}

fn successors(graph: &TaskGraph<'_>, n: usize) -> Vec<usize> {
    graph.successors[n].iter().map(|&(m, _)| m).collect()
}

fn predecessors(graph: &TaskGraph<'_>, n: usize) -> Vec<usize> {
    graph.predecessors[n].iter().map(|&(m, _)| m).collect()
}

/// Marks reused across scopes, cleared after each use, so that many small scopes in a large
/// blueprint cost their own size only.
pub struct Scratch {
    forward: Vec<bool>,
    backward: Vec<bool>,
}

impl Scratch {
    pub fn new(nodes: usize) -> Self {
        Scratch { forward: vec![false; nodes], backward: vec![false; nodes] }
    }
}

/// Nodes reachable forward from `start` and backward from `end`.
pub fn member_nodes(graph: &TaskGraph<'_>, start: usize, end: usize, scratch: &mut Scratch) -> Vec<usize> {
    if start == end {
        return vec![start];
    }
    let (lo, hi) = match &graph.topo_position {
        Some(pos) if pos[start] > pos[end] => return Vec::new(),
        Some(pos) => (pos[start], pos[end]),
        None => (0, usize::MAX),
    };
    let within = |n: usize| graph.topo_position.as_ref().is_none_or(|pos| pos[n] >= lo && pos[n] <= hi);
    let reached = graph.reachable_into(start, &graph.successors, within, &mut scratch.forward);
    let back = graph.reachable_into(end, &graph.predecessors, within, &mut scratch.backward);
    let members = reached.iter().copied().filter(|&n| scratch.backward[n]).collect();
    for n in reached {
        scratch.forward[n] = false;
    }
    for n in back {
        scratch.backward[n] = false;
    }
    members
}

#[cfg(test)]
mod tree_tests {
    use super::*;

    /// A blueprint of `n` tasks `t0..`, with `edges` (from, to) and `scopes` (start, end).
    fn blueprint(n: usize, edges: &[(usize, usize)], scopes: &[(usize, usize)]) -> Blueprint {
        let mut tasks: Vec<serde_json::Value> = (0..n)
            .map(|i| serde_json::json!({"id": format!("t{i}"), "type": if i == 0 { "system.start" } else { "shell.run" }}))
            .collect();
        for &(from, to) in edges {
            let deps = tasks[to].as_object_mut().unwrap().entry("depends_on").or_insert(serde_json::json!([]));
            deps.as_array_mut().unwrap().push(serde_json::json!({"id": format!("t{from}")}));
        }
        for &(start, end) in scopes {
            tasks[start]["scope_start"] = serde_json::json!({});
            tasks[end]["scope_end"] = serde_json::json!(format!("t{start}"));
        }
        let text = serde_json::json!({"id": "b", "name": "B", "version": "1.0", "tasks": tasks}).to_string();
        crate::load(&text).expect("loads").blueprint
    }

    fn laminar(spans: &[ScopeSpan]) -> bool {
        let sets: Vec<std::collections::BTreeSet<usize>> =
            spans.iter().map(|s| s.members.iter().copied().collect()).collect();
        sets.iter()
            .enumerate()
            .all(|(i, a)| sets.iter().skip(i + 1).all(|b| a.is_disjoint(b) || a.is_subset(b) || b.is_subset(a)))
    }

    /// The tree must say what the member lists say.
    fn agrees(bp: &Blueprint) -> bool {
        let graph = TaskGraph::new(bp);
        let spans = scopes_in(bp, &graph);
        let Some(tree) = scope_tree(bp, &graph) else {
            assert!(!laminar(&spans), "a tree exists for nested scopes: {spans:?}");
            return false;
        };
        assert!(laminar(&spans), "no tree for interlaced scopes: {spans:?} {tree:?}");
        assert_eq!(tree.scopes.len(), spans.len());
        for (k, (t, s)) in tree.scopes.iter().zip(&spans).enumerate() {
            assert_eq!((t.start, t.end, t.size), (s.start, s.end, s.members.len()), "scope {k}: {spans:?}");
            let parent = (0..spans.len())
                .filter(|&o| o != k && spans[o].members.len() > s.members.len() && !s.members.is_empty())
                .filter(|&o| s.members.iter().all(|m| spans[o].members.contains(m)))
                .min_by_key(|&o| spans[o].members.len());
            assert_eq!(t.parent, parent, "parent of scope {k}: {spans:?}");
        }
        for node in 0..graph.len() {
            let task = graph.task_of[node];
            let home =
                (0..spans.len()).filter(|&o| spans[o].members.contains(&task)).min_by_key(|&o| spans[o].members.len());
            assert_eq!(tree.home[node], home, "home of t{task}: {spans:?}");
        }
        true
    }

    #[test]
    fn nested_chains_and_side_entries() {
        // start -> a -> b -> c -> d -> end-ish, scopes (a, d) around (b, c).
        assert!(agrees(&blueprint(6, &[(0, 1), (1, 2), (2, 3), (3, 4), (4, 5)], &[(1, 4), (2, 3)])));
        // An edge into the middle of the inner scope from the outer one, and one out of it.
        assert!(agrees(&blueprint(
            7,
            &[(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (1, 3), (3, 5), (5, 6)],
            &[(1, 5), (2, 4)]
        )));
        // Two disjoint scopes side by side in one outer scope, and an empty scope.
        assert!(agrees(&blueprint(
            8,
            &[(0, 1), (1, 2), (2, 3), (1, 4), (4, 5), (3, 6), (5, 6), (6, 7)],
            &[(1, 6), (2, 3), (4, 5), (7, 3)]
        )));
        // Interlaced: (1, 3) and (2, 4) on a chain.
        assert!(!agrees(&blueprint(6, &[(0, 1), (1, 2), (2, 3), (3, 4), (4, 5)], &[(1, 3), (2, 4)])));
    }

    #[test]
    fn deep_nesting_is_linear() {
        let depth = 20_000;
        let n = 2 * depth + 2;
        let edges: Vec<(usize, usize)> = (0..n - 1).map(|i| (i, i + 1)).collect();
        let scopes: Vec<(usize, usize)> = (1..=depth).map(|i| (i, n - 1 - i)).collect();
        let bp = blueprint(n, &edges, &scopes);
        let graph = TaskGraph::new(&bp);
        let started = std::time::Instant::now();
        let tree = scope_tree(&bp, &graph).expect("nested");
        println!("scope tree of {depth} nested scopes: {:?}", started.elapsed());
        assert_eq!(tree.scopes[0].size, n - 2);
        assert_eq!(tree.scopes[depth - 1].size, 2);
        assert!(tree.scopes.windows(2).all(|w| w[1].parent.is_some()));
    }

    #[test]
    fn random_dags_agree_with_the_member_lists() {
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = |bound: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % bound as u64) as usize
        };
        let (mut nested, mut interlaced) = (0, 0);
        for _ in 0..3000 {
            let n = 3 + next(14);
            // A random topological order, edges forward in it.
            let mut order: Vec<usize> = (0..n).collect();
            for i in (1..n).rev() {
                order.swap(i, next(i + 1));
            }
            let mut edges = Vec::new();
            for a in 0..n {
                for b in a + 1..n {
                    if next(100) < 30 {
                        edges.push((order[a], order[b]));
                    }
                }
            }
            let mut scopes = Vec::new();
            let mut closed = vec![false; n];
            for _ in 0..next(5) {
                let (start, end) = (next(n), next(n));
                if !closed[end] {
                    closed[end] = true;
                    scopes.push((start, end));
                }
            }
            if agrees(&blueprint(n, &edges, &scopes)) {
                nested += 1;
            } else {
                interlaced += 1;
            }
        }
        println!("{nested} nested, {interlaced} interlaced");
        assert!(nested > 100 && interlaced > 20, "both kinds are exercised");
    }
}
