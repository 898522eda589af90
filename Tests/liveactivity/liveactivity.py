#!/usr/bin/env python3
"""Live Activities and broadcast channels end to end, through Herald's real interfaces.

A gateway (provider, device and channel ports), four `herald device run` processes, and
`herald push send` / `herald channels` / curl as the provider:

- a Live Activity started by push-to-start, updated (an older timestamp ignored), gone stale at
  its stale-date, ended and dismissed at its dismissal-date, all seen in `herald device run`
  events; a push to its update token after the end is 410 Unregistered;
- a channel created on the channel port; three devices subscribe (an app's activity on the
  channel, started through the agent socket) and a fourth does not; one broadcast reaches each of
  the three once (their events, and the broadcast's receipt counts) and the fourth never (the
  receipt names only the three subscriptions);
- a broadcast is stored once (issue 66): a subscriber that was stopped gets only the newest
  broadcast when it comes back on a storage-policy-1 channel, and nothing of a policy-0 one;
- the broadcast-only reasons of reference §2 over real sockets with curl.

Usage: liveactivity.py PATH/TO/herald
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from harness import check, json_events as events, start, wait_for, read, run  # noqa: E402

HERALD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".build/debug/herald")
TEAM = "TEAM123456"
APP = "com.example.live"
LA_TOPIC = APP + ".push-type.liveactivity"


def herald(*args, check_exit=True):
    out = subprocess.run([HERALD, *args], capture_output=True, text=True, timeout=60)
    if check_exit and out.returncode != 0:
        raise AssertionError(f"herald {' '.join(args)} failed ({out.returncode}): {out.stderr.strip()}")
    return out


def event(path, kind, where=lambda e: True):
    return next((e for e in events(path) if e.get("event") == kind and where(e)), None)


def agent(sock_path, *messages):
    """Sends requests on a device's agent socket as one app connection; returns the answers."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(sock_path)
        s.settimeout(15)
        answers, buffer = [], b""
        for number, message in enumerate(messages, 1):
            s.sendall((json.dumps({"id": number, **message}) + "\n").encode())
            while True:
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    obj = json.loads(line)
                    if obj.get("id") == number:
                        answers.append(obj)
                        break
                else:
                    chunk = s.recv(65536)
                    if not chunk:
                        raise AssertionError("the agent closed the connection")
                    buffer += chunk
                    continue
                break
        return answers


def curl(*args):
    out = subprocess.run(["curl", "-s", "-o", "-", "-w", "\n%{http_code}", "--http2", *args], capture_output=True, text=True)
    body, _, code = out.stdout.rpartition("\n")
    return int(code), body


