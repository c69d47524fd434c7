#!/usr/bin/env bash
# Installs an Orrery .deb on this machine, tries it as a user would and removes it again
# (docs/install.md); run by `scripts/package.sh --check`, which builds the package first.
#
#   tests/package/check.sh target/dist/bundle/deb/orrery_VERSION_amd64.deb [RPM]
#
# It checks, in order: the files the package holds (dpkg-deb -c); lintian's verdict (no error,
# no warning); `apt-get install` of the file; one
# version for the package, `orrery --version` and the app; `orrery validate` of the examples;
# the desktop entry valid (desktop-file-validate) and `*.blueprint.json` files opened with Orrery
# (GIO, as GNOME's file manager asks);
# the app started from its desktop entry's Exec line with only DISPLAY and HOME in its
# environment, running a blueprint whose task needs a tool only the login shell's PATH has
# (src-tauri/examples/check_installed.rs); then `apt-get remove`, after which the user's store is
# still there. A package already installed is replaced. Given the .rpm too, it checks that it holds
# the same files (but the Debian changelog), the same version, and requires WebKitGTK 4.1 (with
# Debian's `rpm` tool: RPMs are not installed here).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
deb="$(realpath "${1:?usage: tests/package/check.sh FILE.deb [FILE.rpm]}")"
rpm_file="${2:+$(realpath "$2")}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
fail() {
    echo "check: FAILED: $*" >&2
    exit 1
}
step() { echo "check: $*" >&2; }

step "the files of $(basename "$deb")"
contents="$(dpkg-deb -c "$deb" | awk '{print $6}' | sed 's#^\./##')"
echo "$contents"
package="$(dpkg-deb -f "$deb" Package)"
version="$(dpkg-deb -f "$deb" Version)"
for f in usr/bin/orrery usr/bin/orrery-desktop usr/share/applications/Orrery.desktop \
    usr/share/mime/packages/orrery.xml usr/share/doc/orrery/copyright usr/share/doc/orrery/changelog.gz \
    usr/share/man/man1/orrery.1.gz usr/share/man/man1/orrery-run.1.gz usr/share/man/man1/orrery-desktop.1.gz; do
    grep -qxF "$f" <<<"$contents" || fail "the package has no $f"
done
for size in 16x16 24x24 32x32 48x48 64x64 128x128 256x256 512x512; do
    f="usr/share/icons/hicolor/$size/apps/orrery-desktop.png"
    grep -qxF "$f" <<<"$contents" || fail "the package has no $f"
done
[ "$version" = "$(cargo metadata --no-deps --format-version 1 --manifest-path "$ROOT/Cargo.toml" |
    python3 -c 'import json,sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"] == "orrery-desktop"))')" ] ||
    fail "the package's version $version is not the workspace's"

if [ -n "$rpm_file" ]; then
    step "the files of $(basename "$rpm_file")"
    if ! command -v rpm >/dev/null; then
        $SUDO apt-get install -y --no-install-recommends -o DPkg::Lock::Timeout=600 rpm >/dev/null
    fi
    in_rpm="$(rpm -qlp "$rpm_file" 2>/dev/null | sed 's#^/##' | sort)"
    in_deb="$(dpkg-deb -c "$deb" | awk '$1 !~ /^d/ {print $6}' | sed 's#^\./##' |
        grep -vx 'usr/share/doc/orrery/changelog.gz' | sort)"
    [ "$in_rpm" = "$in_deb" ] || fail "the .rpm's files differ from the .deb's: $(diff <(echo "$in_deb") <(echo "$in_rpm") || true)"
    [ "$(rpm -qp --queryformat '%{VERSION}' "$rpm_file" 2>/dev/null)" = "$version" ] || fail "the .rpm's version is not $version"
    rpm -qp --requires "$rpm_file" 2>/dev/null | grep -qx 'libwebkit2gtk-4.1.so.0()(64bit)' ||
        fail "the .rpm does not require WebKitGTK 4.1"
fi

step "lintian"
if ! command -v lintian >/dev/null; then
    $SUDO apt-get install -y --no-install-recommends -o DPkg::Lock::Timeout=600 lintian >/dev/null
fi
verdict="$(lintian --no-tag-display-limit "$deb" || true)"
echo "${verdict:-(nothing to say)}"
if grep -q '^[EW]:' <<<"$verdict"; then fail "lintian reports errors or warnings"; fi

step "apt-get install $deb"
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --reinstall -o DPkg::Lock::Timeout=600 "$deb" >/dev/null
said="$(/usr/bin/orrery --version)"
[ "$said" = "orrery $version" ] || fail "orrery --version says '$said', the package is $version"
/usr/bin/orrery validate "$ROOT/examples/assembly.json" "$ROOT/examples/place_element.json"

step "the desktop entry and the file type, as a GLib file manager sees them"
for tool in desktop-file-validate:desktop-file-utils gio:libglib2.0-bin; do
    command -v "${tool%%:*}" >/dev/null ||
        $SUDO apt-get install -y --no-install-recommends -o DPkg::Lock::Timeout=600 "${tool#*:}" >/dev/null
done
desktop-file-validate /usr/share/applications/Orrery.desktop || fail "desktop-file-validate refuses the entry"
probe="$(mktemp -d)"
echo '{}' >"$probe/some.blueprint.json"
type="$(gio info -a standard::content-type "$probe/some.blueprint.json" | sed -n 's/.*content-type: //p')"
[ "$type" = application/x-orrery-blueprint ] || fail "a *.blueprint.json file is $type, not application/x-orrery-blueprint"
gio mime application/x-orrery-blueprint | grep -q 'Default application.*: Orrery.desktop' ||
    fail "Orrery does not open blueprint files: $(gio mime application/x-orrery-blueprint)"
rm -rf "$probe"

step "the app, started from its desktop entry with only DISPLAY and HOME"
home="$(mktemp -d /tmp/orrery-home.XXXXXX)"
(cd "$ROOT" && cargo run --locked -q -p orrery-desktop --features package-check --example check_installed -- \
    /usr/share/applications/Orrery.desktop "$home")
store="$home/.local/share/orrery/orrery.db"
[ -f "$store" ] || fail "the app kept no store at $store"

step "apt-get remove $package: the user's store stays"
DEBIAN_FRONTEND=noninteractive $SUDO apt-get remove -y -o DPkg::Lock::Timeout=600 "$package" >/dev/null
[ ! -e /usr/bin/orrery-desktop ] || fail "/usr/bin/orrery-desktop is still there after the removal"
[ -f "$store" ] || fail "removing the package took the user's store $store"
/usr/bin/env -u ORRERY_DB "$ROOT/target/dist/orrery" sessions --db "$store" | head -5
rm -rf "$home"
step "passed"
