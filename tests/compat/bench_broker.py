"""Dispatch latency over the broker (issue 7): Orrery's engine against the reference's
orchestrator, on the same blueprint, broker and agents, in one run.

    bench_broker.py --orrery PATH [--tasks N] [--runs R] [--out FILE]

The blueprint is a chain of N `system.sleep` tasks of 0 s between start and end, so that a task's
time is the protocol's round trip: assignment published, claimed, allocated, executed by the
agent, completion received and recorded, the next task dispatched. One Mosquitto, one launcher of
the reference's own agents (`antikythera-agents run`) serve both orchestrators:

- the reference: its server (Redis, FastAPI) runs the blueprint; the per-task time is read on
  its SSE stream, from a task's READY (published) to its SUCCEEDED, and the hop from one task's
  SUCCEEDED to the next one's READY;
- Orrery: `orrery run --broker ... --via-broker system.sleep`; the per-task time is its
  attempt's begin (dispatch) to its settlement, and the hop from one attempt's settlement to the
  next one's begin, read from the task store.

Both also give the session's wall time per task. Prints a Markdown table (and writes it to
--out).
"""

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import services  # noqa: E402


def blueprint(n: int) -> dict:
    tasks = [{"id": "start", "type": "system.start"}]
    before = "start"
    for i in range(n):
        tid = f"s{i:03d}"
        tasks.append({"id": tid, "type": "system.sleep", "params": [{"name": "duration", "value": 0}], "depends_on": [{"id": before}]})
        before = tid
    tasks.append({"id": "end", "type": "system.end", "depends_on": [{"id": before}]})
    return {"id": "hops", "name": "hops", "version": "1.0", "tasks": tasks}


