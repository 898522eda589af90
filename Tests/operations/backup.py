#!/usr/bin/env python3
"""herald backup and herald restore, as an operator runs them (docs/operations.md).

- A backup taken while pushes stream into a running gateway (httpx, HTTP/2) is one consistent
  snapshot: restored into an empty directory, a gateway starts on it with the same CA, and every
  push answered 200 before the backup began is there (held for its offline device).
- The running gateway is unharmed: it keeps accepting during and after the backup.
- Refusals that name what to fix: an --out that exists, a restore over a live data directory or a
  used one, a backup whose file was changed (checksum), a manifest that points outside the backup.
- Every file keeps its mode (the store's copy included); a gateway's --tls-cert/--tls-key files are
  included when given (else the backup says they are not) and put back where they were by restore,
  never over a different file.
- A full disk (a 32 KiB tmpfs): the backup fails, says so, and leaves nothing behind.

Usage: backup.py PATH/TO/herald
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading

import httpx

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from apns import load_key, provider_jwt  # noqa: E402
from harness import check, start, run  # noqa: E402

HERALD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".build/debug/herald")
TEAM = "TEAM123456"
TOPIC = "com.example.backup"


def herald(*args):
    return subprocess.run([HERALD, *args], capture_output=True, text=True, timeout=120)


def start_gateway(data):
    gateway = start([HERALD, "gateway", "--data-dir", data, "--provider-port", "0", "--device-port", "0", "--host", "127.0.0.1",
                     "--log-level", "warning"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    return gateway, json.loads(gateway.stdout.readline())


def main():
    work = tempfile.mkdtemp(prefix="herald-backup-")
    data = os.path.join(work, "data")
    try:
        gateway, ports = start_gateway(data)
        key_path = os.path.join(work, "key.p8")
        key_id = herald("keys", "create", "--data-dir", data, "--team", TEAM, "--topic", TOPIC, "--out", key_path).stdout.strip()
        tokens = [herald("tokens", "create", "--data-dir", data, "--topic", TOPIC).stdout.strip() for _ in range(20)]
        bearer = provider_jwt(load_key(key_path), key_id, TEAM)
        client = httpx.Client(http2=True, verify=ports["ca"])
        base = f"https://localhost:{ports['provider_port']}"

        def push(i):
            r = client.post(f"{base}/3/device/{tokens[i % len(tokens)]}", content=json.dumps({"aps": {"alert": f"n{i}"}}),
                            headers={"authorization": f"bearer {bearer}", "apns-topic": TOPIC, "apns-push-type": "alert",
                                     "apns-collapse-id": f"c{i}"})
            return r.status_code

        before = [push(i) for i in range(200)]
        check("200 pushes accepted before the backup", before == [200] * 200, set(before))

        # Pushes keep streaming while the backup runs.
        streamed, stop = [], threading.Event()

        def stream():
            i = 1000
            while not stop.is_set():
                streamed.append(push(i))
                i += 1
        pusher = threading.Thread(target=stream)
        pusher.start()
        out = os.path.join(work, "backup-1")
        made = herald("backup", "--data-dir", data, "--out", out)
        stop.set()
        pusher.join()
        check("herald backup of a running gateway succeeds and says where", made.returncode == 0 and out in made.stdout, made.stderr or made.stdout)
        check("the gateway kept accepting during the backup", len(streamed) > 0 and set(streamed) == {200}, (len(streamed), set(streamed)))
        manifest = json.load(open(os.path.join(out, "MANIFEST.json")))
        names = {f["path"] for f in manifest["files"]}
        check("the backup holds the store and the TLS files, each with its SHA-256",
              {"herald.sqlite", "tls/ca.pem", "tls/ca-key.pem", "tls/server.pem", "tls/server-key.pem"} <= names
              and all(len(f["sha256"]) == 64 for f in manifest["files"]), sorted(names))
        check("private keys keep their mode", next(f for f in manifest["files"] if f["path"] == "tls/ca-key.pem")["mode"] == 0o600, manifest["files"])
        modes = {f["path"]: (f["mode"], os.stat(os.path.join(out, f["path"])).st_mode & 0o777, os.stat(os.path.join(data, f["path"])).st_mode & 0o777)
                 for f in manifest["files"]}
        check("every copied file has the mode the manifest records, which is the original's (the store's copy too)",
              all(recorded == copied == original for recorded, copied, original in modes.values()), modes)

        # Refusals.
        again = herald("backup", "--data-dir", data, "--out", out)
        check("a backup never overwrites: an --out that exists is refused", again.returncode != 0 and "exists already" in again.stderr, again.stderr)
        live = herald("restore", "--from", out, "--data-dir", data)
        check("restore over a live data directory is refused", live.returncode != 0 and "not empty" in live.stderr, live.stderr)

        # Restore into an empty directory and start a gateway on it.
        restored = os.path.join(work, "restored")
        result = herald("restore", "--from", out, "--data-dir", restored)
        check("restore into a new directory succeeds", result.returncode == 0, result.stderr)
        check("the restored CA is the backed-up one", open(os.path.join(restored, "tls/ca.pem")).read() == open(os.path.join(data, "tls/ca.pem")).read())
        gateway.terminate()
        gateway.wait(timeout=30)
        gateway2, ports2 = start_gateway(restored)
        held = herald("held", "list", "--data-dir", restored, "--json", "--limit", "1000")
        # An offline device keeps its newest notification (as APNs does): one held per token.
        held_ids = json.loads(held.stdout)["items"] if held.returncode == 0 else []
        check("the restored gateway starts and holds a notification for every token pushed to before the backup", gateway2.poll() is None
              and len({h.get("token") for h in held_ids}) == 20, (held.returncode, held_ids[:2], held.stderr[:300]))
        gateway2.terminate()
        gateway2.wait(timeout=30)

        # A gateway whose TLS files are given by flag, outside its data directory.
        tls_dir = os.path.join(work, "etc-tls")
        os.makedirs(tls_dir)
        cert, key = os.path.join(tls_dir, "gateway.pem"), os.path.join(tls_dir, "gateway-key.pem")
        shutil.copy(os.path.join(data, "tls/server.pem"), cert)
        shutil.copy(os.path.join(data, "tls/server-key.pem"), key)
        os.chmod(key, 0o600)
        bare = os.path.join(work, "bare")
        os.makedirs(bare)
        shutil.copy(os.path.join(restored, "herald.sqlite"), os.path.join(bare, "herald.sqlite"))
        noted = herald("backup", "--data-dir", bare, "--out", os.path.join(work, "backup-bare"))
        check("without --tls-cert/--tls-key, a backup of a directory with no development certificate says the TLS files are not included",
              noted.returncode == 0 and "not included" in noted.stderr, noted.stderr)
        flagged = os.path.join(work, "backup-tls")
        made = herald("backup", "--data-dir", bare, "--out", flagged, "--tls-cert", cert, "--tls-key", key)
        entries = {f.get("origin"): f for f in json.load(open(os.path.join(flagged, "MANIFEST.json")))["files"] if f.get("origin")}
        check("--tls-cert/--tls-key: both files are in the backup with their origin and mode", made.returncode == 0
              and set(entries) == {cert, key} and entries[key]["mode"] == 0o600, (made.stderr, entries))
        os.remove(cert)
        os.remove(key)
        back = herald("restore", "--from", flagged, "--data-dir", os.path.join(work, "restored-tls"))
        check("restore puts the TLS files back where they were, with their modes", back.returncode == 0 and os.path.exists(cert)
              and os.stat(key).st_mode & 0o777 == 0o600 and open(cert).read() == open(os.path.join(data, "tls/server.pem")).read(), back.stderr)
        with open(key, "a") as f:
            f.write("# changed\n")
        clash = herald("restore", "--from", flagged, "--data-dir", os.path.join(work, "restored-tls-2"))
        check("restore never writes over a different file at an origin, and writes nothing then", clash.returncode != 0
              and "where a different file is" in clash.stderr and not os.path.exists(os.path.join(work, "restored-tls-2")), clash.stderr)

        # A damaged backup: one byte of a file changed.
        damaged = os.path.join(work, "damaged")
        shutil.copytree(out, damaged)
        with open(os.path.join(damaged, "tls/server.pem"), "a") as f:
            f.write("#")
        bad = herald("restore", "--from", damaged, "--data-dir", os.path.join(work, "r2"))
        check("a changed file is refused by its checksum", bad.returncode != 0 and "tls/server.pem does not match its SHA-256" in bad.stderr, bad.stderr)
        evil = os.path.join(work, "evil")
        shutil.copytree(out, evil)
        m = json.load(open(os.path.join(evil, "MANIFEST.json")))
        m["files"].append({"path": "../../etc/passwd", "bytes": 1, "mode": 420, "sha256": "0" * 64})
        json.dump(m, open(os.path.join(evil, "MANIFEST.json"), "w"))
        bad = herald("restore", "--from", evil, "--data-dir", os.path.join(work, "r3"))
        check("a manifest naming a path outside the backup is refused", bad.returncode != 0 and "stay inside it" in bad.stderr, bad.stderr)
        check("nothing was restored from a refused backup", not os.path.exists(os.path.join(work, "r2", "herald.sqlite"))
              and not os.path.exists(os.path.join(work, "r3", "herald.sqlite")))

        # A full disk: a 32 KiB tmpfs, mounted in a mount namespace of the backup's own (an
        # unprivileged user namespace: no root needed; the tmpfs is gone when the command ends).
        small = os.path.join(work, "small")
        os.makedirs(small)
        target = os.path.join(small, "backup")
        script = 'mount -t tmpfs -o size=32k tmpfs "$1" && shift && exec "$@"'
        full = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", script, "sh", small,
                               HERALD, "backup", "--data-dir", restored, "--out", target], capture_output=True, text=True, timeout=120)
        check("a backup on a full disk fails, saying so, and leaves nothing", full.returncode != 0 and "nothing was kept" in full.stderr
              and ("full" in full.stderr or "space" in full.stderr) and not os.listdir(small), full.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    run("backup", main)
