#!/usr/bin/env bash
# The Web Push port's acceptance against the APNs port's, on one gateway, in the same run
# (docs/benchmarks.md; issue goal: >= 0.8 of the APNs port).
#
#   scripts/bench-webpush.sh [REQUESTS] [SUBSCRIPTIONS]
#
# Starts `herald gateway` (SQLite store, TLS) with both ports, registers SUBSCRIPTIONS device
# tokens and as many Web Push subscriptions (made with an application server key) of offline
# user agents, and drives both ports with h2load over HTTP/2 (4 connections x 100 concurrent
# streams, a 200-byte body): APNs pushes with a valid ES256 provider token, Web Push messages
# (aes128gcm, TTL, Urgency, Topic) with a valid VAPID token for the subscriptions' key. Every
# accepted message is stored; like for like, each endpoint keeps its newest (Apple's policy for
# the APNs port, the Topic for Web Push). Alternates the two, twice, prints both rates and their
# ratio; then one Web Push run without Topic, where every message is kept.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-common.sh
REQUESTS=${1:-100000}
TOKENS=${2:-20000}

require_tools h2load:nghttp2-client python3:python3
require_herald_build
HERALD=$(scripts/bench-build.sh)
WORK=$(mktemp -d /tmp/herald-bench-webpush.XXXXXX)
trap 'kill $GW 2>/dev/null || true; wait 2>/dev/null || true' EXIT

"$HERALD" gateway --data-dir "$WORK/data" --provider-port 0 --webpush-port 0 --admin-port 0 --host 127.0.0.1 \
    --log-level warning > "$WORK/gateway.json" &
GW=$!
wait_for_start "$WORK/gateway.json" $GW
PORT=$(field "$WORK/gateway.json" provider_port) WPORT=$(field "$WORK/gateway.json" webpush_port) ADMIN=$(field "$WORK/gateway.json" admin_port)

"$HERALD" bench prepare --data-dir "$WORK/data" --tokens "$TOKENS" --url "https://127.0.0.1:$PORT" \
    --webpush-url "https://127.0.0.1:$WPORT" --out "$WORK/in" >/dev/null
AUTH=$(cat "$WORK/in/authorization.txt")
VAPID=$(cat "$WORK/in/webpush-authorization.txt")
# The same body size for both: 200 bytes.
head -c 200 "$WORK/in/webpush-body.bin" > "$WORK/in/body.bin"

apns() {  # REQUESTS [CONNECTIONS]
    h2load -n "$1" -c "${2:-4}" -m 100 -t 1 -d "$WORK/in/payload.json" \
        -H "authorization: $AUTH" -H "apns-topic: com.example.bench" -H "apns-push-type: alert" \
        -i "$WORK/in/uris.txt" 2>&1
}
webpush() {  # REQUESTS [CONNECTIONS] [EXTRA HEADER]
    h2load -n "$1" -c "${2:-4}" -m 100 -t 1 -d "$WORK/in/body.bin" \
        -H "authorization: $VAPID" -H "ttl: 3600" -H "urgency: normal" -H "content-encoding: aes128gcm" \
        -H "${3:-topic: bench}" -i "$WORK/in/webpush-uris.txt" 2>&1
}
rate() { grep -E '^finished in' | sed -E 's/.* ([0-9.]+) req\/s.*/\1/'; }
codes() { grep -E '^status codes:'; }

# Warm both paths before measuring: every token and subscription once (the port's caches, the
# store's registration cache), as a gateway that has run for a while has them. One connection:
# h2load's clients each start at the top of the URI list.
apns "$TOKENS" 1 > "$WORK/warm-apns.txt"
webpush "$TOKENS" 1 > "$WORK/warm-webpush.txt"
A1=$(apns "$REQUESTS" | tee "$WORK/a1.txt" | rate)
W1=$(webpush "$REQUESTS" | tee "$WORK/w1.txt" | rate)
A2=$(apns "$REQUESTS" | tee "$WORK/a2.txt" | rate)
W2=$(webpush "$REQUESTS" | tee "$WORK/w2.txt" | rate)

# Without a Topic every message is kept (RFC 8030: until its TTL, here up to 100 per
# subscription): the store grows with each run, unlike the like-for-like runs above.
K1=$(webpush "$REQUESTS" 4 "prefer: none" | tee "$WORK/k1.txt" | rate)

echo "APNs port status codes: $(codes < "$WORK/a2.txt")"
echo "Web Push port status codes: $(codes < "$WORK/w2.txt")"
python3 - "$A1" "$A2" "$W1" "$W2" "$K1" <<'PY'
import sys
a1, a2, w1, w2, k1 = map(float, sys.argv[1:])
a, w = (a1 + a2) / 2, (w1 + w2) / 2
print(f"APNs port (h2, ES256 provider token, stored):  {a1:,.0f} / {a2:,.0f} req/s, mean {a:,.0f}")
print(f"Web Push port (h2, VAPID, aes128gcm, stored): {w1:,.0f} / {w2:,.0f} req/s, mean {w:,.0f}")
print(f"ratio webpush/apns: {w / a:.2f}")
print(f"Web Push without Topic (every message kept, the store growing): {k1:,.0f} req/s, {k1 / a:.2f} of the APNs port")
PY
echo "details in $WORK"
