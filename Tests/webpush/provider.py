#!/usr/bin/env python3
"""`herald provider` with registrations that are Web Push subscriptions, end to end: a real
gateway (its Web Push port the push service), a real `herald device run` whose app subscribes,
and `herald provider --vapid-key` as the application server behind its REST API.

- the app's subscription is registered (`webPush`: endpoint, keys, the page to open) with its
  language and zone; a template in two languages is sent to it: the device decrypts a
  Declarative Web Push message in the registration's language and presents it;
- the send's report says 201 with the message's location;
- the app unsubscribes; the next send gets 410 from the gateway and the registration is pruned.

    python3 Tests/webpush/provider.py PATH/TO/herald
"""
import json
import os
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from harness import check, json_events, read, run, start, wait_for  # noqa: E402
from agent import Agent  # noqa: E402

HERALD = os.path.abspath(sys.argv[1])
WORK = tempfile.mkdtemp(prefix="herald-webpush-provider-")
APP = "com.example.web"
TEAM = "TEAM123456"


def herald(*args):
    result = subprocess.run([HERALD, *args], capture_output=True, text=True, timeout=60)
    if result.returncode != 0:
        raise AssertionError(f"herald {' '.join(args)} failed: {result.stderr.strip()}")
    return result.stdout.strip()


def main():
    out = os.path.join(WORK, "gateway.json")
    data = os.path.join(WORK, "gw")
    start([HERALD, "gateway", "--data-dir", data, "--provider-port", "0", "--device-port", "0", "--webpush-port", "0"],
          stdout=open(out, "w"), stderr=open(os.path.join(WORK, "gateway.err"), "w"))
    ports = json.loads(wait_for("the gateway", lambda: read(out).splitlines()[0] if read(out).strip() else None))
    ca = ports["ca"]

    device_dir = os.path.join(WORK, "device")
    log = os.path.join(WORK, "device.jsonl")
    start([HERALD, "device", "run", "--data-dir", device_dir, "--gateway", f"wss://localhost:{ports['device_port']}", "--ca", ca,
           "--app", APP, "--json"], stdout=open(log, "w"), stderr=open(os.path.join(WORK, "device.err"), "w"))
    sock = os.path.join(device_dir, "agent.sock")
    wait_for("the device", lambda: any(e.get("event") == "connected" for e in json_events(log)) and os.path.exists(sock))

    # The application server's VAPID key, and the app subscribing with its public half.
    vapid = os.path.join(WORK, "vapid.pem")
    public_key = herald("keys", "vapid", "--out", vapid).split()[-1]
    app = Agent(sock, APP)
    app.call({"op": "requestAuthorization", "options": ["alert", "sound", "badge"]})
    app.call({"op": "webPushSubscribe", "applicationServerKey": public_key})
    subscription = wait_for("the endpoint", lambda: app.event("webPushSubscription"))["subscription"]

    apns_key = os.path.join(WORK, "apns.p8")
    key_id = herald("keys", "create", "--data-dir", data, "--team", TEAM, "--topic", APP, "--out", apns_key)
    provider_dir = os.path.join(WORK, "provider")
    provider_out = os.path.join(WORK, "provider.json")
    start([HERALD, "provider", "--data-dir", provider_dir, "--port", "0", "--gateway", f"https://localhost:{ports['provider_port']}",
           "--ca", ca, "--key", apns_key, "--key-id", key_id, "--team", TEAM, "--vapid-key", vapid, "--vapid-subject", "mailto:ops@example.com"],
          stdout=open(provider_out, "w"), stderr=open(os.path.join(WORK, "provider.err"), "w"))
    started = json.loads(wait_for("the provider", lambda: read(provider_out).splitlines()[0] if read(provider_out).strip() else None))
    base = f"http://127.0.0.1:{started['port']}"
    token = read(os.path.join(provider_dir, "api-token")).strip()

    def api(method, path, body=None):
        request = urllib.request.Request(base + path, method=method, data=json.dumps(body).encode() if body is not None else None,
                                         headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                text = response.read()
                return response.status, json.loads(text) if text else None
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"null")

    status, registration = api("POST", "/v1/registrations", {
        "topic": APP, "language": "fr-CA", "timeZone": "America/Montreal", "userId": "zoe",
        "webPush": {"endpoint": subscription["endpoint"], "keys": subscription["keys"], "url": "https://app.example.com/inbox"}})
    check("a Web Push subscription registers (its token derived from the endpoint)", status == 200 and len(registration["token"]) == 64
          and registration["webPush"]["endpoint"] == subscription["endpoint"], json.dumps(registration))
    status, both = api("POST", "/v1/registrations", {"token": "ab" * 32, "topic": APP, "language": "en", "timeZone": "UTC",
                                                      "webPush": {"endpoint": subscription["endpoint"], "keys": subscription["keys"]}})
    check("a registration with both a token and a subscription is refused", status == 400, json.dumps(both))

    api("PUT", "/v1/templates/message", {"translations": {"en": {"title": "New message", "body": "%@ wrote to you"},
                                                           "fr": {"title": "Nouveau message", "body": "%@ vous a écrit"}}})
    status, report = api("POST", "/v1/sends", {"to": {"user": "zoe"}, "template": {"id": "message", "args": ["Ana"]}, "badge": 4})
    delivery = report["deliveries"][0] if status == 200 else {}
    check("the send's report: 201 from the push service, the message's location, the language chosen",
          delivery.get("status") == 201 and delivery.get("location", "").startswith(f"https://localhost:{ports['webpush_port']}/m/")
          and delivery.get("language") == "fr", json.dumps(report))
    shown = wait_for("the presentation", lambda: next((e for e in json_events(log) if e.get("event") == "delivered"), None))
    content = shown["notification"]["content"]
    check("the device decrypts a Declarative Web Push message in the registration's language and presents it",
          content.get("title") == "Nouveau message" and content.get("body") == "Ana vous a écrit" and content.get("badge") == 4
          and content["userInfo"]["navigate"] == "https://app.example.com/inbox", json.dumps(shown))
    received = wait_for("the device's receipt", lambda: next((e for e in json_events(log) if e.get("event") == "webpush-received"), None))
    # Not mutable: the user agent's alone (the Push API); the event says whether the app got it.
    check("a declarative message that is not mutable is not handed to the app",
          received.get("declarative") is True and received.get("handedToApp") is False and app.event("webPush") is None, json.dumps(received))

    app.call({"op": "webPushUnsubscribe"})
    wait_for("the unsubscription", lambda: any(e.get("event") == "webpush-endpoint-removed" for e in json_events(log)))
    status, report = api("POST", "/v1/sends", {"to": {"user": "zoe"}, "alert": {"body": "too late"}})
    check("after the app unsubscribed, the send gets 410 and prunes the registration",
          status == 200 and report["deliveries"][0]["status"] == 410 and report["pruned"] == [registration["token"]], json.dumps(report))
    status, _ = api("GET", f"/v1/registrations/{registration['token']}")
    check("the pruned registration is gone", status == 404, str(status))


run("Web Push provider", main)
