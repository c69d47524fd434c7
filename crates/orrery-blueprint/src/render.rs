//! The DAG as a picture: Graphviz DOT or Mermaid, with scopes drawn as (nested) clusters and
//! each dependency type drawn its own way.

use crate::graph::TaskGraph;
use crate::model::{Blueprint, DependencyType, ScopePolicy};
use crate::scope::{scopes_in, ScopeSpan};
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

/// Scopes as a tree: each scope's parent and each node's innermost scope.
struct Nesting {
    scopes: Vec<ScopeSpan>,
    parent: Vec<Option<usize>>,
    /// Innermost scope of each node of the task graph.
    home: Vec<Option<usize>>,
}

impl Nesting {
    fn new(bp: &Blueprint, graph: &TaskGraph<'_>) -> Self {
        let scopes = scopes_in(bp, graph);
        let mut order: Vec<usize> = (0..scopes.len()).collect();
        order.sort_by_key(|&s| std::cmp::Reverse(scopes[s].members.len()));
        let mut parent = vec![None; scopes.len()];
        let mut home = vec![None; graph.len()];
        for &s in &order {
            let nodes: Vec<usize> = scopes[s].members.iter().map(|&t| graph.node_of[bp.tasks[t].id.as_str()]).collect();
            parent[s] = nodes.first().and_then(|&n| home[n]);
            for n in nodes {
                home[n] = Some(s);
            }
        }
        Nesting { scopes, parent, home }
    }

    fn children(&self, of: Option<usize>) -> impl Iterator<Item = usize> + '_ {
        (0..self.scopes.len()).filter(move |&s| self.parent[s] == of)
    }

    fn label(&self, bp: &Blueprint, s: usize) -> String {
        let start = &bp.tasks[self.scopes[s].start];
        let scope = start.scope_start.as_ref().expect("scopes open on scope_start tasks");
        let name = scope.name.clone().filter(|n| !n.is_empty()).unwrap_or_else(|| start.id.clone());
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
    dot_cluster(bp, graph, nesting, None, 1, &mut out);
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

fn dot_cluster(
    bp: &Blueprint,
    graph: &TaskGraph<'_>,
    nesting: &Nesting,
    scope: Option<usize>,
    depth: usize,
    out: &mut String,
) {
    let pad = "    ".repeat(depth);
    for (node, &task) in graph.task_of.iter().enumerate() {
        if nesting.home[node] == scope {
            let t = &bp.tasks[task];
            let shape = if t.task_type.is_start() || t.task_type.is_end() {
                ", shape=ellipse"
            } else if t.task_type.is_composite() {
                ", shape=box3d"
            } else {
                ""
            };
            let label = format!("{}\n{}", t.id, t.task_type);
            let _ = writeln!(out, "{pad}{} [label={}{shape}];", dot_quote(&t.id), dot_quote(&label));
        }
    }
    for child in nesting.children(scope) {
        let _ = writeln!(
            out,
            "{pad}subgraph {} {{",
            dot_quote(&format!("cluster_{}", bp.tasks[nesting.scopes[child].start].id))
        );
        let _ = writeln!(out, "{pad}    label={};", dot_quote(&nesting.label(bp, child)));
        let _ = writeln!(out, "{pad}    style=rounded;");
        dot_cluster(bp, graph, nesting, Some(child), depth + 1, out);
        let _ = writeln!(out, "{pad}}}");
    }
}

fn mermaid_text(s: &str) -> String {
    s.replace('"', "#quot;").replace('<', "#lt;").replace('>', "#gt;")
}

fn mermaid(bp: &Blueprint, graph: &TaskGraph<'_>, nesting: &Nesting) -> String {
    let mut out = String::from("flowchart TD\n");
    mermaid_cluster(bp, graph, nesting, None, 1, &mut out);
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

fn mermaid_cluster(
    bp: &Blueprint,
    graph: &TaskGraph<'_>,
    nesting: &Nesting,
    scope: Option<usize>,
    depth: usize,
    out: &mut String,
) {
    let pad = "    ".repeat(depth);
    for (node, &task) in graph.task_of.iter().enumerate() {
        if nesting.home[node] == scope {
            let t = &bp.tasks[task];
            let text = mermaid_text(&format!("{}<br/>{}", t.id, t.task_type)).replace("#lt;br/#gt;", "<br/>");
            let shape = if t.task_type.is_start() || t.task_type.is_end() {
                ("([\"", "\"])")
            } else if t.task_type.is_composite() {
                ("[[\"", "\"]]")
            } else {
                ("[\"", "\"]")
            };
            let _ = writeln!(out, "{pad}n{node}{}{text}{}", shape.0, shape.1);
        }
    }
    for child in nesting.children(scope) {
        let _ = writeln!(out, "{pad}subgraph s{child}[\"{}\"]", mermaid_text(&nesting.label(bp, child)));
        mermaid_cluster(bp, graph, nesting, Some(child), depth + 1, out);
        let _ = writeln!(out, "{pad}end");
    }
}
