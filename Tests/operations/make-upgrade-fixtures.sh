#!/usr/bin/env bash
# Makes the stores in Tests/operations/fixtures/ that Tests/operations/upgrade.py opens with the
# current Herald: written by an earlier Herald's own binary, as an operator's gateway would have
# left them. Run from the checkout with an earlier commit's herald (how the committed fixtures
# were made, 2026-11-28):
#
#   git worktree add /tmp/herald-old 292dacb0b0b416d58595f7091bd7f849f89580dc   # before broadcast channels
#   (cd /tmp/herald-old && swift build --product herald)
#   scripts/postgres-for-tests.sh start   # prints HERALD_TEST_POSTGRES_URL; eval it
#   Tests/operations/make-upgrade-fixtures.sh /tmp/herald-old/.build/debug/herald
#
# What the earlier gateway is given: a provider key for TEAM123456 (com.example.upgrade), three
# tokens with no device behind them, and one push to each (held, as for offline devices). The
# SQLite fixture is the data directory's herald.sqlite (its TLS files are not kept: the current
# Herald makes new ones); the PostgreSQL fixture is a plain pg_dump of the database it migrated
# and wrote. Each fixture's facts (key id, tokens, apns-ids) go to a JSON file beside it.
set -euo pipefail
OLD=$(readlink -f "$1")
cd "$(dirname "$0")/../.."
OUT=Tests/operations/fixtures
WORK=$(mktemp -d /tmp/herald-fixtures.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$WORK"' EXIT
TEAM=TEAM123456 TOPIC=com.example.upgrade

# One gateway's life: keys, tokens, a push to each token; then a graceful stop.
fill() {  # fill NAME GATEWAY-STORE-FLAGS...
    local name=$1; shift
    "$OLD" gateway --data-dir "$WORK/$name" --provider-port 0 --log-level error "$@" > "$WORK/$name.json" &
    local pid=$!
    for _ in $(seq 1 100); do grep -q provider_port "$WORK/$name.json" 2>/dev/null && break; sleep 0.1; done
    local port store=("$@")
    [ ${#store[@]} -gt 0 ] || store=(--data-dir "$WORK/$name")
    port=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["provider_port"])' "$WORK/$name.json")
    local key_id tokens=() ids=()
    key_id=$("$OLD" keys create "${store[@]}" --team "$TEAM" --topic "$TOPIC" --out "$WORK/$name.p8")
    for _ in 1 2 3; do tokens+=("$("$OLD" tokens create "${store[@]}" --topic "$TOPIC")"); done
    for token in "${tokens[@]}"; do
        ids+=("$("$OLD" push send --gateway "https://localhost:$port" --ca "$WORK/$name/tls/ca.pem" --key "$WORK/$name.p8" \
            --key-id "$key_id" --team "$TEAM" --topic "$TOPIC" --token "$token" --alert "written by an earlier Herald")")
    done
    kill -TERM "$pid"; wait "$pid" || true
    python3 - "$OUT/$name.json" "$key_id" "$(git -C "$(dirname "$OLD")" rev-parse HEAD 2>/dev/null || echo unknown)" "$("$OLD" --version)" \
        "${tokens[*]}" "${ids[*]}" <<'PY'
import json, sys
path, key_id, commit, version, tokens, ids = sys.argv[1:]
json.dump({"written_by": {"commit": commit, "version": version}, "team": "TEAM123456", "topic": "com.example.upgrade",
           "key_id": key_id, "tokens": tokens.split(), "apns_ids": ids.split()}, open(path, "w"), indent=2, sort_keys=True)
PY
}

mkdir -p "$OUT"
fill sqlite
cp "$WORK/sqlite/herald.sqlite" "$OUT/sqlite.sqlite"

: "${HERALD_TEST_POSTGRES_URL:?start scripts/postgres-for-tests.sh first}"
base=${HERALD_TEST_POSTGRES_URL%%\?*}; base=${base%/*}
psql "$base/postgres" -q -c "DROP DATABASE IF EXISTS herald_fixture" -c "CREATE DATABASE herald_fixture"
fill postgres --database "$base/herald_fixture?sslmode=disable"
pg_dump --no-owner --no-privileges "$base/herald_fixture" > "$OUT/postgres.sql"
psql "$base/postgres" -q -c "DROP DATABASE herald_fixture"
echo "fixtures written to $OUT: sqlite.sqlite, postgres.sql and their JSON" >&2
