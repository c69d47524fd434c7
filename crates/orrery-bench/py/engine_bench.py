"""The engine benchmark (issue 3): Orrery running 1,000 `shell.run` tasks of `true` against
ninja and make running the same DAG, in the same run. Driven by scripts/bench_engine.sh.

    python engine_bench.py OUT_DIR ORRERY_BIN [--tasks N] [--runs R] [--parallel P] [--shapes a,b]

Shapes (N tasks each, every task runs `true`):
  chain   t0 -> t1 -> ... -> t(N-1)
  fanout  one root -> N-2 middle tasks -> one join
  layers  layers of 10, each task depending on every task of the layer before

For each shape it writes OUT_DIR/<shape>/blueprint.json (system.start -> tasks -> system.end),
build.ninja and Makefile (each node runs `true` and touches its stamp file), then times the
median of R runs of each tool: Orrery with a fresh --db per run (under /usr/bin/time -f %M for
its peak RSS), `ninja -jP` and `make -jP` from clean stamps. After each Orrery run it checks the
store: the session completed and every task has a succeeded attempt. It also runs an empty
blueprint (start -> end) for the per-session memory baseline. Results: OUT_DIR/engine.json and
the table in OUT_DIR/engine.md (also printed).
"""

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

LAYER_WIDTH = 10


def edges(shape, n):
    """(names, deps): task names and, per task, the names it depends on."""
    names = [f"t{i:04d}" for i in range(n)]
    deps = {}
    if shape == "chain":
        for i, t in enumerate(names):
            deps[t] = [names[i - 1]] if i else []
    elif shape == "fanout":
        root, join, middle = names[0], names[-1], names[1:-1]
        deps[root] = []
        for t in middle:
            deps[t] = [root]
        deps[join] = list(middle)
    elif shape == "layers":
        for i, t in enumerate(names):
            layer = i // LAYER_WIDTH
            if layer == 0:
                deps[t] = []
            else:
                lo = (layer - 1) * LAYER_WIDTH
                deps[t] = names[lo : lo + LAYER_WIDTH]
    else:
        raise ValueError(shape)
    return names, deps


def blueprint(shape, names, deps):
    depended = {d for ds in deps.values() for d in ds}
    tasks = [{"id": "start", "type": "system.start"}]
    for t in names:
        on = deps[t] or ["start"]
        tasks.append(
            {
                "id": t,
                "type": "shell.run",
                "params": [{"name": "command", "value": "true"}],
                "depends_on": [{"id": d, "type": "FS"} for d in on],
            }
        )
    sinks = [t for t in names if t not in depended] or ["start"]
    tasks.append({"id": "end", "type": "system.end", "depends_on": [{"id": d, "type": "FS"} for d in sinks]})
    return {"id": f"engine_{shape}", "name": f"engine bench {shape}", "version": "1.0", "tasks": tasks}


def empty_blueprint():
    return {
        "id": "engine_empty",
        "name": "engine bench empty",
        "version": "1.0",
        "tasks": [
            {"id": "start", "type": "system.start"},
            {"id": "end", "type": "system.end", "depends_on": [{"id": "start", "type": "FS"}]},
        ],
    }


def ninja_file(names, deps):
    out = ["rule run", "  command = true && touch $out", "  description = $out", ""]
    for t in names:
        implicit = " ".join(f"s/{d}" for d in deps[t])
        out.append(f"build s/{t}: run" + (f" | {implicit}" if implicit else ""))
    out.append("default " + " ".join(f"s/{t}" for t in names))
    return "\n".join(out) + "\n"


def makefile(names, deps):
    out = [".PHONY: all", "all: " + " ".join(f"s/{t}" for t in names), ""]
    for t in names:
        out.append(f"s/{t}: " + " ".join(f"s/{d}" for d in deps[t]))
        out.append("\t@true && touch $@")
    return "\n".join(out) + "\n"


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def clean_stamps(d):
    shutil.rmtree(os.path.join(d, "s"), ignore_errors=True)
    for f in (".ninja_log", ".ninja_deps"):
        try:
            os.remove(os.path.join(d, f))
        except FileNotFoundError:
            pass
    os.mkdir(os.path.join(d, "s"))


