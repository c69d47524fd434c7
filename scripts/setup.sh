#!/usr/bin/env bash
# Installs what Orrery needs to build and test, and nothing twice: Debian packages through apt
# (with sudo when not root) only when missing, then Rust dependencies. Safe to run again.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# Build: a C toolchain for bundled C code (SQLite, mimalloc); python3-venv for the reference oracle
# used by the tests; e2fsprogs (chattr) for the store's read-only tests when run as root;
# redis-server and mosquitto for the parity test, which runs the reference orchestrator for real
# (tests/compat/parity/run_reference.py starts both on loopback and stops them; the Debian
# services they come with are not used).
PACKAGES=(build-essential pkg-config ca-certificates python3 python3-venv e2fsprogs redis-server mosquitto)
# The desktop app (src-tauri): WebKitGTK and the libraries Tauri links; for its end-to-end test
# and screenshots an X server (Xvfb, xauth), WebKitWebDriver (webkit2gtk-driver), xdotool and
# x11-utils; ImageMagick draws the icons (icons/generate.sh).
PACKAGES+=(libwebkit2gtk-4.1-dev libxdo-dev libayatana-appindicator3-dev librsvg2-dev
    xvfb xauth webkit2gtk-driver xdotool xclip imagemagick x11-utils)

missing=()
for p in "${PACKAGES[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
    echo "setup: installing ${missing[*]}" >&2
    $SUDO apt-get update -o DPkg::Lock::Timeout=600
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends \
        -o DPkg::Lock::Timeout=600 "${missing[@]}"
fi

if ! command -v cargo >/dev/null 2>&1; then
    echo "setup: cargo is not on PATH; install Rust (rustup) first" >&2
    exit 1
fi

cd "$ROOT"
cargo fetch --locked >/dev/null

# tauri-driver bridges WebDriver to WebKitWebDriver for the desktop app's end-to-end test.
if ! command -v tauri-driver >/dev/null 2>&1; then
    echo "setup: installing tauri-driver" >&2
    cargo install tauri-driver --version 2.1.0 --locked
fi

# The web view (ui/): its packages, then its build, which `cargo build` embeds in the app and
# so must exist before src-tauri compiles. `npm run build` type-checks first (tsc).
if ! command -v npm >/dev/null 2>&1; then
    echo "setup: npm is not on PATH; install Node.js 20 or newer first" >&2
    exit 1
fi
if [ ! -f ui/node_modules/.package-lock.json ] || [ ui/package-lock.json -nt ui/node_modules/.package-lock.json ]; then
    echo "setup: installing the UI's packages (npm ci)" >&2
    (cd ui && npm ci --no-audit --no-fund)
fi
# Only when a source is newer than the last build: a new ui/dist makes cargo rebuild the app.
if [ ! -f ui/dist/index.html ] || [ -n "$(find ui/src ui/index.html ui/package.json ui/package-lock.json \
    ui/vite.config.ts ui/tsconfig.json -newer ui/dist/index.html -print -quit)" ]; then
    (cd ui && npm run --silent build >/dev/null)
fi
