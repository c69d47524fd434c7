#!/usr/bin/env python3
"""A black-box conformance suite for the task job API of `orrery serve`.

The expectations come from the published AxonX task job protocol (the 13 jobs list_installed_task_definitions,
get_task_definition, submit, wait_task, list_task_ids, list_task_statuses, status, read_task_log, stream_task,
get_task_graph, get_task_context, cancel, delete_tasks, and its failure section), plus the few conventions the
protocol leaves to the implementation: the registered names are Orrery's task types (`shell.run` runs its
`command` input with /bin/sh -c, its output is the task's log, a non-zero exit fails it) and stored blueprints
(saved with the Orrery job `save_blueprint`), and `submit` takes an optional `request_id` (or the header
`Idempotency-Key`) that makes it safe to send again, also across a crash of the server.

    python3 tests/protocol/axonx_suite.py --orrery target/debug/orrery [--only PREFIX,...] [--list]

It makes a temporary directory, starts `orrery serve --port 0 --db DIR/orrery.sqlite` itself (and kills and
restarts it for the crash check), runs the named checks in order and prints one line per check, `ok NAME` or
`FAIL NAME: reason`. It exits 0 only when every check passed, and stops the server whatever happens. Every wait
is bounded (60 s for one request or one wait, a watchdog for the whole run). Python 3 standard library only.
"""

import json
import os
import secrets
import sys
import time
import urllib.error
import urllib.request
from datetime import datetime, timezone

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "blackbox"))
from harness import (  # noqa: E402 (the shared harness, beside the suites)
    OPENER, WAIT, CheckFailed, answer_of, check, expect, failure_of, http, job, main, refused, server, show, soft,
)

# TaskStatus: the fifteen fields of the documented examples (wait_task, status, stream_task).
STATUS_KEYS = (
    "task_id", "run_id", "task_type", "task_name", "state", "config", "created_at", "started_at",
    "finished_at", "pid", "exit_code", "error", "result", "steps", "log_path",
)
TERMINAL = {"succeeded", "failed", "cancelled"}
ACTIVE = {"queued", "running"}
STATES = TERMINAL | ACTIVE
DEFINITION_KEYS = {"name", "source", "plugin", "task_type", "description", "input_schema", "output_schema"}
HANDLE_KEYS = ("task_id", "run_id", "task")
LOG_KEYS = ("content", "start_offset", "next_offset", "file_size", "has_more_before", "has_more_after", "reset")
GRAPH_KEYS = ("root_id", "selected_id", "nodes", "edges")
NODE_KEYS = ("task_id", "kind", "task_name", "created_at", "parent_ids", "state", "missing", "provisional")
CONTEXT_KEYS = ("task_id", "status", "metadata_exists", "metadata_path", "log_path", "graph", "relations")
RELATION_KEYS = ("direct_upstream", "ancestors", "direct_downstream", "missing", "provisional")

SHELL = "shell.run"
UNKNOWN_TASK = "no-such-task-xyz"
# The minimal blueprint of the conventions; its registered name is its id.
BLUEPRINT_ID = "flow"
BLUEPRINT = {
    "id": BLUEPRINT_ID, "name": "flow", "version": "1.0",
    "tasks": [
        {"id": "start", "type": "system.start"},
        {"id": "a", "type": "shell.run", "params": [{"name": "command", "value": "echo hello"}],
         "depends_on": [{"id": "start"}]},
        {"id": "end", "type": "system.end", "depends_on": [{"id": "a"}]},
    ],
}

# The big log: more than the default limit (65536 bytes), paged with the least limit (1024).
BIG_LINES = 8000
BIG_COMMAND = 'i=1; while [ "$i" -le %d ]; do echo "line $i"; i=$((i+1)); done' % BIG_LINES
BIG_TEXT = "".join("line %d\n" % i for i in range(1, BIG_LINES + 1))
# Multi-byte UTF-8 (2, 3 and 4 byte characters), so that 1024-byte windows fall inside characters.
UTF8_LINES = 400
UTF8_WORD = "é中文字🙂ß"
UTF8_COMMAND = 'i=1; while [ "$i" -le %d ]; do echo "$i %s"; i=$((i+1)); done' % (UTF8_LINES, UTF8_WORD)
UTF8_TEXT = "".join("%d %s\n" % (i, UTF8_WORD) for i in range(1, UTF8_LINES + 1))


# ---------------------------------------------------------------- tasks

_names = [0]
# Tasks the suite started that may still run; cancelled before the server stops.
LIVE = set()


def fresh_name(prefix="t"):
    """A fixed task name (1-32 of [A-Za-z0-9-]) not used before in this run."""
    _names[0] += 1
    return "%s%d-%s" % (prefix, _names[0], secrets.token_hex(4))


def submit(task, what="submit", **inputs):
    arguments = dict(inputs)
    arguments["task"] = task
    handle = answer_of(job("submit", arguments), "%s %s" % (what, show(arguments, 160)))
    expect(isinstance(handle, dict) and isinstance(handle.get("task_id"), str) and isinstance(handle.get("run_id"), str),
           "%s: answer is not a TaskHandle {task_id, run_id, task}: %s" % (what, show(handle)))
    return handle


def shell(command, what="submit", **inputs):
    return submit(SHELL, what, command=command, **inputs)


def wait_reply(handle, **extra):
    arguments = {"task_id": handle["task_id"], "run_id": handle["run_id"]}
    arguments.update(extra)
    return job("wait_task", arguments, timeout=WAIT + 5)


def wait_status(handle, what="wait_task"):
    """The terminal TaskStatus wait_task answers, whatever its success."""
    body = wait_reply(handle).envelope(what)
    status = body["answer"]
    expect(isinstance(status, dict), "%s: answer is not a TaskStatus: %s" % (what, show(body)))
    return status, body["success"]


def wait_succeeded(handle, what="wait_task"):
    status, success = wait_status(handle, what)
    expect(status.get("state") == "succeeded" and success is True,
           "%s: expected succeeded with success true, got state %r success %r error %s"
           % (what, status.get("state"), success, show(status.get("error"))))
    return status


def status_of(task_id, what="status"):
    return answer_of(job("status", {"task_id": task_id}), what)


def until_running(handle, what="status"):
    """Polls status until the task runs; every state seen before must be queued or running."""
    deadline = time.monotonic() + WAIT
    while True:
        status = status_of(handle["task_id"], what)
        state = status.get("state") if isinstance(status, dict) else None
        expect(state in ACTIVE, "%s: a `sleep 30` task is %r before it ran (expected queued/running): %s"
               % (what, state, show(status)))
        if state == "running":
            return status
        expect(time.monotonic() < deadline, "%s: not running %d s after submit" % (what, WAIT))
        time.sleep(0.2)


def sleeper(what="submit", **inputs):
    handle = shell("sleep 30", what, **inputs)
    LIVE.add(handle["task_id"])
    return handle


def cancel_quietly(task_id):
    try:
        job("cancel", {"task_id": task_id}, timeout=15)
    except Exception:
        pass
    LIVE.discard(task_id)


def cancel_live():
    """At the end, while the server is up: every task a check left running is cancelled."""
    for task_id in list(LIVE):
        cancel_quietly(task_id)


def ghost_of(handle, name):
    """A task id of the shape of `handle`'s that was never submitted."""
    other = fresh_name("ghost")
    if name and name in handle["task_id"]:
        return handle["task_id"].replace(name, other)
    return handle["task_id"] + "-" + other


