#!/usr/bin/env bash
# The timing-chaos soak (issue 63): the chaos run (Tests/faults/faults.py) and the PostgreSQL
# failover run (Tests/faults/failover.py, synchronous replication) over several seeds, each with
# 0..JITTER ms of random delay on every chunk of every PostgreSQL and device connection, and one
# busy process per core at the suite's own priority. Prints a line per run with its seed (which
# replays it: HERALD_FAULTS_SEED=… HERALD_FAULTS_JITTER_MS=… HERALD_FAULTS_HOG=1 python3
# Tests/faults/faults.py HERALD) and keeps each run's output in a directory it names.
#
# Usage: scripts/soak.sh [HERALD_BINARY] [RUNS] [JITTER_MS]   (defaults: the release build, 5, 300)
# Exits 1 when any run failed. docs/cluster.md ("Timing chaos") has its figures.
set -euo pipefail
cd "$(dirname "$0")/.."
HERALD=${1:-.build/release/herald}
RUNS=${2:-5}
JITTER=${3:-300}
[ -x "$HERALD" ] || { echo "soak: no herald at $HERALD (swift build -c release --product herald)" >&2; exit 2; }
OUT=$(mktemp -d /tmp/herald-soak.XXXXXX)
echo "soak: $RUNS runs of each, jitter 0..$JITTER ms, CPU hog on; outputs in $OUT"
failed=0
for run in $(seq 1 "$RUNS"); do
    seed=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
    for suite in faults failover; do
        args=()
        [ "$suite" = failover ] && args=(sync)
        log="$OUT/$suite-$seed.log"
        started=$SECONDS
        if HERALD_FAULTS_SEED=$seed HERALD_FAULTS_JITTER_MS=$JITTER HERALD_FAULTS_HOG=1 \
            python3 "Tests/faults/$suite.py" "$HERALD" "${args[@]}" >"$log" 2>&1; then
            verdict=passed
        else
            verdict=FAILED
            failed=1
        fi
        echo "soak: $suite seed $seed: $verdict in $(( SECONDS - started )) s ($log)"
        grep -E "^FAIL|^failover: sync" "$log" | sed 's/^/    /' || true
    done
done
exit $failed
