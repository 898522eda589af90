#!/usr/bin/env python3
"""UnifiedPush on Linux, end to end: `herald device run --unifiedpush` is the distributor on a
private session bus, a connector written here with jeepney (a D-Bus library from PyPI) is the
app, pywebpush is its application server, and Mozilla's http_ece decrypts what the connector
receives. The UnifiedPush D-Bus specification 0.3.0 is followed on both sides:

- the connector owns its name, serves org.unifiedpush.Connector2 at /org/unifiedpush/Connector,
  calls org.unifiedpush.Distributor2.Register({service, token, vapid, description}) on
  org.unifiedpush.Distributor.herald and gets REGISTRATION_SUCCEEDED, then NewEndpoint with a
  Web Push endpoint on the gateway;
- pywebpush encrypts to the keys the app made and pushes; the connector's Message gets the
  ciphertext as it was posted, which decrypts to the plaintext; registering again with the same
  token gives the same endpoint again;
- a registration without a service name fails with REGISTRATION_FAILED;
- a connector that never answers Message does not stop the distributor from serving; after 10 s
  the message is left unacked, and it comes again when the device next connects;
- Unregister leads to Unregistered, and the endpoint answers 410 Gone.

    dbus-run-session -- python3 Tests/webpush/unifiedpush.py PATH/TO/herald
"""
import json
import os
import signal
import sys
import tempfile
import threading
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from harness import check, json_events, read, run, start, wait_for  # noqa: E402
from useragent import b64d, b64e, refusal  # noqa: E402

import http_ece
import pywebpush
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from jeepney import DBusAddress, MessageType, new_method_call, new_method_return
from jeepney.bus_messages import message_bus
from jeepney.io.blocking import open_dbus_connection
from py_vapid import Vapid02, b64urlencode

HERALD = os.path.abspath(sys.argv[1])
WORK = tempfile.mkdtemp(prefix="herald-unifiedpush-")
SERVICE = "org.example.UPTest"
DISTRIBUTOR = DBusAddress("/org/unifiedpush/Distributor", bus_name="org.unifiedpush.Distributor.herald",
                          interface="org.unifiedpush.Distributor2")


class Connector:
    """The app's connector: owns SERVICE and records what the distributor calls."""

    def __init__(self):
        self.connection = open_dbus_connection(bus="SESSION")
        reply = self.connection.send_and_get_reply(message_bus.RequestName(SERVICE))
        assert reply.body[0] == 1, reply.body
        self.calls = []
        self.silent = False  # True: Message calls are recorded and never answered
        self.lock = threading.Lock()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                message = self.connection.receive()
            except Exception:
                return
            header = message.header
            if header.message_type != MessageType.method_call:
                continue
            member = header.fields.get(3)  # HeaderFields.member
            path = header.fields.get(1)
            interface = header.fields.get(2)
            args = {key: value[1] for key, value in message.body[0].items()} if message.body else {}
            with self.lock:
                self.calls.append((str(path), interface, member, args))
            if member == "Message" and not self.silent:
                self.connection.send(new_method_return(message, "a{sv}", ({"id": ("s", args.get("id", ""))},)))

    def called(self, member, where=lambda a: True):
        with self.lock:
            return [args for (path, interface, m, args) in self.calls
                    if m == member and path == "/org/unifiedpush/Connector" and interface == "org.unifiedpush.Connector2" and where(args)]


def register(client, **fields):
    args = {key: ("s", value) for key, value in fields.items()}
    reply = client.send_and_get_reply(new_method_call(DISTRIBUTOR, "Register", "a{sv}", (args,)), timeout=15)
    return {key: value[1] for key, value in reply.body[0].items()}


