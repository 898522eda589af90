#!/usr/bin/env python3
"""Herald's chaos run: two gateway nodes on a real PostgreSQL, real `herald device run` processes,
a provider (httpx over HTTP/2) streaming pushes with unique apns-ids, and the faults a cluster
meets, one after the other, each while pushes flow:

  pg-stop        PostgreSQL stopped (-m fast) for longer than the node lease, then started
  pg-restart     PostgreSQL stopped (-m immediate) and started again at once
  partition-a    node a cut off from PostgreSQL (a proxy holds every byte) longer than its lease
  delay-a        100 ms added each way between node a and PostgreSQL
  freeze-a       node a frozen (SIGSTOP) longer than its lease, then resumed (SIGCONT)
  clock-b        node b's clock jumps 60 s ahead, then back
  kill-a         node a SIGKILLed mid-stream and started again
  kill-devices   every device process SIGKILLed mid-stream and started again

Usage: faults.py HERALD_BINARY   (starts and stops its own PostgreSQL server; needs initdb)

Timing chaos (issue 63): the same phases under other timing, for what only shows under load and
latency. HERALD_FAULTS_JITTER_MS=N delays every chunk on every PostgreSQL connection and on every
device connection (each through a proxy this run controls) by a random 0..N ms; the delays come
from HERALD_FAULTS_SEED (printed at the start, so that a failing run can be replayed with it).
HERALD_FAULTS_HOG=1 starts one busy process per core at the suite's own priority for the whole
run. HERALD_FAULTS_PHASES=a,b,… runs only those phases. scripts/soak.sh runs it over many seeds.

The provider behaves as APNs providers do: an unanswered request or a 5xx is retried on the other
node with the same apns-id. The devices' `--json` output is the record: `notification` events
say what arrived, `delivered` events what was shown. Asserted for every phase: every apns-id
answered 200 arrives at its own device and is shown exactly once, both nodes report healthy
again and take pushes without being restarted (except the one killed on purpose), and recovery
(from the end of the fault until all that was answered 200 is shown) stays bounded. The figures
are printed as a table at the end (docs/cluster.md quotes them).
"""
import asyncio, base64, json, os, random, signal, socket, subprocess, sys, tempfile, time, uuid

import httpx
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

HERALD = os.path.abspath(sys.argv[1])
TOPIC = "com.example.faults"
TEAM = "FAULTS0001"
JITTER = float(os.environ.get("HERALD_FAULTS_JITTER_MS", "0")) / 1000   # seconds, at most, added per chunk
# The bounds the nodes run with. Tight by default, so that each phase is short; under jitter the
# defaults of a deployment (a lease of 10 s, a store bound of 5 s), for what a round trip of up
# to 2 x JITTER leaves of a tight bound is not a fault's but the configuration's (HERALD_FAULTS_LEASE
# and HERALD_FAULTS_STORE_TIMEOUT_MS set them).
LEASE = int(os.environ.get("HERALD_FAULTS_LEASE") or (10 if JITTER >= 0.1 else 3))   # --node-lease, seconds
PING = 1                   # --device-ping-interval, seconds (a device gives up after 2 × 1 + 2 s)
STORE_TIMEOUT_MS = int(os.environ.get("HERALD_FAULTS_STORE_TIMEOUT_MS") or (5000 if JITTER >= 0.1 else 1500))   # --store-timeout
DEVICES = int(os.environ.get("HERALD_FAULTS_DEVICES", "4"))
RATE = float(os.environ.get("HERALD_FAULTS_RATE", "25"))   # pushes per second while a fault runs
RECOVERY_LIMIT = 45        # seconds from the end of a fault until everything answered 200 is shown
SEED = int(os.environ.get("HERALD_FAULTS_SEED") or random.SystemRandom().randrange(1 << 32))
HOG = os.environ.get("HERALD_FAULTS_HOG") == "1"
FAILURES = []


