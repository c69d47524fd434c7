"""Timings and verdicts of the reference implementation (antikythera-sdk) for scripts/bench.sh.

    python ref_bench.py check FILE [INNER...]
        BlueprintJsonSerializer.from_file (schema check + validate()) and check_dataflow();
        prints a JSON verdict, exits 1 on any exception or dataflow problem.

    python ref_bench.py time FILE [--json-runs N] [--ref-runs N] [--ref-budget SECONDS]
        Median (and min) of N runs of json.load of FILE, timed inside Python; then the
        reference's Blueprint construction (json.load -> BlueprintJsonSerializer.BlueprintSerializer.from_dict, whose
        Blueprint.__init__ runs validate() and builds the scopes) + check_dataflow(). After the
        first reference run, stops early when the runs so far took more than --ref-budget
        seconds in total. Prints one JSON object.
"""

import json
import statistics
import sys
import time


def check(path, inner):
    from antikythera.io import BlueprintJsonSerializer

    out = {"file": path, "ok": True, "problems": []}
    for p in [path] + inner:
        try:
            bp = BlueprintJsonSerializer.from_file(p)
            problems = bp.check_dataflow()
        except Exception as e:  # noqa: BLE001 - any failure is the verdict
            out["ok"] = False
            out["problems"].append(f"{p}: {type(e).__name__}: {e}")
            continue
        if p == path:
            out["tasks"] = len(bp.tasks)
            out["scopes"] = len(bp.scopes)
        if problems:
            out["ok"] = False
            out["problems"].extend(f"{p}: {x}" for x in problems[:20])
    print(json.dumps(out))
    return 0 if out["ok"] else 1


def reference_once(path):
    from antikythera.io import BlueprintJsonSerializer

    t = time.perf_counter()
    with open(path, "r") as f:
        data = json.load(f)
    bp = BlueprintJsonSerializer.BlueprintSerializer.from_dict(data)
    problems = bp.check_dataflow()
    elapsed = time.perf_counter() - t
    if problems:
        raise SystemExit(f"reference check_dataflow found {len(problems)} problems, e.g. {problems[0]}")
    return elapsed, len(bp.tasks)


def timings(path, json_runs, ref_runs, ref_budget):
    # json.load only: what Python needs merely to parse the file.
    samples = []
    with open(path, "r") as f:  # warm the page cache
        json.load(f)
    for _ in range(json_runs):
        t = time.perf_counter()
        with open(path, "r") as f:
            json.load(f)
        samples.append((time.perf_counter() - t) * 1e3)

    import antikythera.io  # noqa: F401 - import outside the timed region

    ref = []
    tasks = None
    for _ in range(ref_runs):
        elapsed, tasks = reference_once(path)
        ref.append(elapsed * 1e3)
        if sum(ref) / 1e3 > ref_budget:
            break
    print(
        json.dumps(
            {
                "file": path,
                "tasks": tasks,
                "json_load_median_ms": statistics.median(samples),
                "json_load_min_ms": min(samples),
                "json_load_runs": len(samples),
                "reference_median_ms": statistics.median(ref) if ref else None,
                "reference_min_ms": min(ref) if ref else None,
                "reference_runs": len(ref),
                "reference_runs_wanted": ref_runs,
            }
        )
    )
    return 0


def main(argv):
    if len(argv) >= 2 and argv[0] == "check":
        return check(argv[1], argv[2:])
    if len(argv) >= 2 and argv[0] == "time":
        path = argv[1]
        opts = {"--json-runs": 7, "--ref-runs": 3, "--ref-budget": 600.0}
        rest = argv[2:]
        for i in range(0, len(rest) - 1, 2):
            if rest[i] in opts:
                opts[rest[i]] = type(opts[rest[i]])(rest[i + 1])
        return timings(path, opts["--json-runs"], opts["--ref-runs"], opts["--ref-budget"])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
