#!/usr/bin/env bash
# Prints the path of a release-built `herald` for the benchmark scripts: $HERALD_BIN when set
# (scripts/bench.sh builds once and sets it), otherwise builds release first.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -n "${HERALD_BIN:-}" ]; then echo "$HERALD_BIN"; exit 0; fi
swift build -c release --product herald >&2
echo "$(swift build -c release --show-bin-path)/herald"
