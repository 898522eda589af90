#!/usr/bin/env python3
"""The operator's dashboard and alerting rules (packaging/grafana, packaging/prometheus) against
what Herald serves:

- `promtool check rules` and `promtool test rules` (a unit test per rule: it fires on its fault
  and not on a healthy series beside it).
- A gateway, a device (an app registered through the Python app library) and a provider service
  run and serve a push; a second connection from one address is refused by the device port's
  per-address bound (so that the counter made at a peer's first refusal exists too). Both
  `/metrics` pass `promtool check metrics`.
- Every metric name in every dashboard query and every rule is one the two `/metrics` serve
  (`up`, which Prometheus makes, aside).
- A real Prometheus scrapes both with the rules loaded: every rule evaluates without error, and
  every dashboard query (its Grafana variables set to "all") returns at least one series.

Usage: monitoring.py PATH/TO/herald
"""
import asyncio
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
sys.path.insert(0, os.path.join(ROOT, "clients", "python"))
from harness import check, in_scratch_directory, json_events, read, run, start, wait_for  # noqa: E402
import herald_notifications as hn  # noqa: E402

HERALD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".build/debug/herald")
RULES = os.path.join(ROOT, "packaging", "prometheus", "herald.rules.yml")
RULE_TESTS = os.path.join(ROOT, "packaging", "prometheus", "herald.rules.test.yml")
DASHBOARD = os.path.join(ROOT, "packaging", "grafana", "herald.json")
TEAM, APP = "TEAM123456", "com.example.app"
# Names PromQL uses that are not metric names.
PROMQL_WORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless", "offset",
                "sum", "min", "max", "avg", "count", "stddev", "stdvar", "topk", "bottomk", "quantile", "count_values", "group",
                "inf", "nan"}
# What Prometheus itself makes for each target.
SYNTHETIC = {"up", "scrape_duration_seconds", "scrape_samples_scraped"}


def metric_names(expr):
    """The metric names a PromQL expression reads: identifiers that are not functions (followed by
    `(`), keywords, label names (inside `{}` or a grouping's `()`), strings or durations."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`', '""', expr)
    text = re.sub(r"\{[^}]*\}", "{}", text)
    text = re.sub(r"\[[^\]]*\]", "[]", text)
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)
    names = set()
    for match in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", text):
        word, rest = match.group(0), text[match.end():].lstrip()
        if rest.startswith("(") or word.lower() in PROMQL_WORDS:
            continue
        if match.start() > 0 and text[match.start() - 1].isdigit():  # 14d, 1e3
            continue
        names.add(word)
    return names


def served_names(exposition):
    return {line.split("{")[0].split(" ")[0] for line in exposition.splitlines() if line and not line.startswith("#")}


def dashboard_queries():
    """Every panel's query, with its Grafana variables set to "all"."""
    dashboard = json.load(open(DASHBOARD))
    queries = []
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            expr = target["expr"]
            for variable, value in (("$__rate_interval", "15s"), ("$instance", ".*"), ("$provider", ".*"), ("$job", ".*")):
                expr = expr.replace(variable, value)
            queries.append((panel["title"], expr))
    return queries


def rule_expressions():
    import yaml
    rules = yaml.safe_load(open(RULES))
    return [(rule["alert"], rule["expr"]) for group in rules["groups"] for rule in group["rules"]]


def promtool(*args, stdin=None):
    return subprocess.run(["promtool", *args], capture_output=True, text=True, input=stdin, timeout=120)


