#!/usr/bin/env python3
"""Job round trips: the same calls of `status` (the job protocol) and `list_events` (the task
memory) over HTTP (`orrery serve`, one kept-alive connection), over MCP on stdio (`orrery mcp`,
raw JSON-RPC on its pipes) and through `orrery job` (a process per call), in one run on one
store. Prints a Markdown table (calls per second, p50, p99) and writes the raw figures as JSON.

    python3 api_bench.py OUTDIR ORRERY_BINARY [--calls 2000] [--process-calls 40]
"""

import argparse
import http.client
import json
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time

PROJECT = "bench"


def job(orrery, db, name, arguments):
    out = subprocess.run(
        [orrery, "job", name, json.dumps(arguments), "--db", db, "--project", PROJECT],
        capture_output=True,
        text=True,
        check=False,
    )
    envelope = json.loads(out.stdout)
    if not envelope["success"]:
        sys.exit("api_bench: %s failed: %s" % (name, envelope["answer"]))
    return envelope["answer"]


def prepare(orrery, db):
    """A finished protocol task and a task memory of 100 events: what the calls read."""
    handle = job(orrery, db, "submit", {"task": "shell.run", "task_name": "bench", "command": "true"})
    job(orrery, db, "wait_task", {"task_id": handle["task_id"], "run_id": handle["run_id"], "poll_interval": 0.05})
    job(orrery, db, "create_task", {"name": "bench", "goal": "measure"})
    for i in range(100):
        job(orrery, db, "record_event", {"task_name": "bench", "kind": "note", "payload": "event %d" % i})
    return [
        ("status", {"task_id": handle["task_id"]}),
        ("list_events", {"task_name": "bench", "limit": 50}),
    ]


def summary(latencies, wall):
    ordered = sorted(latencies)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return {
        "calls": len(ordered),
        "per_second": len(ordered) / wall,
        "p50_ms": statistics.median(ordered) * 1000,
        "p99_ms": p99 * 1000,
    }


def over_http(orrery, db, calls, n):
    token = secrets.token_hex(16)
    server = subprocess.Popen(
        [orrery, "serve", "--db", db, "--no-recover"],
        env=dict(os.environ, ORRERY_TOKEN=token),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        url = server.stdout.readline().split()[2]
        host, port = url.removeprefix("http://").split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=60)
        headers = {"Authorization": "Bearer " + token, "Content-Type": "application/json", "X-Orrery-Project": PROJECT}
        results = {}
        for name, arguments in calls:
            body = json.dumps({"arguments": arguments})
            latencies = []
            started = time.perf_counter()
            for _ in range(n):
                t = time.perf_counter()
                conn.request("POST", "/jobs/" + name, body, headers)
                reply = conn.getresponse()
                answer = json.loads(reply.read())
                latencies.append(time.perf_counter() - t)
                assert answer["success"], answer
            results[name] = summary(latencies, time.perf_counter() - started)
        return results
    finally:
        server.terminate()
        server.wait(timeout=30)


def over_mcp(orrery, db, calls, n):
    server = subprocess.Popen(
        [orrery, "mcp", "--db", db, "--project", PROJECT],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        bufsize=1,
    )
    ids = iter(range(1, 10**9))

    def request(method, params):
        number = next(ids)
        server.stdin.write(json.dumps({"jsonrpc": "2.0", "id": number, "method": method, "params": params}) + "\n")
        server.stdin.flush()
        while True:
            message = json.loads(server.stdout.readline())
            if message.get("id") == number:
                return message

    try:
        request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}})
        server.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
        server.stdin.flush()
        results = {}
        for name, arguments in calls:
            latencies = []
            started = time.perf_counter()
            for _ in range(n):
                t = time.perf_counter()
                answer = request("tools/call", {"name": name, "arguments": arguments})
                latencies.append(time.perf_counter() - t)
                assert not answer["result"].get("isError"), answer
            results[name] = summary(latencies, time.perf_counter() - started)
        return results
    finally:
        server.stdin.close()
        server.wait(timeout=30)


def through_job(orrery, db, calls, n):
    results = {}
    for name, arguments in calls:
        latencies = []
        started = time.perf_counter()
        for _ in range(n):
            t = time.perf_counter()
            job(orrery, db, name, arguments)
            latencies.append(time.perf_counter() - t)
        results[name] = summary(latencies, time.perf_counter() - started)
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("orrery")
    parser.add_argument("--calls", type=int, default=2000, help="calls of each job over HTTP and MCP")
    parser.add_argument("--process-calls", type=int, default=40, help="calls of each job through `orrery job`")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="orrery-api-bench-") as work:
        db = os.path.join(work, "orrery.db")
        calls = prepare(args.orrery, db)
        figures = {
            "HTTP (`orrery serve`, one connection)": over_http(args.orrery, db, calls, args.calls),
            "MCP on stdio (`orrery mcp`)": over_mcp(args.orrery, db, calls, args.calls),
            "`orrery job` (a process per call)": through_job(args.orrery, db, calls, args.process_calls),
        }
    with open(os.path.join(args.out, "api.json"), "w") as f:
        json.dump(figures, f, indent=2)
    baseline = figures["`orrery job` (a process per call)"]
    lines = [
        "| transport | job | calls | calls/s | p50 ms | p99 ms | p50 vs `orrery job` |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for transport, by_job in figures.items():
        for name, f in by_job.items():
            ratio = f["p50_ms"] / baseline[name]["p50_ms"]
            lines.append(
                "| %s | `%s` | %d | %.0f | %.2f | %.2f | %.3fx |"
                % (transport, name, f["calls"], f["per_second"], f["p50_ms"], f["p99_ms"], ratio)
            )
    table = "\n".join(lines) + "\n"
    with open(os.path.join(args.out, "api.md"), "w") as f:
        f.write(table)
    print(table)


if __name__ == "__main__":
    main()
