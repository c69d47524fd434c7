//! Judging a loaded blueprint. Every problem is reported at once. The reference's own rules
//! (`Blueprint.validate()`, the parser's choking points, `check_dataflow()`) are marked as
//! refused by the server; what Orrery adds (duplicates, cycles, wiring, composites,
//! portability, policy ranges) is reported beside them without claiming the server refuses it.
//!
//! This module holds the entry points ([`validate`], [`validate_encoded`], [`ValidBlueprint`])
//! and the order the rules run in; the rules themselves are grouped by what they judge: the
//! reference's version check and `validate()` ([`reference`]), scopes ([`scopes`]), what the
//! reference's parser chokes on ([`parser`]), ids and names ([`identity`]), composites and the
//! [`Library`] they call into ([`composite`]), and scope policies and portability ([`policy`]).
//! Dataflow and params have modules of their own ([`crate::dataflow`], [`crate::params`]).

mod composite;
mod identity;
mod parser;
mod policy;
mod reference;
mod scopes;

pub use composite::{calls, composite_target, Library};

use crate::dataflow;
use crate::diagnostic::Diagnostic;
use crate::graph::TaskGraph;
use crate::load::Encoding;
use crate::model::*;
use scopes::Scopes;

/// A blueprint in which validation found no error: the only form the engine accepts. Its
/// warnings travel with it, so a run can show them.
#[derive(Debug, Clone)]
pub struct ValidBlueprint {
    blueprint: Blueprint,
    warnings: Vec<Diagnostic>,
}

impl ValidBlueprint {
    /// Validates `blueprint` (composites resolve in `library`); every diagnostic when it has errors.
    pub fn new(blueprint: Blueprint, library: &Library<'_>) -> Result<ValidBlueprint, Vec<Diagnostic>> {
        let diagnostics = validate(&blueprint, library);
        if diagnostics.iter().any(Diagnostic::is_error) {
            return Err(diagnostics);
        }
        Ok(ValidBlueprint { blueprint, warnings: diagnostics })
    }
    pub fn blueprint(&self) -> &Blueprint {
        &self.blueprint
    }
    pub fn warnings(&self) -> &[Diagnostic] {
        &self.warnings
    }
    pub fn into_blueprint(self) -> Blueprint {
        self.blueprint
    }
}

/// Validates a blueprint file in the plain encoding; composites look their inner blueprints up
/// in `library`.
pub fn validate(bp: &Blueprint, library: &Library<'_>) -> Vec<Diagnostic> {
    validate_encoded(bp, Encoding::Plain, library)
}

/// Validates a blueprint as loaded from `encoding`: the reference's server checks envelopes
/// less (no version check, no `validate()` of an empty blueprint).
pub fn validate_encoded(bp: &Blueprint, encoding: Encoding, library: &Library<'_>) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let plain = encoding == Encoding::Plain;
    reference::check_version(bp, &mut out);
    if !plain {
        out.iter_mut().for_each(|d| d.server_rejects = false);
    }
    rules(bp, plain, library, bp.tasks.len() >= APART_FROM_TASKS || dataflow::conditions_worth_a_thread(bp), &mut out);
    out
}

/// From this many tasks, the rules that need no graph run on a second core beside the others.
const APART_FROM_TASKS: usize = 1000;

/// Every rule but the version's, reported in one order whether what needs no graph ([`Apart`])
/// is made on a second core (`apart`) or not.
fn rules(bp: &Blueprint, plain: bool, library: &Library<'_>, apart: bool, out: &mut Vec<Diagnostic>) {
    let (with_graph, apart) = match apart {
        true => crate::threads::join(|| WithGraph::of(bp, plain), || Apart::of(bp, library)),
        false => (WithGraph::of(bp, plain), Apart::of(bp, library)),
    };
    let found = [
        with_graph.reference,
        apart.parser,
        apart.conditions,
        with_graph.wiring,
        with_graph.identity,
        apart.nul,
        apart.composite,
        apart.params,
        with_graph.policy,
    ];
    out.reserve(found.iter().map(Vec::len).sum());
    found.into_iter().for_each(|list| out.extend(list));
}

/// The rules that need the task graph and the scopes.
struct WithGraph {
    reference: Vec<Diagnostic>,
    wiring: Vec<Diagnostic>,
    identity: Vec<Diagnostic>,
    policy: Vec<Diagnostic>,
}

impl WithGraph {
    fn of(bp: &Blueprint, plain: bool) -> WithGraph {
        let graph = TaskGraph::new(bp);
        let scopes = Scopes::new(bp, &graph);
        let mut with_graph =
            WithGraph { reference: Vec::new(), wiring: Vec::new(), identity: Vec::new(), policy: Vec::new() };
        reference::reference_rules(bp, &graph, &scopes, plain, &mut with_graph.reference);
        dataflow::get_from_wiring(bp, &graph, &mut with_graph.wiring);
        identity::identity_rules(bp, &graph, &mut with_graph.identity);
        policy::policy_rules(bp, &graph, &scopes, &mut with_graph.policy);
        with_graph
    }
}

