#!/usr/bin/env python3
"""PostgreSQL failover under load: does a push answered 200 survive its database's primary dying?

For each replication mode (`sync`: `synchronous_standby_names` names the standby, so a commit
returns only once the standby has it; `async`: PostgreSQL's default, the standby trails), on this
machine and with the test's own servers:

  1. a primary and a streaming standby (pg_basebackup -R, both the installed PostgreSQL), the
     standby seen streaming (and `sync` in pg_stat_replication for the sync run);
  2. two gateway nodes reaching the database through proxies the test controls (the address a
     deployment's failover moves), four `herald device run` processes, and a provider (httpx
     over HTTP/2) streaming pushes with unique apns-ids, retrying unanswered requests and 5xx on
     the other node with the same apns-id, as APNs providers do;
  3. under that load the primary is killed (`pg_ctl stop -m immediate`: no shutdown checkpoint,
     nothing more streamed), the standby promoted (`pg_ctl promote`), and the proxies switched to
     it, cutting every open connection;
  4. pushes go on; then every apns-id answered 200 must have arrived at its device and been shown
     exactly once.

Asserted: with synchronous replication, no push answered 200 is lost and none is shown twice;
both nodes are healthy again on the promoted standby without a restart. With asynchronous
replication the loss is measured and printed, not asserted (it depends on how far the standby
trailed at the instant of the kill); docs/cluster.md quotes both figures.

Usage: failover.py HERALD_BINARY [sync|async …]   (default: both; needs initdb and pg_basebackup)
"""
import asyncio, os, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import faults  # noqa: E402  (the chaos run's servers, nodes, devices and provider)
from faults import Node, Postgres, Provider, Proxy, as_postgres, check, free_port, health, provider_token  # noqa: E402

RATE = float(os.environ.get("HERALD_FAILOVER_RATE", "60"))   # pushes per second around the kill
RECOVERY_LIMIT = 60
# Both nodes answer 200 and /health 200 within this many seconds of the proxies' switch to the
# promoted standby (docs/cluster.md, "Liveness"; issue 63: it once took 8-10 s).
HEALTHY_AFTER_SWITCH = float(os.environ.get("HERALD_FAILOVER_HEALTHY_WITHIN", "2"))
# Added each way on the replication link (the standby in another zone of the same region): a
# synchronous commit waits a round trip more, and an asynchronous standby trails by about as much.
REPLICATION_DELAY = float(os.environ.get("HERALD_FAILOVER_REPLICATION_DELAY", "0.01"))
STANDBY_NAME = "herald_standby"


class Standby(Postgres):
    """A streaming standby of `primary`: a base backup with the recovery settings (-R), naming
    itself so that the primary's synchronous_standby_names can wait for it."""

    def __init__(self, work, primary, link_port):
        self.primary, self.link_port = primary, link_port
        super().__init__(work)

    def create(self):
        subprocess.run(as_postgres([f"{self.bin}/pg_basebackup", "-h", "127.0.0.1", "-p", str(self.primary.port), "-U", "postgres",
                                    "-D", f"{self.dir}/data", "-R", "-X", "stream", "--no-sync", "--checkpoint=fast"]), check=True, capture_output=True)
        with open(f"{self.dir}/data/postgresql.auto.conf", "a") as f:
            f.write(f"primary_conninfo = 'host=127.0.0.1 port={self.link_port} user=postgres application_name={STANDBY_NAME}'\n")

    def promote(self):
        subprocess.run(as_postgres([f"{self.bin}/pg_ctl", "-D", f"{self.dir}/data", "-w", "promote"]), check=True, capture_output=True)


def sql(port, query):
    out = subprocess.run(["psql", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "-At", "-c", query], capture_output=True, text=True)
    return out.stdout.strip()


