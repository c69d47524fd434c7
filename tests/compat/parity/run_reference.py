#!/usr/bin/env python3
"""Runs one blueprint session on the REAL reference orchestrator and prints where it ended.

Run with the reference venv's python (tests/compat/setup_reference.sh):

    python run_reference.py [--answer NODE_OR_TASK=JSON]... [--param K=JSON]... [--timeout S] FILE

One JSON object is printed on stdout:

    {"blueprint_id", "session_state", "last_task_error": {"code", "message"} | null,
     "tasks": {"<instance>.<task>": "SUCCEEDED", ...},
     "data": {"<instance>": {key: value}},
     "scope_iterations": {"<scope start task id>": n},
     "instances": {"<composite node>": "<inner instance>"},
     "timed_out": bool, "seconds": float}

or, when the reference server would not take the file (upload: parse, schema, validate,
check_dataflow) or cannot create a session from it (composite expansion), ``{"refused": "...",
"problems": [...]}``.

What was found out about running the reference (antikythera-sdk 0.5.1) on this machine
--------------------------------------------------------------------------------------
- The orchestrator is ``antikythera_orchestrator.Orchestrator(session, broker_host,
  broker_port)``; the API server (api.py ``_start_blueprint_session`` and ``start_session``)
  does nothing more than build ``BlueprintSession(bsid, blueprint, params)``, construct the
  Orchestrator (which expands composites, stores the session and builds the flattened graph)
  and call ``start()``. ``await_completion(timeout)`` waits for completed or failed. This driver
  does exactly that in-process, without FastAPI: the orchestrator's own code decides the run.
- Storage is hard-wired to Redis (storage/__init__.py imports redis_storage): session data in
  logical db 0 under ``bsid-<id>:<instance>:<key>`` (compas JSON), blueprints in db 1 under
  ``blueprint:<id>``. Host and port come from ``REDIS_HOST``/``REDIS_PORT`` read when
  ``antikythera.config`` is imported, so they are set before any reference import. Inner
  blueprints are looked up by id in that storage, so every blueprint of the file's folder is
  stored first, the way ``POST /blueprints/upload`` does it (``BlueprintJsonSerializer.from_file``
  then ``BlueprintStorage.add_blueprint``), and the root last (two corpus files share an id).
  The root also gets the upload's ``check_dataflow()``: a file the server refuses is reported as
  ``refused`` and not run.
- Tasks are executed only through MQTT (compas_eve ``MqttTransport``, topics
  ``antikythera/task/{start,claim,allocation,completed,ack}``); there is no in-process shortcut.
  So a real ``mosquitto`` and a real ``redis-server`` (Debian packages, scripts/setup.sh) are
  started here on free loopback ports, each in a temporary directory, without persistence, and
  killed when the driver ends (also on error, timeout or SIGTERM; on Linux a parent-death
  signal stops them even if the driver is SIGKILLed). Every run gets its own pair,
  so runs can go in parallel without the reference's cross-talk (messages carry no session id).
- The agents are the reference's own ``antikythera_agents.launcher.AgentLauncher`` in this
  process, with the plugins of the ``antikythera.agents`` entry point: ``system``
  (antikythera_orchestrator/system_agents.py: start, end, sleep, composite), ``user_interaction``
  (user_output, user_input, notify), ``io``, ``reference``.
- Two things the reference cannot do unattended, supplied here and nothing else:
  * ``user_interaction.user_input`` reads ``input()`` once per declared output, with the prompt
    ``[<instance>.<task>][<type>] > Enter <output>: ``. The driver shadows ``input`` in that
    module with a function that answers from ``--answer`` (by node key, else by bare task id;
    a JSON object answers per output name). The agent's code still builds the outputs.
  * ``user_prompt.confirm`` has no agent in the reference package (blueprints use it, nothing
    serves it: the session would fail with NO_AGENT_CLAIMED after about 62 s). A small agent
    registered here through the reference's own ``@agent``/``@tool`` serves it the way Orrery's
    built-in does (crates/orrery-engine/src/agents/interaction.rs): the answer becomes every
    declared output (``result`` when none), and must be one of ``options`` when that is a
    non-empty list. It is an agent, not the orchestrator: dispatch, claims, conditions, data
    and states stay the reference's.
- ``scope_iterations`` is the session's own counter map (keyed by bare scope-start task id, a
  known weakness: one inner blueprint used twice shares it). Task states are read from the
  orchestrator's graph nodes (``"<instance>.<task>"``, instance = blueprint id for the root,
  ``<blueprint>_<composite task>`` for a static inner one).
"""

import argparse
import json
import os
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import services  # noqa: E402  (tests/compat/services.py)

REAL_STDOUT = sys.stdout
# The agents print progress on stdout; keep stdout for the one JSON answer.
sys.stdout = sys.stderr


def _pairs(items: list[str], flag: str) -> dict:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SystemExit(f"{flag} wants KEY=JSON, got {item!r}")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


