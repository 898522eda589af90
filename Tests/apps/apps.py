#!/usr/bin/env python3
"""The app libraries as a new app developer uses them, against a real gateway, provider service and
`herald device run`:

- Examples/NotificationsDemo (Swift, built from its own package against HeraldNotifications):
  registers, gives the provider its token with its language and zone, schedules a daily
  wall-clock reminder in its zone and a welcome that is shown in the foreground by its delegate's
  answer; in the background, a push sent through the provider service is shown by the device, and
  the user's tap reaches the app, which handles it by the state it was in.
- clients/python (herald_notifications, asyncio): the same calls from Python: authorization,
  categories, the token, a wall-clock and a calendar trigger with their next fires, a foreground
  presentation and a tap answered by the delegate, a refusal with the agent's reason, and the
  30-second contract kept by the library for a delegate that never returns (the device reports
  no violation); `mypy --strict` passes on the package.

Usage: apps.py PATH/TO/herald PATH/TO/NotificationsDemo
"""
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
sys.path.insert(0, os.path.join(ROOT, "clients", "python"))
from agent import Agent  # noqa: E402
from harness import check, check_schema, json_events, read, run, start, wait_for  # noqa: E402
import herald_notifications as hn  # noqa: E402

HERALD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".build/debug/herald")
DEMO = os.path.abspath(sys.argv[2]) if len(sys.argv) > 2 else None
TEAM = "TEAM123456"
SWIFT_APP, PYTHON_APP = "com.example.app", "com.example.py"


def herald(*args):
    result = subprocess.run([HERALD, *args], capture_output=True, text=True, timeout=60)
    if result.returncode != 0:
        raise AssertionError(f"herald {' '.join(args)} failed: {result.stderr.strip()}")
    return result.stdout.strip()


def lines(path):
    out = []
    for line in read(path).splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            pass
    return out


class PythonApp(hn.Delegate):
    """A Python app's delegate: presents in the foreground, records taps; `stall` never answers."""

    def __init__(self, stall=False):
        self.stall = stall
        self.presented, self.taps = [], []

    async def will_present(self, notification):
        self.presented.append(notification["id"])
        if self.stall:
            await asyncio.sleep(3600)
        return ["banner", "list", "sound"]

    async def did_receive(self, response):
        self.taps.append((response.notification["id"], response.action_identifier))