async def run(mode, work):
    primary = Postgres(os.path.join(work, "primary"))
    primary.start()
    subprocess.run(["psql", "-h", "127.0.0.1", "-p", str(primary.port), "-U", "postgres", "-q", "-c", "CREATE DATABASE herald"],
                   check=True, capture_output=True)
    link = Proxy(primary.port)
    link.delay = REPLICATION_DELAY
    await link.start()
    standby = Standby(os.path.join(work, "standby"), primary, link.port)
    await asyncio.to_thread(standby.start)
    if mode == "sync":
        # Set once the standby exists: a commit waits for it (CREATE DATABASE above would have waited forever).
        await asyncio.to_thread(sql, primary.port, f"ALTER SYSTEM SET synchronous_standby_names = '{STANDBY_NAME}'")
        await asyncio.to_thread(sql, primary.port, "SELECT pg_reload_conf()")
    deadline = time.monotonic() + 30
    state = ""
    while time.monotonic() < deadline:
        state = await asyncio.to_thread(sql, primary.port, f"SELECT state || ' ' || sync_state FROM pg_stat_replication WHERE application_name = '{STANDBY_NAME}'")
        if state == ("streaming sync" if mode == "sync" else "streaming async"):
            break
        await asyncio.sleep(0.1)
    check(f"[{mode}] the standby streams from the primary ({state})", state.startswith("streaming"), state)

    proxies = {name: Proxy(primary.port, "pg-" + name, faults.JITTER) for name in ("a", "b")}
    for proxy in proxies.values():
        await proxy.start()
    os.makedirs(os.path.join(work, "nodes"))
    a = Node("a", os.path.join(work, "nodes"), primary.url(proxies["a"].port))
    await asyncio.to_thread(a.start)
    tls = (os.path.join(a.work, "a", "tls", "server.pem"), os.path.join(a.work, "a", "tls", "server-key.pem"))
    ca = os.path.join(a.work, "a", "tls", "ca.pem")
    b = Node("b", a.work, primary.url(proxies["b"].port), tls)
    await asyncio.to_thread(b.start)
    nodes, devices, provider = [a, b], [], None
    try:
        key, key_id = await asyncio.to_thread(faults.create_key, primary.url(), work)
        devices += await faults.start_devices(a.work, a, b, ca)
        check(f"[{mode}] {faults.DEVICES} devices registered", all(d.token for d in devices))
        check(f"[{mode}] every device's app is authorized", all(await asyncio.gather(*(asyncio.to_thread(d.authorize) for d in devices))))
        provider = Provider(nodes, ca, provider_token(key, key_id))
        faults.RATE = RATE

        stop = asyncio.Event()
        stream = asyncio.create_task(provider.stream(devices, mode, stop))
        await asyncio.sleep(3)
        lag = await asyncio.to_thread(sql, primary.port, "SELECT coalesce(pg_current_wal_lsn() - replay_lsn, 0) FROM pg_stat_replication")
        killed_at = time.monotonic()
        answered_before_kill = len(provider.answered)
        await asyncio.to_thread(primary.stop, "immediate")
        await asyncio.to_thread(standby.promote)
        link.switch(free_port())   # the old primary is gone; nothing more reaches the standby
        for proxy in proxies.values():
            proxy.switch(standby.port)
        switched_at = time.monotonic()
        switched = switched_at - killed_at
        healthy_at = None
        while time.monotonic() - killed_at < RECOVERY_LIMIT:
            if all(await asyncio.gather(*(asyncio.to_thread(lambda n=n: health(n) == 200) for n in nodes))):
                healthy_at = time.monotonic()
                break
            await asyncio.sleep(0.1)
        # Each node's first 200 to a push sent after the switch.
        answering = {}
        while time.monotonic() - switched_at < RECOVERY_LIMIT and len(answering) < len(nodes):
            for when, name in provider.answers:
                if when > switched_at and name not in answering:
                    answering[name] = round(when - switched_at, 2)
            await asyncio.sleep(0.05)
        # Pushes flow on the promoted standby for 3 s more, then everything answered must show.
        await asyncio.sleep(3)
        stop.set()
        await stream
        mine = list(provider.answered)
        await faults.await_shown(devices, provider, mine, RECOVERY_LIMIT)
        for d in devices:
            d.read()
        lost = [x for x in mine if not devices[provider.answered[x][0]].arrived.get(x)]
        not_shown = [x for x in mine if not devices[provider.answered[x][0]].shown.get(x)]
        twice = [x for x in mine if devices[provider.answered[x][0]].shown.get(x, 0) > 1]
        stats = provider.stats.get(mode, {})
        healthy = round(healthy_at - killed_at, 1) if healthy_at else None
        print(f"failover: {mode}: {len(mine)} answered 200 ({answered_before_kill} before the kill), lost {len(lost)}, "
              f"not shown {len(not_shown)}, shown twice {len(twice)}; 503s {stats.get('503', 0)}, 500s {stats.get('500', 0)}, "
              f"unanswered {stats.get('unanswered', 0)}; standby {lag or '?'} bytes behind just before the kill "
              f"({REPLICATION_DELAY * 1000:.0f} ms added each way on the replication link); "
              f"promoted and switched in {switched:.1f} s; both nodes healthy {healthy} s after the kill, "
              f"{round(healthy_at - switched_at, 2) if healthy_at else None} s after the switch; first 200 after the switch {answering}", flush=True)
        check(f"[{mode}] both nodes are healthy on the promoted standby without a restart",
              healthy is not None and all(n.process.poll() is None for n in nodes) and a.starts == 1 and b.starts == 1,
              [health(n, body=True) for n in nodes])
        check(f"[{mode}] both nodes report healthy within {HEALTHY_AFTER_SWITCH} s of the switch",
              healthy_at is not None and healthy_at - switched_at <= HEALTHY_AFTER_SWITCH,
              round(healthy_at - switched_at, 2) if healthy_at else None)
        check(f"[{mode}] both nodes answer pushes 200 within {HEALTHY_AFTER_SWITCH} s of the switch {answering}",
              len(answering) == len(nodes) and max(answering.values()) <= HEALTHY_AFTER_SWITCH, answering)
        check(f"[{mode}] pushes were answered 200 after the failover", len(mine) > answered_before_kill, (len(mine), answered_before_kill))
        check(f"[{mode}] no push shown twice", not twice, twice[:5])
        if mode == "sync":
            check(f"[{mode}] no push answered 200 is lost ({len(mine)})", not lost and not not_shown,
                  f"{len(lost)} never arrived, {len(not_shown)} not shown: {(lost or not_shown)[:5]}")
        for d in devices:
            d.stop()
        stops = {n.name: await asyncio.to_thread(n.stop) for n in nodes}
        check(f"[{mode}] both nodes stop on SIGTERM after the failover {stops}", all(t is not None for t in stops.values()), stops)
        return len(mine), len(lost)
    finally:
        await faults.stop_all(provider, devices, nodes)
        standby.stop("fast")
        primary.stop("immediate")
        link.server.close()
        for proxy in proxies.values():
            proxy.server.close()


def main():
    modes = sys.argv[2:] or ["sync", "async"]
    faults.announce("failover")
    hogs = faults.start_hogs()
    try:
        run_modes(modes)
    finally:
        faults.stop_hogs(hogs)
    print(f"{len(faults.FAILURES)} failed" if faults.FAILURES else "failover: all checks passed", flush=True)
    sys.exit(1 if faults.FAILURES else 0)


def run_modes(modes):
    for mode in modes:
        with tempfile.TemporaryDirectory(prefix=f"herald-failover-{mode}-") as work:
            if os.geteuid() == 0:
                os.chmod(work, 0o755)
            try:
                asyncio.run(run(mode, work))
            except Exception as error:
                check(f"[{mode}] the failover run ran to the end", False, f"{type(error).__name__}: {error}")
            if os.environ.get("HERALD_FAULTS_KEEP"):
                subprocess.run(["cp", "-r", work, os.environ["HERALD_FAULTS_KEEP"] + "-" + mode])


if __name__ == "__main__":
    main()
