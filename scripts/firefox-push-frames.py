#!/usr/bin/env python3
"""Prints what a real Firefox sends a push server: the frames of Mozilla's browser push protocol
and the subscription its page gets. A developer's tool for Web Push work (docs/web-push.md), not
part of the test suite.

    scripts/firefox-push-frames.py

Needs Debian's firefox-esr and libnss3-tools (certutil), and PyPI's websockets and cryptography.
It makes a CA and a certificate for localhost, a Firefox profile that trusts the CA and names a
local wss:// server as dom.push.serverURL, serves a page on http://localhost that registers a
service worker and subscribes with RFC 8291's example key, answers hello and register as a push
service would, and prints every frame Firefox sent and the subscription (PushSubscription.toJSON()).
"""
import asyncio, datetime, http.server, json, os, shutil, ssl, subprocess, sys, tempfile, threading, time
import websockets
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

work = tempfile.mkdtemp(prefix="herald-firefox-frames-")
# A CA and a server certificate for localhost.
ca_key = ec.generate_private_key(ec.SECP256R1())
name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "probe CA")])
now = datetime.datetime.now(datetime.timezone.utc)
ca = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(ca_key.public_key())
      .serial_number(1).not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=2))
      .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True).sign(ca_key, hashes.SHA256()))
key = ec.generate_private_key(ec.SECP256R1())
cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])).issuer_name(name)
        .public_key(key.public_key()).serial_number(2).not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False).sign(ca_key, hashes.SHA256()))
open(f"{work}/ca.pem", "wb").write(ca.public_bytes(serialization.Encoding.PEM))
open(f"{work}/cert.pem", "wb").write(cert.public_bytes(serialization.Encoding.PEM))
open(f"{work}/key.pem", "wb").write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))

frames = []
reports = []

async def handler(ws):
    try:
        await serve(ws)
    except websockets.ConnectionClosed:
        pass  # Firefox was stopped


async def serve(ws):
    print("connected: subprotocol", ws.subprotocol, "path", ws.request.path, flush=True)
    async for message in ws:
        frames.append(message)
        print("<-", message, flush=True)
        m = json.loads(message)
        t = m.get("messageType")
        if t == "hello":
            reply = {"messageType": "hello", "uaid": "0123456789abcdef0123456789abcdef", "status": 200, "use_webpush": True, "broadcasts": {}}
        elif t == "register":
            reply = {"messageType": "register", "channelID": m["channelID"], "status": 200, "pushEndpoint": "https://localhost:9/wpush/abc"}
        elif m == {}:
            reply = {}
        else:
            continue
        await ws.send(json.dumps(reply))
        print("->", reply, flush=True)

PAGE = """<!doctype html><title>probe</title><script>
async function go() {
  const reg = await navigator.serviceWorker.register('/sw.js');
  await navigator.serviceWorker.ready;
  const key = 'BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4';
  for (let i = 0; i < 30; i++) {
    try {
      const sub = await Promise.race([reg.pushManager.subscribe({userVisibleOnly: true, applicationServerKey: key}),
                                      new Promise((_, no) => setTimeout(() => no(new Error('timeout')), 3000))]);
      await fetch('/report', {method: 'POST', body: JSON.stringify(sub.toJSON())});
      return;
    } catch (e) { await fetch('/report', {method: 'POST', body: JSON.stringify({error: String(e)})}); }
  }
}
go();
</script>"""

class Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = PAGE.encode() if self.path == "/" else b"self.addEventListener('push', e => {});"
        self.send_response(200)
        self.send_header("Content-Type", "text/html" if self.path == "/" else "text/javascript")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_POST(self):
        data = self.rfile.read(int(self.headers["Content-Length"]))
        reports.append(json.loads(data))
        print("report", data, flush=True)
        self.send_response(204); self.end_headers()
    def log_message(self, *a): pass

page = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
threading.Thread(target=page.serve_forever, daemon=True).start()

async def main():
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(f"{work}/cert.pem", f"{work}/key.pem")
    async with websockets.serve(handler, "127.0.0.1", 0, ssl=ctx, subprotocols=["push-notification"]) as server:
        port = server.sockets[0].getsockname()[1]
        profile = f"{work}/profile"; os.makedirs(profile)
        subprocess.run(["certutil", "-N", "-d", f"sql:{profile}", "--empty-password"], check=True)
        subprocess.run(["certutil", "-A", "-d", f"sql:{profile}", "-t", "C,,", "-n", "probe", "-i", f"{work}/ca.pem"], check=True)
        prefs = {"dom.push.serverURL": f"wss://localhost:{port}/", "dom.push.enabled": True, "dom.push.connection.enabled": True,
                 "dom.push.testing.ignorePermission": True, "permissions.default.desktop-notification": 1,
                 "browser.shell.checkDefaultBrowser": False, "datareporting.policy.dataSubmissionEnabled": False,
                 "toolkit.telemetry.reportingpolicy.firstRun": False, "dom.serviceWorkers.enabled": True, "network.proxy.type": 0,
                 "dom.push.loglevel": "debug"}
        with open(f"{profile}/user.js", "w") as f:
            for k, v in prefs.items():
                f.write(f'user_pref("{k}", {json.dumps(v)});\n')
        env = dict(os.environ, MOZ_HEADLESS="1", HOME=work)
        t0 = time.time()
        ff = subprocess.Popen(["firefox-esr", "--headless", "--no-remote", "--profile", profile, f"http://localhost:{page.server_port}/"],
                              env=env, stdout=open(f"{work}/ff.log", "w"), stderr=subprocess.STDOUT)
        try:
            for _ in range(120):
                await asyncio.sleep(0.5)
                if any("endpoint" in r for r in reports):
                    break
            print("subscribed", round(time.time() - t0, 1), "s after Firefox started")
        finally:
            ff.terminate()
            try: ff.wait(10)
            except Exception: ff.kill()
    print("frames Firefox sent:")
    for frame in frames:
        print("  " + frame)
    print("what the page reported:")
    for report in reports:
        print("  " + json.dumps(report))
    shutil.rmtree(work, ignore_errors=True)

asyncio.run(main())
