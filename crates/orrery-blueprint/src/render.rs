//! The DAG as a picture: Graphviz DOT or Mermaid, with scopes drawn as (nested) clusters and
//! each dependency type drawn its own way.

use crate::graph::TaskGraph;
use crate::model::{Blueprint, DependencyType, ScopePolicy};
use crate::scope::{scope_tree, scopes_in};
use std::fmt::Write;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GraphFormat {
    Dot,
    Mermaid,
}

pub fn render(bp: &Blueprint, format: GraphFormat) -> String {
    let graph = TaskGraph::new(bp);
    let nesting = Nesting::new(bp, &graph);
    match format {
        GraphFormat::Dot => dot(bp, &graph, &nesting),
        GraphFormat::Mermaid => mermaid(bp, &graph, &nesting),
    }
}

/// Scopes as a tree: each scope's parent and each node's innermost scope, with the lists
/// rendering walks (each scope's nodes and children), so that drawing is linear in the
/// blueprint's size however deep the nesting.
struct Nesting {
    /// The task that opens each scope.
    starts: Vec<usize>,
    /// Nodes (ascending) whose innermost scope is each scope; the last entry is the top level.
    nodes: Vec<Vec<usize>>,
    /// Child scopes (ascending) of each scope; the last entry is the top level's.
    children: Vec<Vec<usize>>,
}

/// Indentation stops growing past this depth: deeper clusters would make the text quadratic in
/// the nesting depth (DOT and Mermaid ignore indentation).
const MAX_INDENT: usize = 16;

fn pad(depth: usize) -> String {
    "    ".repeat(depth.min(MAX_INDENT))
}

impl Nesting {
    fn new(bp: &Blueprint, graph: &TaskGraph<'_>) -> Self {
        let (starts, parent, home) = match scope_tree(bp, graph) {
            Some(tree) => (
                tree.scopes.iter().map(|s| s.start).collect::<Vec<_>>(),
                tree.scopes.iter().map(|s| s.parent).collect::<Vec<_>>(),
                tree.home,
            ),
            None => {
                // Interlaced scopes (or a cycle): the tree the largest-first assignment gives.
                let scopes = scopes_in(bp, graph);
                let mut order: Vec<usize> = (0..scopes.len()).collect();
                order.sort_by_key(|&s| std::cmp::Reverse(scopes[s].members.len()));
                let mut parent = vec![None; scopes.len()];
                let mut home = vec![None; graph.len()];
                for &s in &order {
                    let nodes: Vec<usize> =
                        scopes[s].members.iter().map(|&t| graph.node_of[bp.tasks[t].id.as_str()]).collect();
                    parent[s] = nodes.first().and_then(|&n| home[n]);
                    for n in nodes {
                        home[n] = Some(s);
                    }
                }
                (scopes.iter().map(|s| s.start).collect(), parent, home)
            }
        };
        let top = starts.len();
        let mut nodes = vec![Vec::new(); top + 1];
        for (node, scope) in home.iter().enumerate() {
            nodes[scope.unwrap_or(top)].push(node);
        }
        let mut children = vec![Vec::new(); top + 1];
        for (s, p) in parent.iter().enumerate() {
            children[p.unwrap_or(top)].push(s);
        }
        Nesting { starts, nodes, children }
    }

    fn top(&self) -> usize {
        self.starts.len()
    }

    /// Visits the clusters in document order without recursion: `node(out, node, depth)`
    /// for each node of a cluster, `open(out, scope, depth)` and `close(out, depth)` around
    /// each child cluster.
    fn walk(
        &self,
        out: &mut String,
        mut node: impl FnMut(&mut String, usize, usize),
        mut open: impl FnMut(&mut String, usize, usize),
        mut close: impl FnMut(&mut String, usize),
    ) {
        enum Step {
            Open(usize, usize),
            Close(usize),
        }
        for &n in &self.nodes[self.top()] {
            node(out, n, 1);
        }
        let mut stack: Vec<Step> = self.children[self.top()].iter().rev().map(|&c| Step::Open(c, 1)).collect();
        while let Some(step) = stack.pop() {
            match step {
                Step::Close(depth) => close(out, depth),
                Step::Open(scope, depth) => {
                    open(out, scope, depth);
                    for &n in &self.nodes[scope] {
                        node(out, n, depth + 1);
                    }
                    stack.push(Step::Close(depth));
                    stack.extend(self.children[scope].iter().rev().map(|&c| Step::Open(c, depth + 1)));
                }
            }
        }
    }

