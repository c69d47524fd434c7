#!/usr/bin/env bash
# Runs the whole test suite: unit, integration, CLI, the desktop app (its commands, its generated
# TypeScript types, its UI store, and the real window under Xvfb) and the differential tests
# against the reference implementation (installed into target/reference-venv by
# tests/compat/setup_reference.sh).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$ROOT/scripts/setup.sh"
cd "$ROOT"
ORRERY_REFERENCE_PYTHON="$("$ROOT/tests/compat/setup_reference.sh" | tail -n 1)"
export ORRERY_REFERENCE_PYTHON
# Formatting is part of the suite (rustfmt.toml sets the style).
cargo fmt --all -- --check
# The UI's own tests (its store over the in-memory backend); setup.sh type-checked and built it.
(cd ui && npm test --silent)
cargo test --locked --workspace
