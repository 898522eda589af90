#!/usr/bin/env bash
# The provider service's REST API under load (docs/benchmarks.md), against a baseline in the same run.
#
#   scripts/bench-provider.sh [SEGMENT_SENDS] [SMALL_SENDS] [REGISTRATIONS]   (10,000 unless given)
#   HERALD_BASE=/path/to/other/herald scripts/bench-provider.sh     (before/after: ratio new/base)
#
# Starts a release-built `herald gateway` (SQLite, rate limit off) holding 10,000 registered device
# tokens (offline devices: every push is accepted and stored), and `herald provider` against it.
# Registers the 10,000 tokens through POST /v1/registrations, then measures:
#   - segment sends: POST /v1/sends to the whole 10,000-registration segment, SEGMENT_SENDS times
#     one after another; each answers with its report once every push is answered (pushes/s and
#     the latency of one request);
#   - small sends: SMALL_SENDS POST /v1/sends to one token each, 8 connections at once (h2load
#     over HTTP/1.1): requests/s through the REST layer, and its mean latency.
# The baseline, in the same run: h2load pushing the same notifications straight to the gateway's
# provider port (the 10,000 tokens with 4 connections x 100 streams; one token with 8 connections
# x 1 stream, as the small sends), so each ratio is what the provider service keeps of the
# gateway's own rate. With HERALD_BASE, both binaries run the same workload on the same machine,
# alternately, and the ratios new/base are printed too.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-common.sh
SEGMENT_SENDS=${1:-5}
SMALL_SENDS=${2:-4000}
TOKENS=${3:-10000}
[[ "$TOKENS" =~ ^[1-9][0-9]{0,6}$ ]] || { echo "REGISTRATIONS is a count of at least 1, not $TOKENS" >&2; exit 2; }
require_tools h2load:nghttp2-client python3:python3
require_herald_build
HERALD=$(scripts/bench-build.sh)
WORK=$(mktemp -d /tmp/herald-bench-provider.XXXXXX)
PIDS=()
trap 'kill "${PIDS[@]}" 2>/dev/null || true; wait 2>/dev/null || true' EXIT

