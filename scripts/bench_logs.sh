#!/usr/bin/env bash
# The log benchmark (issue 4): the orrery-logs follower and window reads, measured by
# crates/orrery-bench/src/bin/bench_logs.rs on real files in target/bench/logs:
#
# - latency from a line being appended to the follower yielding it, every ~1 ms, 10,000 times
#   (median, p99, max), with file-system events and, for comparison, with polling only;
# - follow throughput against coreutils `tail -f` in the same run: 1 GiB appended as fast as
#   possible, the time until each follower has seen all of it;
# - the peak RSS of a process following a 1 GiB log to its end and reading its windows.
#
#   scripts/bench_logs.sh
#
# Environment:
#   BENCH_APPENDS  appends for the latency (default 10000)
#   BENCH_GIB      size of the throughput file in GiB (default 1)
#   BENCH_ROUNDS   alternating throughput rounds, the median reported (default 3)
#
# Writes the raw results to target/bench/logs/logs.json and the table to target/bench/logs.md
# (also printed). Needs about BENCH_GIB of free disk while it runs; the big file is removed.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="$ROOT/target/bench/logs"

command -v tail >/dev/null || { echo "bench_logs: coreutils tail is missing" >&2; exit 1; }
echo "bench_logs: building (release)" >&2
(cd "$ROOT" && cargo build --release -q --locked -p orrery-bench --bin bench_logs)
mkdir -p "$OUT"
"$ROOT/target/release/bench_logs" "$OUT" --appends "${BENCH_APPENDS:-10000}" --gib "${BENCH_GIB:-1}" --rounds "${BENCH_ROUNDS:-3}" >"$OUT/logs.json"
cp "$OUT/logs.md" "$ROOT/target/bench/logs.md"
cat "$ROOT/target/bench/logs.md"
echo "bench_logs: table written to target/bench/logs.md" >&2
