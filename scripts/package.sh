#!/usr/bin/env bash
# Builds Orrery's Linux packages with the Tauri bundler (docs/install.md):
#
#   target/release/bundle/deb/orrery_VERSION_amd64.deb
#   target/release/bundle/rpm/orrery-VERSION-1.x86_64.rpm
#
# Each holds the desktop app (/usr/bin/orrery-desktop, its desktop entry, its icons in the hicolor
# sizes, the blueprint file type) and the command line (/usr/bin/orrery), at the workspace's
# version. Installs what it needs first (scripts/setup.sh, and the pinned tauri-cli from
# crates.io); bundling fetches nothing else.
#
#   scripts/package.sh            # build both packages
#   scripts/package.sh --check    # then install the .deb on this machine, try it as a user
#                                 # would (tests/package/check.sh) and remove it again
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TAURI_CLI_VERSION=2.12.4
check=false
case "${1:-}" in
    "") ;;
    --check) check=true ;;
    *) echo "usage: scripts/package.sh [--check]" >&2; exit 2 ;;
esac

"$ROOT/scripts/setup.sh"
if [ "$(cargo tauri --version 2>/dev/null || true)" != "tauri-cli $TAURI_CLI_VERSION" ]; then
    echo "package: installing tauri-cli $TAURI_CLI_VERSION" >&2
    cargo install tauri-cli --version "$TAURI_CLI_VERSION" --locked
fi
cd "$ROOT"
# The command line goes into the packages beside the app (tauri.bundle.conf.json's `files`).
cargo build --locked --release -p orrery-cli
rm -rf target/release/bundle
(cd src-tauri && cargo tauri build --ci --bundles deb,rpm --config tauri.bundle.conf.json -- --locked)
ls -l target/release/bundle/deb/*.deb target/release/bundle/rpm/*.rpm
if $check; then
    "$ROOT/tests/package/check.sh" target/release/bundle/deb/*.deb
fi
