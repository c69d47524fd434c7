#!/usr/bin/env bash
# Dispatch latency over an MQTT broker (issue 7): Orrery's engine against the reference's
# orchestrator server on the same blueprint (a chain of `system.sleep` tasks of 0 s), broker and
# reference agents, alternating sessions, in one run; twice: Mosquitto as installed, and with
# `set_tcp_nodelay true` (see tests/compat/bench_broker.py).
#
#   scripts/bench_broker.sh
#
# Environment: BENCH_TASKS (default 50), BENCH_RUNS sessions per orchestrator (default 5).
# Writes target/bench/broker.md (also printed). Needs scripts/setup.sh (Mosquitto, Redis) and
# the reference's virtual environment (tests/compat/setup_reference.sh).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="$ROOT/target/reference-venv/bin/python"
[[ -x "$PYTHON" ]] || bash "$ROOT/tests/compat/setup_reference.sh"
(cd "$ROOT" && cargo build --release --locked -q -p orrery-cli)
OUT="$ROOT/target/bench/broker.md"
mkdir -p "$(dirname "$OUT")"
args=(--orrery "$ROOT/target/release/orrery" --tasks "${BENCH_TASKS:-50}" --runs "${BENCH_RUNS:-5}")
{
    echo "## Mosquitto as installed"
    echo
    "$PYTHON" "$ROOT/tests/compat/bench_broker.py" "${args[@]}"
    echo "## Mosquitto with set_tcp_nodelay true"
    echo
    MOSQUITTO_NODELAY=1 "$PYTHON" "$ROOT/tests/compat/bench_broker.py" "${args[@]}"
} | tee "$OUT"
