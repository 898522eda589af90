#!/usr/bin/env bash
# The cluster benchmark (docs/benchmarks.md, docs/cluster.md): one node on SQLite against one node
# on PostgreSQL against two nodes on PostgreSQL, on this machine, in one run.
#
#   scripts/bench-cluster.sh [REQUESTS] [TOKENS] [DEVICES]
#
# 1. Acceptance throughput: h2load (4 connections x 100 streams, the same pushes, tokens of offline
#    devices, every push stored) against one SQLite node, one PostgreSQL node, and two PostgreSQL
#    nodes at once (2 connections each). Ratios against the SQLite node.
# 2. Delivery latency, paced (`herald bench delivery`, step 3): the provider and the devices on the
#    same PostgreSQL node, then the provider on node a and the devices on node b (every delivery
#    crosses nodes through a hint). Ratio cross-node / same node.
# Step 1 also prints, for the SQLite node and the PostgreSQL node, the gateway's CPU per accepted push
# and its commits (how many, their mean size and time, from the admin port's metrics), and for the
# PostgreSQL node the server's CPU per push beside it (when the script started the server): the
# gateway, the database and h2load share this machine's cores.
# Starts its own PostgreSQL (scripts/postgres-for-tests.sh, port 54339) unless
# HERALD_BENCH_POSTGRES_URL names a server (a database per step is created on it with psql).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-common.sh
REQUESTS=${1:-20000}
TOKENS=${2:-5000}
DEVICES=${3:-200}

require_tools h2load:nghttp2-client curl:curl python3:python3 psql:postgresql-client
[ -n "${HERALD_BENCH_POSTGRES_URL:-}" ] || require_tools "/usr/lib/postgresql/*/bin/initdb:postgresql"
require_herald_build
ulimit -n "$(ulimit -Hn)"
HERALD=$(scripts/bench-build.sh)
WORK=$(mktemp -d /tmp/herald-bench-cluster.XXXXXX)
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    [ -z "${OWN_POSTGRES:-}" ] || own_postgres 54339 bench stop
}
trap cleanup EXIT

if [ -z "${HERALD_BENCH_POSTGRES_URL:-}" ]; then
    OWN_POSTGRES=1
    eval "$(own_postgres 54339 bench start)"
    HERALD_BENCH_POSTGRES_URL=$HERALD_TEST_POSTGRES_URL
fi
database() {  # NAME: a fresh database's URL
    psql "$HERALD_BENCH_POSTGRES_URL" -q -c "DROP DATABASE IF EXISTS $1 WITH (FORCE)" -c "CREATE DATABASE $1"
    local base=${HERALD_BENCH_POSTGRES_URL%%\?*} query=""
    [[ "$HERALD_BENCH_POSTGRES_URL" == *\?* ]] && query="?${HERALD_BENCH_POSTGRES_URL#*\?}"
    echo "${base%/*}/$1$query"
}
start() {  # NAME ARGS...: starts a gateway whose start-up line goes to $WORK/NAME.json
    local name=$1; shift
    "$HERALD" gateway --provider-port 0 --device-port 0 --admin-port 0 --host 127.0.0.1 --token-burst 0 \
        --log-level error --device-connections-per-address 50000 "$@" > "$WORK/$name.json" &
    PIDS+=($!)
    wait_for_start "$WORK/$name.json" "${PIDS[-1]}"
}
intake() {  # NAME LABEL PID TICKS-BEFORE REQUESTS [DATABASE-TICKS]: the node's CPU per push and its commits, for the summary
    local admin metrics
    admin=$(field "$WORK/$1.json" admin_port)
    metrics=$(curl -s "http://127.0.0.1:$admin/metrics")
    python3 - "$2" "$(( $(cpu_ticks "$3") - $4 ))" "$(getconf CLK_TCK)" "$5" "$metrics" "${6:-}" >> "$WORK/intake.txt" <<'PY'
import re, sys
name, ticks, hz, requests, metrics, db = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6]
def metric(n):
    m = re.search(r"^" + n + r" ([0-9.e+]+)$", metrics, re.M)
    return float(m.group(1)) if m else 0.0
def per_push(t):
    return t / hz * 1e6 / requests
batches, pushes, seconds = metric("herald_intake_batches_total"), metric("herald_intake_notifications_total"), metric("herald_intake_commit_seconds_sum")
server = f" + the PostgreSQL server {per_push(int(db)):.1f} µs = {per_push(ticks + int(db)):.1f} µs of the machine's" if db else ""
print(f"{name}: gateway CPU per push {per_push(ticks):.1f} µs{server}; {batches:.0f} commits of {pushes / max(batches, 1):.0f} pushes, {seconds * 1000 / max(batches, 1):.1f} ms each (warm-up included)")
PY
}
database_ticks() {  # the CPU the PostgreSQL server this script started has used so far (nothing for a server it did not start)
    [ -z "${OWN_POSTGRES:-}" ] || tree_ticks "$(head -n 1 "$(own_postgres_dir bench)/data/postmaster.pid")"
}
load() {  # URIS REQUESTS CONNECTIONS: h2load's req/s
    h2load -n "$2" -c "$3" -m 100 -t 1 -d "$WORK/in/payload.json" \
        -H "authorization: $(cat "$WORK/in/authorization.txt")" -H "apns-topic: com.example.bench" -H "apns-push-type: alert" \
        -i "$1" 2>&1 | tee -a "$WORK/h2load.txt" | grep -E '^finished in' | sed -E 's/.* ([0-9.]+) req\/s.*/\1/'
}
prepare() {  # STORE-FLAGS... : tokens, key and URIs for the provider port in $WORK/NODE.json
    rm -rf "$WORK/in"
    "$HERALD" bench prepare "$@" --tokens "$TOKENS" --url "https://127.0.0.1:$PORT" --out "$WORK/in" >/dev/null
}

