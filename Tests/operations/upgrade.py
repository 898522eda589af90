#!/usr/bin/env python3
"""Upgrades keep data: stores an earlier Herald wrote (Tests/operations/fixtures, made by that
Herald's own binary with make-upgrade-fixtures.sh, which says how) open in this one.

- SQLite: the earlier herald.sqlite (an older schema) is migrated at start; its provider key
  still signs pushes that are accepted, its tokens are still registered, and the notifications it
  held are still held, with their apns-ids; herald doctor passes on it.
- PostgreSQL: the earlier database (restored from its pg_dump) is migrated the same way, and the
  same facts hold through a gateway on it.
- A store from a newer Herald (a migration this one does not know) is refused at start with a
  message that says so, and is left as it was.

Usage: upgrade.py PATH/TO/herald   (HERALD_TEST_POSTGRES_URL for the PostgreSQL half)
"""
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile

import httpx

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from apns import load_key, provider_jwt  # noqa: E402
from harness import check, read, run, start, wait_for  # noqa: E402

HERALD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".build/debug/herald")
FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
WORK = tempfile.mkdtemp(prefix="herald-upgrade-")


def herald(*args):
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERALD_")}
    return subprocess.run([HERALD, *args], capture_output=True, text=True, timeout=120, env=env)


def gateway(name, store):
    out = os.path.join(WORK, f"{name}.json")
    err = os.path.join(WORK, f"{name}.err")
    process = start([HERALD, "gateway", "--data-dir", os.path.join(WORK, name), *store, "--provider-port", "0", "--h2c-port", "0",
                     "--log-level", "warning"], stdout=open(out, "w"), stderr=open(err, "w"))
    line = wait_for(f"the {name} gateway", lambda: read(out).splitlines()[0] if read(out).strip() else (None if process.poll() is None else "exited"))
    check(f"[{name}] the current Herald starts on the store an earlier one wrote", line != "exited", read(err)[-400:])
    return process, json.loads(line) if line != "exited" else None


def facts_hold(name, store, facts, ports):
    held = herald("held", "list", *store, "--json", "--limit", "100")
    items = json.loads(held.stdout)["items"] if held.returncode == 0 else []
    check(f"[{name}] every notification the earlier Herald held is still held, by apns-id",
          sorted(str(h.get("apnsId")) for h in items) == sorted(facts["apns_ids"]), (held.stderr[-300:], items[:1]))
    keys = herald("keys", "list", *store)
    check(f"[{name}] its provider key is still there", keys.returncode == 0 and facts["key_id"] in keys.stdout, keys.stdout + keys.stderr)
    # The earlier key's private half is not kept (the provider keeps it): a push is signed with a
    # key made now for the same team, to a token the earlier Herald registered.
    key_id = herald("keys", "create", *store, "--team", facts["team"], "--topic", facts["topic"],
                    "--out", os.path.join(WORK, f"{name}.p8")).stdout.strip()
    jwt = provider_jwt(load_key(os.path.join(WORK, f"{name}.p8")), key_id, facts["team"])
    with httpx.Client(http1=False, http2=True) as client:
        answer = client.post(f"http://127.0.0.1:{ports['h2c_port']}/3/device/{facts['tokens'][0]}", content=b'{"aps":{"alert":"after the upgrade"}}',
                             headers={"authorization": f"bearer {jwt}", "apns-topic": facts["topic"], "apns-push-type": "alert"})
    check(f"[{name}] a token the earlier Herald registered takes a push (200)", answer.status_code == 200, (answer.status_code, answer.text))


