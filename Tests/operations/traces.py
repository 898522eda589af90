#!/usr/bin/env python3
"""OpenTelemetry traces of one push across two processes (docs/operations.md, "Tracing").

An OTLP/HTTP receiver in this script (what a collector is: POST /v1/traces, the body an
ExportTraceServiceRequest decoded with the `opentelemetry-proto` package) receives what
`herald provider` and `herald gateway` export with `--otlp-endpoint`. A send through the
provider's REST API carrying a W3C `traceparent` reaches a real `herald device run`, and:

- one trace, the caller's trace id, holds spans from both processes: the REST request and
  `provider.send` and `apns.send` in herald-provider; `apns.request`, `intake.commit` and
  `device.delivery` in herald-gateway;
- each hop is the child of the one before: the gateway's request of the provider's APNs
  attempt (the traceparent crossed HTTP/2), the commit and the delivery of the gateway's request
  (the delivery across the asynchronous hop to the device and its ack);
- the provider's JSON log line for the send carries the trace id;
- a malformed traceparent is ignored (the push is accepted and starts a trace of its own);
- without --otlp-endpoint nothing is exported.

Usage: traces.py PATH/TO/herald
"""
import asyncio
import http.server
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

import httpx
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "clients", "python"))
import herald_notifications  # noqa: E402
from apns import load_key, provider_jwt  # noqa: E402
from harness import check, json_events as events, read, start, wait_for, run  # noqa: E402

HERALD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".build/debug/herald")
TEAM = "TEAM123456"
APP = "com.example.traced"
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"


class Collector:
    """An OTLP/HTTP trace receiver: every span received, with its service's name."""

    def __init__(self):
        self.spans, self.requests, self.paths = [], 0, set()
        self.lock = threading.Lock()
        collector = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                request = trace_service_pb2.ExportTraceServiceRequest()
                request.ParseFromString(body)
                with collector.lock:
                    collector.requests += 1
                    collector.paths.add((self.path, self.headers.get("content-type")))
                    for resource_spans in request.resource_spans:
                        service = next((a.value.string_value for a in resource_spans.resource.attributes if a.key == "service.name"), None)
                        for scope in resource_spans.scope_spans:
                            for span in scope.spans:
                                collector.spans.append({
                                    "service": service, "name": span.name, "trace": span.trace_id.hex(), "id": span.span_id.hex(),
                                    "parent": span.parent_span_id.hex(), "kind": span.kind,
                                    "attributes": {a.key: (a.value.string_value or a.value.int_value) for a in span.attributes},
                                    "start": span.start_time_unix_nano, "end": span.end_time_unix_nano, "status": span.status.code})
                answer = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def of_trace(self, trace):
        with self.lock:
            return [s for s in self.spans if s["trace"] == trace]



async def authorize(sock):
    """The app asks to show alerts, through the Python app library (clients/python)."""
    async with await herald_notifications.UserNotificationCenter.connect(APP, socket=sock, state="background") as center:
        granted = await center.request_authorization(["alert", "sound", "badge"])
        check("the app is authorized (through the Python app library)", granted)

