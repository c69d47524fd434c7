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
venv="${ORRERY_REFERENCE_VENV:-$repo_root/target/reference-venv}"
stamp="$venv/.orrery-reference-requirements"
python="$venv/bin/python"
wanted="$(printf '%s\n' "${REQUIREMENTS[@]}")"

log() { echo "setup_reference: $*" >&2; }

is_ready() {
    [[ -x "$python" && -f "$stamp" ]] && [[ "$(cat "$stamp")" == "$wanted" ]] \
        && "$python" -c "import antikythera.io, antikythera_orchestrator.api, asteval, redis, uvicorn" >/dev/null 2>&1
}

if is_ready; then
    echo "$python"
    exit 0
fi

mkdir -p "$(dirname "$venv")"
# Two test runs may call this at once: serialise on a lock file next to the venv.
if command -v flock >/dev/null 2>&1; then
    exec 9>"$venv.lock"
    flock 9
    if is_ready; then
        echo "$python"
        exit 0
    fi
fi

as_root() {
    if [[ "$(id -u)" == "0" ]]; then "$@"; else sudo "$@"; fi
}

make_venv() {
    rm -rf "$venv"
    python3 -m venv "$venv" >&2
}

if [[ ! -x "$python" ]] || ! "$python" -m pip --version >/dev/null 2>&1; then
    command -v python3 >/dev/null 2>&1 || { log "python3 is not installed"; exit 1; }
    if ! make_venv; then
        log "python3 -m venv failed; installing Debian's python3-venv"
        as_root apt-get -o DPkg::Lock::Timeout=600 update >&2
        as_root env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 \
            install -y python3-venv >&2
        make_venv
    fi
fi

log "installing ${REQUIREMENTS[*]} into $venv"
rm -f "$stamp"
"$python" -m pip install --disable-pip-version-check --no-input -q "${REQUIREMENTS[@]}" >&2
"$python" -c "import antikythera.io, antikythera_orchestrator.api, asteval, redis, uvicorn" >&2
printf '%s\n' "${REQUIREMENTS[@]}" >"$stamp"
echo "$python"
