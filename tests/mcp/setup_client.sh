#!/usr/bin/env bash
# Creates (once) the Python venv holding the official MCP Python SDK (`mcp` on PyPI), the real
# client that tests/mcp/client.py drives `orrery mcp` with (crates/orrery-cli/tests/mcp.rs).
#
#   tests/mcp/setup_client.sh            # venv at <repo>/target/mcp-venv
#   ORRERY_MCP_VENV=/some/dir tests/mcp/setup_client.sh
#
# Idempotent: when the venv exists and its stamp file lists exactly the pinned requirements,
# it only prints the path. All progress goes to stderr; the last stdout line is the venv's python.
set -euo pipefail

REQUIREMENTS=(
    "mcp==2.3.0"
)

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_root="$(cd "$script_dir/../.." && pwd)"
venv="${ORRERY_MCP_VENV:-$repo_root/target/mcp-venv}"
stamp="$venv/.orrery-mcp-requirements"
python="$venv/bin/python"
wanted="$(printf '%s\n' "${REQUIREMENTS[@]}")"

log() { echo "setup_client: $*" >&2; }

is_ready() {
    [[ -x "$python" && -f "$stamp" ]] && [[ "$(cat "$stamp")" == "$wanted" ]] \
        && "$python" -c "import mcp.client.stdio, mcp.client.session" >/dev/null 2>&1
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
"$python" -c "import mcp.client.stdio, mcp.client.session" >&2
printf '%s\n' "${REQUIREMENTS[@]}" >"$stamp"
echo "$python"
