#!/usr/bin/env bash
# The folder benchmark (issue 22): `orrery run` of a one-task blueprint, and the editor's check of
# it in its folder, alone in its folder and beside ~63 MB of other blueprint files it does not
# call; wall time and peak RSS, the lone folder as the baseline of the same run.
#
#   scripts/bench_folder.sh [OLD_ORRERY]    # OLD_ORRERY: a build from before a change, timed too
#
# Environment:
#   BENCH_RUNS   runs per command and folder (default 5)
#   BENCH_SIZES  tasks of the other blueprints (default 50000,20000,10000,10000: 63 MB)
#
# Writes target/bench/folder/{alone,crowded}/, the raw results folder.json and the table
# target/bench/folder.md (also printed).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="$ROOT/target/bench/folder"

dpkg -s time >/dev/null 2>&1 || {
    SUDO=(); [[ "$(id -u)" == 0 ]] || SUDO=(sudo)
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq time >/dev/null
}
echo "bench_folder: building orrery and gen_blueprint (release)" >&2
(cd "$ROOT" && cargo build --release -q -p orrery-cli -p orrery-bench --bins)
mkdir -p "$OUT"
before=()
if [[ $# -gt 0 ]]; then before=(--before "$1"); fi
python3 "$ROOT/crates/orrery-bench/py/folder_bench.py" "$OUT" "$ROOT/target/release/gen_blueprint" \
    "$ROOT/target/release/orrery" "${before[@]}" --runs "${BENCH_RUNS:-5}" \
    --sizes "${BENCH_SIZES:-50000,20000,10000,10000}"
cp "$OUT/folder.md" "$ROOT/target/bench/folder.md"
