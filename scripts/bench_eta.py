#!/usr/bin/env python3
"""The error of a running run's time left (`session_timing`'s `remaining_ms`), measured.

A blueprint of eight shell tasks (a fetch, three builds side by side, a link, a test, and docs on
a branch of their own) runs with noisy durations: each task sleeps its base time times a factor
drawn between 0.7 and 1.3 for every run. It runs PAST times to make a history, then MEASURED
times more; during each of those the estimate is read every POLL seconds through the CLI (`orrery
job session_timing`), and once it ended each reading is set against what was really left.

The baseline, measured on the same readings: the median total duration of the blueprint's past
runs less the time elapsed (what a tool without a critical path can say). The error is the mean
of |estimate - truth| over the readings, as a share of the run's duration; the ratio is Orrery's
error over the baseline's.

    scripts/bench_eta.py ORRERY_BINARY [--past 5] [--measured 3] [--out FILE] [--readings]

The estimate takes the parallelism into account (at most as many processes at once as the
machine has cores, as `orrery run` runs them): on 2 cores the three builds and the docs wait for
each other's places.
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

# The tasks: (id, base seconds, what it waits for).
TASKS = [
    ("fetch", 1.0, ["start"]),
    ("build_a", 2.0, ["fetch"]),
    ("build_b", 1.5, ["fetch"]),
    ("build_c", 0.5, ["fetch"]),
    ("link", 1.0, ["build_a", "build_b", "build_c"]),
    ("test", 1.5, ["link"]),
    ("docs", 2.5, ["start"]),
]
NOISE = (0.7, 1.3)
POLL = 0.25


def blueprint(folder):
    tasks = [{"id": "start", "type": "system.start"}]
    for task, _, after in TASKS:
        command = f"sleep $(cat '{folder}/d_{task}')"
        tasks.append({"id": task, "type": "shell.run", "params": [{"name": "command", "value": command}],
                      "depends_on": [{"id": a} for a in after]})
    tasks.append({"id": "end", "type": "system.end", "depends_on": [{"id": "test"}, {"id": "docs"}]})
    return {"id": "eta", "name": "eta", "version": "1.0", "tasks": tasks}


def noisy_durations(folder, rng):
    for task, base, _ in TASKS:
        with open(os.path.join(folder, f"d_{task}"), "w") as f:
            f.write(f"{base * rng.uniform(*NOISE):.3f}")


def cli(binary, env, *args):
    out = subprocess.run([binary, *args], env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def session(binary, env, session_id):
    return cli(binary, env, "job", "get_session", json.dumps({"session_id": session_id}))["answer"]["session"]


def measure(binary, env, file):
    """Runs the blueprint once, reading its time left; answers the readings and its times."""
    before = {s["id"] for s in cli(binary, env, "sessions", "--format", "json")}
    child = subprocess.Popen([binary, "run", file], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    session_id = None
    readings = []
    while child.poll() is None:
        if session_id is None:
            new = [s["id"] for s in cli(binary, env, "sessions", "--format", "json") if s["id"] not in before]
            session_id = new[0] if new else None
        if session_id is not None:
            at = time.time() * 1000
            timing = cli(binary, env, "job", "session_timing", json.dumps({"session_id": session_id}))["answer"]
            if timing.get("remaining_ms") is not None:
                readings.append((at, timing["remaining_ms"]))
        time.sleep(POLL)
    if child.returncode != 0:
        sys.exit(f"bench_eta: the run failed (exit {child.returncode})")
    s = session(binary, env, session_id)
    return readings, s["started_ms"], s["finished_ms"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--past", type=int, default=5)
    parser.add_argument("--measured", type=int, default=3)
    parser.add_argument("--out", help="append the table to this file")
    parser.add_argument("--readings", action="store_true", help="print every reading on stderr")
    args = parser.parse_args()
    rng = random.Random(7)
    with tempfile.TemporaryDirectory(prefix="orrery-eta-") as folder:
        env = {**os.environ, "ORRERY_DB": os.path.join(folder, "store.db")}
        file = os.path.join(folder, "eta.json")
        with open(file, "w") as f:
            json.dump(blueprint(folder), f)
        totals = []
        for _ in range(args.past):
            noisy_durations(folder, rng)
            _, started, finished = measure(args.binary, env, file)
            totals.append(finished - started)
        ours, naive, counts = [], [], []
        for _ in range(args.measured):
            noisy_durations(folder, rng)
            readings, started, finished = measure(args.binary, env, file)
            took = finished - started
            usual_total = statistics.median(totals[-10:])
            if args.readings:
                for at, est in readings:
                    print(f"bench_eta: at {at - started:.0f} ms: estimate {est} ms, truth {finished - at:.0f} ms, "
                          f"baseline {max(0.0, usual_total - (at - started)):.0f} ms", file=sys.stderr)
            ours.append(statistics.mean(abs(est - (finished - at)) for at, est in readings) / took)
            naive.append(statistics.mean(abs(max(0.0, usual_total - (at - started)) - (finished - at))
                                         for at, _ in readings) / took)
            counts.append(len(readings))
            totals.append(took)
    mean_ours, mean_naive = statistics.mean(ours), statistics.mean(naive)
    lines = [
        f"### Time left: error of the estimate ({args.past} past runs, {args.measured} measured, "
        f"durations x{NOISE[0]}-{NOISE[1]}, read every {POLL} s)",
        "",
        "| estimate | mean error (share of the run's duration) | ratio to the baseline |",
        "|---|---|---|",
        f"| baseline: median past total less elapsed | {mean_naive:.1%} | 1.00x |",
        f"| Orrery: critical path of the usual durations | {mean_ours:.1%} | {mean_ours / mean_naive:.2f}x |",
        "",
        f"Per measured run (Orrery / baseline): "
        + ", ".join(f"{o:.1%} / {n:.1%} ({c} readings)" for o, n, c in zip(ours, naive, counts)),
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "a") as f:
            f.write("\n" + text)


if __name__ == "__main__":
    main()
