#!/usr/bin/env python3
"""Configuration files and the environment (docs/operations.md), as an operator uses them.

- A gateway started from a YAML file and HERALD_* variables only (no flags) prints its start-up
  line with the ports the file gave.
- Precedence: a flag beats the environment, which beats the file, which beats the default; and
  --print-config says which gave each setting, with secrets masked.
- `herald provider` and `herald device run` take --config too.
- Hostile files and variables: an unknown key (named, with the keys the command takes), a list
  for a single value, a string for a switch, a port that is not a number (named with its file or
  variable), a 10 MB file, a symlink to /dev/zero, a file that is not YAML, a variable that does
  not parse: each refused, exit 64, nothing started.

Usage: config.py PATH/TO/herald
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from harness import check, start, run  # noqa: E402

HERALD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".build/debug/herald")


def herald(*args, env=None):
    environment = {k: v for k, v in os.environ.items() if not k.startswith("HERALD_")}
    environment.update(env or {})
    return subprocess.run([HERALD, *args], capture_output=True, text=True, timeout=60, env=environment)


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


def main():
    work = tempfile.mkdtemp(prefix="herald-config-")
    try:
        data = os.path.join(work, "data")
        config = write(os.path.join(work, "gateway.yaml"), """
# a gateway as a unit file would start it
provider-port: 0
device-port: 0
host: 127.0.0.1
log-level: warning
token-burst: 50
""")
        environment = {k: v for k, v in os.environ.items() if not k.startswith("HERALD_")}
        environment.update({"HERALD_CONFIG": config, "HERALD_DATA_DIR": data})
        gateway = start([HERALD, "gateway"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=environment)
        line = json.loads(gateway.stdout.readline())
        check("a gateway starts from a YAML file and the environment only",
              line["provider_port"] > 0 and line["device_port"] > 0 and line["database"] == os.path.join(data, "herald.sqlite"), line)
        gateway.terminate()
        gateway.wait(timeout=30)

        shown = herald("gateway", "--config", config, "--token-burst", "7", "--print-config",
                       env={"HERALD_DATA_DIR": data, "HERALD_TOKEN_BURST": "9", "HERALD_HOST": "127.0.0.2",
                            "HERALD_DATABASE": "postgres://herald:hunter2@db.example:5432/herald"})
        settings = {line.split(" = ")[0]: line.split(" = ", 1)[1] for line in shown.stdout.splitlines() if " = " in line}
        check("--print-config: a flag beats the environment and the file", settings.get("token-burst") == "7  (command line)", settings.get("token-burst"))
        check("--print-config: the environment beats the file", settings.get("host") == "127.0.0.2  (environment HERALD_HOST)", settings.get("host"))
        check("--print-config: the file beats the default", settings.get("log-level") == f"warning  (file {config} line 6)", settings.get("log-level"))
        check("--print-config: defaults are named", settings.get("admin-host") == "127.0.0.1  (default)", settings.get("admin-host"))
        check("--print-config masks a database password", "hunter2" not in shown.stdout and "herald:********@db.example" in settings.get("database", ""),
              settings.get("database"))

        provider = herald("provider", "--config", write(os.path.join(work, "provider.yaml"), f"data-dir: {work}/provider\ngateway: https://localhost:2197\nkey: {work}/key.p8\nkey-id: ABC123DEFG\nteam: TEAM123456\nport: 0\ndefault-language: fr\n"), "--print-config")
        check("herald provider takes --config", provider.returncode == 0 and f"port = 0  (file {work}/provider.yaml line 6)" in provider.stdout,
              provider.stdout[:300] + provider.stderr[:300])
        device = herald("device", "run", "--config", write(os.path.join(work, "device.yaml"), f"data-dir: {work}/phone\napp: [com.example.a, com.example.b]\njson: true\n"),
                        "--print-config")
        check("herald device run takes --config, lists for repeatable flags and switches",
              "app = com.example.a, com.example.b" in device.stdout and "json = true" in device.stdout, device.stdout[:400] + device.stderr[:300])

        os.symlink("/dev/zero", os.path.join(work, "zero.yaml"))
        write(os.path.join(work, "big.yaml"), "data-dir: " + "x" * 10_000_000 + "\n")
        cases = [
            ("an unknown key", "provder-port: 1\n", {}, ['unknown key "provder-port"', "provider-port"]),
            ("a list for one value", "provider-port: [1, 2]\n", {}, ['"provider-port" takes one value, not a list']),
            ("a string for a switch", "enable-faults: yes please\n", {}, ['"enable-faults" is a switch']),
            ("a port that is not a number", "provider-port: abc\n", {}, ["'abc' is invalid for '--provider-port", "(from the file"]),
            ("not YAML", "data-dir: [oops\n", {}, ["is not YAML"]),
            ("a variable that does not parse", "", {"HERALD_PROVIDER_PORT": "twenty"}, ["(from the environment HERALD_PROVIDER_PORT)"]),
            ("a switch variable that does not parse", "", {"HERALD_ENABLE_FAULTS": "maybe"}, ["HERALD_ENABLE_FAULTS=maybe: a switch takes true or false"]),
        ]
        for name, text, env, expected in cases:
            path = write(os.path.join(work, "case.yaml"), "data-dir: " + data + "\n" + text)
            result = herald("gateway", "--config", path, env=env)
            check(f"refused, naming what to fix: {name}", result.returncode == 64 and all(e in result.stderr for e in expected), result.stderr[:300])
        for name, path, expected in [("a 10 MB file", os.path.join(work, "big.yaml"), "a configuration file is at most 1 MiB"),
                                     ("a symlink to /dev/zero", os.path.join(work, "zero.yaml"), "is not a regular file")]:
            result = herald("gateway", "--config", path)
            check(f"refused, naming what to fix: {name}", result.returncode == 64 and expected in result.stderr, result.stderr[:300])
        doctor(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def expired_certificate(directory):
    """A self-signed certificate that expired yesterday, and its key (PEM files)."""
    import datetime
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "old.example")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key()).serial_number(1)
            .not_valid_before(now - datetime.timedelta(days=400)).not_valid_after(now - datetime.timedelta(days=1)).sign(key, hashes.SHA256()))
    cert_path, key_path = os.path.join(directory, "old.pem"), os.path.join(directory, "old-key.pem")
    write(cert_path, cert.public_bytes(serialization.Encoding.PEM).decode())
    write(key_path, key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode())
    return cert_path, key_path


def doctor(work):
    """herald doctor: one line per check, exit 1 on a failure."""
    data = os.path.join(work, "doctor-data")
    fresh = herald("doctor", "--data-dir", data, "--provider-port", "0", "--device-port", "0")
    check("doctor on a new configuration: every check ok, exit 0", fresh.returncode == 0 and "FAIL" not in fresh.stdout
          and "will be created" in fresh.stdout, fresh.stdout + fresh.stderr)
    check("doctor: the connections line says what the descriptor limit allows",
          any(line.split()[:2] in (["ok", "connections:"], ["warn", "connections:"]) and "descriptor limit" in line
              for line in fresh.stdout.splitlines()), fresh.stdout)
    gateway = start([HERALD, "gateway", "--data-dir", data, "--provider-port", "0", "--device-port", "0", "--host", "127.0.0.1",
                     "--log-level", "error"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    port = json.loads(gateway.stdout.readline())["provider_port"]
    busy = herald("doctor", "--data-dir", data, "--provider-port", str(port))
    lines = busy.stdout.splitlines()
    check("doctor: a port in use fails, the running gateway is a warning, the store passes its integrity check",
          busy.returncode == 1 and any(line.startswith("FAIL") and f":{port} is in use" in line for line in lines)
          and any(line.startswith("warn") and "running on it" in line for line in lines)
          and any(line.startswith("ok") and "integrity check" in line for line in lines), busy.stdout)
    gateway.terminate()
    gateway.wait(timeout=30)
    tls = os.path.join(data, "tls")
    mismatch = herald("doctor", "--data-dir", data, "--provider-port", "0", "--tls-cert", os.path.join(tls, "server.pem"),
                      "--tls-key", os.path.join(tls, "ca-key.pem"))
    check("doctor: a key that is not the certificate's fails", mismatch.returncode == 1 and "is not the key of" in mismatch.stdout, mismatch.stdout)
    cert, key = expired_certificate(work)
    expired = herald("doctor", "--data-dir", data, "--provider-port", "0", "--tls-cert", cert, "--tls-key", key)
    check("doctor: an expired certificate fails, with its date", expired.returncode == 1 and "expired on" in expired.stdout, expired.stdout)
    broken = os.path.join(work, "broken")
    os.makedirs(broken)
    write(os.path.join(broken, "herald.sqlite"), "this is not a database" * 100)
    bad = herald("doctor", "--data-dir", broken, "--provider-port", "0")
    check("doctor: a store that is not a database fails", bad.returncode == 1 and any(line.startswith("FAIL  store") for line in bad.stdout.splitlines()),
          bad.stdout)


if __name__ == "__main__":
    run("config", main)
