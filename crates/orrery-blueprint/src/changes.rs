//! What changed between two versions of a blueprint, task by task: what a user is told before a
//! run is retried or restarted with its file as saved now instead of the version it ran.
//!
//! A task's fields are named as a user knows them: a param by its name (`command`), the other
//! keys by theirs (`type`, `condition`, `inputs`, `depends_on`, ...), a key Orrery does not model
//! by its own. Moving a task in the list changes nothing.

use crate::{Blueprint, Task};

/// The differences between an older and a newer version of a blueprint.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct Changes {
    /// Tasks only the newer version has, in its order.
    pub added: Vec<String>,
    /// Tasks only the older version has, in its order.
    pub removed: Vec<String>,
    /// Tasks both have that differ, in the newer version's order.
    pub changed: Vec<TaskChange>,
    /// The blueprint's own fields that differ (`id`, `name`, `version`, `description`, other keys).
    pub blueprint: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct TaskChange {
    pub task: String,
    pub fields: Vec<String>,
}

impl Changes {
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty() && self.blueprint.is_empty()
    }

    /// One line: `build: command changed; added deploy; removed lint`.
    pub fn summary(&self) -> String {
        if self.is_empty() {
            return "no change".to_string();
        }
        let mut parts: Vec<String> =
            self.changed.iter().map(|c| format!("{}: {} changed", c.task, c.fields.join(", "))).collect();
        if !self.added.is_empty() {
            parts.push(format!("added {}", self.added.join(", ")));
        }
        if !self.removed.is_empty() {
            parts.push(format!("removed {}", self.removed.join(", ")));
        }
        if !self.blueprint.is_empty() {
            parts.push(format!("blueprint {} changed", self.blueprint.join(", ")));
        }
        parts.join("; ")
    }
}

/// What changed from `old` to `new`.
pub fn changes(old: &Blueprint, new: &Blueprint) -> Changes {
    let find = |in_: &Blueprint, id: &str| in_.tasks.iter().find(|t| t.id == id).cloned();
    let mut found = Changes::default();
    for task in &new.tasks {
        match find(old, &task.id) {
            None => found.added.push(task.id.to_string()),
            Some(before) => {
                let fields = task_fields(&before, task);
                if !fields.is_empty() {
                    found.changed.push(TaskChange { task: task.id.to_string(), fields });
                }
            }
        }
    }
    found.removed = old.tasks.iter().filter(|t| find(new, &t.id).is_none()).map(|t| t.id.to_string()).collect();
    let own = [
        ("id", old.id != new.id),
        ("name", old.name != new.name),
        ("version", old.version != new.version),
        ("description", old.description != new.description),
    ];
    found.blueprint = own.iter().filter(|(_, differ)| *differ).map(|(name, _)| name.to_string()).collect();
    found.blueprint.extend(extra_fields(&old.extra, &new.extra));
    found
}

/// The fields of a task that differ between two versions of it.
pub fn task_fields(old: &Task, new: &Task) -> Vec<String> {
    let mut fields: Vec<String> = [
        ("type", old.task_type != new.task_type),
        ("description", old.description != new.description),
        ("condition", old.condition != new.condition),
        ("scope_start", old.scope_start != new.scope_start),
        ("scope_end", old.scope_end != new.scope_end),
        ("inputs", old.inputs != new.inputs),
        ("outputs", old.outputs != new.outputs),
        ("depends_on", old.depends_on != new.depends_on),
        ("state", old.state != new.state),
    ]
    .iter()
    .filter(|(_, differ)| *differ)
    .map(|(name, _)| name.to_string())
    .collect();
    for param in &new.params {
        if old.params.iter().find(|p| p.io.name == param.io.name) != Some(param) {
            fields.push(param.io.name.to_string());
        }
    }
    for param in &old.params {
        if !new.params.iter().any(|p| p.io.name == param.io.name) {
            fields.push(param.io.name.to_string());
        }
    }
    fields.extend(extra_fields(&old.extra, &new.extra));
    fields
}

fn extra_fields(old: &crate::Extra, new: &crate::Extra) -> Vec<String> {
    let mut fields: Vec<String> = new.iter().filter(|(k, v)| old.get(*k) != Some(*v)).map(|(k, _)| k.clone()).collect();
    fields.extend(old.keys().filter(|k| !new.contains_key(*k)).cloned());
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blueprint(text: &str) -> Blueprint {
        crate::load(text).expect("loads").blueprint
    }

    const OLD: &str = r#"{"id": "b", "name": "B", "version": "1.0", "tasks": [
        {"id": "start", "type": "system.start"},
        {"id": "build", "type": "shell.run", "params": [{"name": "command", "value": "make"}],
         "depends_on": [{"id": "start"}]},
        {"id": "lint", "type": "shell.run", "params": [{"name": "command", "value": "lint"}],
         "depends_on": [{"id": "start"}]},
        {"id": "end", "type": "system.end", "depends_on": [{"id": "build"}, {"id": "lint"}]}]}"#;

    #[test]
    fn a_changed_param_an_added_and_a_removed_task_are_named_in_one_line() {
        let new = OLD
            .replace(r#""value": "make""#, r#""value": "make all""#)
            .replace(r#"{"id": "lint", "type": "shell.run""#, r#"{"id": "test", "type": "shell.run""#)
            .replace(r#"{"id": "lint"}]"#, r#"{"id": "test"}]"#);
        let found = changes(&blueprint(OLD), &blueprint(&new));
        assert_eq!(
            found.changed,
            vec![
                TaskChange { task: "build".into(), fields: vec!["command".into()] },
                TaskChange { task: "end".into(), fields: vec!["depends_on".into()] },
            ]
        );
        assert_eq!(found.added, vec!["test".to_string()]);
        assert_eq!(found.removed, vec!["lint".to_string()]);
        assert_eq!(found.summary(), "build: command changed; end: depends_on changed; added test; removed lint");
    }

    #[test]
    fn the_same_version_has_no_change_and_moving_a_task_is_none() {
        let same = changes(&blueprint(OLD), &blueprint(OLD));
        assert!(same.is_empty());
        assert_eq!(same.summary(), "no change");
        let mut moved = blueprint(OLD);
        moved.tasks.swap(1, 2);
        assert!(changes(&blueprint(OLD), &moved).is_empty());
    }

    #[test]
    fn the_blueprints_own_fields_and_unknown_keys_count() {
        let new = OLD.replace(r#""name": "B""#, r#""name": "Build", "owner": "me""#);
        let found = changes(&blueprint(OLD), &blueprint(&new));
        assert_eq!(found.blueprint, vec!["name".to_string(), "owner".to_string()]);
        assert_eq!(found.summary(), "blueprint name, owner changed");
    }
}
