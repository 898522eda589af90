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
- as KDE's connector (KUnifiedPush) and UnifiedPush's Flutter connector call it: the
  distributor's objects answer org.freedesktop.DBus.Introspectable (the tree from /, and
  Distributor2 at /org/unifiedpush/Distributor, which KDE reads to choose the API version) and
  org.freedesktop.DBus.Peer (Ping, GetMachineId); Unregister answers an empty a{sv};
- a registration is bound to the caller: Register for a service name the caller does not own is
  AccessDenied; a malformed argument is InvalidArgs; a VAPID key that is not one is
  REGISTRATION_FAILED with VAPID_REQUIRED;
- GET on the endpoint answers UnifiedPush's discovery, {"unifiedpush":{"version":1}};
- a connector that never answers Message does not stop the distributor from serving; after 10 s
  the message is left unacked, and it is handed over again as soon as the app registers again
  (as apps do at their start), without the device reconnecting;
- Unregister leads to Unregistered, and the endpoint answers 410 Gone.

    dbus-run-session -- python3 Tests/webpush/unifiedpush.py PATH/TO/herald
"""
import json
import os
import sys
import tempfile
import threading
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from harness import check, json_events, read, run, start, wait_for  # noqa: E402
from useragent import b64d, b64e, refusal  # noqa: E402

import http_ece
import httpx
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
    """The app's connector: owns SERVICE, records what the distributor calls, and calls the
    distributor from the same connection (the name it owns), as a connector library does."""

    def __init__(self):
        self.connection = open_dbus_connection(bus="SESSION")
        reply = self.connection.send_and_get_reply(message_bus.RequestName(SERVICE))
        assert reply.body[0] == 1, reply.body
        self.calls = []
        self.replies = {}
        self.serial = 100000  # ours, far from jeepney's own counter
        self.silent = False  # True: Message calls are recorded and never answered
        self.lock = threading.Condition()
        threading.Thread(target=self._serve, daemon=True).start()

    def call(self, message, timeout=15):
        """Sends a method call and waits for its return or error (the reader thread gets it)."""
        with self.lock:
            self.serial += 1
            serial = self.serial
        self.connection.send(message, serial=serial)
        with self.lock:
            self.lock.wait_for(lambda: serial in self.replies, timeout=timeout)
            return self.replies.pop(serial)

    def _serve(self):
        while True:
            try:
                message = self.connection.receive()
            except Exception:
                return
            header = message.header
            if header.message_type in (MessageType.method_return, MessageType.error):
                with self.lock:
                    self.replies[header.fields.get(5)] = message  # HeaderFields.reply_serial
                    self.lock.notify_all()
                continue
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


def register(connector, **fields):
    """Distributor2.Register from the connector's own name: the answer's a{sv}, or the D-Bus error's name."""
    args = {key: ("s", value) for key, value in fields.items()}
    reply = connector.call(new_method_call(DISTRIBUTOR, "Register", "a{sv}", (args,)))
    if reply.header.message_type == MessageType.error:
        return {"error": reply.header.fields.get(4), "message": reply.body[0] if reply.body else ""}  # HeaderFields.error_name
    return {key: value[1] for key, value in reply.body[0].items()}


