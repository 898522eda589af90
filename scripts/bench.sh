#!/usr/bin/env bash
# Every Herald benchmark in one run, one table (docs/benchmarks.md keeps its results and history).
#
#   scripts/bench.sh           the full run (about 10 minutes on 2 cores)
#   scripts/bench.sh --quick   small sizes, about 2 minutes: proves every benchmark still runs
#                              (it prints ratios and never fails on a number)
#   scripts/bench.sh --smoke   smaller still: CI runs it with the debug build its suite tested
#                              (about 3 minutes so); its ratios are not figures
#
# Builds release once, then runs each benchmark script with the same binary. Every figure is a
# ratio against a baseline measured in the same run on the same machine: the provider port
# against a bare SwiftNIO HTTP/2 TLS responder (two workloads), delivery against acceptance,
# `herald push send` against h2load with the same connections and concurrency, the provider
# service's REST sends against h2load pushing the same notifications straight to the gateway, PostgreSQL
# nodes against one SQLite node, cross-node delivery latency against same-node, and the Web Push
# port's acceptance against the APNs port's. Memory is
# reported as measured (KiB per idle device, idle RSS). Each row names the command that
# reproduces it alone. Logs of every step are kept in the directory printed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/require.sh

QUICK=0
case "${1:-}" in --quick) QUICK=1 ;; --smoke) QUICK=2 ;; esac
if [ "$QUICK" = 2 ]; then
    GW_A="5000 1000"; GW_B="5000 200"; DELIVERY="1000 100 200"; CLIENT="1000 100"; PROVIDER="1 200 1000"; CLUSTER="1000 500 50"; BROADCAST="200"; WEBPUSH="2000 500"; SCALE="200"; SCALE_PUSHES=200
elif [ "$QUICK" = 1 ]; then
    GW_A="20000 5000"; GW_B="20000 200"; DELIVERY="5000 200 1000"; CLIENT="5000 200"; PROVIDER="1 1000"; CLUSTER="5000 2000 100"; BROADCAST="500"; WEBPUSH="10000 2000"; SCALE="500"; SCALE_PUSHES=1000
else
    GW_A="200000 100000"; GW_B="100000 200"; DELIVERY="50000 1000 10000"; CLIENT="20000 200"; PROVIDER="5 4000"; CLUSTER="40000 10000 500"; BROADCAST="10000"; WEBPUSH="100000 20000"; SCALE="100000"; SCALE_PUSHES=20000
fi

require_tools h2load:nghttp2-client curl:curl python3:python3 psql:postgresql-client "/usr/lib/postgresql/*/bin/initdb:postgresql"
require_herald_build
# HERALD_BIN=path runs another build of herald (e.g. a base revision's) through the same scripts.
HERALD_BIN=$(scripts/bench-build.sh 2>/dev/null)
export HERALD_BIN
LOGS=$(mktemp -d /tmp/herald-bench-all.XXXXXX)

step() {  # NAME COMMAND...: runs one benchmark script, its output kept in $LOGS/NAME.txt
    local name=$1 started=$SECONDS; shift
    echo "running $* ..." >&2
    if ! "$@" > "$LOGS/$name.txt" 2>&1; then
        echo "$* failed; its output:" >&2
        tail -20 "$LOGS/$name.txt" >&2
        exit 1
    fi
    echo "  ($name: $(( SECONDS - started )) s)" >&2
}
# shellcheck disable=SC2086
step gateway-a scripts/bench-gateway.sh $GW_A
# shellcheck disable=SC2086
RATE_LIMIT=off step gateway-b scripts/bench-gateway.sh $GW_B
# shellcheck disable=SC2086
step delivery scripts/bench-delivery.sh $DELIVERY
# shellcheck disable=SC2086
step client scripts/bench-client.sh $CLIENT
# shellcheck disable=SC2086
step provider scripts/bench-provider.sh $PROVIDER
# shellcheck disable=SC2086
step cluster scripts/bench-cluster.sh $CLUSTER
# shellcheck disable=SC2086
step broadcast scripts/bench-broadcast.sh $BROADCAST
# shellcheck disable=SC2086
step webpush scripts/bench-webpush.sh $WEBPUSH
# shellcheck disable=SC2086
PUSHES=$SCALE_PUSHES step scale scripts/bench-scale.sh $SCALE

python3 - "$LOGS" "$GW_A" "$GW_B" "$DELIVERY" "$CLIENT" "$QUICK" "$PROVIDER" "$CLUSTER" "$BROADCAST" "$WEBPUSH" "$SCALE" <<'PY'
import re, sys
logs, gw_a, gw_b, delivery, client, quick, provider, cluster, broadcast, webpush, scale = sys.argv[1:12]
text = {name: open(f"{logs}/{name}.txt").read() for name in ("gateway-a", "gateway-b", "delivery", "client", "provider", "cluster", "broadcast", "webpush", "scale")}

