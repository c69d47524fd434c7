"""Services the reference needs, started for a test on free loopback ports: ``redis-server``,
``mosquitto`` (Debian packages, scripts/setup.sh) and the reference's own orchestrator server.

Each lives in one temporary directory (``init``), without persistence, and is stopped by
``teardown`` (registered at exit and on SIGTERM/SIGINT; on Linux a parent-death signal stops
it even if the driver is SIGKILLed). Used by parity/run_reference.py and server/serve_reference.py.
"""

import atexit
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

_workdir: str | None = None


def init(prefix: str) -> str:
    """Makes the services' directory and arranges their teardown; answers the directory."""
    global _workdir
    _workdir = tempfile.mkdtemp(prefix=prefix)
    atexit.register(teardown)
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    return _workdir


_running: list[subprocess.Popen] = []


def teardown() -> None:
    for proc in _running:
        if proc.poll() is None:
            proc.terminate()
    for proc in _running:
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
    _running.clear()
    if _workdir:
        shutil.rmtree(_workdir, ignore_errors=True)


def _on_signal(signum, _frame):
    teardown()
    os._exit(128 + signum)


def die_with_parent() -> None:
    """In the service's process: SIGTERM it when this driver dies, even by SIGKILL (Linux)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:
        pass


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, proc: subprocess.Popen, name: str, timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{name} did not listen on 127.0.0.1:{port} within {timeout} s")


def _spawn(cmd: list[str], name: str) -> subprocess.Popen:
    """Starts `cmd` in the services' directory, its output in `<name>.log`, stopped by teardown."""
    log = open(os.path.join(_workdir, f"{name}.log"), "wb")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=_workdir, preexec_fn=die_with_parent)
    _running.append(proc)
    return proc


def start_service(name: str, make_cmd, probe=None) -> int:
    """Starts a service on a free loopback port (a few tries: the port may be taken meanwhile)."""
    exe = shutil.which(name) or next((p for p in (f"/usr/sbin/{name}", f"/usr/bin/{name}") if os.path.exists(p)), None)
    if exe is None:
        raise RuntimeError(f"{name} is not installed (scripts/setup.sh installs it)")
    for _ in range(5):
        port = free_port()
        proc = _spawn(make_cmd(exe, port), os.path.basename(name))
        # Something listening is not enough: another process may have taken the port between
        # free_port and the service's bind, and the service then exits ("Address already in
        # use") while the other one answers for a moment (seen once in CI: redis refused later).
        if wait_port(port, proc, name) and (probe is None or probe(port)):
            time.sleep(0.2)
            if proc.poll() is None:
                return port
        _running.remove(proc)
        if proc.poll() is None:
            proc.kill()
    raise RuntimeError(f"{name} failed to start; see its log")


def redis_answers(port: int) -> bool:
    """Whether the server on `port` is a Redis that answers PING."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2.0) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def start_redis() -> int:
    return start_service(
        "redis-server",
        lambda exe, port: [exe, "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no", "--dir", _workdir],
        redis_answers,
    )


def start_mosquitto() -> int:
    def cmd(exe, port):
        conf = os.path.join(_workdir, f"mosquitto-{port}.conf")
        with open(conf, "w") as f:
            # No websockets listener: Debian 12's Mosquitto would bind it to every interface.
            f.write(f"listener {port} 127.0.0.1\nallow_anonymous true\npersistence false\n")
            if os.environ.get("MOSQUITTO_NODELAY"):
                # Each small message is sent at once rather than after the client's delayed ACK
                # (Nagle's algorithm): see bench_broker.py.
                f.write("set_tcp_nodelay true\n")
            if os.geteuid() == 0:
                # Run as root it would switch to the user 'mosquitto', which clears the
                # parent-death signal; staying root keeps it (the listener is loopback only).
                f.write("user root\n")
        return [exe, "-c", conf]

    return start_service("mosquitto", cmd)



def start_agents(broker_port: int, *extra: str) -> None:
    """The reference's own agents (``antikythera-agents run``) on the broker; ``extra`` such as
    ``--sys-only``. They hold no port: started, and given a moment to subscribe."""
    global _launchers
    agents = os.path.join(os.path.dirname(sys.executable), "antikythera-agents")
    _launchers += 1
    name = f"agents-{_launchers}"
    proc = _spawn([agents, "run", "--broker-host", "127.0.0.1", "--broker-port", str(broker_port), *extra], name)
    time.sleep(1.0)
    if proc.poll() is not None:
        raise RuntimeError(f"the reference's agents exited at start; see {name}.log")


_launchers = 0


def _server_answers(port: int) -> bool:
    """Whether the orchestrator server on `port` answers its API."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/blueprints", timeout=5) as answer:
            return answer.status == 200
    except OSError:
        return False


def start_server(redis_port: int, broker_port: int) -> int:
    """The reference's orchestrator server (``antikythera``, FastAPI on uvicorn) of this venv."""
    os.environ.update(
        REDIS_HOST="127.0.0.1",
        REDIS_PORT=str(redis_port),
        MQTT_BROKER_HOST="127.0.0.1",
        MQTT_BROKER_PORT=str(broker_port),
    )
    server = os.path.join(os.path.dirname(sys.executable), "antikythera")
    return start_service(server, lambda exe, port: [exe, "--host", "127.0.0.1", "--port", str(port)], _server_answers)
