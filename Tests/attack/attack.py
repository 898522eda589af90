#!/usr/bin/env python3
"""The attack suite: real hostile peers against a running `herald gateway` and `herald device run`.

Starts the gateway (short deadlines so that the suite is quick) and a device as child processes,
then attacks every port with raw frames and hostile payloads: HTTP/2 Rapid Reset, CONTINUATION,
PING/SETTINGS/WINDOW_UPDATE floods, oversized headers and bodies, forged provider tokens, silent and
half-open TCP peers, raw WebSocket frames, hostile notification payloads to a running device; on the
Web Push port forged, expired and alg-none VAPID tokens, lying bodies, huge headers, hostile
browser-protocol frames, a user agent that never acks and a registration flood. Each
check asserts that the process survives, that the peer gets its specific error or is closed, and
memory stays bounded; at the end a normal push still goes from provider to device. The benign side
is checked too: a client that resets every stream right after its answer (as AsyncHTTPClient under
APNSwift does) gets 200 for 20,000 pushes with 1,000 in flight on one connection never closed.

Prints "N passed, N failed" and exits non-zero if any check failed.
Usage: attack.py PATH/TO/herald
"""
import base64
import json
import os
import queue
import select
import shutil
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import threading
import time

import h2.config
import h2.connection
import h2.events
import h2.settings
import httpx
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from hyperframe.frame import (ContinuationFrame, DataFrame, GoAwayFrame, HeadersFrame, PingFrame,
                              RstStreamFrame, SettingsFrame, WindowUpdateFrame)

HERALD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".build/debug/herald")
TEAM = "TEAM123456"
TOPIC = "com.example.attack"
ENHANCE_YOUR_CALM = 0xB
results = []


def check(name, condition, detail=""):
    results.append(bool(condition))
    print(("ok   " if condition else "FAIL ") + name + ("" if condition else f"  -- {detail}"), flush=True)


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def jwt(key, key_id, header=None, claims=None, signature=None):
    header = header if header is not None else {"alg": "ES256", "kid": key_id}
    claims = claims if claims is not None else {"iss": TEAM, "iat": int(time.time())}
    h = b64(json.dumps(header).encode()) if isinstance(header, dict) else b64(header)
    c = b64(json.dumps(claims).encode()) if isinstance(claims, dict) else b64(claims)
    if signature is None:
        der = key.sign(f"{h}.{c}".encode(), ec.ECDSA(hashes.SHA256()))
        r, s = decode_dss_signature(der)
        signature = r.to_bytes(32, "big") + s.to_bytes(32, "big")
    return f"{h}.{c}.{b64(signature)}"


def herald(*args):
    return subprocess.run([HERALD, *args], capture_output=True, text=True, check=True).stdout.strip()


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def alive(process):
    return process.poll() is None


class H2:
    """A raw HTTP/2 client over TLS: h2 for the protocol, direct frames for the attacks."""

    def __init__(self, port, ca, timeout=10):
        ctx = ssl.create_default_context(cafile=ca)
        ctx.set_alpn_protocols(["h2"])
        self.sock = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=timeout), server_hostname="localhost")
        self.conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
        self.conn.initiate_connection()
        self.flush()
        self.goaway = None
        self.closed = False
        self.responses = {}
        self.ended = []

    def flush(self, extra=b""):
        self.sock.sendall(self.conn.data_to_send() + extra)

    def raw(self, data):
        self.sock.sendall(data)

    def pump(self, timeout=5.0):
        """Reads what arrives within `timeout` (or until the peer closes); returns the h2 events."""
        events = []
        self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(65536)
        except (socket.timeout, TimeoutError):
            return events
        except (ConnectionResetError, ssl.SSLError, OSError):
            self.closed = True
            return events
        if not data:
            self.closed = True
            return events
        try:
            events = self.conn.receive_data(data)
        except Exception:  # the raw frames we sent may confuse h2's own state: read on as bytes
            events = []
        for event in events:
            if isinstance(event, h2.events.ConnectionTerminated):
                self.goaway = event
            elif isinstance(event, h2.events.ResponseReceived):
                self.responses[event.stream_id] = dict(event.headers)
            elif isinstance(event, h2.events.StreamEnded):
                self.ended.append(event.stream_id)
            elif isinstance(event, h2.events.DataReceived):
                self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
        try:
            self.flush()
        except OSError:
            self.closed = True
        return events

    def wait_closed(self, seconds):
        """True when the peer closes the TCP connection within `seconds`."""
        deadline = time.time() + seconds
        while time.time() < deadline and not self.closed:
            self.pump(timeout=max(0.05, deadline - time.time()))
        return self.closed

    def request(self, path, headers, body, authority="localhost"):
        sid = self.conn.get_next_available_stream_id()
        self.conn.send_headers(sid, [(":method", "POST"), (":scheme", "https"), (":authority", authority), (":path", path), *headers.items()])
        self.conn.send_data(sid, body, end_stream=True)
        return sid

    def status(self, path, headers, body, authority="localhost", seconds=5):
        """Sends one request and reads until it is answered (or `seconds` pass): its :status."""
        sid = self.request(path, headers, body, authority)
        self.flush()
        deadline = time.time() + seconds
        while sid not in self.ended and time.time() < deadline and not self.closed:
            self.pump(1)
        return self.responses.get(sid, {}).get(":status")

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def vapid(key, claims, header=None):
    """A VAPID Authorization header for `key` (a P-256 private key), with these claims."""
    public = key.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    token = jwt(key, None, header=header if header is not None else {"typ": "JWT", "alg": "ES256"}, claims=claims)
    return f"vapid t={token}, k={b64(public)}", b64(public)