def main():
    work = tempfile.mkdtemp(prefix="herald-live-")
    data = os.path.join(work, "gateway")
    try:
        gateway = start([HERALD, "gateway", "--data-dir", data, "--provider-port", "0", "--device-port", "0", "--channel-port", "0",
                         "--host", "127.0.0.1", "--log-level", "warning"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        ports = json.loads(gateway.stdout.readline())
        ca, provider, channels_port, device_port = ports["ca"], ports["provider_port"], ports["channel_port"], ports["device_port"]
        check("the start-up line names the channel port", isinstance(channels_port, int) and channels_port > 0, ports)
        key = os.path.join(work, "key.p8")
        key_id = herald("keys", "create", "--data-dir", data, "--team", TEAM, "--topic", APP, "--out", key).stdout.strip()
        auth = ["--ca", ca, "--key", key, "--key-id", key_id, "--team", TEAM]
        provider_url = f"https://localhost:{provider}"

        # Four devices: A asks for push-to-start tokens; B, C, D will subscribe to a channel.
        devices, processes = {}, {}

        def run_device(name, log):
            args = [HERALD, "device", "run", "--data-dir", devices[name][0] if name in devices else os.path.join(work, f"device-{name}"),
                    "--gateway", f"wss://localhost:{device_port}", "--ca", ca, "--app", APP, "--json"]
            if name == "A":
                args.append("--live-activities")
            processes[name] = start(args, stdout=open(log, "w"), stderr=subprocess.DEVNULL)

        for name in "ABCD":
            directory = os.path.join(work, f"device-{name}")
            os.makedirs(directory)
            log = os.path.join(work, f"device-{name}.jsonl")
            run_device(name, log)
            devices[name] = (directory, log)
        a_log = devices["A"][1]

        # --- A Live Activity by push-to-start.
        start_token = wait_for("A's push-to-start token", lambda: event(a_log, "activity-push-to-start-token"))["token"]
        check("herald device run --live-activities prints the app's push-to-start token", len(start_token) == 64, start_token)
        now = int(time.time())
        started = herald("push", "send", "--gateway", provider_url, *auth, "--topic", LA_TOPIC, "--token", start_token,
                         "--event", "start", "--timestamp", str(now), "--attributes-type", "ScoreAttributes",
                         "--attributes", '{"home":"Lions","away":"Bears"}', "--content-state", '{"home":0,"away":0}',
                         "--alert", "Kick-off", "--input-push-token").stdout.strip()
        began = wait_for("the activity to start", lambda: event(a_log, "activity-started", lambda e: e.get("apns-id") == started))
        activity = began["activity"]["id"]
        check("push-to-start starts an activity with its attributes and content state",
              began["activity"]["attributes"] == {"home": "Lions", "away": "Bears"} and began["activity"]["content-state"] == {"home": 0, "away": 0}
              and began["alert"] == "Kick-off", began)
        update_token = wait_for("the activity's update token",
                                lambda: event(a_log, "activity-update-token", lambda e: e.get("id") == activity))["token"]
        check("input-push-token gives the new activity an update token", len(update_token) == 64 and update_token != start_token, update_token)

        def update(timestamp, state, *extra):
            return herald("push", "send", "--gateway", provider_url, *auth, "--topic", LA_TOPIC, "--token", update_token,
                          "--event", "update", "--timestamp", str(timestamp), "--content-state", json.dumps(state), *extra).stdout.strip()

        first = update(now + 10, {"home": 1, "away": 0})
        got = wait_for("the update", lambda: event(a_log, "activity-updated", lambda e: e.get("apns-id") == first))
        check("an update replaces the content state", got["activity"]["content-state"] == {"home": 1, "away": 0}, got)
        older = update(now + 5, {"home": 9, "away": 9})
        ignored = wait_for("the older update to be ignored", lambda: event(a_log, "activity-ignored", lambda e: e.get("apns-id") == older))
        check("an update with an older timestamp is ignored", "out of order" in ignored["reason"], ignored)
        listed = agent(os.path.join(devices["A"][0], "agent.sock"), {"op": "hello", "app": APP}, {"op": "activities"})[1]
        check("... and the content state stays the newer one (agent socket: activities)",
              listed["ok"] and listed["activities"][0]["content-state"] == {"home": 1, "away": 0}, listed)

        stale_at = int(time.time()) + 2
        staled = update(now + 20, {"home": 2, "away": 0}, "--stale-date", str(stale_at))
        wait_for("the stale-date update", lambda: event(a_log, "activity-updated", lambda e: e.get("apns-id") == staled))
        stale = wait_for("the activity to go stale", lambda: event(a_log, "activity-stale"), timeout=15)
        check("the activity goes stale at its stale-date", stale["activity"]["state"] == "stale" and time.time() >= stale_at - 0.5, stale)

        dismiss_at = int(time.time()) + 2
        ended = herald("push", "send", "--gateway", provider_url, *auth, "--topic", LA_TOPIC, "--token", update_token,
                       "--event", "end", "--timestamp", str(now + 30), "--content-state", '{"home":3,"away":1}',
                       "--dismissal-date", str(dismiss_at)).stdout.strip()
        end = wait_for("the end", lambda: event(a_log, "activity-ended", lambda e: e.get("apns-id") == ended))
        check("an end shows the final content state", end["activity"]["state"] == "ended" and end["activity"]["content-state"] == {"home": 3, "away": 1}, end)
        gone = wait_for("the dismissal", lambda: event(a_log, "activity-dismissed"), timeout=15)
        check("the ended activity is dismissed at its dismissal-date", gone["activity"]["id"] == activity and time.time() >= dismiss_at - 0.5, gone)
        late = wait_for("the update token to be unregistered", lambda: (lambda out: out if "410" in out.stdout else None)(
            herald("push", "send", "--gateway", provider_url, *auth, "--topic", LA_TOPIC, "--token", update_token, "--event", "update",
                   "--timestamp", str(now + 40), "--content-state", "{}", check_exit=False)))
        check("a push to an ended activity's token is 410 Unregistered", "410 Unregistered" in late.stdout, late.stdout)
        wrong = herald("push", "send", "--gateway", provider_url, *auth, "--topic", APP, "--token", start_token, "--alert", "hi", check_exit=False)
        check("an alert push to a Live Activity token is 400 DeviceTokenNotForTopic", "400 DeviceTokenNotForTopic" in wrong.stdout, wrong.stdout)
        bad = herald("push", "send", "--gateway", provider_url, *auth, "--topic", LA_TOPIC, "--token", start_token, "--event", "start",
                     "--content-state", "{}", check_exit=False)
        check("herald push send refuses a start ActivityKit would drop, before sending",
              bad.returncode != 0 and "attributes-type" in bad.stderr, bad.stderr)

        # --- A broadcast channel, three subscribers, one not.
        channel_url = f"https://localhost:{channels_port}"
        channel = herald("channels", "create", "--gateway", channel_url, *auth, "--topic", APP, "--storage-policy", "1").stdout.strip()
        listed = herald("channels", "list", "--gateway", channel_url, *auth, "--topic", APP).stdout.split()
        check("herald channels create/list on the channel port", channel in listed and len(channel) == 24, (channel, listed))
        for name in "BCD":
            answer = agent(os.path.join(devices[name][0], "agent.sock"), {"op": "hello", "app": APP},
                           {"op": "startActivity", "attributesType": "ScoreAttributes", "attributes": {"match": 1},
                            "contentState": {"home": 0}, "pushType": {"channel": channel}})[1]
            check(f"device {name}: an activity on the channel starts (agent socket)", answer["ok"], answer)
        for name in "BCD":
            wait_for(f"device {name} to subscribe", lambda: event(devices[name][1], "subscribed", lambda e: e.get("channel") == channel))
        request_id = herald("push", "send", "--gateway", provider_url, *auth, "--topic", APP, "--channel", channel,
                            "--event", "update", "--timestamp", str(int(time.time())), "--content-state", '{"home":5}').stdout.strip()
        check("a broadcast is answered with its apns-request-id", len(request_id) == 36, request_id)
        for name in "BCD":
            got = wait_for(f"device {name}'s broadcast", lambda: event(devices[name][1], "activity-updated", lambda e: e.get("apns-id") == request_id))
            check(f"device {name}: the broadcast updates its activity", got["activity"]["content-state"] == {"home": 5}, got)

        def receipt():
            code, body = curl("--cacert", ca, "-H", f"authorization: bearer {herald('keys', 'jwt', '--key', key, '--key-id', key_id, '--team', TEAM).stdout.strip()}",
                              f"{provider_url}/3/notifications/{request_id}")
            return json.loads(body) if code == 200 else None
        counted = wait_for("the broadcast's receipt to count three acks", lambda: (lambda r: r if r and r["counts"].get("acked") == 3 else None)(receipt()))
        check("the broadcast's receipt counts three deliveries, all acked, none for the unsubscribed device",
              counted["counts"] == {"acked": 3} and len(counted["deliveries"]) == 3, counted["counts"])
        for name in "BCD":
            copies = [e for e in events(devices[name][1]) if e.get("event") == "activity-updated" and e.get("apns-id") == request_id]
            check(f"device {name} got the broadcast once", len(copies) == 1, len(copies))
        check("the unsubscribed device A got nothing of it",
              not any(e.get("apns-id") == request_id for e in events(a_log)), [e for e in events(a_log) if e.get("apns-id") == request_id])

        # --- Stored once (issue 66): what waits for a subscriber that is away.
        stamps = iter(range(int(time.time()) + 10, int(time.time()) + 1000))   # each update newer than the last

        def broadcast(on, state):
            return herald("push", "send", "--gateway", provider_url, *auth, "--topic", APP, "--channel", on,
                          "--event", "update", "--timestamp", str(next(stamps)), "--content-state", json.dumps(state)).stdout.strip()

        quiet = herald("channels", "create", "--gateway", channel_url, *auth, "--topic", APP, "--storage-policy", "0").stdout.strip()
        answer = agent(os.path.join(devices["D"][0], "agent.sock"), {"op": "hello", "app": APP},
                       {"op": "startActivity", "attributesType": "ScoreAttributes", "attributes": {"match": 2},
                        "contentState": {"home": 0}, "pushType": {"channel": quiet}})[1]
        check("device D: an activity on a storage-policy-0 channel starts", answer["ok"], answer)
        wait_for("device D to subscribe to the policy-0 channel", lambda: event(devices["D"][1], "subscribed", lambda e: e.get("channel") == quiet))
        processes["D"].terminate()
        processes["D"].wait(timeout=20)
        away = [broadcast(channel, {"home": 6}), broadcast(channel, {"home": 7})]
        unkept = broadcast(quiet, {"home": 1})
        for sent in away:
            wait_for("device B's broadcast while D is away", lambda: event(devices["B"][1], "activity-updated", lambda e: e.get("apns-id") == sent))
        jwt = herald("keys", "jwt", "--key", key, "--key-id", key_id, "--team", TEAM).stdout.strip()

        def counts(apns_id):
            code, body = curl("--cacert", ca, "-H", f"authorization: bearer {jwt}", f"{provider_url}/3/notifications/{apns_id}")
            return json.loads(body).get("counts") if code == 200 else (code, body)
        waited = wait_for("B's and C's acks of both", lambda: counts(away[1]) if counts(away[1]) == {"acked": 2, "stored": 1} else None)
        check("while D is away: the newest broadcast waits for it (receipt: acked 2, stored 1)", waited == {"acked": 2, "stored": 1}, waited)
        check("... and the older one is replaced for it (acked 2, replaced 1)", counts(away[0]) == {"acked": 2, "replaced": 1}, counts(away[0]))
        back = os.path.join(work, "device-D-back.jsonl")
        run_device("D", back)
        newest = wait_for("device D, back, to get the newest broadcast", lambda: event(back, "activity-updated", lambda e: e.get("apns-id") == away[1]))
        check("a subscriber that was away gets the newest broadcast of a policy-1 channel", newest["activity"]["content-state"] == {"home": 7}, newest)
        wait_for("device D to subscribe again", lambda: event(back, "subscribed", lambda e: e.get("channel") == quiet))
        # A barrier: a broadcast sent now arrives after anything the connection's load handed over.
        after = broadcast(channel, {"home": 8})
        wait_for("device D's broadcast after its return", lambda: event(back, "activity-updated", lambda e: e.get("apns-id") == after))
        got = [e.get("apns-id") for e in events(back) if e.get("apns-id") in (away[0], unkept)]
        check("... and neither the older one it missed nor a policy-0 broadcast sent while it was away", got == [], got)
        acked = wait_for("D's ack", lambda: counts(away[1]) if counts(away[1]) == {"acked": 3} else None)
        check("once D is back: the newest broadcast's receipt counts three acks", acked == {"acked": 3}, acked)

        # --- Broadcast-only reasons (reference §2) over curl.
        jwt = herald("keys", "jwt", "--key", key, "--key-id", key_id, "--team", TEAM).stdout.strip()
        base = ["--cacert", ca, "-H", f"authorization: bearer {jwt}"]
        broadcast_url = f"{provider_url}/4/broadcasts/apps/{APP}"
        body = '{"aps":{"event":"update","timestamp":1,"content-state":{}}}'
        la = ["-H", "apns-push-type: LiveActivity"]
        cases = [
            ("no apns-channel-id", [*la, "-d", body], 400, "MissingChannelId"),
            ("apns-channel-id not base64 of 16 bytes", [*la, "-H", "apns-channel-id: nope", "-d", body], 400, "BadChannelId"),
            ("a channel never created", [*la, "-H", "apns-channel-id: AAAAAAAAAAAAAAAAAAAAAA==", "-d", body], 400, "ChannelNotRegistered"),
            ("no apns-push-type", ["-H", f"apns-channel-id: {channel}", "-d", body], 400, "MissingPushType"),
            ("apns-push-type alert", ["-H", "apns-push-type: alert", "-H", f"apns-channel-id: {channel}", "-d", body], 400, "InvalidPushType"),
            ("apns-topic of another app", [*la, "-H", f"apns-channel-id: {channel}", "-H", "apns-topic: com.example.other", "-d", body], 400, "TopicMismatch"),
            ("a payload that is not JSON", [*la, "-H", f"apns-channel-id: {channel}", "-d", "not json"], 400, "BadRequestPayload"),
            ("an empty payload", [*la, "-H", f"apns-channel-id: {channel}", "-X", "POST"], 400, "PayloadEmpty"),
        ]
        for name, args, status, reason in cases:
            code, text = curl(*base, *args, broadcast_url)
            check(f"broadcast with {name}: {status} {reason}", code == status and json.loads(text or "{}").get("reason") == reason, (code, text))
        code, text = curl(*base, *la, "-H", f"apns-channel-id: {channel}", "-d", body, f"{provider_url}/4/broadcasts/apps/com.example.notours")
        check("broadcast for another team's app: 400 TopicDisallowed", code == 400 and json.loads(text).get("reason") == "TopicDisallowed", (code, text))

        manage = f"{channel_url}/1/apps/{APP}/channels"
        code, text = curl(*base, "-d", '{"message-storage-policy":7,"push-type":"LiveActivity"}', manage)
        check("channel create with storage policy 7: 400 BadRequestParams", code == 400 and json.loads(text).get("reason") == "BadRequestParams", (code, text))
        code, text = curl(*base, "-H", f"apns-channel-id: {channel}", manage)
        check("channel read: 200 with its storage policy", code == 200 and json.loads(text) == {"message-storage-policy": 1, "push-type": "LiveActivity"}, (code, text))
        code, text = curl(*base, manage)
        check("channel read without apns-channel-id: 400 MissingChannelId", code == 400 and json.loads(text).get("reason") == "MissingChannelId", (code, text))
        code, text = curl(*base, "-X", "PUT", "-H", f"apns-channel-id: {channel}", manage)
        check("PUT on channels: 405 MethodNotAllowed", code == 405, (code, text))
        code, text = curl(*base, "-X", "DELETE", "-H", f"apns-channel-id: {channel}", manage)
        check("channel delete: 204", code == 204, (code, text))
        code, text = curl(*base, "-H", f"apns-channel-id: {channel}", manage)
        check("a deleted channel: 400 ChannelNotRegistered", code == 400 and json.loads(text).get("reason") == "ChannelNotRegistered", (code, text))
        code, text = curl(*base, *la, "-H", f"apns-channel-id: {channel}", "-d", body, broadcast_url)
        check("broadcast on a deleted channel: 400 ChannelNotRegistered", code == 400 and json.loads(text).get("reason") == "ChannelNotRegistered", (code, text))
        code, text = curl("--cacert", ca, manage.replace("/channels", "/all-channels"))
        check("channel management without a token: 403 MissingProviderToken", code == 403 and json.loads(text).get("reason") == "MissingProviderToken", (code, text))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    run("liveactivity", main)