def parse_time(value, what):
    expect(isinstance(value, str) and value, "%s: not an ISO 8601 string: %r" % (what, value))
    text = value[:-1] + "+00:00" if value.endswith("Z") else value
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        # Older Pythons take at most 6 fractional digits; the text is still ISO 8601 with more.
        head, dot, rest = text.partition(".")
        if not dot:
            raise CheckFailed("%s: not ISO 8601: %r" % (what, value))
        digits = ""
        while rest and rest[0].isdigit():
            digits, rest = digits + rest[0], rest[1:]
        try:
            parsed = datetime.fromisoformat(head + "." + (digits + "000000")[:6] + rest)
        except ValueError:
            raise CheckFailed("%s: not ISO 8601: %r" % (what, value))
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return parsed


def check_status_shape(status, what):
    expect(isinstance(status, dict), "%s: TaskStatus is not an object: %s" % (what, show(status)))
    missing = [k for k in STATUS_KEYS if k not in status]
    expect(not missing, "%s: TaskStatus lacks %s (has %s)" % (what, missing, sorted(status)))
    for key in ("task_id", "run_id", "task_type", "task_name"):
        expect(isinstance(status[key], str) and status[key], "%s: %s is not a non-empty string: %r"
               % (what, key, status[key]))
    expect(status["state"] in STATES, "%s: state %r is none of %s" % (what, status["state"], sorted(STATES)))
    expect(isinstance(status["config"], dict), "%s: config is not an object: %r" % (what, status["config"]))
    parse_time(status["created_at"], what + " created_at")
    for key in ("started_at", "finished_at"):
        if status[key] is not None:
            parse_time(status[key], "%s %s" % (what, key))
    expect(status["pid"] is None or type(status["pid"]) is int, "%s: pid %r" % (what, status["pid"]))
    expect(status["exit_code"] is None or type(status["exit_code"]) is int,
           "%s: exit_code %r is not an integer" % (what, status["exit_code"]))
    expect(isinstance(status["error"], str), "%s: error is not a string: %s" % (what, show(status["error"])))
    expect(status["result"] is None or isinstance(status["result"], dict),
           "%s: result is not an object: %s" % (what, show(status["result"])))
    expect(isinstance(status["steps"], list), "%s: steps is not an array: %s" % (what, show(status["steps"])))
    expect(status["log_path"] is None or isinstance(status["log_path"], str),
           "%s: log_path %r" % (what, status["log_path"]))


def check_handle(handle, task, what):
    missing = [k for k in HANDLE_KEYS if k not in handle]
    expect(not missing, "%s: TaskHandle lacks %s: %s" % (what, missing, show(handle)))
    expect(handle["task_id"] and handle["run_id"], "%s: empty task_id or run_id: %s" % (what, show(handle)))
    expect(handle["task"] == task, "%s: TaskHandle.task %r, expected the registered name %r"
           % (what, handle["task"], task))


# ---------------------------------------------------------------- fixtures (made once, on first use)

_fixtures = {}


def fixture(make):
    def get():
        if make.__name__ not in _fixtures:
            try:
                _fixtures[make.__name__] = ("ok", make())
            except Exception as error:  # every check using it fails with the same reason
                _fixtures[make.__name__] = ("error", error)
        kind, value = _fixtures[make.__name__]
        if kind == "error":
            raise CheckFailed("fixture %s failed: %s" % (make.__name__, reason_of(value)))
        return value
    return get


@fixture
def done_task():
    """An ended, succeeded shell.run task with a fixed name; its log is `hello from the suite\\n`."""
    name = fresh_name("done")
    handle = shell("echo 'hello from the suite'", task_name=name)
    status = wait_succeeded(handle)
    return {"handle": handle, "name": name, "status": status, "log": "hello from the suite\n"}


@fixture
def big_log_task():
    handle = shell(BIG_COMMAND)
    wait_succeeded(handle)
    return handle


@fixture
def utf8_log_task():
    handle = shell(UTF8_COMMAND)
    wait_succeeded(handle)
    return handle


@fixture
def saved_blueprint():
    answer_of(job("save_blueprint", {"text": json.dumps(BLUEPRINT)}), "save_blueprint")
    return BLUEPRINT_ID


@fixture
def lineage():
    """A (ended) and a ghost id (never submitted) as B's source tasks: source_tasks = "A,ghost"."""
    a_name = fresh_name("up")
    a = shell("echo upstream", task_name=a_name)
    wait_succeeded(a, "wait_task A")
    ghost = ghost_of(a, a_name)
    b_name = fresh_name("down")
    b = shell("echo downstream", task_name=b_name, source_tasks="%s,%s" % (a["task_id"], ghost))
    wait_succeeded(b, "wait_task B")
    return {"a": a["task_id"], "b": b["task_id"], "ghost": ghost}


@fixture
def shell_definition():
    return answer_of(job("get_task_definition", {"task": SHELL}), "get_task_definition shell.run")


@fixture
def definitions():
    return answer_of(job("list_installed_task_definitions", {}), "list_installed_task_definitions")


# ---------------------------------------------------------------- the checks

def refusal(name, job_name, arguments_of):
    """A check that `job_name` with the arguments `arguments_of()` makes answers HTTP 422."""
    @check(name)
    def _():
        refused(job(job_name, arguments_of()), "%s %s" % (job_name, show(arguments_of(), 200)))


# --- the transport

@check("http.envelope")
def _():
    body = job("list_task_ids", {}).envelope("list_task_ids")
    expect(isinstance(body["metadata"], dict), "metadata is not an object: %s" % show(body))
    expect(isinstance(body["success"], bool), "success is not a boolean: %s" % show(body))


@check("http.body_not_json_422")
def _():
    refused(http("POST", "/jobs/list_task_ids", b"{this is not json"), "a body that is not JSON")


@check("http.unknown_job_404")
def _():
    reply = http("POST", "/jobs/no_such_job_xyz", b'{"arguments": {}}')
    expect(reply.status == 404, "an unknown job: HTTP %d (expected 404): %s" % (reply.status, reply.text()[:300]))


# --- list_installed_task_definitions

@check("list_installed_task_definitions.shape")
def _():
    items = definitions()
    expect(isinstance(items, list) and items, "answer is not a non-empty array: %s" % show(items))
    for item in items:
        expect(isinstance(item, dict) and set(item) == DEFINITION_KEYS,
               "a TaskDefinition's keys are %s, expected exactly %s: %s"
               % (sorted(item) if isinstance(item, dict) else type(item).__name__, sorted(DEFINITION_KEYS),
                  show(item, 300)))
        expect(isinstance(item["name"], str) and item["name"], "name %r" % item["name"])
        expect(item["source"] in ("native", "plugin"), "%s: source %r is not native/plugin"
               % (item["name"], item["source"]))
        expect(item["plugin"] is None or isinstance(item["plugin"], str), "%s: plugin %r"
               % (item["name"], item["plugin"]))
        expect(isinstance(item["task_type"], str), "%s: task_type %r" % (item["name"], item["task_type"]))
        expect(isinstance(item["description"], str), "%s: description %r" % (item["name"], item["description"]))
        for key in ("input_schema", "output_schema"):
            expect(isinstance(item[key], dict), "%s: %s is not a JSON Schema object: %s"
                   % (item["name"], key, show(item[key], 200)))


@check("list_installed_task_definitions.sorted_by_name")
def _():
    items = definitions()
    expect(isinstance(items, list), "answer is not an array: %s" % show(items))
    names = [item.get("name") if isinstance(item, dict) else None for item in items]
    expect(all(isinstance(n, str) for n in names), "a definition without a string name: %s" % show(names))
    expect(names == sorted(names), "not sorted by registered name: %s" % show(names))
    expect(len(set(names)) == len(names), "a registered name listed twice: %s" % show(names))


@check("list_installed_task_definitions.has_shell_run")
def _():
    names = [item.get("name") for item in definitions() if isinstance(item, dict)]
    expect(SHELL in names, "%s is not listed: %s" % (SHELL, show(names)))


