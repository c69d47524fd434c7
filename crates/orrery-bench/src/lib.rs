//! A deterministic generator of large, valid antikythera blueprints for benchmarks.
//!
//! Shape: one `system.start`, one `system.end`, and between them several parallel chains
//! ("lanes") of mostly `shell.run` / `system.sleep` tasks. Every task depends on the previous
//! task of its lane; about half also join a recent task of another lane, so the average
//! in-degree is about 1.5. Dependency types mix FS, SS and FF (never SF, which the reference
//! ignores).
//!
//! Scopes (about one per 50 tasks; skip, retry and while policies) open and close inside one
//! lane, up to two deep, so scopes are nested or disjoint, never interlaced. To keep them so, a
//! task inside an open scope is never the source of a cross-lane edge: a scope's members (tasks
//! reachable forward from its start and backward from its end) are then exactly its lane's tasks
//! between start and end. Cross-lane edges *into* a scope are allowed: their sources are not
//! reachable from the scope's start.
//!
//! Dataflow: outputs produce unique keys (`set_to` or a unique name); inputs read with
//! `get_from` keys produced by an ancestor (an earlier task of the same lane, or the cross-lane
//! task joined); about 20% of tasks carry a condition reading produced names and the task's own
//! params and inputs; while conditions read produced names only. Every ~500 tasks a static
//! composite calls the inner blueprint `inner` (see [`inner_blueprint`]).

use serde_json::{json, Map, Value};

/// splitmix64: tiny, deterministic, and the same on every platform and crate version.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }
    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// What to generate.
#[derive(Debug, Clone)]
pub struct Config {
    /// Total number of tasks, start and end included (at least 10).
    pub tasks: usize,
    pub seed: u64,
    /// Parallel lanes; `None` picks `clamp(sqrt(tasks) / 4, 4, 32)`.
    pub lanes: Option<usize>,
    /// Blueprint id of the root.
    pub id: String,
    /// Share of the tasks (0 to 1) that also read a session parameter: a key no task
    /// produces, which validation warns about (`get-from-unproduced`). Drawn from a generator
    /// of its own, so the rest of the file is the same as without them.
    pub session_inputs: f64,
    /// The start task declares the session parameter as an output: the same inputs then
    /// warn of nothing (the baseline of a benchmark of warnings).
    pub session_inputs_produced: bool,
}

impl Config {
    pub fn new(tasks: usize) -> Self {
        Config {
            tasks,
            seed: 0x00DD_BA11,
            lanes: None,
            id: format!("bench_{tasks}"),
            session_inputs: 0.0,
            session_inputs_produced: false,
        }
    }
}

/// Counts describing a generated blueprint.
#[derive(Debug, Clone, Default)]
pub struct Stats {
    pub tasks: usize,
    pub lanes: usize,
    pub edges: usize,
    pub cross_edges: usize,
    pub dep_fs: usize,
    pub dep_ss: usize,
    pub dep_ff: usize,
    pub scopes: usize,
    pub nested_scopes: usize,
    pub skip_scopes: usize,
    pub retry_scopes: usize,
    pub while_scopes: usize,
    pub conditions: usize,
    pub composites: usize,
    pub get_from_inputs: usize,
    /// Inputs reading a session parameter (each a `get-from-unproduced` warning).
    pub session_inputs: usize,
    pub outputs: usize,
}

