#!/usr/bin/env python3
"""Independent-client compatibility checks for Herald's provider port.

Starts `herald gateway` as a child process, then drives it with clients that know nothing of
Herald: Python httpx (HTTP/2 over TLS, offering ALPN http/1.1,h2) and curl --http2 (Apple's
documented recipe, including its DER signature), plus curl over h2c. Prints
"N passed, N failed" and exits non-zero if any check failed.

Usage: compat.py PATH/TO/herald
"""
import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import uuid

import h2.config
import h2.connection
import h2.events
import httpx
from cryptography.hazmat.primitives import serialization

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from apns import provider_jwt  # noqa: E402

HERALD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".build/debug/herald")
TEAM = "TEAM123456"
TOPIC = "com.example.compat"
results = []


def check(name, condition, detail=""):
    results.append(condition)
    print(("ok   " if condition else "FAIL ") + name + ("" if condition else f"  -- {detail}"), flush=True)


def jwt(key, key_id, der=False, iat=None):
    return provider_jwt(key, key_id, TEAM, der=der, iat=iat)


def herald(*args):
    out = subprocess.run([HERALD, *args], capture_output=True, text=True, check=True)
    return out.stdout.strip()


def curl(*args):
    out = subprocess.run(["curl", "-s", "-o", "-", "-w", "\n%{http_code} %{http_version}", *args],
                         capture_output=True, text=True)
    body, _, status = out.stdout.rpartition("\n")
    code, version = status.split(" ")
    return int(code), version, body


def h2_exchange(port, ca, cert, key, headers, body):
    """One request over a raw h2 connection with a client certificate: the response's status and
    body, and the GOAWAY's debug data if the server sent one (what curl and httpx do not show)."""
    context = ssl.create_default_context(cafile=ca)
    context.set_alpn_protocols(["h2"])
    context.load_cert_chain(cert, key)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw, \
            context.wrap_socket(raw, server_hostname="localhost") as tls:
        connection = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        connection.initiate_connection()
        stream = connection.get_next_available_stream_id()
        connection.send_headers(stream, headers)
        connection.send_data(stream, body, end_stream=True)
        tls.sendall(connection.data_to_send())
        status, data, goaway, ended = None, b"", None, False
        while not (ended and goaway is not None):
            chunk = tls.recv(65536)
            if not chunk:
                break
            for event in connection.receive_data(chunk):
                if isinstance(event, h2.events.ResponseReceived):
                    status = int(dict(event.headers)[b":status"])
                elif isinstance(event, h2.events.DataReceived):
                    data += event.data
                    connection.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                elif isinstance(event, h2.events.StreamEnded):
                    ended = True
                elif isinstance(event, h2.events.ConnectionTerminated):
                    goaway = event.additional_data or b""
            tls.sendall(connection.data_to_send())
        return status, data, goaway


