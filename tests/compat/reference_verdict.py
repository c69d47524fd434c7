#!/usr/bin/env python3
"""What the reference antikythera server decides about blueprint files, without a server.

Run with the reference venv's python (see setup_reference.sh):

    python reference_verdict.py FILE_OR_DIR...

A directory stands for its ``*.json`` files (sorted, ``*.schema.json`` left out). For each file
one JSON line is printed on stdout:

    {"file", "server_accepts", "stage", "error", "problems", "conditions"}

``server_accepts`` reproduces ``POST /blueprints/upload`` of antikythera 0.5.1
(antikythera_orchestrator/api.py ``upload_blueprint``): the upload body is decoded as UTF-8,
written to a temporary ``.json`` file, loaded with ``BlueprintJsonSerializer.from_file`` (compas
``json_load``; a COMPAS ``Blueprint`` envelope is returned as is, without the JSON schema and
without the version check; otherwise schema, ``BlueprintSerializer.from_dict``, which builds the
``Blueprint`` and so runs ``validate()``, and ``validate()`` again), then ``check_dataflow()``
must report no problem. The real reference functions are called; the steps are only
reconstructed to name the stage that refused:

    "json"      the body is not UTF-8 or not JSON (or the file name does not end in .json)
    "schema"    blueprint.v1.schema.json refused it
    "parse"     loading into the model failed (missing keys, unknown keyword arguments on IO
                items/dependencies, bad version, unknown dependency type, COMPAS decoding ...)
    "validate"  Blueprint.validate() raised
    "dataflow"  check_dataflow() reported problems (or raised: the server answers 500 then)
    "store"     storing or answering it failed (an id that is not a string, a value with no data of
                its own to write: HTTP 500)

``conditions`` lists, per task, the expressions check_dataflow examines (the reference's own
``Blueprint._condition_expressions``), with the names ``_free_names`` finds in each (sorted;
null and ``syntax_error: true`` when it does not parse). It is computed whenever the file is
JSON, even when the blueprint itself is refused, from the tasks as the reference builds them
(or, for a task the reference cannot build, from the raw task dict read the same way).
"""

from __future__ import annotations

import copy
import json
import logging
import os
import sys
import tempfile
import traceback
from pathlib import Path

logging.disable(logging.CRITICAL)  # from_file logs dataflow warnings; keep stdout/stderr clean

import jsonschema  # noqa: E402
from compas.data import json_dumps as compas_json_dumps  # noqa: E402
from compas.data import json_loads  # noqa: E402

from antikythera.io import BlueprintJsonSerializer  # noqa: E402
from antikythera.models.blueprints import Blueprint  # noqa: E402
from antikythera.models.blueprints import Task  # noqa: E402
from antikythera.models.blueprints import _free_names  # noqa: E402

BLUEPRINTS_PY = os.path.normcase(os.path.abspath(sys.modules[Blueprint.__module__].__file__))
VALIDATE_FUNCS = {"validate", "_validate_scopes", "_check_scopes_not_interlaced"}


