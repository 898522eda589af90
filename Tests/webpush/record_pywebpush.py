#!/usr/bin/env python3
"""Records push requests as pywebpush (the sender Django apps and many Mastodon-era servers use)
writes them, for Tests/HeraldCoreTests/WebPushInteropTests.swift: a user agent key made here, a
VAPID key made by py_vapid, and for each content encoding the request's headers and body, printed
as Swift. Run it again to refresh the fixtures:

    python3 Tests/webpush/record_pywebpush.py > /tmp/fixtures.swift
"""
import base64
import os
import re
import tempfile

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from py_vapid import Vapid
from pywebpush import webpush

import pywebpush


def b64e(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


ua = ec.generate_private_key(ec.SECP256R1())
public = ua.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
auth = os.urandom(16)
endpoint = "https://localhost:8445/wpush/0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
subscription = {"endpoint": endpoint, "keys": {"p256dh": b64e(public), "auth": b64e(auth)}}
vapid = Vapid()
vapid.generate_keys()
vapid_public = vapid.public_key.public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)

print(f"// Recorded with pywebpush {pywebpush.__version__ if hasattr(pywebpush, '__version__') else '2.x'} by Tests/webpush/record_pywebpush.py.")
print(f'static let uaPrivate = "{b64e(ua.private_numbers().private_value.to_bytes(32, "big"))}"')
print(f'static let auth = "{b64e(auth)}"')
print(f'static let endpoint = "{endpoint}"')
print(f'static let vapidPublic = "{b64e(vapid_public)}"')
for encoding in ("aes128gcm", "aesgcm"):
    work = tempfile.mkdtemp()
    os.chdir(work)
    command = webpush(subscription, data='{"title":"from pywebpush"}', vapid_private_key=vapid,
                      vapid_claims={"sub": "mailto:ops@example.com"}, content_encoding=encoding, curl=True, ttl=3600,
                      headers={"Urgency": "low", "Topic": "pywebpush"})
    headers = re.findall(r'-H "([^:]+): ([^"]*)"', command)
    body = open(os.path.join(work, "encrypted.data"), "rb").read()
    print(f"static let {encoding}Headers: [(name: String, value: String)] = [")
    for name, value in headers:
        print(f'    ("{name.lower()}", "{value}"),')
    print("]")
    print(f'static let {encoding}Body = "{b64e(body)}"')
