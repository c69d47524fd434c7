#!/usr/bin/env bash
# Job round trips (issue 18): `status` and `list_events` called over HTTP (`orrery serve`, one
# kept-alive connection), over MCP on stdio (`orrery mcp`, raw JSON-RPC) and through `orrery
# job` (a process per call, the yardstick), on one store in one run, by
# crates/orrery-bench/py/api_bench.py: calls per second, p50 and p99.
#
#   scripts/bench_api.sh
#
# Environment:
#   BENCH_CALLS          calls of each job over HTTP and MCP (default 2000)
#   BENCH_PROCESS_CALLS  calls of each job through `orrery job` (default 40)
#
# Writes target/bench/api/api.json and the table to target/bench/api.md (also printed).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="$ROOT/target/bench/api"
echo "bench_api: building (release)" >&2
(cd "$ROOT" && cargo build --release -q --locked -p orrery-cli)
python3 "$ROOT/crates/orrery-bench/py/api_bench.py" "$OUT" "$ROOT/target/release/orrery" \
    --calls "${BENCH_CALLS:-2000}" --process-calls "${BENCH_PROCESS_CALLS:-40}"
cp "$OUT/api.md" "$ROOT/target/bench/api.md"
echo "bench_api: table written to target/bench/api.md" >&2
