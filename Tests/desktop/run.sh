#!/usr/bin/env bash
# Runs Tests/desktop/desktop.py under a virtual X display (Xvfb) and a fresh D-Bus session bus
# (dbus-run-session), where dunst is the notification server.
# Usage: Tests/desktop/run.sh HERALD_BINARY [ARTIFACTS_DIR]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
display=""
for n in $(seq 90 130); do
    if [ ! -e "/tmp/.X11-unix/X$n" ] && [ ! -e "/tmp/.X$n-lock" ]; then display=":$n"; break; fi
done
[ -n "$display" ] || { echo "no free X display number" >&2; exit 1; }
Xvfb "$display" -screen 0 1280x800x24 -nolisten tcp >/dev/null 2>&1 &
xvfb=$!
trap 'kill $xvfb 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do [ -e "/tmp/.X11-unix/X${display#:}" ] && break; sleep 0.05; done
DISPLAY="$display" dbus-run-session -- python3 "$here/desktop.py" "$@"
