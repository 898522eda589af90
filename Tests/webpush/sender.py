#!/usr/bin/env python3
"""`herald push send --webpush` against an independent push service stand-in.

A local HTTP server plays the push service: it records each request, answers 201 with a
Location (410 for an unsubscribed path). What Herald sent is then checked with independent code:
the VAPID token's ES256 signature with `cryptography`, the body decrypted with Mozilla's
`http_ece` (RFC 8291 / aes128gcm) using a user agent key made here.

    python3 Tests/webpush/sender.py PATH/TO/herald
"""
import base64
import http.server
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

import http_ece
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

HERALD = os.path.abspath(sys.argv[1])
failures = []


def check(name, ok, detail=""):
    print(("ok   " if ok else "FAIL ") + name + ("" if ok else f": {detail}"))
    if not ok:
        failures.append(name)


def b64d(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def b64e(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


received = []


class PushService(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        received.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
        if self.path.endswith("/busy") and sum(1 for r in received if r[0] == self.path) == 1:
            self.send_response(429)
            self.send_header("Retry-After", "0")
            self.send_header("Content-Length", "4")
            self.end_headers()
            self.wfile.write(b"busy")
            return
        if self.path.endswith("/broken"):
            self.send_response(503)
            self.send_header("Retry-After", "0")
            self.send_header("Content-Length", "4")
            self.end_headers()
            self.wfile.write(b"down")
            return
        if self.path.endswith("/gone"):
            self.send_response(410)
            self.send_header("Content-Length", "12")
            self.end_headers()
            self.wfile.write(b"unsubscribed")
            return
        self.send_response(201)
        self.send_header("Location", f"http://127.0.0.1:{self.server.server_port}/m/{len(received)}")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), PushService)
threading.Thread(target=server.serve_forever, daemon=True).start()
origin = f"http://127.0.0.1:{server.server_port}"

work = tempfile.mkdtemp(prefix="herald-webpush-sender-")
ua_key = ec.generate_private_key(ec.SECP256R1())
ua_public = ua_key.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
auth = os.urandom(16)


def subscription(path):
    file = os.path.join(work, path.strip("/").replace("/", "-") + ".json")
    with open(file, "w") as f:
        json.dump({"endpoint": origin + path, "keys": {"p256dh": b64e(ua_public), "auth": b64e(auth)}}, f)
    return file


def herald(*args, stdin=None):
    return subprocess.run([HERALD, *args], capture_output=True, text=True, timeout=60, input=stdin)


vapid_file = os.path.join(work, "vapid.pem")
made = herald("keys", "vapid", "--out", vapid_file)
check("herald keys vapid writes a key and prints its public key", made.returncode == 0 and len(b64d(made.stdout.strip())) == 65, made.stderr)
application_server_key = made.stdout.strip()
check("the private key file is mode 0600", oct(os.stat(vapid_file).st_mode & 0o777) == "0o600")
again = herald("keys", "vapid", "--out", vapid_file)
check("an existing key file is never overwritten", again.returncode != 0 and "already exists" in again.stderr, again.stderr)


def verify_vapid(headers, now):
    scheme, _, rest = headers.get("authorization", "").partition(" ")
    params = dict(p.strip().split("=", 1) for p in rest.split(","))
    if scheme != "vapid" or params.get("k") != application_server_key:
        return f"authorization {headers.get('authorization')}"
    header_b64, claims_b64, signature_b64 = params["t"].split(".")
    signature = b64d(signature_b64)
    public = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), b64d(params["k"]))
    der = encode_dss_signature(int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big"))
    try:
        public.verify(der, f"{header_b64}.{claims_b64}".encode(), ec.ECDSA(hashes.SHA256()))
    except Exception as e:  # noqa: BLE001
        return f"signature: {e!r}"
    claims = json.loads(b64d(claims_b64))
    if json.loads(b64d(header_b64)).get("alg") != "ES256":
        return "alg"
    if claims.get("aud") != origin:
        return f"aud {claims.get('aud')} != {origin}"
    if not (now < claims.get("exp", 0) <= now + 86400 + 60):
        return f"exp {claims.get('exp')}"
    if claims.get("sub") != "mailto:ops@example.com":
        return f"sub {claims.get('sub')}"
    return None


# A Declarative Web Push message built from --title and --alert, with every option.
before = int(time.time())
sent = herald("push", "send", "--webpush", subscription("/wpush/one"), "--vapid-key", vapid_file, "--vapid-subject", "mailto:ops@example.com",
              "--title", "Herald", "--alert", "Hello from Herald", "--navigate", "https://example.com/inbox", "--badge", "2", "--ttl", "60", "--urgency", "high",
              "--webpush-topic", "inbox_1")
check("push send --webpush answers with the message's Location", sent.returncode == 0 and sent.stdout.strip() == f"{origin}/m/1", sent.stdout + sent.stderr)
path, headers, body = received[-1]
check("it POSTs to the endpoint's path", path == "/wpush/one", path)
check("TTL, Urgency and Topic as given", (headers.get("ttl"), headers.get("urgency"), headers.get("topic")) == ("60", "high", "inbox_1"), headers)
check("Content-Encoding aes128gcm", headers.get("content-encoding") == "aes128gcm", headers)
problem = verify_vapid(headers, before)
check("the VAPID token verifies independently (ES256 by k, aud = the endpoint's origin, exp within 24 h, sub)", problem is None, problem)
try:
    plaintext = http_ece.decrypt(body, private_key=ua_key, auth_secret=auth, version="aes128gcm")
    message = json.loads(plaintext)
except Exception as e:  # noqa: BLE001
    message = repr(e)
check("http_ece decrypts the body to the Declarative Web Push message (with --badge as app_badge)", message == {
    "web_push": 8030, "notification": {"title": "Herald", "body": "Hello from Herald", "navigate": "https://example.com/inbox"}, "app_badge": 2}, message)
check("the body is at most 4096 bytes", len(body) <= 4096, len(body))

# A payload file, sent as it is; and a push without a body.
payload_file = os.path.join(work, "payload.bin")
with open(payload_file, "w") as f:
    f.write('{"kind":"sync","n":42}')
sent = herald("push", "send", "--webpush", subscription("/wpush/two"), "--vapid-key", vapid_file, "--payload", payload_file)
plaintext = http_ece.decrypt(received[-1][2], private_key=ua_key, auth_secret=auth, version="aes128gcm") if sent.returncode == 0 else b""
check("--payload FILE arrives byte for byte", plaintext == b'{"kind":"sync","n":42}', sent.stderr)
# A payload meant to be declarative with a sender's mistake: named, and sent as written.
mistaken_file = os.path.join(work, "mistaken.json")
with open(mistaken_file, "w") as f:
    f.write('{"web_push":8030,"notification":{"title":"t","navigate":"https://example.com/","app_badge":1}}')
linted = herald("push", "send", "--webpush", subscription("/wpush/two"), "--vapid-key", vapid_file, "--payload", mistaken_file)
check("the lint names app_badge inside notification, and the message is still sent",
      linted.returncode == 0 and "app_badge" in linted.stderr and "top level" in linted.stderr, linted.stderr)
check("TTL defaults to a day, Urgency to normal", (received[-1][1].get("ttl"), received[-1][1].get("urgency")) == ("86400", "normal"), received[-1][1])
sent = herald("push", "send", "--webpush", "-", "--vapid-key", vapid_file, stdin=open(subscription("/wpush/three")).read())
check("no payload: a push without a body (no Content-Encoding), subscription from standard input",
      sent.returncode == 0 and received[-1][2] == b"" and "content-encoding" not in received[-1][1], (sent.stderr, received[-1][1]))

# Refusals: the service's status and reason, exit 1; bad input refused before sending.
count = len(received)
gone = herald("push", "send", "--webpush", subscription("/wpush/gone"), "--vapid-key", vapid_file)
check("410 from the service: printed with its reason, exit 1, not retried",
      gone.returncode == 1 and gone.stdout.strip() == "410 unsubscribed" and len(received) == count + 1, (gone.stdout, gone.stderr, len(received) - count))
count = len(received)
busy = herald("push", "send", "--webpush", subscription("/wpush/busy"), "--vapid-key", vapid_file, "--alert", "again", "--navigate", "https://example.com/")
check("429 with Retry-After is retried, then accepted", busy.returncode == 0 and len(received) == count + 2, (busy.stdout, busy.stderr, len(received) - count))
count = len(received)
broken = herald("push", "send", "--webpush", subscription("/wpush/broken"), "--vapid-key", vapid_file)
check("503 is retried three times in all, then reported", broken.returncode == 1 and broken.stdout.startswith("503 down") and len(received) == count + 3,
      (broken.stdout, len(received) - count))
count = len(received)
# Many subscriptions at once (a JSON array, or one object a line): one line each, a summary, exit 1 if any was refused.
many = [json.load(open(subscription(p))) for p in ("/wpush/m1", "/wpush/m2", "/wpush/m3/gone")]
array_file = os.path.join(work, "many.json")
with open(array_file, "w") as f:
    json.dump(many, f)
count = len(received)
fan = herald("push", "send", "--webpush", array_file, "--vapid-key", vapid_file, "--payload", payload_file)
lines = sorted(fan.stdout.strip().splitlines())
check("a JSON array of 3: each answered on its own line, prefixed by its endpoint; exit 1 for the refused one",
      fan.returncode == 1 and len(lines) == 3 and lines[2] == f"{origin}/wpush/m3/gone 410 unsubscribed"
      and all(line.startswith(f"{origin}/wpush/m") for line in lines) and "2 accepted, 1 refused, 0 unanswered" in fan.stderr,
      (fan.returncode, fan.stdout, fan.stderr))
bodies = {path: body for path, _, body in received[count:]}
check("each message is encrypted to its own subscription (different ciphertexts, each decrypts)",
      len(set(bodies.values())) == 3 and all(http_ece.decrypt(b, private_key=ua_key, auth_secret=auth, version="aes128gcm") == b'{"kind":"sync","n":42}'
                                                for p, b in bodies.items() if not p.endswith("gone")), list(bodies))
lines_file = os.path.join(work, "many.jsonl")
with open(lines_file, "w") as f:
    f.write("\n".join(json.dumps(s) for s in many[:2]) + "\n\n")
fan = herald("push", "send", "--webpush", lines_file, "--vapid-key", vapid_file)
check("one object a line: both accepted, exit 0", fan.returncode == 0 and len(fan.stdout.strip().splitlines()) == 2, (fan.stdout, fan.stderr))
with open(lines_file, "w") as f:
    f.write(json.dumps(many[0]) + "\n{\"endpoint\": 5}\n")
fan = herald("push", "send", "--webpush", lines_file, "--vapid-key", vapid_file)
check("a bad line is named and nothing is sent", fan.returncode != 0 and "line 2" in fan.stderr, fan.stderr)
count = len(received)
bad = os.path.join(work, "bad.json")
with open(bad, "w") as f:
    json.dump({"endpoint": origin + "/x", "keys": {"p256dh": "AAAA", "auth": b64e(auth)}}, f)
refused = herald("push", "send", "--webpush", bad, "--vapid-key", vapid_file)
check("a subscription whose p256dh is not a P-256 key is refused before sending", refused.returncode != 0 and "p256dh" in refused.stderr, refused.stderr)
big = os.path.join(work, "big.bin")
with open(big, "w") as f:
    f.write("x" * 3994)
refused = herald("push", "send", "--webpush", subscription("/wpush/four"), "--vapid-key", vapid_file, "--payload", big)
check("3,994 bytes of plaintext is refused (3,993 is the most one message carries)", refused.returncode != 0 and "3993" in refused.stderr, refused.stderr)
mixed = herald("push", "send", "--webpush", subscription("/wpush/five"), "--vapid-key", vapid_file, "--token", "ab" * 32, "--alert", "x")
check("APNs flags with --webpush are refused", mixed.returncode != 0 and "do not apply" in mixed.stderr, mixed.stderr)
nokey = herald("push", "send", "--webpush", subscription("/wpush/six"))
check("--webpush without --vapid-key is refused", nokey.returncode != 0 and "--vapid-key" in nokey.stderr, nokey.stderr)
nonav = herald("push", "send", "--webpush", subscription("/wpush/seven"), "--vapid-key", vapid_file, "--alert", "x")
check("a Declarative message without --navigate is refused", nonav.returncode != 0 and "--navigate" in nonav.stderr, nonav.stderr)
badnav = herald("push", "send", "--webpush", subscription("/wpush/eight"), "--vapid-key", vapid_file, "--alert", "x", "--navigate", "https://example.com:99999/")
check("--navigate that the URL Standard's parser refuses (port 99999) is refused", badnav.returncode != 0 and "must be a URL" in badnav.stderr, badnav.stderr)
check("nothing was sent for the refused ones", len(received) == count, len(received) - count)

server.shutdown()
print(f"webpush sender: {'all checks passed' if not failures else f'{len(failures)} failed'}")
sys.exit(1 if failures else 0)
