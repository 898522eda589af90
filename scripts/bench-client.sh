#!/usr/bin/env bash
# The APNs client's throughput against a Herald gateway, compared in the same run and against the
# same gateway with h2load sending the same pushes (docs/benchmarks.md).
#
#   scripts/bench-client.sh [PUSHES] [CONCURRENCY]
#
# Builds release, starts `herald gateway` (SQLite store, TLS, per-token limit off), registers
# PUSHES tokens, then sends one push to each token three times over, alternating: `herald push
# send --tokens` (HeraldClient.APNsClient, 2 connections) and h2load (2 connections), both with
# CONCURRENCY requests in flight and the same 200-byte payload. Both times include connecting.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-common.sh
PUSHES=${1:-20000}
CONCURRENCY=${2:-200}

require_tools h2load:nghttp2-client python3:python3
require_herald_build
HERALD=$(scripts/bench-build.sh)
WORK=$(mktemp -d /tmp/herald-bench-client.XXXXXX)
trap 'kill $GW 2>/dev/null || true; wait 2>/dev/null || true' EXIT

"$HERALD" gateway --data-dir "$WORK/data" --provider-port 0 --admin-port 0 --host 127.0.0.1 --token-burst 0 \
    --log-level warning > "$WORK/gateway.json" &
GW=$!
wait_for_start "$WORK/gateway.json" $GW
PORT=$(field "$WORK/gateway.json" provider_port)
"$HERALD" bench prepare --data-dir "$WORK/data" --tokens "$PUSHES" --url "https://127.0.0.1:$PORT" --out "$WORK/in" >/dev/null
read -r KEY_ID TEAM < "$WORK/in/key-id.txt" || true
CA="$WORK/data/tls/ca.pem"
ALERT=$(python3 -c "import json,sys;print(json.load(open(sys.argv[1]))['aps']['alert'])" "$WORK/in/payload.json")

herald_run() {
    local start end
    start=$(date +%s.%N)
    "$HERALD" push send --url "https://127.0.0.1:$PORT" --ca "$CA" --key "$WORK/in/key.p8" --key-id "$KEY_ID" --team "$TEAM" \
        --topic com.example.bench --tokens "$WORK/in/tokens.txt" --alert "$ALERT" --concurrency "$CONCURRENCY" \
        --connections 2 --no-progress > "$WORK/herald-out.txt" 2> "$WORK/herald-err.txt" || true
    end=$(date +%s.%N)
    python3 -c "import sys;n=int(sys.argv[1]);t=float(sys.argv[3])-float(sys.argv[2]);print(f'{n/t:.0f} {t:.3f}')" "$PUSHES" "$start" "$end"
}
h2load_run() {
    h2load -n "$PUSHES" -c 2 -m $((CONCURRENCY / 2)) -t 1 -d "$WORK/in/payload.json" \
        -H "authorization: $(cat "$WORK/in/authorization.txt")" -H "apns-topic: com.example.bench" \
        -H "apns-push-type: alert" -i "$WORK/in/uris.txt" > "$WORK/h2load-out.txt" 2>&1
    python3 -c "
import re,sys
t=open(sys.argv[1]).read()
rate=re.search(r'finished in ([0-9.]+m?s), ([0-9.]+) req/s', t)
codes=re.search(r'status codes: (.*)', t)
print(f'{float(rate.group(2)):.0f} {rate.group(1)} {codes.group(1)}')" "$WORK/h2load-out.txt"
}

HS=(); PS=()
for round in 1 2 3; do
    H=$(herald_run); P=$(h2load_run)
    HS+=("${H% *}"); PS+=("${P%% *}")
    echo "round $round: herald push send ${H% *} pushes/s (${H#* } s; $(tail -1 "$WORK/herald-err.txt")), h2load ${P%% *} pushes/s ($(echo "$P" | cut -d' ' -f2); $(echo "$P" | cut -d' ' -f3-))"
    echo "round $round: ratio herald/h2load $(python3 -c "import sys;print(f'{float(sys.argv[1])/float(sys.argv[2]):.2f}')" "${H% *}" "${P%% *}")"
done
python3 - "${HS[@]}" "${PS[@]}" <<'PY'
import sys
values = list(map(float, sys.argv[1:]))
herald, h2load = values[:3], values[3:]
h, p = sum(herald) / 3, sum(h2load) / 3
print(f"mean: herald {h:.0f} pushes/s, h2load {p:.0f} pushes/s")
print(f"mean ratio herald/h2load: {h / p:.2f}")
PY
