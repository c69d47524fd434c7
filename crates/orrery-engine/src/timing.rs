//! How long a run takes and what took the time (docs/format.md §4, "Time left and what took
//! the time"): each task's usual duration (the median of its time in the blueprint's past
//! completed runs), the time left of a run that goes on, and the critical path.
//!
//! A task's time in a run is the sum of its attempts' (a loop's body, run three times, took the
//! three). The schedule is the plan's dependencies as a graph of events, each task's start and
//! finish: finish-to-start, start-to-start, finish-to-finish and start-to-finish each bind one
//! event of the predecessor to one of the task, and a task's finish comes its duration after its
//! start (a composite's own duration is nothing: its inner instance's end holds its finish). The
//! longest path through it is the critical path; while a run goes on, what has happened is fixed
//! at its times, nothing starts before now, and each task still to run takes what is left of its
//! usual duration (a task with no past takes nothing, and is counted as unknown). At most as many
//! processes run at once as the runner allows: a task that runs one waits for a free place, and
//! the task whose end frees it is what it waited for.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::{Arc, Mutex};

use orrery_blueprint::{DependencyType, SessionState, TaskState};
use orrery_store::{Attempt, SessionFilter, Store};
use serde::{Deserialize, Serialize};

use crate::plan::SessionPlan;
use crate::runner::{session_plan, RunError};

/// How many past completed runs the usual durations come from, the newest first.
pub const PAST_RUNS: u32 = 10;

/// A task slower than usual: more than this many times its usual duration...
const SLOW_FACTOR: f64 = 2.0;
/// ...and at least this much longer.
const SLOW_MARGIN_MS: f64 = 1000.0;

/// What [`session_timing`] answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Timing {
    /// How many past completed runs of the blueprint the usual durations come from (real runs,
    /// not simulations, at most [`PAST_RUNS`]).
    pub past_runs: u32,
    /// While the run goes on and has a past: the time left until it ends, estimated along the
    /// critical path, in ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remaining_ms: Option<i64>,
    /// The tasks still to run with no usual duration (the estimate counts them as instant).
    pub unknown: u32,
    /// The running tasks that already took longer than their usual (the estimate has them end now).
    #[serde(default)]
    pub overdue: Vec<String>,
    /// The chain of tasks that decides when the run ends, first to last: as it ran for a run
    /// that ended, as estimated for one that goes on.
    pub critical_path: Vec<String>,
    /// Each task of the run, in plan order.
    pub tasks: Vec<TaskTiming>,
}

/// One task's time against its usual.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TaskTiming {
    pub node: String,
    /// Its attempts' time in this run (a running one up to now); none before it started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub took_ms: Option<i64>,
    /// The median of its time in the past runs that ran it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usual_ms: Option<i64>,
    /// How many past runs ran it.
    pub runs: u32,
    /// It took more than twice its usual, and at least a second more.
    pub slow: bool,
}

/// Where a task stands, for the schedule.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Standing {
    /// Ended at these times (ms from the run's start).
    Done { start: f64, finish: f64 },
    /// Ended without an attempt (skipped): it takes no time, when its dependencies allow.
    Passed,
    /// Started at this time and still runs.
    Running { start: f64 },
    /// Still to run (perhaps again: a loop's body between two iterations).
    Waiting,
}

/// A task as the schedule takes it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Slot {
    pub standing: Standing,
    /// The time it still takes once started (or, running, from now), ms.
    pub left: f64,
    /// It runs a process: it takes one of the places the runner's parallelism allows.
    pub process: bool,
}

/// The earliest finish of every task and the chain of tasks that decides the last one.
#[derive(Debug, Clone, PartialEq)]
pub struct Schedule {
    pub finish: Vec<f64>,
    /// Node indices, first to last.
    pub critical: Vec<usize>,
}

/// A time with a total order, for the queue of events.
#[derive(Debug, Clone, Copy, PartialEq)]
struct At(f64);

impl Eq for At {}