def sqlite_upgrade():
    facts = json.load(open(os.path.join(FIXTURES, "sqlite.json")))
    data = os.path.join(WORK, "sqlite")
    os.makedirs(data)
    shutil.copy(os.path.join(FIXTURES, "sqlite.sqlite"), os.path.join(data, "herald.sqlite"))
    before = [row[0] for row in sqlite3.connect(os.path.join(data, "herald.sqlite")).execute("SELECT identifier FROM grdb_migrations")]
    process, ports = gateway("sqlite", [])
    if ports:
        facts_hold("sqlite", ["--data-dir", data], facts, ports)
    process.terminate()
    process.wait(timeout=30)
    after = [row[0] for row in sqlite3.connect(os.path.join(data, "herald.sqlite")).execute("SELECT identifier FROM grdb_migrations")]
    check(f"[sqlite] the earlier schema ({len(before)} migrations) was migrated ({len(after)})", len(after) > len(before) and after[:len(before)] == before,
          (before, after))
    doctor = herald("doctor", "--data-dir", data, "--provider-port", "0")
    check("[sqlite] herald doctor passes on the upgraded store", doctor.returncode == 0 and "integrity check" in doctor.stdout, doctor.stdout)

    # A newer Herald's store: one migration this Herald does not know.
    newer = os.path.join(WORK, "newer")
    os.makedirs(newer)
    shutil.copy(os.path.join(data, "herald.sqlite"), os.path.join(newer, "herald.sqlite"))
    db = sqlite3.connect(os.path.join(newer, "herald.sqlite"))
    db.execute("INSERT INTO grdb_migrations (identifier) VALUES ('v99: from a newer Herald')")
    db.commit()
    db.close()
    size = os.path.getsize(os.path.join(newer, "herald.sqlite"))
    refused = herald("gateway", "--data-dir", newer, "--provider-port", "0")
    check("a store from a newer Herald is refused at start, saying so", refused.returncode != 0
          and "written by a newer Herald" in refused.stderr and "upgrade herald" in refused.stderr, refused.stderr[-300:])
    check("... and left as it was", os.path.getsize(os.path.join(newer, "herald.sqlite")) == size)


def postgres_upgrade():
    url = os.environ.get("HERALD_TEST_POSTGRES_URL")
    if not url:
        check("[postgres] HERALD_TEST_POSTGRES_URL names a server (scripts/test.sh starts one)", False)
        return
    facts = json.load(open(os.path.join(FIXTURES, "postgres.json")))
    base = url.split("?")[0].rsplit("/", 1)[0]
    subprocess.run(["psql", f"{base}/postgres", "-q", "-c", "DROP DATABASE IF EXISTS herald_upgrade", "-c", "CREATE DATABASE herald_upgrade"],
                   check=True, capture_output=True)
    restored = subprocess.run(["psql", f"{base}/herald_upgrade", "-q", "-v", "ON_ERROR_STOP=1", "-f", os.path.join(FIXTURES, "postgres.sql")],
                              capture_output=True, text=True)
    check("[postgres] the earlier database is restored from its dump", restored.returncode == 0, restored.stderr[-300:])
    database = f"{base}/herald_upgrade?sslmode=disable"
    doctor = herald("doctor", "--data-dir", os.path.join(WORK, "postgres"), "--database", database, "--provider-port", "0")
    check("[postgres] herald doctor calls the earlier schema older, to be migrated at start", "migrated to" in doctor.stdout, doctor.stdout)
    process, ports = gateway("postgres", ["--database", database])
    if ports:
        facts_hold("postgres", ["--database", database], facts, ports)
    process.terminate()
    process.wait(timeout=30)
    doctor = herald("doctor", "--data-dir", os.path.join(WORK, "postgres"), "--database", database, "--provider-port", "0")
    check("[postgres] after the start, doctor finds the schema current", "is current" in doctor.stdout, doctor.stdout)
    subprocess.run(["psql", f"{base}/postgres", "-q", "-c", "DROP DATABASE IF EXISTS herald_upgrade"], capture_output=True)


def main():
    try:
        sqlite_upgrade()
        postgres_upgrade()
    finally:
        shutil.rmtree(WORK, ignore_errors=True)


if __name__ == "__main__":
    run("upgrade", main)
