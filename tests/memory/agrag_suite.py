#!/usr/bin/env python3
"""A black-box conformance suite for the task memory jobs of `orrery serve`.

The expectations come from the published AgRAG task memory interface (TaskMemory: create_task, get_task,
list_events, list_steps, record_event, set_step) plus the conventions it leaves to the implementation: each
operation is the job `POST /jobs/{name}` with `{"arguments": {...}}` answering the envelope
`{answer, success, metadata}` (HTTP 200, also for a refused write, then success false and metadata.error the
code; arguments that break a job's schema are HTTP 422), the project and the author come from the headers
`X-Orrery-Project` and `X-Orrery-Agent` (defaults `default` and `user`), and a write answers
`{recorded, error, task|event|step}`.

    python3 tests/memory/agrag_suite.py --orrery target/debug/orrery [--only PREFIX,...] [--list]

It makes a temporary directory, starts `orrery serve --port 0 --db DIR/orrery.sqlite` itself (and kills it with
SIGKILL and starts it again on the same store for the durability check), runs the named checks in order and
prints one line per check, `ok NAME` or `FAIL NAME: reason`. It exits 0 only when every check passed, and stops
the server whatever happens. Every request is bounded (60 s), and a watchdog bounds the whole run. Python 3
standard library only.
"""

import hashlib
import json
import os
import secrets
import sys
from datetime import datetime

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "blackbox"))
from harness import (  # noqa: E402 (the shared harness, beside the suites)
    CheckFailed, answer_of, check, expect, job, main, refused, server, show,
)

MAX_PAYLOAD_CHARACTERS = 32000
VIEW_STEP_CAP = 50
EVENT_KINDS = ("message", "tool_call", "tool_result", "note")
STEP_STATES = ("not_started", "in_progress", "completed", "failed", "unknown")
STEP_KINDS = ("read", "analysis", "other")
TASK_KEYS = {"name", "project_id", "goal", "status", "event_seq", "author", "created_at"}
EVENT_KEYS = {"seq", "kind", "role", "name", "payload", "payload_sha256", "truncated", "author", "at"}
STEP_KEYS = {"name", "kind", "state", "result_event_seq", "updated_seq"}
SUMMARY_KEYS = {"name", "kind", "state", "result_event_seq"}
VIEW_KEYS = {"task_name", "goal", "status", "last_event_seq", "steps", "step_counts", "steps_truncated"}
PAGE_KEYS = {"found", "events", "truncated", "next_after_seq"}
WRITE_KEYS = {"recorded", "error"}


# ---------------------------------------------------------------- the memory jobs


def sha256(text):
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def fresh(prefix):
    return "%s-%s" % (prefix, secrets.token_hex(5))


