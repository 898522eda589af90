#!/usr/bin/env bash
# Herald at scale (issue 33; docs/benchmarks.md): one release-built gateway (SQLite, TLS,
# loopback) started by `herald bench scale`, and DEVICES real devices in that process, each its
# own key and TLS WebSocket, spread over loopback source addresses (one per 5,000 devices: an
# address pair has ~28,000 ephemeral ports, and the reconnect storm needs new ones while the old
# connections are in TIME_WAIT). Prints these lines (machines read them too):
#
#   scale: connected N devices in T s (R handshakes/s)
#   scale: resident memory per connected device X KiB
#   scale: idle gateway CPU with N connected: P % of one core (pinged every S s)
#   scale: unicast fan-out to N devices: last receipt T s
#   scale: broadcast to N devices: last receipt T s
#   scale: broadcast with P % of devices not reading: readers' last receipt T s, gateway memory +X KiB; …
#   scale: reconnect storm: N devices back in T s after a gateway restart, P % gave up
#   scale: provider port p99 with N connected against 0 connected: RATIO
#   scale: gateway CPU per delivered push / per accepted push RATIO
#
#   scripts/bench-scale.sh [DEVICES] [OPTIONS…]   (default 100,000; OPTIONS go to `herald bench
#                                                  scale`, e.g. --reconnect-rate 250 --non-readers 20)
#
# Each device is one socket in the gateway and one here: both processes need DEVICES file
# descriptors and some. The script raises the soft limit to the hard one; when the hard limit is
# lower than that (raising it needs CAP_SYS_RESOURCE), it says so and runs with as many devices as
# the limit allows, rather than failing half-way.
set -euo pipefail
cd "$(dirname "$0")/.."
DEVICES=${1:-100000}
[ $# -gt 0 ] && shift
PUSHES=${PUSHES:-20000}
ulimit -n "$(ulimit -Hn)"
LIMIT=$(ulimit -n)
ALLOWED=$((LIMIT - 2000))
if [ "$DEVICES" -gt "$ALLOWED" ]; then
    if ulimit -n $((DEVICES + 2000)) 2>/dev/null; then
        :
    else
        echo "scale: asked for $DEVICES devices, but the file-descriptor hard limit here is $LIMIT (ulimit -Hn; raising it needs CAP_SYS_RESOURCE, which this environment does not grant): running with $ALLOWED" >&2
        DEVICES=$ALLOWED
    fi
fi
HERALD=$(scripts/bench-build.sh)
WORK=$(mktemp -d /tmp/herald-bench-scale.XXXXXX)
"$HERALD" bench scale --work "$WORK" --devices "$DEVICES" --pushes "$PUSHES" "$@"
echo "details in $WORK" >&2
