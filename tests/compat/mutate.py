#!/usr/bin/env python3
"""Deterministic generator of mutated blueprints for the reference-oracle differential test.

    python mutate.py [--corpus DIR] [--seed N] [--count N] --out DIR

Each mutant is derived from one file of the antikythera corpus (default: $ORRERY_CORPUS, else
corpus/ beside this script) and written as
``NNNN-<kind>.json``; combinations of 2-3 mutations are named ``NNNN-combo-<kind>+<kind>.json``.
A ``_manifest.tsv`` (file, kind, base) is written beside them. Same corpus + seed + count gives
byte-identical output.

Run it with the reference venv's python (setup_reference.sh): the ``compas-envelope*`` kinds
load the blueprint with the reference (antikythera) and re-encode it with compas ``json_dumps``;
GUIDs are then replaced by seeded ones so the output stays deterministic.

Which verdict each mutant gets is NOT decided here: reference_verdict.py asks the reference.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import sys
import uuid
from pathlib import Path


class Skip(Exception):
    """The mutation does not apply to this base blueprint."""


class Raw:
    """A mutant that has to be written as exact text/bytes (not via json.dumps)."""

    def __init__(self, payload):
        self.payload = payload


# ---------------------------------------------------------------------------------------------
# helpers on raw blueprint dicts


def tasks(bp):
    if not isinstance(bp.get("tasks"), list):
        raise Skip("no task list")
    return bp["tasks"]


def ids(bp):
    return [t.get("id") for t in tasks(bp)]


def fresh_id(bp, prefix):
    taken = set(ids(bp))
    n = 1
    while f"{prefix}_{n}" in taken:
        n += 1
    return f"{prefix}_{n}"


def of_type(bp, typ):
    return [t for t in tasks(bp) if t.get("type") == typ]


def start_task(bp):
    s = of_type(bp, "system.start")
    if not s:
        raise Skip("no start")
    return s[0]


def end_task(bp):
    e = of_type(bp, "system.end")
    if not e:
        raise Skip("no end")
    return e[0]


def middle(bp):
    return [t for t in tasks(bp) if t.get("type") not in ("system.start", "system.end")]


def pick(rng, seq):
    seq = list(seq)
    if not seq:
        raise Skip("nothing to pick")
    return seq[rng.randrange(len(seq))]


def pick_middle(rng, bp, pred=lambda t: True):
    return pick(rng, [t for t in middle(bp) if pred(t)])


def dep_list(t):
    return t.setdefault("depends_on", [])


def sleep_task(tid, deps, **extra):
    t = {"id": tid, "type": "system.sleep", "params": [{"name": "duration", "value": 0}]}
    t.update(extra)
    t["depends_on"] = [{"id": d} for d in deps]
    return t


def insert_before_end(bp, new_tasks):
    ts = tasks(bp)
    end = end_task(bp)
    i = ts.index(end)
    ts[i:i] = new_tasks


def insert_chain(bp, n, prefix="step"):
    """Insert start -> c1 -> ... -> cn -> end (end keeps its other dependencies)."""
    start = start_task(bp)
    end = end_task(bp)
    chain = []
    prev = start["id"]
    for _ in range(n):
        tid = fresh_id({"tasks": tasks(bp) + chain}, prefix)
        chain.append(sleep_task(tid, [prev]))
        prev = tid
    insert_before_end(bp, chain)
    dep_list(end).append({"id": prev})
    return chain


def produced(bp):
    names = set()
    for t in tasks(bp):
        for o in t.get("outputs") or []:
            if isinstance(o, dict) and isinstance(o.get("name"), str):
                names.add(o.get("set_to") or o["name"])
    return sorted(names)


def ensure_produced(rng, bp):
    names = produced(bp)
    if names:
        return names
    t = pick_middle(rng, bp)
    t.setdefault("outputs", []).append({"name": "counter", "value": 3})
    return ["counter"]


def all_io(bp):
    out = []
    for t in tasks(bp):
        for key in ("inputs", "outputs", "params"):
            for item in t.get(key) or []:
                out.append((t, key, item))
    return out


def has_scope(bp):
    return any("scope_start" in t for t in tasks(bp))


def make_scope(bp, length, policy=None, prefix="scoped"):
    chain = insert_chain(bp, length, prefix)
    chain[0]["scope_start"] = {} if policy is None else policy
    chain[-1]["scope_end"] = chain[0]["id"]
    return chain


def set_condition(rng, bp, expr, pred=lambda t: True):
    t = pick_middle(rng, bp, lambda t: not t.get("condition") and pred(t))
    t["condition"] = expr
    return t


# ---------------------------------------------------------------------------------------------
# condition expressions


BAD_SYNTAX = [
    "x ==",
    "a = 1",
    " leading_space",
    "\tindented",
    "(unclosed",
    "1 +* 2",
    "if x",
    "a and or b",
    "import os",
    "x; y",
    "lambda x:",
    "a b",
    "'unterminated",
    "not",
    "a\r\nb",
    "*a",
    "x +=1",
    "def f(): pass",
    "\ufeffa",
    "a\x00",
]

# {P} is a produced name; templates marked "bound" bind names themselves.
BOUND_TEMPLATES = [
    "[x for x in {P}] == []",
    "all(x > 0 for x in {P})",
    "any(k == v for k, v in {P}.items())",
    "{{x: y for x, y in {P}}} != {{}}",
    "{{x for x in {P} if x}}",
    "[y for x in {P} for y in x if y]",
    "[x for x in {P}] and x",
    "(lambda v: v > 1)({P})",
    "(lambda a, *b, c=1, **d: a + c)({P})",
    "(lambda a=ghost_default: a)({P})",
    "(tmp := {P}) and tmp > 0",
    "sorted({P}, key=lambda e: e.get('id'))",
    "[z for z in unknown_items]",
]

BUILTIN_TEMPLATES = [
    "len({P}) > 0",
    "isinstance({P}, (int, float)) and abs({P}) < 10",
    "max({P}, 1) == min(2, {P})",
    "round({P}) in range(10)",
    "sum([{P}]) > 0 and bool(list())",
    "str({P}).upper() == 'X'",
    "exit is not None and quit is not None",
    "copyright and credits and license and help",
    "__name__ == 'builtins' and __debug__",
    "ExceptionGroup and BaseExceptionGroup and aiter and anext",
    "print({P}) is None",
    "__import__('math') is not None",
    "__builtins__ is None",
    "type({P}) is int and NotImplemented and Ellipsis",
]

EDGE_TEMPLATES = [
    "{P} is not None",
    "not {P}",
    "0 < {P} < 10",
    "{P} if {P} else None",
    "\n{P}",
    "{P}\n",
    "({P}\n and {P})",
    "{P}  # trailing comment",
    "{P}\\\n and True",
    "await {P}",
    "(yield {P})",
    "f'{{{P}}}' == 'x'",
    "f'{{{P}!r:>{{width}}}}'",
    "{P}[1:2, ::3]",
    "{{**{P}}}",
    "[*{P}]",
    "{P} @ {P}",
    "lambda: {P}",
    "{P}.real.imag",
    "{P}.get('k', default)",
    "u'x' == {P} or b'x' != {P}",
    "... is {P}",
    "-{P} ** 2 > 1_000",
    "{P} not in [1] and {P} is not None",
    "match == case",
    "_ or {P}",
    "{P} if True else ghost_else",
    "0x_1 < {P}",
    "caf\u00e9 == {P}",
]


def expr(template, bp, rng):
    names = produced(bp)
    return template.replace("{P}", pick(rng, names)) if "{P}" in template else template


# ---------------------------------------------------------------------------------------------
# the mutations: each takes (rng, bp) and mutates bp in place, or returns a replacement


def m_dangling_dependency(rng, bp):
    dep_list(pick_middle(rng, bp) if rng.random() < 0.8 else end_task(bp)).append({"id": fresh_id(bp, "ghost")})


def m_missing_start(rng, bp):
    s = start_task(bp)
    if rng.random() < 0.5:
        tasks(bp).remove(s)
    else:
        s["type"] = "system.sleep"
        s["depends_on"] = [{"id": end_task(bp)["id"]}] if rng.random() < 0.5 else []


def m_two_starts(rng, bp):
    ts = tasks(bp)
    ts.insert(1, {"id": fresh_id(bp, "start"), "type": "system.start"})


def m_missing_end(rng, bp):
    e = end_task(bp)
    if rng.random() < 0.5:
        tasks(bp).remove(e)
    else:
        e["type"] = "system.sleep"


def m_two_ends(rng, bp):
    tasks(bp).append({"id": fresh_id(bp, "end"), "type": "system.end", "depends_on": [{"id": pick_middle(rng, bp)["id"]}]})


def m_orphan_task(rng, bp):
    if rng.random() < 0.5:
        t = pick(rng, [t for t in tasks(bp) if t.get("type") != "system.start" and t.get("depends_on")])
        if rng.random() < 0.5:
            t.pop("depends_on")
        else:
            t["depends_on"] = []
    else:
        insert_before_end(bp, [{"id": fresh_id(bp, "orphan"), "type": "system.sleep"}])


def m_scope_end_missing_task(rng, bp):
    pick_middle(rng, bp, lambda t: "scope_end" not in t)["scope_end"] = fresh_id(bp, "ghost_scope")


def m_scope_end_without_start(rng, bp):
    chain = insert_chain(bp, 2)
    chain[1]["scope_end"] = chain[0]["id"]


def m_scope_double_close(rng, bp):
    chain = make_scope(bp, 3)
    chain[1]["scope_end"] = chain[0]["id"]


def m_scope_start_without_end(rng, bp):
    t = pick_middle(rng, bp, lambda t: "scope_start" not in t and "scope_end" not in t)
    t["scope_start"] = pick(rng, [{}, {"name": "unclosed"}, {"retry_policy": {"retries": 1}}])


def m_interlaced_scopes(rng, bp):
    a, b, c, d = insert_chain(bp, 4, "lace")
    a["scope_start"] = {}
    c["scope_end"] = a["id"]
    b["scope_start"] = {"name": "second"}
    d["scope_end"] = b["id"]


def m_nested_scopes(rng, bp):
    names = ensure_produced(rng, bp)
    chain = insert_chain(bp, 4 + rng.randrange(2), "nest")
    inner_policy = pick(rng, [{}, {"retry_policy": {"retries": 2, "backoff": {"constant_ms": 10}}},
                              {"while_policy": {"condition": f"{pick(rng, names)} > 0", "max_iterations": 3}}])
    outer_policy = pick(rng, [{}, {"name": "outer"}, {"retry_policy": {"retries": 0}}])
    chain[0]["scope_start"] = outer_policy
    chain[-1]["scope_end"] = chain[0]["id"]
    chain[1]["scope_start"] = inner_policy
    chain[-2]["scope_end"] = chain[1]["id"]
    if rng.random() < 0.3:  # plus a disjoint sibling scope
        sib = insert_chain(bp, 2, "sibling")
        sib[0]["scope_start"] = {}
        sib[1]["scope_end"] = sib[0]["id"]


def m_single_task_scope(rng, bp):
    t = pick_middle(rng, bp, lambda t: "scope_start" not in t and "scope_end" not in t)
    t["scope_start"] = {}
    t["scope_end"] = t["id"]


def m_bad_condition_syntax(rng, bp):
    set_condition(rng, bp, pick(rng, BAD_SYNTAX))


def m_condition_unknown_name(rng, bp):
    names = produced(bp)
    e = pick(rng, ["ghost_flag", "ghost_flag == 'Yes'", "not ghost_flag", "len(ghost_list) > 0", "ghost.attribute"])
    if names and rng.random() < 0.5:
        e = f"{pick(rng, names)} and {e}"
    set_condition(rng, bp, e)


def m_condition_reads_param(rng, bp):
    t = pick_middle(rng, bp, lambda t: not t.get("condition"))
    t.setdefault("params", []).append({"name": "threshold", "value": 3})
    t["condition"] = pick(rng, ["threshold > 2", "threshold", "threshold in [1, 2, 3]"])


def m_condition_reads_input(rng, bp):
    t = pick_middle(rng, bp, lambda t: not t.get("condition"))
    t.setdefault("inputs", []).append({"name": "gate", "value": True})
    t["condition"] = pick(rng, ["gate", "gate is True", "not not gate"])


def m_condition_reads_output_name_behind_set_to(rng, bp):
    t = pick_middle(rng, bp)
    t.setdefault("outputs", []).append({"name": "raw_result", "set_to": "stored_result"})
    later = insert_chain(bp, 1, "reader")[0]
    later["condition"] = pick(rng, ["raw_result is not None", "stored_result is not None"])


def m_while_condition_reads_param(rng, bp):
    chain = make_scope(bp, 2)
    chain[0]["params"].append({"name": "limit", "value": 5})
    chain[0]["scope_start"] = {"while_policy": {"condition": pick(rng, ["limit > 0", "duration < 1"]), "max_iterations": 2}}


def m_while_condition_reads_output(rng, bp):
    names = ensure_produced(rng, bp)
    chain = make_scope(bp, 2)
    chain[0]["scope_start"] = {"while_policy": {"condition": f"{pick(rng, names)} != 0"}}


def _compatible(name, rng):
    """`name` spelt with compatibility characters that NFKC folds back to it: full-width or
    mathematical bold letters, or a ligature for "fi"/"fl"."""
    style = rng.randrange(3)
    if style == 0:
        return "".join(chr(ord(c) - 0x21 + 0xFF01) if "!" <= c <= "~" else c for c in name)
    if style == 1:
        bold = {**{chr(ord("a") + i): chr(0x1D41A + i) for i in range(26)}, **{chr(ord("A") + i): chr(0x1D400 + i) for i in range(26)}}
        return "".join(bold.get(c, c) for c in name)
    return name.replace("fi", "\ufb01").replace("fl", "\ufb02") if ("fi" in name or "fl" in name) else "\ufb01" + name


def m_condition_nfkc(rng, bp):
    """Python reads identifiers as NFKC, the JSON's names as written: a condition that spells a
    produced name with compatibility characters reads that name; an output whose own name has
    them is not the name a condition spelt the same way reads."""
    case = rng.randrange(3)
    if case == 0:
        name = pick(rng, ensure_produced(rng, bp))
        reader = insert_chain(bp, 1, "reader")[0]
        reader["condition"] = f"{_compatible(name, rng)} is not None"
    elif case == 1:
        t = pick_middle(rng, bp)
        odd = _compatible("flag_value", rng)
        t.setdefault("outputs", []).append({"name": odd, "value": 1})
        reader = insert_chain(bp, 1, "reader")[0]
        reader["condition"] = pick(rng, [odd, "flag_value", odd + " == 1"])
    else:
        t = pick_middle(rng, bp, lambda t: not t.get("condition"))
        t.setdefault("params", []).append({"name": "limit", "value": 3})
        t["condition"] = pick(rng, [_compatible("limit", rng) + " > 0", "\uff4c\uff49\uff4d\uff49\uff54 > 0"])


def m_condition_bound_names(rng, bp):
    ensure_produced(rng, bp)
    set_condition(rng, bp, expr(pick(rng, BOUND_TEMPLATES), bp, rng))


def m_condition_builtins(rng, bp):
    ensure_produced(rng, bp)
    set_condition(rng, bp, expr(pick(rng, BUILTIN_TEMPLATES), bp, rng))


def m_condition_syntax_edge(rng, bp):
    ensure_produced(rng, bp)
    set_condition(rng, bp, expr(pick(rng, EDGE_TEMPLATES), bp, rng))


def _zoo(templates):
    def m(rng, bp):
        ensure_produced(rng, bp)
        chain = insert_chain(bp, len(templates), "cond")
        for t, template in zip(chain, templates):
            t["condition"] = expr(template, bp, rng)
    return m


def m_condition_as_param(rng, bp):
    names = ensure_produced(rng, bp)
    t = pick_middle(rng, bp, lambda t: not t.get("condition"))
    value = pick(rng, [f"{pick(rng, names)} > 0", "ghost_param_flag", "a = 1", True, 5])
    t.setdefault("params", []).append({"name": "condition", "value": value})


def m_empty_condition_falls_back_to_param(rng, bp):
    t = pick_middle(rng, bp, lambda t: not t.get("condition"))
    t["condition"] = ""
    t.setdefault("params", []).append({"name": "condition", "value": pick(rng, ["ghost_via_param", "duration == 0"])})


def m_extra_key_top(rng, bp):
    bp[pick(rng, ["x-orrery", "orrery", "metadata", "state"])] = pick(rng, [{"layout": {"start": [0, 0]}}, 1, None, "x"])


def m_extra_key_task(rng, bp):
    t = pick(rng, tasks(bp))
    t[pick(rng, ["priority", "x-orrery", "notes", "context"])] = pick(rng, [3, {"a": 1}, None, "text"])


def m_extra_key_io(rng, bp):
    items = all_io(bp)
    if not items or rng.random() < 0.2:
        t = pick_middle(rng, bp)
        item = {"name": "extra_param", "value": 1}
        t.setdefault("params", []).append(item)
    else:
        item = pick(rng, items)[2]
    item[pick(rng, ["unit", "required", "default", "x-orrery"])] = "mm"


def m_set_to_on_input(rng, bp):
    t = pick_middle(rng, bp)
    t.setdefault("inputs", []).append({"name": "misplaced", "set_to": "elsewhere"})


def m_get_from_on_output(rng, bp):
    t = pick_middle(rng, bp)
    t.setdefault("outputs", []).append({"name": "misplaced", "get_from": "elsewhere"})


def m_get_from_on_param(rng, bp):
    t = pick_middle(rng, bp)
    t.setdefault("params", []).append({"name": "misplaced", "value": 1, "get_from": "elsewhere"})


def m_extra_key_dependency(rng, bp):
    t = pick(rng, [t for t in tasks(bp) if t.get("depends_on")])
    pick(rng, t["depends_on"])[pick(rng, ["lag", "x-orrery", "optional"])] = pick(rng, [5, {"ms": 1}, True])


def m_deprecated_io_type(rng, bp):
    items = [it for _, _, it in all_io(bp)]
    if not items:
        raise Skip("no IO")
    for it in rng.sample(items, min(len(items), 1 + rng.randrange(3))):
        if "type_hint" in it and rng.random() < 0.6:
            it["type"] = it.pop("type_hint")
        elif rng.random() < 0.5:
            it["type"] = "str"
        else:
            it["type"] = "int"
            it["type_hint"] = "float"


def m_dependency_type_unknown(rng, bp):
    t = pick(rng, [t for t in tasks(bp) if t.get("depends_on")])
    pick(rng, t["depends_on"])["type"] = pick(rng, ["XX", "fs", "", "FINISH_TO_START", None, 1])


def _dep_type(kind):
    def m(rng, bp):
        deps = [d for t in tasks(bp) for d in t.get("depends_on") or []]
        if not deps:
            raise Skip("no deps")
        for d in rng.sample(deps, 1 + rng.randrange(len(deps))):
            d["type"] = kind
    return m


def m_cycle(rng, bp):
    chain = insert_chain(bp, 2 + rng.randrange(2), "loop")
    dep_list(chain[0]).append({"id": chain[-1]["id"]})
    if rng.random() < 0.3:
        dep_list(start_task(bp)).append({"id": end_task(bp)["id"]})


def m_duplicate_task_id(rng, bp):
    t = pick_middle(rng, bp)
    if rng.random() < 0.5:
        dup = copy.deepcopy(t)
        dup.pop("scope_start", None)
        dup.pop("scope_end", None)
        tasks(bp).insert(tasks(bp).index(t) + 1, dup)
    else:
        new = insert_chain(bp, 1, "dup")[0]
        new["id"] = t["id"]
        end = end_task(bp)
        end["depends_on"][-1]["id"] = t["id"]


def _version(value):
    def m(rng, bp):
        bp["version"] = value
    return m


ODD_VERSIONS = [" 1.0 ", "1.0\n", "1.0a1", "1!1.0", "0!1.0", "01", "1.0+local", "1.0.post1", "1.0-dev",
                "1-1", "1.0.0.0.0", "V1.0", "0.9", "", "1.0.0-beta", "2", "1.0_1", "v 1", 1.0, 1, None]


def m_version_odd(rng, bp):
    bp["version"] = pick(rng, ODD_VERSIONS)


def m_version_missing(rng, bp):
    bp.pop("version", None)


def m_missing_id(rng, bp):
    bp.pop("id")


def m_missing_name(rng, bp):
    bp.pop("name")


def m_description_number(rng, bp):
    bp["description"] = 5


def m_tasks_object(rng, bp):
    bp["tasks"] = pick(rng, [{}, {t["id"]: t for t in tasks(bp)}])


def m_inputs_string(rng, bp):
    pick_middle(rng, bp)["inputs"] = "x"


def m_description_null(rng, bp):
    if rng.random() < 0.5:
        bp["description"] = None
    else:
        pick(rng, tasks(bp))["description"] = None


def m_null_optional_field(rng, bp):
    t = pick_middle(rng, bp)
    key = pick(rng, ["condition", "scope_end", "scope_start", "params", "depends_on"])
    t[key] = None


def m_wrong_types_misc(rng, bp):
    choice = rng.randrange(6)
    if choice == 0:
        bp["id"] = 42
    elif choice == 1:
        pick(rng, tasks(bp))["id"] = 7
    elif choice == 2:
        pick_middle(rng, bp)["condition"] = True
    elif choice == 3:
        pick_middle(rng, bp)["params"] = {"duration": 1}
    elif choice == 4:
        dep_list(pick_middle(rng, bp)).append("start")
    else:
        pick_middle(rng, bp)["type"] = None


def m_scope_start_unknown_key(rng, bp):
    chain = make_scope(bp, 2)
    chain[0]["scope_start"] = pick(rng, [{"label": "x"}, {"name": "n", "skip_policy": {}}, {"retry_policy": {"retries": 1, "delay": 3}},
                                         {"while_policy": {"condition": "True", "until": 1}}, {"retry_policy": {"retries": 1, "backoff": {"linear_ms": 1}}}])


def m_scope_retries_negative(rng, bp):
    make_scope(bp, 2)[0]["scope_start"] = {"retry_policy": {"retries": -1}}


def m_scope_max_iterations_zero(rng, bp):
    make_scope(bp, 2)[0]["scope_start"] = {"while_policy": {"condition": "True", "max_iterations": 0}}


def m_scope_start_empty(rng, bp):
    make_scope(bp, 1 + rng.randrange(3))[0]["scope_start"] = {}


def m_scope_policy_number_edges(rng, bp):
    make_scope(bp, 2)[0]["scope_start"] = pick(rng, [
        {"retry_policy": {"retries": 1.0}},
        {"retry_policy": {"retries": True}},
        {"retry_policy": {"retries": 2.5}},
        {"retry_policy": {}},
        {"while_policy": {"condition": "True", "max_iterations": 1.0}},
        {"while_policy": {"max_iterations": 3}},
        {"retry_policy": {"retries": 1}, "while_policy": {"condition": "True"}},
        {"retry_policy": {"retries": 1}, "while_policy": {"condition": "never_evaluated_ghost"}},
        {"retry_policy": {"retries": 1, "backoff": {"linear_ms": 1}}},
        {"retry_policy": {"retries": 0, "backoff": {"constant_ms": -5}}},
    ])


def m_scope_end_empty_string(rng, bp):
    pick_middle(rng, bp, lambda t: "scope_end" not in t)["scope_end"] = ""


def m_empty_tasks(rng, bp):
    bp["tasks"] = []


def m_no_tasks_key(rng, bp):
    bp.pop("tasks")


def m_get_from_unknown(rng, bp):
    t = pick_middle(rng, bp)
    t.setdefault("inputs", []).append({"name": "wired", "get_from": fresh_id(bp, "nobody_writes")})


def m_task_state(rng, bp):
    pick(rng, tasks(bp))["state"] = pick(rng, ["SKIP_REQUESTED", "SUCCEEDED", "PENDING", "BOGUS", "skipped"])


def m_value_compas_point(rng, bp):
    """A param value that is a COMPAS envelope: compas json_load decodes it into an object."""
    value = pick(rng, [{"dtype": "compas.geometry/Point", "data": [1.0, 2.0, 3.0]},
                       {"dtype": "compas.geometry/Point", "data": [1.0, 2.0, 3.0], "guid": "00000000-0000-4000-8000-000000000001"},
                       {"dtype": "antikythera.models/Dependency", "data": {"id": "x"}}])
    pick_middle(rng, bp).setdefault("params", []).append({"name": "frame_origin", "value": value})


def m_value_dtype_unknown(rng, bp):
    value = pick(rng, [{"dtype": "not_a_module_xyz/Thing", "data": {}}, {"dtype": "plainword", "data": 1},
                       {"dtype": "compas.geometry/Point"}, {"dtype": "antikythera.models/Dependency", "data": {"id": "x", "lag": 1}}])
    pick_middle(rng, bp).setdefault("params", []).append({"name": "payload", "value": value})


def m_extra_key_dtype(rng, bp):
    """A "dtype" key makes compas json_load try to decode that object as a COMPAS envelope."""
    where = rng.randrange(3)
    target = bp if where == 0 else pick(rng, tasks(bp)) if where == 1 else pick(rng, [it for _, _, it in all_io(bp)])
    target["dtype"] = pick(rng, ["x", "orrery/Note", "antikythera.models/Task"])


def m_json_truncated(rng, bp):
    text = json.dumps(bp, indent=2, ensure_ascii=False)
    return Raw(text[: max(1, len(text) // 2 + rng.randrange(len(text) // 4))])


def m_json_bom(rng, bp):
    return Raw(b"\xef\xbb\xbf" + json.dumps(bp, indent=2).encode())


def m_json_not_utf8(rng, bp):
    bp["description"] = "MARKER"
    return Raw(json.dumps(bp, indent=2).encode().replace(b"MARKER", b"caf\xe9"))


def m_json_utf16(rng, bp):
    text = json.dumps(bp, indent=2, ensure_ascii=False)
    return Raw(pick(rng, [text.encode("utf-16"), text.encode("utf-16-be"), b"\xfe\xff" + text.encode("utf-16-be"),
                          text.encode("utf-16-le"), text.encode("utf-32")]))


def m_json_not_utf8_anywhere(rng, bp):
    """A byte that cannot be UTF-8 (a lone continuation, a truncated sequence, an overlong or a
    surrogate encoding) in a string or between tokens."""
    text = json.dumps(bp, indent=2, ensure_ascii=False).encode()
    bad = pick(rng, [b"\x80", b"\xc3", b"\xe2\x82", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80", b"\xff"])
    quotes = [i for i, b in enumerate(text) if b == ord('"')]
    at = pick(rng, quotes) + 1 if rng.random() < 0.8 else len(text) - 1
    return Raw(text[:at] + bad + text[at:])


# How deep the nesting goes: around where Python's recursion limit stops the reference's parser
# (about 990 levels from a shallow stack), and a hostile depth.
DEPTHS = [129, 500, 900, 959, 960, 961, 975, 984, 985, 986, 987, 988, 989, 990, 991, 1200, 50000]


def m_json_deep(rng, bp):
    depth = pick(rng, DEPTHS)
    inner = pick(rng, ["list", "object", "mixed"])
    opened = "".join(pick(rng, ["[", '{"k": ']) if inner == "mixed" else "[" if inner == "list" else '{"k": ' for _ in range(depth))
    closed = "".join("]" if o == "[" else "}" for o in reversed([c for c in opened if c in "[{"]))
    marker = "DEEP_MARKER_VALUE"
    where = rng.randrange(4)
    if where == 0:
        pick_middle(rng, bp).setdefault("params", []).append({"name": "nested", "value": marker})
    elif where == 1:
        bp["x-nested"] = marker
    elif where == 2:
        pick(rng, tasks(bp))["x-nested"] = marker
    else:
        pick_middle(rng, bp).setdefault("inputs", []).append({"name": "nested_in", "value": marker})
    return Raw(json.dumps(bp, indent=2, ensure_ascii=False).replace(json.dumps(marker), opened + "1" + closed))


def m_json_lone_surrogate(rng, bp):
    bp["description"] = "MARKER"
    return Raw(json.dumps(bp, indent=2).replace("MARKER", "half \\ud83d pair"))


def m_json_nan(rng, bp):
    pick_middle(rng, bp).setdefault("params", []).append({"name": "weight", "value": float(pick(rng, ["nan", "inf", "-inf"]))})
    return Raw(json.dumps(bp, indent=2))  # Python writes NaN / Infinity literals


def m_json_duplicate_key(rng, bp):
    text = json.dumps(bp, indent=2, ensure_ascii=False)
    key, first = pick(rng, [("version", '"2.0"'), ("id", '"shadowed"'), ("tasks", "[]")])
    return Raw(text.replace("{\n", "{\n  " + json.dumps(key) + ": " + first + ",\n", 1))


def m_top_level_not_object(rng, bp):
    return Raw(json.dumps(pick(rng, [[bp], "blueprint", None, 1, {"blueprint": bp}]), indent=2, ensure_ascii=False))


SINGLE_KINDS = [
    ("dangling-dependency", m_dangling_dependency),
    ("missing-start", m_missing_start),
    ("two-starts", m_two_starts),
    ("missing-end", m_missing_end),
    ("two-ends", m_two_ends),
    ("orphan-task", m_orphan_task),
    ("scope-end-missing-task", m_scope_end_missing_task),
    ("scope-end-without-start", m_scope_end_without_start),
    ("scope-double-close", m_scope_double_close),
    ("scope-start-without-end", m_scope_start_without_end),
    ("interlaced-scopes", m_interlaced_scopes),
    ("nested-scopes", m_nested_scopes),
    ("single-task-scope", m_single_task_scope),
    ("bad-condition-syntax", m_bad_condition_syntax),
    ("condition-unknown-name", m_condition_unknown_name),
    ("condition-reads-param", m_condition_reads_param),
    ("condition-reads-input", m_condition_reads_input),
    ("condition-reads-output-behind-set-to", m_condition_reads_output_name_behind_set_to),
    ("while-condition-reads-param", m_while_condition_reads_param),
    ("while-condition-reads-output", m_while_condition_reads_output),
    ("condition-bound-names", m_condition_bound_names),
    ("condition-nfkc", m_condition_nfkc),
    ("condition-nfkc-2", m_condition_nfkc),
    ("condition-builtins", m_condition_builtins),
    ("condition-syntax-edge", m_condition_syntax_edge),
    ("condition-as-param", m_condition_as_param),
    ("condition-zoo", _zoo(EDGE_TEMPLATES + BOUND_TEMPLATES + BUILTIN_TEMPLATES)),
    ("condition-zoo-syntax", _zoo(BAD_SYNTAX)),
    ("empty-condition-param-fallback", m_empty_condition_falls_back_to_param),
    ("extra-key-top", m_extra_key_top),
    ("extra-key-task", m_extra_key_task),
    ("extra-key-io", m_extra_key_io),
    ("set-to-on-input", m_set_to_on_input),
    ("get-from-on-output", m_get_from_on_output),
    ("get-from-on-param", m_get_from_on_param),
    ("extra-key-dependency", m_extra_key_dependency),
    ("deprecated-io-type", m_deprecated_io_type),
    ("dependency-type-unknown", m_dependency_type_unknown),
    ("dependency-type-FS", _dep_type("FS")),
    ("dependency-type-FF", _dep_type("FF")),
    ("dependency-type-SS", _dep_type("SS")),
    ("dependency-type-SF", _dep_type("SF")),
    ("cycle", m_cycle),
    ("duplicate-task-id", m_duplicate_task_id),
    ("version-2.0", _version("2.0")),
    ("version-1", _version("1")),
    ("version-1.2.3", _version("1.2.3")),
    ("version-v1", _version("v1")),
    ("version-abc", _version("abc")),
    ("version-missing", m_version_missing),
    ("version-odd", m_version_odd),
    ("missing-id", m_missing_id),
    ("missing-name", m_missing_name),
    ("description-number", m_description_number),
    ("tasks-object", m_tasks_object),
    ("inputs-string", m_inputs_string),
    ("description-null", m_description_null),
    ("null-optional-field", m_null_optional_field),
    ("wrong-types-misc", m_wrong_types_misc),
    ("scope-start-unknown-key", m_scope_start_unknown_key),
    ("scope-retries-negative", m_scope_retries_negative),
    ("scope-max-iterations-zero", m_scope_max_iterations_zero),
    ("scope-start-empty", m_scope_start_empty),
    ("scope-policy-number-edges", m_scope_policy_number_edges),
    ("scope-end-empty-string", m_scope_end_empty_string),
    ("empty-tasks", m_empty_tasks),
    ("no-tasks-key", m_no_tasks_key),
    ("get-from-unknown", m_get_from_unknown),
    ("task-state", m_task_state),
    ("value-compas-point", m_value_compas_point),
    ("value-dtype-unknown", m_value_dtype_unknown),
    ("extra-key-dtype", m_extra_key_dtype),
    ("json-truncated", m_json_truncated),
    ("json-bom", m_json_bom),
    ("json-not-utf8", m_json_not_utf8),
    ("json-not-utf8-anywhere", m_json_not_utf8_anywhere),
    ("json-utf16", m_json_utf16),
    ("json-deep", m_json_deep),
    ("json-deep-2", m_json_deep),
    ("json-deep-3", m_json_deep),
    ("json-lone-surrogate", m_json_lone_surrogate),
    ("json-nan", m_json_nan),
    ("json-duplicate-key", m_json_duplicate_key),
    ("top-level-not-object", m_top_level_not_object),
]

# Mutations that keep the blueprint loadable by the reference, used under compas-envelope.
VALID_FOR_ENVELOPE = ["nested-scopes", "single-task-scope", "condition-reads-param", "condition-bound-names",
                      "deprecated-io-type", "dependency-type-SF", "dependency-type-SS", "cycle", "duplicate-task-id",
                      "extra-key-task", "get-from-unknown", "condition-unknown-name", "version-v1", "scope-start-empty",
                      "while-condition-reads-param", "condition-builtins"]

# Combinable: mutate the dict in place (no Raw / replacement results).
COMBINABLE = ["dangling-dependency", "two-starts", "two-ends", "orphan-task", "scope-end-missing-task",
              "scope-double-close", "interlaced-scopes", "nested-scopes", "bad-condition-syntax",
              "condition-unknown-name", "condition-reads-param", "while-condition-reads-param", "extra-key-top",
              "extra-key-task", "extra-key-io", "extra-key-dependency", "deprecated-io-type", "dependency-type-unknown",
              "dependency-type-SF", "cycle", "duplicate-task-id", "version-2.0", "version-v1", "missing-name",
              "description-number", "scope-retries-negative", "get-from-unknown", "condition-builtins",
              "condition-as-param", "task-state", "value-compas-point"]

# ---------------------------------------------------------------------------------------------
# COMPAS envelopes


def reseed_guids(value, rng):
    if isinstance(value, dict):
        return {k: (str(uuid.UUID(int=rng.getrandbits(128), version=4)) if k == "guid" else reseed_guids(v, rng)) for k, v in value.items()}
    if isinstance(value, list):
        return [reseed_guids(v, rng) for v in value]
    return value


def to_envelope(bp, rng, minimal=False):
    try:
        from antikythera.io import BlueprintJsonSerializer
        from compas.data import json_dumps
    except ImportError as exc:  # pragma: no cover
        sys.exit(f"mutate.py: the compas-envelope kinds need the reference venv's python ({exc}); see setup_reference.sh")
    try:
        blueprint = BlueprintJsonSerializer.BlueprintSerializer.from_dict(copy.deepcopy(bp))
    except Exception as exc:
        raise Skip(f"reference cannot load: {exc}")
    env = json.loads(json_dumps(blueprint, minimal=minimal))
    return env if minimal else reseed_guids(env, rng)


def env_tasks(env):
    return [t["data"] for t in env["data"]["tasks"]]


def e_plain(rng, bp):
    return to_envelope(bp, rng)


def e_minimal(rng, bp):
    return to_envelope(bp, rng, minimal=True)


def e_version(rng, bp):
    env = to_envelope(bp, rng)
    env["data"]["version"] = pick(rng, ["2.0", "abc", None, 7])
    return env


def e_dangling(rng, bp):
    env = to_envelope(bp, rng)
    t = pick(rng, [t for t in env_tasks(env) if t["type"] not in ("system.start",)])
    t["depends_on"].append({"dtype": "antikythera.models/Dependency", "data": {"id": "ghost_env", "type": "FS"}})
    return env


def e_extra_key_task(rng, bp):
    env = to_envelope(bp, rng)
    pick(rng, env_tasks(env))["x-orrery"] = {"note": 1}
    return env


def e_dep_type_unknown(rng, bp):
    env = to_envelope(bp, rng)
    deps = [d["data"] for t in env_tasks(env) for d in t["depends_on"]]
    pick(rng, deps)["type"] = pick(rng, ["XX", "fs", 3])
    return env


def e_missing_start(rng, bp):
    env = to_envelope(bp, rng)
    env["data"]["tasks"] = [t for t in env["data"]["tasks"] if t["data"]["type"] != "system.start"]
    return env


def e_extra_key_io(rng, bp):
    env = to_envelope(bp, rng)
    items = [io["data"] for t in env_tasks(env) for k in ("inputs", "outputs", "params") for io in t[k]]
    pick(rng, items)["unit"] = "mm"
    return env


def e_unwrapped_tasks(rng, bp):
    """Envelope outside, plain task dicts inside: Blueprint(**data) gets dicts, not Tasks."""
    env = to_envelope(bp, rng)
    env["data"]["tasks"] = [t["data"] for t in env["data"]["tasks"]]
    return env


def e_condition_problem(rng, bp):
    t = pick_middle(rng, bp, lambda t: not t.get("condition"))
    t["condition"] = pick(rng, ["ghost_in_envelope", "a = 1"])
    return to_envelope(bp, rng)


def e_scope_start_string(rng, bp):
    env = to_envelope(bp, rng)
    t = pick(rng, [t for t in env_tasks(env) if t["type"] not in ("system.start", "system.end")
                   and t["scope_start"] is None and t["scope_end"] is None])
    t["scope_start"] = pick(rng, ["loop", ["a"]])
    t["scope_end"] = t["id"]
    return env


def e_empty_tasks(rng, bp):
    env = to_envelope(bp, rng)
    env["data"]["tasks"] = []
    env["data"]["scopes"] = []
    return env


def envelopes_in(value, path=()):
    """Every COMPAS object (a dict with a dtype) in value, with its path of keys and indices."""
    found = []
    if isinstance(value, dict):
        if "dtype" in value:
            found.append((path, value))
        for k, v in value.items():
            found.extend(envelopes_in(v, path + (k,)))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found.extend(envelopes_in(v, path + (i,)))
    return found


GUID = "6f1c2a9e-3b4d-4e5f-8a6b-7c8d9e0f1a2b"
ENVELOPE_FIELD_VALUES = {
    "guid": [None, "", "not-a-guid", 7, 0, False, [GUID], {"guid": GUID}, GUID.upper(), GUID.replace("-", ""),
             "{" + GUID + "}", "urn:uuid:" + GUID, GUID[:-1], GUID + "0", "zz" + GUID[2:], " " + GUID.replace("-", "")[2:] + " ",
             "+" + GUID.replace("-", "")[1:], "0x" + GUID.replace("-", "")[2:], GUID.replace("-", "")[:30] + "\uff11\uff12",
             GUID.replace("-", "")[:30] + "__", "1_" + GUID.replace("-", "")[2:]],
    "inheritance": [None, [], "antikythera.models/Task", [5], ["nonexistent_mod/X"], ["a/b/c"]],
}
DTYPE_ALIASES = {
    "Blueprint": ["antikythera.models.blueprints/Blueprint", "antikythera.io/Blueprint", "antikythera_orchestrator.api/Blueprint"],
    "Task": ["antikythera.models.blueprints/Task", "antikythera.io/Task", "antikythera_orchestrator.scopes/Task"],
    "Dependency": ["antikythera.models.blueprints/Dependency", "antikythera.io/Dependency"],
    "TaskInput": ["antikythera.models.blueprints/TaskInput", "antikythera.models.conversions/TaskInput"],
    "TaskOutput": ["antikythera.models.blueprints/TaskOutput", "antikythera.io/TaskOutput"],
    "TaskParam": ["antikythera.models.blueprints/TaskParam", "antikythera.io/TaskParam"],
}
BAD_DTYPES = ["antikythera.models/Nope", "nonexistent_mod_xyz/Task", "Task", "antikythera.models/Task/extra", 5, None,
              "compas.geometry/Point", "antikythera.models.blueprints/Nope"]
# A task id as the server compares ids (Python values), with a value Python finds equal to it.
ID_VALUES = [(1, [1, 1.0, True, "1"]), (0, [0, False, 0.0, "0"]), (1.5, [1.5, "1.5"]), (None, [None, "None", "null"]),
             (True, [1, True, "True"]), (10**16, [1e16, 10**16 + 1]), (["a"], [["a"]]), ({"a": 1}, [{"a": 1}])]
SCOPE_END_VALUES = [False, 0, "", [], None, 7, 7.0, "7", ["x"], {"a": 1}, True]
# Envelopes the server reads in another's place (it reads only the attributes it needs).
STAND_INS = {
    "Dependency": ["antikythera.models/Task", "antikythera.models/Scope", "antikythera.models/Blueprint",
                   "antikythera.models/TaskInput", "compas.geometry/Point"],
    "TaskInput": ["antikythera.models/TaskOutput", "antikythera.models/TaskParam", "antikythera.models/TaskIO",
                  "antikythera.models/Task", "compas.geometry/Point"],
    "TaskParam": ["antikythera.models/TaskInput", "antikythera.models/TaskOutput", "compas.geometry/Point"],
    "TaskOutput": ["antikythera.models/TaskInput", "antikythera.models/TaskIO"],
    "Task": ["antikythera.models/Scope", "antikythera.models/Dependency", "antikythera.models/Blueprint"],
}
# COMPAS values of classes the server has or not, built from fitting data or not.
COMPAS_VALUES = [
    {"dtype": "compas.geometry/Frame", "data": {"point": [0, 0, 0], "xaxis": [1, 0, 0], "yaxis": [0, 1, 0]}},
    {"dtype": "compas.geometry.point/Point", "data": [1, 2, 3]},
    {"dtype": "compas.colors/Color", "data": {"red": 1, "green": 0, "blue": 0}},
    {"dtype": "compas.colors/Color", "data": {"red": 1, "green": 0}},
    {"dtype": "compas.colors/Color", "data": {"red": 1, "green": 0, "blue": 0, "hue": 1}},
    {"dtype": "antikythera.models.tasks/TaskError", "data": {"code": "TASK_FAILED", "message": "m"}},
    {"dtype": "antikythera.models/TaskAllocationMessage", "data": {}},
    {"dtype": "compas/Nope", "data": {}},
    {"dtype": "compas_nonexistent/Thing", "data": {}},
    {"dtype": "compas/geometry", "data": {}},
    {"dtype": "compas.geometry/distance_point_point", "data": {}},
    {"dtype": "compas.data/Data", "data": {}},
    {"dtype": "compas.geometry/Geometry", "data": {}},
    {"dtype": "antikythera.models.tasks/Point", "data": [1, 2, 3]},
]
TASK_STATES = ["PENDING", "READY", "RUNNING", "SUCCEEDED", "FAILED", "SKIPPED", "UNSPECIFIED", "SKIP_REQUESTED",
               "pending", "BOGUS", "", None, 3, ["PENDING"]]


def e_field(rng, bp):
    """One field of one envelope of the blueprint changed: its guid, its dtype (an alias of the
    class, a foreign or broken one), its inheritance, its data's presence; a task's state; the
    blueprint's id; an IO item's names (its envelope's `name`, an empty `data.name`); a list the
    server iterates made of plain dicts or not a list; a task id of another Python type (and the
    references to it); a scope_end; an envelope of another class in an item's place; null for a
    string; a COMPAS value of a class the server has or not."""
    env = to_envelope(bp, rng)
    path, target = pick(rng, envelopes_in(env))
    field = pick(rng, ["guid", "guid", "guid", "dtype", "dtype", "inheritance", "data", "state", "id", "scope", "scope",
                       "io-name", "io-name", "list", "list", "task-id", "task-id", "scope-end", "stand-in", "stand-in",
                       "null", "compas-value"])
    cls = target["dtype"].split("/")[-1]
    if field == "task-id":
        # A task id that is not a string: its dependants refer to it by a value Python finds
        # equal, or not; an id that cannot be hashed.
        tasks = env_tasks(env)
        task = pick(rng, tasks)
        new, equals = pick(rng, ID_VALUES)
        old, task["id"] = task["id"], new
        for other in tasks:
            for dep in other.get("depends_on") or []:
                if dep["data"].get("id") == old:
                    dep["data"]["id"] = pick(rng, equals)
            if other.get("scope_end") == old:
                other["scope_end"] = pick(rng, equals)
        return env
    if field == "scope-end":
        task = pick(rng, env_tasks(env))
        task["scope_end"] = pick(rng, SCOPE_END_VALUES)
        return env
    if field == "stand-in":
        # An envelope of another class where the server reads only some attributes of it.
        items = [t for _, t in envelopes_in(env) if t.get("dtype", "").split("/")[-1] in STAND_INS
                 and isinstance(t.get("data"), dict)]
        item = pick(rng, items)
        dtype = pick(rng, STAND_INS[item["dtype"].split("/")[-1]])
        old = item["data"]
        ident = old.get("id", old.get("name", "x"))
        item["dtype"] = dtype
        item.pop("inheritance", None)
        item["data"] = {
            "antikythera.models/Task": {"id": ident, "type": "system.sleep"},
            "antikythera.models/Scope": {"id": ident, "label": "x"},
            "antikythera.models/Blueprint": {"id": ident, "name": "x"},
            "antikythera.models/Dependency": {"id": ident},
            "compas.geometry/Point": [1, 2, 3],
        }.get(dtype, {"name": ident, "value": old.get("value")})
        return env
    if field == "null":
        # null (the Python value None) where a string goes.
        task = pick(rng, env_tasks(env))
        where = pick(rng, [env["data"], env["data"], task, task])
        key = pick(rng, ["name", "version", "description", "id"] if where is env["data"] else ["type", "description", "condition"])
        where[key] = None
        return env
    if field == "compas-value":
        task = pick(rng, env_tasks(env))
        value = copy.deepcopy(pick(rng, COMPAS_VALUES))
        task.setdefault("params", []).append({"dtype": "antikythera.models/TaskParam",
                                              "data": {"name": "x_compas_value", "value": value}})
        return env
    if field == "list":
        # A list the server iterates (outputs, depends_on, params, inputs) made of plain dicts,
        # or not a list, under a condition of one kind or another.
        task = pick(rng, env_tasks(env))
        key = pick(rng, ["outputs", "depends_on", "params", "inputs"])
        items = task.get(key) or []
        task[key] = pick(rng, [[i["data"] if isinstance(i, dict) and "data" in i else i for i in items],
                               5, "abc", {}, 0, {"a": 1}, items + [{"name": "plain"}]])
        if rng.random() < 0.5 and task.get("type") not in ("system.start", "system.end"):
            task["condition"] = pick(rng, ["True", 1, None, False, ""])
        return env
    if field == "io-name":
        # An IO envelope's own name (set on the built item: its name) or an empty data name (the
        # item is then called by its class name); a condition may read either.
        items = [t for _, t in envelopes_in(env) if t.get("dtype", "").split("/")[-1] in ("TaskInput", "TaskOutput", "TaskParam")
                 and isinstance(t.get("data"), dict)]
        if not items:
            raise Skip("no IO envelope")
        item = pick(rng, items)
        old = item["data"].get("name")
        change = rng.randrange(3)
        if change == 0:
            item["name"] = pick(rng, ["renamed_io", old, None])
        else:
            item["data"]["name"] = pick(rng, ["", None])
            item.pop("name", None) if change == 1 else item.update(name=pick(rng, ["renamed_io", old]))
        reader = pick(rng, env_tasks(env))
        if rng.random() < 0.5 and reader.get("type") not in ("system.start", "system.end"):
            reader["condition"] = pick(rng, ["renamed_io is None", f"{item['dtype'].split('/')[-1]} is None",
                                             f"{old} is None" if isinstance(old, str) and old.isidentifier() else "True"])
        return env
    if field == "guid":
        if rng.random() < 0.15:
            target.pop("guid", None)
        else:
            target["guid"] = pick(rng, ENVELOPE_FIELD_VALUES["guid"])
    elif field == "dtype":
        target["dtype"] = pick(rng, DTYPE_ALIASES.get(cls, []) + BAD_DTYPES)
    elif field == "inheritance":
        target["dtype"] = pick(rng, [target["dtype"], "nonexistent_mod_xyz/" + cls])
        target["inheritance"] = pick(rng, ENVELOPE_FIELD_VALUES["inheritance"] + [["antikythera.models/" + cls]])
    elif field == "data":
        if rng.random() < 0.5:
            del target["data"]
        else:
            target["data"] = pick(rng, [None, [], "x", 1])
    elif field == "scope":
        openers = [t for t in env_tasks(env) if t.get("scope_start") is not None]
        if not openers:
            raise Skip("no scope")
        start = pick(rng, openers)
        policy = start["scope_start"]
        change = rng.randrange(4) if isinstance(policy, dict) else 0
        if change == 0:
            start["scope_start"] = pick(rng, [False, "", [], 0, {}, "loop", "retry_policy", ["a"], 5, True,
                                             {"dtype": "antikythera.models/Scope", "data": {"id": "s", "label": "s"}}])
        elif change == 1:
            policy[pick(rng, ["foo", "x-note", "label"])] = pick(rng, [1, "x", None])
        elif change == 2:
            policy["name"] = pick(rng, [5, None, "", ["n"], {"dtype": "nonexistent_mod_xyz/X", "data": 1}])
        else:
            key = pick(rng, ["retry_policy", "while_policy"])
            if key == "retry_policy":
                policy[key] = pick(rng, [{}, "x", None, [], {"retries": -1}, {"retries": "3"}, {"retries": 1.5},
                                         {"retries": 2, "backoff": "fast"}, {"retries": 2, "backoff": {"constant_ms": -5}},
                                         {"retries": 2, "foo": 1}])
            else:
                policy[key] = pick(rng, [{}, "x", None, [], 0, {"condition": True}, {"condition": 5},
                                         {"condition": "ghost_while_name"}, {"condition": "x ==", "max_iterations": 2},
                                         {"condition": "True", "max_iterations": -3}, {"condition": "True", "max_iterations": "10"},
                                         {"condition": "True", "foo": 1}])
    elif field == "state":
        task = pick(rng, env_tasks(env))
        task["state"] = pick(rng, TASK_STATES)
    else:
        env["data"]["id"] = pick(rng, [5, True, None, ["a"], {"a": 1}, 1.5, "", "renamed-id"])
    return env


ENVELOPE_KINDS = [
    ("compas-envelope", e_plain),
    ("compas-envelope-minimal", e_minimal),
    ("compas-envelope-version", e_version),
    ("compas-envelope-dangling-dependency", e_dangling),
    ("compas-envelope-extra-key-task", e_extra_key_task),
    ("compas-envelope-extra-key-io", e_extra_key_io),
    ("compas-envelope-dependency-type-unknown", e_dep_type_unknown),
    ("compas-envelope-missing-start", e_missing_start),
    ("compas-envelope-unwrapped-tasks", e_unwrapped_tasks),
    ("compas-envelope-condition-problem", e_condition_problem),
    ("compas-envelope-scope-start-not-object", e_scope_start_string),
    ("compas-envelope-empty-tasks", e_empty_tasks),
] + [(f"compas-envelope-field-{n}", e_field) for n in range(1, 61)]

# ---------------------------------------------------------------------------------------------


def default_corpus() -> Path:
    env = os.environ.get("ORRERY_CORPUS")
    if env:
        return Path(env)
    return Path(__file__).resolve().parent / "corpus"


def load_corpus(corpus: Path):
    bases = []
    for f in sorted(corpus.glob("*.json")):
        if f.name.endswith(".schema.json"):
            continue
        with open(f, encoding="utf-8") as fh:
            bases.append((f.name, json.load(fh)))
    if not bases:
        sys.exit(f"mutate.py: no blueprint files in {corpus}")
    return bases


def attempt(rng, bases, funcs, pre=None, tries=40):
    """Apply funcs in order to a copy of some base; returns (base name, result)."""
    order = list(range(len(bases)))
    rng.shuffle(order)
    for i in order[:tries]:
        name, base = bases[i]
        bp = copy.deepcopy(base)
        try:
            if pre is not None:
                r = pre(rng, bp)
                bp = bp if r is None else r
            for func in funcs:
                r = func(rng, bp)
                bp = bp if r is None else r
        except Skip:
            continue
        return name, bp
    return None


def generate(corpus: Path, out: Path, seed: int, count: int):
    rng = random.Random(seed)
    bases = load_corpus(corpus)
    single = dict(SINGLE_KINDS)
    kinds = [(k, [f]) for k, f in SINGLE_KINDS] + [(k, [f]) for k, f in ENVELOPE_KINDS]
    n_combo = max(1, count // 20) if count >= 10 else 0
    n_single = count - n_combo

    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("[0-9][0-9][0-9][0-9]-*.json"):
        old.unlink()
    manifest = []
    made = 0

    def write(kind, base_name, result):
        nonlocal made
        path = out / f"{made:04d}-{kind}.json"
        if isinstance(result, Raw):
            payload = result.payload
            path.write_bytes(payload.encode("utf-8", "surrogatepass") if isinstance(payload, str) else payload)
        else:
            path.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        manifest.append(f"{path.name}\t{kind}\t{base_name}")
        made += 1

    i = 0
    misses = 0
    while made < n_single:
        kind, funcs = kinds[i % len(kinds)]
        i += 1
        pre = None
        if kind.startswith("compas-envelope") and kind not in ("compas-envelope-condition-problem",) and rng.random() < 0.4:
            pre_kind = pick(rng, VALID_FOR_ENVELOPE)
            pre = single[pre_kind]
        got = attempt(rng, bases, funcs, pre)
        if got is None:
            misses += 1
            if misses > 10 * len(kinds):
                sys.exit(f"mutate.py: cannot apply mutations (last: {kind})")
            continue
        write(kind, got[0], got[1])

    while made < count:
        picked = rng.sample(COMBINABLE, 2 + rng.randrange(2))
        got = attempt(rng, bases, [single[k] for k in picked])
        if got is None:
            continue
        write("combo-" + "+".join(picked), got[0], got[1])

    (out / "_manifest.tsv").write_text("file\tkind\tbase\n" + "\n".join(manifest) + "\n", encoding="utf-8")
    return made


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    ap.add_argument("corpus_pos", nargs="?", help="corpus directory (same as --corpus)")
    ap.add_argument("--corpus", help="directory of antikythera blueprint files")
    ap.add_argument("--seed", type=int, default=20260804)
    ap.add_argument("--count", type=int, default=400)
    ap.add_argument("--out", required=True, help="output directory (NNNN-*.json files in it are replaced)")
    args = ap.parse_args(argv)
    corpus = Path(args.corpus or args.corpus_pos) if (args.corpus or args.corpus_pos) else default_corpus()
    made = generate(corpus, Path(args.out), args.seed, args.count)
    print(f"mutate.py: wrote {made} mutants to {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