class Caller:
    """One project and one agent, as the headers X-Orrery-Project and X-Orrery-Agent."""

    def __init__(self, project=None, agent=None):
        self.project = project if project is not None else fresh("proj")
        self.agent = agent if agent is not None else fresh("agent")

    def headers(self):
        return {"X-Orrery-Project": self.project, "X-Orrery-Agent": self.agent}

    def call(self, name, arguments):
        return job(name, arguments, self.headers())

    def read(self, name, arguments):
        return answer_of(self.call(name, arguments), "%s %s" % (name, show(arguments, 200)))

    def write(self, name, arguments, record):
        """A write that must be recorded; its record."""
        what = "%s %s" % (name, show(arguments, 200))
        result = answer_of(self.call(name, arguments), what)
        check_write(result, record, what)
        expect(result["recorded"] is True and result["error"] is None,
               "%s: recorded %r error %r (expected true, null)" % (what, result["recorded"], result["error"]))
        expect(isinstance(result[record], dict), "%s: %s is not a record: %s" % (what, record, show(result)))
        return result[record]

    def refused_write(self, name, arguments, record, code):
        """A write that must be refused with `code`: HTTP 200, success false, metadata.error and error the code."""
        what = "%s %s" % (name, show(arguments, 200))
        body = self.call(name, arguments).envelope(what)
        result = body["answer"]
        check_write(result, record, what)
        expect(result["error"] == code and result["recorded"] is False,
               "%s: recorded %r error %r (expected false, %r)" % (what, result["recorded"], result["error"], code))
        expect(body["success"] is False, "%s: success %r for a refused write" % (what, body["success"]))
        meta = body["metadata"]
        expect(isinstance(meta, dict) and meta.get("error") == code,
               "%s: metadata.error %r (expected %r)" % (what, meta.get("error") if isinstance(meta, dict) else meta,
                                                          code))
        return result

    def task(self, name=None, goal="a goal"):
        return self.write("create_task", {"name": name or fresh("task"), "goal": goal}, "task")

    def event(self, task, payload="text", kind="note", **extra):
        arguments = {"task_name": task, "kind": kind, "payload": payload}
        arguments.update(extra)
        return self.write("record_event", arguments, "event")

    def step(self, task, name, state, **extra):
        arguments = {"task_name": task, "name": name, "state": state}
        arguments.update(extra)
        return self.write("set_step", arguments, "step")

    def events(self, task, **extra):
        arguments = {"task_name": task}
        arguments.update(extra)
        page = self.read("list_events", arguments)
        check_page(page, "list_events %s" % show(arguments))
        return page

    def all_events(self, task):
        page = self.events(task, limit=200)
        expect(page["truncated"] is False, "more than 200 events in a test task")
        return page["events"]

    def view(self, task):
        lookup = self.read("get_task", {"name": task})
        expect(isinstance(lookup, dict) and lookup.get("found") is True and isinstance(lookup.get("view"), dict),
               "get_task %r: expected {found: true, view}: %s" % (task, show(lookup)))
        check_view(lookup["view"], "get_task %r" % task)
        return lookup["view"]

    def steps(self, task, state):
        steps = self.read("list_steps", {"task_name": task, "state": state})
        expect(isinstance(steps, list), "list_steps: not a list: %s" % show(steps))
        for summary in steps:
            check_summary(summary, "list_steps")
            expect(summary["state"] == state, "list_steps %r: a step in %r" % (state, summary["state"]))
        return steps


def check_write(result, record, what):
    expect(isinstance(result, dict) and WRITE_KEYS | {record} <= set(result),
           "%s: not a write result {recorded, error, %s}: %s" % (what, record, show(result)))


def check_keys(value, keys, kind, what):
    expect(isinstance(value, dict), "%s: %s is not an object: %s" % (what, kind, show(value)))
    missing = sorted(keys - set(value))
    expect(not missing, "%s: %s lacks %s: %s" % (what, kind, missing, show(value)))


def check_time(value, what):
    expect(isinstance(value, str) and value, "%s: not an ISO 8601 string: %r" % (what, value))
    text = value[:-1] + "+00:00" if value.endswith("Z") else value
    head, dot, rest = text.partition(".")
    if dot:
        digits = ""
        while rest and rest[0].isdigit():
            digits, rest = digits + rest[0], rest[1:]
        text = head + "." + (digits + "000000")[:6] + rest
    try:
        datetime.fromisoformat(text)
    except ValueError:
        raise CheckFailed("%s: not ISO 8601: %r" % (what, value))


def check_task(task, what):
    check_keys(task, TASK_KEYS, "task", what)
    for key in ("name", "project_id", "goal", "status", "author"):
        expect(isinstance(task[key], str) and task[key], "%s: task.%s %r" % (what, key, task[key]))
    expect(type(task["event_seq"]) is int and task["event_seq"] >= 0, "%s: task.event_seq %r" % (what, task["event_seq"]))
    check_time(task["created_at"], what + " created_at")


def check_event(event, what):
    check_keys(event, EVENT_KEYS, "event", what)
    expect(type(event["seq"]) is int and event["seq"] >= 1, "%s: event.seq %r" % (what, event["seq"]))
    expect(event["kind"] in EVENT_KINDS, "%s: event.kind %r" % (what, event["kind"]))
    expect(isinstance(event["payload"], str), "%s: event.payload %r" % (what, event["payload"]))
    expect(type(event["truncated"]) is bool, "%s: event.truncated %r" % (what, event["truncated"]))
    expect(event["payload_sha256"] == sha256(event["payload"]) or event["truncated"],
           "%s: payload_sha256 %r is not the hash of the payload" % (what, event["payload_sha256"]))
    check_time(event["at"], what + " at")


def check_summary(summary, what):
    check_keys(summary, SUMMARY_KEYS, "step summary", what)
    expect(summary["state"] in STEP_STATES and summary["kind"] in STEP_KINDS,
           "%s: step summary %s" % (what, show(summary)))


