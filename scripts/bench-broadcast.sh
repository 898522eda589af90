#!/usr/bin/env bash
# Broadcast benchmark (docs/benchmarks.md): DEVICES devices connected to a release-built gateway,
# each subscribed to one channel; the time until the last has one broadcast, against the same
# fan-out sent as one push per device (the baseline, in the same run).
#
#   scripts/bench-broadcast.sh [DEVICES]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-common.sh
require_tools python3:python3
require_herald_build
DEVICES=${1:-10000}

# 10,000 devices need 10,000 sockets on each side.
ulimit -n "$(ulimit -Hn)"
HERALD=$(scripts/bench-build.sh)
WORK=$(mktemp -d /tmp/herald-bench-broadcast.XXXXXX)
"$HERALD" gateway --data-dir "$WORK/data" --provider-port 0 --device-port 0 --channel-port 0 --host 127.0.0.1 \
    --token-burst 0 --log-level error --device-connections-per-address 50000 --handshake-timeout 60 > "$WORK/gateway.json" &
GW=$!
trap 'kill $GW 2>/dev/null || true' EXIT
wait_for_start "$WORK/gateway.json" $GW
port() { field "$WORK/gateway.json" "$1"; }
"$HERALD" bench broadcast --data-dir "$WORK/data" --url "https://127.0.0.1:$(port provider_port)" \
    --channels "https://127.0.0.1:$(port channel_port)" --gateway "wss://localhost:$(port device_port)" \
    --ca "$WORK/data/tls/ca.pem" --devices "$DEVICES"
echo "details in $WORK"
