#!/usr/bin/env python3
"""PushKit's push types end to end, checked independently: pushes sent with aioapns (a provider
library written for Apple's service, pointed at the gateway) to a running `herald device run`,
whose app is the Python library `herald_notifications` (PushRegistry) over the agent socket.

- Each kind has its own token (VoIP, complication, File Provider from the registry; location
  from startMonitoringLocationPushes; Push to Talk from a joined channel), none the app's APNs
  token; a push of a PushKit type to another kind's token or to the app token is refused
  DeviceTokenNotForTopic, and an alert to a VoIP token too.
- VoIP: a reported call is shown and the user's Answer comes back as CallKit's answer action; an
  app that does not report is terminated (its connection closed); three in a row stop VoIP
  pushes, and registering again lets them through.
- Push to Talk: the app names the active speaker; after leaving the channel its token is gone
  (410 Unregistered).
- Location: handed with the device's position when authorized; not delivered, with the reason,
  when not. Complication: the 51st push of the day is refused by the device's budget.

Usage: pushkit.py PATH/TO/herald
"""
import asyncio
import json
import os
import ssl
import subprocess
import sys
import tempfile
import types

from aioapns import APNs, NotificationRequest, PushType
from aioapns.connection import APNsProductionClientProtocol

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python"))
import herald_notifications as hn  # noqa: E402
from agent import Agent  # noqa: E402
from harness import check, json_events as events, start, wait_for, run  # noqa: E402

HERALD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".build/debug/herald")
TEAM = "TEAM123456"
APP = "com.example.call"
CHANNEL = "5B2D4C1E-7A3F-4E8B-9C0D-1F2E3A4B5C6D"


class App(hn.Delegate):
    """The app: reports a call for each VoIP push while `reports`; names the speaker of PTT pushes."""

    def __init__(self) -> None:
        self.reports = True
        self.registry = None
        self.pushes = []
        self.actions = []

    async def did_receive_incoming_push(self, push):
        self.pushes.append(push)
        if push["kind"] == "voip" and self.reports:
            await self.registry.report_incoming_call(push["apns-id"], "+15551230000", caller="Ada")
        if push["kind"] == "pushtotalk":
            return {"activeRemoteParticipant": "Grace"}
        return {}

    async def perform_call_action(self, action, call):
        self.actions.append((action, call))


def kind_type(kind):
    """aioapns names the push types Apple had when it was written; the newer ones go as their header value."""
    known = {"voip": PushType.VOIP, "complication": PushType.COMPLICATION, "fileprovider": PushType.FILEPROVIDER, "alert": PushType.ALERT}
    return known.get(kind) or types.SimpleNamespace(value=kind)


SUFFIX = {"voip": ".voip", "complication": ".complication", "fileprovider": ".pushkit.fileprovider", "location": ".location-query",
          "pushtotalk": ".voip-ptt", "alert": ""}


