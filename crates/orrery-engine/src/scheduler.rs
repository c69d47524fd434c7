//! The scheduler: which tasks may start now and which finished runs may now be recorded as
//! finished, a pure function of a session's task states (docs/format.md §4) that performs no
//! effect; the session runner asks it after every transition.
//!
//! Start constraints: FS needs the predecessor SUCCEEDED or SKIPPED; SS needs it started
//! (RUNNING, or already past it). Finish constraints hold back a task whose run has ended
//! (`Finishing`): FF needs the predecessor SUCCEEDED or SKIPPED; SF (Orrery's, the reference
//! has none) needs it started. The runner keeps its nodes' states in [`States`], which answers
//! as [`decide`] does without a pass over every node each round.

use std::collections::BTreeSet;

use orrery_blueprint::DependencyType;

/// A flattened session graph: one node per task of every blueprint instance.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    pub nodes: Vec<PlanNode>,
}

#[derive(Debug, Clone)]
pub struct PlanNode {
    /// `"{blueprint instance}.{task id}"`.
    pub key: String,
    /// Incoming edges: the predecessor node and how it constrains this one.
    pub predecessors: Vec<(usize, DependencyType)>,
}

/// Where a task is, as the scheduler sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NodeState {
    Pending,
    /// Pending, but asked to be skipped when it would dispatch.
    SkipRequested,
    /// Dispatched; its condition and inputs are being resolved.
    Ready,
    Running,
    /// Its run ended successfully; finishing waits for its FF and SF predecessors.
    Finishing,
    Succeeded,
    Failed,
    Skipped,
}

impl NodeState {
    /// Satisfies FS and FF.
    pub fn is_done(self) -> bool {
        matches!(self, Self::Succeeded | Self::Skipped)
    }
    /// Satisfies SS and SF: the task has started (or was skipped, which counts as done).
    pub fn has_started(self) -> bool {
        matches!(self, Self::Running | Self::Finishing | Self::Succeeded | Self::Skipped)
    }
    /// Nothing more will happen to it.
    pub fn is_final(self) -> bool {
        matches!(self, Self::Succeeded | Self::Skipped | Self::Failed)
    }
}

/// What the runner may do now.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Decisions {
    /// Pending (or skip-requested) tasks whose start constraints all hold, in node order.
    pub start: Vec<usize>,
    /// Finishing tasks whose finish constraints all hold, in node order.
    pub finish: Vec<usize>,
}

/// Whether an edge lets its target start.
fn start_holds(kind: DependencyType, predecessor: NodeState) -> bool {
    match kind {
        DependencyType::FS => predecessor.is_done(),
        DependencyType::SS => predecessor.has_started(),
        DependencyType::FF | DependencyType::SF => true,
    }
}

/// Whether an edge lets its target finish.
fn finish_holds(kind: DependencyType, predecessor: NodeState) -> bool {
    match kind {
        DependencyType::FF => predecessor.is_done(),
        DependencyType::SF => predecessor.has_started(),
        DependencyType::FS | DependencyType::SS => true,
    }
}

/// Decides what may start and finish, given every node's state (indexed like `plan.nodes`).
pub fn decide(plan: &Plan, states: &[NodeState]) -> Decisions {
    assert_eq!(plan.nodes.len(), states.len(), "one state per plan node");
    let mut decisions = Decisions::default();
    for (i, node) in plan.nodes.iter().enumerate() {
        match states[i] {
            NodeState::Pending | NodeState::SkipRequested
                if node.predecessors.iter().all(|&(p, kind)| start_holds(kind, states[p])) =>
            {
                decisions.start.push(i)
            }
            NodeState::Finishing if node.predecessors.iter().all(|&(p, kind)| finish_holds(kind, states[p])) => {
                decisions.finish.push(i)
            }
            _ => {}
        }
    }
    decisions
}

/// Every node's state, and what [`decide`] answers for them, kept current as they change: a
/// write (through `IndexMut`) marks the node, and [`States::finishing`] looks again only at
/// the marked nodes and at their successors, whose counts of edges not yet holding it updates.
/// A round was a pass over every node and its edges, which grew with the blueprint: with a
/// fan-out of 5,000 tasks each of the 5,000 rounds passed over 5,000 nodes. The tasks that may
/// start are taken one at a time ([`States::next_start`]), the limited ones (processes, bound
/// by the session's parallelism) only while a slot is free: the thousands that wait for one
/// are not passed over each round either. Reads see a slice (`Deref`).
pub struct States {
    values: Vec<NodeState>,
    /// Each node's state when [`States::finishing`] last looked at it.
    seen: Vec<NodeState>,
    /// Each node's outgoing edges: (successor, kind).
    successors: Vec<Vec<(usize, DependencyType)>>,
    /// Each node's incoming edges that do not let it start, and finish.
    unmet: Vec<(u32, u32)>,
    marked: Vec<usize>,
    is_marked: Vec<bool>,
    /// Whether a node is limited (see [`States::next_start`]).
    limited: Vec<bool>,
    /// The nodes that may start, limited and not.
    start: [BTreeSet<usize>; 2],
    finish: BTreeSet<usize>,
    /// How many nodes are not done: the session is complete at none.
    undone: usize,
}