def check_page(page, what):
    check_keys(page, PAGE_KEYS, "event page", what)
    expect(isinstance(page["events"], list), "%s: events is not a list" % what)
    for event in page["events"]:
        check_event(event, what)


def check_view(view, what):
    check_keys(view, VIEW_KEYS, "view", what)
    expect(isinstance(view["steps"], dict) and set(view["steps"]) == set(STEP_STATES),
           "%s: view.steps does not map every state: %s" % (what, show(view["steps"])))
    expect(isinstance(view["step_counts"], dict) and set(view["step_counts"]) == set(STEP_STATES),
           "%s: view.step_counts does not map every state: %s" % (what, show(view["step_counts"])))
    shown = 0
    for state in STEP_STATES:
        expect(isinstance(view["steps"][state], list), "%s: view.steps[%r] is not a list" % (what, state))
        for summary in view["steps"][state]:
            check_summary(summary, what)
            expect(summary["state"] == state, "%s: a %r step under %r" % (what, summary["state"], state))
            shown += 1
        expect(type(view["step_counts"][state]) is int, "%s: step_counts[%r] %r" % (what, state,
                                                                                   view["step_counts"][state]))
    expect(shown <= VIEW_STEP_CAP, "%s: %d steps shown (at most %d)" % (what, shown, VIEW_STEP_CAP))
    expect(type(view["steps_truncated"]) is bool, "%s: steps_truncated %r" % (what, view["steps_truncated"]))
    expect(type(view["last_event_seq"]) is int, "%s: last_event_seq %r" % (what, view["last_event_seq"]))


def refusal(name, job_name, arguments_of):
    """A check that `job_name` with the arguments `arguments_of(caller)` answers HTTP 422."""
    @check(name)
    def _():
        caller = Caller()
        task = caller.task()["name"]
        arguments = arguments_of(task)
        refused(caller.call(job_name, arguments), "%s %s" % (job_name, show(arguments, 200)))


# --- create_task

@check("create_task.shape")
def _():
    caller = Caller()
    name = fresh("task")
    task = caller.task(name, "find the bug")
    check_task(task, "create_task")
    expect(task["name"] == name and task["goal"] == "find the bug", "task %s" % show(task))
    expect(task["project_id"] == caller.project, "project_id %r, expected the header's %r"
           % (task["project_id"], caller.project))
    expect(task["author"] == caller.agent, "author %r, expected X-Orrery-Agent %r" % (task["author"], caller.agent))
    expect(task["event_seq"] == 0, "a new task's event_seq %r (expected 0)" % task["event_seq"])


@check("create_task.default_project_and_agent")
def _():
    name = fresh("task")
    result = answer_of(job("create_task", {"name": name, "goal": "g"}), "create_task without the headers")
    task = result.get("task") if isinstance(result, dict) else None
    check_task(task, "create_task without headers")
    expect(task["project_id"] == "default" and task["author"] == "user",
           "project_id %r author %r (expected default, user)" % (task["project_id"], task["author"]))
    lookup = answer_of(job("get_task", {"name": name}, {"X-Orrery-Project": "default"}), "get_task in default")
    expect(lookup.get("found") is True, "get_task with X-Orrery-Project: default: %s" % show(lookup))


@check("create_task.idempotent_by_name_and_goal")
def _():
    caller = Caller()
    first = caller.task(None, "the goal")
    again = answer_of(caller.call("create_task", {"name": first["name"], "goal": "the goal"}),
                      "create_task of the same name and goal")
    check_write(again, "task", "create_task again")
    expect(again["error"] is None, "error %r" % again["error"])
    expect(isinstance(again["task"], dict) and again["task"]["name"] == first["name"]
           and again["task"]["created_at"] == first["created_at"] and again["task"]["goal"] == "the goal",
           "the existing task was not returned: %s (first %s)" % (show(again["task"]), show(first)))


@check("create_task.task_exists")
def _():
    caller = Caller()
    first = caller.task(None, "goal one")
    caller.refused_write("create_task", {"name": first["name"], "goal": "goal two"}, "task", "task_exists")
    view = caller.view(first["name"])
    expect(view["goal"] == "goal one", "the goal became %r" % view["goal"])


refusal("create_task.refuses_unknown_field", "create_task", lambda t: {"name": fresh("t"), "goal": "g", "extra": 1})
refusal("create_task.refuses_wrong_type", "create_task", lambda t: {"name": fresh("t"), "goal": 5})


