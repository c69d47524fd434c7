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
    if dataflow::ParsedConditions::worth_a_thread(bp) {
        std::thread::scope(|s| {
            let conditions = s.spawn(|| dataflow::ParsedConditions::of(bp));
            apply_rules(
                bp,
                plain,
                library,
                || conditions.join().expect("parsing a condition does not panic"),
                &mut out,
            );
        });
    } else {
        apply_rules(bp, plain, library, || dataflow::ParsedConditions::of(bp), &mut out);
    }
    out
}

/// Every rule but the version's, in the order their diagnostics are reported; the parsed
/// conditions are asked for last, after the rules that do not need them.
fn apply_rules<'a>(
    bp: &'a Blueprint,
    plain: bool,
    library: &Library<'_>,
    conditions: impl FnOnce() -> dataflow::ParsedConditions<'a>,
    out: &mut Vec<Diagnostic>,
) {
    let graph = TaskGraph::new(bp);
    let scopes = Scopes::new(bp, &graph);
    reference::reference_rules(bp, &graph, &scopes, plain, out);
    parser::parser_rules(bp, out);
    parser::compas_objects(bp, out);
    let mut rest = Vec::new();
    identity::identity_rules(bp, &graph, &mut rest);
    identity::nul_rules(bp, &mut rest);
    composite::composite_rules(bp, library, &mut rest);
    crate::params::check(bp, &mut rest);
    policy::policy_rules(bp, &scopes, &mut rest);
    dataflow::check(bp, &graph, conditions(), out);
    out.append(&mut rest);
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

    #[test]
    fn conditions_parsed_on_their_own_thread_report_as_those_parsed_inline() {
        let codes = |bp: &Blueprint| -> Vec<(Code, String)> {
            validate(bp, &Library::new()).into_iter().map(|d| (d.code, d.path)).collect()
        };
        let (small, large) = (conditioned_chain(8), conditioned_chain(dataflow::PARSED_APART_FROM + 8));
        assert!(!dataflow::ParsedConditions::worth_a_thread(&small));
        assert!(dataflow::ParsedConditions::worth_a_thread(&large));
        let (small, large) = (codes(&small), codes(&large));
        let expected = [
            (Code::ConditionSyntax, "$.tasks[2].condition".to_string()),
            (Code::ConditionUnknownName, "$.tasks[3].condition".to_string()),
            (Code::NulInId, "$.tasks[4].id".to_string()),
        ];
        for found in [&small, &large] {
            let order: Vec<_> = found.iter().filter(|c| expected.contains(c)).cloned().collect();
            assert_eq!(order, expected, "in {found:?}");
        }
        assert_eq!(small, large);
    }

    #[test]
    fn path_like_ids_are_left_to_the_engine_encoding() {
        let bp = blueprint(".", "/../../../tmp/x", "a/b", "../in", "..");
        assert!(nul_paths(&bp).is_empty());
    }
}
