"""The harness the black-box suites share (tests/protocol/axonx_suite.py, tests/memory/agrag_suite.py):
`orrery serve` started on a store of its own, plain HTTP calls of its jobs with the bearer token, and the
runner that prints one line per check (`ok NAME` / `FAIL NAME: reason`) under a watchdog. What each suite
expects is its own; nothing here knows a job.
"""

import argparse
import json
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import threading
import traceback
import urllib.error
import urllib.request

# How long one request, one wait or one stream may take.
WAIT = 60.0
# The whole run, after which the watchdog stops the server and exits 1 (the Rust test kills at 600 s).
WATCHDOG = 540.0

# The server of the run (`main` makes it); `server()` from a suite.
SERVER = None


def server():
    return SERVER


class CheckFailed(Exception):
    pass


def expect(condition, message):
    if not condition:
        raise CheckFailed(message)


def show(value, limit=400):
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


# ---------------------------------------------------------------- the server


class Server:
    """`orrery serve` on a free port of 127.0.0.1, on the suite's own store file."""

    def __init__(self, binary, workdir):
        self.binary = binary
        self.workdir = workdir
        self.db = os.path.join(workdir, "orrery.sqlite")
        self.token = secrets.token_hex(16)
        self.proc = None
        self.base = None
        self.starts = 0
        self.stderr_path = None

    def start(self):
        self.starts += 1
        env = dict(os.environ)
        env["ORRERY_TOKEN"] = self.token
        env.pop("ORRERY_DB", None)
        # Keep whatever it writes beside the store inside the temporary directory.
        for var, sub in (("XDG_DATA_HOME", "data"), ("XDG_CONFIG_HOME", "config"), ("XDG_STATE_HOME", "state"),
                         ("XDG_CACHE_HOME", "cache")):
            path = os.path.join(self.workdir, sub)
            os.makedirs(path, exist_ok=True)
            env[var] = path
        self.stderr_path = os.path.join(self.workdir, "serve-%d.stderr" % self.starts)
        with open(self.stderr_path, "wb") as stderr:
            self.proc = subprocess.Popen(
                [self.binary, "serve", "--port", "0", "--db", self.db],
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr, cwd=self.workdir, env=env)
        line = []
        reader = threading.Thread(target=lambda: line.append(self.proc.stdout.readline()), daemon=True)
        reader.start()
        reader.join(30)
        if not line or not line[0]:
            self.kill()
            raise RuntimeError("orrery serve printed no line within 30 s; stderr: " + self.stderr_tail())
        text = line[0].decode("utf-8", "replace").strip()
        # orrery serve: http://127.0.0.1:PORT token TOKEN
        words = text.split()
        if len(words) != 5 or words[0] != "orrery" or words[3] != "token" or not words[2].startswith("http://"):
            self.kill()
            raise RuntimeError("unexpected first line of orrery serve: %r" % text)
        self.base = words[2].rstrip("/")
        self.token = words[4]
        # Keep its stdout drained.
        threading.Thread(target=self._drain, args=(self.proc.stdout,), daemon=True).start()

    @staticmethod
    def _drain(stream):
        try:
            while stream.read(65536):
                pass
        except (OSError, ValueError):
            pass

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def kill(self):
        """SIGKILL, as a crash."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            try:
                self.proc.send_signal(signal.SIGKILL)
            except OSError:
                pass
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            pass
        self.proc = None

    def stop(self):
        """SIGTERM, its clean stop; SIGKILL if it is not gone after 20 s."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            try:
                self.proc.send_signal(signal.SIGTERM)
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                print("note: orrery serve did not stop 20 s after SIGTERM; killed", flush=True)
            except OSError:
                pass
        self.kill()

    def stderr_tail(self, lines=15):
        try:
            with open(self.stderr_path, "rb") as f:
                text = f.read().decode("utf-8", "replace")
        except (OSError, TypeError):
            return ""
        return " | ".join(text.strip().splitlines()[-lines:])


SERVER = None
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class Reply:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body
        self._json = None

    def text(self):
        return self.body.decode("utf-8", "replace")

    def json(self):
        if self._json is None:
            try:
                self._json = json.loads(self.body)
            except ValueError:
                raise CheckFailed("HTTP %d answered no JSON: %r" % (self.status, self.text()[:300]))
        return self._json

    def envelope(self, what):
        expect(self.status == 200, "%s: HTTP %d (expected 200): %s" % (what, self.status, self.text()[:400]))
        body = self.json()
        expect(isinstance(body, dict) and {"answer", "success", "metadata"} <= set(body),
               "%s: not the envelope {answer, success, metadata}: %s" % (what, show(body)))
        return body


