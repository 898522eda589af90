# require_tools TOOL:PACKAGE ...: a script a person runs on its own checks, before it starts
# anything, for every tool it needs, and stops naming each missing one with the Debian package
# that brings it (all at once, not the first). A TOOL starting with / is a file pattern
# (/usr/lib/postgresql/*/bin/initdb). Sourced, not run (`. scripts/require.sh`).
require_tools() {
    local entry tool package missing=()
    for entry in "$@"; do
        tool=${entry%%:*}
        package=${entry#*:}
        if [[ $tool == /* ]]; then
            compgen -G "$tool" >/dev/null && continue
        else
            command -v "$tool" >/dev/null && continue
        fi
        missing+=("$tool (apt-get install $package)")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "$(basename "$0"): first install what is missing:" >&2
    printf '  %s\n' "${missing[@]}" >&2
    exit 1
}

# require_herald_build: the benchmarks and the packaging take $HERALD_BIN, or build herald with
# the Swift toolchain (scripts/bench-build.sh).
require_herald_build() {
    if [ -n "${HERALD_BIN:-}" ]; then
        [ -x "$HERALD_BIN" ] || { echo "$(basename "$0"): HERALD_BIN=$HERALD_BIN is not an executable" >&2; exit 1; }
    elif ! command -v swift >/dev/null; then
        echo "$(basename "$0"): needs the Swift toolchain to build herald (https://www.swift.org/install/linux/), or HERALD_BIN=path/to/herald" >&2
        exit 1
    fi
}
