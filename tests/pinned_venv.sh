# Sourced by the setup scripts of the test venvs (tests/compat/setup_reference.sh,
# tests/mcp/setup_client.sh): `pinned_venv NAME VENV STAMP IMPORTS REQUIREMENT...` makes (once)
# the venv VENV holding exactly the pinned REQUIREMENTs and prints its python.
#
# Idempotent: when the venv exists, its stamp file STAMP lists exactly the requirements and the
# modules IMPORTS (a comma-separated Python import list) load, it only prints the path. Two runs
# at once serialise on a lock file next to the venv. A missing `python3 -m venv` is installed
# from Debian (python3-venv). All progress goes to stderr; the last stdout line is the python.
pinned_venv() {
    local name="$1" venv="$2" stamp="$3" imports="$4"
    shift 4
    local python="$venv/bin/python"
    local wanted
    wanted="$(printf '%s\n' "$@")"
    log() { echo "$name: $*" >&2; }
    is_ready() {
        [[ -x "$python" && -f "$stamp" ]] && [[ "$(cat "$stamp")" == "$wanted" ]] \
            && "$python" -c "import $imports" >/dev/null 2>&1
    }
    if is_ready; then
        echo "$python"
        return 0
    fi
    mkdir -p "$(dirname "$venv")"
    if command -v flock >/dev/null 2>&1; then
        exec 9>"$venv.lock"
        flock 9
        if is_ready; then
            echo "$python"
            return 0
        fi
    fi
    as_root() {
        if [[ "$(id -u)" == "0" ]]; then "$@"; else sudo "$@"; fi
    }
    make_venv() {
        rm -rf "$venv"
        python3 -m venv "$venv" >&2
    }
    if [[ ! -x "$python" ]] || ! "$python" -m pip --version >/dev/null 2>&1; then
        command -v python3 >/dev/null 2>&1 || { log "python3 is not installed"; return 1; }
        if ! make_venv; then
            log "python3 -m venv failed; installing Debian's python3-venv"
            as_root apt-get -o DPkg::Lock::Timeout=600 update >&2
            as_root env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 \
                install -y python3-venv >&2
            make_venv
        fi
    fi
    log "installing $* into $venv"
    rm -f "$stamp"
    "$python" -m pip install --disable-pip-version-check --no-input -q "$@" >&2
    "$python" -c "import $imports" >&2
    printf '%s\n' "$@" >"$stamp"
    echo "$python"
}