/// What needs neither the task graph nor the scopes: the conditions, composites, and the rules
/// that judge each task alone. On a large blueprint it is made on a second core while the rules
/// that need the graph run: each side takes about half the time.
struct Apart {
    parser: Vec<Diagnostic>,
    conditions: Vec<Diagnostic>,
    nul: Vec<Diagnostic>,
    composite: Vec<Diagnostic>,
    params: Vec<Diagnostic>,
}

impl Apart {
    fn of(bp: &Blueprint, library: &Library<'_>) -> Apart {
        let mut apart = Apart {
            parser: Vec::new(),
            conditions: Vec::new(),
            nul: Vec::new(),
            composite: Vec::new(),
            params: Vec::new(),
        };
        dataflow::check_conditions(bp, &mut apart.conditions);
        parser::parser_rules(bp, &mut apart.parser);
        parser::compas_objects(bp, &mut apart.parser);
        identity::nul_rules(bp, &mut apart.nul);
        composite::composite_rules(bp, library, &mut apart.composite);
        crate::params::check(bp, &mut apart.params);
        apart
    }
}

#[cfg(test)]
mod nul_tests {
    use super::*;
    use crate::diagnostic::{server_accepts, Code};

    fn blueprint(id: &str, task: &str, scope_name: &str, input: &str, set_to: &str) -> Blueprint {
        let text = serde_json::json!({
            "id": id, "name": "N", "version": "1.0",
            "tasks": [
                {"id": "start", "type": "system.start"},
                {"id": task, "type": "shell.run", "depends_on": [{"id": "start"}],
                 "scope_start": {"name": scope_name},
                 "inputs": [{"name": input}],
                 "outputs": [{"name": "o", "set_to": set_to}],
                 "params": [{"name": "command", "value": "true"}]},
                {"id": "close", "type": "shell.run", "depends_on": [{"id": task}], "scope_end": task,
                 "params": [{"name": "command", "value": "true"}]},
                {"id": "end", "type": "system.end", "depends_on": [{"id": "close"}]}
            ]
        })
        .to_string();
        crate::load(&text).expect("loads").blueprint
    }

    fn nul_paths(bp: &Blueprint) -> Vec<(String, Option<String>)> {
        validate(bp, &Library::new())
            .into_iter()
            .filter(|d| d.code == Code::NulInId)
            .map(|d| {
                assert!(d.is_error(), "{d}");
                assert!(!d.server_rejects, "the reference accepts any string: {d}");
                assert!(d.message.contains("NUL"), "{d}");
                (d.path, d.task_id)
            })
            .collect()
    }

    #[test]
    fn a_nul_in_any_id_or_name_is_an_error_naming_its_path() {
        let clean = blueprint("b", "work", "loop", "x", "y");
        assert!(nul_paths(&clean).is_empty());
        assert!(crate::diagnostic::is_valid(&validate(&clean, &Library::new())));

        let bp = blueprint("b\0", "w\0rk", "lo\0op", "x\0", "y\0");
        let paths = nul_paths(&bp);
        let task = Some("w\0rk".to_string());
        for expected in [
            ("$.id".to_string(), None),
            ("$.tasks[1].id".to_string(), task.clone()),
            ("$.tasks[1].scope_start.name".to_string(), task.clone()),
            ("$.tasks[1].inputs[0].name".to_string(), task.clone()),
            ("$.tasks[1].outputs[0].set_to".to_string(), task.clone()),
            ("$.tasks[2].depends_on[0].id".to_string(), Some("close".to_string())),
            ("$.tasks[2].scope_end".to_string(), Some("close".to_string())),
        ] {
            assert!(paths.contains(&expected), "{expected:?} not in {paths:?}");
        }
        let diagnostics = validate(&bp, &Library::new());
        assert!(!crate::diagnostic::is_valid(&diagnostics));
        assert!(server_accepts(&diagnostics), "NUL alone is an Orrery-only error");
        let message = &diagnostics.iter().find(|d| d.path == "$.tasks[1].id").unwrap().message;
        assert!(message.contains("'w\\0rk'"), "the NUL is shown escaped: {message}");
    }