impl PartialOrd for At {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for At {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// The plan's events in time order (see the module notes), `now` the earliest a task still to
/// run may start or a running one end, and at most `processes` tasks that run a process at once
/// (a task waits for a place as the runner makes it wait: the first ready, the first started).
pub fn schedule(predecessors: &[Vec<(usize, DependencyType)>], slots: &[Slot], now: f64, processes: usize) -> Schedule {
    let n = slots.len();
    let (start, finish) = (|t: usize| 2 * t, |t: usize| 2 * t + 1);
    // Edges between events: (from, to, weight).
    let mut edges: Vec<Vec<(usize, f64)>> = vec![Vec::new(); 2 * n];
    let mut incoming = vec![0usize; 2 * n];
    let mut add = |from: usize, to: usize, weight: f64, incoming: &mut Vec<usize>| {
        edges[from].push((to, weight));
        incoming[to] += 1;
    };
    for (t, slot) in slots.iter().enumerate() {
        add(start(t), finish(t), slot.left, &mut incoming);
        for &(p, kind) in &predecessors[t] {
            let (from, to) = match kind {
                DependencyType::FS => (finish(p), start(t)),
                DependencyType::SS => (start(p), start(t)),
                DependencyType::FF => (finish(p), finish(t)),
                DependencyType::SF => (start(p), finish(t)),
            };
            add(from, to, 0.0, &mut incoming);
        }
    }
    // Each event's own bound: fixed where it happened, not before now where it is to come.
    let fixed = |e: usize| -> Option<f64> {
        match (slots[e / 2].standing, e % 2) {
            (Standing::Done { start, .. }, 0) | (Standing::Running { start }, 0) => Some(start),
            (Standing::Done { finish, .. }, _) => Some(finish),
            _ => None,
        }
    };
    let floor = |e: usize| -> f64 {
        match (slots[e / 2].standing, e % 2) {
            (Standing::Waiting, 0) => now,
            (Standing::Running { .. }, 1) => now + slots[e / 2].left,
            _ => 0.0,
        }
    };
    let mut time: Vec<f64> = (0..2 * n).map(|e| fixed(e).unwrap_or_else(|| floor(e))).collect();
    // The places to run a process: when each is free, and the task that frees it. A running
    // process holds one until it ends.
    let mut places: BinaryHeap<Reverse<(At, Option<usize>)>> = BinaryHeap::new();
    let mut held = 0;
    for (t, slot) in slots.iter().enumerate() {
        if slot.process && matches!(slot.standing, Standing::Running { .. }) {
            places.push(Reverse((At(now + slot.left), Some(t))));
            held += 1;
        }
    }
    for _ in held..processes.max(1) {
        places.push(Reverse((At(now), None)));
    }
    // The event each one waited for last (the first of equals): the chain back from the end.
    let mut via: Vec<Option<usize>> = vec![None; 2 * n];
    let mut latest = vec![f64::NEG_INFINITY; 2 * n];
    // The events whose causes are known, the earliest first.
    let mut ready: BinaryHeap<Reverse<(At, usize)>> =
        (0..2 * n).filter(|&e| incoming[e] == 0).map(|e| Reverse((At(time[e]), e))).collect();
    while let Some(Reverse((_, e))) = ready.pop() {
        let t = e / 2;
        // A process still to start waits for a place: the first to be free.
        if e % 2 == 0 && slots[t].process && slots[t].standing == Standing::Waiting {
            if let Some(Reverse((At(free), freed_by))) = places.pop() {
                if free > time[e] {
                    time[e] = free;
                    via[e] = freed_by.map(finish);
                }
                places.push(Reverse((At(time[e] + slots[t].left), Some(t))));
            }
        }
        for &(to, weight) in &edges[e] {
            let arrives = time[e] + weight;
            if arrives > latest[to] {
                latest[to] = arrives;
                via[to] = Some(e);
            }
            if fixed(to).is_none() && arrives > time[to] {
                time[to] = arrives;
            }
            incoming[to] -= 1;
            if incoming[to] == 0 {
                ready.push(Reverse((At(time[to]), to)));
            }
        }
    }
    let finish_times: Vec<f64> = (0..n).map(|t| time[finish(t)]).collect();
    let mut critical = Vec::new();
    // The chain ends at a task nothing waits for (a zero-time end ties with what it follows).
    let mut followed = vec![false; n];
    for (p, _) in predecessors.iter().flatten() {
        followed[*p] = true;
    }
    let last =
        (0..n).filter(|&t| !followed[t]).max_by(|&a, &b| finish_times[a].total_cmp(&finish_times[b]).then(b.cmp(&a)));
    let mut at = last.map(finish);
    while let Some(e) = at {
        critical.push(e / 2);
        at = via[e];
    }
    critical.reverse();
    // A composite is met at its start and again at its finish: named once, where it begins.
    let mut seen = std::collections::HashSet::new();
    critical.retain(|&t| seen.insert(t));
    Schedule { finish: finish_times, critical }
}

/// The median of `values` (not empty).
fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    }
}

