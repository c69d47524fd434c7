#!/usr/bin/env bash
# Creates (once) the Python venv holding the official MCP Python SDK (`mcp` on PyPI), the real
# client that tests/mcp/client.py drives `orrery mcp` with (crates/orrery-cli/tests/suites.rs).
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
# shellcheck source=../pinned_venv.sh
source "$repo_root/tests/pinned_venv.sh"
venv="${ORRERY_MCP_VENV:-$repo_root/target/mcp-venv}"
pinned_venv setup_client "$venv" "$venv/.orrery-mcp-requirements" "mcp.client.stdio, mcp.client.session" \
    "${REQUIREMENTS[@]}"