# --- record_event and list_events

@check("record_event.shape_and_numbering")
def _():
    caller = Caller()
    task = caller.task()["name"]
    first = caller.event(task, "hello", kind="message", role="user")
    second = caller.event(task, "call", kind="tool_call", name="grep")
    third = caller.event(task, "out", kind="tool_result", name="grep")
    for event, seq in ((first, 1), (second, 2), (third, 3)):
        check_event(event, "record_event")
        expect(event["seq"] == seq, "event seq %r, expected %d" % (event["seq"], seq))
        expect(event["author"] == caller.agent, "author %r, expected %r" % (event["author"], caller.agent))
        expect(event["truncated"] is False, "a short payload truncated")
    expect(first["role"] == "user" and first["name"] is None and first["kind"] == "message",
           "first event %s" % show(first))
    expect(second["name"] == "grep" and second["role"] is None, "second event %s" % show(second))
    expect(first["payload"] == "hello" and first["payload_sha256"] == sha256("hello"), "first event %s" % show(first))
    events = caller.all_events(task)
    expect([e["seq"] for e in events] == [1, 2, 3], "list_events seqs %s" % [e["seq"] for e in events])
    expect([e["payload"] for e in events] == ["hello", "call", "out"], "payloads %s" % show(events))
    expect(caller.view(task)["last_event_seq"] == 3, "view.last_event_seq is not 3")


@check("record_event.task_not_found")
def _():
    Caller().refused_write("record_event", {"task_name": fresh("none"), "kind": "note", "payload": "x"},
                           "event", "task_not_found")


@check("record_event.payload_cut_with_hash_of_whole")
def _():
    caller = Caller()
    task = caller.task()["name"]
    unit = "aé中🙂"
    whole = unit * 10001  # 40004 characters, 1+2+3+4 bytes each
    event = caller.event(task, whole)
    expect(event["truncated"] is True, "truncated %r for %d characters" % (event["truncated"], len(whole)))
    expect(len(event["payload"]) == MAX_PAYLOAD_CHARACTERS,
           "payload kept %d characters (expected %d)" % (len(event["payload"]), MAX_PAYLOAD_CHARACTERS))
    expect(event["payload"] == whole[:MAX_PAYLOAD_CHARACTERS], "the kept payload is not the first 32000 characters")
    expect(event["payload_sha256"] == sha256(whole),
           "payload_sha256 %r, expected the hash of the whole text %r (the hash of the cut text is %r)"
           % (event["payload_sha256"], sha256(whole), sha256(event["payload"])))
    listed = caller.all_events(task)[0]
    expect(listed["payload"] == whole[:MAX_PAYLOAD_CHARACTERS] and listed["truncated"] is True
           and listed["payload_sha256"] == sha256(whole), "list_events shows another event: %s" % show(listed))
    exact = "中" * MAX_PAYLOAD_CHARACTERS
    event = caller.event(task, exact)
    expect(event["truncated"] is False and event["payload"] == exact and event["payload_sha256"] == sha256(exact),
           "a payload of exactly 32000 characters: truncated %r, %d characters kept"
           % (event["truncated"], len(event["payload"])))


@check("list_events.paging_reads_every_event_once")
def _():
    caller = Caller()
    task = caller.task()["name"]
    for i in range(7):
        caller.event(task, "event %d" % i)
    seen = []
    after = 0
    for _ in range(10):
        page = caller.events(task, after_seq=after, limit=3)
        expect(page["found"] is True, "found %r" % page["found"])
        expect(len(page["events"]) <= 3, "a page of %d events for limit 3" % len(page["events"]))
        seen += [e["seq"] for e in page["events"]]
        if not page["truncated"]:
            break
        expect(type(page["next_after_seq"]) is int and page["next_after_seq"] > after,
               "next_after_seq %r after %r" % (page["next_after_seq"], after))
        after = page["next_after_seq"]
    expect(seen == list(range(1, 8)), "paging read seqs %s (expected 1..7 once each)" % seen)
    page = caller.events(task, after_seq=5)
    expect([e["seq"] for e in page["events"]] == [6, 7] and page["truncated"] is False,
           "after_seq 5: seqs %s truncated %r" % ([e["seq"] for e in page["events"]], page["truncated"]))
    page = caller.events(task, after_seq=0, limit=3)
    expect(page["truncated"] is True and page["next_after_seq"] == 3,
           "first page of 3: truncated %r next_after_seq %r (expected true, 3)" % (page["truncated"],
                                                                                page["next_after_seq"]))
    page = caller.events(task, limit=200)
    expect(len(page["events"]) == 7, "limit 200: %d events" % len(page["events"]))
    page = caller.events(task, limit=1)
    expect(len(page["events"]) == 1, "limit 1: %d events" % len(page["events"]))