impl Stats {
    pub fn to_json(&self) -> Value {
        json!({
            "tasks": self.tasks,
            "lanes": self.lanes,
            "edges": self.edges,
            "avg_in_degree": (self.edges as f64) / ((self.tasks.max(2) - 1) as f64),
            "cross_edges": self.cross_edges,
            "deps_by_type": {"FS": self.dep_fs, "SS": self.dep_ss, "FF": self.dep_ff},
            "scopes": self.scopes,
            "nested_scopes": self.nested_scopes,
            "scopes_by_policy": {"skip": self.skip_scopes, "retry": self.retry_scopes, "while": self.while_scopes},
            "conditions": self.conditions,
            "composites": self.composites,
            "get_from_inputs": self.get_from_inputs,
            "session_inputs": self.session_inputs,
            "outputs": self.outputs,
        })
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Policy {
    Skip,
    Retry,
    While,
}

struct OpenScope {
    /// Lane length when the scope opened.
    opened_at: usize,
    /// Lane tasks after which it closes (the inner scope closing first when nested).
    length: usize,
    start_id: String,
}

#[derive(Default)]
struct Lane {
    /// Id of the lane's last task (`None`: the lane has not started, its head follows `start`).
    last: Option<String>,
    len: usize,
    open: Vec<OpenScope>,
    /// Keys produced by recent tasks of this lane (all ancestors of the lane's next task).
    produced: Vec<String>,
    /// Latest task of this lane created outside any open scope, with a key it produces: the
    /// only tasks other lanes may join.
    joinable: Option<(String, Option<String>)>,
}

const RECENT: usize = 8;

fn dep(id: &str, ty: &str) -> Value {
    json!({"id": id, "type": ty})
}

fn io(name: &str) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("name".into(), Value::String(name.into()));
    m
}

/// Generates the root blueprint.
pub fn generate(config: &Config) -> (Value, Stats) {
    let n = config.tasks.max(10);
    let lanes_n = config.lanes.unwrap_or_else(|| ((n as f64).sqrt() / 4.0).round().clamp(4.0, 32.0) as usize);
    let mut rng = Rng::new(config.seed ^ (n as u64).wrapping_mul(0x2545_F491_4F6C_DD1D));
    let mut session_rng = Rng::new(!config.seed);
    let mut stats = Stats { tasks: n, lanes: lanes_n, ..Stats::default() };
    let mut lanes: Vec<Lane> = (0..lanes_n).map(|_| Lane::default()).collect();
    // Keys produced so far anywhere, by kind: conditions may read any produced name.
    let mut counts: Vec<String> = Vec::new();
    let mut items: Vec<String> = Vec::new();
    let mut results: Vec<String> = Vec::new();

    let mut tasks: Vec<Value> = Vec::with_capacity(n);
    tasks.push(json!({
        "id": "start",
        "type": "system.start",
        "description": "Entry point of the generated benchmark blueprint.",
        "outputs": [{"name": "run_started", "value": 0, "type_hint": "int"}],
    }));
    stats.outputs += 1;
    counts.push("run_started".into());
    if config.session_inputs_produced {
        tasks[0]["outputs"]
            .as_array_mut()
            .expect("the start's outputs")
            .push(json!({"name": "region", "value": "eu", "type_hint": "str"}));
    }

    let body = n - 2;
    for i in 0..body {
        let index = i + 1;
        let id = format!("t{index:06}");
        let remaining = body - i;
        let open_total: usize = lanes.iter().map(|l| l.open.len()).sum();
        // Near the end, close whatever is still open, one task per scope.
        let forced = remaining <= open_total;
        let lane_ix = if forced {
            lanes.iter().position(|l| !l.open.is_empty()).expect("an open scope")
        } else {
            rng.below(lanes_n)
        };

        enum Role {
            Plain,
            Open(Policy),
            Close(String),
        }
        let role = {
            let lane = &lanes[lane_ix];
            let close_due = lane.open.last().is_some_and(|s| lane.len - s.opened_at >= s.length);
            let depth = lane.open.len();
            if forced || close_due {
                Role::Close(lane.open.last().expect("open").start_id.clone())
            } else if depth < 2
                && remaining > open_total + 40
                && rng.chance(if depth == 0 { 1.0 / 75.0 } else { 1.0 / 12.0 })
            {
                let r = rng.below(10);
                Role::Open(if r < 4 {
                    Policy::Skip
                } else if r < 7 {
                    Policy::Retry
                } else {
                    Policy::While
                })
            } else {
                Role::Plain
            }
        };

        let composite = index % 500 == 250;
        let task_type = if composite {
            "system.composite"
        } else if rng.chance(0.7) {
            "shell.run"
        } else {
            "system.sleep"
        };

        let mut task = Map::new();
        task.insert("id".into(), Value::String(id.clone()));
        task.insert("type".into(), Value::String(task_type.into()));
        if rng.chance(0.3) {
            task.insert(
                "description".into(),
                Value::String(format!("Step {index} on lane {lane_ix}: generated work item.")),
            );
        }

        // Dependencies: the lane's previous task, and sometimes a join from another lane.
        let primary = lanes[lane_ix].last.clone().unwrap_or_else(|| "start".to_string());
        let r = rng.below(100);
        let primary_type = if r < 84 {
            stats.dep_fs += 1;
            "FS"
        } else if r < 93 {
            stats.dep_ss += 1;
            "SS"
        } else {
            stats.dep_ff += 1;
            "FF"
        };
        let mut depends_on = vec![dep(&primary, primary_type)];
        let mut joined_key: Option<String> = None;
        if lanes_n > 1 && rng.chance(0.52) {
            let other = (lane_ix + 1 + rng.below(lanes_n - 1)) % lanes_n;
            if let Some((source, key)) = lanes[other].joinable.clone() {
                if source != primary {
                    let ty = if rng.chance(0.9) {
                        stats.dep_fs += 1;
                        "FS"
                    } else {
                        stats.dep_ss += 1;
                        "SS"
                    };
                    depends_on.push(dep(&source, ty));
                    stats.cross_edges += 1;
                    joined_key = key;
                }
            }
        }
        stats.edges += depends_on.len();

        // Params.
        let mut params: Vec<Value> = Vec::new();
        let mut param_names: Vec<&str> = Vec::new();
        let mode = *rng.pick(&["a", "b", "c"]);
        match task_type {
            "shell.run" => {
                params.push(json!({"name": "command", "value": format!("echo step {index} && sleep 0")}));
                params.push(json!({"name": "mode", "value": mode}));
                param_names.push("mode");
                if rng.chance(0.3) {
                    params.push(json!({"name": "timeout", "value": 30, "type_hint": "int"}));
                }
            }
            "system.sleep" => {
                params.push(json!({"name": "duration", "value": 0.01, "type_hint": "float"}));
            }
            _ => {
                params.push(json!({"name": "blueprint", "value": {"static": "inner"}}));
                stats.composites += 1;
            }
        }
        if rng.chance(0.05) {
            params.push(json!({"name": "execution_mode", "value": *rng.pick(&["EXCLUSIVE", "COMPETITIVE"])}));
        }

        // Inputs: read keys produced upstream (same lane, or the lane joined).
        let mut inputs: Vec<Value> = Vec::new();
        let mut input_names: Vec<&str> = Vec::new();
        if !lanes[lane_ix].produced.is_empty() && rng.chance(0.45) {
            let key = rng.pick(&lanes[lane_ix].produced).clone();
            let mut m = io("upstream");
            m.insert("get_from".into(), Value::String(key));
            inputs.push(Value::Object(m));
            input_names.push("upstream");
            stats.get_from_inputs += 1;
        }
        if let Some(key) = joined_key.filter(|_| rng.chance(0.5)) {
            let mut m = io("joined");
            m.insert("type_hint".into(), Value::String("int".into()));
            m.insert("get_from".into(), Value::String(key));
            inputs.push(Value::Object(m));
            input_names.push("joined");
            stats.get_from_inputs += 1;
        }
        if config.session_inputs > 0.0 && session_rng.chance(config.session_inputs) {
            inputs.push(json!({"name": "region", "type_hint": "str", "get_from": "region"}));
            input_names.push("region");
            stats.session_inputs += 1;
        }
        if rng.chance(0.15) {
            inputs.push(json!({"name": "threshold", "value": rng.range(1, 9), "type_hint": "int"}));
            input_names.push("threshold");
        }

        // Outputs: unique keys.
        let mut outputs: Vec<Value> = Vec::new();
        let mut made: Vec<String> = Vec::new();
        if task_type == "shell.run" {
            outputs.push(json!({"name": "result", "type_hint": "str", "set_to": format!("result_{id}")}));
            results.push(format!("result_{id}"));
            made.push(format!("result_{id}"));
        }
        if composite {
            outputs.push(json!({"name": "inner_result", "set_to": format!("inner_result_{id}")}));
            made.push(format!("inner_result_{id}"));
        }
        if rng.chance(if task_type == "shell.run" { 0.5 } else { 0.3 }) {
            let key = format!("count_{id}");
            outputs.push(json!({"name": key, "value": rng.range(0, 9), "type_hint": "int"}));
            counts.push(key.clone());
            made.push(key);
        }
        if rng.chance(0.1) {
            let key = format!("items_{id}");
            outputs.push(json!({"name": "items", "value": [1, 2, 3, 5, 8], "type_hint": "list", "set_to": key}));
            items.push(key.clone());
            made.push(key);
        }

        // Scope.
        let mut scope_start: Option<Value> = None;
        let mut scope_end: Option<String> = None;
        let depth_after;
        match &role {
            Role::Plain => depth_after = lanes[lane_ix].open.len(),
            Role::Close(start) => {
                scope_end = Some(start.clone());
                lanes[lane_ix].open.pop();
                depth_after = lanes[lane_ix].open.len();
            }
            Role::Open(policy) => {
                stats.scopes += 1;
                if !lanes[lane_ix].open.is_empty() {
                    stats.nested_scopes += 1;
                }
                let mut s = Map::new();
                if rng.chance(0.5) {
                    s.insert("name".into(), Value::String(format!("section {index}")));
                }
                match policy {
                    Policy::Skip => stats.skip_scopes += 1,
                    Policy::Retry => {
                        stats.retry_scopes += 1;
                        s.insert("retry_policy".into(), json!({"retries": rng.range(1, 3)}));
                    }
                    Policy::While => {
                        stats.while_scopes += 1;
                        let key = format!("remaining_{id}");
                        outputs.push(json!({"name": key, "value": 3, "type_hint": "int"}));
                        made.push(key.clone());
                        let other = rng.pick(&counts).clone();
                        let condition = match rng.below(3) {
                            0 => format!("{key} > 0"),
                            1 => format!("{key} > 0 and {other} < 100"),
                            _ => format!("{key} > 0 and not ({other} is None)"),
                        };
                        counts.push(key);
                        s.insert(
                            "while_policy".into(),
                            json!({"condition": condition, "max_iterations": rng.range(3, 20)}),
                        );
                    }
                }
                scope_start = Some(Value::Object(s));
                let nested = !lanes[lane_ix].open.is_empty();
                let length = if nested { rng.range(2, 8) } else { rng.range(6, 30) };
                let lane_len = lanes[lane_ix].len;
                lanes[lane_ix].open.push(OpenScope { opened_at: lane_len, length, start_id: id.clone() });
                depth_after = lanes[lane_ix].open.len();
            }
        }

        // Condition on ~20% of tasks (never on scope starts' while condition: that is separate).
        let mut condition: Option<String> = None;
        if rng.chance(0.2) && !counts.is_empty() {
            let c1 = rng.pick(&counts).clone();
            let c2 = rng.pick(&counts).clone();
            let k = rng.range(0, 6);
            let mut options: Vec<String> = vec![
                format!("not ({c1} < {k}) or {c2} == {k}"),
                format!("0 <= {c1} <= {}", k + 3),
                format!("max({c1}, {c2}) >= {k}"),
            ];
            if param_names.contains(&"mode") {
                options.push(format!("{c1} > {k} and mode in ['a', 'b']"));
                options.push(format!("{c1} % 2 == 0 if mode == 'a' else {c2} > 1"));
            }
            if input_names.contains(&"upstream") {
                options.push(format!("upstream is not None and {c1} >= {k}"));
            }
            if input_names.contains(&"threshold") {
                options.push(format!("{c1} + {c2} > threshold"));
            }
            if !items.is_empty() {
                let it = rng.pick(&items).clone();
                options.push(format!("len([x for x in {it} if x > {k}]) > 0"));
            }
            if !results.is_empty() {
                let res = rng.pick(&results).clone();
                options.push(format!("{res} is None or str({res}).startswith('ok')"));
            }
            condition = Some(rng.pick(&options).clone());
            stats.conditions += 1;
        }

        // Assemble in canonical key order.
        let mut ordered = Map::new();
        for key in ["id", "type", "description"] {
            if let Some(v) = task.remove(key) {
                ordered.insert(key.into(), v);
            }
        }
        if let Some(c) = condition {
            ordered.insert("condition".into(), Value::String(c));
        }
        if let Some(s) = scope_start {
            ordered.insert("scope_start".into(), s);
        }
        if let Some(e) = scope_end {
            ordered.insert("scope_end".into(), Value::String(e));
        }
        stats.outputs += outputs.len();
        for (key, list) in [("inputs", inputs), ("outputs", outputs), ("params", params), ("depends_on", depends_on)] {
            if !list.is_empty() {
                ordered.insert(key.into(), Value::Array(list));
            }
        }
        tasks.push(Value::Object(ordered));

        let lane = &mut lanes[lane_ix];
        lane.last = Some(id.clone());
        lane.len += 1;
        for key in made.iter() {
            lane.produced.push(key.clone());
        }
        if lane.produced.len() > RECENT {
            let excess = lane.produced.len() - RECENT;
            lane.produced.drain(..excess);
        }
        if depth_after == 0 {
            // The join carries a count or result key when the task made one.
            let key = made.iter().find(|k| k.starts_with("count_") || k.starts_with("result_")).cloned();
            lane.joinable = Some((id, key));
        }
    }

    let mut end_deps: Vec<Value> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for lane in &lanes {
        let last = lane.last.clone().unwrap_or_else(|| "start".to_string());
        if seen.insert(last.clone()) {
            end_deps.push(dep(&last, "FS"));
        }
    }
    stats.edges += end_deps.len();
    stats.dep_fs += end_deps.len();
    tasks.push(json!({
        "id": "end",
        "type": "system.end",
        "description": "Joins every lane.",
        "depends_on": end_deps,
    }));

    let root = json!({
        "id": config.id,
        "name": format!("Generated benchmark blueprint ({n} tasks)"),
        "version": "1.0",
        "description": format!(
            "Deterministic benchmark blueprint: {n} tasks on {lanes_n} lanes, seed {}.",
            config.seed
        ),
        "tasks": tasks,
    });
    (root, stats)
}

/// Layers of `width` tasks, each task depending (FS) on every task of the layer before: the
/// densest graph a hand-made blueprint has (a sweep whose every step waits for all of the last).
/// `tasks` counts start and end; the last layer may be narrower. 2,122 tasks of width 8 make
/// 265 layers and 16,912 dependencies.
pub fn dense_layers(tasks: usize, width: usize) -> Value {
    let width = width.max(1);
    let mut out = vec![json!({"id": "start", "type": "system.start"})];
    let mut last = vec!["start".to_string()];
    let mut made = 0;
    let body = tasks.saturating_sub(2);
    while made < body {
        let layer: Vec<String> = (made..(made + width).min(body)).map(|i| format!("t{i:05}")).collect();
        for id in &layer {
            out.push(json!({
                "id": id,
                "type": "shell.run",
                "params": [{"name": "command", "value": "true"}],
                "depends_on": last.iter().map(|d| dep(d, "FS")).collect::<Vec<_>>(),
            }));
        }
        made += layer.len();
        last = layer;
    }
    out.push(
        json!({"id": "end", "type": "system.end", "depends_on": last.iter().map(|d| dep(d, "FS")).collect::<Vec<_>>()}),
    );
    json!({
        "id": format!("dense_{tasks}_{width}"),
        "name": format!("{tasks} tasks in fully connected layers of {width}"),
        "version": "1.0",
        "tasks": out,
    })
}

/// The inner blueprint the static composites call (id `inner`).
pub fn inner_blueprint() -> Value {
    json!({
        "id": "inner",
        "name": "Inner blueprint of the benchmark composites",
        "version": "1.0",
        "tasks": [
            {"id": "start", "type": "system.start"},
            {
                "id": "work",
                "type": "shell.run",
                "outputs": [{"name": "inner_result", "type_hint": "str"}],
                "params": [{"name": "command", "value": "echo inner"}],
                "depends_on": [{"id": "start", "type": "FS"}]
            },
            {"id": "end", "type": "system.end", "depends_on": [{"id": "work", "type": "FS"}]}
        ]
    })
}

/// Pretty-printed JSON text (two-space indent, as hand-written blueprints are).
pub fn to_text(value: &Value) -> String {
    let mut s = serde_json::to_string_pretty(value).expect("serialisable");
    s.push('\n');
    s
}