impl States {
    /// `values` and `limited` indexed like `plan.nodes`.
    pub fn new(plan: &Plan, values: Vec<NodeState>, limited: Vec<bool>) -> States {
        assert_eq!(plan.nodes.len(), values.len(), "one state per plan node");
        assert_eq!(plan.nodes.len(), limited.len(), "one limit per plan node");
        let mut successors = vec![Vec::new(); values.len()];
        let mut unmet = vec![(0, 0); values.len()];
        for (i, node) in plan.nodes.iter().enumerate() {
            for &(p, kind) in &node.predecessors {
                successors[p].push((i, kind));
                unmet[i].0 += u32::from(!start_holds(kind, values[p]));
                unmet[i].1 += u32::from(!finish_holds(kind, values[p]));
            }
        }
        States {
            seen: values.clone(),
            undone: values.iter().filter(|s| !s.is_done()).count(),
            successors,
            unmet,
            marked: (0..values.len()).collect(),
            is_marked: vec![true; values.len()],
            values,
            limited,
            start: [BTreeSet::new(), BTreeSet::new()],
            finish: BTreeSet::new(),
        }
    }

    /// Looks at what changed since the last look; answers the tasks that may finish now, as
    /// [`decide`] does.
    pub fn finishing(&mut self) -> Vec<usize> {
        self.refresh();
        self.finish.iter().copied().collect()
    }

    /// The first task after `after` (in node order) that may start, as of the last look
    /// ([`States::finishing`]), as [`decide`] answers; a limited one only if `limited`.
    pub fn next_start(&self, after: Option<usize>, limited: bool) -> Option<usize> {
        let from = after.map_or(0, |n| n + 1);
        let free = self.start[0].range(from..).next().copied();
        let bound = if limited { self.start[1].range(from..).next().copied() } else { None };
        free.into_iter().chain(bound).min()
    }

    /// Whether every task has finished well: the session is complete.
    pub fn are_complete(&mut self) -> bool {
        self.refresh();
        self.undone == 0
    }

    /// Looks at what changed since the last look.
    fn refresh(&mut self) {
        let mut look = Vec::new();
        for n in std::mem::take(&mut self.marked) {
            self.is_marked[n] = false;
            look.push(n);
            let (was, now) = (self.seen[n], self.values[n]);
            if was == now {
                continue;
            }
            self.seen[n] = now;
            match (was.is_done(), now.is_done()) {
                (false, true) => self.undone -= 1,
                (true, false) => self.undone += 1,
                _ => {}
            }
            for &(s, kind) in &self.successors[n] {
                let unmet = &mut self.unmet[s];
                unmet.0 = unmet.0 + u32::from(start_holds(kind, was)) - u32::from(start_holds(kind, now));
                unmet.1 = unmet.1 + u32::from(finish_holds(kind, was)) - u32::from(finish_holds(kind, now));
                look.push(s);
            }
        }
        for n in look {
            let (start, finish) = self.unmet[n];
            let starts = matches!(self.values[n], NodeState::Pending | NodeState::SkipRequested) && start == 0;
            let finishes = self.values[n] == NodeState::Finishing && finish == 0;
            let start = &mut self.start[usize::from(self.limited[n])];
            if starts {
                start.insert(n)
            } else {
                start.remove(&n)
            };
            if finishes {
                self.finish.insert(n)
            } else {
                self.finish.remove(&n)
            };
        }
    }
}

impl std::ops::Deref for States {
    type Target = [NodeState];
    fn deref(&self) -> &[NodeState] {
        &self.values
    }
}

impl std::ops::Index<usize> for States {
    type Output = NodeState;
    fn index(&self, n: usize) -> &NodeState {
        &self.values[n]
    }
}

