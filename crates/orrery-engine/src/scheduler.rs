//! The scheduler: a pure function of a session's task states (docs/format.md §4). It owns no
//! state and performs no effect; the session runner asks it, after every transition, which
//! tasks may start now and which finished runs may now be recorded as finished.
//!
//! Start constraints: FS needs the predecessor SUCCEEDED or SKIPPED; SS needs it started
//! (RUNNING, or already past it). Finish constraints hold back a task whose run has ended
//! (`Finishing`): FF needs the predecessor SUCCEEDED or SKIPPED; SF (Orrery's, the reference
//! has none) needs it started. A task whose start can never be satisfied (a predecessor
//! FAILED) is reported as blocked, so the runner can say why a session stalls.

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
    /// Pending tasks that can never start: an FS or SS predecessor failed, directly or
    /// through a chain of blocked tasks.
    pub blocked: Vec<usize>,
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
    decisions.blocked = blocked(plan, states);
    decisions
}

/// Pending tasks that can never start. A start edge from a FAILED task can never hold; nor can
/// one from a task that is itself blocked (it will never run). Cycles never start either, but
/// validation refuses them before a session exists.
pub fn blocked(plan: &Plan, states: &[NodeState]) -> Vec<usize> {
    let mut frontier: Vec<usize> = (0..states.len()).filter(|&i| states[i] == NodeState::Failed).collect();
    if frontier.is_empty() {
        return Vec::new();
    }
    let mut successors: Vec<Vec<usize>> = vec![Vec::new(); plan.nodes.len()];
    for (i, node) in plan.nodes.iter().enumerate() {
        for &(p, kind) in &node.predecessors {
            if matches!(kind, DependencyType::FS | DependencyType::SS) {
                successors[p].push(i);
            }
        }
    }
    let waiting = |i: usize| matches!(states[i], NodeState::Pending | NodeState::SkipRequested);
    let mut is_blocked = vec![false; plan.nodes.len()];
    while let Some(n) = frontier.pop() {
        for &s in &successors[n] {
            if waiting(s) && !is_blocked[s] {
                is_blocked[s] = true;
                frontier.push(s);
            }
        }
    }
    (0..plan.nodes.len()).filter(|&i| is_blocked[i]).collect()
}

/// Whether every task has finished well: the session is complete.
pub fn is_complete(states: &[NodeState]) -> bool {
    states.iter().all(|s| s.is_done())
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
    fn a_failure_blocks_everything_downstream_that_needs_it_to_start() {
        let p = plan(&[("a", &[]), ("b", &[("a", FS)]), ("c", &[("b", SS)]), ("d", &[("a", FF)]), ("e", &[])]);
        let d = decide(&p, &[Failed, Pending, Pending, Pending, Pending]);
        assert_eq!(keys(&p, &d.blocked), ["b", "c"], "an FF successor may still start");
        assert_eq!(keys(&p, &d.start), ["d", "e"]);
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
    fn completion_needs_every_task_succeeded_or_skipped() {
        assert!(is_complete(&[Succeeded, Skipped]));
        assert!(!is_complete(&[Succeeded, Finishing]));
        assert!(!is_complete(&[Succeeded, Failed]));
    }
}