def certificate_checks(data, port, ca, token):
    """Reference cases 34 and 35 and revocation, with curl --cert, httpx and a raw h2 client."""
    base = f"https://localhost:{port}"
    body = '{"aps":{"alert":"by certificate"}}'

    def issue(name, *extra):
        cert, key = os.path.join(data, f"{name}.pem"), os.path.join(data, f"{name}-key.pem")
        credential = herald("keys", "certificate", "--data-dir", data, "--team", TEAM, "--topic", TOPIC,
                            "--out-cert", cert, "--out-key", key, *extra)
        return cert, key, credential

    single, single_key, single_id = issue("single")
    check("keys certificate prints a credential id", single_id.startswith("cert-") and len(single_id) == 21, single_id)
    multi, multi_key, _ = issue("multi", "--variant", "voip", "--variant", "complication")
    production, production_key, _ = issue("production", "--environment", "production")
    bundle = os.path.join(data, "bundle.p12")
    issue("bundle", "--out-p12", bundle)
    code, _, text = curl("--http2", "--cacert", ca, "--cert-type", "P12", "--cert", bundle + ":", "-d", body, f"{base}/3/device/{token}")
    check("keys certificate --out-p12: curl with the PKCS#12 bundle is 200", (code, text) == (200, ""), (code, text))

    code, version, text = curl("--http2", "--cacert", ca, "--cert", single, "--key", single_key,
                               "-d", body, f"{base}/3/device/{token}")
    check("case 35: single-topic certificate without apns-topic (curl --cert) is 200", (code, version, text) == (200, "2", ""), (code, version, text))
    code, _, text = curl("--http2", "--cacert", ca, "--cert", multi, "--key", multi_key, "-d", body, f"{base}/3/device/{token}")
    check("case 35: multi-topic certificate without apns-topic is 400 MissingTopic",
          code == 400 and json.loads(text) == {"reason": "MissingTopic"}, (code, text))
    code, _, text = curl("--http2", "--cacert", ca, "--cert", multi, "--key", multi_key, "-H", f"apns-topic: {TOPIC}",
                         "-H", "authorization: bearer not-a-jwt", "-d", body, f"{base}/3/device/{token}")
    check("certificate connection: authorization is ignored, the topic named is 200", (code, text) == (200, ""), (code, text))
    code, _, text = curl("--http2", "--cacert", ca, "--cert", single, "--key", single_key, "-H", "apns-topic: com.example.other",
                         "-d", body, f"{base}/3/device/{token}")
    check("certificate connection: a topic the certificate does not list is 400 TopicDisallowed",
          code == 400 and json.loads(text) == {"reason": "TopicDisallowed"}, (code, text))
    code, _, text = curl("--http2", "--cacert", ca, "--cert", single, "--key", single_key, "-H", f"apns-topic: {TOPIC}.voip",
                         "-H", "apns-push-type: voip", "-d", body, f"{base}/3/device/{token}")
    check("certificate connection: .voip needs the voip variant (400 TopicDisallowed)",
          code == 400 and json.loads(text) == {"reason": "TopicDisallowed"}, (code, text))
    context = ssl.create_default_context(cafile=ca)
    context.load_cert_chain(multi, multi_key)
    with httpx.Client(http2=True, verify=context) as client:
        r = client.post(f"{base}/3/device/{token}", headers={"apns-topic": TOPIC}, content=body.encode())
        check("httpx with a client certificate: 200 over HTTP/2", r.status_code == 200 and r.http_version == "HTTP/2", (r.status_code, r.text))

    status, answer, goaway = h2_exchange(port, ca, production, production_key,
                                         [(":method", "POST"), (":scheme", "https"), (":authority", "localhost"),
                                          (":path", f"/3/device/{token}"), ("apns-topic", TOPIC)], body.encode())
    check("case 34: a production certificate on the development gateway is 403 BadCertificateEnvironment",
          status == 403 and json.loads(answer) == {"reason": "BadCertificateEnvironment"}, (status, answer))
    check("case 34: ... and GOAWAY carries the reason", goaway is not None and json.loads(goaway) == {"reason": "BadCertificateEnvironment"}, goaway)

    herald("keys", "revoke", "--data-dir", data, "--key-id", single_id)
    listed = json.loads(herald("keys", "list", "--data-dir", data, "--json"))
    check("keys list shows the revoked certificate", any(k.get("keyId") == single_id and k.get("revokedAt")
                                                       for team in listed["teams"] for k in team["keys"]), listed)
    deadline, code, text = time.time() + 15, 0, ""
    while time.time() < deadline:  # the gateway re-reads a known credential every 5 s
        code, _, text = curl("--http2", "--cacert", ca, "--cert", single, "--key", single_key, "-d", body, f"{base}/3/device/{token}")
        if code != 200:
            break
        time.sleep(0.5)
    check("a revoked certificate is 403 BadCertificate within seconds", code == 403 and json.loads(text) == {"reason": "BadCertificate"}, (code, text))


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

        certificate_checks(data, port, ca, token)

        # A gateway without --channel-port has no channels, so no broadcasts.
        code, _, text = curl("--http2", "--cacert", ca, "-H", f"authorization: bearer {jwt(key, key_id)}", "-H", "apns-push-type: liveactivity",
                             "-H", "apns-channel-id: AAAAAAAAAAAAAAAAAAAAAA==", "-d", '{"aps":{"event":"update","timestamp":1,"content-state":{}}}',
                             f"{base}/4/broadcasts/apps/{TOPIC}")
        check("broadcast on a gateway without a channel port: 400 FeatureNotEnabled",
              code == 400 and json.loads(text) == {"reason": "FeatureNotEnabled"}, (code, text))
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
