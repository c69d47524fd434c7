#!/usr/bin/env bash
# Starts Orrery's main job: the desktop app, on the user's task store (or $ORRERY_DB), with
# the blueprint given as argument open (by default the example examples/assembly.json).
# Installs what it needs first (scripts/setup.sh), then builds the app in release mode.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$ROOT/scripts/setup.sh"
cd "$ROOT"
cargo build --locked --release -p orrery-desktop -p orrery-cli
if [ -z "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
    echo "run.sh: there is no display (DISPLAY and WAYLAND_DISPLAY are unset), and the desktop app needs one." >&2
    echo "run.sh: on a machine without one: xvfb-run -a ./scripts/run.sh; the command line is $ROOT/target/release/orrery" >&2
    exit 1
fi
if [ "$#" -eq 0 ]; then
    set -- "$ROOT/examples/assembly.json"
fi
echo "run.sh: starting the desktop app ($ROOT/target/release/orrery-desktop $*)" >&2
exec "$ROOT/target/release/orrery-desktop" "$@"