@check("list_installed_task_definitions.includes_saved_blueprint")
def _():
    blueprint = saved_blueprint()
    # Listed afresh: the blueprint was saved after the cached listing, perhaps.
    items = answer_of(job("list_installed_task_definitions", {}), "list_installed_task_definitions")
    found = [item for item in items if isinstance(item, dict) and item.get("name") == blueprint]
    expect(found, "the saved blueprint %r is not among the definitions: %s"
           % (blueprint, show([i.get("name") for i in items if isinstance(i, dict)])))
    expect(found[0].get("source") in ("native", "plugin"), "its source %r" % found[0].get("source"))


# --- get_task_definition

@check("get_task_definition.shell_run")
def _():
    item = shell_definition()
    expect(isinstance(item, dict) and set(item) == DEFINITION_KEYS,
           "keys %s, expected exactly %s" % (sorted(item) if isinstance(item, dict) else item, sorted(DEFINITION_KEYS)))
    expect(item["name"] == SHELL, "name %r" % item["name"])
    schema = item["input_schema"]
    expect(isinstance(schema, dict) and isinstance(schema.get("properties"), dict),
           "input_schema has no properties: %s" % show(schema))
    expect("command" in schema["properties"], "input_schema does not publish `command`: %s"
           % show(sorted(schema["properties"])))
    expect(isinstance(item["output_schema"], dict), "output_schema %s" % show(item["output_schema"]))


def _schema_types(prop):
    kind = prop.get("type")
    if isinstance(kind, str):
        return {kind}
    if isinstance(kind, list):
        return set(kind)
    types = set()
    for alt in prop.get("anyOf", []) + prop.get("oneOf", []):
        if isinstance(alt, dict):
            types |= _schema_types(alt)
    return types


@check("get_task_definition.generic_inputs_published")
def _():
    schema = shell_definition().get("input_schema") or {}
    props = schema.get("properties") or {}
    for key in ("task_name", "source_tasks"):
        expect(key in props, "input_schema does not publish the generic input %r: %s" % (key, show(sorted(props))))
    types = _schema_types(props["source_tasks"])
    expect(not types or types == {"string"}, "source_tasks must be a string, the schema says %s" % sorted(types))
    if "default" in props["source_tasks"]:
        expect(props["source_tasks"]["default"] == "", "source_tasks default %r (expected \"\")"
               % props["source_tasks"]["default"])
    types = _schema_types(props["task_name"])
    expect(not types or types <= {"string", "null"}, "task_name must be string/null, the schema says %s"
           % sorted(types))
    if "default" in props["task_name"]:
        expect(props["task_name"]["default"] is None, "task_name default %r (expected null)"
               % props["task_name"]["default"])


@check("get_task_definition.matches_listing")
def _():
    listed = [item for item in definitions() if isinstance(item, dict) and item.get("name") == SHELL]
    expect(listed, "%s is not listed" % SHELL)
    expect(listed[0] == shell_definition(), "the listing's %s differs from get_task_definition's: %s vs %s"
           % (SHELL, show(listed[0], 200), show(shell_definition(), 200)))


@check("get_task_definition.blueprint")
def _():
    blueprint = saved_blueprint()
    item = answer_of(job("get_task_definition", {"task": blueprint}), "get_task_definition " + blueprint)
    expect(isinstance(item, dict) and set(item) == DEFINITION_KEYS,
           "keys %s, expected exactly %s" % (sorted(item) if isinstance(item, dict) else item, sorted(DEFINITION_KEYS)))
    expect(item["name"] == blueprint, "name %r" % item["name"])


@check("get_task_definition.unknown_name", subs=("get_task_definition.unknown_lists_available",))
def _():
    answer = failure_of(job("get_task_definition", {"task": UNKNOWN_TASK}), "get_task_definition of an unknown name")
    expect(isinstance(answer, str), "the failure's answer is not a message: %s" % show(answer))
    expect("Unknown Task: " + UNKNOWN_TASK in answer and "Available:" in answer,
           "answer %r lacks `Unknown Task: %s` and `Available:`" % (answer, UNKNOWN_TASK))
    soft("get_task_definition.unknown_lists_available", SHELL in answer.partition("Available:")[2],
         "the Available list does not name %s: %r" % (SHELL, answer[:400]))


refusal("get_task_definition.refuses_missing_task", "get_task_definition", lambda: {})
refusal("get_task_definition.refuses_empty_task", "get_task_definition", lambda: {"task": ""})
refusal("get_task_definition.refuses_non_string_task", "get_task_definition", lambda: {"task": 5})
refusal("get_task_definition.refuses_extra_field", "get_task_definition", lambda: {"task": SHELL, "extra": 1})


# --- submit

@check("submit.handle")
def _():
    handle = shell("echo handle")
    check_handle(handle, SHELL, "submit")
    wait_succeeded(handle)


@check("submit.blueprint")
def _():
    blueprint = saved_blueprint()
    handle = submit(blueprint, "submit of the blueprint")
    check_handle(handle, blueprint, "submit of the blueprint")
    wait_succeeded(handle, "wait_task of the blueprint")


@check("submit.fixed_name_32_chars")
def _():
    name = (fresh_name("n") + "x" * 32)[:32]
    handle = shell("echo thirty-two", task_name=name)
    status = wait_succeeded(handle)
    expect(status["config"].get("task_name") == name, "config.task_name %r, expected %r"
           % (status["config"].get("task_name"), name))


def _anonymous(**name):
    first = shell("echo anonymous", **name)
    second = shell("echo anonymous", **name)
    expect(first["task_id"] != second["task_id"], "two anonymous submits got one task id %r" % first["task_id"])
    for handle in (first, second):
        wait_succeeded(handle)


@check("submit.anonymous_omitted")
def _():
    _anonymous()


@check("submit.anonymous_empty_string")
def _():
    _anonymous(task_name="")


@check("submit.anonymous_null")
def _():
    _anonymous(task_name=None)


@check("submit.refuses_name_33_chars")
def _():
    name = (fresh_name("n") + "x" * 33)[:33]
    failure_of(job("submit", {"task": SHELL, "command": "echo no", "task_name": name}), "task_name of 33 characters")


@check("submit.refuses_name_bad_chars")
def _():
    for name in ("bad_name", "bad name", "bad.name", "bad#name", "bad/name", "名字"):
        failure_of(job("submit", {"task": SHELL, "command": "echo no", "task_name": name}), "task_name %r" % name)


@check("submit.refuses_unknown_input")
def _():
    failure_of(job("submit", {"task": SHELL, "command": "echo no", "no_such_input_xyz": 1}),
               "submit with an unknown input field (the schema allows it, input_cls refuses it)")


@check("submit.refuses_source_tasks_array")
def _():
    upstream = done_task()["handle"]["task_id"]
    failure_of(job("submit", {"task": SHELL, "command": "echo no", "source_tasks": [upstream]}),
               "source_tasks as an array (it is a comma-separated string)")


@check("submit.unknown_task")
def _():
    answer = failure_of(job("submit", {"task": UNKNOWN_TASK}), "submit of an unknown registered name")
    expect(isinstance(answer, str) and "Unknown Task: " + UNKNOWN_TASK in answer and "Available:" in answer,
           "answer %s lacks `Unknown Task: %s` and `Available:`" % (show(answer), UNKNOWN_TASK))


refusal("submit.refuses_missing_task", "submit", lambda: {"command": "echo no"})


