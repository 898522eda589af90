#!/usr/bin/env python3
"""Independent-client compatibility checks for Herald's provider port.

Starts `herald gateway` as a child process, then drives it with clients that know nothing of
Herald: Python httpx (HTTP/2 over TLS, offering ALPN http/1.1,h2) and curl --http2 (Apple's
documented recipe, including its DER signature), plus curl over h2c. Prints
"N passed, N failed" and exits non-zero if any check failed.

Usage: compat.py PATH/TO/herald
"""
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid

import httpx
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

HERALD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".build/debug/herald")
TEAM = "TEAM123456"
TOPIC = "com.example.compat"
results = []


def check(name, condition, detail=""):
    results.append(condition)
    print(("ok   " if condition else "FAIL ") + name + ("" if condition else f"  -- {detail}"), flush=True)


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def jwt(key, key_id, der=False, iat=None):
    header = b64(json.dumps({"alg": "ES256", "kid": key_id}).encode())
    claims = b64(json.dumps({"iss": TEAM, "iat": int(iat if iat is not None else time.time())}).encode())
    signing_input = f"{header}.{claims}".encode()
    signature = key.sign(signing_input, ec.ECDSA(hashes.SHA256()))  # DER, as `openssl dgst -sign` writes
    if not der:
        r, s = decode_dss_signature(signature)
        signature = r.to_bytes(32, "big") + s.to_bytes(32, "big")
    return f"{header}.{claims}.{b64(signature)}"


def herald(*args):
    out = subprocess.run([HERALD, *args], capture_output=True, text=True, check=True)
    return out.stdout.strip()


def curl(*args):
    out = subprocess.run(["curl", "-s", "-o", "-", "-w", "\n%{http_code} %{http_version}", *args],
                         capture_output=True, text=True)
    body, _, status = out.stdout.rpartition("\n")
    code, version = status.split(" ")
    return int(code), version, body


def main():
    data = tempfile.mkdtemp(prefix="herald-compat-")
    gateway = subprocess.Popen(
        [HERALD, "gateway", "--data-dir", data, "--provider-port", "0", "--h2c-port", "0",
         "--host", "127.0.0.1", "--log-level", "warning"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        ports = json.loads(gateway.stdout.readline())
        port, h2c, ca = ports["provider_port"], ports["h2c_port"], ports["ca"]
        key_path = os.path.join(data, "key.p8")
        key_id = herald("keys", "create", "--data-dir", data, "--team", TEAM, "--topic", TOPIC, "--out", key_path)
        with open(key_path, "rb") as f:
            key = serialization.load_pem_private_key(f.read(), password=None)
        token = herald("tokens", "create", "--data-dir", data, "--topic", TOPIC)
        removed = herald("tokens", "create", "--data-dir", data, "--topic", TOPIC)
        herald("tokens", "revoke", "--data-dir", data, "--token", removed)
        base = f"https://localhost:{port}"
        auth = {"authorization": f"bearer {jwt(key, key_id)}", "apns-topic": TOPIC, "apns-push-type": "alert"}
        body = b'{"aps":{"alert":"hi"}}'

        # --- httpx: offers ALPN http/1.1 and h2; the gateway must pick h2.
        with httpx.Client(http2=True, verify=ca) as client:
            r = client.post(f"{base}/3/device/{token}", headers=auth, content=body)
            check("httpx: 200 over HTTP/2", r.status_code == 200 and r.http_version == "HTTP/2", f"{r.status_code} {r.http_version}")
            check("httpx: generated apns-id is a UUID", uuid.UUID(r.headers.get("apns-id", "x" * 36)) is not None)
            check("httpx: 200 has an empty body", r.content == b"", r.content)
            given = "eabeae54-14a8-11e5-b60b-1697f925ec7b"
            r = client.post(f"{base}/3/device/{token}", headers={**auth, "apns-id": given}, content=body)
            check("httpx: apns-id echoed", r.headers.get("apns-id", "").lower() == given, r.headers)
            r = client.post(f"{base}/3/device/{removed}", headers=auth, content=body)
            j = r.json()
            check("httpx: 410 Unregistered with a millisecond timestamp",
                  r.status_code == 410 and j.get("reason") == "Unregistered" and j.get("timestamp", 0) > 10**12, (r.status_code, j))
            r = client.post(f"{base}/3/device/{'00' * 32}", headers=auth, content=body)
            check("httpx: unknown token is 400 BadDeviceToken", (r.status_code, r.json()) == (400, {"reason": "BadDeviceToken"}), r.text)
            r = client.post(f"{base}/3/device/{token}", headers={**auth, "apns-priority": "7"}, content=body)
            check("httpx: 400 BadPriority", (r.status_code, r.json()) == (400, {"reason": "BadPriority"}), r.text)
            big = b'{"aps":{"alert":"' + b"a" * 4100 + b'"}}'
            r = client.post(f"{base}/3/device/{token}", headers=auth, content=big)
            check("httpx: 413 PayloadTooLarge", (r.status_code, r.json()) == (413, {"reason": "PayloadTooLarge"}), r.text)
            r = client.post(f"{base}/3/device/{token}", headers={"apns-topic": TOPIC}, content=body)
            check("httpx: 403 MissingProviderToken", (r.status_code, r.json()) == (403, {"reason": "MissingProviderToken"}), r.text)

        # --- curl: Apple's command-line recipe (a DER signature, as openssl writes it).
        der = jwt(key, key_id, der=True)
        headers = ["-H", f"apns-topic: {TOPIC}", "-H", "apns-push-type: alert", "-H", f"authorization: bearer {der}"]
        code, version, text = curl("--http2", "--cacert", ca, *headers, "-d", '{"aps":{"alert":"test"}}', f"{base}/3/device/{token}")
        check("curl --http2: 200 with a DER-signed JWT", (code, version, text) == (200, "2", ""), (code, version, text))
        code, version, text = curl("--http2", "--cacert", ca, *headers, f"{base}/3/device/{token}")
        check("curl: GET is 405 MethodNotAllowed", code == 405 and json.loads(text) == {"reason": "MethodNotAllowed"}, (code, text))
        code, version, text = curl("--http2", "--cacert", ca, *headers, "-d", "{}", f"{base}/3/devices/{token}")
        check("curl: wrong path is 404 BadPath", code == 404 and json.loads(text) == {"reason": "BadPath"}, (code, text))
        code, version, text = curl("--http2-prior-knowledge", *headers, "-d", '{"aps":{"alert":"h2c"}}', f"http://127.0.0.1:{h2c}/3/device/{token}")
        check("curl --http2-prior-knowledge: 200 on the h2c port", (code, version) == (200, "2"), (code, version, text))
        code, version, text = curl("--http2", "--cacert", ca, "-H", f"apns-topic: {TOPIC}", "-H",
                                   f"authorization: bearer {jwt(key, key_id, iat=time.time() - 3700)}", "-d", "{}", f"{base}/3/device/{token}")
        check("curl: old iat is 403 ExpiredProviderToken", code == 403 and json.loads(text) == {"reason": "ExpiredProviderToken"}, (code, text))
    finally:
        gateway.terminate()
        try:
            gateway.wait(timeout=20)
        except subprocess.TimeoutExpired:
            gateway.kill()
        shutil.rmtree(data, ignore_errors=True)

    passed = sum(1 for r in results if r)
    failed = len(results) - passed
    print(f"compat: {passed} passed, {failed} failed")
    sys.exit(1 if failed or not results else 0)


if __name__ == "__main__":
    main()
