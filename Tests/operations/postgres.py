#!/usr/bin/env python3
"""A PostgreSQL store as an operator keeps it (docs/operations.md, "Backups"): herald doctor on
it, then a backup with pg_dump and a restore with pg_restore that a gateway starts on.

- herald doctor reads the database without changing it: a new database is "created at the first
  start", a migrated one "current", one whose schema is newer than this herald fails, and one that
  does not answer fails, naming it.
- pg_dump -Fc of a database a gateway ran on, restored with pg_restore into a new database: a
  gateway starts on the restored one, and everything it held for offline devices is there.

Needs HERALD_TEST_POSTGRES_URL (scripts/test.sh starts a server and sets it).
Usage: postgres.py PATH/TO/herald
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import urllib.parse
import uuid

import httpx

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from apns import load_key, provider_jwt  # noqa: E402
from harness import check, start, run  # noqa: E402

HERALD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".build/debug/herald")
SERVER = os.environ.get("HERALD_TEST_POSTGRES_URL", "")
TEAM = "TEAM123456"
TOPIC = "com.example.pgbackup"


def herald(*args):
    return subprocess.run([HERALD, *args], capture_output=True, text=True, timeout=120)


def database_url(name):
    """The test server's URL with another database name."""
    parts = urllib.parse.urlsplit(SERVER)
    return urllib.parse.urlunsplit(parts._replace(path="/" + name))


def psql(*args):
    return subprocess.run(["psql", database_url("postgres"), "-v", "ON_ERROR_STOP=1", "-q", *args], capture_output=True, text=True, timeout=60)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_gateway(data, url):
    gateway = start([HERALD, "gateway", "--data-dir", data, "--database", url, "--provider-port", "0", "--device-port", "0",
                     "--log-level", "warning"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    return gateway, json.loads(gateway.stdout.readline())


def store_line(result):
    return next((line for line in result.stdout.splitlines() if line[6:].startswith("store")), result.stdout + result.stderr)


def main():
    if not SERVER:
        check("HERALD_TEST_POSTGRES_URL names a PostgreSQL server (scripts/test.sh starts one)", False, "not set")
        return
    work = tempfile.mkdtemp(prefix="herald-pg-ops-")
    suffix = uuid.uuid4().hex[:8]
    source, copy = f"herald_ops_{suffix}", f"herald_ops_{suffix}_restored"
    try:
        check("a new database for the run", psql("-c", f"CREATE DATABASE {source}").returncode == 0)
        data = os.path.join(work, "data")
        os.makedirs(data)

        fresh = herald("doctor", "--data-dir", data, "--database", database_url(source), "--provider-port", "0", "--device-port", "0")
        check("doctor on an empty database: it answers, the schema is created at the first start",
              fresh.returncode == 0 and "created at the first start" in store_line(fresh), fresh.stdout)
        tables = psql("-d", database_url(source), "-Atc", "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'")
        check("... and doctor changed nothing (no table created)", tables.stdout.strip() == "0", tables.stdout + tables.stderr)

        gateway, ports = start_gateway(data, database_url(source))
        key_path = os.path.join(work, "key.p8")
        key_id = herald("keys", "create", "--database", database_url(source), "--team", TEAM, "--topic", TOPIC, "--out", key_path).stdout.strip()
        tokens = [herald("tokens", "create", "--database", database_url(source), "--topic", TOPIC).stdout.strip() for _ in range(10)]
        bearer = provider_jwt(load_key(key_path), key_id, TEAM)
        with httpx.Client(http2=True, verify=ports["ca"]) as client:
            answers = [client.post(f"https://localhost:{ports['provider_port']}/3/device/{token}",
                                   content=json.dumps({"aps": {"alert": f"to {token[:8]}"}}),
                                   headers={"authorization": f"bearer {bearer}", "apns-topic": TOPIC, "apns-push-type": "alert"}).status_code
                       for token in tokens]
        check("10 pushes to offline devices accepted on PostgreSQL", answers == [200] * 10, answers)
        current = herald("doctor", "--data-dir", os.path.join(work, "other"), "--database", database_url(source), "--provider-port", "0",
                         "--device-port", "0")
        check("doctor on the database a gateway migrated: its schema is current", "schema is current" in store_line(current), current.stdout)
        gateway.terminate()
        gateway.wait(timeout=30)

        dump = os.path.join(work, "herald.dump")
        dumped = subprocess.run(["pg_dump", "-Fc", "-f", dump, database_url(source)], capture_output=True, text=True, timeout=120)
        check("pg_dump -Fc of the gateway's database", dumped.returncode == 0 and os.path.getsize(dump) > 0, dumped.stderr)
        check("a new database to restore into", psql("-c", f"CREATE DATABASE {copy}").returncode == 0)
        restored = subprocess.run(["pg_restore", "--no-owner", "-d", database_url(copy), dump], capture_output=True, text=True, timeout=120)
        check("pg_restore of the dump into it", restored.returncode == 0, restored.stderr)

        data2 = os.path.join(work, "data2")
        shutil.copytree(os.path.join(data, "tls"), os.path.join(data2, "tls"))
        gateway2, _ = start_gateway(data2, database_url(copy))
        held = herald("held", "list", "--database", database_url(copy), "--topic", TOPIC, "--json", "--limit", "100")
        items = json.loads(held.stdout)["items"] if held.returncode == 0 else []
        check("a gateway starts on the restored database, and every push it held is there",
              gateway2.poll() is None and sorted(i.get("token") for i in items) == sorted(tokens), (held.stderr[:300], len(items)))
        gateway2.terminate()
        gateway2.wait(timeout=30)

        # A schema newer than this herald: doctor fails and says to upgrade.
        psql("-d", database_url(copy), "-c", "INSERT INTO herald_migrations (version, name) VALUES (999, 'from the future')")
        newer = herald("doctor", "--data-dir", data2, "--database", database_url(copy), "--provider-port", "0", "--device-port", "0")
        check("doctor on a schema newer than this herald fails and says to upgrade",
              newer.returncode == 1 and "upgrade herald" in store_line(newer) and store_line(newer).startswith("FAIL"), newer.stdout)
        # No server at all.
        parts = urllib.parse.urlsplit(database_url("herald"))
        dead = urllib.parse.urlunsplit(parts._replace(netloc=f"{parts.username}@127.0.0.1:{free_port()}"))
        gone = herald("doctor", "--data-dir", data2, "--database", dead, "--provider-port", "0", "--device-port", "0")
        check("doctor on a database that does not answer fails, naming it",
              gone.returncode == 1 and store_line(gone).startswith("FAIL") and "cannot use the database" in store_line(gone), gone.stdout)
    finally:
        for name in (source, copy):
            psql("-c", f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    run("PostgreSQL operations", main)
