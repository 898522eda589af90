#!/usr/bin/env bash
# Starts a throwaway PostgreSQL server for the tests (the store contract tests and the cluster
# test) and prints the `export` lines that point them at it. Works as root (CI): initdb and
# pg_ctl refuse root, so they run as the `postgres` user. Usage:
#   eval "$(scripts/postgres-for-tests.sh start)"   … tests …   scripts/postgres-for-tests.sh stop
set -euo pipefail
PORT=${HERALD_TEST_POSTGRES_PORT:-54329}
DIR=${HERALD_TEST_POSTGRES_DIR:-/tmp/herald-test-postgres-$(id -u)}
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
as_postgres() { if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

case "${1:-start}" in
start)
  [ -n "$PGBIN" ] || { echo "PostgreSQL is not installed (scripts/test-deps.sh installs it)" >&2; exit 1; }
  if [ -f "$DIR/data/postmaster.pid" ]; then as_postgres "$PGBIN/pg_ctl" -D "$DIR/data" -m fast -w stop >/dev/null 2>&1 || true; fi
  rm -rf "$DIR"; mkdir -p "$DIR"
  [ "$(id -u)" -ne 0 ] || chown postgres:postgres "$DIR"
  as_postgres "$PGBIN/initdb" -D "$DIR/data" -U postgres -A trust --no-sync -E UTF8 >/dev/null
  # fsync stays on: the tests check that a 200 is durable, and a database that does not sync
  # would make that check meaningless.
  as_postgres "$PGBIN/pg_ctl" -D "$DIR/data" -l "$DIR/pg.log" \
    -o "-p $PORT -k $DIR -c listen_addresses=127.0.0.1 -c max_connections=300" -w start >/dev/null
  echo "export HERALD_TEST_POSTGRES_URL='postgres://postgres@127.0.0.1:$PORT/postgres?sslmode=disable'"
  echo "export HERALD_REQUIRE_POSTGRES=1"
  ;;
stop)
  [ -f "$DIR/data/postmaster.pid" ] && as_postgres "$PGBIN/pg_ctl" -D "$DIR/data" -m fast -w stop >/dev/null
  ;;
*) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
