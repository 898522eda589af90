#!/usr/bin/env bash
# End-to-end delivery benchmark (docs/benchmarks.md): devices connected to the device port, a
# provider pushing over HTTP/2, all against one release-built `herald gateway` on SQLite.
#
#   scripts/bench-delivery.sh [REQUESTS] [DEVICES] [IDLE_DEVICES]
#
# Reports, in one run: acceptance throughput with the devices offline, end-to-end delivery
# throughput with them connected (and its ratio to acceptance), latency (send -> device receives,
# p50/p99) flat out and paced at half that rate, then the gateway's resident memory per idle
# connected device with IDLE_DEVICES devices.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-common.sh
require_tools python3:python3
require_herald_build
REQUESTS=${1:-50000}
DEVICES=${2:-1000}
IDLE=${3:-10000}
DURABILITY=${DURABILITY:-full}

# 10,000 devices need 10,000 sockets on each side.
ulimit -n "$(ulimit -Hn)"
HERALD=$(scripts/bench-build.sh)
WORK=$(mktemp -d /tmp/herald-bench-delivery.XXXXXX)
GW=
start_gateway() {
    "$HERALD" gateway --data-dir "$WORK/data" --provider-port 0 --device-port 0 --admin-port 0 --host 127.0.0.1 \
        --token-burst 0 --durability "$DURABILITY" --log-level error \
        --device-connections-per-address 50000 --handshake-timeout 60 > "$WORK/gateway.json" &
    GW=$!
    wait_for_start "$WORK/gateway.json" $GW
    PORT=$(field "$WORK/gateway.json" provider_port)
    DPORT=$(field "$WORK/gateway.json" device_port)
    APORT=$(field "$WORK/gateway.json" admin_port)
}
trap 'kill $GW 2>/dev/null || true' EXIT

start_gateway
"$HERALD" bench delivery --data-dir "$WORK/data" --url "https://127.0.0.1:$PORT" --gateway "wss://localhost:$DPORT" \
    --ca "$WORK/data/tls/ca.pem" --devices "$DEVICES" --connections 4 --requests "$REQUESTS" --gateway-pid "$GW" \
    --admin "http://127.0.0.1:$APORT"

# Memory per idle device, on a fresh gateway.
kill $GW; wait $GW 2>/dev/null || true
rm -f "$WORK/gateway.json"
start_gateway
sleep 1
"$HERALD" bench delivery --data-dir "$WORK/data" --url "https://127.0.0.1:$PORT" --gateway "wss://localhost:$DPORT" \
    --ca "$WORK/data/tls/ca.pem" --idle-devices "$IDLE" --gateway-pid "$GW"
echo "durability: $DURABILITY; details in $WORK"