/// A node's attempts in one run: their time (a running one up to now), the first start and the
/// last end.
#[derive(Debug, Clone, Copy)]
struct Span {
    spent: f64,
    first: i64,
    last: i64,
}

/// Each node's [`Span`] in a run, at `now_ms`.
fn spans(attempts: &[Attempt], now_ms: i64) -> HashMap<&str, Span> {
    let mut spans: HashMap<&str, Span> = HashMap::new();
    for a in attempts {
        let end = a.finished_ms.unwrap_or(now_ms).max(a.started_ms);
        let span = spans.entry(a.node.as_str()).or_insert(Span { spent: 0.0, first: a.started_ms, last: end });
        span.spent += (end - a.started_ms) as f64;
        span.first = span.first.min(a.started_ms);
        span.last = span.last.max(end);
    }
    spans
}

/// Each task's usual duration and how many past runs ran it, by node key.
pub type Usual = HashMap<String, (f64, u32)>;

/// The usual durations of each blueprint's tasks, kept while its past runs stay the same (a
/// completed run does not change): a run polled for its time left does not read the attempts of
/// its blueprint's past runs again on every call.
#[derive(Debug, Default)]
pub struct UsualCache {
    by_blueprint: Mutex<ByBlueprint>,
}

/// By blueprint id: the past runs the usual durations were computed from, and those durations.
type ByBlueprint = HashMap<String, (Vec<String>, Arc<Usual>)>;

impl UsualCache {
    /// How many blueprints' usual durations are kept at most (then all are dropped).
    const BLUEPRINTS: usize = 64;

    /// The usual durations of `blueprint_id` from its past runs `past`, as computed by `compute`
    /// the first time these runs are asked about.
    fn get_or(
        &self,
        blueprint_id: &str,
        past: &[String],
        compute: impl FnOnce() -> Result<Usual, RunError>,
    ) -> Result<Arc<Usual>, RunError> {
        let kept = |cache: &ByBlueprint| {
            cache.get(blueprint_id).filter(|(runs, _)| runs == past).map(|(_, usual)| usual.clone())
        };
        if let Some(usual) = kept(&self.by_blueprint.lock().unwrap_or_else(|p| p.into_inner())) {
            return Ok(usual);
        }
        let usual = Arc::new(compute()?);
        let mut cache = self.by_blueprint.lock().unwrap_or_else(|p| p.into_inner());
        if cache.len() >= Self::BLUEPRINTS && !cache.contains_key(blueprint_id) {
            cache.clear();
        }
        cache.insert(blueprint_id.to_string(), (past.to_vec(), usual.clone()));
        Ok(usual)
    }
}

