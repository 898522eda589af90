#!/usr/bin/env bash
# The APNs client's throughput against a Herald gateway, compared in the same run and against the
# same gateway with Python httpx (HTTP/2) sending the same pushes (docs/benchmarks.md).
#
#   scripts/bench-client.sh [PUSHES] [CONCURRENCY]
#
# Builds release, starts `herald gateway` (SQLite store, TLS, per-token limit off), registers
# PUSHES tokens, then sends one push to each token three times over, alternating: `herald push
# send --tokens` (HeraldClient.APNsClient, 2 connections) and httpx (2 connections at most), both
# with CONCURRENCY requests in flight and the same 200-byte payload.
set -euo pipefail
cd "$(dirname "$0")/.."
PUSHES=${1:-20000}
CONCURRENCY=${2:-200}

python3 -c "import httpx, h2" 2>/dev/null || { echo "Python httpx with HTTP/2 is missing: pip install 'httpx[http2]'" >&2; exit 1; }
swift build -c release --product herald >/dev/null
HERALD="$(swift build -c release --show-bin-path)/herald"
WORK=$(mktemp -d /tmp/herald-bench-client.XXXXXX)
trap 'kill $GW 2>/dev/null || true; wait 2>/dev/null || true' EXIT

"$HERALD" gateway --data-dir "$WORK/data" --provider-port 0 --admin-port 0 --host 127.0.0.1 --token-burst 0 \
    --log-level warning > "$WORK/gateway.json" &
GW=$!
until [ -s "$WORK/gateway.json" ]; do sleep 0.1; done
PORT=$(python3 -c "import json,sys;print(json.load(open(sys.argv[1]))['provider_port'])" "$WORK/gateway.json")
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
httpx_run() {
    python3 scripts/bench-client.py "https://127.0.0.1:$PORT" "$CA" "$WORK/in/authorization.txt" "$WORK/in/tokens.txt" \
        "$WORK/in/payload.json" "$CONCURRENCY"
}

for round in 1 2 3; do
    H=$(herald_run); P=$(httpx_run)
    echo "round $round: herald push send ${H% *} pushes/s (${H#* } s; $(tail -1 "$WORK/herald-err.txt")), httpx ${P%% *} pushes/s ($(echo "$P" | cut -d' ' -f2) s; statuses $(echo "$P" | cut -d' ' -f3-))"
    echo "round $round: ratio herald/httpx $(python3 -c "import sys;print(f'{float(sys.argv[1])/float(sys.argv[2]):.2f}')" "${H% *}" "${P%% *}")"
done
