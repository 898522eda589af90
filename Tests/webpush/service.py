#!/usr/bin/env python3
"""Herald's Web Push port against third-party code: pywebpush (what Django/Mastodon-style
application servers use) pushes, and a user agent written here with `websockets` speaks
Mozilla's push protocol (as Firefox does: hello, register, notification, ack) and decrypts with
Mozilla's `http_ece`. The gateway is a real `herald gateway` (ports from the OS), killed with
SIGKILL half-way to show that a 201 is durable.

    python3 Tests/webpush/service.py PATH/TO/herald
"""
import asyncio
import json
import os
import signal
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from harness import check, read, run, start, wait_for  # noqa: E402
from useragent import UserAgent, b64d, b64e, refusal  # noqa: E402

import pywebpush
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from py_vapid import Vapid02

HERALD = os.path.abspath(sys.argv[1])
WORK = tempfile.mkdtemp(prefix="herald-webpush-")
DATA = os.path.join(WORK, "data")


class Gateway:
    """`herald gateway` with a Web Push port; restartable on the same data directory."""

    def __init__(self):
        self.process = None
        self.ports = None

    def start(self, n):
        out = os.path.join(WORK, f"gateway{n}.json")
        self.process = start([HERALD, "gateway", "--data-dir", DATA, "--provider-port", "0", "--webpush-port", "0", "--admin-port", "0"],
                             stdout=open(out, "w"), stderr=open(os.path.join(WORK, f"gateway{n}.err"), "w"))
        self.ports = json.loads(wait_for("the gateway", lambda: read(out).splitlines()[0] if read(out).strip() else None))
        return self.ports

    def kill(self):
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait()


def push(subscription, data, vapid=None, ca=None, **kwargs):
    """pywebpush's webpush(); returns the response (refusals raise WebPushException)."""
    claims = {"sub": "mailto:ops@example.com"} if vapid else None
    return pywebpush.webpush(subscription, data=data, vapid_private_key=vapid, vapid_claims=claims,
                             requests_session=session(ca), **kwargs)


def session(ca):
    s = requests.Session()
    s.verify = ca
    return s