@check("submit.fixed_name_active_refused", subs=("submit.fixed_name_active_is_FileExistsError",))
def _():
    name = fresh_name("busy")
    first = sleeper(task_name=name)
    try:
        answer = failure_of(job("submit", {"task": SHELL, "command": "echo again", "task_name": name}),
                            "a second submit of the fixed name %r while the first runs" % name)
        soft("submit.fixed_name_active_is_FileExistsError", isinstance(answer, str) and "FileExistsError" in answer,
             "the refusal does not say FileExistsError: %s" % show(answer))
    finally:
        cancel_quietly(first["task_id"])


@check("submit.fixed_name_replaces_ended")
def _():
    name = fresh_name("again")
    first = shell("echo first", task_name=name)
    wait_succeeded(first, "wait_task of the first run")
    second = shell("echo second", task_name=name)
    expect(second["task_id"] == first["task_id"], "the fixed name's second submit has another task id: %r vs %r"
           % (second["task_id"], first["task_id"]))
    expect(second["run_id"] != first["run_id"], "the second run has the first's run_id %r" % first["run_id"])
    wait_succeeded(second, "wait_task of the second run")


@check("submit.source_tasks_lineage")
def _():
    up1 = done_task()["handle"]["task_id"]
    up2 = shell("echo second upstream")
    wait_succeeded(up2)
    joined = "%s,%s" % (up1, up2["task_id"])
    handle = shell("echo lineage", source_tasks=joined)
    status = wait_succeeded(handle)
    expect(status["config"].get("source_tasks") == joined, "config.source_tasks %r, expected the string %r"
           % (status["config"].get("source_tasks"), joined))


# --- wait_task

@check("wait_task.terminal_status")
def _():
    handle = shell("echo waited")
    status = wait_succeeded(handle)
    check_status_shape(status, "wait_task")
    expect(status["task_id"] == handle["task_id"] and status["run_id"] == handle["run_id"],
           "the status is of %r/%r, not the submitted %r/%r"
           % (status["task_id"], status["run_id"], handle["task_id"], handle["run_id"]))
    expect(status["exit_code"] == 0, "exit_code %r of a succeeded task" % status["exit_code"])


@check("wait_task.config")
def _():
    name = fresh_name("cfg")
    command = "echo config"
    status = wait_succeeded(shell(command, task_name=name))
    config = status.get("config")
    expect(isinstance(config, dict), "config %s" % show(config))
    want = {"task_name": name, "source_tasks": "", "command": command}
    got = {key: config.get(key, "<absent>") for key in want}
    expect(got == want, "config holds %s, expected %s (config: %s)" % (show(got), show(want), show(config)))


@check("wait_task.identity_from_definition")
def _():
    status = done_task()["status"]
    definition = shell_definition()
    expect(status.get("task_name") == SHELL, "TaskStatus.task_name %r, expected the registered name %r"
           % (status.get("task_name"), SHELL))
    expect(status.get("task_type") == definition.get("task_type"),
           "TaskStatus.task_type %r, the definition's task_type %r"
           % (status.get("task_type"), definition.get("task_type")))


@check("wait_task.failed_task")
def _():
    handle = shell("echo failing; exit 3")
    status, success = wait_status(handle, "wait_task of `exit 3`")
    expect(success is False, "success %r for a failed task" % success)
    check_status_shape(status, "wait_task of `exit 3`")
    expect(status["state"] == "failed", "state %r (expected failed)" % status["state"])
    expect(type(status["exit_code"]) is int and status["exit_code"] != 0, "exit_code %r (expected non-zero)"
           % status["exit_code"])
    expect(isinstance(status["error"], str) and status["error"], "error %s (expected a message)"
           % show(status["error"]))


@check("wait_task.stale_run_id")
def _():
    name = fresh_name("stale")
    old = shell("echo old", task_name=name)
    wait_succeeded(old, "wait_task of the old run")
    new = shell("echo new", task_name=name)
    wait_succeeded(new, "wait_task of the new run")
    expect(new["task_id"] == old["task_id"] and new["run_id"] != old["run_id"],
           "resubmitting %r: %s then %s" % (name, show(old), show(new)))
    failure_of(wait_reply(old), "wait_task with the old run_id")


@check("wait_task.poll_interval_accepted")
def _():
    handle = shell("echo polled")
    status = answer_of(wait_reply(handle, poll_interval=0.2), "wait_task with poll_interval 0.2")
    expect(isinstance(status, dict) and status.get("state") == "succeeded", "answer %s" % show(status))


def _done_ids():
    """An ended task's ids for the refusals; placeholders when no task could be made: a schema failure comes
    before execution (HTTP 422 before the job runs), whatever the ids name."""
    try:
        handle = done_task()["handle"]
        return {"task_id": handle["task_id"], "run_id": handle["run_id"]}
    except CheckFailed:
        return {"task_id": "suite-placeholder-task", "run_id": "suite-placeholder-run"}


refusal("wait_task.refuses_missing_run_id", "wait_task", lambda: {"task_id": _done_ids()["task_id"]})
refusal("wait_task.refuses_missing_task_id", "wait_task", lambda: {"run_id": _done_ids()["run_id"]})
refusal("wait_task.refuses_empty_task_id", "wait_task", lambda: dict(_done_ids(), task_id=""))
refusal("wait_task.refuses_empty_run_id", "wait_task", lambda: dict(_done_ids(), run_id=""))
refusal("wait_task.refuses_poll_interval_0", "wait_task", lambda: dict(_done_ids(), poll_interval=0))
refusal("wait_task.refuses_poll_interval_negative", "wait_task", lambda: dict(_done_ids(), poll_interval=-1))
refusal("wait_task.refuses_poll_interval_string", "wait_task", lambda: dict(_done_ids(), poll_interval="1"))
refusal("wait_task.refuses_extra_field", "wait_task", lambda: dict(_done_ids(), timeout=5))


# --- list_task_ids, list_task_statuses

@check("list_task_ids.strings")
def _():
    known = done_task()["handle"]["task_id"]
    ids = answer_of(job("list_task_ids", {}), "list_task_ids")
    expect(isinstance(ids, list) and all(isinstance(i, str) for i in ids), "not an array of strings: %s" % show(ids))
    expect(known in ids, "the ended task %r is not listed" % known)


@check("list_task_statuses.shape")
def _():
    known = done_task()["handle"]["task_id"]
    statuses = answer_of(job("list_task_statuses", {}), "list_task_statuses")
    expect(isinstance(statuses, list) and statuses, "not a non-empty array: %s" % show(statuses))
    for status in statuses:
        check_status_shape(status, "list_task_statuses item")
    expect(known in [s["task_id"] for s in statuses], "the ended task %r is not listed" % known)


@check("list_task_statuses.sorted")
def _():
    done_task()
    wait_succeeded(shell("echo one more"))
    statuses = answer_of(job("list_task_statuses", {}), "list_task_statuses")
    expect(isinstance(statuses, list) and len(statuses) >= 2, "fewer than 2 statuses: %s" % show(statuses))
    keys = []
    for status in statuses:
        expect(isinstance(status, dict) and "created_at" in status and "task_id" in status,
               "an item without created_at/task_id: %s" % show(status, 200))
        keys.append((parse_time(status["created_at"], "created_at"), status["task_id"]))
    for i in range(len(keys) - 1):
        expect(keys[i] >= keys[i + 1], "not in descending (created_at, task_id) order at %d: %s then %s"
               % (i, show([statuses[i]["created_at"], statuses[i]["task_id"]]),
                  show([statuses[i + 1]["created_at"], statuses[i + 1]["task_id"]])))


