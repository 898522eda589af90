#!/usr/bin/env python3
"""Herald devices as Web Push user agents, end to end: a real `herald gateway` (device and Web
Push ports), a real `herald device run`, an app on its agent socket, and pywebpush (third-party
code) as the application server.

- the app subscribes over the agent socket with a VAPID key and gets a PushSubscription
  (endpoint on the gateway's Web Push port, its own p256dh and auth);
- pywebpush pushes an ordinary message: the app gets its plaintext (the device decrypted it);
- a Declarative Web Push message is presented by the device (a `delivered` event with its
  title) and handed to the app too; an app that is not authorized gets it without a banner;
- a message sent while the app is not connected waits for it and arrives when it says hello;
- subscriptions and keys survive a restart of `herald device run`;
- a push signed with another key is refused (403); after the app unsubscribes, pywebpush gets
  410 Gone.

    python3 Tests/webpush/device.py PATH/TO/herald
"""
import json
import os
import signal
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from harness import check, json_events, read, run, start, wait_for  # noqa: E402
from agent import Agent  # noqa: E402
from useragent import refusal  # noqa: E402

import pywebpush
import requests
from py_vapid import Vapid02, b64urlencode
from cryptography.hazmat.primitives import serialization

HERALD = os.path.abspath(sys.argv[1])
WORK = tempfile.mkdtemp(prefix="herald-webpush-device-")
APP = "com.example.chat"
QUIET = "com.example.quiet"


def push(subscription, data, vapid, ca, **kwargs):
    s = requests.Session()
    s.verify = ca
    return pywebpush.webpush(subscription, data=data, vapid_private_key=vapid, vapid_claims={"sub": "mailto:ops@example.com"},
                             requests_session=s, ttl=600, **kwargs)