def _answer_for(answers: dict, fqn: str):
    if fqn in answers:
        return answers[fqn]
    for key, value in answers.items():
        if fqn.endswith("." + key):
            return value
    raise RuntimeError(f"no --answer for prompt task {fqn}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("file")
    ap.add_argument("--answer", action="append", default=[], help="NODE_OR_TASK=JSON (text when not JSON)")
    ap.add_argument("--param", action="append", default=[], help="session param K=JSON")
    ap.add_argument("--timeout", type=float, default=240.0, help="seconds to wait for completed or failed")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    answers = _pairs(args.answer, "--answer")
    params = _pairs(args.param, "--param")
    root_file = Path(args.file).resolve()

    workdir = services.init("orrery-parity-ref-")
    redis_port = services.start_redis()
    mqtt_port = services.start_mosquitto()
    os.environ.update(
        REDIS_HOST="127.0.0.1",
        REDIS_PORT=str(redis_port),
        MQTT_BROKER_HOST="127.0.0.1",
        MQTT_BROKER_PORT=str(mqtt_port),
    )
    os.chdir(workdir)  # antikythera.config loads a .env from the working directory

    import logging

    logging.basicConfig(stream=sys.stderr, level=logging.INFO if args.verbose else logging.WARNING)

    from compas.data import json_dumps

    import antikythera_agents.user_interaction as user_interaction
    from antikythera.io import BlueprintJsonSerializer
    from antikythera.models import BlueprintSession
    from antikythera.models import BlueprintSessionState
    from antikythera.models import Task
    from antikythera_agents.base_agent import Agent
    from antikythera_agents.decorators import agent
    from antikythera_agents.decorators import tool
    from antikythera_agents.launcher import AgentLauncher
    from antikythera_orchestrator import Orchestrator
    from antikythera_orchestrator.storage import BlueprintStorage
    from antikythera_orchestrator.storage import SessionStorage

    def scripted_input(prompt: str = "") -> str:
        # prompt: "    [<fqn>][<type>] > Enter <output>: "
        fqn = prompt.strip().split("]", 1)[0].lstrip("[")
        output = prompt.rsplit("Enter ", 1)[1].rstrip(": ").rstrip(":")
        answer = _answer_for(answers, fqn)
        if isinstance(answer, dict):
            answer = answer[output]
        if not isinstance(answer, str):
            raise RuntimeError(f"input() returns text; the answer for {fqn} is {answer!r}")
        return answer

    user_interaction.input = scripted_input  # module global shadows the builtin

    @agent(type="user_prompt")
    class ConfirmAgent(Agent):  # noqa: F841 - registered by the decorator
        @tool(name="confirm")
        def confirm(self, task: Task) -> dict:
            answer = _answer_for(answers, task.id)
            options = task.get_param_value("options")
            if isinstance(options, list) and options and answer not in options:
                raise ValueError(f"answer {answer!r} is not one of {options!r}")
            names = [o.name for o in task.outputs] or ["result"]
            return {name: answer for name in names}

    # Upload: every blueprint of the folder, the root last.
    with BlueprintStorage() as storage:
        for path in sorted(root_file.parent.glob("*.json")):
            if path.name.endswith(".schema.json") or path == root_file:
                continue
            try:
                storage.add_blueprint(BlueprintJsonSerializer.from_file(str(path)))
            except Exception as exc:  # a file the server would not take is just not there
                print(f"run_reference: not uploaded {path.name}: {exc}", file=sys.stderr)
        try:
            root = BlueprintJsonSerializer.from_file(str(root_file))
        except Exception as exc:
            REAL_STDOUT.write(json.dumps({"refused": f"{type(exc).__name__}: {exc}", "problems": []}) + "\n")
            return 0
        problems = root.check_dataflow()
        if problems:
            REAL_STDOUT.write(json.dumps({"refused": "dataflow", "problems": problems}) + "\n")
            return 0
        storage.add_blueprint(root)
        root = storage.get_blueprint(root.id)  # as the server starts it: from storage

    launcher = AgentLauncher(broker_host="127.0.0.1", broker_port=mqtt_port)
    if "user_prompt" not in launcher.agents:
        raise RuntimeError("the user_prompt.confirm agent was not registered")
    launcher.start()
    time.sleep(0.5)  # let the launcher's subscriptions reach the broker (else: re-dispatch after 2 s)

    session = BlueprintSession(bsid=str(uuid.uuid4()), blueprint=root, params=params)
    started = time.monotonic()
    try:
        orchestrator = Orchestrator(session, broker_host="127.0.0.1", broker_port=mqtt_port)
    except Exception as exc:  # the server answers POST /blueprints/start with an error
        launcher.stop()
        REAL_STDOUT.write(json.dumps({"refused": f"session creation: {type(exc).__name__}: {exc}", "problems": []}) + "\n")
        return 0
    orchestrator.start()
    finished = orchestrator.await_completion(timeout=args.timeout)
    seconds = round(time.monotonic() - started, 3)
    if not finished:
        orchestrator.stop()
    launcher.stop()

    session = orchestrator.session
    tasks = {node: data["task"].state.value for node, data in orchestrator.graph.nodes(data=True)}
    instances = [session.blueprint.id] + sorted(set(session.composite_to_inner_blueprint_map.values()))
    data = {}
    with SessionStorage(session.bsid) as store:
        for instance in instances:
            data[instance] = json.loads(json_dumps(store.get_all(instance)))
    error = session.last_task_error
    state = session.state
    answer = {
        "blueprint_id": session.blueprint.id,
        "session_state": state.value if isinstance(state, BlueprintSessionState) else str(state),
        "last_task_error": None if error is None else {"code": error.code, "message": error.message},
        "tasks": dict(sorted(tasks.items())),
        "data": data,
        "scope_iterations": dict(sorted(session.scope_iterations.items())),
        "instances": dict(sorted(session.composite_to_inner_blueprint_map.items())),
        "timed_out": not finished,
        "seconds": seconds,
    }
    REAL_STDOUT.write(json.dumps(answer, sort_keys=False) + "\n")
    REAL_STDOUT.flush()
    for transport in (orchestrator.transport, launcher.transport):
        try:
            transport.close()
        except Exception:
            pass
    return 0


if __name__ == "__main__":
    try:
        code = main()
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 2
    finally:
        services.teardown()
    # paho and watchdog threads may linger; the answer is out, leave now.
    sys.stderr.flush()
    os._exit(code if isinstance(code, int) else 0)