def main():
    work = tempfile.mkdtemp(prefix="herald-traces-")
    collector = Collector()
    endpoint = f"http://127.0.0.1:{collector.port}"
    try:
        data = os.path.join(work, "gateway")
        gateway_log = os.path.join(work, "gateway.log")
        gateway = start([HERALD, "gateway", "--data-dir", data, "--provider-port", "0", "--device-port", "0",
                         "--otlp-endpoint", endpoint, "--log-format", "json"], stdout=subprocess.PIPE, stderr=open(gateway_log, "w"), text=True)
        ports = json.loads(gateway.stdout.readline())
        ca = ports["ca"]
        key_path = os.path.join(work, "key.p8")
        key_id = subprocess.run([HERALD, "keys", "create", "--data-dir", data, "--team", TEAM, "--topic", APP, "--out", key_path],
                                capture_output=True, text=True, check=True).stdout.strip()

        phone = os.path.join(work, "phone")
        os.makedirs(phone)
        log = os.path.join(work, "phone.jsonl")
        start([HERALD, "device", "run", "--data-dir", phone, "--gateway", f"wss://localhost:{ports['device_port']}", "--ca", ca,
               "--app", APP, "--json"], stdout=open(log, "w"), stderr=subprocess.DEVNULL)
        token = wait_for("the app's token", lambda: next((e["token"] for e in events(log) if e.get("event") == "registered"), None))
        sock = os.path.join(phone, "agent.sock")
        wait_for("the agent socket", lambda: os.path.exists(sock))
        asyncio.run(authorize(sock))

        provider_dir = os.path.join(work, "provider")
        provider_out, provider_err = os.path.join(work, "provider.json"), os.path.join(work, "provider.log")
        start([HERALD, "provider", "--data-dir", provider_dir, "--port", "0", "--gateway", f"https://localhost:{ports['provider_port']}",
               "--ca", ca, "--key", key_path, "--key-id", key_id, "--team", TEAM, "--otlp-endpoint", endpoint, "--log-format", "json",
               "--log-level", "info"],
              stdout=open(provider_out, "w"), stderr=open(provider_err, "w"))
        started = json.loads(wait_for("the provider", lambda: read(provider_out).splitlines()[0] if read(provider_out).strip() else None))
        base = f"http://127.0.0.1:{started['port']}"
        api_token = read(os.path.join(provider_dir, "api-token")).strip()

        def api(method, path, body=None, headers=None):
            request = urllib.request.Request(base + path, method=method, data=json.dumps(body).encode() if body is not None else None,
                                             headers={"Authorization": f"Bearer {api_token}", "Content-Type": "application/json", **(headers or {})})
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, json.loads(response.read() or b"null")

        api("POST", "/v1/registrations", {"token": token, "topic": APP, "language": "en", "timeZone": "UTC"})
        status, report = api("POST", "/v1/sends", {"to": {"token": token}, "alert": {"body": "traced"}},
                             headers={"traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01"})
        apns_id = report["deliveries"][0].get("apnsId") if status == 200 else None
        check("the traced send is accepted (200 from the gateway)", status == 200 and report["deliveries"][0]["status"] == 200, report)
        wait_for("the delivery", lambda: any(e.get("event") == "delivered" and e["notification"].get("apns-id") == apns_id for e in events(log)))

        wanted = {("herald-provider", "provider.send"), ("herald-provider", "apns.send"), ("herald-gateway", "apns.request"),
                  ("herald-gateway", "intake.commit"), ("herald-gateway", "device.delivery")}
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not wanted <= {(s["service"], s["name"]) for s in collector.of_trace(TRACE_ID)}:
            time.sleep(0.2)
        spans = collector.of_trace(TRACE_ID)
        seen = {(s["service"], s["name"]) for s in spans}
        check("one trace, the caller's trace id, holds the spans of both processes", wanted <= seen, sorted(seen))
        check("the collector was called as OTLP/HTTP protobuf on /v1/traces",
              ("/v1/traces", "application/x-protobuf") in collector.paths, collector.paths)

        def one(service, name):
            return next((s for s in spans if s["service"] == service and s["name"] == name), {})
        server = next((s for s in spans if s["service"] == "herald-provider" and s["kind"] == 2), {})   # SPAN_KIND_SERVER
        send, attempt = one("herald-provider", "provider.send"), one("herald-provider", "apns.send")
        request, commit, delivery = one("herald-gateway", "apns.request"), one("herald-gateway", "intake.commit"), one("herald-gateway", "device.delivery")
        check("the provider's REST request span is the child of the caller's traceparent", server.get("parent") == PARENT_ID, server)
        check("provider.send is the child of the REST request, apns.send of provider.send",
              send.get("parent") == server.get("id") and attempt.get("parent") == send.get("id"), (send, attempt))
        check("the gateway's apns.request is the child of the provider's apns.send (traceparent over HTTP/2)",
              bool(attempt) and request.get("parent") == attempt.get("id"), (request, attempt))
        check("intake.commit and device.delivery are children of the gateway's request",
              bool(request) and commit.get("parent") == request.get("id") and delivery.get("parent") == request.get("id"), (commit, delivery))
        check("the spans carry what an operator looks for: status 200, the apns-id, the topic, the device",
              request.get("attributes", {}).get("http.response.status_code") == 200 and request["attributes"].get("apns.id") == apns_id
              and delivery.get("attributes", {}).get("apns.id") == apns_id and delivery["attributes"].get("apns.topic") == APP
              and delivery["attributes"].get("herald.device"), (request, delivery))
        check("the delivery span ends at the ack, after the commit",
              bool(delivery) and delivery["end"] >= delivery["start"] and delivery["end"] >= commit.get("end", 0) - 1_000_000, (commit, delivery))
        lines = [json.loads(line) for line in read(provider_err).splitlines() if line.startswith("{")]
        logged = next((line for line in lines if line.get("message") == "send finished"), {})
        check("the provider's JSON log line of the send carries the trace id", logged.get("metadata", {}).get("trace_id") == TRACE_ID, logged)

        # A malformed traceparent: ignored, the push accepted, in a trace of its own.
        key = load_key(key_path)
        with httpx.Client(http2=True, verify=ca) as client:
            r = client.post(f"https://localhost:{ports['provider_port']}/3/device/{token}", content=json.dumps({"aps": {"alert": "x"}}),
                            headers={"authorization": f"bearer {provider_jwt(key, key_id, TEAM)}", "apns-topic": APP,
                                     "apns-push-type": "alert", "traceparent": "00-" + "z" * 32 + "-" + "1" * 16 + "-01"})
        check("a malformed traceparent is ignored: the push is accepted", r.status_code == 200, r.text)
        other = r.headers.get("apns-id")
        wait_for("its request span", lambda: any(s["name"] == "apns.request" and s["attributes"].get("apns.id") == other for s in collector.spans))
        fresh = next(s for s in collector.spans if s["name"] == "apns.request" and s["attributes"].get("apns.id") == other)
        check("... and starts a trace of its own (a root span)", fresh["parent"] == "" and fresh["trace"] != TRACE_ID, fresh)

        # A bad endpoint is refused before anything starts, naming the flag.
        for bad in ["ftp://127.0.0.1:4318", "http://", "http://" + "a" * 3000, "127.0.0.1:4318"]:
            refused = subprocess.run([HERALD, "gateway", "--data-dir", os.path.join(work, "refused"), "--otlp-endpoint", bad],
                                     capture_output=True, text=True, timeout=60)
            check(f"--otlp-endpoint {bad[:24]}… is refused, naming the flag (exit 64)",
                  refused.returncode == 64 and "--otlp-endpoint must be an http:// or https:// URL" in refused.stderr, refused.stderr[-300:])

        # Off by default: a gateway without --otlp-endpoint exports nothing.
        before = collector.requests
        quiet = start([HERALD, "gateway", "--data-dir", os.path.join(work, "quiet"), "--provider-port", "0", "--device-port", "0"],
                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        quiet_ports = json.loads(quiet.stdout.readline())
        quiet_key = os.path.join(work, "quiet.p8")
        quiet_id = subprocess.run([HERALD, "keys", "create", "--data-dir", os.path.join(work, "quiet"), "--team", TEAM, "--topic", APP,
                                   "--out", quiet_key], capture_output=True, text=True, check=True).stdout.strip()
        quiet_token = subprocess.run([HERALD, "tokens", "create", "--data-dir", os.path.join(work, "quiet"), "--topic", APP],
                                     capture_output=True, text=True, check=True).stdout.strip()
        with httpx.Client(http2=True, verify=quiet_ports["ca"]) as client:
            r = client.post(f"https://localhost:{quiet_ports['provider_port']}/3/device/{quiet_token}", content=b'{"aps":{"alert":"x"}}',
                            headers={"authorization": f"bearer {provider_jwt(load_key(quiet_key), quiet_id, TEAM)}", "apns-topic": APP,
                                     "traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01"})
        quiet.terminate()
        quiet.wait(timeout=30)
        time.sleep(2.5)   # longer than the exporters' 1 s schedule: what was exported has arrived
        check("without --otlp-endpoint, nothing is exported", r.status_code == 200 and collector.requests == before,
              (r.status_code, collector.requests - before))
    finally:
        collector.server.shutdown()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    run("traces", main)