@check("list_events.unknown_task")
def _():
    page = Caller().events(fresh("none"))
    expect(page["found"] is False and page["events"] == [], "page %s (expected found false, no events)" % show(page))


refusal("list_events.refuses_limit_0", "list_events", lambda t: {"task_name": t, "limit": 0})
refusal("list_events.refuses_limit_201", "list_events", lambda t: {"task_name": t, "limit": 201})
refusal("list_events.refuses_unknown_field", "list_events", lambda t: {"task_name": t, "extra": True})
refusal("record_event.refuses_unknown_kind", "record_event", lambda t: {"task_name": t, "kind": "chat", "payload": "x"})
refusal("record_event.refuses_wrong_type", "record_event", lambda t: {"task_name": t, "kind": "note", "payload": 7})


# --- set_step and list_steps

@check("set_step.create_then_update")
def _():
    caller = Caller()
    task = caller.task()["name"]
    seq = caller.event(task, "the result")["seq"]
    step = caller.step(task, "read-file", "in_progress", kind="read")
    check_keys(step, STEP_KEYS, "step", "set_step")
    expect(step["name"] == "read-file" and step["state"] == "in_progress" and step["kind"] == "read"
           and step["result_event_seq"] is None, "step %s" % show(step))
    step = caller.step(task, "read-file", "completed", kind="read", result_event_seq=seq)
    expect(step["state"] == "completed" and step["result_event_seq"] == seq, "updated step %s" % show(step))
    expect(caller.steps(task, "in_progress") == [], "the step is still listed in_progress")
    done = caller.steps(task, "completed")
    expect([s["name"] for s in done] == ["read-file"], "completed steps %s (one step, unique by name)" % show(done))
    expect(done[0]["result_event_seq"] == seq, "summary %s" % show(done[0]))
    view = caller.view(task)
    expect(view["step_counts"]["completed"] == 1 and sum(view["step_counts"].values()) == 1,
           "step_counts %s" % show(view["step_counts"]))
    default = caller.step(task, "plain", "not_started")
    expect(default["kind"] == "other", "the default kind %r (expected other)" % default["kind"])


@check("set_step.unknown_state_accepted")
def _():
    caller = Caller()
    task = caller.task()["name"]
    step = caller.step(task, "maybe", "unknown", kind="analysis")
    expect(step["state"] == "unknown", "step %s" % show(step))
    expect([s["name"] for s in caller.steps(task, "unknown")] == ["maybe"], "list_steps unknown")


@check("set_step.event_not_found")
def _():
    caller = Caller()
    task = caller.task()["name"]
    caller.event(task, "one")
    result = caller.refused_write("set_step", {"task_name": task, "name": "s", "state": "completed",
                                               "result_event_seq": 99}, "step", "event_not_found")
    expect(result["step"] is None, "step %s for a refused write" % show(result["step"]))
    expect(caller.steps(task, "completed") == [], "a refused step was stored")


@check("set_step.task_not_found")
def _():
    Caller().refused_write("set_step", {"task_name": fresh("none"), "name": "s", "state": "completed"},
                           "step", "task_not_found")


refusal("set_step.refuses_unknown_state", "set_step", lambda t: {"task_name": t, "name": "s", "state": "done"})
refusal("set_step.refuses_unknown_kind", "set_step",
        lambda t: {"task_name": t, "name": "s", "state": "completed", "kind": "write"})
refusal("list_steps.refuses_unknown_state", "list_steps", lambda t: {"task_name": t, "state": "done"})


@check("list_steps.uncapped_and_sorted")
def _():
    caller = Caller()
    task = caller.task()["name"]
    names = ["step-%02d" % i for i in range(60)]
    order = names[1::2] + names[0::2]
    for name in reversed(order):
        caller.step(task, name, "not_started")
    caller.step(task, "zzz-other", "failed")
    steps = caller.steps(task, "not_started")
    expect([s["name"] for s in steps] == names, "list_steps gave %d steps %s (expected the 60 in name order)"
           % (len(steps), show([s["name"] for s in steps], 300)))
    expect(caller.steps(fresh("none"), "not_started") == [], "list_steps of an unknown task is not []")


