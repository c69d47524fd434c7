# Shared by the benchmarks in the app's real window (bench_editor.sh, bench_runs.sh,
# bench_footprint.sh), sourced once ROOT and log are defined: checks the window tools and builds
# the UI and the release builds of the packages given.
#
#   build_for_window orrery-desktop [orrery-cli ...]

build_for_window() {
    local tool packages=()
    for tool in Xvfb tauri-driver WebKitWebDriver; do
        command -v "$tool" >/dev/null || { log "$tool is missing: run scripts/setup.sh"; exit 1; }
    done
    for tool in "$@"; do packages+=(-p "$tool"); done
    log "building the UI and the release builds of $*"
    (cd "$ROOT/ui" && { [[ -d node_modules ]] || npm ci --no-audit --no-fund; } && npm run build --silent >/dev/null)
    (cd "$ROOT" && cargo build --release --locked -q "${packages[@]}")
}