/// The time of session `session_id` against its blueprint's past runs, at `now_ms`.
pub fn session_timing(
    store: &Store,
    session_id: &str,
    now_ms: i64,
    usuals: &UsualCache,
    processes: usize,
) -> Result<Timing, RunError> {
    let session = store.session(session_id)?;
    let plan = session_plan(store, session_id)?;
    let attempts = store.attempts(session_id)?;
    let states: HashMap<String, TaskState> =
        store.task_nodes(session_id)?.into_iter().map(|n| (n.node, n.state)).collect();

    // The usual durations: medians over the newest completed real runs of the blueprint.
    let filter = SessionFilter {
        state: Some(SessionState::Completed),
        blueprint_id: Some(session.blueprint_id.clone()),
        limit: Some(PAST_RUNS * 4),
    };
    let past: Vec<String> = store
        .sessions(&filter)?
        .into_iter()
        .filter(|s| s.id != session.id && s.simulation.is_none())
        .take(PAST_RUNS as usize)
        .map(|s| s.id)
        .collect();
    let usual = usuals.get_or(&session.blueprint_id, &past, || {
        let mut history: HashMap<String, Vec<f64>> = HashMap::new();
        for id in &past {
            let ran = store.attempts(id)?;
            for (node, span) in spans(&ran, now_ms) {
                history.entry(node.to_string()).or_default().push(span.spent);
            }
        }
        Ok(history.into_iter().map(|(node, mut took)| (node, (median(&mut took), took.len() as u32))).collect())
    })?;

    let origin = session.started_ms.unwrap_or(session.created_ms);
    let spans = spans(&attempts, now_ms);
    let running = matches!(session.state, SessionState::Running | SessionState::Pending);
    let composite = |n: usize| plan.tasks[n].1.task_type.as_str() == orrery_blueprint::TaskType::COMPOSITE;
    let mut unknown = 0;
    let mut overdue = Vec::new();
    let slots: Vec<Slot> = (0..plan.tasks.len())
        .map(|n| {
            let key = plan.graph.nodes[n].key.as_str();
            let span = spans.get(key);
            let took = span.map_or(0.0, |s| s.spent);
            let at = |ms: i64| (ms - origin) as f64;
            // A run that ended is scheduled afresh from the times its tasks took.
            let state = states.get(key).copied().unwrap_or(TaskState::Pending);
            let standing = match (state, span) {
                _ if !running => Standing::Waiting,
                (TaskState::Succeeded | TaskState::Failed, Some(s)) => {
                    Standing::Done { start: at(s.first), finish: at(s.last) }
                }
                (TaskState::Succeeded | TaskState::Failed | TaskState::Skipped, _) => Standing::Passed,
                (TaskState::Running | TaskState::Ready, Some(s)) => Standing::Running { start: at(s.first) },
                _ => Standing::Waiting,
            };
            let left = if composite(n) {
                0.0
            } else if running {
                match usual.get(key) {
                    Some(&(u, _)) => {
                        if matches!(standing, Standing::Running { .. }) && took > u {
                            overdue.push(key.to_string());
                        }
                        (u - took).max(0.0)
                    }
                    None => {
                        if matches!(standing, Standing::Waiting | Standing::Running { .. }) {
                            unknown += 1;
                        }
                        0.0
                    }
                }
            } else {
                took
            };
            Slot { standing, left, process: plan.tasks[n].1.task_type.as_str() == crate::agents::shell::TYPE }
        })
        .collect();
    let predecessors: Vec<Vec<(usize, DependencyType)>> =
        plan.graph.nodes.iter().map(|n| n.predecessors.clone()).collect();
    let now = if running { (now_ms - origin) as f64 } else { 0.0 };
    let planned = schedule(&predecessors, &slots, now, processes);
    let remaining_ms = (running && !past.is_empty()).then(|| {
        let end = planned.finish.iter().copied().fold(now, f64::max);
        (end - now).round() as i64
    });
    Ok(Timing {
        past_runs: past.len() as u32,
        remaining_ms,
        unknown,
        overdue,
        critical_path: planned.critical.iter().map(|&n| plan.graph.nodes[n].key.clone()).collect(),
        tasks: task_timings(&plan, &spans, &usual),
    })
}

