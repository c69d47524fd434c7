#!/usr/bin/env bash
# The engine benchmark (issue 3): Orrery runs three DAGs of 1,000 `shell.run` tasks of `true`
# (chain; fan-out between one root and one join; layers of 10 fully connected to the next) with
# parallelism 2 and, in the same run, ninja and make run the same DAGs (each node runs `true`
# and touches a stamp). Median of 3 runs each; Orrery's peak RSS through /usr/bin/time. The
# "before" column is OLD_ORRERY when given (a build from before a change, timed in the same
# run), else the same binary with ORRERY_SPAWNER=off: the engine forks each task's supervisor
# itself, as it did before the spawner.
#
#   scripts/bench_engine.sh [OLD_ORRERY]
#
# Environment:
#   BENCH_TASKS     tasks per shape (default 1000)
#   BENCH_RUNS      runs per tool and shape (default 3)
#   BENCH_PARALLEL  parallelism of every tool (default 2)
#   BENCH_SHAPES    comma-separated subset of chain,fanout,layers
#
# Writes target/bench/engine/<shape>/{blueprint.json,build.ninja,Makefile}, the raw results
# target/bench/engine/engine.json and the table target/bench/engine.md (also printed).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="$ROOT/target/bench/engine"

log() { echo "bench_engine: $*" >&2; }

missing=()
for pkg in ninja-build make time; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if (( ${#missing[@]} )); then
    log "installing ${missing[*]}"
    SUDO=(); [[ "$(id -u)" == 0 ]] || SUDO=(sudo)
    "${SUDO[@]}" apt-get -o DPkg::Lock::Timeout=600 update -qq
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq "${missing[@]}" >/dev/null
fi

log "building orrery (release)"
(cd "$ROOT" && cargo build --release -q -p orrery-cli)

PY="$(command -v python3 || echo /usr/bin/python3)"
mkdir -p "$OUT"
"$PY" "$ROOT/crates/orrery-bench/py/engine_bench.py" "$OUT" "$ROOT/target/release/orrery" \
    --tasks "${BENCH_TASKS:-1000}" --runs "${BENCH_RUNS:-3}" --parallel "${BENCH_PARALLEL:-2}" \
    --shapes "${BENCH_SHAPES:-chain,fanout,layers}" ${1:+--before "$1"}
cp "$OUT/engine.md" "$ROOT/target/bench/engine.md"
log "table written to target/bench/engine.md"