def check(name, ok, detail=""):
    print(("ok   " if ok else "FAIL ") + name + ("" if ok else f"  [{detail}]"), flush=True)
    if not ok:
        FAILURES.append(name)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def as_postgres(args):
    return (["runuser", "-u", "postgres", "--"] + args) if os.geteuid() == 0 else args


class Postgres:
    """A PostgreSQL server of this run's own, so that it can be stopped and started at will."""

    def __init__(self, work):
        bins = sorted(d for d in (os.path.join("/usr/lib/postgresql", v, "bin") for v in os.listdir("/usr/lib/postgresql"))
                      if os.path.exists(os.path.join(d, "initdb")))
        self.bin = bins[-1]
        self.dir = os.path.join(work, "pg")
        self.port = free_port()
        self.options = ""   # more server settings (-c name=value …), for the failover run
        os.makedirs(self.dir)
        if os.geteuid() == 0:
            subprocess.run(["chown", "postgres:postgres", self.dir], check=True)
        self.create()

    def create(self):
        subprocess.run(as_postgres([f"{self.bin}/initdb", "-D", f"{self.dir}/data", "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8"]),
                       check=True, capture_output=True)

    def start(self):
        subprocess.run(as_postgres([f"{self.bin}/pg_ctl", "-D", f"{self.dir}/data", "-l", f"{self.dir}/pg.log", "-w", "-o",
                                    f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c max_connections=200 {self.options}", "start"]),
                       check=True, capture_output=True)

    def stop(self, mode="fast"):
        subprocess.run(as_postgres([f"{self.bin}/pg_ctl", "-D", f"{self.dir}/data", "-m", mode, "-w", "stop"]), capture_output=True)

    def url(self, port=None):
        return f"postgres://postgres@127.0.0.1:{port or self.port}/herald?sslmode=disable"


class Proxy:
    """A TCP proxy between one node and PostgreSQL (or a device and a node) that this run
    controls: `pass`, `delay` (seconds added to every chunk each way) or `hold` (a partition:
    every byte is held, none is lost, until it heals, as TCP would retransmit them). With
    `jitter`, every chunk waits a random 0..jitter seconds more, drawn from its own generator
    seeded from the run's seed and the proxy's name (the order of bytes on a connection is kept)."""

    def __init__(self, target, name="", jitter=0.0):
        self.target, self.mode, self.delay = target, "pass", 0.0
        self.jitter, self.random = jitter, random.Random(f"{SEED}/{name}")
        self.connections = set()

    async def start(self):
        self.server = await asyncio.start_server(self.handle, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]

    async def handle(self, reader, writer):
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target)
        except OSError:
            writer.close()
            return
        self.connections.add((writer, up_writer))
        try:
            await asyncio.gather(self.pipe(reader, up_writer), self.pipe(up_reader, writer), return_exceptions=True)
        except asyncio.CancelledError:
            pass   # the run is over
        finally:
            self.connections.discard((writer, up_writer))

    def switch(self, target):
        """Points new connections at `target` and cuts every open one (as a failover's virtual
        address moving to another server does)."""
        self.target = target
        for client, upstream in list(self.connections):
            client.transport.abort()
            upstream.transport.abort()

    async def pipe(self, reader, writer):
        """Copies one direction. A chunk is delivered `delay` (+ its jitter) after it was read, in
        order: latency, as a network has it, where chunks in flight overlap (waiting for each
        chunk in turn would add the delays of every statement of a pipelined transaction)."""
        queue = asyncio.Queue()

        async def deliver():
            try:
                while True:
                    due, data = await queue.get()
                    if data is None:
                        break
                    wait = due - time.monotonic()
                    if wait > 0:
                        await asyncio.sleep(wait)
                    while self.mode == "hold":
                        await asyncio.sleep(0.02)
                    writer.write(data)
                    await writer.drain()
            finally:
                writer.close()

        delivery = asyncio.create_task(deliver())
        last = 0.0
        try:
            while True:
                data = await reader.read(65536)
                if not data:
                    break
                while self.mode == "hold":
                    await asyncio.sleep(0.02)
                wait = self.delay + (self.random.uniform(0, self.jitter) if self.jitter else 0.0)
                last = max(last, time.monotonic() + wait)
                queue.put_nowait((last, data))
        finally:
            queue.put_nowait((0.0, None))
            await asyncio.gather(delivery, return_exceptions=True)


class Node:
    def __init__(self, name, work, database, tls=None):
        self.name, self.work, self.database, self.tls = name, work, database, tls
        self.provider_port, self.device_port, self.admin_port = free_port(), free_port(), free_port()
        self.process = None
        self.starts = 0

    def start(self):
        args = [HERALD, "gateway", "--data-dir", os.path.join(self.work, self.name), "--database", self.database,
                "--node-id", self.name, "--provider-port", str(self.provider_port), "--device-port", str(self.device_port),
                "--admin-port", str(self.admin_port), "--offline-queue", "100000", "--token-burst", "0",
                "--node-lease", str(LEASE), "--cluster-sweep", "500", "--device-ping-interval", str(PING),
                "--device-idle-timeout", str(PING * 4), "--store-timeout", str(STORE_TIMEOUT_MS), "--enable-faults",
                "--log-level", os.environ.get("HERALD_FAULTS_LOG_LEVEL", "warning")]
        if self.tls:
            args += ["--tls-cert", self.tls[0], "--tls-key", self.tls[1]]
        self.log = open(os.path.join(self.work, self.name + ".log"), "ab")
        self.process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=self.log)
        line = self.process.stdout.readline()
        if not line:
            raise AssertionError(f"node {self.name} did not start (see {self.log.name})")
        self.starts += 1
        return json.loads(line)

    def signal(self, sig):
        self.process.send_signal(sig)

    def stop(self):
        """SIGTERM, then SIGKILL after 20 s; returns the seconds SIGTERM took (None: killed)."""
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)
            self.process.send_signal(signal.SIGTERM)
            started = time.monotonic()
            try:
                self.process.wait(timeout=20)
                return time.monotonic() - started
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
                return None
        return 0.0


