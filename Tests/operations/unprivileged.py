#!/usr/bin/env python3
"""Herald as people run it: over IPv6 and dual stack, with JSON logs, a certificate about to
expire, a mistyped variable, a configuration bomb and a collector that hangs (docs/operations.md).
Run by scripts/test.sh as the unprivileged test user, like every suite.

- IPv6: a gateway on --host ::1; curl --cacert verifies the development certificate at
  https://[::1]:PORT (it names ::1); a device on wss://[::1]:PORT and herald push send to
  https://[::1]:PORT: the push is shown. Dual stack: a gateway on --host :: takes httpx over
  127.0.0.1 and over [::1].
- A ~400-byte YAML alias bomb (and the same as a complex key) is refused in under 2 s and 200 MB,
  naming the alias and its line;
  a port of 99999 names the file and line, or the variable, it came from; a mistyped
  HERALD_PROVIDERPORT is a warning naming HERALD_PROVIDER_PORT; --print-config lists unset
  settings.
- --log-format json: every line on standard error is JSON, Herald's notices and warnings included:
  a certificate expiring in 3 days is warned about at start; a SIGHUP with a key that is not the
  certificate's is refused naming both files.
- --otlp-endpoint at a collector that accepts and never answers: spans are waiting (a push went
  through), and a SIGTERM still stops the gateway within 3 s.
- The store: a file that is not SQLite, or another program's database, is refused at start in
  words that say so, before anything listens.

Usage: unprivileged.py PATH/TO/herald
"""
import datetime
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import httpx

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from apns import load_key, provider_jwt  # noqa: E402
from harness import check, json_events, read, run, start, wait_for  # noqa: E402

HERALD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".build/debug/herald")
WORK = tempfile.mkdtemp(prefix="herald-unprivileged-")
TEAM = "TEAM123456"
TOPIC = "com.example.unprivileged"


def environment(extra=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERALD_")}
    env.update(extra or {})
    return env


def herald(*args, env=None, timeout=60):
    return subprocess.run([HERALD, *args], capture_output=True, text=True, timeout=timeout, env=environment(env))


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


def gateway(name, *flags, env=None, stderr=None):
    out = os.path.join(WORK, f"{name}.json")
    process = start([HERALD, "gateway", "--data-dir", os.path.join(WORK, name), "--provider-port", "0", *flags],
                    stdout=open(out, "w"), stderr=stderr or subprocess.DEVNULL, env=environment(env))
    line = wait_for(f"the {name} gateway's start-up line", lambda: read(out).splitlines()[0] if read(out).strip() else None)
    return process, json.loads(line)


def ipv6():
    process, ports = gateway("v6", "--host", "::1", "--device-port", "0")
    ca = ports["ca"]
    curl = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--http2", "--cacert", ca,
                           f"https://[::1]:{ports['provider_port']}/"], capture_output=True, text=True, timeout=30)
    check("curl --cacert DIR/tls/ca.pem verifies the gateway at https://[::1]:PORT (the certificate names ::1)",
          curl.returncode == 0 and curl.stdout == "404", f"exit {curl.returncode} {curl.stdout} {curl.stderr}")
    log = os.path.join(WORK, "v6-device.jsonl")
    start([HERALD, "device", "run", "--data-dir", os.path.join(WORK, "v6-phone"), "--gateway", f"wss://[::1]:{ports['device_port']}",
           "--ca", ca, "--app", TOPIC, "--json"], stdout=open(log, "w"), stderr=subprocess.DEVNULL, env=environment())
    registered = wait_for("the device's registration over IPv6", lambda: next((e for e in json_events(log) if e.get("event") == "registered"), None))
    check("a device connects and registers over wss://[::1]", any(e.get("event") == "connected" for e in json_events(log)))
    agent = socket.socket(socket.AF_UNIX)
    agent.settimeout(10)
    agent.connect(os.path.join(WORK, "v6-phone", "agent.sock"))
    agent.sendall(b'{"id":1,"op":"hello","app":"' + TOPIC.encode() + b'","state":"background"}\n'
                  b'{"id":2,"op":"requestAuthorization","options":["alert"]}\n')
    answers = agent.makefile()
    wait_for("authorization", lambda: '"id":2' in answers.readline())
    key_id = herald("keys", "create", "--data-dir", os.path.join(WORK, "v6"), "--team", TEAM, "--topic", TOPIC,
                    "--out", os.path.join(WORK, "v6.p8")).stdout.strip()
    sent = herald("push", "send", "--gateway", f"https://[::1]:{ports['provider_port']}", "--ca", ca, "--key", os.path.join(WORK, "v6.p8"),
                  "--key-id", key_id, "--team", TEAM, "--topic", TOPIC, "--token", registered["token"], "--alert", "over IPv6")
    check("herald push send to https://[::1]:PORT is accepted", sent.returncode == 0, sent.stderr)
    shown = wait_for("the delivery", lambda: next((e for e in json_events(log) if e.get("event") == "delivered"), None))
    check("the push is shown by the device", "banner" in shown["notification"].get("presented", []), json.dumps(shown)[:300])
    agent.close()
    process.terminate()
    process.wait(timeout=30)

    both, ports = gateway("dual", "--host", "::", "--log-level", "error")
    answers = []
    for host in ["127.0.0.1", "[::1]"]:
        with httpx.Client(http2=True, verify=False) as client:
            answers.append(client.get(f"https://{host}:{ports['provider_port']}/").status_code)
    check("dual stack: a gateway on --host :: answers over 127.0.0.1 and over [::1]", answers == [404, 404], answers)
    both.terminate()
    both.wait(timeout=30)