def main():
    out = os.path.join(WORK, "gateway.json")
    start([HERALD, "gateway", "--data-dir", os.path.join(WORK, "gw"), "--provider-port", "0", "--device-port", "0",
           "--webpush-port", "0"], stdout=open(out, "w"), stderr=open(os.path.join(WORK, "gateway.err"), "w"))
    ports = json.loads(wait_for("the gateway", lambda: read(out).splitlines()[0] if read(out).strip() else None))
    ca = ports["ca"]
    # pywebpush sends through requests, which trusts this bundle (the gateway's development CA).
    os.environ["REQUESTS_CA_BUNDLE"] = ca
    device_dir = os.path.join(WORK, "device")
    os.makedirs(device_dir)
    log = os.path.join(WORK, "device.jsonl")
    sock = os.path.join(device_dir, "agent.sock")

    def connections():
        return sum(1 for e in json_events(log) if e.get("event") in ("connected", "reconnected"))

    def start_device():
        before = connections()
        process = start([HERALD, "device", "run", "--data-dir", device_dir, "--gateway", f"wss://localhost:{ports['device_port']}",
                         "--ca", ca, "--app", APP, "--app", QUIET, "--json"],
                        stdout=open(log, "a"), stderr=open(os.path.join(WORK, "device.err"), "a"))
        wait_for("the device's connection", lambda: connections() > before and os.path.exists(sock))
        return process

    device = start_device()
    vapid = Vapid02()
    vapid.generate_keys()
    key = b64urlencode(vapid.public_key.public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint))

    app = Agent(sock, APP)
    granted = app.call({"op": "requestAuthorization", "options": ["alert", "sound", "badge"]})
    check("the app is authorized", granted.get("granted") is True, json.dumps(granted))
    answer = app.call({"op": "webPushSubscribe", "applicationServerKey": key})
    check("webPushSubscribe answers a subscription with its keys",
          answer.get("ok") and len(answer["subscription"]["keys"]["auth"]) >= 22, json.dumps(answer))
    made = wait_for("the endpoint", lambda: app.event("webPushSubscription"))
    subscription = made["subscription"]
    endpoint = subscription["endpoint"] or ""
    check("the endpoint is on the gateway's Web Push port",
          endpoint.startswith(f"https://localhost:{ports['webpush_port']}/wpush/") and len(endpoint.rsplit("/", 1)[1]) == 64, endpoint)
    check("the keys are the ones the subscribe answer gave", subscription["keys"] == answer["subscription"]["keys"])
    again = app.call({"op": "webPushSubscribe", "applicationServerKey": key})
    check("subscribing again gives the same subscription", again["subscription"]["endpoint"] == endpoint)
    other = Vapid02()
    other.generate_keys()
    other_key = b64urlencode(other.public_key.public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint))
    clash = app.call({"op": "webPushSubscribe", "applicationServerKey": other_key})
    check("another application server key for the same scope is refused", not clash.get("ok") and "unsubscribe first" in clash.get("error", ""),
          json.dumps(clash))

    info = {"endpoint": endpoint, "keys": subscription["keys"]}
    response = push(info, "hello from pywebpush", vapid, ca)
    check("pywebpush's push is accepted (201)", response.status_code == 201, str(response.status_code))
    got = wait_for("the message at the app", lambda: app.event("webPush"))
    check("the app gets the plaintext the device decrypted", got.get("text") == "hello from pywebpush" and got.get("declarative") is False,
          json.dumps(got))
    check("an ordinary message is not presented",
          not any(e.get("event") == "delivered" and e.get("app") == APP for e in json_events(log)))

    declarative = json.dumps({"web_push": 8030, "notification": {"title": "New message", "body": "Ana: lunch?",
                                                                 "navigate": "https://chat.example.com/c/1"}, "app_badge": 3})
    push(info, declarative, vapid, ca)
    shown = wait_for("the declarative message shown", lambda: next(
        (e for e in json_events(log) if e.get("event") == "delivered" and e.get("app") == APP), None))
    notification = shown["notification"]
    check("a Declarative Web Push message is presented by the device with its title, body and badge",
          notification["content"].get("title") == "New message" and notification["content"].get("body") == "Ana: lunch?"
          and notification["content"].get("badge") == 3, json.dumps(shown))
    # Not mutable: the user agent's alone. A mutable one after it is handed to the app; the app's
    # events come in order, so when the mutable one is there the first would have been too.
    mutable = json.dumps({"web_push": 8030, "notification": {"title": "Edited by the app", "navigate": "https://chat.example.com/c/2"},
                          "mutable": True})
    push(info, mutable, vapid, ca)
    handed = wait_for("the mutable declarative message at the app", lambda: app.event("webPush", lambda e: e.get("declarative")))
    check("a mutable one is handed to the app as well (its push event)", json.loads(handed["text"])["notification"]["title"] == "Edited by the app",
          json.dumps(handed))
    check("a declarative message that is not mutable is not (no push event for the app)",
          not app.event("webPush", lambda e: e.get("declarative") and "New message" in e.get("text", "")))
    # The app may replace a mutable one (the push event's proposed notification) before it is shown.
    check("the mutable message comes with the proposed notification and a callback",
          handed.get("proposed", {}).get("title") == "Edited by the app" and isinstance(handed.get("callback"), int), json.dumps(handed))
    answer = app.call({"op": "complete", "callback": handed["callback"], "notification": {"title": "Ana and 2 others", "body": "3 new messages"}})
    check("the app answers with a replacement", answer.get("ok"), json.dumps(answer))
    replaced = wait_for("the replacement shown", lambda: next(
        (e for e in json_events(log) if e.get("event") == "delivered" and e.get("app") == APP
         and e["notification"]["content"].get("title") == "Ana and 2 others"), None))
    check("the replacement is shown instead of the proposed notification, with the proposed page",
          replaced["notification"]["content"]["userInfo"].get("navigate") == "https://chat.example.com/c/2"
          and not any(e.get("event") == "delivered" and e["notification"]["content"].get("title") == "Edited by the app" for e in json_events(log)),
          json.dumps(replaced))
    app.call({"op": "user", "action": "tap", "notification": replaced["notification"]["id"]})
    opened = wait_for("the page the tap opens", lambda: next((e for e in json_events(log) if e.get("event") == "webpush-navigate"), None))
    check("a tap on a declarative notification opens its page (webpush-navigate)",
          opened["url"] == "https://chat.example.com/c/2" and opened["action"] is None, json.dumps(opened))

    wrong = refusal(lambda: push(info, "forged", other, ca))
    check("a push signed with another key than the subscription's is refused (403)", wrong == 403, str(wrong))

    # An app that is not authorized: its declarative message is not shown as a banner.
    quiet = Agent(sock, QUIET)
    quiet_sub = quiet.call({"op": "webPushSubscribe"})
    quiet_made = wait_for("the quiet app's endpoint", lambda: quiet.event("webPushSubscription"))
    check("a subscription without an application server key", quiet_sub.get("ok") and quiet_made["subscription"]["endpoint"])
    s = requests.Session()
    s.verify = ca
    pywebpush.webpush({"endpoint": quiet_made["subscription"]["endpoint"], "keys": quiet_made["subscription"]["keys"]}, data=mutable,
                      requests_session=s, ttl=600)
    quiet_got = wait_for("the quiet app's message", lambda: quiet.event("webPush"))
    quiet.call({"op": "complete", "callback": quiet_got["callback"]})
    delivered = [e for e in json_events(log) if e.get("event") == "delivered" and e.get("app") == QUIET]
    check("an unauthorized app's (mutable) declarative message is handed to it but not shown",
          quiet_got.get("declarative") is True and all(not e["notification"].get("presentation", {}).get("banner") for e in delivered),
          json.dumps(delivered))

    # The app goes away; a message waits for it.
    app.close()
    wait_for("the app's exit seen by the device", lambda: any(
        e.get("event") == "app-state" and e.get("app") == APP and e.get("state") == "terminatedBySystem" for e in json_events(log)))
    push(info, "while you were away", vapid, ca)
    wait_for("the device received it", lambda: any(e.get("event") == "webpush-received" and e.get("handedToApp") is False
                                                    for e in json_events(log)))
    # Restart the device: subscriptions, keys and the waiting message are kept.
    os.kill(device.pid, signal.SIGTERM)
    device.wait()
    device = start_device()
    back = Agent(sock, APP)
    waited = wait_for("the waiting message", lambda: back.event("webPush"))
    check("a message that arrived while the app was away is handed to it when it comes back (after a device restart)",
          waited.get("text") == "while you were away", json.dumps(waited))
    listed = back.call({"op": "webPushSubscriptions"})
    check("the subscription survives the restart", [x["endpoint"] for x in listed["subscriptions"]] == [endpoint], json.dumps(listed))
    push(info, "after the restart", vapid, ca)
    later = wait_for("a message after the restart", lambda: back.event("webPush", lambda e: e.get("text") == "after the restart"))
    check("the keys kept across the restart still decrypt", later is not None)

    gone = back.call({"op": "webPushUnsubscribe"})
    check("webPushUnsubscribe", gone.get("unsubscribed") is True, json.dumps(gone))
    wait_for("the gateway's confirmation", lambda: any(e.get("event") == "webpush-endpoint-removed" and e.get("topic") == APP
                                                        for e in json_events(log)))
    status = refusal(lambda: push(info, "too late", vapid, ca))
    check("after unsubscribing, pywebpush gets 410 Gone", status == 410, str(status))


run("Web Push device", main)
