#!/usr/bin/env python3
"""Herald as a cluster, from outside: three gateway nodes on one PostgreSQL, a node killed mid-load.

Usage: cluster.py HERALD_BINARY   (HERALD_TEST_POSTGRES_URL names the server; scripts/test.sh sets it)

Independent clients only: the devices are Python (websockets + cryptography, the device protocol
of docs/device-protocol.md), the provider is httpx over HTTP/2 with its own ES256 tokens.

Twice, with the cross-node hint on and then off (the sweep alone):
  - three nodes (a, b, c) sharing one TLS certificate and one database;
  - DEVICES devices spread over the nodes, each knowing all three (it moves to the next node
    when its node is unreachable);
  - a provider sending round-robin to all nodes, so most deliveries cross nodes; node b is
    SIGKILLed in the middle; requests b did not answer are retried on another node with the
    same apns-id; b is restarted under the same id and receives routed pushes again.
Asserted: every apns-id answered 200 reaches its device at least once (exactly once after the
device's deduplication by apns-id); an apns-id is stored more than once only if it was retried
after b died; duplicates reach only devices that were on b or pushes that were in flight on b;
receipts and feedback read through every node agree. Then a broadcast (issue 66): a quarter of
the devices subscribe to a channel, one broadcast is sent to one node, and every subscriber gets
it once whichever node it is on (by the one hint per node, or by the sweep alone); it is stored
as one row, and its receipt, read through another node, counts every subscriber acked.
"""
import asyncio, base64, json, os, signal, socket, subprocess, sys, tempfile, time, uuid

import httpx
import websockets
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
import ssl

HERALD = os.path.abspath(sys.argv[1])
PG = os.environ.get("HERALD_TEST_POSTGRES_URL")
TOPIC = "com.example.cluster"
TEAM = "CLUSTER001"
DEVICES = int(os.environ.get("HERALD_CLUSTER_DEVICES", "240"))
PUSHES = int(os.environ.get("HERALD_CLUSTER_PUSHES", "1800"))
FAILURES = []


def check(name, ok, detail=""):
    print(("ok   " if ok else "FAIL ") + name + ("" if ok else f"  [{detail}]"), flush=True)
    if not ok:
        FAILURES.append(name)


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fresh_database(name):
    base, _, query = PG.partition("?")
    subprocess.run(["psql", PG, "-q", "-v", "ON_ERROR_STOP=1", "-c", f"DROP DATABASE IF EXISTS {name} WITH (FORCE)", "-c", f"CREATE DATABASE {name}"],
                   check=True, capture_output=True)
    return base.rsplit("/", 1)[0] + "/" + name + ("?" + query if query else "")


def sql(url, statement):
    out = subprocess.run(["psql", url, "-At", "-c", statement], check=True, capture_output=True, text=True)
    return [line for line in out.stdout.splitlines() if line]


class Node:
    def __init__(self, name, work, database, hints, tls=None):
        self.name, self.work, self.database, self.hints, self.tls = name, work, database, hints, tls
        self.provider_port, self.device_port, self.admin_port = free_port(), free_port(), free_port()
        self.channel_port = free_port()
        self.process = None

    def start(self):
        args = [HERALD, "gateway", "--data-dir", os.path.join(self.work, self.name), "--database", self.database,
                "--node-id", self.name, "--provider-port", str(self.provider_port), "--device-port", str(self.device_port),
                "--admin-port", str(self.admin_port), "--channel-port", str(self.channel_port), "--offline-queue", "10000", "--token-burst", "0",
                "--node-lease", "3", "--cluster-sweep", "500", "--cross-node-hints", "on" if self.hints else "off",
                "--log-level", "warning"]
        if self.tls:
            args += ["--tls-cert", self.tls[0], "--tls-key", self.tls[1]]
        self.log = open(os.path.join(self.work, self.name + ".log"), "ab")
        self.process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=self.log)
        line = self.process.stdout.readline()
        if not line:
            self.log.flush()
            with open(self.log.name, "rb") as f:
                raise AssertionError(f"node {self.name} did not start: {f.read()[-2000:].decode(errors='replace')}")
        self.startup = json.loads(line)
        return self.startup

    def kill(self):
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()

    def admin(self, path):
        return httpx.get(f"http://127.0.0.1:{self.admin_port}{path}", timeout=10)

    def metric(self, name):
        for line in self.admin("/metrics").text.splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
        return 0.0