def webpush_attacks(webpush_port, ca, gateway):
    """The Web Push port: forged and expired VAPID tokens, alg none, hostile browser-protocol
    frames, a user agent that never acks, a registration flood, huge headers, lying bodies."""
    import warnings
    from websockets.sync.client import connect
    # Connections here are closed by hand (or by the gateway): no context manager.
    warnings.filterwarnings("ignore", message=r"connect\(\) must be used as a context manager")
    context = ssl.create_default_context(cafile=ca)
    url = f"wss://localhost:{webpush_port}/"
    origin = f"https://localhost:{webpush_port}"
    key = ec.generate_private_key(ec.SECP256R1())
    _, server_key = vapid(key, {})

    def agent():
        ws = connect(url, ssl=context, subprotocols=["push-notification"], max_size=None, open_timeout=10)
        ws.send(json.dumps({"messageType": "hello", "use_webpush": True}))
        hello = json.loads(ws.recv(10))
        return ws, hello["uaid"]

    def register(ws, application_server_key=None):
        channel = "0b1c2d3e-4f50-6172-8394-" + os.urandom(6).hex()
        message = {"messageType": "register", "channelID": channel}
        if application_server_key:
            message["key"] = application_server_key
        ws.send(json.dumps(message))
        return channel, json.loads(ws.recv(10))

    ws, uaid = agent()
    channel, reply = register(ws, server_key)
    endpoint = reply.get("pushEndpoint", "")
    check("webpush: a browser subscribes", reply.get("status") == 200 and "/wpush/" in endpoint, reply)
    path = "/wpush/" + endpoint.rsplit("/", 1)[-1]
    now = int(time.time())
    good_claims = {"aud": origin, "exp": now + 3600, "sub": "mailto:ops@example.com"}

    def post(headers, body=b"", timeout=10):
        with httpx.Client(verify=ca, timeout=timeout) as c:
            return c.post(f"https://localhost:{webpush_port}{path}", content=body, headers={"ttl": "60", **headers})

    forger = ec.generate_private_key(ec.SECP256R1())
    forged_token = jwt(forger, None, header={"typ": "JWT", "alg": "ES256"}, claims=good_claims)
    cases = [
        ("a token signed by another key claiming the subscription's k=", {"authorization": f"vapid t={forged_token}, k={server_key}"}, 401),
        ("another application server's valid token", {"authorization": vapid(forger, good_claims)[0]}, 403),
        ("an expired token", {"authorization": vapid(key, dict(good_claims, exp=now - 10))[0]}, 401),
        ("exp more than 24 h ahead", {"authorization": vapid(key, dict(good_claims, exp=now + 90_000))[0]}, 401),
        ("aud of another origin", {"authorization": vapid(key, dict(good_claims, aud="https://evil.example"))[0]}, 401),
        ("no sub", {"authorization": vapid(key, {"aud": origin, "exp": now + 3600})[0]}, 401),
        ("alg none, no signature", {"authorization": f"vapid t={b64(json.dumps({'alg': 'none'}).encode())}.{b64(json.dumps(good_claims).encode())}., k={server_key}"}, 401),
        ("a token that is not a JWT", {"authorization": f"vapid t=AAAA, k={server_key}"}, 401),
        ("no Authorization at all", {}, 401),
    ]
    wrong = []
    for name, headers, status in cases:
        r = post(headers)
        if r.status_code != status or "message" not in r.json():
            wrong.append((name, r.status_code, r.text[:120]))
    check(f"webpush: {len(cases)} forged, expired and malformed VAPID tokens each get 401/403 with a reason", not wrong, wrong)
    r = post({"authorization": vapid(key, good_claims)[0]})
    check("webpush: the valid token is accepted (201)", r.status_code == 201, r.text)

    # Headers of 100 KB, a body over 4096 bytes declared and not sent, a body that lies.
    try:
        r = post({"x-big": "a" * 100_000})
        big = r.status_code in (400, 413, 431)
    except httpx.HTTPError:
        big = True  # the connection was closed
    check("webpush: 100 KB of headers are refused, not read", big)
    raw = context.wrap_socket(socket.create_connection(("127.0.0.1", webpush_port), timeout=10), server_hostname="localhost")
    raw.sendall(f"POST {path} HTTP/1.1\r\nHost: localhost\r\nTTL: 60\r\nContent-Length: 1000000000\r\n\r\n".encode() + b"x" * 100)
    answer = raw.recv(4096)
    check("webpush: a body declared at 1 GB is answered 413 before it is read", answer.startswith(b"HTTP/1.1 413"), answer[:80])
    raw.close()
    raw = context.wrap_socket(socket.create_connection(("127.0.0.1", webpush_port), timeout=10), server_hostname="localhost")
    raw.sendall(f"POST {path} HTTP/1.1\r\nHost: localhost\r\nTTL: 60\r\nContent-Length: 4\r\n\r\n".encode() + b"0123456789 GARBAGE\r\n\r\n")
    answer = b""
    try:
        while b"HTTP/1.1 4" not in answer[12:] and len(answer) < 8192:
            chunk = raw.recv(4096)
            if not chunk:
                break
            answer += chunk
    except (socket.timeout, OSError):
        pass
    check("webpush: a body longer than its Content-Length: the rest is a malformed request (400), nothing crashes",
          b"HTTP/1.1 400" in answer or b"HTTP/1.1 401" in answer, answer[:200])
    raw.close()

    # A user agent that never acks: what it was sent stays held, and comes again next time.
    ws2, uaid2 = agent()
    _, reply2 = register(ws2)
    path2 = "/wpush/" + reply2["pushEndpoint"].rsplit("/", 1)[-1]
    with httpx.Client(verify=ca, timeout=10) as c:
        for i in range(3):
            c.post(f"https://localhost:{webpush_port}{path2}", headers={"ttl": "600"})
    first = [json.loads(ws2.recv(10)) for _ in range(3)]
    ws2.close()
    ws2 = connect(url, ssl=context, subprotocols=["push-notification"], open_timeout=10)
    ws2.send(json.dumps({"messageType": "hello", "use_webpush": True, "uaid": uaid2}))
    json.loads(ws2.recv(10))
    again = [json.loads(ws2.recv(10)) for _ in range(3)]
    check("webpush: messages a user agent never acked are sent again on its next connection",
          sorted(m["version"] for m in again) == sorted(m["version"] for m in first), (first, again))
    ws2.close()

    # A flood of registrations from one connection: bounded per browser (256), then refused.
    statuses = {}
    for _ in range(300):
        _, reply = register(ws)
        statuses[reply.get("status")] = statuses.get(reply.get("status"), 0) + 1
    check("webpush: a registration flood from one connection is bounded (256 subscriptions, then 409)",
          statuses.get(409, 0) >= 40 and statuses.get(200, 0) <= 256, statuses)

    # Hostile frames: malformed JSON closes with 1008, an oversized frame with 1009.
    for name, frame, code in (("malformed JSON", "{not json", 1008), ("a 100 KB frame", json.dumps({"messageType": "x" * 100_000}), 1009)):
        ws3, _ = agent()
        try:
            ws3.send(frame)
            ws3.recv(10)
            closed_with = None
        except Exception:
            closed_with = ws3.close_code if ws3.close_code is not None else (ws3.protocol.close_rcvd.code if ws3.protocol.close_rcvd else None)
        check(f"webpush: {name} closes the browser's connection ({code})", closed_with == code, closed_with)
    # The HTTP/2 floods the provider port cuts off, on this port's h2 connections (issue 63).
    honest = {"authorization": vapid(key, good_claims)[0], "ttl": "60"}

    def opened(client):
        # The authority names the port: VAPID's `aud` is checked against the origin reached.
        return client.status(path, honest, b"", authority=f"localhost:{webpush_port}") == "201"

    client = H2(webpush_port, ca)
    check("webpush: an application server pushes over HTTP/2 (201)", opened(client), client.responses)
    client.close()
    http2_floods("webpush", webpush_port, ca, opened, path, honest)
    with httpx.Client(http2=True, verify=ca, timeout=10) as c:
        r = c.post(f"https://localhost:{webpush_port}{path}", headers=honest)
        check("webpush: an honest sender is answered after the floods (201, over HTTP/2)",
              (r.status_code, r.http_version) == (201, "HTTP/2"), (r.status_code, r.http_version))
    ws.close()
    check("webpush: the gateway survived the Web Push attacks", alive(gateway))


