#!/usr/bin/env bash
# The runs view benchmark (issue 6), in the release app's real WebKitGTK window under Xvfb,
# driven over WebDriver (tauri-driver):
#   - the timeline of a stored session of 10,000 attempts (baseline: 1,000, measured in the same
#     run): the CLI runs a generated blueprint of instant tasks (`system.sleep` of 0 s) into a
#     fresh store, the app opens that run; time from the click on the run to a timeline with
#     bars, and frame times idle, while dragging the timeline and while Shift+wheel pans it;
#   - the log: a task launched from the app writes 300 lines, one every 30 ms, each with its
#     write time; the latency of each line to the log viewer (p50/p95/p99/max);
#   - a log of 100 MB: opening its tail, and loading earlier windows by scrolling to the top;
#   - the error of a running run's time left, on a blueprint run five times with noisy task
#     durations (scripts/bench_eta.py: the release CLI, no window).
#
#   scripts/bench_runs.sh
#
# Environment:
#   BENCH_SIZES   space-separated task counts, the first is the baseline (default "1000 10000")
#   BENCH_LINES   lines the log task writes (default 300)
#
# Writes the blueprints to target/bench/runs/, the table target/bench/runs.md (also printed) and
# screenshots target/e2e/bench-runs-*.png.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SIZES=(${BENCH_SIZES:-1000 10000})

log() { echo "bench_runs: $*" >&2; }

source "$ROOT/scripts/window_bench.sh"
build_for_window orrery-desktop orrery-cli

# The WebDriver client needs no optimisation: only the app and the CLI are release builds. The
# example writes the blueprints (target/bench/runs/timeline_<n>.json) and runs them with the CLI.
log "measuring timelines of ${SIZES[*]} tasks and the log latency"
(cd "$ROOT" && timeout -k 10 1800 cargo run --locked -q -p orrery-desktop --features bench-editor \
    --example bench_runs -- --app "$ROOT/target/release/orrery-desktop" --cli "$ROOT/target/release/orrery" \
    --out "$ROOT/target/bench/runs.md" --shots "$ROOT/target/e2e" --dir "$ROOT/target/bench/runs" \
    --lines "${BENCH_LINES:-300}" "${SIZES[@]}")
log "measuring the error of the time left (about a minute)"
python3 "$ROOT/scripts/bench_eta.py" "$ROOT/target/release/orrery" --out "$ROOT/target/bench/runs.md"
log "table written to target/bench/runs.md"