    fn label(&self, bp: &Blueprint, s: usize) -> String {
        let start = &bp.tasks[self.starts[s]];
        let scope = start.scope_start.as_ref().expect("scopes open on scope_start tasks");
        let name = scope.name.clone().filter(|n| !n.is_empty()).unwrap_or_else(|| start.id.to_string());
        let policy = match scope.policy() {
            ScopePolicy::Skip => "skip".to_string(),
            ScopePolicy::Retry(r) => format!("retry x{}", r.retries),
            ScopePolicy::While(w) => match w.max_iterations {
                Some(n) => format!("while {} (max {n})", w.condition),
                None => format!("while {}", w.condition),
            },
        };
        format!("{name} [{policy}]")
    }
}

fn dot_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn dot(bp: &Blueprint, graph: &TaskGraph<'_>, nesting: &Nesting) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "digraph {} {{", dot_quote(&bp.id));
    let _ = writeln!(out, "    label={};", dot_quote(&bp.name));
    let _ = writeln!(out, "    rankdir=TB;");
    let _ = writeln!(out, "    node [shape=box, style=rounded];");
    dot_cluster(bp, graph, nesting, &mut out);
    for t in &bp.tasks {
        for d in &t.depends_on {
            if graph.node_of.contains_key(d.id.as_str()) {
                let style = match d.dep_type {
                    DependencyType::FS => String::new(),
                    DependencyType::SS => " [label=\"SS\", style=dashed]".into(),
                    DependencyType::FF => " [label=\"FF\", style=dotted]".into(),
                    DependencyType::SF => " [label=\"SF\", style=bold, color=red]".into(),
                };
                let _ = writeln!(out, "    {} -> {}{style};", dot_quote(&d.id), dot_quote(&t.id));
            }
        }
    }
    out.push_str("}\n");
    out
}

fn dot_cluster(bp: &Blueprint, graph: &TaskGraph<'_>, nesting: &Nesting, out: &mut String) {
    nesting.walk(
        out,
        |out, node, depth| {
            let t = &bp.tasks[graph.task_of[node]];
            let shape = if t.task_type.is_start() || t.task_type.is_end() {
                ", shape=ellipse"
            } else if t.task_type.is_composite() {
                ", shape=box3d"
            } else {
                ""
            };
            let label = format!("{}\n{}", t.id, t.task_type);
            let _ = writeln!(out, "{}{} [label={}{shape}];", pad(depth), dot_quote(&t.id), dot_quote(&label));
        },
        |out, scope, depth| {
            let pad = pad(depth);
            let _ = writeln!(
                out,
                "{pad}subgraph {} {{",
                dot_quote(&format!("cluster_{}", bp.tasks[nesting.starts[scope]].id))
            );
            let _ = writeln!(out, "{pad}    label={};", dot_quote(&nesting.label(bp, scope)));
            let _ = writeln!(out, "{pad}    style=rounded;");
        },
        |out, depth| {
            let _ = writeln!(out, "{}}}", pad(depth));
        },
    );
}

fn mermaid_text(s: &str) -> String {
    s.replace('"', "#quot;").replace('<', "#lt;").replace('>', "#gt;")
}

fn mermaid(bp: &Blueprint, graph: &TaskGraph<'_>, nesting: &Nesting) -> String {
    let mut out = String::from("flowchart TD\n");
    mermaid_cluster(bp, graph, nesting, &mut out);
    for t in &bp.tasks {
        let to = graph.node_of[t.id.as_str()];
        for d in &t.depends_on {
            if let Some(&from) = graph.node_of.get(d.id.as_str()) {
                let arrow = match d.dep_type {
                    DependencyType::FS => "-->".to_string(),
                    DependencyType::SS => "-. SS .->".into(),
                    DependencyType::FF => "-- FF -->".into(),
                    DependencyType::SF => "== SF ==>".into(),
                };
                let _ = writeln!(out, "    n{from} {arrow} n{to}");
            }
        }
    }
    out
}

fn mermaid_cluster(bp: &Blueprint, graph: &TaskGraph<'_>, nesting: &Nesting, out: &mut String) {
    nesting.walk(
        out,
        |out, node, depth| {
            let t = &bp.tasks[graph.task_of[node]];
            let text = mermaid_text(&format!("{}<br/>{}", t.id, t.task_type)).replace("#lt;br/#gt;", "<br/>");
            let shape = if t.task_type.is_start() || t.task_type.is_end() {
                ("([\"", "\"])")
            } else if t.task_type.is_composite() {
                ("[[\"", "\"]]")
            } else {
                ("[\"", "\"]")
            };
            let _ = writeln!(out, "{}n{node}{}{text}{}", pad(depth), shape.0, shape.1);
        },
        |out, scope, depth| {
            let _ = writeln!(out, "{}subgraph s{scope}[\"{}\"]", pad(depth), mermaid_text(&nesting.label(bp, scope)));
        },
        |out, depth| {
            let _ = writeln!(out, "{}end", pad(depth));
        },
    );
}