def timed(cmd, cwd=None, stdout=subprocess.DEVNULL, env=None):
    # Each tool starts with nothing left to write back: the previous run's files and their
    # removal (a discard per file on this disk) would otherwise stall the next run's fsyncs.
    os.sync()
    t0 = time.perf_counter()
    p = subprocess.run(cmd, cwd=cwd, stdout=stdout, stderr=subprocess.PIPE, text=True, env=env)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {p.returncode}: {p.stderr[-2000:]}")
    return dt, p.stderr


def run_build_tool(tool, d, parallel, n):
    clean_stamps(d)
    cmd = ["ninja", "-j", str(parallel), "-f", "build.ninja"] if tool == "ninja" else ["make", "-j", str(parallel), "-f", "Makefile"]
    dt, _ = timed(cmd, cwd=d)
    made = len(os.listdir(os.path.join(d, "s")))
    if made != n:
        raise SystemExit(f"{tool} in {d} made {made} stamps, expected {n}")
    return dt


def run_orrery(bin_, bp, parallel, expect_tasks, env=None):
    """One run on a fresh store: (wall s, peak RSS KB, store facts); `env` is added to the
    environment."""
    tmp = tempfile.mkdtemp(prefix="orrery-engine-bench-")
    try:
        db = os.path.join(tmp, "orrery.db")
        rss_file = os.path.join(tmp, "rss")
        cmd = ["/usr/bin/time", "-f", "%M", "-o", rss_file, bin_, "run", "--db", db, "--max-parallel", str(parallel), bp]
        dt, _ = timed(cmd, env=None if env is None else {**os.environ, **env})
        with open(rss_file) as f:
            rss_kb = int(f.read().strip().splitlines()[-1])
        conn = sqlite3.connect(db)
        try:
            (state,) = conn.execute("SELECT state FROM sessions").fetchone()
            ok = conn.execute(
                "SELECT COUNT(DISTINCT node) FROM task_runs WHERE state = 'succeeded' AND agent = 'shell.run'"
            ).fetchone()[0]
            events = conn.execute("SELECT COUNT(*) FROM events").fetchone()[0]
        finally:
            conn.close()
        db_bytes = sum(os.path.getsize(os.path.join(tmp, f)) for f in os.listdir(tmp) if f.startswith("orrery.db"))
        if state != "completed" or ok != expect_tasks:
            raise SystemExit(f"orrery run of {bp}: session {state}, {ok} shell.run tasks succeeded (expected {expect_tasks})")
        return dt, rss_kb, {"events": events, "db_bytes": db_bytes}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("orrery")
    ap.add_argument("--tasks", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--parallel", type=int, default=2)
    ap.add_argument("--shapes", default="chain,fanout,layers")
    ap.add_argument("--before", help="an older build of orrery for the before column (default: this one, spawner off)")
    a = ap.parse_args()
    if a.before:
        before_bin, before_env, before_name = a.before, None, "orrery before"
        before_note = f"Before: the older build `{a.before}`, timed in the same run, interleaved (the two builds take turns at going first)."
    else:
        before_bin, before_env, before_name = a.orrery, {"ORRERY_SPAWNER": "off"}, "orrery forking"
        before_note = (
            "Before: the same binary with `ORRERY_SPAWNER=off`, the engine forking each task's supervisor itself "
            "(as before the spawner)."
        )
    os.makedirs(a.out, exist_ok=True)
    log = lambda m: print(f"bench_engine: {m}", file=sys.stderr, flush=True)

    empty = os.path.join(a.out, "empty.json")
    write(empty, json.dumps(empty_blueprint(), indent=1))
    base = [run_orrery(a.orrery, empty, a.parallel, 0) for _ in range(a.runs)]
    base_rss = statistics.median(r[1] for r in base)
    log(f"empty session: {statistics.median(r[0] for r in base):.3f} s, peak RSS {base_rss / 1024:.1f} MB")

    results = []
    for shape in a.shapes.split(","):
        d = os.path.join(a.out, shape)
        os.makedirs(d, exist_ok=True)
        names, deps = edges(shape, a.tasks)
        bp = os.path.join(d, "blueprint.json")
        write(bp, json.dumps(blueprint(shape, names, deps), indent=1))
        write(os.path.join(d, "build.ninja"), ninja_file(names, deps))
        write(os.path.join(d, "Makefile"), makefile(names, deps))
        times = {"ninja": [], "make": [], "orrery": [], "before": []}
        rss, facts = [], None
        # Interleaved, so that a slow spell of the machine hits every tool alike.
        for r in range(a.runs):
            times["ninja"].append(run_build_tool("ninja", d, a.parallel, a.tasks))
            times["make"].append(run_build_tool("make", d, a.parallel, a.tasks))
            # The two builds take turns at going first: the one right after the build tools
            # creates its files just after they deleted theirs, which ext4 makes slower.
            if r % 2:
                times["before"].append(run_orrery(before_bin, bp, a.parallel, a.tasks, before_env)[0])
            dt, kb, facts = run_orrery(a.orrery, bp, a.parallel, a.tasks)
            times["orrery"].append(dt)
            rss.append(kb)
            if not r % 2:
                times["before"].append(run_orrery(before_bin, bp, a.parallel, a.tasks, before_env)[0])
            log(
                f"{shape} run {r + 1}/{a.runs}: ninja {times['ninja'][-1]:.3f} s, make {times['make'][-1]:.3f} s, "
                f"orrery {dt:.3f} s, {kb / 1024:.1f} MB, {before_name} {times['before'][-1]:.3f} s"
            )
        med = {k: statistics.median(v) for k, v in times.items()}
        results.append(
            {
                "shape": shape,
                "tasks": a.tasks,
                "edges": sum(len(v) for v in deps.values()),
                "runs": times,
                "median_s": med,
                "orrery_rss_kb": statistics.median(rss),
                "orrery_events": facts["events"],
                "orrery_db_bytes": facts["db_bytes"],
            }
        )
        clean_stamps(d)

    n = a.tasks
    lines = [
        f"Engine benchmark: {n} `shell.run` tasks of `true` per shape, parallelism {a.parallel}, median of {a.runs} runs "
        f"(Orrery: fresh store per run, synchronous=FULL; every run checked completed with {n} succeeded attempts).",
        "",
        f"| shape | tasks | ninja s | make s | before: {before_name} s | before/ninja | orrery s | orrery/ninja | ninja ms/task | make ms/task | orrery ms/task | orrery peak RSS MB |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        m = r["median_s"]
        lines.append(
            f"| {r['shape']} | {r['tasks']} | {m['ninja']:.3f} | {m['make']:.3f} | {m['before']:.3f} | "
            f"{m['before'] / m['ninja']:.2f}x | {m['orrery']:.3f} | "
            f"{m['orrery'] / m['ninja']:.2f}x | {m['ninja'] * 1000 / n:.2f} | {m['make'] * 1000 / n:.2f} | "
            f"{m['orrery'] * 1000 / n:.2f} | {r['orrery_rss_kb'] / 1024:.1f} |"
        )
    lines += [
        "",
        f"Memory: an empty session (start -> end) peaks at {base_rss / 1024:.1f} MB RSS; per 1,000 tasks above that: "
        + ", ".join(f"{r['shape']} {(r['orrery_rss_kb'] - base_rss) / 1024 * 1000 / n:.1f} MB" for r in results)
        + ".",
        "Store per run: "
        + ", ".join(f"{r['shape']} {r['orrery_events']} events, {r['orrery_db_bytes'] / 1e6:.1f} MB db+wal" for r in results)
        + ".",
        before_note + " Target (issue 22): orrery/ninja <= 1.0x on each shape.",
    ]
    table = "\n".join(lines) + "\n"
    write(os.path.join(a.out, "engine.md"), table)
    with open(os.path.join(a.out, "engine.json"), "w") as f:
        json.dump({"parallel": a.parallel, "empty_rss_kb": base_rss, "results": results}, f, indent=1)
    print(table, end="")


if __name__ == "__main__":
    main()