def post(url: str, body: dict | None = None, files: dict | None = None) -> dict:
    if files:
        boundary = "orrerybench"
        (name, content), = files.items()
        data = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\n"
                f"Content-Type: application/json\r\n\r\n{content}\r\n--{boundary}--\r\n").encode()
        req = urllib.request.Request(url, data=data, headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
    else:
        req = urllib.request.Request(url, data=json.dumps(body or {}).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as answer:
        return json.loads(answer.read() or b"{}")


def reference_run(url: str, n: int) -> dict:
    """One session on the reference server, timed on its SSE stream."""
    session = post(f"{url}/blueprints/start", {"blueprint_id": "hops"})
    sid = session.get("session_id") or session.get("bsid") or session["id"]
    seen: list[tuple[float, str, str]] = []
    opened = threading.Event()

    def follow():
        with urllib.request.urlopen(f"{url}/sessions/{sid}/stream", timeout=120) as stream:
            opened.set()
            event = None
            for raw in stream:
                line = raw.decode().rstrip("\r\n")
                if line.startswith("event:"):
                    event = line[6:].strip()
                elif line.startswith("data:") and event:
                    data = json.loads(line[5:])
                    now = time.monotonic()
                    if event == "task_state_changed":
                        seen.append((now, data["task_id"], data["state"]))
                    elif event == "session_state_changed":
                        seen.append((now, "", data["state"]))
                        if data["state"] in ("completed", "failed", "stopped", "COMPLETED", "FAILED", "STOPPED"):
                            return

    reader = threading.Thread(target=follow, daemon=True)
    reader.start()
    opened.wait(10)
    time.sleep(0.2)  # the server subscribes the stream after answering its headers
    post(f"{url}/sessions/{sid}/start")
    reader.join(300)
    first = {}
    for at, task, state in seen:
        first.setdefault((task, state), at)
    ids = [f"s{i:03d}" for i in range(n)]
    per_task = [first[(t, "SUCCEEDED")] - first[(t, "READY")] for t in ids]
    hops = [first[(b, "READY")] - first[(a, "SUCCEEDED")] for a, b in zip(ids, ids[1:])]
    wall = first[("end", "SUCCEEDED")] - seen[0][0]
    return {"per_task": per_task, "hops": hops, "wall": wall, "state": seen[-1][2]}


def orrery_run(orrery: str, broker_port: int, file: str, db: str, n: int) -> dict:
    out = subprocess.run(
        [orrery, "run", "--db", db, "--format", "json", "--broker", f"mqtt://127.0.0.1:{broker_port}", "--via-broker", "system.sleep", file],
        capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        raise RuntimeError(f"orrery run failed: {out.stderr}")
    sid = next(json.loads(l)["session_id"] for l in out.stdout.splitlines() if l.startswith("{"))
    con = sqlite3.connect(db)
    rows = con.execute("SELECT node, started_ms, finished_ms FROM task_runs WHERE session_id = ? ORDER BY started_ms, rowid", (sid,)).fetchall()
    started, finished = con.execute("SELECT started_ms, finished_ms FROM sessions WHERE id = ?", (sid,)).fetchone()
    con.close()
    at = {node.split(".", 1)[1]: (s, e) for node, s, e in rows}
    ids = [f"s{i:03d}" for i in range(n)]
    per_task = [(at[t][1] - at[t][0]) / 1000 for t in ids]
    hops = [(at[b][0] - at[a][1]) / 1000 for a, b in zip(ids, ids[1:])]
    return {"per_task": per_task, "hops": hops, "wall": (finished - started) / 1000}


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--orrery", required=True)
    parser.add_argument("--tasks", type=int, default=50)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out")
    args = parser.parse_args()
    args.orrery = os.path.abspath(args.orrery)
    if args.out:
        args.out = os.path.abspath(args.out)

    workdir = services.init("orrery-bench-broker-")
    os.chdir(workdir)
    broker_port = services.start_mosquitto()
    redis_port = services.start_redis()
    url = f"http://127.0.0.1:{services.start_server(redis_port, broker_port)}"
    services.start_agents(broker_port)

    text = json.dumps(blueprint(args.tasks))
    file = os.path.join(workdir, "hops.json")
    with open(file, "w") as f:
        f.write(text)
    post(f"{url}/blueprints/upload", files={"hops.json": text})
    db = os.path.join(workdir, "orrery.db")

    results = {"reference": [], "orrery": []}
    # Warm both up once (imports, connections), then alternate so drift hits both alike.
    reference_run(url, args.tasks)
    orrery_run(args.orrery, broker_port, file, db, args.tasks)
    for _ in range(args.runs):
        results["reference"].append(reference_run(url, args.tasks))
        results["orrery"].append(orrery_run(args.orrery, broker_port, file, db, args.tasks))

    rows = []
    for name, label in (("reference", "reference orchestrator (server, Redis)"), ("orrery", "Orrery's engine (`orrery run --broker`)")):
        runs = results[name]
        per_task = [t * 1000 for r in runs for t in r["per_task"]]
        hops = [h * 1000 for r in runs for h in r["hops"]]
        wall = [r["wall"] * 1000 / (args.tasks + 2) for r in runs]
        rows.append((label, statistics.median(per_task), pct(per_task, 95), statistics.median(hops), pct(hops, 95), statistics.median(wall)))
    ref, orr = rows
    lines = [
        f"Dispatch latency over one Mosquitto broker, the reference's own agents executing; a chain of {args.tasks} "
        f"`system.sleep` tasks of 0 s, {args.runs} sessions each, alternating (ms):",
        "",
        "| orchestrator | per task p50 | per task p95 | hop p50 | hop p95 | session wall time / task |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for label, a, b, c, d, e in rows:
        lines.append(f"| {label} | {a:.1f} | {b:.1f} | {c:.1f} | {d:.1f} | {e:.1f} |")
    lines.append(f"| ratio Orrery / reference | {orr[1] / ref[1]:.2f} | {orr[2] / ref[2]:.2f} | {orr[3] / max(ref[3], 1e-9):.2f} | "
                 f"{orr[4] / max(ref[4], 1e-9):.2f} | {orr[5] / ref[5]:.2f} |")
    table = "\n".join(lines) + "\n"
    print(table)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(table)
    return 0


if __name__ == "__main__":
    try:
        code = main()
    finally:
        services.teardown()
    sys.exit(code)