def configuration():
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
        for i in range(8))
    path = write(os.path.join(WORK, "bomb.yaml"), bomb)
    began = time.monotonic()
    process = subprocess.Popen([HERALD, "gateway", "--config", path, "--data-dir", os.path.join(WORK, "bomb")],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment())
    out, err = process.communicate(timeout=60)
    elapsed = time.monotonic() - began
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    check(f"a {len(bomb)}-byte YAML alias bomb is refused, naming the anchor and its line",
          process.returncode == 64 and "line 1" in err and "anchor or alias" in err, err[:300])
    check(f"... in under 2 s ({elapsed:.2f} s)", elapsed < 2)
    check(f"... and under 200 MB (largest child so far: {usage.ru_maxrss // 1024} MB)", usage.ru_maxrss < 200 * 1024)

    # The same nine levels reached through a complex key: Yams would hash the key through every
    # level (minutes) if the aliases were not refused from the parser's events first.
    keybomb = write(os.path.join(WORK, "keybomb.yaml"), bomb + "? *i\n: 1\n")
    began = time.monotonic()
    result = herald("gateway", "--config", keybomb, "--data-dir", os.path.join(WORK, "bomb"))
    elapsed = time.monotonic() - began
    check(f"the bomb as a complex key is refused as fast ({elapsed:.2f} s)", result.returncode == 64 and "anchor or alias" in result.stderr
          and elapsed < 2, result.stderr[:200])

    data = os.path.join(WORK, "data")
    port = write(os.path.join(WORK, "port.yaml"), f"data-dir: {data}\nprovider-port: 99999\n")
    result = herald("gateway", "--config", port)
    check("a port of 99999 from the file names the file and the line", result.returncode == 64
          and f"(from the file {port} line 2)" in result.stderr, result.stderr[:300])
    result = herald("gateway", "--data-dir", data, env={"HERALD_PROVIDER_PORT": "99999"})
    check("a port of 99999 from the environment names the variable", result.returncode == 64
          and "(from the environment HERALD_PROVIDER_PORT)" in result.stderr, result.stderr[:300])
    result = herald("gateway", "--data-dir", data, "--print-config", env={"HERALD_PROVIDERPORT": "1"})
    check("a mistyped HERALD_PROVIDERPORT is a warning naming HERALD_PROVIDER_PORT", result.returncode == 0
          and "HERALD_PROVIDERPORT is not a setting" in result.stderr and "did you mean HERALD_PROVIDER_PORT?" in result.stderr, result.stderr)
    settings = dict(line.split(" = ", 1) for line in result.stdout.splitlines() if " = " in line)
    check("--print-config lists the settings that have no value", settings.get("tls-cert") == "(unset)  (default)"
          and settings.get("webpush-port") == "(unset)  (default)", {k: settings.get(k) for k in ["tls-cert", "webpush-port"]})


def certificate(directory, name, days):
    """A self-signed certificate for localhost valid for `days` more days, and its key (PEM)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=days))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False).sign(key, hashes.SHA256()))
    cert_path = write(os.path.join(directory, f"{name}.pem"), cert.public_bytes(serialization.Encoding.PEM).decode())
    key_path = write(os.path.join(directory, f"{name}-key.pem"),
                     key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode())
    return cert_path, key_path


def hanging_collector():
    """A TCP server that accepts and never answers: a collector that hangs."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held = []

    def accept():
        while True:
            try:
                connection, _ = server.accept()
            except OSError:
                return
            held.append(connection)
    threading.Thread(target=accept, daemon=True).start()
    return server