async def until(what, predicate, timeout=20):
    """wait_for without blocking the event loop the delegate runs on."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


async def python_library(sock, device_log):
    app = PythonApp()
    async with await hn.UserNotificationCenter.connect(PYTHON_APP, socket=sock, delegate=app) as center:
        check("Python: hello answers the settings (not determined yet)", center.settings_at_launch["status"] == "notDetermined")
        check("Python: authorization granted", await center.request_authorization(["alert", "sound", "badge"]))
        ignored = await center.set_notification_categories([{"id": "chat", "actions": [{"id": "reply", "title": "Reply", "options": ["foreground"]}]}])
        check("Python: categories set", ignored == [])
        token = await center.register_for_remote_notifications()
        check("Python: the device token comes back from register_for_remote_notifications", len(token) == 64, token)
        from datetime import datetime
        await center.add("wake", {"title": "Wake up"}, hn.wall_clock(datetime(2030, 1, 2, 9, 0), "Asia/Tokyo", repeat="day"))
        await center.add("standup", {"body": "Stand-up"}, hn.calendar({"hour": 9, "minute": 55}, repeats=True))
        pending = await center.pending_notification_requests()
        for request in pending:
            check_schema("pendingRequest", "a pending request", request)
        wake = next((p for p in pending if p["id"] == "wake"), None)
        # The device runs in Europe/Paris: 09:00 follows it (08:00 UTC in January).
        check("Python: a wall-clock fire date with its zone and repeat, resolved in the device's zone",
              wake is not None and wake["nextFire"] == "2030-01-02T08:00:00Z", json.dumps(pending))
        await center.present("hello", {"title": "Hi", "category": "chat"})
        await until("the Python delegate's willPresent", lambda: app.presented == ["hello"])
        # The delegate has been called; the device presents once the library's answer reached it
        # (CI found the list read before that): wait for the entry rather than read it once.
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 20
        while True:
            shown = await center.delivered_notifications()
            hello = next((n for n in shown if n["id"] == "hello"), None)
            if hello is not None or loop.time() > deadline:
                break
            await asyncio.sleep(0.05)
        check("Python: the delegate's answer decides the foreground presentation",
              hello is not None and "banner" in hello["presented"] and hello["actions"] == ["reply"], json.dumps(shown))
        await center.send({"op": "user", "action": "action", "notification": "hello", "actionId": "reply"})
        await until("the Python delegate's didReceive", lambda: app.taps)
        check("Python: the user's action reaches did_receive", app.taps == [("hello", "reply")], str(app.taps))
        try:
            await center.set_badge_count(-1)
            check("Python: a refused request raises Refused", False)
        except hn.Refused as refused:
            check("Python: a refused request raises Refused with the agent's reason", refused.op == "setBadge" and "badge" in refused.reason, refused.reason)

    stalled = PythonApp(stall=True)
    async with await hn.UserNotificationCenter.connect(PYTHON_APP, socket=sock, delegate=stalled, answer_deadline=0.3) as center:
        await center.present("stuck", {"title": "Nobody answers"})
        await until("the library's answer for the delegate", lambda: center.missed_deadlines)
        check("Python: a delegate that never returns is answered for by the library, and counted", center.missed_deadlines == 1)
        # Its answer, [] (nothing shown, nothing listed), completes the delivery on the device.
        await until("the delivery the library's answer completed", lambda: any(
            e.get("event") == "delivered" and e["notification"]["id"] == "stuck" for e in json_events(device_log)))
        check("Python: nothing is listed, as the library's answer said", not any(n["id"] == "stuck" for n in await center.delivered_notifications()))
    violations = [e for e in json_events(device_log) if e.get("event") == "contract-violation" and e.get("app") == PYTHON_APP]
    check("Python: the device saw no contract violation", not violations, json.dumps(violations))


def main():
    work = tempfile.mkdtemp(prefix="herald-apps-")
    try:
        scenario(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def scenario(work):
    out = os.path.join(work, "gateway.json")
    data = os.path.join(work, "gw")
    start([HERALD, "gateway", "--data-dir", data, "--provider-port", "0", "--device-port", "0"],
          stdout=open(out, "w"), stderr=open(os.path.join(work, "gateway.err"), "w"))
    ports = json.loads(wait_for("the gateway", lambda: read(out).splitlines()[0] if read(out).strip() else None))
    ca = ports["ca"]
    device_dir = os.path.join(work, "device")
    log = os.path.join(work, "device.jsonl")
    start([HERALD, "device", "run", "--data-dir", device_dir, "--gateway", f"wss://localhost:{ports['device_port']}", "--ca", ca,
           "--app", SWIFT_APP, "--app", PYTHON_APP, "--time-zone", "Europe/Paris", "--json"],
          stdout=open(log, "w"), stderr=open(os.path.join(work, "device.err"), "w"))
    sock = os.path.join(device_dir, "agent.sock")
    wait_for("the device", lambda: any(e.get("event") == "connected" for e in json_events(log)) and os.path.exists(sock))

    key = os.path.join(work, "apns.p8")
    key_id = herald("keys", "create", "--data-dir", data, "--team", TEAM, "--topic", SWIFT_APP, "--topic", PYTHON_APP, "--out", key)
    provider_dir = os.path.join(work, "provider")
    provider_out = os.path.join(work, "provider.json")
    start([HERALD, "provider", "--data-dir", provider_dir, "--port", "0", "--gateway", f"https://localhost:{ports['provider_port']}",
           "--ca", ca, "--key", key, "--key-id", key_id, "--team", TEAM],
          stdout=open(provider_out, "w"), stderr=open(os.path.join(work, "provider.err"), "w"))
    started = json.loads(wait_for("the provider", lambda: read(provider_out).splitlines()[0] if read(provider_out).strip() else None))
    base = f"http://127.0.0.1:{started['port']}"
    api_token = read(os.path.join(provider_dir, "api-token")).strip()

    def api(method, path, body=None):
        request = urllib.request.Request(base + path, method=method, data=json.dumps(body).encode() if body is not None else None,
                                         headers={"Authorization": f"Bearer {api_token}", "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                text = response.read()
                return response.status, json.loads(text) if text else None
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"null")

    if DEMO:
        demo_out = os.path.join(work, "demo.jsonl")
        demo = start([DEMO, "--socket", sock, "--app", SWIFT_APP, "--provider", base, "--provider-token", api_token,
                      "--language", "fr-FR", "--time-zone", "Europe/Paris", "--taps", "1"],
                     stdout=open(demo_out, "w"), stderr=open(os.path.join(work, "demo.err"), "w"))
        registered = wait_for("the demo's token", lambda: next((e for e in lines(demo_out) if e.get("event") == "registered"), None))
        status, registration = api("GET", f"/v1/registrations/{registered['token']}")
        check("Swift demo: the provider has its token with the user's language and zone",
              status == 200 and registration["language"] == "fr-FR" and registration["timeZone"] == "Europe/Paris", json.dumps(registration))
        scheduled = wait_for("the demo's schedule", lambda: next((e for e in lines(demo_out) if e.get("event") == "scheduled"), None))
        check("Swift demo: the daily reminder at 08:30 Paris time is pending (06:30 or 07:30 UTC)",
              "morning" in scheduled["ids"] and scheduled["morning"][11:16] in ("06:30", "07:30"), json.dumps(scheduled))
        presented = wait_for("the welcome", lambda: next((e for e in lines(demo_out) if e.get("event") == "presented" and e["id"] == "welcome"), None))
        check("Swift demo: the local welcome is presented in the foreground through its delegate", presented["origin"] == "local")
        wait_for("the demo in the background", lambda: any(e.get("event") == "background" for e in lines(demo_out)))

        status, report = api("POST", "/v1/sends", {"to": {"token": registered["token"]}, "alert": {"title": "Ana", "body": "Lunch?"},
                                                   "data": {"conversation": "ana"}})
        check("Swift demo: the provider's send is accepted by the gateway", status == 200 and report["deliveries"][0]["status"] == 200, json.dumps(report))
        shown = wait_for("the remote notification on the device", lambda: next(
            (e["notification"] for e in json_events(log) if e.get("event") == "delivered" and e["notification"].get("origin") == "remote"
             and e["notification"]["content"].get("title") == "Ana"), None))
        check("Swift demo: with the app in the background, the device shows the push as a banner", "banner" in shown["presented"], json.dumps(shown))
        user = Agent(sock)
        user.call({"op": "user", "action": "tap", "app": SWIFT_APP, "notification": shown["id"]})
        tapped = wait_for("the demo's tap", lambda: next((e for e in lines(demo_out) if e.get("event") == "tapped"), None))
        check("Swift demo: the tap reaches the app, handled by the state it was in (background: it opens the conversation)",
              tapped["id"] == shown["id"] and tapped["state"] == "background" and tapped["opens"] == "ana"
              and tapped["action"] == hn.DEFAULT_ACTION_IDENTIFIER, json.dumps(tapped))
        check("Swift demo: it exits when done", demo.wait(timeout=30) == 0, read(os.path.join(work, "demo.err")))
        user.close()

    asyncio.run(python_library(sock, log))

    mypy = shutil.which("mypy") or os.path.join(os.path.dirname(sys.executable), "mypy")
    if os.path.exists(mypy):
        result = subprocess.run([mypy, "--strict", "herald_notifications"], cwd=os.path.join(ROOT, "clients", "python"),
                                capture_output=True, text=True)
        check("Python: mypy --strict passes on the package", result.returncode == 0, result.stdout[-2000:])
    else:
        check("Python: mypy is installed (scripts/test-deps.sh)", False)


run("app libraries", main)