def find(name, pattern, default="?"):
    m = re.search(pattern, text[name], re.M)
    return m.group(1) if m else default

rows = []
def row(figure, value, ratio, goal, command):
    rows.append((figure, value, ratio, goal, command))

for name, args, label in (("gateway-a", gw_a, "provider port, %s tokens" % gw_a.split()[1]),
                          ("gateway-b", gw_b, "provider port, %s tokens, rate limit off" % gw_b.split()[1])):
    base = find(name, r"^baseline .*mean ([0-9,]+)")
    gate = find(name, r"^herald gateway .*mean ([0-9,]+)")
    prefix = "RATE_LIMIT=off " if name == "gateway-b" else ""
    row(label, f"{gate} vs {base} req/s", find(name, r"^ratio gateway/baseline: ([0-9.]+)"), ">= 0.5 (0.7)",
        f"{prefix}scripts/bench-gateway.sh {args}")
row("delivery / acceptance, throughput", find("delivery", r"^1\. acceptance .*?: ([0-9]+) pushes/s") + " accepted/s",
    find("delivery", r"delivery / acceptance: ([0-9.]+) by throughput"), ">= 0.5", f"scripts/bench-delivery.sh {delivery}")
row("gateway CPU per push, accepted / delivered",
    find("delivery", r"gateway ([0-9.]+) µs, this load generator [0-9]") + " / " +
    find("delivery", r"CPU per push: gateway ([0-9.]+) µs, this load generator \(devices"),
    find("delivery", r"by the gateway's own CPU per push: ([0-9.]+)"), ">= 0.5", f"scripts/bench-delivery.sh {delivery}")
row("latency send -> device at half rate", "p50 " + find("delivery", r"^3\. paced.*p50 ([0-9.]+ ms)") + ", p99 " +
    find("delivery", r"^3\. paced.*p99 ([0-9.]+ ms)"), "-", "p99 < 20 ms", f"scripts/bench-delivery.sh {delivery}")
row("resident memory per idle device", find("delivery", r"([0-9.]+ KiB) per device"), "-", "< 16 KiB (8)",
    f"scripts/bench-delivery.sh {delivery}")
row("idle gateway RSS", find("gateway-a", r"gateway RSS idle: ([0-9]+ MiB)"), "-", "< 30 MiB", f"scripts/bench-gateway.sh {gw_a}")
row("herald push send vs h2load", find("client", r"^mean: herald ([0-9]+) .*") + " vs " + find("client", r"^mean: .*h2load ([0-9]+)") + " pushes/s",
    find("client", r"^mean ratio herald/h2load: ([0-9.]+)"), ">= 1.0", f"scripts/bench-client.sh {client}")
row("provider REST, send to a %s-registration segment" % ("{:,}".format(int(provider.split()[2])) if len(provider.split()) > 2 else "10,000"), find("provider", r"^segment send.*?: ([0-9,]+) pushes/s") + " pushes/s",
    find("provider", r"^ratio provider/gateway: segment ([0-9.]+)"), "-", f"scripts/bench-provider.sh {provider}")
row("provider REST, small sends (8 connections)", find("provider", r"^small sends.*?: ([0-9,]+) req/s") + " req/s, mean " +
    find("provider", r"^small sends.*mean latency ([0-9.]+ ms)"),
    find("provider", r"^ratio provider/gateway: .*small sends ([0-9.]+)"), "-", f"scripts/bench-provider.sh {provider}")
row("cluster: one PostgreSQL node, acceptance", find("cluster", r"one node on PostgreSQL: +([0-9,]+) pushes/s") + " vs " +
    find("cluster", r"one node on SQLite: +([0-9,]+) pushes/s") + " on SQLite",
    find("cluster", r"one node on PostgreSQL: .*ratio to SQLite ([0-9.]+)"), "-", f"scripts/bench-cluster.sh {cluster}")
row("cluster: machine CPU per accepted push, PostgreSQL node (gateway + server) / SQLite node",
    find("cluster", r"on PostgreSQL: gateway CPU per push .*= ([0-9.]+ µs)") + " / " + find("cluster", r"on SQLite: gateway CPU per push ([0-9.]+ µs)"),
    "-", "-", f"scripts/bench-cluster.sh {cluster}")
