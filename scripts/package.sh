#!/usr/bin/env bash
# Builds Orrery's Linux packages with the Tauri bundler (docs/install.md):
#
#   target/dist/bundle/deb/orrery_VERSION_amd64.deb
#   target/dist/bundle/rpm/orrery-VERSION-1.x86_64.rpm
#
# Each holds the desktop app (/usr/bin/orrery-desktop, its desktop entry, its icons in the hicolor
# sizes, the blueprint file type) and the command line (/usr/bin/orrery), at the workspace's
# version. Installs what it needs first (scripts/setup.sh, and the pinned tauri-cli from
# crates.io); bundling fetches nothing else.
#
#   scripts/package.sh            # build both packages
#   scripts/package.sh --install  # then install the .deb on this machine (apt-get, with sudo
#                                 # when not root)
#   scripts/package.sh --check    # or install the .deb, try it as a user would
#                                 # (tests/package/check.sh) and remove it again
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TAURI_CLI_VERSION=2.12.4
after=""
case "${1:-}" in
    "") ;;
    --install | --check) after="$1" ;;
    *) echo "usage: scripts/package.sh [--install | --check]" >&2; exit 2 ;;
esac

"$ROOT/scripts/setup.sh"
if [ "$(cargo tauri --version 2>/dev/null || true)" != "tauri-cli $TAURI_CLI_VERSION" ]; then
    echo "package: installing tauri-cli $TAURI_CLI_VERSION" >&2
    cargo install tauri-cli --version "$TAURI_CLI_VERSION" --locked
fi
cd "$ROOT"
# The `dist` profile (Cargo.toml): release, stripped, in target/dist. The command line goes into
# the packages beside the app (tauri.bundle.conf.json's `files`), with the changelog of this
# build (one entry: the version, the commit, its date; gzip -n for the same bytes every time).
cargo build --locked --profile dist -p orrery-cli
version="$(./target/dist/orrery --version | cut -d' ' -f2)"
mkdir -p target/dist/package
{
    echo "orrery ($version) unstable; urgency=medium"
    echo
    echo "  * Built from commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown) of the Orrery workspace."
    echo
    echo " -- Orrery maintainers <maintainers@orrery.example>  $(git log -1 --format=%aD 2>/dev/null || date -R)"
} | gzip -9n >target/dist/package/changelog.gz
# The manual pages: orrery's from its own definitions (one per command, as --help says them),
# orrery-desktop's as written; compressed as Debian's policy asks.
rm -rf target/dist/package/man1
cargo run --locked --profile dist -p orrery-cli --example man -- target/dist/package/man1
cp src-tauri/linux/orrery-desktop.1 target/dist/package/man1/
gzip -9n target/dist/package/man1/*.1
rm -rf target/dist/bundle
(cd src-tauri && cargo tauri build --ci --bundles deb,rpm --config tauri.bundle.conf.json -- --locked --profile dist)
# Debian's and Fedora's file names: the package's name in lower case.
mv target/dist/bundle/deb/*.deb "target/dist/bundle/deb/orrery_${version}_amd64.deb"
mv target/dist/bundle/rpm/*.rpm "target/dist/bundle/rpm/orrery-${version}-1.x86_64.rpm"
ls -l target/dist/bundle/deb/*.deb target/dist/bundle/rpm/*.rpm
deb="$ROOT/target/dist/bundle/deb/orrery_${version}_amd64.deb"
case "$after" in
    --check) "$ROOT/tests/package/check.sh" "$deb" "$ROOT/target/dist/bundle/rpm/orrery-${version}-1.x86_64.rpm" ;;
    --install)
        SUDO=""
        if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --reinstall -o DPkg::Lock::Timeout=600 "$deb"
        echo "package: installed: orrery-desktop (Orrery in the application list) and orrery on the PATH" >&2
        ;;
esac