class Device:
    """A real `herald device run` process; its `--json` lines are the record."""

    def __init__(self, index, work, gateways, ca):
        self.index, self.dir, self.gateways, self.ca = index, os.path.join(work, f"device{index}"), gateways, ca
        self.out = os.path.join(work, f"device{index}.jsonl")
        self.process = None
        self.offset = 0
        self.token = None
        self.arrived, self.shown = {}, {}     # apns-id -> count
        self.kills = 0

    def start(self):
        args = [HERALD, "device", "run", "--data-dir", self.dir, "--ca", self.ca, "--app", TOPIC, "--json", "--log-level", "error"]
        for g in self.gateways:
            args += ["--gateway", g]
        self.process = subprocess.Popen(args, stdout=open(self.out, "ab"), stderr=open(self.out + ".err", "ab"))

    def kill(self):
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()
        self.kills += 1

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()

    def read(self):
        with open(self.out, "rb") as f:
            f.seek(self.offset)
            data = f.read()
        end = data.rfind(b"\n") + 1
        self.offset += end
        for line in data[:end].splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue   # a line cut by a kill
            kind = event.get("event")
            if kind == "registered":
                self.token = event["token"]
            elif kind == "notification":
                self.arrived[event["apns-id"]] = self.arrived.get(event["apns-id"], 0) + 1
            elif kind == "delivered" and event["notification"].get("origin") == "remote":
                apns_id = event["notification"]["apns-id"]
                self.shown[apns_id] = self.shown.get(apns_id, 0) + 1

    def authorize(self):
        """The app asks to show alerts (its user says yes), as an app does on the agent socket."""
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(10)
            s.connect(os.path.join(self.dir, "agent.sock"))
            s.sendall(b'{"id":1,"op":"hello","app":"' + TOPIC.encode() + b'","state":"background"}\n'
                      b'{"id":2,"op":"requestAuthorization","options":["alert","sound"]}\n')
            answers = b""
            while answers.count(b"\n") < 2:
                chunk = s.recv(4096)
                if not chunk:
                    break
                answers += chunk
        return b'"granted":true' in answers


