#!/usr/bin/env bash
# Creates (once) the Python venv holding the reference implementation of the blueprint format:
# antikythera-sdk (gramaziokohler/antikythera), the asteval version it evaluates conditions with,
# and the Redis client its orchestrator stores sessions with (the parity test runs it for real:
# tests/compat/parity/run_reference.py); the `deployment` extra brings its HTTP server
# (FastAPI on uvicorn), which the publish test stands up (tests/compat/server/serve_reference.py).
#
#   tests/compat/setup_reference.sh            # venv at <repo>/target/reference-venv
#   ORRERY_REFERENCE_VENV=/some/dir tests/compat/setup_reference.sh
#
# Idempotent: when the venv exists and its stamp file lists exactly the pinned requirements,
# it only prints the path. All progress goes to stderr; the last stdout line is the venv's python.
set -euo pipefail

REQUIREMENTS=(
    "antikythera-sdk[deployment]==0.5.1"
    "asteval==1.0.10"
    "redis==7.0.1"
)

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_root="$(cd "$script_dir/../.." && pwd)"
# shellcheck source=../pinned_venv.sh
source "$repo_root/tests/pinned_venv.sh"
venv="${ORRERY_REFERENCE_VENV:-$repo_root/target/reference-venv}"
pinned_venv setup_reference "$venv" "$venv/.orrery-reference-requirements" \
    "antikythera.io, antikythera_orchestrator.api, asteval, redis, uvicorn" "${REQUIREMENTS[@]}"
