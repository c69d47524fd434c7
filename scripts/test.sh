#!/usr/bin/env bash
# Runs the whole test suite: unit, integration, CLI, the desktop app (its commands, its generated
# TypeScript types, its UI store, and the real window under Xvfb) and the differential tests
# against the reference implementation (installed into target/reference-venv by
# tests/compat/setup_reference.sh).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$ROOT/scripts/setup.sh"
cd "$ROOT"
# A first build of the tests takes about 16 GB under target/; with less room it stops midway on a
# compiler's "No space left on device", so a short disk is said first.
target="${CARGO_TARGET_DIR:-$ROOT/target}"
[ -d "$target" ] || target="$ROOT"
free_gb="$(df -Pk "$target" 2>/dev/null | awk 'NR == 2 { print int($4 / 1048576) }' || true)"
if [ -n "$free_gb" ] && [ "$free_gb" -lt 20 ]; then
    echo "test: only $free_gb GB free for target/; a first build of the tests takes about 16 GB" \
        "(rm -rf target/debug/incremental gives back the incremental caches)" >&2
fi
# The design lives in the repository (docs/): no tracked file may refer to notes outside it.
# The bracketed letters keep the pattern from matching this line itself.
outside='\.\./share[d]\|share[d]/guide\|share[d]/reference\|COMPA[T]\.md\|ARCHITECTUR[E]\.md'
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    found="$(git ls-files -z -- . ':(exclude,glob)**/node_modules/**' \
        ':(exclude,glob)target/**' | xargs -0 -r grep -In -- "$outside" 2>/dev/null || true)"
else
    found="$(grep -rIn --exclude-dir=node_modules --exclude-dir=target --exclude-dir=.git \
        -- "$outside" . || true)"
fi
if [ -n "$found" ]; then
    echo "test: these lines refer to notes outside the repository; cite docs/ instead:" >&2
    echo "$found" >&2
    exit 1
fi
ORRERY_REFERENCE_PYTHON="$("$ROOT/tests/compat/setup_reference.sh" | tail -n 1)"
export ORRERY_REFERENCE_PYTHON
ORRERY_MCP_PYTHON="$("$ROOT/tests/mcp/setup_client.sh" | tail -n 1)"
export ORRERY_MCP_PYTHON
# Formatting is part of the suite (rustfmt.toml sets the style).
cargo fmt --all -- --check
# The UI's own tests (its store over the in-memory backend); setup.sh type-checked and built it.
(cd ui && npm test --silent)
cargo test --locked --workspace
