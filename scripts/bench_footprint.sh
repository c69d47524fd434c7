#!/usr/bin/env bash
# The footprint benchmark (issue 22): the release app started on a small blueprint in a real
# WebKitGTK window under Xvfb, driven over WebDriver (tauri-driver): time from start to
# interactive (median of 5 launches) and, after 10 s idle, the memory of each of its processes
# (backend, WebKit's web and network processes: RSS, PSS, anonymous, and the mappings that hold
# the most). In the same run, as variants beside the app as it is: the login shell not asked
# (SHELL=/bin/false: what asking it costs at start), WebKit compositing (WebKitGTK 2.50 reads
# WEBKIT_DISABLE_COMPOSITING_MODE=0 as compositing on), and WebKit painting with Skia on the GPU
# path and compositing (WebKit's own choice; without a GPU the app asks for the CPU and no
# compositing, docs/desktop.md).
#
#   scripts/bench_footprint.sh [BLUEPRINT]      # default examples/assembly.json
#
# Environment:
#   BENCH_RUNS   launches per variant (default 5)
#   BENCH_IDLE   seconds idle before the memory is read (default 10)
#
# Writes the table target/bench/footprint.md (also printed).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BLUEPRINT="${1:-$ROOT/examples/assembly.json}"

log() { echo "bench_footprint: $*" >&2; }

source "$ROOT/scripts/window_bench.sh"
build_for_window orrery-desktop

# The WebDriver client needs no optimisation: only the app is a release build.
(cd "$ROOT" && timeout -k 10 1200 cargo run --locked -q -p orrery-desktop --features bench-editor \
    --example bench_footprint -- --app "$ROOT/target/release/orrery-desktop" \
    --out "$ROOT/target/bench/footprint.md" --runs "${BENCH_RUNS:-5}" --idle "${BENCH_IDLE:-10}" \
    --variant "login shell not asked:SHELL=/bin/false" \
    --variant "composited:WEBKIT_DISABLE_COMPOSITING_MODE=0" \
    --variant "painted on the GPU path, composited:WEBKIT_SKIA_ENABLE_CPU_RENDERING=0,WEBKIT_DISABLE_COMPOSITING_MODE=0" \
    "$BLUEPRINT")
log "table written to target/bench/footprint.md"