row("cluster: two PostgreSQL nodes, acceptance", find("cluster", r"two nodes on PostgreSQL: +([0-9,.]+) pushes/s") + " pushes/s",
    find("cluster", r"two nodes on PostgreSQL: .*ratio to SQLite ([0-9.]+)"), "-", f"scripts/bench-cluster.sh {cluster}")
row("cluster: delivery latency across nodes, paced", "p50 " + find("cluster", r"across nodes .*p50 ([0-9.]+ ms)") + ", p99 " +
    find("cluster", r"across nodes .*p99 ([0-9.]+ ms)"), find("cluster", r"ratio cross-node / same node: p50 ([0-9.]+)") + " (p50 vs same node)",
    "-", f"scripts/bench-cluster.sh {cluster}")
row(f"one broadcast to {broadcast} subscribed devices, last receipt", find("broadcast", r"^2\. broadcast: .*last receipt after ([0-9.]+ s)") + " vs " +
    find("broadcast", r"^1\. unicast fan-out: .*last receipt after ([0-9.]+ s)") + " as single pushes",
    find("broadcast", r"broadcast / unicast fan-out, time to the last device: ([0-9.]+)"), "<= 1.0", f"scripts/bench-broadcast.sh {broadcast}")
row(f"Web Push port vs APNs port, acceptance ({webpush.split()[1]} endpoints)",
    find("webpush", r"^Web Push port .*mean ([0-9,]+)") + " vs " + find("webpush", r"^APNs port .*mean ([0-9,]+)") + " req/s",
    find("webpush", r"^ratio webpush/apns: ([0-9.]+)"), ">= 0.8", f"scripts/bench-webpush.sh {webpush}")
devices = find("scale", r"^scale: connected ([0-9]+) devices")
row(f"scale: {devices} devices connected", find("scale", r"^scale: connected [0-9]+ devices in ([0-9.]+ s)") + ", " +
    find("scale", r"^scale: connected .*\(([0-9]+) handshakes/s") + " handshakes/s", "-", "100,000", f"scripts/bench-scale.sh {scale}")
row("scale: gateway CPU per device connect, first / coming back", find("scale", r"^scale: connected .*, ([0-9]+ µs) of gateway CPU each") + " / " +
    find("scale", r"^scale: reconnect storm: .*; ([0-9]+ µs) of gateway CPU each"), "-", "-", f"scripts/bench-scale.sh {scale}")
row("scale: resident memory per connected device", find("scale", r"^scale: resident memory per connected device ([0-9.]+ KiB)"), "-",
    "< 24 KiB at 100,000 (16)", f"scripts/bench-scale.sh {scale}")
row("scale: idle gateway CPU", find("scale", r"^scale: idle gateway CPU .*: ([0-9.]+ %) of one core"), "-", "-", f"scripts/bench-scale.sh {scale}")
row("scale: broadcast to all, last receipt", find("scale", r"^scale: broadcast to [0-9]+ devices: last receipt ([0-9.]+ s)") + " vs " +
    find("scale", r"^scale: unicast fan-out to [0-9]+ devices: last receipt ([0-9.]+ s)") + " fan-out", "-", "<= 10 s at 100,000",
    f"scripts/bench-scale.sh {scale}")
row("scale: broadcast, 10 % of devices not reading", "readers " + find("scale", r"not reading: readers' last receipt ([0-9.]+ s)") + ", gateway " +
    find("scale", r"not reading: .*gateway memory ([+-][0-9]+ KiB)") + ", non-readers " + find("scale", r"non-readers (all got it|did NOT all get it)"),
    "-", "all got it", f"scripts/bench-scale.sh {scale}")
row("scale: reconnect storm after a restart", find("scale", r"^scale: reconnect storm: [0-9]+ devices back in ([0-9.]+ s)") + ", " +
    find("scale", r"^scale: reconnect storm: .*, ([0-9.]+ %) gave up") + " gave up", "-", "0 % gave up", f"scripts/bench-scale.sh {scale}")
row("scale: provider port p99, N connected / 0 connected", "-", find("scale", r"^scale: provider port p99 .*: ([0-9.]+)"), "-",
    f"scripts/bench-scale.sh {scale}")
row("scale: gateway CPU per delivered / per accepted push", "-", find("scale", r"^scale: gateway CPU per delivered push / per accepted push ([0-9.]+)"),
    "<= 2", f"scripts/bench-scale.sh {scale}")

print()
print("| figure | measured | ratio | goal | reproduce |")
print("|---|---|---|---|---|")
for r in rows:
    print("| " + " | ".join(r) + " |")
if quick != "0":
    print("\n(--quick or --smoke: small sizes, figures are not comparable with full runs)")
PY
echo "logs: $LOGS"