def http2_floods(label, port, ca, opened, path, headers):
    """The HTTP/2 floods every HTTP/2 port must cut off (GOAWAY, then the TCP connection closed):
    Rapid Reset, a CONTINUATION flood, PING/SETTINGS/WINDOW_UPDATE floods. `opened(client)` makes
    a fresh connection an honest one first (a request answered on it)."""
    # --- HTTP/2 Rapid Reset: HEADERS + RST_STREAM x 3000.
    client = H2(port, ca)
    opened(client)
    sid = client.conn.highest_outbound_stream_id + 2
    for _ in range(3000):
        client.conn.send_headers(sid, [(":method", "POST"), (":scheme", "https"), (":authority", "localhost"),
                                       (":path", path), *headers.items()])
        client.conn.reset_stream(sid)
        sid += 2
    try:
        client.flush()
    except OSError:
        pass
    closed = client.wait_closed(8)
    check(f"{label}: rapid reset: GOAWAY ENHANCE_YOUR_CALM", client.goaway is not None and client.goaway.error_code == ENHANCE_YOUR_CALM, client.goaway)
    check(f"{label}: rapid reset: the TCP connection is closed", closed)
    client.close()

    # --- CONTINUATION flood: one header block that never ends.
    client = H2(port, ca)
    opened(client)
    sid = client.conn.highest_outbound_stream_id + 2
    first = HeadersFrame(sid)
    first.data = b"\x82"  # :method GET, then no END_HEADERS
    flood = first.serialize()
    for _ in range(2000):
        cont = ContinuationFrame(sid)
        cont.data = b"\x40\x01a\x01b"
        flood += cont.serialize()
    try:
        client.raw(flood)
    except OSError:
        pass
    check(f"{label}: CONTINUATION flood: connection closed after GOAWAY", client.wait_closed(8))
    client.close()

    # --- Control-frame floods: PING read by the peer, SETTINGS not read, WINDOW_UPDATE.
    for name, make in [
        ("PING", lambda i: PingFrame(0, opaque_data=struct.pack(">Q", i)).serialize()),
        ("SETTINGS", lambda i: SettingsFrame(0, settings={SettingsFrame.INITIAL_WINDOW_SIZE: 65535}).serialize()),
        ("WINDOW_UPDATE", lambda i: WindowUpdateFrame(0, window_increment=1).serialize()),
    ]:
        client = H2(port, ca)
        opened(client)
        try:
            for chunk in range(10):
                client.raw(b"".join(make(chunk * 1000 + i) for i in range(1000)))
                if name == "PING":
                    client.pump(0.05)
        except OSError:
            pass
        check(f"{label}: {name} flood: connection closed", client.wait_closed(8))
        client.close()