@check("list_task_ids.matches_statuses")
def _():
    done_task()
    ids = answer_of(job("list_task_ids", {}), "list_task_ids")
    statuses = answer_of(job("list_task_statuses", {}), "list_task_statuses")
    expect(isinstance(ids, list) and isinstance(statuses, list), "not arrays: %s / %s" % (show(ids), show(statuses)))
    from_statuses = {s.get("task_id") for s in statuses if isinstance(s, dict)}
    expect(set(ids) == from_statuses, "list_task_ids and list_task_statuses differ: only ids %s, only statuses %s"
           % (show(sorted(set(ids) - from_statuses)), show(sorted(from_statuses - set(ids)))))


# --- status

@check("status.active_states")
def _():
    handle = sleeper()
    try:
        first = status_of(handle["task_id"])
        check_status_shape(first, "status of an active task")
        expect(first["state"] in ACTIVE, "state %r right after submit (expected queued/running)" % first["state"])
        running = until_running(handle)
        expect(running["run_id"] == handle["run_id"], "the status is of run %r, not %r"
               % (running["run_id"], handle["run_id"]))
    finally:
        cancel_quietly(handle["task_id"])


@check("status.terminal")
def _():
    done = done_task()
    status = status_of(done["handle"]["task_id"])
    check_status_shape(status, "status of an ended task")
    expect(status["state"] == "succeeded" and status["run_id"] == done["handle"]["run_id"],
           "state %r run %r, expected succeeded of %r" % (status["state"], status["run_id"], done["handle"]["run_id"]))


@check("status.unknown_task", subs=("status.unknown_task_is_KeyError",))
def _():
    done = done_task()
    ghost = ghost_of(done["handle"], done["name"])
    answer = failure_of(job("status", {"task_id": ghost}), "status of a task never submitted (%s)" % ghost)
    soft("status.unknown_task_is_KeyError", isinstance(answer, str) and "KeyError" in answer,
         "the failure does not say KeyError: %s" % show(answer))


refusal("status.refuses_missing_task_id", "status", lambda: {})


@check("status.extra_field_allowed")
def _():
    status = answer_of(job("status", {"task_id": done_task()["handle"]["task_id"], "extra": 1}),
                       "status with an extra field (its schema does not forbid them)")
    expect(isinstance(status, dict), "answer %s" % show(status))


# --- read_task_log

def read_log(task_id, what="read_task_log", **window):
    arguments = {"task_id": task_id}
    arguments.update(window)
    chunk = answer_of(job("read_task_log", arguments), "%s %s" % (what, show(window)))
    expect(isinstance(chunk, dict), "%s: answer is not a TaskLogChunk: %s" % (what, show(chunk)))
    missing = [k for k in LOG_KEYS if k not in chunk]
    expect(not missing, "%s: TaskLogChunk lacks %s: %s" % (what, missing, show(chunk, 300)))
    expect(isinstance(chunk["content"], str), "%s: content %s" % (what, show(chunk["content"], 100)))
    for key in ("start_offset", "next_offset", "file_size"):
        expect(type(chunk[key]) is int and chunk[key] >= 0, "%s: %s %r" % (what, key, chunk[key]))
    for key in ("has_more_before", "has_more_after", "reset"):
        expect(type(chunk[key]) is bool, "%s: %s %r is not a boolean" % (what, key, chunk[key]))
    return chunk


def nbytes(text):
    return len(text.encode("utf-8"))


@check("read_task_log.whole_small_log")
def _():
    done = done_task()
    chunk = read_log(done["handle"]["task_id"])
    size = nbytes(done["log"])
    expect(chunk["content"] == done["log"], "content %r, expected %r" % (chunk["content"], done["log"]))
    expect((chunk["start_offset"], chunk["next_offset"], chunk["file_size"]) == (0, size, size),
           "start_offset/next_offset/file_size %r, expected (0, %d, %d)"
           % ((chunk["start_offset"], chunk["next_offset"], chunk["file_size"]), size, size))
    expect(not chunk["has_more_before"] and not chunk["has_more_after"] and not chunk["reset"],
           "has_more_before/has_more_after/reset %r for a whole small log"
           % ((chunk["has_more_before"], chunk["has_more_after"], chunk["reset"]),))


@check("read_task_log.default_reads_tail")
def _():
    chunk = read_log(big_log_task()["task_id"], "read_task_log without offset/limit")
    size = nbytes(BIG_TEXT)
    got = nbytes(chunk["content"])
    expect(chunk["file_size"] == size, "file_size %d, the task printed %d bytes" % (chunk["file_size"], size))
    expect(0 < got <= 65536, "%d bytes read (default limit 65536)" % got)
    expect(BIG_TEXT.endswith(chunk["content"]), "the content is not the log's tail: %r..." % chunk["content"][:80])
    expect(chunk["next_offset"] == size and chunk["start_offset"] == size - got,
           "start_offset %d next_offset %d for the last %d of %d bytes"
           % (chunk["start_offset"], chunk["next_offset"], got, size))
    expect(chunk["has_more_before"] is True and chunk["has_more_after"] is False,
           "has_more_before %r has_more_after %r for the tail of a %d-byte log"
           % (chunk["has_more_before"], chunk["has_more_after"], size))


@check("read_task_log.tail_with_limit")
def _():
    chunk = read_log(big_log_task()["task_id"], offset=-1, limit=1024)
    got = nbytes(chunk["content"])
    size = nbytes(BIG_TEXT)
    expect(0 < got <= 1024, "%d bytes read with limit 1024" % got)
    expect(BIG_TEXT.endswith(chunk["content"]), "not the tail: %r..." % chunk["content"][:80])
    expect(chunk["next_offset"] == size and chunk["start_offset"] == size - got and chunk["has_more_before"],
           "start_offset %d next_offset %d has_more_before %r for the last %d of %d bytes"
           % (chunk["start_offset"], chunk["next_offset"], chunk["has_more_before"], got, size))


@check("read_task_log.offset_zero_reads_head")
def _():
    chunk = read_log(big_log_task()["task_id"], offset=0, limit=1024)
    got = nbytes(chunk["content"])
    expect(0 < got <= 1024, "%d bytes read with limit 1024" % got)
    expect(BIG_TEXT.startswith(chunk["content"]), "not the log's head: %r..." % chunk["content"][:80])
    expect(chunk["start_offset"] == 0 and chunk["next_offset"] == got, "start_offset %d next_offset %d for %d bytes"
           % (chunk["start_offset"], chunk["next_offset"], got))
    expect(chunk["has_more_before"] is False and chunk["has_more_after"] is True,
           "has_more_before %r has_more_after %r for the head" % (chunk["has_more_before"], chunk["has_more_after"]))