def provider_token(key, key_id):
    header = b64(json.dumps({"alg": "ES256", "kid": key_id}).encode())
    claims = b64(json.dumps({"iss": TEAM, "iat": int(time.time())}).encode())
    r, s = decode_dss_signature(key.sign(f"{header}.{claims}".encode(), ec.ECDSA(hashes.SHA256())))
    return f"{header}.{claims}.{b64(r.to_bytes(32, 'big') + s.to_bytes(32, 'big'))}"


class Provider:
    """Sends pushes as an APNs provider does: an unanswered request or a 5xx is retried on the
    other node with the same apns-id, until a 200 (or a 4xx, which fails the run)."""

    def __init__(self, nodes, ca, jwt):
        self.nodes, self.ca, self.jwt = nodes, ca, jwt
        self.clients = {}
        self.answered = {}      # apns-id -> (device index, phase)
        self.answered_at = {}   # apns-id -> when its 200 came (monotonic)
        self.answered_by = {}   # apns-id -> the node that answered 200
        self.attempts = {}      # apns-id -> [(when, node, status)] of every attempt
        self.answers = []       # (when, node) of every 200
        self.stats = {}         # phase -> counts

    def client(self, node):
        if node.name not in self.clients:
            self.clients[node.name] = httpx.AsyncClient(http2=True, verify=self.ca, timeout=httpx.Timeout(4.0))
        return self.clients[node.name]

    async def reset(self, node):
        client = self.clients.pop(node.name, None)
        if client:
            await client.aclose()

    async def push(self, device, phase, first):
        stats = self.stats.setdefault(phase, {"sent": 0, "200": 0, "503": 0, "500": 0, "unanswered": 0, "other": 0})
        stats["sent"] += 1
        apns_id = str(uuid.uuid4())
        body = json.dumps({"aps": {"alert": f"{phase} {apns_id[:8]}"}}).encode()
        deadline = time.monotonic() + 120
        attempt = 0
        while time.monotonic() < deadline:
            node = self.nodes[(first + attempt) % len(self.nodes)]
            attempt += 1
            tried = self.attempts.setdefault(apns_id, [])
            try:
                r = await self.client(node).post(
                    f"https://localhost:{node.provider_port}/3/device/{device.token}", content=body,
                    headers={"authorization": f"bearer {self.jwt}", "apns-topic": TOPIC, "apns-id": apns_id, "apns-push-type": "alert"})
            except (httpx.TransportError, httpx.TimeoutException):
                stats["unanswered"] += 1
                tried.append((time.monotonic(), node.name, "unanswered"))
                await self.reset(node)
                await asyncio.sleep(0.2)
                continue
            tried.append((time.monotonic(), node.name, r.status_code))
            if r.status_code == 200:
                stats["200"] += 1
                self.answered_by[apns_id] = node.name
                self.answered[apns_id] = (device.index, phase)
                self.answered_at[apns_id] = time.monotonic()
                self.answers.append((time.monotonic(), node.name))
                return
            key = str(r.status_code) if r.status_code in (500, 503) else "other"
            stats[key] += 1
            if r.status_code < 500:
                raise AssertionError(f"push refused: {r.status_code} {r.text}")
            await asyncio.sleep(0.2)
        raise AssertionError(f"push {apns_id} never answered 200")

    async def stream(self, devices, phase, stop):
        """Pushes at RATE per second, spread over devices and nodes, until `stop` is set."""
        tasks, i = [], 0
        while not stop.is_set():
            live = [d for d in devices if d.token]
            tasks.append(asyncio.create_task(self.push(live[i % len(live)], phase, i)))
            i += 1
            await asyncio.sleep(1 / RATE)
        await asyncio.gather(*tasks)

    async def close(self):
        for client in self.clients.values():
            await client.aclose()