def listening_port(pid):
    """The TCP port a process listens on, from /proc (Prometheus binds port 0 and does not say
    which port it got)."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in read(table).splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # LISTEN
                return int(fields[1].split(":")[1], 16)
    return None


def http_get(url, headers=None):
    request = urllib.request.Request(url, headers=headers or {})
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.read().decode()


async def register(sock):
    async with await hn.UserNotificationCenter.connect(APP, socket=sock) as center:
        await center.request_authorization(["alert"])
        return await center.register_for_remote_notifications()


def rules_checks():
    checked = promtool("check", "rules", RULES)
    check("promtool check rules: the alerting rules are valid", checked.returncode == 0, checked.stdout + checked.stderr)
    # The tests name the rules file relative to themselves.
    tested = subprocess.run(["promtool", "test", "rules", os.path.basename(RULE_TESTS)], cwd=os.path.dirname(RULE_TESTS),
                            capture_output=True, text=True, timeout=120)
    check("promtool test rules: every rule fires on its fault and not on a healthy series", tested.returncode == 0,
          tested.stdout + tested.stderr)
    import yaml
    tests = yaml.safe_load(open(RULE_TESTS))
    tested_alerts = {case["alertname"] for test in tests["tests"] for case in test.get("alert_rule_test", [])}
    firing = {case["alertname"] for test in tests["tests"] for case in test.get("alert_rule_test", []) if case.get("exp_alerts")}
    alerts = {name for name, _ in rule_expressions()}
    check("every alerting rule has a unit test in which it fires", alerts <= firing and alerts <= tested_alerts,
          f"without a firing test: {sorted(alerts - firing)}")


def scenario(work):
    out = os.path.join(work, "gateway.json")
    data = os.path.join(work, "gw")
    start([HERALD, "gateway", "--data-dir", data, "--provider-port", "0", "--device-port", "0", "--admin-port", "0",
           "--device-connections-per-address", "1"],
          stdout=open(out, "w"), stderr=open(os.path.join(work, "gateway.err"), "w"))
    ports = json.loads(wait_for("the gateway", lambda: read(out).splitlines()[0] if read(out).strip() else None))
    device_dir = os.path.join(work, "device")
    log = os.path.join(work, "device.jsonl")
    start([HERALD, "device", "run", "--data-dir", device_dir, "--gateway", f"wss://localhost:{ports['device_port']}",
           "--ca", ports["ca"], "--app", APP, "--json"],
          stdout=open(log, "w"), stderr=open(os.path.join(work, "device.err"), "w"))
    sock = os.path.join(device_dir, "agent.sock")
    wait_for("the device", lambda: any(e.get("event") == "connected" for e in json_events(log)) and os.path.exists(sock))
    token = asyncio.run(register(sock))

    key = os.path.join(work, "apns.p8")
    key_id = subprocess.run([HERALD, "keys", "create", "--data-dir", data, "--team", TEAM, "--topic", APP, "--out", key],
                            capture_output=True, text=True, timeout=60, check=True).stdout.strip()
    provider_dir = os.path.join(work, "provider")
    provider_out = os.path.join(work, "provider.json")
    start([HERALD, "provider", "--data-dir", provider_dir, "--port", "0", "--gateway", f"https://localhost:{ports['provider_port']}",
           "--ca", ports["ca"], "--key", key, "--key-id", key_id, "--team", TEAM],
          stdout=open(provider_out, "w"), stderr=open(os.path.join(work, "provider.err"), "w"))
    provider = json.loads(wait_for("the provider", lambda: read(provider_out).splitlines()[0] if read(provider_out).strip() else None))
    api_token = read(os.path.join(provider_dir, "api-token")).strip()
    base = f"http://127.0.0.1:{provider['port']}"
    auth = {"Authorization": f"Bearer {api_token}", "Content-Type": "application/json"}

    def post(path, body):
        request = urllib.request.Request(base + path, method="POST", data=json.dumps(body).encode(), headers=auth)
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())

    post("/v1/registrations", {"token": token, "topic": APP, "language": "en", "timeZone": "UTC"})
    report = post("/v1/sends", {"to": {"token": token}, "alert": {"title": "Metrics", "body": "a push through"}})
    check("a push goes through the provider and the gateway", report["deliveries"][0]["status"] == 200, json.dumps(report))
    wait_for("the device's ack", lambda: any(e.get("event") == "notification" for e in json_events(log)))

    # The device holds the one connection its address may have: a second is refused and counted.
    with socket.create_connection(("127.0.0.1", ports["device_port"]), timeout=10) as extra:
        try:
            closed = extra.recv(1) == b""
        except ConnectionResetError:
            closed = True
    check("a second connection from the device's address is refused by the per-address bound", closed)

    health = subprocess.run([HERALD, "gateway", "health", "--admin", f"http://127.0.0.1:{ports['admin_port']}"],
                            capture_output=True, text=True, timeout=30)
    check("herald gateway health: 0 and ok from a healthy gateway", health.returncode == 0 and '"ok"' in health.stdout,
          health.stdout + health.stderr)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    with listener:  # a port that accepts and never answers
        silent = subprocess.run([HERALD, "gateway", "health", "--admin", f"http://127.0.0.1:{listener.getsockname()[1]}", "--timeout", "1"],
                                capture_output=True, text=True, timeout=30)
    check("herald gateway health: 1 and why from a port that never answers", silent.returncode == 1 and "no answer within 1 s" in silent.stderr,
          silent.stderr)
    admin = f"http://127.0.0.1:{ports['admin_port']}/metrics"

    def scraped_with_refusal():
        text = http_get(admin)
        return text if "herald_peers_closed_total" in text else None
    gateway_metrics = wait_for("the refusal counted", scraped_with_refusal)
    provider_metrics = http_get(base + "/metrics", {"Authorization": f"Bearer {api_token}"})
    for name, exposition in (("gateway", gateway_metrics), ("provider", provider_metrics)):
        linted = promtool("check", "metrics", stdin=exposition)
        check(f"promtool check metrics: the {name}'s /metrics", linted.returncode == 0, linted.stdout + linted.stderr)
    served = served_names(gateway_metrics) | served_names(provider_metrics) | SYNTHETIC

    for source, expressions in (("dashboard panel", dashboard_queries()), ("alerting rule", rule_expressions())):
        unknown = {f"{title}: {sorted(metric_names(expr) - served)}" for title, expr in expressions if metric_names(expr) - served}
        check(f"every {source}'s query reads only metric names /metrics serves ({len(expressions)} queries)", not unknown,
              "; ".join(sorted(unknown)))
    # The parser is not vacuous: it finds the names, and a name that is not served is caught.
    check("the name check finds a query's metric names",
          metric_names('sum by (le) (rate(herald_intake_commit_seconds_bucket{instance=~".*"}[5m])) / on(x) up') ==
          {"herald_intake_commit_seconds_bucket", "up"})

    # A real Prometheus scrapes both, with the rules loaded.
    prometheus_dir = os.path.join(work, "prometheus")
    os.makedirs(prometheus_dir)
    token_file = os.path.join(prometheus_dir, "provider-token")
    with open(token_file, "w") as f:
        f.write(api_token)
    config = os.path.join(prometheus_dir, "prometheus.yml")
    with open(config, "w") as f:
        f.write(f"""global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: [{json.dumps(RULES)}]