async def until(what, predicate, timeout=20):
    """wait_for without blocking the event loop the app's delegate runs on."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


async def scenario(work, herald_ports, key_id, key_pem, phone, log):
    ctx = ssl.create_default_context(cafile=herald_ports["ca"])
    protocol = type("HeraldProtocol", (APNsProductionClientProtocol,), {"APNS_SERVER": "localhost", "APNS_PORT": herald_ports["provider_port"]})
    apns = APNs(key=key_pem, key_id=key_id, team_id=TEAM, topic=APP, use_sandbox=False, ssl_context=ctx)
    apns.pool.protocol_class = protocol

    async def send(token, kind, message=None, priority=10):
        request = NotificationRequest(device_token=token, message=message or {"aps": {}}, push_type=kind_type(kind), priority=priority,
                                      time_to_live=60, apns_topic=APP + SUFFIX[kind])
        result = await apns.send_notification(request)
        return result.status, result.description, request.notification_id

    sock = os.path.join(phone, "agent.sock")
    app_token = await until("the app's token", lambda: next((e["token"] for e in events(log) if e.get("event") == "registered"), None))
    app = App()
    center = await hn.UserNotificationCenter.connect(APP, socket=sock, state="background", delegate=app)
    registry = hn.PushRegistry(center)
    app.registry = registry
    registry_types = ["voip", "complication", "fileprovider"]
    tokens = {
        "voip": await registry.token("voip", lambda: registry.set_desired_push_types(registry_types)),
        "complication": await registry.token("complication", lambda: registry.set_desired_push_types(registry_types)),
        "fileprovider": await registry.token("fileprovider", lambda: registry.set_desired_push_types(registry_types)),
        "location": await registry.token("location", registry.start_monitoring_location_pushes),
        "pushtotalk": await registry.token("pushtotalk", lambda: registry.join_channel(CHANNEL)),
    }
    check("each PushKit kind has its own token, none the app's APNs token",
          len(set(tokens.values())) == 5 and app_token not in tokens.values(), tokens)

    # --- Each kind to its own token only.
    for kind in tokens:
        status, reason, _ = await send(app_token, kind)
        check(f"a {kind} push to the app's APNs token is refused DeviceTokenNotForTopic", (status, reason) == ("400", "DeviceTokenNotForTopic"), (status, reason))
    status, reason, _ = await send(tokens["voip"], "alert", {"aps": {"alert": "hi"}})
    check("an alert to the VoIP token is refused DeviceTokenNotForTopic", (status, reason) == ("400", "DeviceTokenNotForTopic"), (status, reason))
    status, reason, _ = await send(tokens["voip"], "pushtotalk")
    check("a Push to Talk push to the VoIP token is refused DeviceTokenNotForTopic", (status, reason) == ("400", "DeviceTokenNotForTopic"), (status, reason))

    # --- VoIP: reported, shown, answered.
    status, _, voip_id = await send(tokens["voip"], "voip", {"caller": "Ada"})
    check("a VoIP push to the VoIP token: 200", status == "200", status)
    call = await until("the reported call", lambda: next((e["call"] for e in events(log) if e.get("event") == "call-reported"), None))
    check("the app reported the call (the device shows it)", call["handle"] == "+15551230000" and call["caller"] == "Ada", call)
    person = Agent(sock)  # the person holding the device
    answer = person.ask("user", action="answerCall", app=APP, call=call["call"])
    check("the user answers the call", answer.get("ok"), answer)
    await until("CallKit's answer action at the app", lambda: app.actions or None)
    check("the app hears CallKit's answer action for that call", app.actions == [("answer", call["call"])], app.actions)
    completed = await until("completion", lambda: next((e for e in events(log) if e.get("event") == "pushkit-completed" and e.get("apns-id") == voip_id.lower()), None))
    check("the VoIP push completed with a call reported", completed["result"] == "call reported", completed)
    await registry.end_call(call["call"])
    # Answering brought the app to the foreground, where a VoIP push need not be reported; the user leaves it.
    person.ask("user", action="leave", app=APP)

    # --- VoIP not reported: terminated each time; three in a row stop VoIP pushes.
    app.reports = False
    for round_number in range(1, 4):
        if round_number > 1:
            center = await hn.UserNotificationCenter.connect(APP, socket=sock, state="background", delegate=app)
            registry = hn.PushRegistry(center)
            app.registry = registry
        status, _, _ = await send(tokens["voip"], "voip")
        await until(f"termination {round_number}", lambda: len([e for e in events(log) if e.get("event") == "app-terminated"]) >= round_number or None)
        # The device closes the connection after the terminated callback: wait for the close
        # (the event can be in the log before it).
        await until(f"the device closing the connection {round_number}", lambda: center._closed)
        told = []
        while not center.events.empty():
            callback = center.events.get_nowait()
            if callback.get("event") == "terminated":
                told.append(callback)
        check(f"VoIP push {round_number} not reported: the app is told it is terminated and its connection closed",
              len(told) == 1 and "not reported as a call" in told[0]["reason"], told)
    check("three unreported VoIP pushes stop VoIP pushes", any(e.get("event") == "voip-stopped" and e["failures"] == 3 for e in events(log)))
    center = await hn.UserNotificationCenter.connect(APP, socket=sock, state="background", delegate=app)
    registry = hn.PushRegistry(center)
    app.registry = registry
    await send(tokens["voip"], "voip")
    stopped = await until("the refusal", lambda: next((e for e in events(log) if e.get("event") == "pushkit-not-delivered" and e["kind"] == "voip"), None))
    check("a VoIP push after the stop is not delivered, with the reason", "stopped reaching the app" in stopped["reason"], stopped)
    app.reports = True
    await registry.set_desired_push_types(registry_types)
    before = len(app.pushes)
    await send(tokens["voip"], "voip")
    await until("the VoIP push after registering again", lambda: len(app.pushes) > before or None)
    check("registering for VoIP again lets VoIP pushes through", app.pushes[-1]["kind"] == "voip")

    # --- Push to Talk.
    status, _, ptt_id = await send(tokens["pushtotalk"], "pushtotalk", {"activeSpeaker": "Grace"})
    done = await until("the PTT answer", lambda: next((e for e in events(log) if e.get("event") == "pushkit-completed" and e.get("apns-id") == ptt_id.lower()), None))
    check("a Push to Talk push: the app names the active remote participant", status == "200" and done["result"] == "active remote participant: Grace", (status, done))
    await registry.leave_channel()
    await until("the PTT token's end", lambda: any(e.get("event") == "pushkit-token-unregistered" and e["kind"] == "pushtotalk" for e in events(log)) or None)
    status, reason, _ = await send(tokens["pushtotalk"], "pushtotalk")
    check("after leaving the channel the Push to Talk token is gone: 410 Unregistered", (status, reason) == ("410", "Unregistered"), (status, reason))

    # --- Location.
    person.ask("device", location={"latitude": 48.8566, "longitude": 2.3522})
    status, _, location_id = await send(tokens["location"], "location")
    handed = await until("the location push", lambda: next((p for p in app.pushes if p["apns-id"] == location_id.lower()), None))
    check("a location push is handed to the app with the device's position", handed.get("location") == {"latitude": 48.8566, "longitude": 2.3522}, handed)
    person.ask("device", locationAuthorization={"app": APP, "authorized": False})
    status, _, refused_id = await send(tokens["location"], "location")
    refusal = await until("the refusal", lambda: next((e for e in events(log) if e.get("event") == "pushkit-not-delivered" and e.get("apns-id") == refused_id.lower()), None))
    check("without location authorization a location push is not delivered, with the reason", "not authorized" in refusal["reason"], refusal)

    # --- Complication budget, and File Provider.
    for _ in range(51):
        await send(tokens["complication"], "complication", priority=5)
    over = await until("the 51st complication push", lambda: next((e for e in events(log) if e.get("event") == "pushkit-not-delivered" and e["kind"] == "complication"), None), timeout=60)
    check("the 51st complication push of the day is refused by the budget of 50", "budget of 50 complication pushes" in over["reason"], over)
    status, _, _ = await send(tokens["fileprovider"], "fileprovider", {"container-identifier": "NSFileProviderWorkingSetContainerItemIdentifier"}, priority=5)
    await until("the File Provider push", lambda: any(p["kind"] == "fileprovider" for p in app.pushes) or None)
    check("a File Provider push reaches the app", status == "200")
    person.close()
    await center.close()
    apns.pool.close()


def main():
    work = tempfile.mkdtemp(prefix="herald-pushkit-")
    data = os.path.join(work, "gateway")
    phone = os.path.join(work, "phone")
    os.makedirs(phone)
    gateway = start([HERALD, "gateway", "--data-dir", data, "--provider-port", "0", "--device-port", "0", "--host", "127.0.0.1", "--log-level", "warning"],
                    stdout=subprocess.PIPE, stderr=open(os.path.join(work, "gateway.err"), "w"), text=True)
    ports = json.loads(gateway.stdout.readline())
    key_path = os.path.join(work, "key.p8")
    key_id = subprocess.run([HERALD, "keys", "create", "--data-dir", data, "--team", TEAM, "--topic", APP, "--out", key_path],
                            capture_output=True, text=True, check=True).stdout.strip()
    log = os.path.join(work, "phone.jsonl")
    start([HERALD, "device", "run", "--data-dir", phone, "--gateway", f"wss://localhost:{ports['device_port']}", "--ca", ports["ca"],
           "--app", APP, "--entitlements", f"{APP}=location-push", "--json"], stdout=open(log, "w"), stderr=open(log + ".err", "w"))
    wait_for("the agent socket", lambda: os.path.exists(os.path.join(phone, "agent.sock")))
    with open(key_path) as f:
        key_pem = f.read()
    asyncio.run(scenario(work, ports, key_id, key_pem, phone, log))


if __name__ == "__main__":
    run("pushkit", main)
