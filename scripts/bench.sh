#!/usr/bin/env bash
# Benchmarks Orrery's blueprint loading and validation against Python's json.load and the
# reference implementation (antikythera-sdk 0.5.1), on generated blueprints.
#
#   scripts/bench.sh                 # sizes 1000 10000 50000 100000
#   scripts/bench.sh 10000 100000    # chosen sizes (tasks)
#
# Environment:
#   BENCH_RUNS          Orrery runs per measure (default 9; 5 from 50k tasks up)
#   BENCH_JSON_RUNS     Python json.load runs (default 7)
#   BENCH_REF_RUNS      reference runs (default 3)
#   BENCH_REF_BUDGET    seconds: after a reference run, stop once the runs so far took longer
#                       (default 600; the reference's scope checks are quadratic)
#   BENCH_REF_CHECK_MAX largest size also checked with the reference's full loader
#                       (BlueprintJsonSerializer.from_file: schema + validate + check_dataflow;
#                       default 10000)
#   BENCH_REF_MAX       largest size the reference is timed at (default: all; json.load is
#                       still timed above it). One reference run takes ~3 s at 10k tasks,
#                       ~2-3 min at 50k and ~13-16 min at 100k on a 2-core machine.
#   BENCH_NO_REFERENCE=1  skip the Python side
#   BENCH_REPORT_ONLY=1   only rebuild the table from the results already in target/bench
#
# Writes target/bench/bp_N.json (+ inner.json, the blueprint the composites call), the raw
# results orrery_N.json / python_N.json, and the table in target/bench/report.md.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="$ROOT/target/bench"
BIN="$ROOT/target/release"
PYDIR="$ROOT/crates/orrery-bench/py"
SIZES=("$@")
[[ ${#SIZES[@]} -gt 0 ]] || SIZES=(1000 10000 50000 100000)
JSON_RUNS="${BENCH_JSON_RUNS:-7}"
REF_RUNS="${BENCH_REF_RUNS:-3}"
REF_BUDGET="${BENCH_REF_BUDGET:-600}"
REF_CHECK_MAX="${BENCH_REF_CHECK_MAX:-10000}"

log() { echo "bench: $*" >&2; }

mkdir -p "$OUT"
if [[ "${BENCH_REPORT_ONLY:-}" == "1" ]]; then
    python3 "$PYDIR/report.py" "$OUT" "${SIZES[@]}"
    exit 0
fi
if [[ "${BENCH_NO_REFERENCE:-}" != "1" ]]; then
    PY="$("$ROOT/tests/compat/setup_reference.sh" | tail -n 1)"
fi
log "building the release binaries"
(cd "$ROOT" && cargo build --release -q -p orrery-bench --bins)

for n in "${SIZES[@]}"; do
    file="$OUT/bp_$n.json"
    log "$n tasks: generating $file"
    "$BIN/gen_blueprint" "$n" "$file" --inner "$OUT/inner.json" --stats >"$OUT/stats_$n.json"

    runs="${BENCH_RUNS:-}"
    [[ -n "$runs" ]] || { if (( n >= 50000 )); then runs=5; else runs=9; fi; }
    log "$n tasks: Orrery verdict and timings ($runs runs)"
    # Exits 3 when Orrery finds an error or the reference server would refuse the file.
    "$BIN/bench_validate" "$file" --library "$OUT/inner.json" --runs "$runs" --json \
        --only load --only validate --only read_load_validate >"$OUT/orrery_$n.json"

    if [[ "${BENCH_NO_REFERENCE:-}" != "1" ]]; then
        if (( n <= REF_CHECK_MAX )); then
            log "$n tasks: reference verdict (from_file + check_dataflow)"
            "$PY" "$PYDIR/ref_bench.py" check "$file" "$OUT/inner.json" >"$OUT/refcheck_$n.json" \
                || { log "the reference refuses $file:"; cat "$OUT/refcheck_$n.json" >&2; exit 1; }
        fi
        ref_runs="$REF_RUNS"
        if [[ -n "${BENCH_REF_MAX:-}" ]] && (( n > BENCH_REF_MAX )); then ref_runs=0; fi
        log "$n tasks: Python json.load ($JSON_RUNS runs) and the reference (up to $ref_runs runs, budget ${REF_BUDGET}s)"
        "$PY" "$PYDIR/ref_bench.py" time "$file" --json-runs "$JSON_RUNS" --ref-runs "$ref_runs" \
            --ref-budget "$REF_BUDGET" >"$OUT/python_$n.json"
    fi
done

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores" >"$OUT/machine.txt"
python3 "$PYDIR/report.py" "$OUT" "${SIZES[@]}"
echo "(load average at the end: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores; report in target/bench/report.md)"