def diagnostics():
    cert, key = certificate(WORK, "soon", 3)
    collector = hanging_collector()
    errors = os.path.join(WORK, "json.err")
    process, ports = gateway("json", "--h2c-port", "0", "--tls-cert", cert, "--tls-key", key, "--log-format", "json",
                             "--otlp-endpoint", f"http://127.0.0.1:{collector.getsockname()[1]}",
                             env={"HERALD_PROVIDERPORT": "1"}, stderr=open(errors, "w"))
    wait_for("the expiry warning", lambda: "expires at" in read(errors))
    key_id = herald("keys", "create", "--data-dir", os.path.join(WORK, "json"), "--team", TEAM, "--topic", TOPIC,
                    "--out", os.path.join(WORK, "json.p8")).stdout.strip()
    token = herald("tokens", "create", "--data-dir", os.path.join(WORK, "json"), "--topic", TOPIC).stdout.strip()
    jwt = provider_jwt(load_key(os.path.join(WORK, "json.p8")), key_id, TEAM)
    with httpx.Client(http1=False, http2=True) as client:
        answer = client.post(f"http://127.0.0.1:{ports['h2c_port']}/3/device/{token}", content=b'{"aps":{"alert":"traced"}}',
                             headers={"authorization": f"bearer {jwt}", "apns-topic": TOPIC, "apns-push-type": "alert"})
    check("a push through the h2c port while tracing to a collector that hangs is accepted", answer.status_code == 200, answer.status_code)
    _, other = certificate(WORK, "other", 30)
    os.replace(other, key)
    process.send_signal(signal.SIGHUP)
    wait_for("the refused SIGHUP", lambda: "nothing reloaded" in read(errors))
    time.sleep(1.5)  # the batch of spans is due at 1 s: the exporter is now waiting on the collector
    began = time.monotonic()
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=30)
    stopped = time.monotonic() - began
    collector.close()
    check(f"with a collector that hangs, SIGTERM stops the gateway within 3 s ({stopped:.2f} s)", stopped < 3 and process.returncode == 0,
          process.returncode)
    lines = [line for line in read(errors).splitlines() if line.strip()]
    not_json = []
    for line in lines:
        try:
            json.loads(line)
        except ValueError:
            not_json.append(line)
    check(f"--log-format json: every line on standard error is JSON ({len(lines)} lines)", lines and not not_json, not_json[:3])
    records = [json.loads(line) for line in lines if line not in not_json]
    text = json.dumps(records)
    check("the start-up warns, as JSON, that the certificate expires within 14 days, naming it",
          any("expires at" in json.dumps(r) and cert in json.dumps(r) for r in records), text[:400])
    check("the mistyped variable's warning is JSON too", any("HERALD_PROVIDERPORT" in r.get("message", "") for r in records), text[:400])
    check("the SIGHUP with another key is refused naming the key, the certificate and the mismatch",
          any("is not the key of the certificate" in json.dumps(r) and key in json.dumps(r) and cert in json.dumps(r) for r in records), text[-600:])


def stores():
    broken = os.path.join(WORK, "broken")
    os.makedirs(broken)
    write(os.path.join(broken, "herald.sqlite"), "this is not a database " * 200)
    result = herald("gateway", "--data-dir", broken, "--provider-port", "0")
    check("a herald.sqlite that is not SQLite is refused at start, saying so", result.returncode != 0
          and "is not a SQLite database" in result.stderr and "provider_port" not in result.stdout, result.stderr[-300:])
    import sqlite3
    foreign = os.path.join(WORK, "foreign")
    os.makedirs(foreign)
    db = sqlite3.connect(os.path.join(foreign, "herald.sqlite"))
    db.execute("create table invoices (id integer primary key, amount integer)")
    db.commit()
    db.close()
    result = herald("gateway", "--data-dir", foreign, "--provider-port", "0")
    check("another program's database is refused at start, naming its tables, and left as it was", result.returncode != 0
          and "another program's tables (invoices)" in result.stderr, result.stderr[-300:])
    tables = sqlite3.connect(os.path.join(foreign, "herald.sqlite")).execute("select name from sqlite_master where type='table'").fetchall()
    check("... nothing was added to it", tables == [("invoices",)], tables)


def main():
    check(f"running as an ordinary user (uid {os.getuid()})", os.getuid() != 0 or os.environ.get("HERALD_TEST_AS_ROOT") == "1")
    ipv6()
    configuration()
    diagnostics()
    stores()


if __name__ == "__main__":
    run("unprivileged", main)
