#!/usr/bin/env python3
"""Drives `orrery mcp` with the official MCP Python SDK (`mcp`, installed by setup_client.sh):
its stdio client starts the server (or, with --transport http, its streamable HTTP client
speaks to /mcp of an `orrery serve` this script starts), and the checks go from nothing to a finished session, as an
assistant would: validate a blueprint, write it, run it while following its progress, read its
task's log through the resource template and the tool; then the failures (arguments refused by
the schema, a business failure with its code, an unknown tool) and the job protocol's waits.

    python tests/mcp/client.py --orrery target/debug/orrery

Prints one line per check (`ok NAME` or `FAIL NAME: why`), then `N passed, N failed`; exits 1
when a check failed. Every wait is bounded (--timeout for the whole run).
"""

import argparse
import contextlib
import json
import os
import secrets
import subprocess
import sys
import tempfile

import anyio
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

BLUEPRINT = {
    "id": "flow",
    "name": "flow",
    "version": "1.0",
    "tasks": [
        {"id": "start", "type": "system.start"},
        {
            "id": "a",
            "type": "shell.run",
            "params": [{"name": "command", "value": "echo hello"}],
            "depends_on": [{"id": "start"}],
        },
        {"id": "end", "type": "system.end", "depends_on": [{"id": "a"}]},
    ],
}
PRINTED = "hello\n"

# The longest a single request may take.
CALL_TIMEOUT = 60.0

passed = []
failed = []


def check(name, condition, why=""):
    if condition:
        passed.append(name)
        print("ok %s" % name, flush=True)
    else:
        failed.append(name)
        print("FAIL %s: %s" % (name, why), flush=True)
    return condition


def text_of(result):
    return "\n".join(getattr(c, "text", "") for c in result.content)


def answer_of(result):
    """A successful result's answer: its structured content, else its text as JSON."""
    if result.structured_content is not None:
        return result.structured_content
    return json.loads(result.content[0].text)


def catalogue(orrery):
    out = subprocess.run(
        [orrery, "jobs", "--format", "json"], check=True, capture_output=True, text=True, timeout=60
    ).stdout
    return [job["name"] for job in json.loads(out)]


async def call(session, name, arguments, progress=None):
    return await session.call_tool(
        name, arguments, read_timeout_seconds=CALL_TIMEOUT, progress_callback=progress
    )


async def ok_call(session, name, arguments, progress=None):
    result = await call(session, name, arguments, progress)
    if result.is_error:
        raise AssertionError("%s answered an error: %s" % (name, text_of(result)))
    return answer_of(result)


class Progress:
    def __init__(self):
        self.seen = []

    async def __call__(self, progress, total, message):
        self.seen.append((progress, total, message))