def descriptor_exhaustion():
    """More connections than the gateway's descriptors allow: those past its budget are closed at
    accept, the process lives on (libdispatch crashes a process that cannot open /proc/<tid>/stat,
    which is what running out of descriptors did to cluster nodes), and room comes back as
    connections close."""
    import resource
    data = tempfile.mkdtemp(prefix="herald-attack-fds-")

    def small_limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))

    gateway = subprocess.Popen(
        [HERALD, "gateway", "--data-dir", data, "--provider-port", "0", "--device-port", "0", "--admin-port", "0",
         # The provider port: no handshake gate there, so that silent peers reach the budget.
         "--log-level", "error", "--provider-connections-per-address", "10000", "--handshake-timeout", "10"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, preexec_fn=small_limit)
    sockets = []
    try:
        ports = json.loads(gateway.stdout.readline())
        budget = 256 - 64  # ConnectionBudget.reserve(forLimit: 256) is 64
        for _ in range(300):
            s = socket.create_connection(("127.0.0.1", ports["provider_port"]), timeout=5)
            sockets.append(s)
        time.sleep(0.7)  # well before the 10 s handshake deadline closes the silent ones

        def closed_by_peer(s):
            readable, _, _ = select.select([s], [], [], 0)
            if not readable:
                return False
            try:
                return s.recv(1) == b""
            except OSError:
                return True

        refused = sum(1 for s in sockets if closed_by_peer(s))
        check("descriptors: connections past the budget are closed at accept", 300 - budget - 5 <= refused <= 300 - budget + 5,
              f"{refused} closed of 300, budget {budget}")
        time.sleep(2.5)  # libdispatch's monitor looks every second
        check("descriptors: the gateway lives on at its descriptor limit", alive(gateway))
        metrics = httpx.get(f"http://127.0.0.1:{ports['admin_port']}/metrics", timeout=10).text
        counted = [line for line in metrics.splitlines() if 'reason="descriptor_limit"' in line and line.startswith("herald_peers_closed_total")]
        check("descriptors: the refusals are counted", counted and float(counted[0].split()[-1]) >= 300 - budget - 5, counted)
        for s in sockets:
            s.close()
        sockets = []
        time.sleep(0.5)
        again = socket.create_connection(("127.0.0.1", ports["provider_port"]), timeout=5)
        sockets.append(again)
        time.sleep(0.3)
        check("descriptors: room comes back as connections close", not closed_by_peer(again))
    finally:
        for s in sockets:
            s.close()
        gateway.terminate()
        gateway.wait(timeout=30)
        shutil.rmtree(data, ignore_errors=True)


def main():
    descriptor_exhaustion()
    data = tempfile.mkdtemp(prefix="herald-attack-")
    gateway = subprocess.Popen(
        [HERALD, "gateway", "--data-dir", data, "--provider-port", "0", "--device-port", "0", "--admin-port", "0",
         "--webpush-port", "0",
         # No --host: the default must be loopback (checked below with ss).
         "--log-level", "error", "--handshake-timeout", "2", "--provider-idle-timeout", "3",
         "--provider-connections-per-address", "40", "--token-burst", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    device = provider = None
    try:
        ports = json.loads(gateway.stdout.readline())
        port, device_port, admin, ca = ports["provider_port"], ports["device_port"], ports["admin_port"], ports["ca"]
        webpush_attacks(ports["webpush_port"], ca, gateway)
        key_path = os.path.join(data, "key.p8")
        key_id = herald("keys", "create", "--data-dir", data, "--team", TEAM, "--topic", TOPIC, "--out", key_path)
        with open(key_path, "rb") as f:
            key = serialization.load_pem_private_key(f.read(), password=None)
        token = herald("tokens", "create", "--data-dir", data, "--topic", TOPIC)
        auth = jwt(key, key_id)
        headers = {"authorization": f"bearer {auth}", "apns-topic": TOPIC, "apns-push-type": "alert"}
        body = b'{"aps":{"alert":"hi"}}'
        rss_start = rss_kib(gateway.pid)

        def authenticated(client):
            return client.status(f"/3/device/{token}", headers, body) == "200"

        # --- The benign side: reset every stream after its answer, 1,000 in flight, 20,000 pushes.
        client = H2(port, ca)
        check("benign: first push on a fresh connection 200", authenticated(client))
        total, sent, done, statuses = 20_000, 0, 0, {}
        deadline = time.time() + 120
        while done < total and time.time() < deadline and not client.closed:
            limit = min(1000, client.conn.remote_settings.max_concurrent_streams)
            while sent < total and client.conn.open_outbound_streams < limit:
                client.request(f"/3/device/{token}", headers, body)
                sent += 1
            client.flush()
            before = len(client.ended)
            client.pump(2)
            resets = b""
            for sid in client.ended[before:]:
                statuses[client.responses.get(sid, {}).get(":status")] = statuses.get(client.responses.get(sid, {}).get(":status"), 0) + 1
                frame = RstStreamFrame(sid)
                frame.error_code = 8  # CANCEL, as AsyncHTTPClient sends after the answer
                resets += frame.serialize()
                done += 1
            if resets:
                client.flush(resets)
        check("benign: 20,000 pushes each answered 200 with a reset after every answer",
              statuses == {"200": total}, statuses)
        check("benign: the connection was never closed and got no GOAWAY", not client.closed and client.goaway is None, client.goaway)
        client.close()

        # --- The HTTP/2 floods (Rapid Reset, CONTINUATION, control frames) on the provider port.
        http2_floods("provider", port, ca, authenticated, f"/3/device/{token}", headers)

        # --- Oversized header block and oversized body.
        client = H2(port, ca)
        authenticated(client)
        sid = client.request(f"/3/device/{token}", {**headers, "x-big": "a" * 20_000}, body)
        try:
            client.flush()
        except OSError:
            pass
        client.pump(3)
        status = client.responses.get(sid, {}).get(":status")
        check("oversized headers: refused (stream reset or connection closed), never 200",
              status != "200", status)
        client.close()
        with httpx.Client(http2=True, verify=ca) as c:
            r = c.post(f"https://localhost:{port}/3/device/{token}", headers=headers, content=b'{"aps":{"alert":"' + b"x" * 1_000_000 + b'"}}')
            check("oversized body: 413 PayloadTooLarge", (r.status_code, r.json()) == (413, {"reason": "PayloadTooLarge"}), r.text[:100])
            r = c.post(f"https://localhost:{port}/3/device/{token}", headers=headers, content=b'{"aps":{"alert":"hi",}}')
            check("malformed JSON (trailing comma): 400 PayloadEmpty", (r.status_code, r.json()) == (400, {"reason": "PayloadEmpty"}), r.text)
            r = c.post(f"https://localhost:{port}/3/device/{token}", headers=headers, content=b'{"a":' + b"[" * 2000 + b"]" * 2000 + b"}")
            check("deeply nested body (2,000 levels): 400 PayloadEmpty", (r.status_code, r.json()) == (400, {"reason": "PayloadEmpty"}), r.text)

        # --- Forged provider tokens: each refused with 403 InvalidProviderToken, none accepted.
        order = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551
        forged = {
            "zero signature r=s=0": jwt(key, key_id, signature=b"\0" * 64),
            "r = curve order": jwt(key, key_id, signature=order.to_bytes(32, "big") + (1).to_bytes(32, "big")),
            "s = curve order": jwt(key, key_id, signature=(1).to_bytes(32, "big") + order.to_bytes(32, "big")),
            "alg none": jwt(key, key_id, header={"alg": "none", "kid": key_id}, signature=b""),
            "alg HS256": jwt(key, key_id, header={"alg": "HS256", "kid": key_id}),
            "embedded jwk": jwt(key, key_id, header={"alg": "ES256", "kid": key_id, "jwk": {"kty": "EC", "crv": "P-256", "x": "AA", "y": "AA"}},
                                signature=b"\1" * 64),
            "jku": jwt(key, key_id, header={"alg": "ES256", "kid": key_id, "jku": "https://evil.example/keys"}, signature=b"\1" * 64),
            "8 KB kid": jwt(key, key_id, header={"alg": "ES256", "kid": "K" * 8192}),
            "absurd iat": jwt(key, key_id, claims={"iss": TEAM, "iat": 1e300}),
            "negative iat": jwt(key, key_id, claims={"iss": TEAM, "iat": -9223372036854775808}),
        }
        for name, text in forged.items():
            with httpx.Client(http2=True, verify=ca) as c:
                try:
                    r = c.post(f"https://localhost:{port}/3/device/{token}", headers={**headers, "authorization": f"bearer {text}"}, content=body)
                    ok = r.status_code == 403 and r.json().get("reason") in ("InvalidProviderToken", "ExpiredProviderToken")
                    detail = (r.status_code, r.text)
                except httpx.HTTPError as error:  # an 8 KB header may be refused at the HTTP/2 level
                    ok, detail = name == "8 KB kid", error
            check(f"forged token ({name}): refused", ok, detail)

        # --- Silent and half-open TCP peers on the provider and device ports (deadline: 2 s).
        silent = [socket.create_connection(("127.0.0.1", p)) for p in (port, device_port) for _ in range(30)]
        for s in silent[::3]:
            s.sendall(b"\x16\x03\x01\x00\xc8\x01\x00\x00\xc4\x03\x03")  # the start of a ClientHello, then nothing
        time.sleep(3.5)
        closed = 0
        for s in silent:
            s.settimeout(0.5)
            try:
                if s.recv(1024) == b"":
                    closed += 1
            except (ConnectionResetError, OSError):
                closed += 1
            s.close()
        check("60 silent or stalled TLS peers: all closed after the handshake deadline", closed == len(silent), f"{closed}/{len(silent)}")

        # --- A storm of half-open connections does not stall other devices' handshakes: 3
        # addresses (127.0.0.2-4) x 80 connections, a third sending the start of a ClientHello
        # and then nothing. One address holds at most 32 of the 128 handshake slots (the rest are
        # closed at accept), so a device from another address is accepted at once instead of
        # waiting in the backlog until the storm's handshakes time out (a silent connection is
        # also closed after 2 s without a byte, whatever the handshake deadline).
        storm = []
        rss_before_storm = rss_kib(gateway.pid)
        for a in range(2, 5):
            for i in range(80):
                try:
                    s = socket.create_connection(("127.0.0.1", device_port), source_address=(f"127.0.0.{a}", 0))
                    if i % 3 == 0:
                        s.sendall(b"\x16\x03\x01\x00\xc8\x01\x00\x00\xc4\x03\x03")
                    storm.append(s)
                except OSError:
                    pass
        rss_storm = rss_kib(gateway.pid)
        started = time.monotonic()
        try:
            with socket.create_connection(("127.0.0.1", device_port), timeout=10) as raw:
                with ssl.create_default_context(cafile=ca).wrap_socket(raw, server_hostname="localhost"):
                    took = time.monotonic() - started
        except OSError as error:
            took = f"failed: {error}"
        check("240 half-open connections from 3 addresses: another device's TLS handshake still finishes in < 1 s",
              isinstance(took, float) and took < 1, took)
        for s in storm:
            s.close()
        check("the half-open storm's memory is bounded (< 16 MiB for 240 connections)", rss_storm - rss_before_storm < 16 * 1024,
              f"{rss_before_storm} -> {rss_storm} KiB")

        # --- A WebSocket peer that never answers the challenge is closed (deadline: 2 s).
        ctx = ssl.create_default_context(cafile=ca)

        def ws_upgraded(timeout):
            """A TLS connection to the device port that has asked for the WebSocket upgrade."""
            s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", device_port)), server_hostname="localhost")
            s.sendall(b"GET /device/v1 HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                      b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
            s.settimeout(timeout)
            return s

        def read_until_closed(s, got=b""):
            """Everything the peer sends until it closes: (bytes, closed); not closed on a time-out."""
            try:
                while True:
                    chunk = s.recv(4096)
                    if not chunk:
                        return got, True
                    got += chunk
            except socket.timeout:
                return got, False
            except (ConnectionResetError, ssl.SSLError, OSError):
                return got, True

        ws = ws_upgraded(6)
        start = time.time()
        got, _ = read_until_closed(ws)
        elapsed = time.time() - start
        check("WebSocket peer silent after the challenge: closed within the deadline",
              b"101" in got.split(b"\r\n", 1)[0] and b"challenge" in got and elapsed < 5, (got[:80], elapsed))
        ws.close()

        # --- Raw WebSocket frames: 64-bit length with the top bit, 4 MB frame, unmasked frame.
        def ws_frame(payload_len_bytes, masked=True):
            return bytes([0x81, (0x80 if masked else 0) | 127]) + payload_len_bytes

        for name, frame in [("64-bit length with the top bit set", ws_frame(b"\x80" + b"\0" * 7) + b"\0" * 4),
                            ("4 MB frame", ws_frame(struct.pack(">Q", 4 << 20)) + b"\0" * 4 + b"a" * 65536),
                            ("unmasked frame", bytes([0x81, 0x05]) + b"hello")]:
            s = ws_upgraded(5)
            s.recv(4096)
            sent_at = time.time()
            try:
                s.sendall(frame)
            except OSError:
                pass  # closed while the frame was still going out
            _, closed = read_until_closed(s)
            quick = time.time() - sent_at < 1.5  # closed for the frame, not by the 2 s hello deadline
            check(f"WebSocket {name}: connection closed at once", closed and quick, time.time() - sent_at)
            s.close()

        # --- A hello whose public key is not a point on P-256: authentication-failed, closed.
        s = ws_upgraded(5)
        got = b""
        while b"challenge" not in got:
            got += s.recv(4096)
        off_curve = base64.b64encode((1).to_bytes(32, "big") + (1).to_bytes(32, "big")).decode()
        hello = json.dumps({"type": "hello", "version": 1, "public-key": off_curve,
                            "signature": base64.b64encode(b"\1" * 64).decode()}).encode()
        mask = os.urandom(4)
        header = bytes([0x81, 0x80 | 126]) + struct.pack(">H", len(hello)) if len(hello) > 125 else bytes([0x81, 0x80 | len(hello)])
        s.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(hello)))
        answer, _ = read_until_closed(s)
        check("hello with an off-curve public key: authentication-failed, then closed", b"authentication-failed" in answer, answer[:120])
        s.close()

        # --- Device protocol version 3: an authenticated device floods Web Push subscriptions and
        # sends hostile ones; the device's token bound (256) holds and each bad frame is named.
        def send_text(sock, obj):
            payload = json.dumps(obj).encode() if not isinstance(obj, bytes) else obj
            mask = os.urandom(4)
            n = len(payload)
            header = bytes([0x81, 0x80 | n]) if n < 126 else (bytes([0x81, 0x80 | 126]) + struct.pack(">H", n) if n < 65536
                                                              else bytes([0x81, 0x80 | 127]) + struct.pack(">Q", n))
            sock.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

        def frames(sock, buffer):
            """Server text frames as JSON, as they arrive (unmasked; the upgrade's head skipped)."""
            while True:
                if buffer.startswith(b"HTTP/"):
                    if b"\r\n\r\n" not in buffer:
                        buffer += sock.recv(65536)
                        continue
                    buffer = buffer.split(b"\r\n\r\n", 1)[1]
                while len(buffer) >= 2:
                    length, at = buffer[1] & 0x7F, 2
                    if length == 126:
                        if len(buffer) < 4:
                            break
                        length, at = struct.unpack(">H", buffer[2:4])[0], 4
                    elif length == 127:
                        if len(buffer) < 10:
                            break
                        length, at = struct.unpack(">Q", buffer[2:10])[0], 10
                    if len(buffer) < at + length:
                        break
                    opcode, payload, buffer = buffer[0] & 0x0F, buffer[at:at + length], buffer[at + length:]
                    if opcode == 1:
                        yield json.loads(payload)
                chunk = sock.recv(65536)
                if not chunk:
                    return
                buffer += chunk

        s = ws_upgraded(15)
        reader = frames(s, b"")
        challenge = next(reader)
        key = ec.generate_private_key(ec.SECP256R1())
        raw = key.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)[1:]
        r, sig_s = decode_dss_signature(key.sign(f"herald-device-challenge:v1:{challenge['nonce']}".encode(), ec.ECDSA(hashes.SHA256())))
        send_text(s, {"type": "hello", "version": 3, "public-key": base64.b64encode(raw).decode(),
                      "signature": base64.b64encode(r.to_bytes(32, "big") + sig_s.to_bytes(32, "big")).decode()})
        welcome = next(reader)
        check("device v3: an authenticated device", welcome.get("type") == "welcome", welcome)
        import uuid
        for n in range(300):
            send_text(s, {"type": "webpush-subscribe", "topic": TOPIC, "subscription": str(uuid.uuid4())})
        answers = [next(reader) for _ in range(300)]
        made = sum(1 for a in answers if a.get("type") == "webpush-subscribed")
        refused = sum(1 for a in answers if a.get("code") == "too-many-topics")
        check("device v3: a flood of 300 Web Push subscriptions is bounded (256 tokens a device, then too-many-topics)",
              made == 256 and refused == 44, (made, refused))
        hostile_frames = [
            ({"type": "webpush-subscribe", "topic": TOPIC, "subscription": "x" * 5000}, "malformed-frame"),
            ({"type": "webpush-subscribe", "topic": TOPIC, "subscription": str(uuid.uuid4()), "application-server-key": "BAAA"}, "malformed-frame"),
            ({"type": "webpush-subscribe", "topic": "a b", "subscription": str(uuid.uuid4())}, "invalid-topic"),
            ({"type": "webpush-unsubscribe", "topic": TOPIC, "subscription": str(uuid.uuid4())}, "unknown-subscription"),
        ]
        named = []
        for frame, code in hostile_frames:
            send_text(s, frame)
            answer = next(reader)
            if answer.get("code") != code:
                named.append((frame, answer))
        check(f"device v3: {len(hostile_frames)} hostile Web Push frames each get their specific error", not named, named)
        s.close()

        # --- Idle provider connection: GOAWAY {"reason":"IdleTimeout"}, then closed (timeout: 3 s).
        client = H2(port, ca)
        authenticated(client)
        closed = client.wait_closed(6)
        reason = client.goaway.additional_data if client.goaway is not None else None
        check("idle provider connection: GOAWAY IdleTimeout, then closed", closed and reason == b'{"reason":"IdleTimeout"}', (closed, reason))
        client.close()

        # --- Per-address connection limit (40): the 41st connection is closed at once.
        held = []
        for _ in range(40):
            held.append(H2(port, ca))
        try:
            extra = H2(port, ca)
            refused = extra.wait_closed(3)
            extra.close()
        except (ConnectionResetError, ssl.SSLError, OSError):
            refused = True
        check("per-address limit: the 41st provider connection is closed", refused)
        for c in held:
            c.close()

        # --- The admin port: loopback only, no faults without --enable-faults.
        with httpx.Client() as c:
            r = c.post(f"http://127.0.0.1:{admin}/faults", json={"reason": "ServiceUnavailable", "count": 1000})
            check("admin /faults without --enable-faults: 404", r.status_code == 404, r.status_code)
        listening = subprocess.run(["ss", "-ltnH"], capture_output=True, text=True).stdout if shutil.which("ss") else ""
        if listening:
            check("admin port bound to 127.0.0.1 only", f"127.0.0.1:{admin}" in listening and f"0.0.0.0:{admin}" not in listening, listening)
            for name, bound in (("provider", port), ("device", device_port), ("webpush", ports["webpush_port"])):
                check(f"{name} port bound to 127.0.0.1 by default (no --host)",
                      f"127.0.0.1:{bound}" in listening and f"0.0.0.0:{bound}" not in listening and f"*:{bound}" not in listening, listening)

        # --- Hostile payloads to a running `herald device run`.
        phone = os.path.join(data, "phone")
        device = subprocess.Popen(
            [HERALD, "device", "run", "--data-dir", phone, "--gateway", f"wss://localhost:{device_port}", "--ca", ca,
             "--app", TOPIC, "--json"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        events = queue.Queue()
        threading.Thread(target=lambda: [events.put(json.loads(line)) for line in device.stdout if line.startswith("{")], daemon=True).start()

        def next_event(kind, seconds=10, where=lambda e: True):
            deadline = time.time() + seconds
            while time.time() < deadline:
                try:
                    event = events.get(timeout=max(0.05, deadline - time.time()))
                except queue.Empty:
                    break
                if event.get("event") == kind and where(event):
                    return event
            return None

        registered = next_event("registered", 15)
        check("device: registered with a token", registered is not None and "token" in registered, registered)
        device_token = registered["token"] if registered else "00"
        hostile = []
        for field in ["badge", "content-available", "mutable-content", "relevance-score"]:
            for value in ["1e300", "-1e300", "-1", "3.5", '"7"', "9223372036854775808", "[]", "{}", "null", "true"]:
                hostile.append('{"aps":{"alert":"x","%s":%s}}' % (field, value))
        hostile += [
            '{"aps":{"alert":{"loc-key":"%@ %@ %n %s %99999$@","loc-args":["%n%n%n", 1e300, -1e300, {"a":1}, null]}}}',
            '{"aps":{"alert":{"title":1e300,"body":["x"],"title-loc-args":"notanarray"}}}',
            '{"aps":{"sound":{"name":1,"critical":1e300,"volume":1e300}}}',
            '{"aps":{"alert":"x","interruption-level":1e300,"thread-id":{"a":1},"category":[1]}}',
            '{"aps":"not an object"}',
            '{"aps":{"alert":"' + "x" * 3000 + '"}}',
            '{"aps":{"alert":"deep"},"d":' + "[" * 25 + "]" * 25 + "}",
        ]
        # A local client that floods the agent socket and never reads its answers: the device stops
        # reading it (bounded queue, unwritable socket) instead of buffering without end.
        device_rss = rss_kib(device.pid)
        agent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        agent.connect(os.path.join(phone, "agent.sock"))
        agent.setblocking(False)
        line = b'{"id":1,"op":"nothing-such","pad":"' + b"x" * 900 + b'"}\n'
        flood, sent_bytes, deadline = line * 1000, 0, time.time() + 4
        while time.time() < deadline and sent_bytes < 200 << 20:
            try:
                sent_bytes += agent.send(flood)
            except BlockingIOError:
                time.sleep(0.01)
            except OSError:
                break
        time.sleep(0.5)
        grown = rss_kib(device.pid) - device_rss
        print(f"     (agent flood: sent {sent_bytes >> 10} KiB in 4 s, device RSS +{grown} KiB)")
        check("agent socket flood (client never reads): the device stops reading, memory bounded",
              alive(device) and sent_bytes < 16 << 20 and grown < 32 * 1024, f"sent {sent_bytes >> 20} MiB, RSS +{grown} KiB")
        agent.close()

        with httpx.Client(http2=True, verify=ca) as c:
            accepted = 0
            for payload in hostile:
                r = c.post(f"https://localhost:{port}/3/device/{device_token}", headers=headers, content=payload.encode())
                accepted += r.status_code == 200
            check("hostile payloads accepted by the gateway (they are valid JSON objects)", accepted == len(hostile), f"{accepted}/{len(hostile)}")
            time.sleep(0.5)
            r = c.post(f"https://localhost:{port}/3/device/{device_token}", headers=headers, content=b'{"aps":{"alert":"after the storm"}}')
            final_id = r.headers.get("apns-id")
            check("a normal push after the attacks: 200", r.status_code == 200, r.text)
        arrived = next_event("notification", 15, where=lambda e: e.get("apns-id") == final_id)
        check("the device survived every hostile payload", alive(device))
        check("the normal push reached the device after the attacks", arrived is not None)

        # --- herald provider: hostile REST bodies, then a normal send through it reaches the device.
        vapid_path = os.path.join(data, "vapid.pem")
        subprocess.run([HERALD, "keys", "vapid", "--out", vapid_path], check=True, capture_output=True, timeout=30)
        provider = subprocess.Popen(
            [HERALD, "provider", "--data-dir", os.path.join(data, "provider"), "--port", "0",
             "--gateway", f"https://localhost:{port}", "--ca", ca, "--key", key_path, "--key-id", key_id, "--team", TEAM,
             "--vapid-key", vapid_path, "--vapid-subject", "mailto:ops@example.com"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        ready = json.loads(provider.stdout.readline())
        api = f"http://127.0.0.1:{ready['port']}"
        with open(ready["api_token_file"]) as f:
            bearer = {"authorization": f"Bearer {f.read().strip()}", "content-type": "application/json"}
        provider_rss = rss_kib(provider.pid)
        deep = '{"to":' + "[" * 5000 + "]" * 5000 + "}"
        ok = '"to":{"token":"00"},"alert":{"body":"x"}'
        reg = '"token":"00","topic":"t","language":"en","timeZone":"UTC"'
        # A valid P-256 point and auth secret, so that each case below is wrong in one field only.
        wp_point = base64.urlsafe_b64encode(ec.generate_private_key(ec.SECP256R1()).public_key().public_bytes(
            serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)).rstrip(b"=").decode()
        wp_keys = '"keys":{"p256dh":"%s","auth":"AAAAAAAAAAAAAAAAAAAAAA"}' % wp_point
        rest_cases = [
            ("/v1/sends", '{%s,"badge":1e300}' % ok, 400, '"badge"'),
            ("/v1/sends", '{%s,"badge":-1}' % ok, 400, '"badge"'),
            ("/v1/sends", '{%s,"priority":1e300}' % ok, 400, '"priority"'),
            ("/v1/sends", '{%s,"expiration":-1e300}' % ok, 400, '"expiration"'),
            ("/v1/sends", '{%s,"contentAvailable":"yes"}' % ok, 400, '"contentAvailable"'),
            ("/v1/sends", '{%s,"data":[1]}' % ok, 400, '"data"'),
            ("/v1/sends", '{"to":{"token":"00"},"alert":"x"}', 400, '"alert"'),
            ("/v1/sends", '{"to":{"token":"00"},"alert":{"body":1e300}}', 400, '"alert.body"'),
            ("/v1/sends", '{"to":{"token":"00"},"template":{"id":"t","args":"%n%n"}}', 400, '"template.args"'),
            ("/v1/sends", '{"to":{"token":7},"badge":1}', 400, '"to.token"'),
            ("/v1/sends", '{"to":"everyone"}', 400, '"to"'),
            ("/v1/sends", '{%s,}' % ok, 400, "trailing comma"),
            ("/v1/sends", '{%s,"badge":NaN}' % ok, 400, "JSON"),
            ("/v1/sends", deep, 400, "JSON"),
            ("/v1/sends", "[]", 400, "JSON object"),
            ("/v1/sends", b'{"to":{"token":"\xff\xfe"}}', 400, "JSON"),
            ("/v1/schedules", '{%s,"time":"09:00","repeat":"monthly","day":1e300}' % ok, 400, '"day"'),
            ("/v1/schedules", '{%s,"time":"99:99"}' % ok, 400, '"time"'),
            ("/v1/schedules", '{%s,"time":"09:00","repeat":"weekly","weekdays":{"mon":1}}' % ok, 400, '"weekdays"'),
            ("/v1/registrations", '{"token":"00","topic":"t","language":"en","timeZone":1e300}', 400, '"timeZone"'),
            ("/v1/registrations", '{"token":"00","topic":"t","timeZone":"UTC","language":"' + "x" * 100_000 + '"}', 400, '"language"'),
            ("/v1/registrations", '{%s,"tags":"beta"}' % reg, 400, '"tags"'),
            # Web Push subscriptions as registrations: each field checked and named.
            ("/v1/registrations", '{"topic":"t","language":"en","timeZone":"UTC","webPush":{"endpoint":"http://push.example/x",%s}}' % wp_keys, 400, '"webPush.endpoint"'),
            ("/v1/registrations", '{"topic":"t","language":"en","timeZone":"UTC","webPush":{"endpoint":"https://push.example/' + "x" * 5000 + '",%s}}' % wp_keys, 400, '"webPush.endpoint"'),
            ("/v1/registrations", '{"topic":"t","language":"en","timeZone":"UTC","webPush":{"endpoint":"https://push.example/x","keys":{"p256dh":"AAAA","auth":"AAAAAAAAAAAAAAAAAAAAAA"}}}', 400, '"webPush.keys"'),
            ("/v1/registrations", '{"topic":"t","language":"en","timeZone":"UTC","webPush":{"endpoint":"https://push.example/x","keys":{"p256dh":"%s","auth":"%s"}}}' % (wp_point, "A" * 100), 400, '"webPush.keys.auth"'),
            ("/v1/registrations", '{"topic":"t","language":"en","timeZone":"UTC","webPush":{"endpoint":7,%s}}' % wp_keys, 400, '"webPush.endpoint"'),
            ("/v1/registrations", '{"topic":"t","language":"en","timeZone":"UTC","webPush":"yes"}', 400, '"webPush"'),
            ("/v1/registrations", '{"topic":"t","language":"en","timeZone":"UTC","webPush":{"endpoint":"https://push.example/x",%s,"url":"javascript:alert(1)"}}' % wp_keys, 400, '"webPush.url"'),
            ("/v1/registrations", '{"token":"00","topic":"t","language":"en","timeZone":"UTC","webPush":{"endpoint":"https://push.example/x",%s}}' % wp_keys, 400, '"webPush"'),
            ("/v1/sends", '{%s,"url":"' % ok + "h" * 10_000 + '"}', 400, '"url"'),
            ("/v1/sends", '{"x":"' + "a" * (2 << 20) + '"}', 413, ""),
        ]
        with httpx.Client(timeout=20) as c:
            r = c.post(api + "/v1/sends", content=b'{"to":{"user":"u"}}')
            check("provider REST without a token: 401", r.status_code == 401, r.status_code)
            r = c.post(api + "/v1/sends", content=b'{"to":{"user":"u"}}', headers={"authorization": "Bearer " + "0" * 64})
            check("provider REST with a wrong token: 401", r.status_code == 401, r.status_code)
            wrong = []
            for path, payload, status, fragment in rest_cases:
                try:
                    r = c.post(api + path, content=payload if isinstance(payload, bytes) else payload.encode(), headers=bearer)
                    message = r.json().get("error", "") if r.headers.get("content-type", "").startswith("application/json") else r.text
                    if r.status_code != status or fragment not in message:
                        wrong.append((path, payload[:60], r.status_code, r.text[:120]))
                except httpx.HTTPError as error:
                    wrong.append((path, payload[:60], repr(error)))
            check(f"provider REST: {len(rest_cases)} hostile bodies each get their specific 400/413", not wrong, wrong)
            check("provider REST: the service survived", alive(provider))
            r = c.post(api + "/v1/registrations", headers=bearer, content=json.dumps(
                {"token": device_token, "topic": TOPIC, "language": "en", "timeZone": "UTC", "userId": "after-attack"}).encode())
            check("provider REST: a registration after the attacks", r.status_code == 200, r.text[:200])
            r = c.post(api + "/v1/sends", headers=bearer, content=json.dumps(
                {"to": {"user": "after-attack"}, "alert": {"title": "Herald", "body": "through the provider"}}).encode())
            check("provider REST: a send after the attacks is accepted", r.status_code == 200 and r.json().get("counts") == {"accepted": 1}, r.text[:200])
        through = next_event("notification", 15, where=lambda e: "through the provider" in json.dumps(e.get("payload")))
        check("the provider's send reached the device", through is not None)
        grown = rss_kib(provider.pid) - provider_rss
        check("provider memory bounded (growth < 64 MiB)", grown < 64 * 1024, f"+{grown} KiB")
        provider.terminate()
        provider.wait(10)
        check("the gateway survived every attack", alive(gateway))
        rss_end = rss_kib(gateway.pid)
        check("gateway memory bounded (growth < 64 MiB over the suite)", rss_end - rss_start < 64 * 1024, f"{rss_start} -> {rss_end} KiB")
    finally:
        for process in (provider, device, gateway):
            if process is not None and alive(process):
                process.terminate()
                try:
                    process.wait(10)
                except subprocess.TimeoutExpired:
                    process.kill()
        shutil.rmtree(data, ignore_errors=True)
    passed = sum(results)
    print(f"{passed} passed, {len(results) - passed} failed")
    sys.exit(0 if passed == len(results) else 1)


if __name__ == "__main__":
    main()