def page_all(task_id, expected, strict_bytes):
    """Reads the whole log with limit 1024 following next_offset; answers the concatenation."""
    offset, parts, size = 0, [], nbytes(expected)
    for _ in range(4 * size // 1024 + 16):
        chunk = read_log(task_id, "paging", offset=offset, limit=1024)
        got = nbytes(chunk["content"])
        expect(got <= 1024, "%d bytes in a window of limit 1024 at %d" % (got, offset))
        expect(chunk["start_offset"] == offset, "start_offset %d for offset %d" % (chunk["start_offset"], offset))
        if strict_bytes:
            expect(chunk["next_offset"] == offset + got, "next_offset %d after %d bytes from %d"
                   % (chunk["next_offset"], got, offset))
        parts.append(chunk["content"])
        if chunk["next_offset"] >= chunk["file_size"] and not chunk["has_more_after"]:
            return "".join(parts)
        expect(chunk["has_more_after"] is True, "has_more_after false at %d of %d bytes"
               % (chunk["next_offset"], chunk["file_size"]))
        expect(chunk["next_offset"] > offset, "next_offset %d does not move on from %d" % (chunk["next_offset"], offset))
        offset = chunk["next_offset"]
    raise CheckFailed("the log did not end after %d windows" % len(parts))


def first_difference(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return "at character %d: %r vs %r" % (i, a[max(0, i - 20):i + 20], b[max(0, i - 20):i + 20])
    return "lengths %d vs %d" % (len(a), len(b))


@check("read_task_log.paging_reads_all")
def _():
    text = page_all(big_log_task()["task_id"], BIG_TEXT, strict_bytes=True)
    expect(text == BIG_TEXT, "the pages put together differ from what the task printed, %s"
           % first_difference(text, BIG_TEXT))


@check("read_task_log.utf8_paging_intact")
def _():
    text = page_all(utf8_log_task()["task_id"], UTF8_TEXT, strict_bytes=False)
    expect("\ufffd" not in text, "a replacement character: a multi-byte character was cut")
    expect(text == UTF8_TEXT, "the pages put together differ from what the task printed, %s"
           % first_difference(text, UTF8_TEXT))


@check("read_task_log.utf8_tail_intact")
def _():
    chunk = read_log(utf8_log_task()["task_id"], offset=-1, limit=1024)
    expect("\ufffd" not in chunk["content"], "a replacement character in the tail: %r" % chunk["content"][:60])
    expect(chunk["content"] and UTF8_TEXT.endswith(chunk["content"]), "not the tail: %r" % chunk["content"][:60])


@check("read_task_log.bounds_accepted")
def _():
    task_id = done_task()["handle"]["task_id"]
    for window in ({"limit": 1024}, {"limit": 262144}, {"offset": -1}, {"offset": 0, "limit": 65536}):
        read_log(task_id, "read_task_log", **window)


def _log_args(**window):
    def arguments():
        arguments = {"task_id": _done_ids()["task_id"]}
        arguments.update(window)
        return arguments
    return arguments


refusal("read_task_log.refuses_limit_1023", "read_task_log", _log_args(limit=1023))
refusal("read_task_log.refuses_limit_262145", "read_task_log", _log_args(limit=262145))
refusal("read_task_log.refuses_limit_0", "read_task_log", _log_args(limit=0))
refusal("read_task_log.refuses_offset_minus_2", "read_task_log", _log_args(offset=-2))
refusal("read_task_log.refuses_offset_string", "read_task_log", _log_args(offset="0"))
refusal("read_task_log.refuses_missing_task_id", "read_task_log", lambda: {"offset": 0})


@check("read_task_log.extra_field_allowed")
def _():
    read_log(done_task()["handle"]["task_id"], "read_task_log with an extra field (its schema does not forbid them)",
             extra=1)


# --- stream_task

def read_sse(response, deadline):
    """The events of an SSE response until it closes: [(kind, data text)]."""
    events, kind, data = [], None, []
    while True:
        expect(time.monotonic() < deadline, "the stream did not close within %d s (events so far: %s)"
               % (WAIT, show([k for k, _ in events])))
        raw = response.readline()
        if not raw:
            if data:
                events.append((kind or "message", "\n".join(data)))
            return events
        line = raw.decode("utf-8", "replace").rstrip("\r\n")
        if line == "":
            if data:
                events.append((kind or "message", "\n".join(data)))
            kind, data = None, []
        elif line.startswith(":"):
            continue
        else:
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "event":
                kind = value
            elif field == "data":
                data.append(value)


@check("stream_task.sse")
def _():
    handle = shell("echo stream-one; sleep 1; echo stream-two")
    body = json.dumps({"arguments": {"task_id": handle["task_id"]}}).encode()
    request = urllib.request.Request(server().base + "/jobs/stream_task", data=body, method="POST")
    request.add_header("Authorization", "Bearer " + server().token)
    request.add_header("Content-Type", "application/json")
    request.add_header("Accept", "text/event-stream")
    deadline = time.monotonic() + WAIT
    try:
        response = OPENER.open(request, timeout=WAIT)
    except urllib.error.HTTPError as error:
        raise CheckFailed("HTTP %d: %s" % (error.code, error.read().decode("utf-8", "replace")[:300]))
    with response:
        kind = response.headers.get("Content-Type", "")
        expect(response.status == 200 and kind.startswith("text/event-stream"),
               "HTTP %d Content-Type %r (expected an SSE stream): %s"
               % (response.status, kind, "" if kind.startswith("text/event-stream") else response.read(300)))
        events = read_sse(response, deadline)
    kinds = [k for k, _ in events]
    expect(events, "the stream closed without an event")
    expect(kinds[-1] == "result" and kinds.count("result") == 1,
           "the stream's events %s do not end with one `result`" % show(kinds))
    expect(any(k in ("progress", "log") for k in kinds[:-1]), "no progress/log event before the result: %s"
           % show(kinds))
    try:
        data = json.loads(events[-1][1])
    except ValueError:
        raise CheckFailed("the result's data is not JSON: %r" % events[-1][1][:300])
    # "最终 result 携带相同状态": the data is the TaskStatus, or an envelope whose answer is.
    status = data["answer"] if isinstance(data, dict) and isinstance(data.get("answer"), dict) else data
    check_status_shape(status, "the result event's status")
    expect(status["state"] == "succeeded" and status["task_id"] == handle["task_id"]
           and status["run_id"] == handle["run_id"],
           "the result's status is %r of %r/%r, expected succeeded of %r/%r"
           % (status["state"], status["task_id"], status["run_id"], handle["task_id"], handle["run_id"]))


@check("stream_task.plain_success")
def _():
    handle = shell("echo plain; sleep 1")
    body = job("stream_task", {"task_id": handle["task_id"]}, timeout=WAIT + 5).envelope("stream_task")
    status = body["answer"]
    check_status_shape(status, "stream_task's answer")
    expect(status["state"] == "succeeded" and status["run_id"] == handle["run_id"],
           "state %r of run %r, expected the terminal succeeded of %r" % (status["state"], status["run_id"],
                                                                          handle["run_id"]))
    expect(status["exit_code"] == 0 and body["success"] is True, "exit_code %r success %r"
           % (status["exit_code"], body["success"]))


@check("stream_task.plain_failure")
def _():
    handle = shell("exit 3")
    body = job("stream_task", {"task_id": handle["task_id"]}, timeout=WAIT + 5).envelope("stream_task")
    status = body["answer"]
    check_status_shape(status, "stream_task's answer")
    expect(status["state"] == "failed", "state %r (expected failed)" % status["state"])
    expect(type(status["exit_code"]) is int and status["exit_code"] != 0 and body["success"] is False,
           "exit_code %r success %r (success follows exit_code == 0)" % (status["exit_code"], body["success"]))


@check("stream_task.poll_interval_accepted")
def _():
    handle = shell("echo polled")
    status = answer_of(job("stream_task", {"task_id": handle["task_id"], "poll_interval": 0.1}, timeout=WAIT + 5),
                       "stream_task with poll_interval 0.1")
    expect(isinstance(status, dict) and status.get("state") == "succeeded", "answer %s" % show(status))


def _stream_args(**extra):
    def arguments():
        arguments = {"task_id": _done_ids()["task_id"]}
        arguments.update(extra)
        return arguments
    return arguments


refusal("stream_task.refuses_poll_interval_0", "stream_task", _stream_args(poll_interval=0))
refusal("stream_task.refuses_poll_interval_negative", "stream_task", _stream_args(poll_interval=-0.5))
refusal("stream_task.refuses_extra_run_id", "stream_task", _stream_args(run_id="0123456789abcdef"))
refusal("stream_task.refuses_empty_task_id", "stream_task", lambda: {"task_id": ""})
refusal("stream_task.refuses_missing_task_id", "stream_task", lambda: {})


# --- get_task_graph

def graph_of(task_id, what="get_task_graph"):
    graph = answer_of(job("get_task_graph", {"task_id": task_id}), what)
    check_graph_shape(graph, what)
    return graph


def check_graph_shape(graph, what):
    expect(isinstance(graph, dict), "%s: not an object: %s" % (what, show(graph)))
    missing = [k for k in GRAPH_KEYS if k not in graph]
    expect(not missing, "%s: the graph lacks %s: %s" % (what, missing, show(graph, 300)))
    expect(isinstance(graph["nodes"], list) and isinstance(graph["edges"], list),
           "%s: nodes/edges are not arrays: %s" % (what, show(graph, 300)))
    for node in graph["nodes"]:
        expect(isinstance(node, dict), "%s: a node is not an object: %s" % (what, show(node)))
        lacking = [k for k in NODE_KEYS if k not in node]
        expect(not lacking, "%s: a node lacks %s: %s" % (what, lacking, show(node, 300)))
        expect(isinstance(node["task_id"], str), "%s: node task_id %r" % (what, node["task_id"]))
        expect(isinstance(node["parent_ids"], list) and all(isinstance(p, str) for p in node["parent_ids"]),
               "%s: parent_ids %s" % (what, show(node["parent_ids"])))
        expect(type(node["missing"]) is bool and type(node["provisional"]) is bool,
               "%s: missing %r provisional %r are not booleans" % (what, node["missing"], node["provisional"]))
    ids = [node["task_id"] for node in graph["nodes"]]
    expect(len(set(ids)) == len(ids), "%s: a node listed twice: %s" % (what, show(ids)))


def nodes_by_id(graph):
    return {node["task_id"]: node for node in graph["nodes"]}


@check("get_task_graph.shape")
def _():
    ids = lineage()
    graph = graph_of(ids["b"])
    expect(graph["selected_id"] == ids["b"], "selected_id %r, expected %r" % (graph["selected_id"], ids["b"]))
    expect(isinstance(graph["root_id"], str) and graph["root_id"], "root_id %r" % graph["root_id"])
    expect(ids["b"] in nodes_by_id(graph), "the selected task is not a node: %s" % show(list(nodes_by_id(graph))))


@check("get_task_graph.parent_ids")
def _():
    ids = lineage()
    nodes = nodes_by_id(graph_of(ids["b"]))
    expect(ids["b"] in nodes and ids["a"] in nodes, "the graph of B lacks B or A: %s" % show(list(nodes)))
    expect(set(nodes[ids["b"]]["parent_ids"]) == {ids["a"], ids["ghost"]},
           "B's parent_ids %s, its source_tasks were %s" % (show(nodes[ids["b"]]["parent_ids"]),
                                                            show([ids["a"], ids["ghost"]])))
    expect(nodes[ids["a"]]["parent_ids"] == [], "A (no source_tasks) has parent_ids %s"
           % show(nodes[ids["a"]]["parent_ids"]))


@check("get_task_graph.missing_node")
def _():
    ids = lineage()
    nodes = nodes_by_id(graph_of(ids["b"]))
    expect(ids["ghost"] in nodes, "the never-submitted source task %r is not a node: %s"
           % (ids["ghost"], show(list(nodes))))
    expect(nodes[ids["ghost"]]["missing"] is True, "the never-submitted task's node: %s" % show(nodes[ids["ghost"]]))
    for key in ("a", "b"):
        expect(nodes.get(ids[key], {}).get("missing") is False, "the submitted task %r is missing: %s"
               % (ids[key], show(nodes.get(ids[key]))))


refusal("get_task_graph.refuses_extra_field", "get_task_graph",
        lambda: {"task_id": _done_ids()["task_id"], "depth": 2})
refusal("get_task_graph.refuses_missing_task_id", "get_task_graph", lambda: {})


# --- get_task_context

def context_of(task_id, what="get_task_context"):
    context = answer_of(job("get_task_context", {"task_id": task_id}), what)
    expect(isinstance(context, dict), "%s: not an object: %s" % (what, show(context)))
    missing = [k for k in CONTEXT_KEYS if k not in context]
    expect(not missing, "%s: lacks %s: %s" % (what, missing, show(context, 300)))
    relations = context["relations"]
    expect(isinstance(relations, dict), "%s: relations %s" % (what, show(relations)))
    missing = [k for k in RELATION_KEYS if k not in relations]
    expect(not missing, "%s: relations lack %s: %s" % (what, missing, show(relations)))
    for key in RELATION_KEYS:
        expect(isinstance(relations[key], list) and all(isinstance(i, str) for i in relations[key]),
               "%s: relations.%s is not an array of task ids: %s" % (what, key, show(relations[key])))
    return context


@check("get_task_context.shape")
def _():
    ids = lineage()
    context = context_of(ids["b"])
    expect(context["task_id"] == ids["b"], "task_id %r, expected %r" % (context["task_id"], ids["b"]))
    check_status_shape(context["status"], "get_task_context status")
    expect(context["status"]["task_id"] == ids["b"], "the status is of %r" % context["status"]["task_id"])
    expect(type(context["metadata_exists"]) is bool, "metadata_exists %r" % context["metadata_exists"])
    for key in ("metadata_path", "log_path"):
        expect(context[key] is None or isinstance(context[key], str), "%s %r" % (key, context[key]))
    check_graph_shape(context["graph"], "get_task_context graph")
    expect(context["graph"]["selected_id"] == ids["b"], "graph.selected_id %r" % context["graph"]["selected_id"])


@check("get_task_context.relations_match_graph")
def _():
    ids = lineage()
    context = context_of(ids["b"])
    check_graph_shape(context["graph"], "get_task_context graph")
    nodes = nodes_by_id(context["graph"])
    relations = context["relations"]
    expect(ids["b"] in nodes, "the graph lacks the task itself")
    expect(set(relations["direct_upstream"]) == set(nodes[ids["b"]]["parent_ids"]) == {ids["a"], ids["ghost"]},
           "direct_upstream %s, the node's parent_ids %s, source_tasks %s"
           % (show(relations["direct_upstream"]), show(nodes[ids["b"]]["parent_ids"]),
              show([ids["a"], ids["ghost"]])))
    expect(set(relations["ancestors"]) >= set(relations["direct_upstream"]) and ids["b"] not in relations["ancestors"],
           "ancestors %s (direct_upstream %s)" % (show(relations["ancestors"]), show(relations["direct_upstream"])))
    expect(relations["direct_downstream"] == [], "direct_downstream %s of a task nothing names"
           % show(relations["direct_downstream"]))
    want_missing = {i for i, n in nodes.items() if n["missing"]}
    expect(set(relations["missing"]) == want_missing and ids["ghost"] in want_missing,
           "relations.missing %s, the graph's missing nodes %s" % (show(relations["missing"]), show(sorted(want_missing))))
    want_provisional = {i for i, n in nodes.items() if n["provisional"]}
    expect(set(relations["provisional"]) == want_provisional, "relations.provisional %s, the graph's provisional %s"
           % (show(relations["provisional"]), show(sorted(want_provisional))))


@check("get_task_context.direct_downstream")
def _():
    ids = lineage()
    relations = context_of(ids["a"])["relations"]
    expect(ids["b"] in relations["direct_downstream"], "A's direct_downstream %s lacks B %r"
           % (show(relations["direct_downstream"]), ids["b"]))
    expect(relations["direct_upstream"] == [] and relations["ancestors"] == [],
           "A has no source tasks, yet direct_upstream %s ancestors %s"
           % (show(relations["direct_upstream"]), show(relations["ancestors"])))


refusal("get_task_context.refuses_extra_field", "get_task_context",
        lambda: {"task_id": _done_ids()["task_id"], "extra": 1})
refusal("get_task_context.refuses_empty_task_id", "get_task_context", lambda: {"task_id": ""})
refusal("get_task_context.refuses_missing_task_id", "get_task_context", lambda: {})


# --- cancel

@check("cancel.active_task")
def _():
    handle = sleeper()
    try:
        until_running(handle)
        answer = answer_of(job("cancel", {"task_id": handle["task_id"]}), "cancel of a running task")
        expect(answer is True, "answer %s (expected true: cancelled now)" % show(answer))
        status, success = wait_status(handle, "wait_task after cancel")
        expect(status.get("state") == "cancelled" and success is False,
               "state %r success %r (expected cancelled, success false)" % (status.get("state"), success))
        check_status_shape(status, "wait_task after cancel")
    finally:
        cancel_quietly(handle["task_id"])


@check("cancel.ended_task")
def _():
    answer = answer_of(job("cancel", {"task_id": done_task()["handle"]["task_id"]}), "cancel of an ended task")
    expect(answer is False, "answer %s (expected false: nothing to cancel)" % show(answer))


@check("cancel.extra_field_allowed")
def _():
    answer = answer_of(job("cancel", {"task_id": done_task()["handle"]["task_id"], "extra": 1}),
                       "cancel with an extra field (its schema does not forbid them)")
    expect(answer is False, "answer %s" % show(answer))


refusal("cancel.refuses_missing_task_id", "cancel", lambda: {})


# --- delete_tasks

@check("delete_tasks.deletes_ended_skips_others")
def _():
    ended = []
    for word in ("one", "two"):
        handle = shell("echo delete " + word)
        wait_succeeded(handle)
        ended.append(handle["task_id"])
    name = fresh_name("keep")
    active = sleeper(task_name=name)
    try:
        ghost = ghost_of(active, name)
        asked = ended + [active["task_id"], ghost, "../not a task id"]
        deleted = answer_of(job("delete_tasks", {"task_ids": asked}), "delete_tasks %s" % show(asked))
        expect(isinstance(deleted, list) and sorted(deleted) == sorted(ended),
               "deleted %s, expected exactly the ended %s (the active, unknown and illegal ones skipped)"
               % (show(deleted), show(ended)))
        ids = answer_of(job("list_task_ids", {}), "list_task_ids")
        expect(not set(ended) & set(ids), "list_task_ids still has deleted %s" % show(sorted(set(ended) & set(ids))))
        expect(active["task_id"] in ids, "list_task_ids lost the active task %r" % active["task_id"])
        for task_id in ended:
            failure_of(job("status", {"task_id": task_id}), "status of the deleted %r" % task_id)
        still = status_of(active["task_id"], "status of the skipped active task")
        expect(still.get("state") in ACTIVE, "the skipped active task is %r" % still.get("state"))
    finally:
        cancel_quietly(active["task_id"])


@check("delete_tasks.nothing_deleted")
def _():
    done = done_task()
    ghost = ghost_of(done["handle"], done["name"])
    deleted = answer_of(job("delete_tasks", {"task_ids": [ghost]}), "delete_tasks of a task never submitted")
    expect(deleted == [], "answer %s (expected [])" % show(deleted))


@check("delete_tasks.extra_field_allowed")
def _():
    done = done_task()
    ghost = ghost_of(done["handle"], done["name"])
    deleted = answer_of(job("delete_tasks", {"task_ids": [ghost], "extra": 1}),
                        "delete_tasks with an extra field (its schema does not forbid them)")
    expect(deleted == [], "answer %s" % show(deleted))


refusal("delete_tasks.refuses_empty_list", "delete_tasks", lambda: {"task_ids": []})
refusal("delete_tasks.refuses_duplicates", "delete_tasks",
        lambda: {"task_ids": [_done_ids()["task_id"]] * 2})
refusal("delete_tasks.refuses_missing_task_ids", "delete_tasks", lambda: {})
refusal("delete_tasks.refuses_string", "delete_tasks", lambda: {"task_ids": _done_ids()["task_id"]})


# --- idempotent submit (request_id, Idempotency-Key), also across a crash; last: it restarts the server

def statuses_with(command):
    statuses = answer_of(job("list_task_statuses", {}), "list_task_statuses")
    return [s for s in statuses if isinstance(s, dict) and isinstance(s.get("config"), dict)
            and s["config"].get("command") == command]


def same_handle(first, again, what):
    expect(isinstance(again, dict) and again.get("task_id") == first["task_id"] and again.get("run_id") == first["run_id"],
           "%s: answered %s, the first answer was %s" % (what, show(again), show(first)))


@check("submit.request_id_idempotent")
def _():
    command = "echo idempotent " + secrets.token_hex(4)
    arguments = {"task": SHELL, "command": command, "request_id": "rid-" + secrets.token_hex(8)}
    first = answer_of(job("submit", arguments), "submit with a request_id")
    wait_succeeded(first)
    again = answer_of(job("submit", arguments), "the same submit again")
    same_handle(first, again, "the same submit again")
    count = len(statuses_with(command))
    expect(count == 1, "%d tasks ran the command, expected 1" % count)


@check("submit.request_id_other_arguments_refused")
def _():
    rid = "rid-" + secrets.token_hex(8)
    first = answer_of(job("submit", {"task": SHELL, "command": "echo first", "request_id": rid}),
                      "submit with a request_id")
    wait_succeeded(first)
    failure_of(job("submit", {"task": SHELL, "command": "echo other", "request_id": rid}),
               "the same request_id with other arguments")


@check("submit.idempotency_key_header")
def _():
    command = "echo keyed " + secrets.token_hex(4)
    headers = {"Idempotency-Key": "key-" + secrets.token_hex(8)}
    first = answer_of(job("submit", {"task": SHELL, "command": command}, headers), "submit with Idempotency-Key")
    wait_succeeded(first)
    again = answer_of(job("submit", {"task": SHELL, "command": command}, headers), "the same keyed submit again")
    same_handle(first, again, "the same keyed submit again")
    count = len(statuses_with(command))
    expect(count == 1, "%d tasks ran the command, expected 1" % count)


@check("submit.idempotent_across_crash", subs=("submit.idempotency_key_across_crash",))
def _():
    by_id = {"task": SHELL, "command": "echo crash " + secrets.token_hex(4), "request_id": "rid-" + secrets.token_hex(8)}
    keyed = {"task": SHELL, "command": "echo crash-key " + secrets.token_hex(4)}
    headers = {"Idempotency-Key": "key-" + secrets.token_hex(8)}
    first = answer_of(job("submit", by_id), "submit with a request_id")
    try:
        first_keyed = answer_of(job("submit", keyed, headers), "submit with Idempotency-Key")
        wait_succeeded(first_keyed)
    except CheckFailed as error:
        first_keyed = None
        soft("submit.idempotency_key_across_crash", False, str(error))
    wait_succeeded(first)
    for task_id in list(LIVE):
        cancel_quietly(task_id)
    server().kill()
    server().start()

    def resend(arguments, headers, first, what):
        again = answer_of(job("submit", arguments, headers), what)
        same_handle(first, again, what)
        count = len(statuses_with(arguments["command"]))
        expect(count == 1, "%s: %d tasks ran the command, expected 1" % (what, count))

    if first_keyed is not None:
        try:
            resend(keyed, headers, first_keyed, "the same keyed submit after kill -9 and restart")
            soft("submit.idempotency_key_across_crash", True, "")
        except CheckFailed as error:
            soft("submit.idempotency_key_across_crash", False, str(error))
    resend(by_id, None, first, "the same submit after kill -9 and restart")


# ---------------------------------------------------------------- the runner

if __name__ == "__main__":
    sys.exit(main(__doc__.split("\n\n")[0], "axonx-suite-", cancel_live))