@contextlib.asynccontextmanager
async def served(orrery, work, db):
    """`orrery serve` on the store, with MCP over streamable HTTP at /mcp: the streams of a client
    connected to it with the bearer token."""
    token = secrets.token_hex(16)
    env = dict(os.environ, ORRERY_TOKEN=token)
    server = subprocess.Popen(
        [orrery, "serve", "--db", db], cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    try:
        url = server.stdout.readline().split()[2]
        headers = {"Authorization": "Bearer " + token, "X-Orrery-Project": "served"}
        async with create_mcp_http_client(headers=headers) as http:
            async with streamable_http_client(url + "/mcp", http_client=http) as streams:
                yield streams[0], streams[1]
    finally:
        server.terminate()
        server.wait(timeout=30)


def connect(orrery, work, db, transport):
    if transport == "http":
        return served(orrery, work, db)
    return stdio_client(StdioServerParameters(command=orrery, args=["mcp", "--db", db], cwd=work))


async def run(orrery, work, transport):
    db = os.path.join(work, "orrery.db")
    folder = os.path.join(work, "blueprints")
    os.makedirs(folder)
    async with connect(orrery, work, db, transport) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            info = init.server_info
            check("initialize names the server", info.name == "orrery" and bool(info.version), repr(info))
            check(
                "initialize gives instructions",
                "validate_blueprint" in (init.instructions or "") and "wait_session" in (init.instructions or ""),
                repr(init.instructions),
            )

            tools = (await session.list_tools()).tools
            names = [t.name for t in tools]
            jobs = catalogue(orrery)
            check("the tools are the catalogue's jobs", names == jobs, "tools %s, jobs %s" % (names, jobs))
            check(
                "every input schema is an object schema",
                all(t.input_schema.get("type") == "object" for t in tools),
                [t.name for t in tools if t.input_schema.get("type") != "object"],
            )
            check(
                "output schemas are object schemas only",
                all(t.output_schema is None or t.output_schema.get("type") == "object" for t in tools),
                [t.name for t in tools if t.output_schema is not None and t.output_schema.get("type") != "object"],
            )
            by_name = {t.name: t for t in tools}
            check(
                "get_session declares its answer's schema",
                by_name["get_session"].output_schema is not None,
                repr(by_name["get_session"].output_schema)[:200],
            )

            text = json.dumps(BLUEPRINT)
            reports = await ok_call(session, "validate_blueprint", {"text": text})
            check(
                "validate_blueprint finds the blueprint valid",
                isinstance(reports, list) and len(reports) == 1 and reports[0]["valid"] is True,
                repr(reports)[:400],
            )

            file = os.path.join(folder, "flow.json")
            written = await ok_call(session, "write_blueprint_file", {"file": file, "text": text})
            check(
                "write_blueprint_file writes it",
                os.path.exists(file) and json.loads(open(file).read())["id"] == "flow" and "text" in written,
                repr(written)[:300],
            )

            started = await ok_call(session, "start_session", {"file": file})
            session_id = started.get("session_id")
            check("start_session answers a session id", bool(session_id), repr(started))

            progress = Progress()
            waited = await ok_call(session, "wait_session", {"session_id": session_id, "timeout_s": 50}, progress)
            check(
                "wait_session waits until it completed",
                waited["ended"] is True and waited["session"]["state"] == "completed",
                repr(waited)[:400],
            )
            check("wait_session sent progress notifications", len(progress.seen) >= 1, repr(progress.seen))
            if progress.seen:
                last = progress.seen[-1]
                values = [p for p, _, _ in progress.seen]
                check(
                    "its progress grows and ends with every task ended",
                    values == sorted(values) and last[1] == 3 and last[0] == 3 and bool(last[2]),
                    repr(progress.seen),
                )

            view = await ok_call(session, "get_session", {"session_id": session_id})
            states = {t["task"]: t["state"] for t in view["tasks"]}
            check(
                "get_session shows every task succeeded",
                view["session"]["state"] == "completed" and states.get("a") == "SUCCEEDED",
                repr(states),
            )

            templates = (await session.list_resource_templates()).resource_templates
            uris = [t.uri_template for t in templates]
            check(
                "the log's resource template is listed",
                "orrery://session/{session_id}/log/{task}" in uris,
                repr(uris),
            )
            uri = "orrery://session/%s/log/a" % session_id
            read = await session.read_resource(uri)
            content = read.contents[0].text if read.contents else None
            check("the log read as a resource is what the task printed", content == PRINTED, repr(read)[:400])

            log = await ok_call(session, "read_attempt_log", {"session_id": session_id, "task": "a"})
            check(
                "read_attempt_log answers what the task printed",
                log["window"]["content"] == PRINTED,
                repr(log)[:400],
            )

            resources = (await session.list_resources()).resources
            listed = [str(r.uri) for r in resources]
            check("the stored blueprint is a resource", "orrery://blueprint/flow" in listed, repr(listed))
            stored = await session.read_resource("orrery://blueprint/flow")
            stored_text = stored.contents[0].text if stored.contents else "{}"
            check(
                "the blueprint resource is its newest stored version",
                json.loads(stored_text).get("id") == "flow" and len(json.loads(stored_text).get("tasks", [])) == 3,
                stored_text[:300],
            )

            refused = await call(session, "get_session", {"session_id": session_id, "bogus": 1})
            check(
                "arguments the schema refuses are an error result that names the problem",
                refused.is_error is True and "bogus" in text_of(refused),
                repr(refused)[:400],
            )

            missing = await call(session, "get_session", {"session_id": "no-such-session"})
            check(
                "a business failure is an error result with its code",
                missing.is_error is True and "not_found" in text_of(missing) and "no-such-session" in text_of(missing),
                repr(missing)[:400],
            )

            try:
                await call(session, "no_such_tool", {})
                check("an unknown tool is a protocol error", False, "it answered")
            except MCPError as e:
                check("an unknown tool is a protocol error", e.code == -32602, "%s %s" % (e.code, e.message))

            handle = await ok_call(session, "submit", {"task": "shell.run", "command": "echo streamed"})
            check("submit answers a handle", bool(handle.get("task_id")) and bool(handle.get("run_id")), repr(handle))
            streamed = Progress()
            status = await ok_call(session, "stream_task", {"task_id": handle["task_id"]}, streamed)
            check("stream_task answers the final status", status.get("state") == "succeeded", repr(status)[:400])
            messages = [m for _, _, m in streamed.seen]
            check(
                "stream_task sends one progress per item, its log among them",
                len(streamed.seen) >= 2 and any("streamed" in (m or "") for m in messages),
                repr(streamed.seen)[:600],
            )
            waited_task = Progress()
            status = await ok_call(
                session, "wait_task", {"task_id": handle["task_id"], "run_id": handle["run_id"]}, waited_task
            )
            check(
                "wait_task answers the status and sends progress",
                status.get("state") == "succeeded" and len(waited_task.seen) >= 1,
                "%r %r" % (status, waited_task.seen),
            )


async def main_async(orrery, timeout, transport):
    with tempfile.TemporaryDirectory(prefix="orrery-mcp-") as work:
        with anyio.fail_after(timeout):
            await run(orrery, work, transport)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--orrery", required=True, help="the orrery binary")
    parser.add_argument("--timeout", type=float, default=240.0, help="seconds for the whole run")
    parser.add_argument(
        "--transport", choices=["stdio", "http"], default="stdio", help="orrery mcp, or /mcp under orrery serve"
    )
    args = parser.parse_args()
    try:
        anyio.run(main_async, os.path.abspath(args.orrery), args.timeout, args.transport)
    except TimeoutError:
        failed.append("timeout")
        print("FAIL the run ended within %s s: it did not" % args.timeout, flush=True)
    except Exception as e:  # a check that could not even be asked
        failed.append("crash")
        print("FAIL the run crashed: %s: %s" % (type(e).__name__, e), flush=True)
        import traceback

        traceback.print_exc()
    print("%d passed, %d failed" % (len(passed), len(failed)), flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
