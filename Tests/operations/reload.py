#!/usr/bin/env python3
"""Reload without a restart: SIGHUP (docs/operations.md).

A gateway on --tls-cert/--tls-key (a certificate from CA one) and a --config file (log level
warning, a per-token limit of 2 pushes) with a device connected. The files are replaced by a
certificate from CA two and the gateway gets SIGHUP: a new connection is served the new
certificate, the device's connection stays up (no reconnection) and a push still reaches it.
The per-token limit answers 429; the file is changed (no limit, log level debug, and a setting
that needs a restart) and SIGHUP again: the push goes through, debug lines appear, and the
gateway names the setting it did not apply. Then a file with an unknown key, and a certificate
file replaced by garbage: each SIGHUP is refused, saying why, nothing changes, and it keeps serving.

Usage: reload.py PATH/TO/herald
"""
import datetime
import hashlib
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from harness import check, json_events as events, read, start, wait_for, run  # noqa: E402

HERALD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".build/debug/herald")
TOPIC = "com.example.reload"


def pem(cert):
    return cert.public_bytes(serialization.Encoding.PEM).decode()


def authority(directory, name):
    """A CA and a localhost certificate it signs: (ca.pem, cert.pem, key.pem) in directory."""
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"Reload test {name}")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
          .not_valid_after(now + datetime.timedelta(days=30)).add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])).issuer_name(ca_name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False).sign(ca_key, hashes.SHA256()))
    paths = [os.path.join(directory, f"{name}-{part}.pem") for part in ("ca", "cert", "key")]
    for path, text in zip(paths, [pem(ca), pem(leaf) + pem(ca),
                                  key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()]):
        with open(path, "w") as f:
            f.write(text)
    return paths, hashlib.sha256(leaf.public_bytes(serialization.Encoding.DER)).hexdigest()