# 1a. One node, SQLite.
start sqlite --data-dir "$WORK/sqlite"
PORT=$(field "$WORK/sqlite.json" provider_port)
prepare --data-dir "$WORK/sqlite"
load "$WORK/in/uris.txt" "$TOKENS" 4 >/dev/null      # warm-up: every token holds one
TICKS=$(cpu_ticks "${PIDS[-1]}")
SQLITE=$(load "$WORK/in/uris.txt" "$REQUESTS" 4)
intake sqlite SQLite "${PIDS[-1]}" "$TICKS" "$REQUESTS"
kill "${PIDS[-1]}"; wait "${PIDS[-1]}" 2>/dev/null || true

# 1b. One node, PostgreSQL.
DB1=$(database herald_bench_one)
start pg1 --data-dir "$WORK/pg1" --database "$DB1" --node-id a
PORT=$(field "$WORK/pg1.json" provider_port)
prepare --database "$DB1"
load "$WORK/in/uris.txt" "$TOKENS" 4 >/dev/null
TICKS=$(cpu_ticks "${PIDS[-1]}")
DB_TICKS=$(database_ticks)
PG1=$(load "$WORK/in/uris.txt" "$REQUESTS" 4)
intake pg1 PostgreSQL "${PIDS[-1]}" "$TICKS" "$REQUESTS" "${DB_TICKS:+$(( $(database_ticks) - DB_TICKS ))}"
kill "${PIDS[-1]}"; wait "${PIDS[-1]}" 2>/dev/null || true

# 1c. Two nodes, PostgreSQL, loaded at once.
DB2=$(database herald_bench_two)
start a --data-dir "$WORK/a" --database "$DB2" --node-id a
start b --data-dir "$WORK/b" --database "$DB2" --node-id b --tls-cert "$WORK/a/tls/server.pem" --tls-key "$WORK/a/tls/server-key.pem"
PORT=$(field "$WORK/a.json" provider_port)
PORT_B=$(field "$WORK/b.json" provider_port)
prepare --database "$DB2"
sed "s/:$PORT\//:$PORT_B\//" "$WORK/in/uris.txt" > "$WORK/in/uris-b.txt"
load "$WORK/in/uris.txt" "$TOKENS" 4 >/dev/null
load "$WORK/in/uris.txt" $((REQUESTS / 2)) 2 > "$WORK/rate-a.txt" &
LA=$!
load "$WORK/in/uris-b.txt" $((REQUESTS / 2)) 2 > "$WORK/rate-b.txt" &
LB=$!
wait $LA $LB
PG2=$(python3 -c "print(float(open('$WORK/rate-a.txt').read() or 0) + float(open('$WORK/rate-b.txt').read() or 0))")

# 2. Delivery latency through the two nodes: same node, then across nodes.
DPORT_A=$(field "$WORK/a.json" device_port)
DPORT_B=$(field "$WORK/b.json" device_port)
"$HERALD" bench delivery --database "$DB2" --url "https://127.0.0.1:$PORT" --gateway "wss://localhost:$DPORT_A" \
    --ca "$WORK/a/tls/ca.pem" --devices "$DEVICES" --connections 2 --requests "$((REQUESTS / 4))" > "$WORK/same.txt"
"$HERALD" bench delivery --database "$DB2" --url "https://127.0.0.1:$PORT" --gateway "wss://localhost:$DPORT_B" \
    --ca "$WORK/a/tls/ca.pem" --devices "$DEVICES" --connections 2 --requests "$((REQUESTS / 4))" > "$WORK/cross.txt"

python3 - "$SQLITE" "$PG1" "$PG2" "$WORK/same.txt" "$WORK/cross.txt" <<'PY'
import re, sys
sqlite, pg1, pg2 = map(float, sys.argv[1:4])
def paced(path):
    m = re.search(r"^3\. paced at ([0-9]+) pushes/s.*latency p50 ([0-9.]+) ms, p99 ([0-9.]+) ms", open(path).read(), re.M)
    return tuple(float(x) for x in m.groups()) if m else (0.0, 0.0, 0.0)
same, cross = paced(sys.argv[4]), paced(sys.argv[5])
print(f"acceptance, one node on SQLite:      {sqlite:,.0f} pushes/s")
print(f"acceptance, one node on PostgreSQL:  {pg1:,.0f} pushes/s   ratio to SQLite {pg1 / sqlite:.2f}")
print(f"acceptance, two nodes on PostgreSQL: {pg2:,.0f} pushes/s   ratio to SQLite {pg2 / sqlite:.2f}")
print(f"delivery latency, same node (paced at {same[0]:,.0f}/s):  p50 {same[1]:.1f} ms, p99 {same[2]:.1f} ms")
print(f"delivery latency, across nodes (paced at {cross[0]:,.0f}/s): p50 {cross[1]:.1f} ms, p99 {cross[2]:.1f} ms")
if same[1] > 0:
    print(f"ratio cross-node / same node: p50 {cross[1] / same[1]:.2f}, p99 {cross[2] / max(same[2], 0.001):.2f}")
PY
sed 's/^/acceptance, one node on /' "$WORK/intake.txt"
echo "details in $WORK (h2load.txt, same.txt, cross.txt)"