# --- get_task

@check("get_task.unknown_task")
def _():
    lookup = Caller().read("get_task", {"name": fresh("none")})
    expect(isinstance(lookup, dict) and lookup.get("found") is False, "lookup %s (expected found false)" % show(lookup))


@check("get_task.bounded_view")
def _():
    caller = Caller()
    task = caller.task(None, "the bounded goal")["name"]
    marker = "SECRET-PAYLOAD-" + secrets.token_hex(8)
    caller.event(task, marker, kind="tool_result", name="tool")
    counts = {"not_started": 20, "in_progress": 5, "completed": 25, "failed": 4, "unknown": 6}
    i = 0
    for state, count in counts.items():
        for _ in range(count):
            caller.step(task, "s%03d" % i, state, kind=STEP_KINDS[i % 3], result_event_seq=1 if i % 2 else None)
            i += 1
    view = caller.view(task)
    expect(view["task_name"] == task and view["goal"] == "the bounded goal" and view["last_event_seq"] == 1,
           "view %s" % show({k: view[k] for k in ("task_name", "goal", "last_event_seq")}))
    shown = sum(len(v) for v in view["steps"].values())
    expect(shown == VIEW_STEP_CAP, "%d steps shown of 60 (expected %d)" % (shown, VIEW_STEP_CAP))
    expect(view["steps_truncated"] is True, "steps_truncated %r with 60 steps" % view["steps_truncated"])
    expect(view["step_counts"] == counts, "step_counts %s (expected %s)" % (show(view["step_counts"]), show(counts)))
    text = json.dumps(view)
    expect(marker not in text, "the view holds an event's payload text")
    small = caller.task()["name"]
    caller.step(small, "only", "failed")
    view = caller.view(small)
    expect(view["steps_truncated"] is False and [s["name"] for s in view["steps"]["failed"]] == ["only"]
           and view["step_counts"] == {"not_started": 0, "in_progress": 0, "completed": 0, "failed": 1, "unknown": 0},
           "a one-step view %s" % show(view))


# --- projects and authors

@check("project.isolation")
def _():
    a = Caller()
    b = Caller()
    task = a.task(None, "goal a")["name"]
    a.event(task, "in a")
    a.step(task, "s", "completed")
    lookup = b.read("get_task", {"name": task})
    expect(lookup.get("found") is False, "another project sees the task: %s" % show(lookup))
    page = b.events(task)
    expect(page["found"] is False and page["events"] == [], "another project lists its events: %s" % show(page))
    expect(b.steps(task, "completed") == [], "another project lists its steps")
    b.refused_write("record_event", {"task_name": task, "kind": "note", "payload": "x"}, "event", "task_not_found")
    b.refused_write("set_step", {"task_name": task, "name": "s", "state": "failed"}, "step", "task_not_found")
    other = b.task(task, "goal b")
    expect(other["goal"] == "goal b" and other["project_id"] == b.project, "same name in project b: %s" % show(other))
    expect(a.view(task)["goal"] == "goal a", "project a's task changed")


@check("project.author_is_the_agent")
def _():
    project = fresh("proj")
    first = Caller(project, "alice")
    second = Caller(project, "bob")
    task = first.task()
    expect(task["author"] == "alice", "task author %r" % task["author"])
    event = second.event(task["name"], "from bob")
    expect(event["author"] == "bob", "event author %r (expected bob)" % event["author"])
    events = first.all_events(task["name"])
    expect([e["author"] for e in events] == ["bob"], "listed authors %s" % [e["author"] for e in events])


# --- request_id

@check("request_id.record_event_replay")
def _():
    caller = Caller()
    task = caller.task()["name"]
    arguments = {"task_name": task, "kind": "note", "payload": "once", "request_id": fresh("rid")}
    first = caller.write("record_event", arguments, "event")
    again = answer_of(caller.call("record_event", arguments), "the same record_event again")
    expect(isinstance(again, dict) and again.get("error") is None and again.get("event") == first,
           "the retry answered %s (first %s)" % (show(again), show(first)))
    events = caller.all_events(task)
    expect([e["seq"] for e in events] == [1], "list_events seqs %s (expected one event)" % [e["seq"] for e in events])


