#!/usr/bin/env bash
# The editor benchmark (issue 5): the release app opens generated blueprints of 200 (the
# baseline) and 2,000 tasks in a real WebKitGTK window under Xvfb, driven over WebDriver
# (tauri-driver). For each: time to interactive, auto-layout, and frame times while panning and
# while dragging a node; ratios 2000/200 beside the absolute figures. Then the same for a dense
# blueprint: 2,122 tasks in fully connected layers of 8 (16,912 dependencies).
#
#   scripts/bench_editor.sh
#
# Environment:
#   BENCH_SIZES   space-separated task counts, the first is the baseline (default "200 2000")
#   BENCH_SEED    the generator's seed (default 1)
#   BENCH_DENSE   TASKS:WIDTH of the dense blueprint (default 2122:8; empty: none)
#
# Writes target/bench/editor/<n>/{blueprint.json,inner.json} and dense/blueprint.json, the table
# target/bench/editor.md (also printed) and a screenshot per blueprint, target/e2e/editor-<n>.png.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="$ROOT/target/bench/editor"
SIZES=(${BENCH_SIZES:-200 2000})

log() { echo "bench_editor: $*" >&2; }

source "$ROOT/scripts/window_bench.sh"
build_for_window orrery-desktop orrery-bench

files=()
for n in "${SIZES[@]}"; do
    mkdir -p "$OUT/$n"
    "$ROOT/target/release/gen_blueprint" "$n" "$OUT/$n/blueprint.json" --seed "${BENCH_SEED:-1}" \
        --inner "$OUT/$n/inner.json"
    files+=("$OUT/$n/blueprint.json")
done
dense="${BENCH_DENSE-2122:8}"
if [[ -n "$dense" ]]; then
    mkdir -p "$OUT/dense"
    "$ROOT/target/release/gen_blueprint" "${dense%%:*}" "$OUT/dense/blueprint.json" --dense "${dense##*:}"
    files+=("$OUT/dense/blueprint.json")
fi

# The WebDriver client needs no optimisation: only the app is a release build.
log "measuring ${SIZES[*]} tasks${dense:+, and $dense (tasks:width) dense}"
(cd "$ROOT" && timeout -k 10 1200 cargo run --locked -q -p orrery-desktop --features bench-editor \
    --example bench_editor -- --app "$ROOT/target/release/orrery-desktop" \
    --out "$ROOT/target/bench/editor.md" --shots "$ROOT/target/e2e" "${files[@]}")
log "table written to target/bench/editor.md"