def http(method, path, body=None, headers=None, timeout=WAIT):
    request = urllib.request.Request(SERVER.base + path, data=body, method=method)
    request.add_header("Authorization", "Bearer " + SERVER.token)
    if body is not None:
        request.add_header("Content-Type", "application/json")
    for key, value in (headers or {}).items():
        request.add_header(key, value)
    try:
        with OPENER.open(request, timeout=timeout) as response:
            return Reply(response.status, response.headers, response.read())
    except urllib.error.HTTPError as error:
        try:
            data = error.read()
        finally:
            error.close()
        return Reply(error.code, error.headers, data)


def job(name, arguments, headers=None, timeout=WAIT):
    return http("POST", "/jobs/" + name, json.dumps({"arguments": arguments}).encode(), headers, timeout)


def answer_of(reply, what):
    """The answer of a call that must succeed."""
    body = reply.envelope(what)
    expect(body["success"] is True, "%s: success %r, answer %s" % (what, body["success"], show(body["answer"])))
    return body["answer"]


def failure_of(reply, what):
    """The answer of a call that must be a business failure: HTTP 200, success false."""
    body = reply.envelope(what)
    expect(body["success"] is False,
           "%s: expected success false (HTTP 200), got success %r, answer %s"
           % (what, body["success"], show(body["answer"])))
    return body["answer"]


def refused(reply, what):
    expect(reply.status == 422, "%s: expected HTTP 422, got %d: %s" % (what, reply.status, reply.text()[:300]))


# ---------------------------------------------------------------- the runner

CHECKS = []


def check(name, subs=()):
    """A check; `subs` name the results it reports on the side with `soft` (reported failed if never reached)."""
    def register(fn):
        CHECKS.append((name, fn, tuple(subs)))
        return fn
    return register


_soft = {}


def soft(name, condition, message):
    _soft[name] = (bool(condition), message)


def reason_of(error):
    if isinstance(error, CheckFailed):
        return str(error)
    if isinstance(error, (TimeoutError, OSError)) and "timed out" in str(error):
        return "no answer within %d s (%s)" % (WAIT, error)
    frame = traceback.extract_tb(error.__traceback__)[-1] if error.__traceback__ else None
    where = " (suite line %d)" % frame.lineno if frame else ""
    return "%s: %s%s" % (type(error).__name__, error, where)


def main(description, prefix, before_stop=None):
    """Runs the registered checks; `before_stop` (if given) runs while the server is still up at the end."""
    global SERVER
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--orrery", required=True, help="the orrery binary")
    parser.add_argument("--only", default="", help="comma-separated prefixes of the checks to run")
    parser.add_argument("--list", action="store_true", help="list the checks and exit")
    options = parser.parse_args()
    if options.list:
        for name, _, subs in CHECKS:
            print(name)
            for sub in subs:
                print(sub)
        return 0
    binary = os.path.abspath(options.orrery)
    if not os.access(binary, os.X_OK):
        print("FAIL setup: %s is not an executable" % binary, flush=True)
        return 2
    prefixes = [p for p in options.only.split(",") if p]
    workdir = tempfile.mkdtemp(prefix=prefix)
    SERVER = Server(binary, workdir)

    def on_signal(signum, _frame):
        raise SystemExit(128 + signum)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, on_signal)

    def watchdog():
        print("FAIL watchdog: the suite ran longer than %d s; stopping" % WATCHDOG, flush=True)
        try:
            SERVER.kill()
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
            os._exit(1)

    timer = threading.Timer(WATCHDOG, watchdog)
    timer.daemon = True
    timer.start()
    failed = passed = 0
    try:
        try:
            SERVER.start()
        except Exception as error:
            print("FAIL setup: %s" % reason_of(error), flush=True)
            return 1
        for name, fn, subs in CHECKS:
            if prefixes and not any(name.startswith(p) for p in prefixes):
                continue
            if not SERVER.alive():
                print("note: orrery serve is gone (stderr: %s); starting it again" % SERVER.stderr_tail(), flush=True)
                try:
                    SERVER.kill()
                    SERVER.start()
                except Exception as error:
                    print("FAIL setup: restarting orrery serve: %s" % reason_of(error), flush=True)
                    return 1
            _soft.clear()
            try:
                fn()
                print("ok " + name, flush=True)
                passed += 1
            except Exception as error:
                print("FAIL %s: %s" % (name, reason_of(error)), flush=True)
                failed += 1
            for sub in subs:
                if sub in _soft:
                    good, message = _soft[sub]
                else:
                    good, message = False, "not reached (%s failed first)" % name
                print(("ok " + sub) if good else ("FAIL %s: %s" % (sub, message)), flush=True)
                passed, failed = (passed + 1, failed) if good else (passed, failed + 1)
        print("%d passed, %d failed" % (passed, failed), flush=True)
        return 0 if failed == 0 and passed > 0 else 1
    finally:
        timer.cancel()
        try:
            if SERVER.alive() and before_stop is not None:
                before_stop()
        finally:
            SERVER.stop()
            shutil.rmtree(workdir, ignore_errors=True)


