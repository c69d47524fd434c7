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
