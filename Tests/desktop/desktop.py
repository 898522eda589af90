#!/usr/bin/env python3
"""`herald device run --desktop` under a real session bus and a real notification server.

Usage: Tests/desktop/run.sh HERALD_BINARY [ARTIFACTS_DIR]
(run.sh starts Xvfb and a D-Bus session with dbus-run-session, then this script inside it.)

dunst (Debian's) is the notification server; dbus-monitor records the method calls on the bus.
Asserted:
  - a push sent by `herald push send` becomes a Notify call with the right summary, body and
    actions (the category's, registered by the app over the agent socket);
  - the user choosing an action in dunst (its context menu, answered by a dmenu stand-in that picks
    the first action) sends ActionInvoked, which reaches the app as didReceive with that action;
  - a dismissal (dunstctl close) reaches the app as a dismissal: the entry leaves Notification Center;
  - a payload with markup and quotes is shown as text (escaped for a server that reads markup).
"""
import json, os, socket, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from harness import check, read, run, start, wait_for  # noqa: E402

HERALD = os.path.abspath(sys.argv[1])
ARTIFACTS = os.path.abspath(sys.argv[2]) if len(sys.argv) > 2 else None
TOPIC = "com.example.desktop"
TEAM = "DESKTOP001"


class Agent:
    """An app on the device's agent socket: one JSON object a line each way."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(path)
        self.buffer = b""
        self.next_id = 0
        self.callbacks = []

    def line(self, timeout=15):
        self.sock.settimeout(timeout)
        while b"\n" not in self.buffer:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise AssertionError("the agent closed the connection")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    def request(self, op, **fields):
        self.next_id += 1
        self.sock.sendall((json.dumps({"id": self.next_id, "op": op, **fields}) + "\n").encode())
        while True:
            message = self.line()
            if message.get("id") == self.next_id and "ok" in message:
                if not message["ok"]:
                    raise AssertionError(f"{op}: {message.get('error')}")
                return message
            self.callbacks.append(message)

    def callback(self, name, timeout=15):
        deadline = time.monotonic() + timeout
        while True:
            for message in self.callbacks:
                if message.get("event") == name:
                    self.callbacks.remove(message)
                    return message
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"no {name} callback")
            self.callbacks.append(self.line(timeout=remaining))


def main():
    work = tempfile.mkdtemp(prefix="herald-desktop-")
    # dunst's context menu is a dmenu program: this one records the menu and picks the first action.
    picker = os.path.join(work, "pick.sh")
    with open(picker, "w") as f:
        f.write(f"#!/bin/sh\ncat > {work}/menu.txt\ngrep -m1 ',a0]' {work}/menu.txt\n")
    os.chmod(picker, 0o755)
    dunstrc = os.path.join(work, "dunstrc")
    with open(dunstrc, "w") as f:
        f.write(f"[global]\n    dmenu = {picker}\n    timeout = 0\n    markup = full\n")
    start(["dunst", "-config", dunstrc], stdout=open(os.path.join(work, "dunst.log"), "w"), stderr=subprocess.STDOUT)
    monitor_log = os.path.join(work, "monitor.txt")
    start(["dbus-monitor", "--session", "type='method_call',interface='org.freedesktop.Notifications'"],
          stdout=open(monitor_log, "w"), stderr=subprocess.STDOUT)
    # NameHasOwner does not start a server by D-Bus activation (which would race this dunst).
    wait_for("dunst on the bus", lambda: "boolean true" in subprocess.run(
        ["dbus-send", "--session", "--print-reply", "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus",
         "org.freedesktop.DBus.NameHasOwner", "string:org.freedesktop.Notifications"], capture_output=True, text=True).stdout)

    gateway_out = os.path.join(work, "gateway.json")
    start([HERALD, "gateway", "--data-dir", os.path.join(work, "gw"), "--provider-port", "0", "--device-port", "0", "--admin-port", "0"],
          stdout=open(gateway_out, "w"), stderr=open(os.path.join(work, "gateway.err"), "w"))
    ports = json.loads(wait_for("the gateway's start-up line", lambda: read(gateway_out).strip().splitlines()[0] if read(gateway_out).strip() else None))
    ca = ports["ca"]

    phone = os.path.join(work, "phone")
    device_log = os.path.join(work, "device.log")
    start([HERALD, "device", "run", "--data-dir", phone, "--gateway", f"wss://localhost:{ports['device_port']}", "--ca", ca,
           "--app", TOPIC, "--desktop", "--json", "--log-level", "debug"],
          stdout=open(device_log, "w"), stderr=open(os.path.join(work, "device.err"), "w"))
    registered = wait_for("the device's token", lambda: next(
        (json.loads(l) for l in read(device_log).splitlines() if '"registered"' in l), None))
    token = registered["token"]

    agent = Agent(wait_for("the agent socket", lambda: os.path.join(phone, "agent.sock") if os.path.exists(os.path.join(phone, "agent.sock")) else None))
    agent.request("hello", app=TOPIC, state="background")
    agent.request("requestAuthorization", options=["alert", "sound", "badge"])
    agent.request("setCategories", categories=[{"id": "INVITE", "actions": [
        {"id": "accept", "title": "Accept"}, {"id": "decline", "title": "Decline", "options": ["destructive"]}]}])

    key_id = subprocess.run([HERALD, "keys", "create", "--data-dir", os.path.join(work, "gw"), "--team", TEAM, "--topic", TOPIC,
                             "--out", os.path.join(work, "key.p8")], check=True, capture_output=True, text=True).stdout.strip()

    def push(*extra):
        return subprocess.run([HERALD, "push", "send", "--gateway", f"https://localhost:{ports['provider_port']}", "--ca", ca,
                               "--key", os.path.join(work, "key.p8"), "--key-id", key_id, "--team", TEAM, "--topic", TOPIC,
                               "--token", token, *extra], check=True, capture_output=True, text=True).stdout.strip()

    apns_id = push("--title", "Lunch", "--alert", "At noon? <b>Bring</b> \"snacks\" & 'fruit'", "--category", "INVITE")
    calls = wait_for("a Notify call", lambda: read(monitor_log) if "member=Notify" in read(monitor_log) else None)
    notify = calls[calls.index("member=Notify"):]
    check("a push becomes a Notify call", "member=Notify" in calls)
    check("summary is the alert title", 'string "Lunch"' in notify, notify[:800])
    check("body is the alert body, markup escaped for a server that reads it",
          "At noon? &lt;b&gt;Bring&lt;/b&gt; \"snacks\" &amp; 'fruit'" in notify, notify[:800])
    check("the category's actions are the notification's actions",
          all(s in notify for s in ['string "default"', 'string "Open"', 'string "a0"', 'string "Accept"', 'string "a1"', 'string "Decline"']), notify[:800])
    check("the app is named", 'string "Herald: com.example.desktop"' in notify, notify[:400])
    wait_for("dunst showing it", lambda: subprocess.run(["dunstctl", "count", "displayed"], capture_output=True, text=True).stdout.strip() == "1")
    if ARTIFACTS:
        os.makedirs(ARTIFACTS, exist_ok=True)
        from PIL import ImageGrab  # Pillow (scripts/test-deps.sh): the X display as it is now
        ImageGrab.grab(xdisplay=os.environ["DISPLAY"]).crop((780, 0, 1280, 160)).save(os.path.join(ARTIFACTS, "desktop-notification.png"))

    # The user picks "Accept" in dunst's menu: ActionInvoked reaches the app as didReceive.
    subprocess.run(["dunstctl", "context"], check=True)
    menu = wait_for("dunst's menu", lambda: read(os.path.join(work, "menu.txt")) or None)
    check("dunst offers the actions", "Accept" in menu and "Decline" in menu, menu)
    response = agent.callback("didReceive")
    check("ActionInvoked reaches the app as the user's choice", response.get("actionId") == "accept", json.dumps(response))
    check("it is the pushed notification", (response.get("notification") or {}).get("id") == apns_id, json.dumps(response)[:400])
    if isinstance(response.get("callback"), int):
        agent.request("complete", callback=response["callback"])

    # A dismissal: the second push is closed by the user in dunst.
    subprocess.run(["dunstctl", "close-all"], check=True)
    wait_for("dunst showing nothing", lambda: subprocess.run(["dunstctl", "count", "displayed"], capture_output=True, text=True).stdout.strip() == "0")
    second = push("--title", "Later", "--alert", "Dismiss me")
    wait_for("the second Notify", lambda: read(monitor_log).count("member=Notify") >= 2)
    wait_for("dunst showing the second", lambda: subprocess.run(["dunstctl", "count", "displayed"], capture_output=True, text=True).stdout.strip() == "1")
    subprocess.run(["dunstctl", "close"], check=True)

    def gone():
        delivered = agent.request("delivered")["notifications"]
        return all(n.get("id") != second for n in delivered) or None
    check("a dismissal in dunst removes the entry from Notification Center", bool(wait_for("the dismissal", gone)))

    # CallKit: a call the app reports is shown with Answer and Decline (docs/push-types/voip.md);
    # the user's Answer in dunst comes back to the app as CallKit's answer action.
    subprocess.run(["dunstctl", "close-all"], check=True)
    wait_for("dunst showing nothing", lambda: subprocess.run(["dunstctl", "count", "displayed"], capture_output=True, text=True).stdout.strip() == "0")
    before = read(monitor_log).count("member=Notify")
    call = "E621E1F8-C36C-495A-93FC-0C247A3E6E5F"
    agent.request("reportIncomingCall", call=call, handle="+15551230000", caller="Ada")
    wait_for("the call's Notify", lambda: read(monitor_log).count("member=Notify") > before)
    shown_call = read(monitor_log).rsplit("member=Notify", 1)[1]
    check("a reported call is shown with Answer and Decline, as an incoming call",
          all(s in shown_call for s in ['string "Ada"', 'string "Answer"', 'string "Decline"', 'string "call.incoming"']), shown_call[:800])
    wait_for("dunst showing the call", lambda: subprocess.run(["dunstctl", "count", "displayed"], capture_output=True, text=True).stdout.strip() == "1")
    os.remove(os.path.join(work, "menu.txt"))
    subprocess.run(["dunstctl", "context"], check=True)
    action = agent.callback("callAction")
    check("Answer in dunst reaches the app as CallKit's answer action for that call",
          action.get("action") == "answer" and action.get("call") == call, json.dumps(action))


run("desktop", main)