class Device:
    """A device: a P-256 key, one WebSocket at a time, acks everything it receives."""

    def __init__(self, index, nodes, context, fleet):
        self.index, self.nodes, self.context, self.fleet = index, nodes, context, fleet
        self.key = ec.generate_private_key(ec.SECP256R1())
        numbers = self.key.public_key().public_numbers()
        self.public = numbers.x.to_bytes(32, "big") + numbers.y.to_bytes(32, "big")
        self.token = None
        self.node = None
        self.registered = asyncio.Event()
        self.start = index % len(nodes)
        self.ws = None
        self.subscription = None     # the channel subscription's token, once subscribed
        self.subscribed = asyncio.Event()

    async def run(self):
        attempt = 0
        while not self.fleet.stopping:
            node = self.nodes[(self.start + attempt) % len(self.nodes)]
            attempt += 1
            try:
                async with websockets.connect(f"wss://localhost:{node.device_port}/device/v1", ssl=self.context,
                                              open_timeout=5, ping_interval=None, max_size=2**20) as ws:
                    await self.session(ws, node)
            except (OSError, websockets.exceptions.WebSocketException, asyncio.TimeoutError):
                pass
            self.node = None
            await asyncio.sleep(0.2)

    async def session(self, ws, node):
        async for text in ws:
            frame = json.loads(text)
            kind = frame["type"]
            if kind == "challenge":
                signature = self.key.sign(f"herald-device-challenge:v1:{frame['nonce']}".encode(), ec.ECDSA(hashes.SHA256()))
                r, s = decode_dss_signature(signature)
                await ws.send(json.dumps({"type": "hello", "version": 2, "public-key": base64.b64encode(self.public).decode(),
                                          "signature": base64.b64encode(r.to_bytes(32, "big") + s.to_bytes(32, "big")).decode()}))
            elif kind == "welcome":
                self.node = node.name
                self.ws = ws
                await ws.send(json.dumps({"type": "register", "topic": TOPIC}))
            elif kind == "registered":
                self.token = frame["token"]
                self.registered.set()
                if self.subscription:
                    await self.subscribe(self.subscription[0])
            elif kind == "subscribed":
                self.subscription = (frame["channel"], frame["token"])
                self.subscribed.set()
            elif kind == "notification":
                apns_id = frame["apns-id"]
                self.fleet.received(self, apns_id)
                await ws.send(json.dumps({"type": "ack", "ids": [apns_id]}))


    async def subscribe(self, channel):
        """Subscribes to a channel (again at every connection, as a device does)."""
        self.subscription = (channel, self.subscription[1] if self.subscription else None)
        await self.ws.send(json.dumps({"type": "subscribe", "topic": TOPIC, "channel": channel}))


class Fleet:
    def __init__(self):
        self.stopping = False
        self.counts = {}        # apns-id -> receptions
        self.receivers = {}     # apns-id -> devices that received it
        self.changed = asyncio.Event()

    def received(self, device, apns_id):
        self.counts[apns_id] = self.counts.get(apns_id, 0) + 1
        self.receivers.setdefault(apns_id, set()).add(device.index)
        self.changed.set()


def provider_token(key, key_id):
    header = b64(json.dumps({"alg": "ES256", "kid": key_id}).encode())
    claims = b64(json.dumps({"iss": TEAM, "iat": int(time.time())}).encode())
    r, s = decode_dss_signature(key.sign(f"{header}.{claims}".encode(), ec.ECDSA(hashes.SHA256())))
    return f"{header}.{claims}.{b64(r.to_bytes(32, 'big') + s.to_bytes(32, 'big'))}"


