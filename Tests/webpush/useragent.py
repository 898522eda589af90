"""A browser's push client for the Web Push tests: keys per subscription (P-256 and an auth
secret, as a user agent makes them), Mozilla's push protocol over a WebSocket (hello, register,
notification, ack, unregister), and decryption with Mozilla's `http_ece` (aes128gcm and the
older aesgcm)."""
import asyncio
import base64
import json
import os
import ssl
import time
import uuid

import http_ece
import pywebpush
import websockets
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec


def b64e(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def b64d(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def refusal(call):
    """The HTTP status pywebpush's send was refused with (-1 without a response), None if it was accepted."""
    try:
        call()
        return None
    except pywebpush.WebPushException as error:
        return error.response.status_code if error.response is not None else -1


class UserAgent:
    """A browser's push client: keys per subscription, Mozilla's WebSocket protocol."""

    def __init__(self, url, ca):
        self.url, self.ca = url, ca
        self.uaid = None
        self.keys = {}  # channel id -> (private key, auth secret)
        self.ws = None
        self.pending = []

    async def connect(self):
        context = ssl.create_default_context(cafile=self.ca)
        self.ws = await websockets.connect(self.url, ssl=context, subprotocols=["push-notification"])
        hello = {"messageType": "hello", "use_webpush": True, "broadcasts": {}}
        if self.uaid:
            hello["uaid"] = self.uaid
        await self.ws.send(json.dumps(hello))
        reply = await self.next("hello")
        self.uaid = reply["uaid"]
        return reply

    async def next(self, kind, timeout=10):
        for i, message in enumerate(self.pending):
            if message.get("messageType") == kind:
                return self.pending.pop(i)
        deadline = time.monotonic() + timeout
        while True:
            message = json.loads(await asyncio.wait_for(self.ws.recv(), max(0.1, deadline - time.monotonic())))
            if message.get("messageType") == kind:
                return message
            self.pending.append(message)

    async def subscribe(self, application_server_key=None):
        channel = str(uuid.uuid4())
        private = ec.generate_private_key(ec.SECP256R1())
        auth = os.urandom(16)
        self.keys[channel] = (private, auth)
        register = {"messageType": "register", "channelID": channel}
        if application_server_key:
            register["key"] = application_server_key
        await self.ws.send(json.dumps(register))
        reply = await self.next("register")
        public = private.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
        return reply, {"endpoint": reply.get("pushEndpoint"), "keys": {"p256dh": b64e(public), "auth": b64e(auth)}}

    def decrypt(self, notification):
        private, auth = self.keys[notification["channelID"]]
        if "data" not in notification:
            return b""
        headers = notification["headers"]
        if headers["encoding"] == "aesgcm":
            salt = [p.split("=", 1)[1] for p in headers["encryption"].split(";") if p.strip().startswith("salt=")][0]
            dh = [p.split("=", 1)[1] for p in headers["crypto_key"].split(";") if p.strip().startswith("dh=")][0]
            return http_ece.decrypt(b64d(notification["data"]), salt=b64d(salt), dh=b64d(dh), private_key=private,
                                    auth_secret=auth, version="aesgcm")
        return http_ece.decrypt(b64d(notification["data"]), private_key=private, auth_secret=auth, version="aes128gcm")

    async def ack(self, notification):
        await self.ws.send(json.dumps({"messageType": "ack", "updates": [
            {"channelID": notification["channelID"], "version": notification["version"], "code": 100}]}))
