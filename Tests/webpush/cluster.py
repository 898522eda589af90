#!/usr/bin/env python3
"""Web Push across gateway nodes: two `herald gateway` nodes on one PostgreSQL database (one TLS
certificate), a browser's push client on node a, pywebpush pushing through node b.

Asserted: a message pushed through b reaches the user agent connected to a (the cross-node hint,
or the cluster's sweep); a message pushed while the user agent is away is delivered when it
reconnects, to b, with its uaid; the subscription made on a is refused on b once unsubscribed
(410), as on a.

    python3 Tests/webpush/cluster.py PATH/TO/herald   (HERALD_TEST_POSTGRES_URL names the server)
"""
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import check, read, run, start, wait_for  # noqa: E402
from useragent import UserAgent, b64e  # noqa: E402

import pywebpush
from cryptography.hazmat.primitives import serialization
from py_vapid import Vapid02

HERALD = os.path.abspath(sys.argv[1])
PG = os.environ.get("HERALD_TEST_POSTGRES_URL")
WORK = tempfile.mkdtemp(prefix="herald-webpush-cluster-")


def fresh_database(name):
    base, _, query = PG.partition("?")
    subprocess.run(["psql", PG, "-q", "-v", "ON_ERROR_STOP=1", "-c", f"DROP DATABASE IF EXISTS {name} WITH (FORCE)",
                    "-c", f"CREATE DATABASE {name}"], check=True, capture_output=True)
    return base.rsplit("/", 1)[0] + "/" + name + ("?" + query if query else "")


def node(name, database, tls=None):
    out = os.path.join(WORK, name + ".json")
    args = [HERALD, "gateway", "--data-dir", os.path.join(WORK, name), "--database", database, "--node-id", name,
            "--provider-port", "0", "--webpush-port", "0", "--node-lease", "3", "--cluster-sweep", "500", "--log-level", "warning"]
    if tls:
        args += ["--tls-cert", tls[0], "--tls-key", tls[1]]
    start(args, stdout=open(out, "w"), stderr=open(os.path.join(WORK, name + ".err"), "w"))
    return json.loads(wait_for(f"node {name}", lambda: read(out).splitlines()[0] if read(out).strip() else None, timeout=60))


def on(port, subscription):
    """The subscription as reached through another node's Web Push port (same endpoint id)."""
    return dict(subscription, endpoint=f"https://localhost:{port}/wpush/" + subscription["endpoint"].rsplit("/", 1)[1])


async def scenario():
    if not PG:
        check("HERALD_TEST_POSTGRES_URL names a PostgreSQL server (scripts/test.sh starts one)", False)
        return
    database = fresh_database("herald_webpush_cluster")
    a = node("a", database)
    tls_dir = os.path.join(WORK, "a", "tls")
    b = node("b", database, tls=(os.path.join(tls_dir, "server.pem"), os.path.join(tls_dir, "server-key.pem")))
    ca = a["ca"]
    os.environ["REQUESTS_CA_BUNDLE"] = ca
    vapid = Vapid02()
    vapid.generate_keys()
    key = b64e(vapid.public_key.public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint))
    claims = {"sub": "mailto:ops@example.com"}

    agent = UserAgent(f"wss://localhost:{a['webpush_port']}/", ca)
    await agent.connect()
    reply, subscription = await agent.subscribe(key)
    check("a browser subscribes on node a", reply.get("status") == 200, json.dumps(reply))

    response = pywebpush.webpush(on(b["webpush_port"], subscription), data="through node b", vapid_private_key=vapid,
                                 vapid_claims=dict(claims), ttl=600)
    check("node b accepts a push to a subscription made on node a: 201", response.status_code == 201, response.status_code)
    notification = await agent.next("notification", timeout=15)
    check("the user agent on node a gets the message pushed through node b", agent.decrypt(notification) == b"through node b",
          json.dumps(notification)[:200])
    await agent.ack(notification)
    await agent.ws.close()

    response = pywebpush.webpush(on(b["webpush_port"], subscription), data="while away", vapid_private_key=vapid,
                                 vapid_claims=dict(claims), ttl=600)
    check("a push while the user agent is connected nowhere: 201", response.status_code == 201, response.status_code)
    uaid = agent.uaid
    agent.url = f"wss://localhost:{b['webpush_port']}/"
    hello = await agent.connect()
    check("the user agent moves to node b with its uaid", hello.get("uaid") == uaid, json.dumps(hello))
    notification = await agent.next("notification", timeout=15)
    check("what waited is delivered on node b", agent.decrypt(notification) == b"while away", json.dumps(notification)[:200])
    await agent.ack(notification)

    channel = next(iter(agent.keys))
    await agent.ws.send(json.dumps({"messageType": "unregister", "channelID": channel}))
    await agent.next("unregister")
    gone = []
    for port in (a["webpush_port"], b["webpush_port"]):
        try:
            pywebpush.webpush(on(port, subscription), data="x", vapid_private_key=vapid, vapid_claims=dict(claims), ttl=60)
            gone.append(201)
        except pywebpush.WebPushException as error:
            gone.append(error.response.status_code if error.response is not None else -1)
    check("unsubscribed: 410 from both nodes", gone == [410, 410], gone)
    await agent.ws.close()


run("webpush cluster", lambda: asyncio.run(scenario()))
