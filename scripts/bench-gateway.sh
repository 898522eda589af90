#!/usr/bin/env bash
# Provider-port throughput against a baseline measured in the same run (docs/benchmarks.md).
#
#   scripts/bench-gateway.sh [REQUESTS] [TOKENS]
#
# RATE_LIMIT=off scripts/bench-gateway.sh 100000 200   (the few-tokens workload, limit off)
#
# Builds release, starts `herald gateway` (SQLite store, TLS) and `herald bench baseline` (a bare
# SwiftNIO HTTP/2 TLS responder), registers TOKENS device tokens of offline devices, and drives
# both with h2load (4 connections x 100 concurrent streams, a 200-byte body, valid ES256 JWT).
# Every push the gateway accepts is stored. Prints both rates and their ratio, the gateway's
# resident memory idle and after every token holds a stored notification, and the data size.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-common.sh
REQUESTS=${1:-200000}
TOKENS=${2:-100000}
DURABILITY=${DURABILITY:-full}
# RATE_LIMIT=off turns the per-token limit off (--token-burst 0): the workload with few tokens
# pushes each of them far faster than the default 10/s.
LIMIT_ARGS=()
[ "${RATE_LIMIT:-on}" = off ] && LIMIT_ARGS=(--token-burst 0)

require_tools h2load:nghttp2-client curl:curl python3:python3
require_herald_build
HERALD=$(scripts/bench-build.sh)
WORK=$(mktemp -d /tmp/herald-bench.XXXXXX)
trap 'kill $GW $BASE 2>/dev/null || true; wait 2>/dev/null || true' EXIT

"$HERALD" gateway --data-dir "$WORK/data" --provider-port 0 --admin-port 0 --host 127.0.0.1 \
    --durability "$DURABILITY" --log-level warning "${LIMIT_ARGS[@]}" > "$WORK/gateway.json" &
GW=$!
wait_for_start "$WORK/gateway.json" $GW
PORT=$(field "$WORK/gateway.json" provider_port)
ADMIN=$(field "$WORK/gateway.json" admin_port)
sleep 1
RSS_IDLE=$(ps -o rss= -p $GW)

"$HERALD" bench prepare --data-dir "$WORK/data" --tokens "$TOKENS" --url "https://127.0.0.1:$PORT" --out "$WORK/in" >/dev/null
"$HERALD" bench baseline --tls-cert "$WORK/data/tls/server.pem" --tls-key "$WORK/data/tls/server-key.pem" > "$WORK/baseline.json" &
BASE=$!
wait_for_start "$WORK/baseline.json" $BASE
BPORT=$(field "$WORK/baseline.json" port)
sed "s/:$PORT\//:$BPORT\//" "$WORK/in/uris.txt" > "$WORK/in/uris-baseline.txt"

AUTH=$(cat "$WORK/in/authorization.txt")
load() {  # URIS REQUESTS CONNECTIONS STREAMS
    h2load -n "$2" -c "$3" -m "$4" -t 1 -d "$WORK/in/payload.json" \
        -H "authorization: $AUTH" -H "apns-topic: com.example.bench" -H "apns-push-type: alert" \
        -i "$1" 2>&1
}
rate() { grep -E '^finished in' | sed -E 's/.* ([0-9.]+) req\/s.*/\1/'; }
codes() { grep -E '^status codes:'; }

# Fill: every token receives one notification, so all TOKENS offline devices hold one.
load "$WORK/in/uris.txt" "$TOKENS" 1 100 > "$WORK/fill.txt"
sleep 1
RSS_FULL=$(ps -o rss= -p $GW)
HELD=$(curl -s "http://127.0.0.1:$ADMIN/metrics" | awk '/^herald_notifications_held/ {print $2}')
DATA_SIZE=$(du -sh "$WORK/data" | cut -f1)

# Measure, alternating so that neither side gets the warmer machine.
B1=$(load "$WORK/in/uris-baseline.txt" "$REQUESTS" 4 100 | tee "$WORK/b1.txt" | rate)
G1=$(load "$WORK/in/uris.txt" "$REQUESTS" 4 100 | tee "$WORK/g1.txt" | rate)
B2=$(load "$WORK/in/uris-baseline.txt" "$REQUESTS" 4 100 | tee "$WORK/b2.txt" | rate)
G2=$(load "$WORK/in/uris.txt" "$REQUESTS" 4 100 | tee "$WORK/g2.txt" | rate)
BATCHES=$(curl -s "http://127.0.0.1:$ADMIN/metrics" | awk '/^herald_intake_batches_total/ {b=$2} /^herald_intake_notifications_total/ {n=$2} END {printf "%.1f", n/b}')

echo "gateway status codes: $(codes < "$WORK/g2.txt")"
echo "baseline status codes: $(codes < "$WORK/b2.txt")"
python3 - "$B1" "$B2" "$G1" "$G2" <<'PY'
import sys
b1, b2, g1, g2 = map(float, sys.argv[1:])
b, g = (b1 + b2) / 2, (g1 + g2) / 2
print(f"baseline (bare SwiftNIO HTTP/2 TLS): {b1:,.0f} / {b2:,.0f} req/s, mean {b:,.0f}")
print(f"herald gateway (SQLite, stored):     {g1:,.0f} / {g2:,.0f} req/s, mean {g:,.0f}")
print(f"ratio gateway/baseline: {g / b:.2f}")
PY
echo "mean intake batch size: $BATCHES"
echo "gateway RSS idle: $((RSS_IDLE / 1024)) MiB; after $TOKENS tokens each hold a notification ($HELD held): $((RSS_FULL / 1024)) MiB"
echo "data directory: $DATA_SIZE"
echo "durability: $DURABILITY; details in $WORK"