    /// A chain of `n` conditioned tasks after `start`: one condition does not parse, one reads
    /// a name nothing produces, and one task's id holds a NUL.
    fn conditioned_chain(n: usize) -> Blueprint {
        let mut tasks = vec![serde_json::json!({"id": "start", "type": "system.start", "outputs": [{"name": "x"}]})];
        for i in 0..n {
            let condition = match i {
                1 => "x >".to_string(),
                2 => "nobody_makes_this > 1".to_string(),
                _ => format!("x > {i}"),
            };
            let id = if i == 3 { "t\0".to_string() } else { format!("t{i}") };
            let before = tasks.last().unwrap()["id"].clone();
            tasks.push(serde_json::json!({"id": id, "type": "shell.run", "condition": condition,
                "depends_on": [{"id": before}], "params": [{"name": "command", "value": "true"}]}));
        }
        let text = serde_json::json!({"id": "b", "name": "N", "version": "1.0", "tasks": tasks}).to_string();
        crate::load(&text).expect("loads").blueprint
    }

    /// Every diagnostic, in order, with what needs no graph made on a second core or not; the
    /// same when the second core is asked for and no thread can be made.
    fn both_ways(bp: &Blueprint, library: &Library<'_>) -> [Vec<Diagnostic>; 2] {
        let [apart, inline] = [true, false].map(|apart| {
            let mut out = Vec::new();
            rules(bp, true, library, apart, &mut out);
            out
        });
        let mut refused = Vec::new();
        crate::threads::refused(|| rules(bp, true, library, true, &mut refused));
        assert_eq!(refused, apart);
        [apart, inline]
    }

    #[test]
    fn what_is_made_on_a_second_core_reports_as_what_is_made_inline() {
        let chain = conditioned_chain(8);
        let [apart, inline] = both_ways(&chain, &Library::new());
        let expected = [
            (Code::ConditionSyntax, "$.tasks[2].condition".to_string()),
            (Code::ConditionUnknownName, "$.tasks[3].condition".to_string()),
            (Code::NulInId, "$.tasks[4].id".to_string()),
        ];
        let order: Vec<_> = apart.iter().map(|d| (d.code, d.path.clone())).filter(|c| expected.contains(c)).collect();
        assert_eq!(order, expected, "in {apart:?}");
        assert_eq!(apart, inline);
        // A blueprint every rule finds something in.
        let text = serde_json::json!({"id": "b", "name": "N", "version": "1.0", "tasks": [
            {"id": "start", "type": "system.start", "outputs": [{"name": "x"}]},
            {"id": "a", "type": "shell.run", "condition": "x >",
             "params": [{"name": "command", "value": 5}],
             "inputs": [{"name": "i", "get_from": "nobody", "colour": 1}, {"name": "i"}],
             "depends_on": [{"id": "start", "type": "FF"}, {"id": "start"}, {"id": "b\0"}]},
            {"id": "a", "type": "shell", "depends_on": [{"id": "a"}]},
            {"id": "c", "type": "system.composite", "params": [{"name": "blueprint_id", "value": "missing"}],
             "depends_on": [{"id": "start"}]},
            {"id": "w", "type": "shell.run", "params": [{"name": "command", "value": "true"}],
             "scope_start": {"name": "w", "while_policy": {"condition": "y > 1"}}, "depends_on": [{"id": "c"}]},
            {"id": "end", "type": "system.end", "depends_on": [{"id": "w"}, {"id": "a"}]}
        ]})
        .to_string();
        let every_rule = crate::load(&text).expect("loads").blueprint;
        let [apart, inline] = both_ways(&every_rule, &Library::new());
        assert_eq!(apart, inline);
        let codes: std::collections::BTreeSet<Code> = apart.iter().map(|d| d.code).collect();
        for code in [
            Code::ConditionSyntax,
            Code::ConditionUnknownName,
            Code::GetFromUnproduced,
            Code::IoUnknownKey,
            Code::ParamSchema,
            Code::DuplicateTaskId,
            Code::DuplicateDependency,
            Code::DuplicateIoName,
            Code::NotPortable,
            Code::CompositeParam,
            Code::PolicyRange,
            Code::NulInId,
            Code::ScopeUnclosed,
            Code::SelfDependency,
        ] {
            assert!(codes.contains(&code), "no {code:?} in {apart:?}");
        }
    }

    #[test]
    fn large_blueprints_and_those_with_many_conditions_are_checked_on_two_cores() {
        let (small, many) = (conditioned_chain(8), conditioned_chain(dataflow::PARSED_APART_FROM + 8));
        assert!(!dataflow::conditions_worth_a_thread(&small));
        assert!(dataflow::conditions_worth_a_thread(&many));
        assert!(small.tasks.len() < APART_FROM_TASKS);
    }

    #[test]
    fn path_like_ids_are_left_to_the_engine_encoding() {
        let bp = blueprint(".", "/../../../tmp/x", "a/b", "../in", "..");
        assert!(nul_paths(&bp).is_empty());
    }
}