scrape_configs:
  - job_name: herald-gateway
    static_configs: [{{targets: ["127.0.0.1:{ports['admin_port']}"]}}]
  - job_name: herald-provider
    authorization: {{credentials_file: {json.dumps(token_file)}}}
    static_configs: [{{targets: ["127.0.0.1:{provider['port']}"]}}]
""")
    server = start(["prometheus", f"--config.file={config}", f"--storage.tsdb.path={prometheus_dir}/data",
                    "--web.listen-address=127.0.0.1:0"],
                   stdout=open(os.path.join(work, "prometheus.out"), "w"), stderr=open(os.path.join(work, "prometheus.err"), "w"))
    port = wait_for("Prometheus listening", lambda: listening_port(server.pid))
    api = f"http://127.0.0.1:{port}/api/v1"

    def ready():
        # Prometheus listens before its storage is open, and answers 503 until then: its own
        # readiness endpoint says when the API may be asked.
        try:
            return http_get(f"http://127.0.0.1:{port}/-/ready") is not None
        except (urllib.error.HTTPError, urllib.error.URLError, ConnectionError):
            return False
    wait_for("Prometheus ready (its storage open)", ready, timeout=60)

    def query(expr):
        body = json.loads(http_get(f"{api}/query?" + urllib.parse.urlencode({"query": expr})))
        return body["data"]["result"] if body.get("status") == "success" else None

    # Enough scrapes for a 15-second rate: 10 samples of each target.
    wait_for("ten scrapes of both targets",
             lambda: (result := query("count_over_time(up[15s])")) and len(result) == 2 and all(float(r["value"][1]) >= 10 for r in result),
             timeout=60)
    up = {r["metric"]["job"]: r["value"][1] for r in query("up") or []}
    check("Prometheus scrapes the gateway and the provider service", up == {"herald-gateway": "1", "herald-provider": "1"}, json.dumps(up))
    empty = [f"{title}: {expr}" for title, expr in dashboard_queries() if not query(expr)]
    check(f"every dashboard query returns series from the running gateway and provider ({len(dashboard_queries())} queries)",
          not empty, "; ".join(empty))

    def rules_evaluated():
        groups = json.loads(http_get(f"{api}/rules"))["data"]["groups"]
        rules = [rule for group in groups for rule in group["rules"]]
        return rules if rules and all(rule.get("lastEvaluation", "").startswith("20") for rule in rules) else None
    rules = wait_for("every rule evaluated", rules_evaluated, timeout=30)
    bad = [f"{rule['name']}: {rule.get('lastError')}" for rule in rules if rule.get("health") != "ok"]
    check(f"Prometheus loads and evaluates every alerting rule without an error ({len(rules)} rules)", not bad and len(rules) == len(rule_expressions()),
          "; ".join(bad))
    firing = [rule["name"] for rule in rules if rule.get("state") != "inactive"]
    check("a healthy gateway and provider fire no alert", not firing, ", ".join(firing))


def main():
    for tool in ("promtool", "prometheus"):
        if shutil.which(tool) is None:
            raise AssertionError(f"{tool} is not installed (Debian: apt-get install prometheus)")
    rules_checks()
    in_scratch_directory("herald-monitoring.", scenario)


if __name__ == "__main__":
    run("monitoring", main)