impl std::ops::IndexMut<usize> for States {
    fn index_mut(&mut self, n: usize) -> &mut NodeState {
        if !self.is_marked[n] {
            self.is_marked[n] = true;
            self.marked.push(n);
        }
        &mut self.values[n]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use DependencyType::*;
    use NodeState::*;

    /// A plan from `(key, [(predecessor key, type)])` pairs.
    fn plan(spec: &[(&str, &[(&str, DependencyType)])]) -> Plan {
        let index = |k: &str| spec.iter().position(|(key, _)| *key == k).expect("a known key");
        Plan {
            nodes: spec
                .iter()
                .map(|(key, preds)| PlanNode {
                    key: key.to_string(),
                    predecessors: preds.iter().map(|&(p, kind)| (index(p), kind)).collect(),
                })
                .collect(),
        }
    }

    fn keys(plan: &Plan, nodes: &[usize]) -> Vec<String> {
        nodes.iter().map(|&i| plan.nodes[i].key.clone()).collect()
    }

    #[test]
    fn finish_to_start_waits_for_success_or_skip() {
        let p = plan(&[("a", &[]), ("b", &[("a", FS)])]);
        assert_eq!(keys(&p, &decide(&p, &[Pending, Pending]).start), ["a"]);
        for (a, b_starts) in [(Running, false), (Finishing, false), (Succeeded, true), (Skipped, true), (Failed, false)]
        {
            let d = decide(&p, &[a, Pending]);
            assert_eq!(d.start.contains(&1), b_starts, "b with a {a:?}");
        }
    }

    #[test]
    fn start_to_start_waits_only_for_the_predecessor_to_start() {
        let p = plan(&[("a", &[]), ("b", &[("a", SS)])]);
        for (a, b_starts) in [
            (Pending, false),
            (Ready, false),
            (Running, true),
            (Finishing, true),
            (Succeeded, true),
            (Skipped, true),
            (Failed, false),
        ] {
            assert_eq!(decide(&p, &[a, Pending]).start.contains(&1), b_starts, "b with a {a:?}");
        }
    }

    #[test]
    fn finish_to_finish_holds_back_the_finish_not_the_start() {
        let p = plan(&[("a", &[]), ("b", &[("a", FF)])]);
        assert_eq!(keys(&p, &decide(&p, &[Pending, Pending]).start), ["a", "b"], "FF does not delay the start");
        assert!(decide(&p, &[Running, Finishing]).finish.is_empty(), "b may not finish while a runs");
        assert_eq!(keys(&p, &decide(&p, &[Succeeded, Finishing]).finish), ["b"]);
        assert_eq!(keys(&p, &decide(&p, &[Skipped, Finishing]).finish), ["b"]);
    }

    #[test]
    fn start_to_finish_lets_the_task_finish_once_the_predecessor_started() {
        let p = plan(&[("a", &[]), ("b", &[("a", SF)])]);
        assert!(decide(&p, &[Pending, Finishing]).finish.is_empty(), "a has not started");
        assert_eq!(keys(&p, &decide(&p, &[Running, Finishing]).finish), ["b"]);
    }

    #[test]
    fn skip_requested_tasks_dispatch_like_pending_ones_so_they_can_be_skipped() {
        let p = plan(&[("a", &[]), ("b", &[("a", FS)])]);
        assert_eq!(keys(&p, &decide(&p, &[Succeeded, SkipRequested]).start), ["b"]);
    }

    #[test]
    fn a_composite_wraps_its_inner_blueprint_with_ss_and_ff_edges() {
        // C -> I.start (SS), I.end -> C (FF): the inner blueprint starts once C runs, and C
        // finishes only after the inner end.
        let p = plan(&[("root.C", &[]), ("I.start", &[("root.C", SS)]), ("I.end", &[("I.start", FS)])]);
        let mut p = p;
        p.nodes[0].predecessors.push((2, FF));
        let d = decide(&p, &[Pending, Pending, Pending]);
        assert_eq!(keys(&p, &d.start), ["root.C"], "the inner start waits for the composite to start");
        let d = decide(&p, &[Running, Pending, Pending]);
        assert_eq!(keys(&p, &d.start), ["I.start"]);
        let d = decide(&p, &[Finishing, Succeeded, Running]);
        assert!(d.finish.is_empty(), "the composite waits for the inner end");
        let d = decide(&p, &[Finishing, Succeeded, Succeeded]);
        assert_eq!(keys(&p, &d.finish), ["root.C"]);
    }

    #[test]
    fn states_answer_what_decide_answers_as_they_change() {
        // Random graphs of every edge kind, their states changed at random, one node or a few
        // between two questions: the kept decisions are the pure function's every time.
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = |below: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % below as u64) as usize
        };
        let all = [Pending, SkipRequested, Ready, Running, Finishing, Succeeded, Failed, Skipped];
        for _ in 0..200 {
            let n = 1 + next(12);
            let nodes = (0..n)
                .map(|i| PlanNode {
                    key: format!("n{i}"),
                    predecessors: (0..next(4))
                        .filter(|_| i > 0)
                        .map(|_| (next(i), DependencyType::ALL[next(4)]))
                        .collect(),
                })
                .collect();
            let p = Plan { nodes };
            let mut values: Vec<NodeState> = (0..n).map(|_| all[next(all.len())]).collect();
            let limited: Vec<bool> = (0..n).map(|_| next(2) == 0).collect();
            let mut states = States::new(&p, values.clone(), limited.clone());
            for _ in 0..30 {
                for _ in 0..1 + next(3) {
                    let (node, state) = (next(n), all[next(all.len())]);
                    values[node] = state;
                    states[node] = state;
                }
                let expected = decide(&p, &values);
                assert_eq!(states.finishing(), expected.finish, "{values:?}");
                let starts = |limited_too: bool| {
                    std::iter::successors(states.next_start(None, limited_too), |&n| {
                        states.next_start(Some(n), limited_too)
                    })
                    .collect::<Vec<_>>()
                };
                assert_eq!(starts(true), expected.start, "{values:?}");
                let free: Vec<usize> = expected.start.iter().copied().filter(|&n| !limited[n]).collect();
                assert_eq!(starts(false), free, "{values:?}");
                assert_eq!(states.are_complete(), values.iter().all(|s| s.is_done()));
                assert_eq!(states.to_vec(), values);
            }
        }
    }
}