async def scenario(work, hints):
    label = "hints on" if hints else "hints off (sweep only)"
    print(f"--- three nodes, {label}", flush=True)
    os.makedirs(work, exist_ok=True)
    database = fresh_database("herald_cluster_" + ("hints" if hints else "sweep"))
    a = Node("a", work, database, hints)
    a.start()
    tls = (os.path.join(work, "a", "tls", "server.pem"), os.path.join(work, "a", "tls", "server-key.pem"))
    ca = os.path.join(work, "a", "tls", "ca.pem")
    b, c = Node("b", work, database, hints, tls), Node("c", work, database, hints, tls)
    b.start()
    c.start()
    nodes = [a, b, c]
    check(f"[{label}] the start-up line names the node", [n.startup.get("node") for n in nodes] == ["a", "b", "c"],
          [n.startup.get("node") for n in nodes])
    try:
        key_id = subprocess.run([HERALD, "keys", "create", "--database", database, "--team", TEAM, "--topic", TOPIC,
                                 "--out", os.path.join(work, "key.p8")], check=True, capture_output=True, text=True).stdout.strip()
        with open(os.path.join(work, "key.p8"), "rb") as f:
            key = serialization.load_pem_private_key(f.read(), None)
        context = ssl.create_default_context(cafile=ca)
        fleet = Fleet()
        devices = [Device(i, nodes, context, fleet) for i in range(DEVICES)]
        tasks = [asyncio.create_task(d.run()) for d in devices]
        await asyncio.wait_for(asyncio.gather(*(d.registered.wait() for d in devices)), 60)
        on_node = {n.name: sum(1 for d in devices if d.node == n.name) for n in nodes}
        check(f"[{label}] {DEVICES} devices registered, spread over the nodes", all(v > 0 for v in on_node.values()), on_node)

        jwt = provider_token(key, key_id)
        clients = {n.name: httpx.AsyncClient(http2=True, verify=ca, timeout=5) for n in nodes}
        answered = {}        # apns-id -> (node that answered 200, device index)
        retried = set()      # apns-ids re-sent after an unanswered attempt
        first_attempt = {}   # apns-id -> node of the first attempt
        dead = set()

        async def push(i, node_order):
            device = devices[i % DEVICES]
            apns_id = str(uuid.uuid4())
            body = json.dumps({"aps": {"alert": f"push {i}"}}).encode()
            for attempt, node in enumerate(node_order):
                if node.name in dead:
                    continue
                first_attempt.setdefault(apns_id, node.name)
                if attempt > 0 and first_attempt[apns_id] != node.name:
                    retried.add(apns_id)
                try:
                    r = await clients[node.name].post(
                        f"https://localhost:{node.provider_port}/3/device/{device.token}", content=body,
                        headers={"authorization": f"bearer {jwt}", "apns-topic": TOPIC, "apns-id": apns_id,
                                 "apns-push-type": "alert"})
                except (httpx.TransportError, httpx.TimeoutException):
                    continue      # unanswered: the same apns-id goes to another node
                if r.status_code == 200:
                    answered[apns_id] = (node.name, device.index)
                    return
                if r.status_code >= 500:
                    continue
                raise AssertionError(f"push {i} refused: {r.status_code} {r.text}")
            raise AssertionError(f"push {i} answered by no node")

        kill_at = PUSHES // 2
        on_b_at_kill = set()
        in_flight = 48
        i = 0
        while i < PUSHES:
            if i >= kill_at and "b" not in dead:
                on_b_at_kill = {d.index for d in devices if d.node == "b"}
                b.kill()
                dead.add("b")
            batch = range(i, min(PUSHES, i + in_flight))
            await asyncio.gather(*(push(j, nodes[j % 3:] + nodes[:j % 3]) for j in batch))
            i += len(batch)
        check(f"[{label}] node b killed mid-load with {len(on_b_at_kill)} devices on it", len(on_b_at_kill) > 0)

        # b comes back under the same id; devices find it again (new ones start there).
        b.start()
        dead.discard("b")
        await clients["b"].aclose()
        clients["b"] = httpx.AsyncClient(http2=True, verify=ca, timeout=5)
        late = [Device(DEVICES + k, [b, c, a], context, fleet) for k in range(12)]
        for d in late:
            d.start = 0
        devices += late
        tasks += [asyncio.create_task(d.run()) for d in late]
        await asyncio.wait_for(asyncio.gather(*(d.registered.wait() for d in late)), 30)
        check(f"[{label}] devices connect to the restarted node", all(d.node == "b" for d in late), [d.node for d in late])
        routed_before = b.metric("herald_cluster_hints_received_total") + b.metric("herald_cluster_swept_total")
        # Pushes for b's new devices accepted by a and c only: they must be routed to b.
        late_ids = []
        for k, d in enumerate(late):
            for node in (a, c):
                apns_id = str(uuid.uuid4())
                r = await clients[node.name].post(
                    f"https://localhost:{node.provider_port}/3/device/{d.token}",
                    content=json.dumps({"aps": {"alert": "after restart"}}).encode(),
                    headers={"authorization": f"bearer {jwt}", "apns-topic": TOPIC, "apns-id": apns_id})
                check(f"[{label}] push after restart accepted by {node.name}", r.status_code == 200, r.text) if k == 0 else None
                if r.status_code == 200:
                    answered[apns_id] = (node.name, d.index)
                    late_ids.append(apns_id)

        # Everything answered 200 arrives.
        deadline = time.time() + 60
        while time.time() < deadline and any(fleet.counts.get(x, 0) == 0 for x in answered):
            fleet.changed.clear()
            try:
                await asyncio.wait_for(fleet.changed.wait(), 1)
            except asyncio.TimeoutError:
                pass
        missing = [x for x in answered if fleet.counts.get(x, 0) == 0]
        check(f"[{label}] every apns-id answered 200 ({len(answered)}) was delivered at least once", not missing,
              f"{len(missing)} missing, e.g. {missing[:3]}")
        wrong = [x for x, (_, idx) in answered.items() if fleet.receivers.get(x, {idx}) != {idx}]
        check(f"[{label}] each reached its own device only", not wrong, wrong[:3])
        duplicates = {x for x, n in fleet.counts.items() if n > 1}
        explained = {x for x in duplicates if x in retried or (answered.get(x, ("", -1))[1] in on_b_at_kill)}
        check(f"[{label}] duplicates ({len(duplicates)}) only for pushes in flight on b or devices that were on b",
              duplicates == explained, sorted(duplicates - explained)[:3])
        check(f"[{label}] after deduplication by apns-id, exactly once each", set(fleet.counts) >= set(answered))
        routed_after = b.metric("herald_cluster_hints_received_total") + b.metric("herald_cluster_swept_total")
        check(f"[{label}] the restarted node received routed pushes", routed_after > routed_before and all(fleet.counts.get(x) for x in late_ids),
              (routed_before, routed_after))

        stored_twice = set(sql(database, "SELECT apns_id FROM notifications GROUP BY apns_id HAVING count(*) > 1"))
        check(f"[{label}] no apns-id stored twice except those retried after b died ({len(stored_twice)})",
              stored_twice <= retried, sorted(stored_twice - retried)[:3])
        held = sql(database, "SELECT count(*) FROM notifications WHERE state = 0")
        check(f"[{label}] nothing answered 200 is still held once acked", held == ["0"], held)

        # Receipts and feedback read through any node agree.
        sample = list(answered)[:: max(1, len(answered) // 25)]
        agree = all(len({json.dumps(n.admin(f"/v1/receipts/{x}").json(), sort_keys=True) for n in nodes}) == 1 for x in sample)
        check(f"[{label}] receipts read through each node agree", agree)
        receipt = a.admin(f"/v1/receipts/{sample[0]}").json()
        check(f"[{label}] a receipt shows the push acked", "acked" in json.dumps(receipt), receipt)
        # Three devices remove the app: the feedback list is the same through every node.
        for d in devices[:3]:
            subprocess.run([HERALD, "tokens", "revoke", "--database", database, "--token", d.token], check=True, capture_output=True)
        lists = [json.dumps(n.admin(f"/v1/feedback?topic={TOPIC}").json(), sort_keys=True) for n in nodes]
        check(f"[{label}] the feedback list read through each node agrees and holds the 3 removed tokens",
              len(set(lists)) == 1 and all(d.token in lists[0] for d in devices[:3]), lists[0][:200])

        await broadcast_stage(label, nodes, devices, fleet, jwt, ca, database)

        # A key revoked through the database stops working on every node within seconds, on
        # connections already authenticated with it too.
        revoked_at = time.time()
        subprocess.run([HERALD, "keys", "revoke", "--database", database, "--key-id", key_id], check=True, capture_output=True)
        refused = {}
        while time.time() - revoked_at < 15 and len(refused) < len(nodes):
            for node in nodes:
                if node.name in refused:
                    continue
                r = await clients[node.name].post(
                    f"https://localhost:{node.provider_port}/3/device/{devices[-1].token}",
                    content=b'{"aps":{"alert":"after revocation"}}',
                    headers={"authorization": f"bearer {jwt}", "apns-topic": TOPIC})
                if r.status_code == 403:
                    refused[node.name] = (round(time.time() - revoked_at, 1), r.json().get("reason"))
            await asyncio.sleep(0.2)
        check(f"[{label}] a revoked key is refused by every node within seconds {refused}",
              len(refused) == len(nodes) and all(reason == "InvalidProviderToken" for _, reason in refused.values()), refused)

        fleet.stopping = True
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for client in clients.values():
            await client.aclose()
    finally:
        for n in nodes:
            n.stop()


async def broadcast_stage(label, nodes, devices, fleet, jwt, ca, database):
    """One broadcast to the subscribers of a channel spread over the three nodes."""
    a, c = nodes[0], nodes[2]
    async with httpx.AsyncClient(http2=True, verify=ca, timeout=10) as client:
        r = await client.post(f"https://localhost:{a.channel_port}/1/apps/{TOPIC}/channels",
                              content=json.dumps({"message-storage-policy": 1, "push-type": "LiveActivity"}).encode(),
                              headers={"authorization": f"bearer {jwt}"})
        check(f"[{label}] a channel created on node a's channel port", r.status_code == 201, (r.status_code, r.text))
        channel = r.headers["apns-channel-id"]
        subscribers = [d for d in devices[::4] if d.ws is not None and d.node]
        for d in subscribers:
            await d.subscribe(channel)
        await asyncio.wait_for(asyncio.gather(*(d.subscribed.wait() for d in subscribers)), 30)
        spread = {n.name: sum(1 for d in subscribers if d.node == n.name) for n in nodes}
        check(f"[{label}] {len(subscribers)} devices subscribed, on every node", all(spread.values()), spread)
        body = json.dumps({"aps": {"event": "update", "timestamp": int(time.time()), "content-state": {"n": 1}}}).encode()
        r = await client.post(f"https://localhost:{c.provider_port}/4/broadcasts/apps/{TOPIC}", content=body,
                              headers={"authorization": f"bearer {jwt}", "apns-channel-id": channel, "apns-push-type": "liveactivity"})
        check(f"[{label}] the broadcast is accepted by node c", r.status_code == 200, (r.status_code, r.text))
        request_id = r.headers.get("apns-request-id", "")
    deadline = time.time() + 30
    while time.time() < deadline and len(fleet.receivers.get(request_id, ())) < len(subscribers):
        fleet.changed.clear()
        try:
            await asyncio.wait_for(fleet.changed.wait(), 1)
        except asyncio.TimeoutError:
            pass
    got = fleet.receivers.get(request_id, set())
    check(f"[{label}] every subscriber, on every node, got the broadcast ({len(got)}/{len(subscribers)})",
          got == {d.index for d in subscribers}, sorted({d.index for d in subscribers} - got)[:5])
    check(f"[{label}] ... once each", fleet.counts.get(request_id) == len(subscribers), fleet.counts.get(request_id))
    rows = sql(database, f"SELECT (SELECT count(*) FROM broadcasts), (SELECT count(*) FROM notifications WHERE apns_id = '{request_id}')")
    check(f"[{label}] the broadcast is one row, no copy per subscriber", rows == ["1|0"], rows)

    def acked():
        counts = a.admin(f"/v1/receipts/{request_id}").json().get("counts", {})
        return counts.get("acked") == len(subscribers)
    deadline = time.time() + 15
    while time.time() < deadline and not acked():
        await asyncio.sleep(0.2)
    check(f"[{label}] its receipt, read through node a, counts every subscriber acked", acked(),
          a.admin(f"/v1/receipts/{request_id}").json().get("counts"))


def main():
    if not PG:
        print("HERALD_TEST_POSTGRES_URL is not set: the cluster test needs a PostgreSQL server", file=sys.stderr)
        sys.exit(2)
    with tempfile.TemporaryDirectory(prefix="herald-cluster-") as work:
        work = os.environ.get("HERALD_CLUSTER_WORK", work)
        for hints in (True, False):
            asyncio.run(scenario(os.path.join(work, "hints" if hints else "sweep"), hints))
    if FAILURES:
        print(f"{len(FAILURES)} cluster checks failed", flush=True)
        sys.exit(1)
    print("cluster: all checks passed", flush=True)


if __name__ == "__main__":
    main()
