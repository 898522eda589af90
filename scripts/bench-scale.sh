#!/usr/bin/env bash
# Herald at scale (issue 33; docs/benchmarks.md): one release-built gateway (SQLite, TLS,
# loopback) started by `herald bench scale`, and DEVICES real devices in that process, each its
# own key and TLS WebSocket, spread over loopback source addresses (one per 5,000 devices: an
# address pair has ~28,000 ephemeral ports, and the reconnect storm needs new ones while the old
# connections are in TIME_WAIT). Prints these lines (machines read them too):
#
#   scale: connected N devices in T s (R handshakes/s, C µs of gateway CPU each)
#   scale: resident memory per connected device X KiB
#   scale: idle gateway CPU with N connected: P % of one core over 20 s settled (the 10 s before: F %) (pinged every S s)
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
# As a cluster (issue 48): `scripts/bench-scale.sh --nodes N DEVICES` starts a PostgreSQL server
# (scripts/postgres-for-tests.sh, port 54349; or HERALD_BENCH_POSTGRES_URL's) and N gateway
# nodes on it, each holding DEVICES/N devices, and spreads the fleet over generator processes
# (`herald bench scale-generator`) of at most 15,000 devices each, so that no process needs
# more descriptors than one may hold here. Device i connects to node i mod N and knows the
# others. Besides connected, memory (node by node), idle CPU, unicast fan-out, broadcast and
# CPU per push (all nodes together), it prints:
#
#   scale: PostgreSQL: N presence rows, sweep over all connected devices T ms, database size S MiB
#   scale: node killed: its N devices connected again to the others in T s, pushes answered 200 lost L
#
# (the last node is SIGKILLed, and a push to every device is sent through the others meanwhile;
# lost counts the devices connected at the end without theirs, less the pushes refused: a device
# not connected at the end has its push held).
#
# An A/B of a gateway change: HERALD_BENCH_GATEWAY=/path/to/other/herald runs the gateway (or the
# nodes) from that build, measured by this build's driver and generators.
#
# What a connection holds (issue 48): `scripts/bench-scale.sh 5000 --heap-profile /tmp/gw.heaptrack`
# runs the gateway under heaptrack's preload library (apt-get install heaptrack), stops after the
# idle line and kills the gateway there, so that `heaptrack_print --print-leaks 1 /tmp/gw.heaptrack`
# lists what the connected fleet held, by allocation site.
#
# Each device is one socket in the gateway and one here: both processes need DEVICES file
# descriptors and some. The script raises the soft limit to the hard one; when the hard limit is
# lower than that (raising it needs CAP_SYS_RESOURCE), it says so and runs with as many devices as
# the limit allows, rather than failing half-way.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-common.sh
NODES=""
if [ "${1:-}" = "--nodes" ]; then NODES=${2:?--nodes N}; shift 2; fi
DEVICES=${1:-100000}
[ $# -gt 0 ] && shift
PUSHES=${PUSHES:-20000}
require_tools python3:python3
[ -z "$NODES" ] || require_tools psql:postgresql-client
[ -z "$NODES" ] || [ -n "${HERALD_BENCH_POSTGRES_URL:-}" ] || require_tools "/usr/lib/postgresql/*/bin/initdb:postgresql"
[[ " $* " != *" --heap-profile "* ]] || require_tools heaptrack:heaptrack
require_herald_build
ulimit -n "$(ulimit -Hn)"
LIMIT=$(ulimit -n)
if [ -n "$NODES" ]; then
    PER_NODE=$(( (DEVICES + NODES - 1) / NODES ))
    if [ $((PER_NODE + 2000)) -gt "$LIMIT" ]; then
        echo "scale: $PER_NODE devices on each of $NODES nodes, but one process may hold $LIMIT descriptors here (ulimit -Hn): use more nodes" >&2
        exit 1
    fi
    PER_GENERATOR=$(( LIMIT - 2000 < 15000 ? LIMIT - 2000 : 15000 ))
    HERALD=$(scripts/bench-build.sh)
    WORK=$(mktemp -d /tmp/herald-bench-scale.XXXXXX)
    OWN_POSTGRES=""
    cleanup() {
        [ -z "$OWN_POSTGRES" ] || own_postgres 54349 bench-scale stop
    }
    trap cleanup EXIT
    if [ -z "${HERALD_BENCH_POSTGRES_URL:-}" ]; then
        OWN_POSTGRES=1
        eval "$(own_postgres 54349 bench-scale start)"
        HERALD_BENCH_POSTGRES_URL=$HERALD_TEST_POSTGRES_URL
    fi
    psql "$HERALD_BENCH_POSTGRES_URL" -q -c "DROP DATABASE IF EXISTS herald_bench_scale WITH (FORCE)" -c "CREATE DATABASE herald_bench_scale"
    BASE=${HERALD_BENCH_POSTGRES_URL%%\?*} QUERY=""
    [[ "$HERALD_BENCH_POSTGRES_URL" == *\?* ]] && QUERY="?${HERALD_BENCH_POSTGRES_URL#*\?}"
    "$HERALD" bench scale --work "$WORK" --devices "$DEVICES" --pushes "$PUSHES" --nodes "$NODES" \
        --database "${BASE%/*}/herald_bench_scale$QUERY" --devices-per-generator "$PER_GENERATOR" "$@"
    echo "details in $WORK" >&2
    exit 0
fi
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