fn task_timings(plan: &SessionPlan, spans: &HashMap<&str, Span>, usual: &Usual) -> Vec<TaskTiming> {
    plan.graph
        .nodes
        .iter()
        .map(|n| {
            let took = spans.get(n.key.as_str()).map(|s| s.spent);
            let (usual_ms, runs) = match usual.get(&n.key) {
                Some(&(u, runs)) => (Some(u), runs),
                None => (None, 0),
            };
            let slow = matches!((took, usual_ms), (Some(t), Some(u)) if t > u * SLOW_FACTOR && t - u >= SLOW_MARGIN_MS);
            TaskTiming {
                node: n.key.clone(),
                took_ms: took.map(|t| t.round() as i64),
                usual_ms: usual_ms.map(|u| u.round() as i64),
                runs,
                slow,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use DependencyType::{FF, FS, SS};

    fn waiting(left: f64) -> Slot {
        Slot { standing: Standing::Waiting, left, process: false }
    }

    fn process(left: f64) -> Slot {
        Slot { process: true, ..waiting(left) }
    }

    #[test]
    fn the_critical_path_is_the_longest_chain_of_dependencies() {
        // a (100) -> b (200); c (250) beside them.
        let predecessors = vec![vec![], vec![(0, FS)], vec![]];
        let planned = schedule(&predecessors, &[waiting(100.0), waiting(200.0), waiting(250.0)], 0.0, 2);
        assert_eq!(planned.finish, [100.0, 300.0, 250.0]);
        assert_eq!(planned.critical, [0, 1]);
        // Started together (SS), b ends with a at the latest (FF).
        let predecessors = vec![vec![], vec![(0, SS), (0, FF)]];
        let planned = schedule(&predecessors, &[waiting(500.0), waiting(200.0)], 0.0, 2);
        assert_eq!(planned.finish, [500.0, 500.0]);
    }

    #[test]
    fn a_composite_spans_its_inner_instance_and_is_named_once() {
        // 0: composite C -> 1: inner start (SS), 1 -> 2: work (400), 2 -> 3: inner end, 3 -> C (FF);
        // 4: d (50) after C.
        let predecessors = vec![vec![(3, FF)], vec![(0, SS)], vec![(1, FS)], vec![(2, FS)], vec![(0, FS)]];
        let slots = [waiting(0.0), waiting(0.0), waiting(400.0), waiting(0.0), waiting(50.0)];
        let planned = schedule(&predecessors, &slots, 0.0, 2);
        assert_eq!(planned.finish, [400.0, 0.0, 400.0, 400.0, 450.0]);
        assert_eq!(planned.critical, [0, 1, 2, 3, 4]);
    }

    #[test]
    fn a_run_that_goes_on_keeps_what_happened_and_starts_nothing_before_now() {
        // a ended at 100; b started at 100 and has 150 left at 150; c (100) waits for b, and
        // d (30) for a: it cannot start before now.
        let predecessors = vec![vec![], vec![(0, FS)], vec![(1, FS)], vec![(0, FS)]];
        let slots = [
            Slot { standing: Standing::Done { start: 0.0, finish: 100.0 }, left: 0.0, process: false },
            Slot { standing: Standing::Running { start: 100.0 }, left: 150.0, process: false },
            waiting(100.0),
            waiting(30.0),
        ];
        let planned = schedule(&predecessors, &slots, 150.0, 2);
        assert_eq!(planned.finish, [100.0, 300.0, 400.0, 180.0]);
        assert_eq!(planned.critical, [0, 1, 2]);
        // A skipped task passes at once, when its dependencies allow.
        let slots = [waiting(100.0), Slot { standing: Standing::Passed, left: 0.0, process: false }, waiting(10.0)];
        let planned = schedule(&[vec![], vec![(0, FS)], vec![(1, FS)]], &slots, 0.0, 2);
        assert_eq!(planned.finish, [100.0, 100.0, 110.0]);
    }

    #[test]
    fn at_most_so_many_processes_run_at_once_and_a_wait_for_a_place_is_on_the_critical_path() {
        // a (100), b (300) and c (200) ready at once; two places: c waits for a's.
        let predecessors = vec![vec![], vec![], vec![], vec![(0, FS), (1, FS), (2, FS)]];
        let slots = [process(100.0), process(300.0), process(200.0), waiting(0.0)];
        let planned = schedule(&predecessors, &slots, 0.0, 2);
        assert_eq!(planned.finish, [100.0, 300.0, 300.0, 300.0]);
        // One place: one after the other, each waiting for the one before.
        let planned = schedule(&predecessors, &slots, 0.0, 1);
        assert_eq!(planned.finish, [100.0, 400.0, 600.0, 600.0]);
        assert_eq!(planned.critical, [0, 1, 2, 3]);
        // A task that runs no process (a composite, a prompt) takes no place.
        let slots = [process(100.0), process(300.0), waiting(200.0), waiting(0.0)];
        assert_eq!(schedule(&predecessors, &slots, 0.0, 1).finish, [100.0, 400.0, 200.0, 400.0]);
        // A running process holds its place until it ends: b, to start now (50), waits for it.
        let running = Slot { standing: Standing::Running { start: 0.0 }, left: 70.0, process: true };
        let planned = schedule(&[vec![], vec![]], &[running, process(10.0)], 50.0, 1);
        assert_eq!(planned.finish, [120.0, 130.0]);
        assert_eq!(planned.critical, [0, 1]);
    }

    #[test]
    fn the_usual_durations_are_computed_once_for_the_same_past_runs() {
        let cache = UsualCache::default();
        let computed = std::cell::Cell::new(0);
        let compute = |took: f64| {
            computed.set(computed.get() + 1);
            Ok(Usual::from([("a".to_string(), (took, 1))]))
        };
        let runs = |ids: &[&str]| ids.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let first = cache.get_or("bp", &runs(&["s1"]), || compute(100.0)).unwrap();
        let again = cache.get_or("bp", &runs(&["s1"]), || compute(999.0)).unwrap();
        assert_eq!((first["a"].0, again["a"].0, computed.get()), (100.0, 100.0, 1));
        // A new past run, or another blueprint: computed afresh.
        let newer = cache.get_or("bp", &runs(&["s2", "s1"]), || compute(200.0)).unwrap();
        let other = cache.get_or("other", &runs(&["s1"]), || compute(300.0)).unwrap();
        assert_eq!((newer["a"].0, other["a"].0, computed.get()), (200.0, 300.0, 3));
        // A failure is not kept.
        assert!(cache.get_or("failing", &[], || Err(RunError::Join("x".into()))).is_err());
        assert_eq!(cache.get_or("failing", &[], || compute(1.0)).unwrap()["a"].0, 1.0);
    }

    #[test]
    fn the_usual_duration_is_the_median() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 10.0]), 3.0);
    }
}
