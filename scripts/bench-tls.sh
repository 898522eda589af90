#!/usr/bin/env bash
# What a TLS handshake costs the gateway on its device port, first connects against resumed ones
# (docs/benchmarks.md, "Issue 48: handshakes"). One release-built `herald gateway` on SQLite;
# `openssl s_time` opens connections one after the other for SECONDS, each asking `GET /` (the
# answer is what makes the gateway send its TLS 1.3 session tickets): `-new` a full handshake
# every time, `-reuse` resuming the first connection's session. The gateway's CPU time is read
# from /proc before and after each run.
#
#   scripts/bench-tls.sh [SECONDS] [ROUNDS]
#
# Prints, per round and for the means:
#   tls: full handshake N µs of gateway CPU (C connections), resumed R µs (C connections), resumed / full X
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-common.sh
SECONDS_EACH=${1:-10}
ROUNDS=${2:-3}
require_tools openssl:openssl python3:python3
require_herald_build
HERALD=$(scripts/bench-build.sh)
WORK=$(mktemp -d /tmp/herald-bench-tls.XXXXXX)
"$HERALD" gateway --data-dir "$WORK/data" --provider-port 0 --device-port 0 --host 127.0.0.1 \
    --log-level error --device-handshakes-per-address 100000 --device-connections-per-address 100000 \
    > "$WORK/gateway.json" &
GW=$!
trap 'kill $GW 2>/dev/null; wait $GW 2>/dev/null; rm -rf "$WORK"' EXIT
wait_for_start "$WORK/gateway.json" $GW
DPORT=$(field "$WORK/gateway.json" device_port)

TICK=$(getconf CLK_TCK)

# Runs s_time in the given mode; prints "CONNECTIONS MICROSECONDS_OF_GATEWAY_CPU_EACH".
measure() {
    local before after out connections
    before=$(cpu_ticks "$GW")
    out=$(openssl s_time -connect "127.0.0.1:$DPORT" -CAfile "$WORK/data/tls/ca.pem" -www / "$1" -time "$SECONDS_EACH" 2>&1)
    after=$(cpu_ticks "$GW")
    connections=$(printf '%s\n' "$out" | awk '/connections in .* real seconds/ { print $1; exit }')
    [ -n "$connections" ] && [ "$connections" -gt 0 ] || { echo "bench-tls: s_time $1 made no connection:" >&2; printf '%s\n' "$out" | tail -5 >&2; exit 1; }
    python3 -c "import sys; c=int(sys.argv[1]); t=int(sys.argv[2]); k=int(sys.argv[3]); print(c, round(t / k * 1e6 / c, 1))" \
        "$connections" "$((after - before))" "$TICK"
}

FULL_SUM=0; RESUMED_SUM=0
for round in $(seq "$ROUNDS"); do
    read -r full_n full_us < <(measure -new)
    read -r resumed_n resumed_us < <(measure -reuse)
    echo "tls: round $round: full handshake $full_us µs of gateway CPU ($full_n connections), resumed $resumed_us µs ($resumed_n connections), resumed / full $(python3 -c "print(round($resumed_us / $full_us, 2))")"
    FULL_SUM=$(python3 -c "print($FULL_SUM + $full_us)"); RESUMED_SUM=$(python3 -c "print($RESUMED_SUM + $resumed_us)")
done
python3 -c "f=$FULL_SUM/$ROUNDS; r=$RESUMED_SUM/$ROUNDS; print(f'tls: means over $ROUNDS rounds: full handshake {f:.1f} µs of gateway CPU, resumed {r:.1f} µs, resumed / full {r/f:.2f}')"
