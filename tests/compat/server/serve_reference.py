"""Stands up an antikythera deployment on loopback for a test: Redis, Mosquitto and the
reference's orchestrator server (docs/format.md §5), each on a free port.

    serve_reference.py [--sys-agents | --agents [N]] [--broker-only]

With ``--sys-agents`` the reference's own agents serve ``system.*`` tasks over the broker
(``antikythera-agents run --sys-only``), so sessions of such blueprints run on the server; with
``--agents`` N launchers (default 1) of all its agents (``system``, ``reference``,
``user_interaction``). ``--broker-only`` starts Mosquitto (and the agents asked for) but no Redis
and no server: for Orrery's engine as the orchestrator.

Prints one JSON line, ``{"url", "redis_port", "broker_port", "workdir"}`` (``url`` and
``redis_port`` null with ``--broker-only``), once everything answers, then keeps everything up until its stdin closes (the test ends, or dies) or it
gets SIGTERM; then stops them all. The server's log is ``antikythera.log`` in ``workdir``.
"""

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import services  # noqa: E402  (tests/compat/services.py)


def main() -> int:
    args = sys.argv[1:]
    workdir = services.init("orrery-reference-server-")
    # The server reads a .env from its working directory and writes orchestrator.log there.
    os.chdir(workdir)
    broker_port = services.start_mosquitto()
    url = redis_port = None
    if "--broker-only" not in args:
        redis_port = services.start_redis()
        url = f"http://127.0.0.1:{services.start_server(redis_port, broker_port)}"
    if "--sys-agents" in args:
        services.start_agents(broker_port, "--sys-only")
    if "--agents" in args:
        at = args.index("--agents") + 1
        count = int(args[at]) if at < len(args) and args[at].isdigit() else 1
        for _ in range(count):
            services.start_agents(broker_port)
    print(json.dumps({"url": url, "redis_port": redis_port, "broker_port": broker_port, "workdir": workdir}), flush=True)
    sys.stdin.read()
    return 0


if __name__ == "__main__":
    try:
        code = main()
    finally:
        services.teardown()
    sys.exit(code)