def served_certificate(port):
    """The SHA-256 of the certificate a new TLS connection to the port is served."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw, context.wrap_socket(raw, server_hostname="localhost") as tls:
        return hashlib.sha256(tls.getpeercert(binary_form=True)).hexdigest()


def main():
    work = tempfile.mkdtemp(prefix="herald-reload-")
    try:
        (ca_one, cert_one, key_one), one = authority(work, "one")
        (ca_two, cert_two, key_two), two = authority(work, "two")
        cert, key = os.path.join(work, "server.pem"), os.path.join(work, "server-key.pem")
        shutil.copy(cert_one, cert)
        shutil.copy(key_one, key)
        data = os.path.join(work, "data")
        err = os.path.join(work, "gateway.err")
        config = os.path.join(work, "gateway.yaml")
        with open(config, "w") as f:
            f.write("log-level: warning\ntoken-burst: 2\ntoken-rate: 0.001\n")
        gateway = start([HERALD, "gateway", "--config", config, "--data-dir", data, "--provider-port", "0", "--device-port", "0", "--h2c-port", "0",
                         "--host", "127.0.0.1", "--tls-cert", cert, "--tls-key", key],
                        stdout=subprocess.PIPE, stderr=open(err, "w"), text=True)
        ports = json.loads(gateway.stdout.readline())
        check("the gateway serves the first certificate", served_certificate(ports["device_port"]) == one)

        log = os.path.join(work, "device.jsonl")
        start([HERALD, "device", "run", "--data-dir", os.path.join(work, "phone"), "--gateway", f"wss://localhost:{ports['device_port']}",
               "--ca", ca_one, "--app", TOPIC, "--json"], stdout=open(log, "w"), stderr=subprocess.DEVNULL)
        token = wait_for("the device's token", lambda: next((e["token"] for e in events(log) if e.get("event") == "registered"), None))

        shutil.copy(cert_two, cert)
        shutil.copy(key_two, key)
        gateway.send_signal(signal.SIGHUP)
        wait_for("the reload", lambda: "SIGHUP: reloaded" in read(err))
        check("after SIGHUP a new connection is served the new certificate, on every TLS port",
              served_certificate(ports["device_port"]) == two and served_certificate(ports["provider_port"]) == two)

        key_path = os.path.join(work, "key.p8")
        key_id = subprocess.run([HERALD, "keys", "create", "--data-dir", data, "--team", "TEAM123456", "--topic", TOPIC, "--out", key_path],
                                capture_output=True, text=True, check=True).stdout.strip()
        sent = subprocess.run([HERALD, "push", "send", "--gateway", f"http://127.0.0.1:{ports['h2c_port']}", "--key", key_path, "--key-id", key_id,
                               "--team", "TEAM123456", "--topic", TOPIC, "--token", token, "--alert", "after the rotation"],
                              capture_output=True, text=True)
        got = wait_for("the push", lambda: next((e for e in events(log) if e.get("event") == "notification"), None))
        kinds = [e.get("event") for e in events(log)]
        check("the device connected before the rotation stays connected and still receives",
              sent.returncode == 0 and got["payload"]["aps"]["alert"] == "after the rotation"
              and "disconnected" not in kinds and "reconnected" not in kinds, (sent.stderr, kinds))

        def push(topic=TOPIC):
            return subprocess.run([HERALD, "push", "send", "--gateway", f"http://127.0.0.1:{ports['h2c_port']}", "--key", key_path,
                                   "--key-id", key_id, "--team", "TEAM123456", "--topic", topic, "--token", token, "--alert", "again"],
                                  capture_output=True, text=True)
        limited = [push(), push()]
        check("the file's per-token limit (burst 2) answers the third push to the token 429",
              limited[0].returncode == 0 and limited[1].returncode != 0 and "TooManyRequests" in limited[1].stdout + limited[1].stderr,
              [(r.returncode, r.stdout[-200:], r.stderr[-200:]) for r in limited])
        with open(config, "w") as f:
            f.write("log-level: debug\ntoken-burst: 0\noffline-queue: 50\n")
        gateway.send_signal(signal.SIGHUP)
        wait_for("the second reload", lambda: read(err).count("SIGHUP: reloaded") >= 2)
        said = [line for line in read(err).splitlines() if "SIGHUP: reloaded" in line][-1]
        check("SIGHUP applies the file's new log level and rate limit, and names what needs a restart",
              "log level warning -> debug" in said and "per-token rate limit burst 2, 0.001/s -> none" in said
              and "applied only at a restart: offline-queue" in said, said)
        unlimited = push()
        check("... the token's next push goes through (no limit now)", unlimited.returncode == 0, (unlimited.stdout, unlimited.stderr))
        refused = push(topic="com.example.not-its-topic")
        wait_for("a debug line", lambda: "provider request refused" in read(err))
        check("... and debug lines are written now (a refused push is logged)", refused.returncode != 0)

        with open(config, "w") as f:
            f.write("log-level: warning\ntoken-burst: 2\nno-such-setting: 1\n")
        gateway.send_signal(signal.SIGHUP)
        wait_for("the refused settings", lambda: "nothing reloaded, the running settings stay" in read(err))
        again = push()
        check("a file with an unknown key on SIGHUP is refused, naming the key, and nothing changes (still no limit)",
              "unknown key \"no-such-setting\"" in read(err) and again.returncode == 0 and gateway.poll() is None, read(err)[-400:])

        with open(config, "w") as f:
            f.write("log-level: debug\ntoken-burst: 0\n")
        with open(cert, "w") as f:
            f.write("-----BEGIN CERTIFICATE-----\ngarbage\n-----END CERTIFICATE-----\n")
        gateway.send_signal(signal.SIGHUP)
        wait_for("the refused reload", lambda: "the TLS files could not be loaded" in read(err))
        check("a garbage certificate on SIGHUP is refused, saying why, and the running one stays",
              gateway.poll() is None and served_certificate(ports["device_port"]) == two, read(err)[-300:])
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    run("reload", main)