async def scenario():
    gateway = Gateway()
    ports = gateway.start(1)
    check("the start-up line names the Web Push port", isinstance(ports.get("webpush_port"), int), json.dumps(ports))
    ca = ports["ca"]
    # pywebpush sends through requests, which trusts this bundle (the gateway's development CA).
    os.environ["REQUESTS_CA_BUNDLE"] = ca
    url = f"wss://localhost:{ports['webpush_port']}/"
    vapid = Vapid02()
    vapid.generate_keys()
    server_key = b64e(vapid.public_key.public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint))
    other = Vapid02()
    other.generate_keys()

    agent = UserAgent(url, ca)
    hello = await agent.connect()
    check("hello: a fresh uaid, status 200, use_webpush", hello.get("status") == 200 and len(hello.get("uaid", "")) == 32 and hello.get("use_webpush") is True, json.dumps(hello))
    reply, subscription = await agent.subscribe(server_key)
    endpoint = subscription["endpoint"] or ""
    check("register: an https endpoint on the Web Push port", reply.get("status") == 200 and endpoint.startswith(f"https://localhost:{ports['webpush_port']}/wpush/") and len(endpoint.rsplit("/", 1)[1]) == 64, json.dumps(reply))
    _, open_subscription = await agent.subscribe(None)

    # A push with a payload, signed by the subscription's key: delivered, decrypted, acked.
    response = push(subscription, "hello from pywebpush", vapid=vapid, ca=ca, ttl=60, headers={"Urgency": "high"})
    check("pywebpush: 201 Created with a Location", response.status_code == 201 and "/m/" in response.headers.get("Location", ""), f"{response.status_code} {dict(response.headers)}")
    notification = await agent.next("notification")
    check("the user agent decrypts what pywebpush encrypted (aes128gcm)", agent.decrypt(notification) == b"hello from pywebpush", json.dumps(notification)[:300])
    await agent.ack(notification)
    receipt_url = response.headers["Location"]
    receipt = wait_for("the ack in the receipt", lambda: (lambda r: r if r["deliveries"][0]["status"] == "acked" else None)(
        requests.get(receipt_url, verify=ca).json()), timeout=10)
    check("GET on the Location is the message's receipt: acked", receipt["deliveries"][0]["status"] == "acked", json.dumps(receipt))

    # The older aesgcm scheme (Encryption/Crypto-Key headers) passes through untouched.
    push(subscription, "legacy aesgcm", vapid=vapid, ca=ca, ttl=60, content_encoding="aesgcm")
    notification = await agent.next("notification")
    check("aesgcm: the user agent gets the headers and decrypts", agent.decrypt(notification) == b"legacy aesgcm", json.dumps(notification)[:300])
    await agent.ack(notification)

    # A push without a body, to a subscription made without a key (no VAPID needed).
    response = push(open_subscription, None, ca=ca, ttl=60)
    notification = await agent.next("notification")
    check("a push without a body is a message too", response.status_code == 201 and "data" not in notification, json.dumps(notification))
    await agent.ack(notification)

    # Refusals, with the status pywebpush's exception carries.
    check("another application server's key: 403", refusal(lambda: push(subscription, "x", vapid=other, ca=ca, ttl=60)) == 403)
    check("no VAPID for a keyed subscription: 401", refusal(lambda: push(subscription, "x", ca=ca, ttl=60)) == 401)
    check("an endpoint that never existed: 404", refusal(lambda: push(dict(subscription, endpoint=endpoint[:-8] + "00000000"), "x", vapid=vapid, ca=ca, ttl=60)) == 404)
    check("a body over 4096 bytes: 413", refusal(lambda: push(subscription, "x" * 4000, vapid=vapid, ca=ca, ttl=60)) == 413)
    # The same port over HTTP/2 (ALPN h2), as httpx sends it: a push and a refusal.
    import httpx
    with httpx.Client(http2=True, verify=ca) as h2:
        signed = pywebpush.WebPusher(open_subscription).encode(b"over h2", "aes128gcm")
        r = h2.post(open_subscription["endpoint"], content=signed["body"], headers={"ttl": "60", "content-encoding": "aes128gcm"})
        check("HTTP/2: a push is 201 with a Location", r.http_version == "HTTP/2" and r.status_code == 201 and "/m/" in r.headers.get("location", ""), f"{r.http_version} {r.status_code} {r.text}")
        notification = await agent.next("notification")
        check("HTTP/2: the user agent decrypts it", agent.decrypt(notification) == b"over h2", json.dumps(notification)[:200])
        await agent.ack(notification)
        r = h2.post(open_subscription["endpoint"], content=b"x" * 5000, headers={"ttl": "60", "content-encoding": "aes128gcm"})
        check("HTTP/2: a body over 4096 bytes is 413", r.status_code == 413 and "message" in r.json(), f"{r.status_code} {r.text}")
        r = h2.get(response.headers["Location"])
        check("HTTP/2: GET on a Location is its receipt", r.status_code == 200 and r.json().get("deliveries"), f"{r.status_code} {r.text}")
    no_ttl = requests.post(endpoint, data=b"", headers={}, verify=ca)
    check("no TTL header: 400 with a reason", no_ttl.status_code == 400 and "message" in no_ttl.json(), no_ttl.text)

    # Offline: stored, then delivered on the next connection, after a SIGKILL of the gateway.
    await agent.ws.close()
    response = push(subscription, "while you were away", vapid=vapid, ca=ca, ttl=3600, headers={"Topic": "news"})
    push(subscription, "replaced by topic", vapid=vapid, ca=ca, ttl=3600, headers={"Topic": "other"})
    push(subscription, "the newest on other", vapid=vapid, ca=ca, ttl=3600, headers={"Topic": "other"})
    ttl0 = push(subscription, "now or never", vapid=vapid, ca=ca, ttl=0)
    check("stored while the user agent is away: 201", response.status_code == 201 and ttl0.status_code == 201)
    gateway.kill()
    ports = gateway.start(2)
    agent.url = f"wss://localhost:{ports['webpush_port']}/"
    # The restarted gateway listens on another port (chosen by the OS); the endpoint's id is the same.
    subscription["endpoint"] = f"https://localhost:{ports['webpush_port']}/wpush/" + endpoint.rsplit("/", 1)[1]
    uaid = agent.uaid
    hello = await agent.connect()
    check("the same uaid after a gateway SIGKILL", hello.get("uaid") == uaid, json.dumps(hello))
    got = []
    try:
        while True:
            n = await agent.next("notification", timeout=3)
            got.append(agent.decrypt(n).decode())
            await agent.ack(n)
    except (asyncio.TimeoutError, TimeoutError):
        pass
    check("what was stored arrives after the SIGKILL; Topic replaced the undelivered older one; TTL 0 was never stored",
          got == ["while you were away", "the newest on other"], json.dumps(got))

    # Unsubscribe: 410 Gone, as senders expect to prune.
    channel = next(iter(agent.keys))
    await agent.ws.send(json.dumps({"messageType": "unregister", "channelID": channel}))
    reply = await agent.next("unregister")
    check("unregister: status 200", reply.get("status") == 200, json.dumps(reply))
    check("a push to an unsubscribed endpoint: 410", refusal(lambda: push(subscription, "x", vapid=vapid, ca=ca, ttl=60)) == 410)
    await agent.ws.close()

    # The live feed (admin port, what `herald gateway watch` reads) marks Web Push traffic.
    events = requests.get(f"http://127.0.0.1:{ports['admin_port']}/v1/events", stream=True, timeout=10)
    await asyncio.sleep(0.3)
    open_subscription["endpoint"] = f"https://localhost:{ports['webpush_port']}/wpush/" + open_subscription["endpoint"].rsplit("/", 1)[1]
    push(open_subscription, None, ca=ca, ttl=60)
    seen = None
    for line in events.iter_lines():
        if line.startswith(b"data: ") and b'"accepted"' in line:
            seen = json.loads(line[6:])
            break
    events.close()
    check("the live feed shows the accepted message as Web Push", seen is not None and seen.get("protocol") == "webpush", json.dumps(seen))
    metrics = requests.get(f"http://127.0.0.1:{ports['admin_port']}/metrics").text
    check("metrics count the Web Push port by status", 'herald_webpush_requests_total{status="410"}' in metrics, metrics[-400:])


run("webpush service", lambda: asyncio.run(scenario()))