@check("request_id.other_arguments_reused")
def _():
    caller = Caller()
    task = caller.task()["name"]
    rid = fresh("rid")
    caller.write("record_event", {"task_name": task, "kind": "note", "payload": "one", "request_id": rid}, "event")
    caller.refused_write("record_event", {"task_name": task, "kind": "note", "payload": "two", "request_id": rid},
                         "event", "request_id_reused")
    expect(len(caller.all_events(task)) == 1, "a second event was stored")


@check("request_id.create_task_and_set_step_replay")
def _():
    caller = Caller()
    rid = fresh("rid")
    arguments = {"name": fresh("task"), "goal": "g", "request_id": rid}
    first = caller.write("create_task", arguments, "task")
    again = answer_of(caller.call("create_task", arguments), "the same create_task again")
    expect(again.get("task") == first and again.get("error") is None, "retry %s (first %s)" % (show(again), show(first)))
    caller.refused_write("create_task", {"name": fresh("task"), "goal": "g", "request_id": rid}, "task",
                         "request_id_reused")
    task = first["name"]
    srid = fresh("rid")
    arguments = {"task_name": task, "name": "s", "state": "in_progress", "request_id": srid}
    step = caller.write("set_step", arguments, "step")
    caller.step(task, "s", "completed")
    again = answer_of(caller.call("set_step", arguments), "the same set_step again")
    expect(again.get("step") == step, "the set_step retry answered %s (the stored result %s)"
           % (show(again), show(step)))
    expect([s["name"] for s in caller.steps(task, "completed")] == ["s"],
           "the retry applied again (the step is no longer completed)")
    caller.refused_write("set_step", {"task_name": task, "name": "s", "state": "failed", "request_id": srid},
                         "step", "request_id_reused")


@check("request_id.invalid")
def _():
    caller = Caller()
    task = caller.task()["name"]
    for rid in ("x" * 65, ""):
        caller.refused_write("record_event", {"task_name": task, "kind": "note", "payload": "x", "request_id": rid},
                             "event", "invalid_request_id")
        caller.refused_write("set_step", {"task_name": task, "name": "s", "state": "failed", "request_id": rid},
                             "step", "invalid_request_id")
        caller.refused_write("create_task", {"name": fresh("t"), "goal": "g", "request_id": rid},
                             "task", "invalid_request_id")
    expect(caller.all_events(task) == [], "an event with an invalid request_id was stored")
    caller.write("record_event", {"task_name": task, "kind": "note", "payload": "x", "request_id": "y" * 64}, "event")


@check("request_id.per_project")
def _():
    a = Caller()
    b = Caller()
    rid = fresh("rid")
    name = fresh("task")
    a.task(name, "g")
    b.task(name, "g")
    a.event(name, "a text", request_id=rid)
    a.event(name, "a two")
    event = b.event(name, "b text", request_id=rid)
    expect(event["payload"] == "b text" and event["seq"] == 1, "project b's event %s" % show(event))
    expect([e["payload"] for e in b.all_events(name)] == ["b text"], "project b's events")
    expect([e["payload"] for e in a.all_events(name)] == ["a text", "a two"], "project a's events")


# --- durability: last, it restarts the server

@check("request_id.durable_across_kill")
def _():
    caller = Caller()
    task = caller.task()["name"]
    caller.event(task, "before")
    arguments = {"task_name": task, "kind": "tool_result", "name": "t", "payload": "crash " + secrets.token_hex(4),
                 "request_id": fresh("rid")}
    first = caller.write("record_event", arguments, "event")
    server().kill()
    server().start()
    again = answer_of(caller.call("record_event", arguments), "the same record_event after kill -9 and restart")
    expect(isinstance(again, dict) and again.get("event") == first and again.get("error") is None,
           "after the restart the retry answered %s (first %s)" % (show(again), show(first)))
    events = caller.all_events(task)
    expect([e["seq"] for e in events] == [1, 2], "list_events seqs %s after the restart (expected [1, 2])"
           % [e["seq"] for e in events])
    expect(caller.view(task)["last_event_seq"] == 2, "last_event_seq after the restart")


# ---------------------------------------------------------------- the runner

if __name__ == "__main__":
    sys.exit(main(__doc__.split("\n\n")[0], "agrag-suite-"))
