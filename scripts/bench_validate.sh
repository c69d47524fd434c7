#!/usr/bin/env bash
# The `orrery validate` benchmark (issue 22): the process a user runs on a large generated
# blueprint, with many warnings, with the same warnings on one line, and on the file without
# them, against Python's json.load of each file in the same run: wall time, peak RSS, ratios.
#
#   scripts/bench_validate.sh [OLD_ORRERY]    # OLD_ORRERY: a build from before a change, timed too
#
# Environment:
#   BENCH_TASKS    tasks of the generated blueprints (default 100000: about 70 MB)
#   BENCH_RUNS     runs per file and build (default 3)
#   BENCH_TIMEOUT  seconds after which a run is stopped and reported as such (default 120)
#
# Writes the files and validate.json to target/bench/validate/ and the table to
# target/bench/validate.md (also printed).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="$ROOT/target/bench/validate"

dpkg -s time >/dev/null 2>&1 || {
    SUDO=(); [[ "$(id -u)" == 0 ]] || SUDO=(sudo)
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq time >/dev/null
}
echo "bench_validate: building orrery and gen_blueprint (release)" >&2
(cd "$ROOT" && cargo build --release -q -p orrery-cli -p orrery-bench --bins)
before=()
if [[ $# -gt 0 ]]; then before=(--before "$1"); fi
python3 "$ROOT/crates/orrery-bench/py/validate_bench.py" "$OUT" "$ROOT/target/release/gen_blueprint" \
    "$ROOT/target/release/orrery" "${before[@]}" --tasks "${BENCH_TASKS:-100000}" \
    --runs "${BENCH_RUNS:-3}" --timeout "${BENCH_TIMEOUT:-120}"
cp "$OUT/validate.md" "$ROOT/target/bench/validate.md"