def main():
    check("a private session bus for the test", "DBUS_SESSION_BUS_ADDRESS" in os.environ)
    out = os.path.join(WORK, "gateway.json")
    start([HERALD, "gateway", "--data-dir", os.path.join(WORK, "gw"), "--provider-port", "0", "--device-port", "0", "--webpush-port", "0"],
          stdout=open(out, "w"), stderr=open(os.path.join(WORK, "gateway.err"), "w"))
    ports = json.loads(wait_for("the gateway", lambda: read(out).splitlines()[0] if read(out).strip() else None))
    ca = ports["ca"]
    os.environ["REQUESTS_CA_BUNDLE"] = ca
    log = os.path.join(WORK, "device.jsonl")
    device_args = [HERALD, "device", "run", "--data-dir", os.path.join(WORK, "device"), "--gateway", f"wss://localhost:{ports['device_port']}",
                   "--ca", ca, "--unifiedpush", "--json"]
    device = start(device_args, stdout=open(log, "w"), stderr=open(os.path.join(WORK, "device.err"), "w"))
    wait_for("the device's connection", lambda: '"event":"connected"' in read(log))

    client = open_dbus_connection(bus="SESSION")
    names = client.send_and_get_reply(message_bus.ListNames()).body[0]
    wait_for("the distributor's name", lambda: "org.unifiedpush.Distributor.herald" in
             client.send_and_get_reply(message_bus.ListNames()).body[0])
    check("herald device run --unifiedpush owns org.unifiedpush.Distributor.herald", True, str(names))

    connector = Connector()
    vapid = Vapid02()
    vapid.generate_keys()
    key = b64urlencode(vapid.public_key.public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint))
    token = str(uuid.uuid4())
    answer = register(client, service=SERVICE, token=token, vapid=key, description="test account")
    check("Register answers REGISTRATION_SUCCEEDED", answer.get("success") == "REGISTRATION_SUCCEEDED", json.dumps(answer))
    new = wait_for("NewEndpoint", lambda: connector.called("NewEndpoint"))
    endpoint = new[0].get("endpoint", "")
    check("NewEndpoint brings the token and an endpoint on the gateway's Web Push port",
          new[0].get("token") == token and endpoint.startswith(f"https://localhost:{ports['webpush_port']}/wpush/"), json.dumps(new))

    # The app's own keys (UnifiedPush apps decrypt themselves) and pywebpush as its server.
    private = ec.generate_private_key(ec.SECP256R1())
    auth = os.urandom(16)
    public = private.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    subscription = {"endpoint": endpoint, "keys": {"p256dh": b64e(public), "auth": b64e(auth)}}
    response = pywebpush.webpush(subscription, data="hello over D-Bus", vapid_private_key=vapid,
                                 vapid_claims={"sub": "mailto:ops@example.com"}, ttl=600)
    check("pywebpush's push to the endpoint is accepted (201)", response.status_code == 201, str(response.status_code))
    messages = wait_for("Message", lambda: connector.called("Message"))
    body = bytes(messages[0].get("message", b""))
    check("Message brings the token, an id and the ciphertext as posted", messages[0].get("token") == token and messages[0].get("id")
          and len(body) > 86, json.dumps({k: (v if isinstance(v, str) else len(v)) for k, v in messages[0].items()}))
    plaintext = http_ece.decrypt(body, private_key=private, auth_secret=auth, version="aes128gcm")
    check("the app decrypts it with its own keys (RFC 8291)", plaintext == b"hello over D-Bus", repr(plaintext))
    wait_for("the ack's event", lambda: '"event":"unifiedpush-message"' in read(log))

    again = register(client, service=SERVICE, token=token, vapid=key)
    wait_for("NewEndpoint again", lambda: len(connector.called("NewEndpoint")) >= 2)
    check("registering again with the same token gives the same endpoint", again.get("success") == "REGISTRATION_SUCCEEDED"
          and connector.called("NewEndpoint")[-1].get("endpoint") == endpoint)
    failed = register(client, token=str(uuid.uuid4()))
    check("a registration without a service fails with REGISTRATION_FAILED", failed.get("success") == "REGISTRATION_FAILED"
          and failed.get("reason") == "INTERNAL_ERROR", json.dumps(failed))

    # A connector that takes the call and never answers: the distributor waits 10 s for it, keeps
    # serving meanwhile, does not ack, and the message comes again at the next connection.
    connector.silent = True
    pywebpush.webpush(subscription, data="to a silent connector", vapid_private_key=vapid,
                      vapid_claims={"sub": "mailto:ops@example.com"}, ttl=600)
    wait_for("the call to the silent connector", lambda: len(connector.called("Message")) >= 2)
    quick = register(client, service=SERVICE, token=token, vapid=key)
    check("while a connector is silent the distributor still answers Register", quick.get("success") == "REGISTRATION_SUCCEEDED", json.dumps(quick))
    missed = wait_for("the not-delivered event", lambda: next((e for e in json_events(log) if e.get("event") == "unifiedpush-not-delivered"), None), timeout=30)
    check("a connector that never answers Message: not delivered (not acked), and said why",
          "did not take it" in missed.get("why", "") and missed.get("id") == connector.called("Message")[-1].get("id"), json.dumps(missed))
    connector.silent = False
    device.send_signal(signal.SIGTERM)
    device.wait(timeout=20)
    start(device_args, stdout=open(log, "a"), stderr=open(os.path.join(WORK, "device.err"), "a"))
    again = wait_for("the message again", lambda: [m for m in connector.called("Message") if m.get("id") == missed.get("id")][1:])
    plaintext = http_ece.decrypt(bytes(again[0].get("message", b"")), private_key=private, auth_secret=auth, version="aes128gcm")
    check("the message the silent connector missed comes again at the next connection, intact", plaintext == b"to a silent connector", repr(plaintext))
    wait_for("its ack", lambda: any(e.get("event") == "unifiedpush-message" and e.get("id") == missed.get("id") for e in json_events(log)))

    client.send(new_method_call(DISTRIBUTOR, "Unregister", "a{sv}", ({"token": ("s", token)},)))
    gone = wait_for("Unregistered", lambda: connector.called("Unregistered"))
    check("Unregister is confirmed with Unregistered", gone[0].get("token") == token, json.dumps(gone))
    wait_for("the gateway's unsubscription", lambda: '"event":"webpush-unsubscribed"' in read(log))
    status = refusal(lambda: pywebpush.webpush(subscription, data="too late", vapid_private_key=vapid,
                                               vapid_claims={"sub": "mailto:ops@example.com"}, ttl=600))
    check("after Unregister, the endpoint answers 410 Gone", status == 410, str(status))


run("UnifiedPush", main)