def health(node, body=False):
    try:
        r = httpx.get(f"http://127.0.0.1:{node.admin_port}/health", timeout=3)
        return (r.status_code, r.text.strip()) if body else r.status_code
    except httpx.HTTPError as error:
        return (None, str(error)) if body else None


def late_offers(node):
    """The node's count of alerts held for a device connected to it and offered late
    (herald_late_offers_total: the gateway's own invariant, issue 63); None when it cannot be read."""
    try:
        text = httpx.get(f"http://127.0.0.1:{node.admin_port}/metrics", timeout=3).text
    except httpx.HTTPError:
        return None
    for line in text.splitlines():
        if line.startswith("herald_late_offers_total"):
            return int(float(line.split()[-1]))
    return 0


def create_key(database, work):
    """A provider key for TOPIC in the store (herald keys create): the private key and its id."""
    path = os.path.join(work, "key.p8")
    key_id = subprocess.run([HERALD, "keys", "create", "--database", database, "--team", TEAM, "--topic", TOPIC, "--out", path],
                            check=True, capture_output=True, text=True).stdout.strip()
    with open(path, "rb") as f:
        return serialization.load_pem_private_key(f.read(), None), key_id


async def device_ports(a, b):
    """Where devices reach each node: its device port, or with JITTER a proxy of this run's in
    front of it (each device connection's chunks delayed at random)."""
    if not JITTER:
        return {a.name: a.device_port, b.name: b.device_port}
    ports = {}
    for node in (a, b):
        proxy = Proxy(node.device_port, "device-" + node.name, JITTER)
        await proxy.start()
        DEVICE_PROXIES.append(proxy)
        ports[node.name] = proxy.port
    return ports


DEVICE_PROXIES = []


async def start_devices(work, a, b, ca):
    """DEVICES device processes, half starting on a, half on b, each knowing both; returns them
    once registered (or after 60 s: the caller checks)."""
    devices = []
    ports = await device_ports(a, b)
    for i in range(DEVICES):
        first, second = (a, b) if i % 2 == 0 else (b, a)
        device = Device(i, work, [f"wss://localhost:{ports[first.name]}", f"wss://localhost:{ports[second.name]}"], ca)
        device.start()
        devices.append(device)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not all(d.token for d in devices):
        for d in devices:
            d.read()
        await asyncio.sleep(0.1)
    return devices


async def await_shown(devices, provider, ids, limit):
    """Reads the devices' records until every apns-id in `ids` is shown on its device, or `limit`
    seconds have passed (the caller counts what is missing)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        for d in devices:
            d.read()
        if all(devices[provider.answered[x][0]].shown.get(x) for x in ids):
            return
        await asyncio.sleep(0.1)


async def stop_all(provider, devices, nodes):
    """The provider's connections closed, then every device and node stopped."""
    if provider:
        await provider.close()
    for d in devices:
        d.stop()
    for n in nodes:
        n.stop()
    for proxy in DEVICE_PROXIES:
        proxy.server.close()
    DEVICE_PROXIES.clear()


def start_hogs():
    """With HOG: one busy process per core, at this process's own priority (not niced), for the
    whole run; returns them (stop_hogs ends them)."""
    if not HOG:
        return []
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 2)]


def stop_hogs(hogs):
    for hog in hogs:
        hog.kill()
        hog.wait()


def announce(run):
    """The run's timing, first, so that a failure can be replayed with the same seed."""
    print(f"{run}: timing: jitter 0..{JITTER * 1000:.0f} ms per chunk on every PostgreSQL and device connection, "
          f"seed {SEED} (HERALD_FAULTS_SEED={SEED} replays it), CPU hog {'on' if HOG else 'off'}; "
          f"nodes with --node-lease {LEASE} --store-timeout {STORE_TIMEOUT_MS}", flush=True)


