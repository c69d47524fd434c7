#!/usr/bin/env bash
# Starts Orrery's main job. Until the desktop app lands this builds the `orrery` CLI and runs it
# on the examples: a validation report, the graph of the first example, and a run of it (stored
# in the user's task store, or in $ORRERY_DB when set).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$ROOT/scripts/setup.sh"
cd "$ROOT"
cargo build --locked --release -p orrery-cli
ORRERY="$ROOT/target/release/orrery"
echo "== orrery validate examples/*.json"
"$ORRERY" validate examples/*.json && echo "all examples are valid"
echo
echo "== orrery graph --format mermaid examples/assembly.json"
"$ORRERY" graph --format mermaid examples/assembly.json
echo
echo "== orrery run examples/assembly.json"
"$ORRERY" run ${ORRERY_DB:+--db "$ORRERY_DB"} examples/assembly.json
echo
echo "The CLI is at $ORRERY; try '$ORRERY --help'."
