#!/usr/bin/env python3
"""What the reference server does with a condition, one JSON line in, one JSON line out.

Input lines: {"expr": str, "namespace": {name: json}}.
Output lines: {"ok": bool, "value": bool|null, "error": str|null, "names": [str]|null,
               "syntax_error": bool}

- names/syntax_error: the reference's `_free_names` (antikythera.models.blueprints), which
  parses with ast.parse(expr, mode="eval"). A SyntaxError there means the server refuses the
  blueprint; any other exception from it (RecursionError on absurd nesting) is reported as
  syntax_error too, with `error` naming it.
- ok/value/error: `asteval.Interpreter(usersyms=namespace)(expr)` then `bool(result)`, exactly as
  antikythera_orchestrator.conditionals.safe_eval_condition does; `error` is the asteval error
  class name (or "Timeout" / "MemoryError" when the evaluation is cut off here).

Run with the reference venv's python (tests/compat/setup_reference.sh).
"""
import io
import json
import resource
import signal
import sys

from asteval import Interpreter
from antikythera.models.blueprints import _free_names

SECONDS_PER_EXPRESSION = 5
MEMORY_BYTES = 3 << 30


class Timeout(Exception):
    pass


def on_alarm(signum, frame):
    raise Timeout()


def names_of(expr):
    try:
        return sorted(_free_names(expr)), False, None
    except SyntaxError:
        return None, True, None
    except BaseException as exc:  # RecursionError, MemoryError: the server would fail too
        return None, True, type(exc).__name__


def evaluate(expr, namespace):
    signal.alarm(SECONDS_PER_EXPRESSION)
    try:
        interpreter = Interpreter(usersyms=namespace, err_writer=io.StringIO(), writer=io.StringIO())
        result = interpreter(expr)
        if len(interpreter.error) > 0:
            return False, None, interpreter.error[-1].get_error()[0]
        return True, bool(result), None
    except Timeout:
        return False, None, "Timeout"
    except MemoryError:
        return False, None, "MemoryError"
    except BaseException as exc:
        return False, None, type(exc).__name__
    finally:
        signal.alarm(0)


def main():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))
    signal.signal(signal.SIGALRM, on_alarm)
    for line in sys.stdin:
        if not line.strip():
            continue
        case = json.loads(line)
        names, syntax_error, names_error = names_of(case["expr"])
        ok, value, error = evaluate(case["expr"], case.get("namespace") or {})
        print(json.dumps({
            "ok": ok,
            "value": value,
            "error": names_error or error,
            "names": names,
            "syntax_error": syntax_error,
        }), flush=True)


if __name__ == "__main__":
    main()
