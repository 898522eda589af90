#!/usr/bin/env bash
# The whole test suite: every Swift test (unit, in-process gateway over real sockets, the CLI as
# child processes), then the independent-client compatibility checks (curl, Python httpx).
set -euo pipefail
cd "$(dirname "$0")/.."

swift build --build-tests
swift test --skip-build
python3 Tests/compat/compat.py "$(swift build --show-bin-path)/herald"