def _clean(value):
    """Strings with lone surrogates (possible through JSON escapes) cannot be written as
    strict JSON; replace them so the consumer can parse every line."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
            return value
        except UnicodeEncodeError:
            return value.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    if isinstance(value, list):
        return [_clean(v) for v in value]
    if isinstance(value, dict):
        return {_clean(k): _clean(v) for k, v in value.items()}
    return value


def _describe(exc: BaseException) -> str:
    if isinstance(exc, jsonschema.ValidationError):
        where = "/".join(str(p) for p in exc.absolute_path)
        return f"ValidationError at '/{where}': {exc.message}"
    return f"{type(exc).__name__}: {exc}"


def _stage_of(exc: BaseException) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return "json"
    if isinstance(exc, jsonschema.ValidationError):
        return "schema"
    for frame, _ in traceback.walk_tb(exc.__traceback__):
        code = frame.f_code
        if code.co_name in VALIDATE_FUNCS and os.path.normcase(os.path.abspath(code.co_filename)) == BLUEPRINTS_PY:
            return "validate"
    return "parse"


# ---------------------------------------------------------------------------------------------
# conditions


class _IO:
    def __init__(self, raw):
        self.name = raw.get("name")
        self.value = raw.get("value")


class _ShimTask:
    """Just what Blueprint._condition_expressions reads, for a task the reference cannot build."""

    def __init__(self, raw):
        self.condition = raw.get("condition")
        self.params = [_IO(p) for p in _as_list(raw.get("params")) if isinstance(p, dict)]
        self.inputs = [_IO(p) for p in _as_list(raw.get("inputs")) if isinstance(p, dict)]
        self.scope_start = raw.get("scope_start")

    def get_param(self, name):
        for p in self.params:
            if p.name == name:
                return p
        return None


def _as_list(value):
    return value if isinstance(value, list) else []


def _is_envelope(value) -> bool:
    return isinstance(value, dict) and "dtype" in value and "data" in value


def _unwrap(value):
    """Strip COMPAS envelopes ({dtype, data, guid}) recursively."""
    if _is_envelope(value):
        return _unwrap(value["data"])
    if isinstance(value, list):
        return [_unwrap(v) for v in value]
    if isinstance(value, dict):
        return {k: _unwrap(v) for k, v in value.items()}
    return value


def _build_task(raw_task, enveloped: bool):
    if enveloped:
        try:
            task = json_loads(json.dumps(raw_task))
            if isinstance(task, Task):
                return task
        except Exception:
            pass
        raw = _unwrap(raw_task)
    else:
        raw = raw_task
        try:
            return BlueprintJsonSerializer.TaskSerializer.from_dict(copy.deepcopy(raw))
        except Exception:
            pass
    return _ShimTask(raw) if isinstance(raw, dict) else None


def conditions_of(data) -> list:
    enveloped = _is_envelope(data)
    body = data["data"] if enveloped else data
    if not isinstance(body, dict):
        return []
    result = []
    for raw_task in _as_list(body.get("tasks")):
        task = _build_task(raw_task, enveloped)
        if task is None:
            continue
        raw_id = _unwrap(raw_task).get("id") if isinstance(_unwrap(raw_task), dict) else None
        task_id = raw_id if isinstance(raw_id, str) or raw_id is None else json.dumps(raw_id)
        try:
            # self is not used by _condition_expressions; `produced` only feeds `available`.
            expressions = Blueprint._condition_expressions(None, task, set())
        except Exception:
            continue  # e.g. scope_start that is not an object: the reference would crash too
        for description, expression, _available in expressions:
            entry = {"task_id": task_id, "kind": description, "expression": expression, "names": None, "syntax_error": False}
            try:
                entry["names"] = sorted(_free_names(expression))
            except SyntaxError:
                entry["syntax_error"] = True
            except Exception as exc:  # not a SyntaxError: check_dataflow itself would raise
                entry["internal_error"] = _describe(exc)
            result.append(entry)
    return result


# ---------------------------------------------------------------------------------------------
# the upload


def verdict(path: Path, tmpdir: str) -> dict:
    out = {"file": str(path), "server_accepts": False, "stage": None, "error": None, "problems": [], "conditions": []}

    def refuse(stage, error):
        out["stage"] = stage
        out["error"] = error
        return out

    if not path.name.endswith(".json"):
        return refuse("json", "Only JSON files are accepted.")
    try:
        text = path.read_bytes().decode()  # the server: `content.decode()`, strict UTF-8
    except UnicodeDecodeError as exc:
        return refuse("json", _describe(exc))

    try:
        plain = json.loads(text)
    except (ValueError, RecursionError):
        plain = None  # from_file below fails the same way and names the error
    else:
        try:
            out["conditions"] = conditions_of(plain)
        except Exception:
            out["conditions"] = []

    # Exactly what the server does: write the decoded text to a temporary .json, from_file it.
    tmp_path = os.path.join(tmpdir, "upload.json")
    with open(tmp_path, "w") as fh:
        fh.write(text)
    try:
        blueprint = BlueprintJsonSerializer.from_file(tmp_path)
    except Exception as exc:
        return refuse(_stage_of(exc), _describe(exc))
    finally:
        os.unlink(tmp_path)

    try:
        problems = blueprint.check_dataflow()
    except Exception as exc:  # outside the server's try: HTTP 500
        return refuse("dataflow", "internal server error: " + _describe(exc))
    if problems:
        out["problems"] = list(problems)
        return refuse("dataflow", f"Blueprint '{blueprint.id}' has {len(problems)} dataflow problem(s).")

    # After the check the server stores the blueprint under its id and answers it in a model
    # whose `blueprint_id` is a `str`: any other id fails there (HTTP 500), a refusal all the same.
    if not isinstance(blueprint.id, str):
        return refuse("store", f"internal server error: the blueprint id {blueprint.id!r} is not a string")
    # The store writes the blueprint as COMPAS JSON: a value whose class has no data of its own
    # (compas.geometry/Geometry) fails there (HTTP 500). How deep a file may nest is the parse
    # stage's to judge (docs/format.md §1.1: this harness calls the loader from a shallower stack
    # than the server does), so the recursion limit here leaves room for the levels the store adds.
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(limit + 100)
    try:
        compas_json_dumps(blueprint)
    except Exception as exc:
        return refuse("store", "internal server error: " + _describe(exc))
    finally:
        sys.setrecursionlimit(limit)

    out["server_accepts"] = True
    return out


def expand(args) -> list:
    files = []
    for arg in args:
        p = Path(arg)
        if p.is_dir():
            files.extend(sorted(f for f in p.glob("*.json") if f.is_file() and not f.name.endswith(".schema.json")))
        else:
            files.append(p)
    return files


def main(argv) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    files = expand(argv)
    with tempfile.TemporaryDirectory(prefix="orrery-refverdict-") as tmpdir:
        for f in files:
            try:
                v = verdict(f, tmpdir)
            except Exception as exc:  # never lose a line: the consumer matches lines to files
                v = {"file": str(f), "server_accepts": False, "stage": None, "error": "verdict script crashed: " + _describe(exc), "problems": [], "conditions": []}
            sys.stdout.write(json.dumps(_clean(v), ensure_ascii=False) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