run() {  # NAME BINARY: prints "segment_pushes_per_s segment_latency_s small_req_per_s small_latency_ms"
  local name=$1 bin=$2 dir=$WORK/$1
  mkdir -p "$dir"
  "$bin" gateway --data-dir "$dir/gw" --provider-port 0 --admin-port 0 --host 127.0.0.1 --token-burst 0 \
      --log-level warning > "$dir/gateway.json" &
  PIDS+=($!)
  wait_for_start "$dir/gateway.json" "${PIDS[-1]}"
  local port; port=$(field "$dir/gateway.json" provider_port)
  "$bin" bench prepare --data-dir "$dir/gw" --tokens $TOKENS --url "https://127.0.0.1:$port" --out "$dir/in" >/dev/null
  read -r kid team < "$dir/in/key-id.txt"
  "$bin" provider --data-dir "$dir/prov" --port 0 --gateway "https://127.0.0.1:$port" --ca "$dir/gw/tls/ca.pem" \
      --key "$dir/in/key.p8" --key-id "$kid" --team "$team" --feedback-interval 0 > "$dir/provider.json" &
  PIDS+=($!)
  wait_for_start "$dir/provider.json" "${PIDS[-1]}"
  local api; api=$(field "$dir/provider.json" port)
  local token; token=$(cat "$(field "$dir/provider.json" api_token_file)")
  python3 - "$api" "$token" "$dir/in/tokens.txt" "$SEGMENT_SENDS" "$dir/in" <<'PY'
import http.client, json, sys, time, concurrent.futures
port, token, tokens_path, segment_sends, out = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
tokens = open(tokens_path).read().split()
headers = {"authorization": "Bearer " + token, "content-type": "application/json"}
def register(chunk):
    c = http.client.HTTPConnection("127.0.0.1", port)
    for t in chunk:
        c.request("POST", "/v1/registrations", json.dumps({"token": t, "topic": "com.example.bench", "language": "en", "timeZone": "Europe/Paris"}), headers)
        r = c.getresponse(); r.read()
        assert r.status == 200, r.status
with concurrent.futures.ThreadPoolExecutor(8) as pool:
    list(pool.map(register, [tokens[i::8] for i in range(8)]))
c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
body = json.dumps({"to": {"segment": {"topic": "com.example.bench"}}, "alert": {"body": "hello"}})
times = []
for _ in range(segment_sends):
    start = time.monotonic()
    c.request("POST", "/v1/sends", body, headers)
    r = c.getresponse(); report = json.loads(r.read())
    times.append(time.monotonic() - start)
    assert r.status == 200 and report["counts"].get("accepted") == len(tokens), (r.status, report.get("counts"))
mean = sum(times) / len(times)
open(out + "/segment.txt", "w").write(f"{len(tokens) / mean:.0f} {mean:.3f}\n")
open(out + "/small.json", "w").write(json.dumps({"to": {"token": tokens[0]}, "alert": {"body": "hi"}}))
PY
  h2load --h1 -n "$SMALL_SENDS" -c 8 -t 1 -d "$dir/in/small.json" -H "authorization: Bearer $token" \
      -H "content-type: application/json" "http://127.0.0.1:$api/v1/sends" > "$dir/small.txt" 2>&1
  grep -q "status codes: $SMALL_SENDS 2xx" "$dir/small.txt" || { echo "$name: small sends failed:" >&2; cat "$dir/small.txt" >&2; exit 1; }
  # The baseline: the same pushes straight to the gateway.
  local auth; auth=$(cat "$dir/in/authorization.txt")
  direct() { h2load -n "$1" -c "$2" -m "$3" -t 1 -d "$dir/in/payload.json" -H "authorization: $auth" -H "apns-topic: com.example.bench" \
      -H "apns-push-type: alert" "${@:4}" 2>&1 | sed -nE 's/^finished in .* ([0-9.]+) req\/s.*/\1/p'; }
  local direct_segment direct_small
  direct_segment=$(direct $TOKENS 4 100 -i "$dir/in/uris.txt")
  direct_small=$(direct "$SMALL_SENDS" 8 1 "$(head -1 "$dir/in/uris.txt")")
  local rps mean_ms
  rps=$(sed -nE 's/^finished in .* ([0-9.]+) req\/s.*/\1/p' "$dir/small.txt")
  mean_ms=$(awk '/^time for request:/ {v=$6; u=v; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v); if (u=="us") v/=1000; if (u=="s") v*=1000; print v}' "$dir/small.txt")
  kill "${PIDS[@]}" 2>/dev/null || true; wait 2>/dev/null || true; PIDS=()
  echo "$(cat "$dir/in/segment.txt") $rps $mean_ms $direct_segment $direct_small"
}

N1=$(run new1 "$HERALD")
if [ -n "${HERALD_BASE:-}" ]; then
  B1=$(run base1 "$HERALD_BASE")
  N2=$(run new2 "$HERALD")
  B2=$(run base2 "$HERALD_BASE")
else
  N2=$(run new2 "$HERALD"); B1=""; B2=""
fi
python3 - "$N1" "$N2" "$B1" "$B2" "$TOKENS" <<'PY'
import sys
tokens = int(sys.argv[5])
def parse(s): return [float(x) for x in s.split()] if s else None
n1, n2, b1, b2 = map(parse, sys.argv[1:5])
def mean(a, b): return [(x + y) / 2 for x, y in zip(a, b)]
n = mean(n1, n2)
print(f"segment send, {tokens:,} registrations: {n[0]:,.0f} pushes/s, {n[1]:.3f} s per request (runs {n1[0]:,.0f} / {n2[0]:,.0f})")
print(f"small sends (one token each, 8 connections): {n[2]:,.0f} req/s, mean latency {n[3]:.2f} ms (runs {n1[2]:,.0f} / {n2[2]:,.0f})")
print(f"baseline, h2load straight to the gateway: {n[4]:,.0f} pushes/s ({tokens:,} tokens, 4x100 streams), {n[5]:,.0f} req/s (one token, 8x1)")
print(f"ratio provider/gateway: segment {n[0] / n[4]:.2f}, small sends {n[2] / n[5]:.2f}")
if b1:
    b = mean(b1, b2)
    print(f"base: segment {b[0]:,.0f} pushes/s, {b[1]:.3f} s; small {b[2]:,.0f} req/s, {b[3]:.2f} ms")
    print(f"ratio new/base: segment pushes/s {n[0] / b[0]:.2f}, small sends req/s {n[2] / b[2]:.2f}")
PY
echo "details in $WORK"