async def main(work):
    pg = Postgres(work)
    pg.start()
    subprocess.run(["psql", "-h", "127.0.0.1", "-p", str(pg.port), "-U", "postgres", "-q", "-c", "CREATE DATABASE herald"],
                   check=True, capture_output=True)
    proxies = {name: Proxy(pg.port, "pg-" + name, JITTER) for name in ("a", "b")}
    for proxy in proxies.values():
        await proxy.start()
    a = Node("a", work, pg.url(proxies["a"].port))
    # Blocking calls run off the loop: the proxies run on it.
    await asyncio.to_thread(a.start)
    tls = (os.path.join(work, "a", "tls", "server.pem"), os.path.join(work, "a", "tls", "server-key.pem"))
    ca = os.path.join(work, "a", "tls", "ca.pem")
    b = Node("b", work, pg.url(proxies["b"].port), tls)
    await asyncio.to_thread(b.start)
    nodes = [a, b]
    devices = []
    provider = None
    figures = []
    try:
        key, key_id = await asyncio.to_thread(create_key, pg.url(), work)
        devices += await start_devices(work, a, b, ca)
        check(f"{DEVICES} device processes registered", all(d.token for d in devices), [d.token for d in devices])
        check("every device's app is authorized to show alerts", all(await asyncio.gather(*(asyncio.to_thread(d.authorize) for d in devices))))
        provider = Provider(nodes, ca, provider_token(key, key_id))

        async def phase(name, fault, heal, hold=0.0):
            """Pushes flow; the fault starts, lasts `hold` seconds, heals; pushes flow 3 s more."""
            late_before = {}
            for n in nodes:
                late_before[n.name] = await asyncio.to_thread(late_offers, n) or 0
            starts = {n.name: n.starts for n in nodes}
            stop = asyncio.Event()
            stream = asyncio.create_task(provider.stream(devices, name, stop))
            await asyncio.sleep(2)
            await fault()
            await asyncio.sleep(hold)
            await heal()
            healed = time.monotonic()
            # While pushes go on flowing: when both nodes are healthy again, when each answers
            # 200 again, and when everything answered 200 before the fault ended is shown.
            healthy_at = drained_at = None
            before = [x for x, (_, p) in provider.answered.items() if p == name and provider.answered_at[x] <= healed]
            while time.monotonic() - healed < RECOVERY_LIMIT:
                now = time.monotonic()
                if healthy_at is None and all(await asyncio.gather(*(asyncio.to_thread(lambda n=n: health(n) == 200) for n in nodes))):
                    healthy_at = now
                for d in devices:
                    d.read()
                if drained_at is None and all(devices[provider.answered[x][0]].shown.get(x) for x in before):
                    drained_at = now
                answering = {node for t, node in provider.answers if t > healed}
                if now - healed >= 3 and healthy_at and drained_at and len(answering) == len(nodes):
                    break
                await asyncio.sleep(0.1)
            stop.set()
            await stream
            # Then everything answered 200 in the phase, after the fault too, must be shown.
            mine = [x for x, (_, p) in provider.answered.items() if p == name]
            await await_shown(devices, provider, mine, RECOVERY_LIMIT)
            back = {n.name: next((round(t - healed, 1) for t, node in provider.answers if t > healed and node == n.name), None) for n in nodes}
            if healthy_at is None:
                # What a failure needs to be understood later (CI keeps only this output): the
                # database's sessions and locks, and the nodes' last warnings.
                out = await asyncio.to_thread(subprocess.run, ["psql", pg.url(), "-c",
                    "SELECT pid, state, wait_event_type, wait_event, now() - xact_start AS in_xact, now() - query_start AS age, left(query, 80) "
                    "FROM pg_stat_activity WHERE datname = 'herald'", "-c",
                    "SELECT l.pid, l.locktype, l.mode, l.granted, c.relname FROM pg_locks l LEFT JOIN pg_class c ON c.oid = l.relation "
                    "WHERE NOT l.granted OR c.relname IN ('nodes', 'presence', 'device_tokens')"],
                    capture_output=True, text=True)
                print(out.stdout, out.stderr, flush=True)
                for n in nodes:
                    with open(n.log.name, "rb") as f:
                        lines = [l for l in f.read().decode(errors="replace").splitlines() if " error " in l or " warning " in l]
                    print(f"--- node {n.name}: its last warnings and errors", *lines[-15:], sep="\n", flush=True)
            stats = provider.stats.get(name, {})
            arrived = sum(1 for x in mine if devices[provider.answered[x][0]].arrived.get(x))
            shown = sum(1 for x in mine if devices[provider.answered[x][0]].shown.get(x))
            twice = sum(1 for x in mine if devices[provider.answered[x][0]].shown.get(x, 0) > 1)
            elsewhere = sum(1 for x in mine for d in devices if d.index != provider.answered[x][0] and (d.arrived.get(x) or d.shown.get(x)))
            recovery = round(max(0.0, drained_at - healed), 1) if drained_at else None
            # A killed node's counter starts again at 0: what it counted before is not seen.
            late = 0
            for n in nodes:
                counted = await asyncio.to_thread(late_offers, n) or 0
                late += max(0, counted - (late_before[n.name] if n.starts == starts[n.name] else 0))
            health_after = round(max(0.0, healthy_at - healed), 1) if healthy_at else None
            figures.append((name, len(mine), arrived, shown, twice, stats.get("503", 0), stats.get("500", 0), stats.get("unanswered", 0),
                            health_after, str(back["a"]), str(back["b"]), recovery, late))
            check(f"[{name}] every push answered 200 ({len(mine)}) arrived at its device", arrived == len(mine), f"{len(mine) - arrived} missing")
            missing = [x for x in mine if not devices[provider.answered[x][0]].arrived.get(x)]
            if missing:
                # What a loss needs to be understood later (CI keeps only this output): each
                # missing push's device, and every attempt's time (from the heal), node and answer.
                print(f"--- [{name}] missing pushes: device, then every attempt as seconds from the heal:node:answer", flush=True)
                for x in missing[:60]:
                    tries = " ".join(f"{t - healed:+.2f}:{n}:{s}" for t, n, s in provider.attempts.get(x, []))
                    print(f"  {x} device {provider.answered[x][0]}: {tries}", flush=True)
                # What the store says of them (state 0 held, 2 acked, 3 expired, 4 replaced,
                # 5 dropped), where each device is present now, and the nodes' leases.
                ids = ",".join(f"'{x}'" for x in missing)
                out = await asyncio.to_thread(subprocess.run, ["psql", pg.url(), "-c",
                    f"SELECT state, count(*), min(seq), max(seq), encode(token, 'hex') AS token FROM notifications "
                    f"WHERE apns_id IN ({ids}) GROUP BY state, token", "-c",
                    "SELECT p.*, encode(t.token, 'hex') AS token FROM presence p LEFT JOIN device_tokens t USING (device_id)", "-c",
                    "SELECT node_id, lease_until_ms - (extract(epoch from now()) * 1000)::bigint AS lease_left_ms FROM nodes", "-c",
                    "SELECT max(seq) AS newest_seq FROM notifications"],
                    capture_output=True, text=True)
                print(out.stdout, out.stderr, flush=True)
                for d in devices:
                    print(f"--- device {d.index} token {d.token}", flush=True)
                for n in nodes:
                    with open(n.log.name, "rb") as f:
                        lines = [l for l in f.read().decode(errors="replace").splitlines() if " error " in l or " warning " in l]
                    print(f"--- node {n.name}: its last warnings and errors", *lines[-25:], sep="\n", flush=True)
            check(f"[{name}] ... and was shown exactly once", shown == len(mine) and twice == 0, f"{len(mine) - shown} not shown, {twice} twice")
            check(f"[{name}] ... and reached no other device", elsewhere == 0, elsewhere)
            check(f"[{name}] both nodes report healthy again without a restart", healthy_at is not None, [health(n, body=True) for n in nodes])
            check(f"[{name}] both nodes answer 200 again after the fault {back}", all(v is not None for v in back.values()), back)
            if name == "baseline":
                check(f"[{name}] no alert held for a connected device was offered late (herald_late_offers_total)", late == 0, late)
            check(f"[{name}] recovered within {RECOVERY_LIMIT} s (all answered 200 before the fault ended shown {recovery} s after)",
                  recovery is not None and recovery <= RECOVERY_LIMIT, recovery)

        async def nothing():
            pass

        async def pg_stop():
            await asyncio.to_thread(pg.stop, "fast")

        async def pg_start():
            await asyncio.to_thread(pg.start)

        async def pg_restart():
            await asyncio.to_thread(pg.stop, "immediate")
            await asyncio.to_thread(pg.start)

        def proxy_mode(name, mode, delay=0.0):
            async def set_mode():
                proxies[name].mode, proxies[name].delay = mode, delay
            return set_mode

        def sig(node, s):
            async def send():
                node.signal(s)
            return send

        def clock(node, offset):
            async def shift():
                r = await asyncio.to_thread(httpx.post, f"http://127.0.0.1:{node.admin_port}/faults/clock", json={"offset_ms": offset}, timeout=5)
                assert r.status_code == 200, r.text
            return shift

        async def kill_a():
            a.signal(signal.SIGKILL)
            a.process.wait()
            await asyncio.sleep(1)
            await asyncio.to_thread(a.start)

        async def kill_devices():
            # Twice each, while pushes stream to them (the measurement: 5 kills, 1-5 shown twice).
            for d in devices + devices:
                d.kill()
                d.start()
                await asyncio.sleep(0.4)

        only = set(filter(None, os.environ.get("HERALD_FAULTS_PHASES", "").split(",")))
        real_phase = phase

        async def phase(name, fault, heal, hold=0.0):
            if not only or name in only:
                await real_phase(name, fault, heal, hold)

        await phase("baseline", nothing, nothing)
        await phase("pg-stop", pg_stop, pg_start, hold=LEASE + 2)
        await phase("pg-restart", pg_restart, nothing)
        await phase("partition-a", proxy_mode("a", "hold"), proxy_mode("a", "pass"), hold=LEASE + 3)
        await phase("delay-a", proxy_mode("a", "pass", 0.1), proxy_mode("a", "pass"), hold=5)
        await phase("freeze-a", sig(a, signal.SIGSTOP), sig(a, signal.SIGCONT), hold=LEASE + 3)
        await phase("clock-b", clock(b, 60_000), clock(b, 0), hold=LEASE + 2)
        await phase("kill-a", kill_a, nothing)
        await phase("kill-devices", kill_devices, nothing)

        check("node b was never restarted, node a only when killed on purpose",
              b.starts == 1 and a.starts == (2 if not only or "kill-a" in only else 1) and b.process.poll() is None,
              (a.starts, b.starts))
        total_twice = sum(1 for d in devices for n in d.shown.values() if n > 1)
        check(f"no notification shown twice across {sum(d.kills for d in devices)} device kills", total_twice == 0, total_twice)

        print("\nphase          200s  arrived  shown  twice  503s  500s  unanswered  healthy(s)  a-200(s)  b-200(s)  recovered(s)  late offers")
        for row in figures:
            print("%-13s %5d %8d %6d %6d %5d %5d %11d %11s %9s %9s %13s %12d" % row)
    finally:
        await stop_all(provider, devices, nodes)
        pg.stop("fast")
        for proxy in proxies.values():
            proxy.server.close()


if __name__ == "__main__":
    announce("faults")
    hogs = start_hogs()
    with tempfile.TemporaryDirectory(prefix="herald-faults-") as work:
        if os.geteuid() == 0:
            os.chmod(work, 0o755)
        try:
            asyncio.run(main(work))
        except Exception as error:
            check("the chaos run ran to the end", False, f"{type(error).__name__}: {error}")
        finally:
            stop_hogs(hogs)
        if os.environ.get("HERALD_FAULTS_KEEP"):
            subprocess.run(["cp", "-r", work, os.environ["HERALD_FAULTS_KEEP"]])
    print(f"{len(FAILURES)} failed" if FAILURES else "faults: all checks passed", flush=True)
    sys.exit(1 if FAILURES else 0)