def standard(client, path, interface, member, signature=None, body=()):
    """A call to a standard interface of the distributor's connection: (signature, body) or the error's name."""
    address = DBusAddress(path, bus_name="org.unifiedpush.Distributor.herald", interface=interface)
    reply = client.send_and_get_reply(new_method_call(address, member, signature, body), timeout=15)
    if reply.header.message_type == MessageType.error:
        return ("error", reply.header.fields.get(4))
    return (reply.header.fields.get(8), reply.body)  # HeaderFields.signature


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

    # What KDE's connector reads first: introspection of the tree and of the distributor's object.
    root = standard(client, "/", "org.freedesktop.DBus.Introspectable", "Introspect")
    check("Introspect at / shows the tree (a child node org)", root[0] == "s" and '<node name="org"/>' in root[1][0], str(root))
    xml = standard(client, "/org/unifiedpush/Distributor", "org.freedesktop.DBus.Introspectable", "Introspect")
    check("Introspect at /org/unifiedpush/Distributor names org.unifiedpush.Distributor2 with a{sv} in and out, and Peer",
          xml[0] == "s" and 'interface name="org.unifiedpush.Distributor2"' in xml[1][0] and 'type="a{sv}" direction="out"' in xml[1][0]
          and "org.freedesktop.DBus.Peer" in xml[1][0], str(xml)[:300])
    check("Peer.Ping is answered", standard(client, "/org/unifiedpush/Distributor", "org.freedesktop.DBus.Peer", "Ping") == (None, ()))
    machine = standard(client, "/", "org.freedesktop.DBus.Peer", "GetMachineId")
    check("Peer.GetMachineId answers 32 hex digits", machine[0] == "s" and len(machine[1][0]) == 32, str(machine))
    check("a path that is not there is UnknownObject",
          standard(client, "/nothing", "org.freedesktop.DBus.Introspectable", "Introspect") == ("error", "org.freedesktop.DBus.Error.UnknownObject"))

    connector = Connector()
    vapid = Vapid02()
    vapid.generate_keys()
    key = b64urlencode(vapid.public_key.public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint))
    token = str(uuid.uuid4())
    # Another connection (another app) registering in this app's name is refused.
    args = {"service": ("s", SERVICE), "token": ("s", str(uuid.uuid4()))}
    stolen = client.send_and_get_reply(new_method_call(DISTRIBUTOR, "Register", "a{sv}", (args,)), timeout=15)
    check("Register for a name the caller does not own is AccessDenied (an app registers only itself)",
          stolen.header.message_type == MessageType.error and stolen.header.fields.get(4) == "org.freedesktop.DBus.Error.AccessDenied",
          str(stolen.header.fields.get(4)))
    answer = register(connector, service=SERVICE, token=token, vapid=key, description="test account")
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
    discovery = httpx.get(endpoint, verify=ca)
    check("GET on the endpoint answers UnifiedPush's discovery", discovery.status_code == 200
          and discovery.json() == {"unifiedpush": {"version": 1}}, f"{discovery.status_code} {discovery.text}")
    wait_for("the ack's event", lambda: '"event":"unifiedpush-message"' in read(log))

    again = register(connector, service=SERVICE, token=token, vapid=key)
    wait_for("NewEndpoint again", lambda: len(connector.called("NewEndpoint")) >= 2)
    check("registering again with the same token gives the same endpoint", again.get("success") == "REGISTRATION_SUCCEEDED"
          and connector.called("NewEndpoint")[-1].get("endpoint") == endpoint)
    failed = register(connector, token=str(uuid.uuid4()))
    check("a registration without a service is InvalidArgs, naming it", failed.get("error") == "org.freedesktop.DBus.Error.InvalidArgs"
          and "service" in str(failed.get("message")), json.dumps(failed))
    bad = register(connector, service=SERVICE, token=str(uuid.uuid4()), vapid="AAAA")
    check("a VAPID key that is not one fails with REGISTRATION_FAILED and VAPID_REQUIRED", bad.get("success") == "REGISTRATION_FAILED"
          and bad.get("reason") == "VAPID_REQUIRED", json.dumps(bad))

    # A connector that takes the call and never answers: the distributor waits 10 s for it, keeps
    # serving meanwhile, does not ack, and the message comes again at the next connection.
    connector.silent = True
    pywebpush.webpush(subscription, data="to a silent connector", vapid_private_key=vapid,
                      vapid_claims={"sub": "mailto:ops@example.com"}, ttl=600)
    wait_for("the call to the silent connector", lambda: len(connector.called("Message")) >= 2)
    quick = register(connector, service=SERVICE, token=token, vapid=key)
    check("while a connector is silent the distributor still answers Register", quick.get("success") == "REGISTRATION_SUCCEEDED", json.dumps(quick))
    missed = wait_for("the not-delivered event", lambda: next((e for e in json_events(log) if e.get("event") == "unifiedpush-not-delivered"), None), timeout=30)
    check("a connector that never answers Message: not delivered (not acked), and said why",
          "did not take it" in missed.get("why", "") and missed.get("id") == connector.called("Message")[-1].get("id"), json.dumps(missed))
    connector.silent = False
    # The app comes back and registers again, as at its start: what it missed is handed over now,
    # on the bus, not at the device's next connection to the gateway.
    back = register(connector, service=SERVICE, token=token, vapid=key)
    again = wait_for("the message again", lambda: [m for m in connector.called("Message") if m.get("id") == missed.get("id")][1:])
    plaintext = http_ece.decrypt(bytes(again[0].get("message", b"")), private_key=private, auth_secret=auth, version="aes128gcm")
    check("the message the silent connector missed is handed over when the app registers again, intact",
          back.get("success") == "REGISTRATION_SUCCEEDED" and plaintext == b"to a silent connector", repr(plaintext))
    wait_for("its ack", lambda: any(e.get("event") == "unifiedpush-message" and e.get("id") == missed.get("id") for e in json_events(log)))

    foreign = client.send_and_get_reply(new_method_call(DISTRIBUTOR, "Unregister", "a{sv}", ({"token": ("s", token)},)), timeout=15)
    check("Unregister of another app's token is AccessDenied", foreign.header.fields.get(4) == "org.freedesktop.DBus.Error.AccessDenied",
          str(foreign.header.fields.get(4)))
    done = connector.call(new_method_call(DISTRIBUTOR, "Unregister", "a{sv}", ({"token": ("s", token)},)))
    check("Unregister answers an empty a{sv}, as the specification's signature says",
          done.header.message_type == MessageType.method_return and done.header.fields.get(8) == "a{sv}" and done.body == ({},),
          f"{done.header.fields.get(8)} {done.body}")
    gone = wait_for("Unregistered", lambda: connector.called("Unregistered"))
    check("Unregister is confirmed with Unregistered", gone[0].get("token") == token, json.dumps(gone))
    wait_for("the gateway's unsubscription", lambda: '"event":"webpush-endpoint-removed"' in read(log))
    status = refusal(lambda: pywebpush.webpush(subscription, data="too late", vapid_private_key=vapid,
                                               vapid_claims={"sub": "mailto:ops@example.com"}, ttl=600))
    check("after Unregister, the endpoint answers 410 Gone", status == 410, str(status))


run("UnifiedPush", main)
