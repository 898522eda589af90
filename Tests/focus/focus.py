#!/usr/bin/env python3
"""The notification center as Apple ships it, end to end: pushes sent with httpx over HTTP/2 as
Apple documents them to a running `herald device run`, and what the user sees read from its
`--json` events and its agent socket.

- A Focus ("Work", on) that allows one app and one person: another app's alert is listed silently
  (no banner, no sound, screen dark); the allowed app's is shown; a time-sensitive push of an app
  entitled to it breaks through; a passive one is listed silently.
- Communication notifications: a service extension marks a push as a message from a person; the
  allowed person breaks through, another is silenced; a malformed sender is refused by name.
- Critical alerts with the device muted: the entitled, authorized app's critical sound plays at
  its volume; the same push to an app without the entitlement plays nothing.
- The scheduled summary: a push of an app in the summary is held (event with the summary time),
  then taking the app out of the summary delivers it, quietly.
- Hostile settings refused by name (10,000 modes, 25:00, 1 MB of filter criteria); the 21st
  monitored region refused with Core Location's error; the Focus survives a restart.

Usage: focus.py PATH/TO/herald
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import httpx

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from agent import Agent  # noqa: E402
from apns import load_key, provider_jwt  # noqa: E402
from harness import check, json_events as events, start, wait_for, run  # noqa: E402

HERALD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".build/debug/herald")
TEAM = "TEAM123456"
MAIL, GAMES, NEWS, ALARM, CHAT = "com.example.mail", "com.example.games", "com.example.news", "com.example.alarm", "com.example.chat"
ANA = "+33612345678"


def delivered(log, apns_id):
    return next((e["notification"] for e in events(log) if e.get("event") == "delivered" and e["notification"].get("apns-id") == apns_id), None)


def main():
    work = tempfile.mkdtemp(prefix="herald-focus-")
    data = os.path.join(work, "gateway")
    phone = os.path.join(work, "phone")
    os.makedirs(phone)
    try:
        gateway = start([HERALD, "gateway", "--data-dir", data, "--provider-port", "0", "--device-port", "0", "--host", "127.0.0.1",
                         "--log-level", "warning"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        ports = json.loads(gateway.stdout.readline())
        ca = ports["ca"]
        key_path = os.path.join(work, "key.p8")
        topics = [MAIL, GAMES, NEWS, ALARM, CHAT]
        key_id = subprocess.run([HERALD, "keys", "create", "--data-dir", data, "--team", TEAM, *sum((["--topic", t] for t in topics), []),
                                 "--out", key_path], capture_output=True, text=True, check=True).stdout.strip()
        key = load_key(key_path)

        focus_file = os.path.join(work, "focus.json")
        with open(focus_file, "w") as f:
            json.dump({"modes": [{"name": "Work", "state": "on", "allowedApps": [MAIL], "allowedPeople": [ANA]},
                                 {"name": "Sleep", "state": "scheduled", "schedule": {"start": "23:00", "end": "07:00"}}]}, f)
        log = os.path.join(work, "phone.jsonl")
        device_args = [HERALD, "device", "run", "--data-dir", phone, "--gateway", f"wss://localhost:{ports['device_port']}", "--ca", ca,
                       *sum((["--app", t] for t in topics), []), "--widgets", "--entitlements", f"{GAMES}=time-sensitive",
                       "--entitlements", f"{ALARM}=critical-alert", "--time-zone", "Europe/Paris", "--json"]
        device = start(device_args + ["--focus", focus_file], stdout=open(log, "w"), stderr=subprocess.DEVNULL)
        tokens = {}
        for topic in topics:
            tokens[topic] = wait_for(f"{topic}'s token", lambda: next(
                (e["token"] for e in events(log) if e.get("event") == "registered" and e.get("topic") == topic), None))
        sock = os.path.join(phone, "agent.sock")
        wait_for("the agent socket", lambda: os.path.exists(sock))
        check("--focus is applied at start: a focus event names the Focus that is on",
              any(e.get("event") == "focus" and e.get("active") == "Work" for e in events(log)), events(log)[-3:])

        # Every app asks for authorization (the alarm app for critical alerts too), in the background.
        for topic in topics:
            app = Agent(sock, topic)
            options = ["alert", "sound", "badge"] + (["criticalAlert"] if topic in (ALARM, GAMES) else [])
            app.ask("requestAuthorization", options=options)
            app.close()

        client = httpx.Client(http2=True, verify=ca)
        base = f"https://localhost:{ports['provider_port']}"

        bearer = provider_jwt(key, key_id, TEAM)  # one token, reused, as Apple asks (at most one new token per 20 minutes)

        def push(topic, aps, push_type="alert", **extra):
            headers = {"authorization": f"bearer {bearer}", "apns-topic": topic, "apns-push-type": push_type}
            r = client.post(f"{base}/3/device/{tokens[topic]}", headers=headers, content=json.dumps({"aps": aps, **extra}))
            assert r.status_code == 200 and r.http_version == "HTTP/2", (r.status_code, r.text)
            return r.headers["apns-id"]

        def shown(apns_id):
            n = wait_for(f"delivery of {apns_id}", lambda: delivered(log, apns_id))
            return n, sorted(n["presented"]), n["attention"]

        # --- Focus: silenced, allowed app, time-sensitive, passive.
        n, presented, attention = shown(push(GAMES, {"alert": "Your crops are ready", "sound": "default"}))
        check("Focus on: a push of an app it does not allow is listed silently (no banner, no sound, screen dark)",
              presented == ["list"] and attention["silenced"] and attention["focus"] == "Work" and not attention["screen"]
              and n["sound"] is None, (presented, attention))
        n, presented, attention = shown(push(MAIL, {"alert": "Quarterly report", "sound": "default"}))
        check("Focus on: a push of an allowed app is shown with its sound",
              presented == ["banner", "list", "sound"] and attention.get("through") == "allowed-app" and attention["screen"], (presented, attention))
        n, presented, attention = shown(push(GAMES, {"alert": "Raid starts now", "sound": "default", "interruption-level": "time-sensitive"}))
        check("a time-sensitive push of an entitled app breaks through the Focus",
              presented == ["banner", "list", "sound"] and attention == {**attention, "level": "time-sensitive", "through": "time-sensitive"},
              (presented, attention))
        n, presented, attention = shown(push(MAIL, {"alert": "FYI", "sound": "default", "interruption-level": "passive"}))
        check("passive: listed without banner or sound even from an allowed app", presented == ["list"] and attention["level"] == "passive",
              (presented, attention))
        n, presented, attention = shown(push(MAIL, {"alert": "Server down", "sound": "default", "interruption-level": "time-sensitive"}))
        check("time-sensitive from an app without the entitlement is active", attention["level"] == "active", attention)

        # --- Communication notifications through the service extension.
        extension = Agent(sock, CHAT, serviceExtension=True)

        calls = {}

        def answer_callback(agent, apns_id):
            return calls[apns_id]

        def message(sender, handle, avatar="ana.png"):
            apns_id = push(CHAT, {"alert": {"title": "New message", "body": "(encrypted)"}, "mutable-content": 1, "sound": "default"})
            call = extension.take("serviceExtension")
            calls[apns_id] = call["callback"]
            answer = extension.ask("complete", callback=call["callback"], content={"aps": {"alert": {"title": sender, "body": "Lunch?"}, "sound": "default"}},
                                   communication={"sender": {"name": sender, "handle": handle, "avatar": avatar}, "conversation": "lunch"})
            return apns_id, answer

        apns_id, _ = message("Ana", ANA)
        n, presented, attention = shown(apns_id)
        check("a message from a person the Focus allows breaks through, showing the sender",
              presented == ["banner", "list", "sound"] and attention.get("through") == "person"
              and n["content"]["communication"] == {"sender": {"name": "Ana", "handle": ANA, "avatar": "ana.png"}, "conversation": "lunch"},
              (presented, attention, n["content"]))
        apns_id, _ = message("Bob", "+33699999999")
        n, presented, attention = shown(apns_id)
        check("a message from anyone else is silenced by the Focus", presented == ["list"] and attention["silenced"], (presented, attention))
        apns_id, answer = message("Eve", "x" * 2000)
        check("a sender handle of 2,000 bytes is refused, naming communication",
              not answer["ok"] and "communication" in answer["error"], answer)
        # The refused answer lost nothing: the callback still waits, and a good answer shows it.
        answer = extension.ask("complete", callback=answer_callback(extension, apns_id), content={"aps": {"alert": "Eve: hi"}},
                               communication={"sender": {"name": "Eve", "handle": "eve@example.com"}})
        n, presented, attention = shown(apns_id)
        check("after a refused answer the extension answers again and the message is shown (silenced: Eve is not allowed)",
              answer["ok"] and n["content"]["body"] == "Eve: hi" and attention["silenced"], (answer, n))
        extension.close()

        # --- Critical alerts with the device muted.
        user = Agent(sock)
        check("the device can be muted through the agent", user.ask("device", muted=True).get("muted") is True)
        critical = {"alert": "Glucose low", "sound": {"critical": 1, "name": "default", "volume": 0.6}, "interruption-level": "critical"}
        n, presented, attention = shown(push(ALARM, critical))
        check("muted: a critical alert of an entitled, authorized app plays, at its volume, through the Focus",
              "sound" in presented and n["sound"] == "default" and attention.get("critical-volume") == 0.6
              and attention["level"] == "critical" and attention.get("through") == "critical", (presented, attention))
        n, presented, attention = shown(push(GAMES, critical))
        check("muted: the same push to an app without the entitlement plays nothing",
              "sound" not in presented and attention["level"] == "active", (presented, attention))
        user.ask("device", muted=False)

        # --- The scheduled summary.
        answer = user.ask("device", focus={"summary": {"times": ["08:00", "18:00"], "apps": [NEWS]}})
        check("the summary is set through the agent (and the Focus with it)", answer["ok"] and answer["activeFocus"] is None, answer)
        held_id = push(NEWS, {"alert": "Morning briefing", "sound": "default", "relevance-score": 0.4})
        held = wait_for("held-for-summary", lambda: next((e for e in events(log) if e.get("event") == "held-for-summary" and e["id"] == held_id), None))
        check("a push of an app in the summary is held until the next summary time (08:00 or 18:00 Paris)",
              held["local"][11:16] in ("08:00", "18:00") and delivered(log, held_id) is None, held)
        user.ask("device", focus={"summary": {"times": ["08:00"], "apps": [MAIL]}})
        n, presented, attention = shown(held_id)
        summary = next((e for e in events(log) if e.get("event") == "summary"), None)
        check("taking the app out of the summary delivers what it held, quietly, as a summary",
              presented == ["list"] and attention.get("summary") and summary and summary["notifications"] == [{"app": NEWS, "id": held_id, "origin": "remote", "apns-id": held_id}],
              (presented, attention, summary))

        # --- Widget pushes (iOS 26): their own token; widgets pushes go there and only there.
        widget_token = wait_for("the news app's widget token", lambda: next(
            (e["token"] for e in events(log) if e.get("event") == "widget-token" and e.get("app") == NEWS), None))
        check("--widgets: the app gets a widget push token of its own", len(widget_token) == 64 and widget_token != tokens[NEWS], widget_token)
        widgets_topic = NEWS + ".push-type.widgets"

        def send(token, topic, push_type, body):
            headers = {"authorization": f"bearer {bearer}", "apns-topic": topic, "apns-push-type": push_type}
            return client.post(f"{base}/3/device/{token}", headers=headers, content=json.dumps(body))

        r = send(tokens[NEWS], widgets_topic, "widgets", {"aps": {"content-changed": True}})
        check("a widgets push to the app's ordinary token is 400 DeviceTokenNotForTopic",
              (r.status_code, r.json().get("reason")) == (400, "DeviceTokenNotForTopic"), r.text)
        r = send(widget_token, NEWS, "alert", {"aps": {"alert": "hi"}})
        check("an alert to the widget token is 400 DeviceTokenNotForTopic", (r.status_code, r.json().get("reason")) == (400, "DeviceTokenNotForTopic"), r.text)
        r = send(widget_token, widgets_topic, "widgets", {"aps": {"content-changed": True}})
        reload = wait_for("the widget reload", lambda: next(
            (e for e in events(log) if e.get("event") == "widget-reload" and e.get("apns-id") == r.headers.get("apns-id")), None))
        check("a widgets push to the widget token reloads the app's widgets, within the day's budget",
              r.status_code == 200 and reload["app"] == NEWS and reload["remaining"] == 69, (r.status_code, reload))

        # --- Hostile settings and the region limit.
        many = {"modes": [{"name": f"m{i}"} for i in range(10_000)]}
        for name, focus, field in [
            ("10,000 Focus modes", many, "modes"),
            ("a start at 25:00", {"modes": [{"name": "W", "state": "scheduled", "schedule": {"start": "25:00", "end": "07:00"}}]}, "modes[0].schedule.start"),
            ("filter criteria of 1 MB", {"modes": [{"name": "W", "filters": {MAIL: ["x" * 1_000_000]}}]}, "modes[0].filters"),
        ]:
            answer = user.ask("device", focus=focus)
            check(f"hostile Focus settings are refused naming the field: {name}", not answer["ok"] and field in answer["error"], answer.get("error", "")[:200])
        regions = Agent(sock, MAIL)
        answers = [regions.ask("add", request={"id": f"r{i}", "content": {"body": "here"},
                                              "trigger": {"type": "location", "latitude": 48.85 + i / 100, "longitude": 2.35, "radius": 100}})
                   for i in range(21)]
        check("20 monitored regions are accepted; the 21st is refused with kCLErrorRegionMonitoringFailure",
              all(a["ok"] for a in answers[:20]) and not answers[20]["ok"] and "kCLErrorRegionMonitoringFailure" in answers[20]["error"], answers[20])
        regions.close()
        user.close()

        # --- The Focus is saved with the device.
        device.terminate()
        device.wait(timeout=20)
        start(device_args, stdout=open(log, "a"), stderr=subprocess.DEVNULL)
        def connected():
            try:
                return Agent(sock)
            except OSError:  # the last run's socket file, until the new run replaces it
                return None
        again = wait_for("the agent socket again", connected).ask("device")
        check("the Focus settings survive a restart (DIR/focus.json)",
              again["ok"] and again["focus"].get("summary") == {"times": ["08:00"], "apps": [MAIL]}, again)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    run("focus", main)
