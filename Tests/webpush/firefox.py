#!/usr/bin/env python3
"""A real Firefox as Herald's Web Push user agent.

Debian's firefox-esr, headless, with a fresh profile whose prefs point dom.push.serverURL at the
gateway's Web Push port and whose certificate store trusts the gateway's CA (certutil). A page on
http://localhost registers a service worker and subscribes with a VAPID key; pywebpush pushes;
the service worker posts each plaintext back to the page's server. Then, with Firefox closed, a
message is accepted (201), the gateway is killed with SIGKILL and started again on the same
port, and Firefox, started again on the same profile, gets it: its subscription (and its uaid)
survived both.

    python3 Tests/webpush/firefox.py PATH/TO/herald
"""
import base64
import http.server
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from harness import check, read, run, start, wait_for  # noqa: E402

import pywebpush
from cryptography.hazmat.primitives import serialization
from py_vapid import Vapid02

HERALD = os.path.abspath(sys.argv[1])
WORK = tempfile.mkdtemp(prefix="herald-firefox-")
DATA = os.path.join(WORK, "data")
PROFILE = os.path.join(WORK, "profile")

reports = []  # what the page and the service worker posted, in order

PAGE = """<!doctype html><title>Herald Web Push</title><script>
async function report(what) { await fetch('/report', {method: 'POST', body: JSON.stringify(what)}); }
async function go() {
  const reg = await navigator.serviceWorker.register('/sw.js');
  await navigator.serviceWorker.ready;
  // subscribe() with the same key gives back an existing subscription (after a restart).
  // (getSubscription() is not answered while Firefox's push service is starting: not used.)
  const key = new URLSearchParams(location.search).get('key');
  // Firefox starts its push service some seconds after launch: retry a subscribe left unanswered.
  for (let i = 0; i < 40; i++) {
    try {
      const sub = await Promise.race([reg.pushManager.subscribe({userVisibleOnly: true, applicationServerKey: key}),
                                      new Promise((_, no) => setTimeout(() => no(new Error('timeout')), 3000))]);
      return report({subscription: sub.toJSON()});
    } catch (e) { await report({error: String(e)}); }
  }
}
report({loaded: location.search.length > 0}).then(go).catch(e => report({error: 'page: ' + String(e)}));
</script>"""

WORKER = """self.addEventListener('push', e => {
  const text = e.data ? e.data.text() : '';
  e.waitUntil(fetch('/report', {method: 'POST', body: JSON.stringify({push: text})}));
});"""


class Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = (PAGE if self.path.split("?")[0] == "/" else WORKER).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html" if self.path.split("?")[0] == "/" else "text/javascript")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        reports.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


def start_gateway(n, port):
    out = os.path.join(WORK, f"gateway{n}.json")
    process = start([HERALD, "gateway", "--data-dir", DATA, "--provider-port", "0", "--webpush-port", str(port)],
                    stdout=open(out, "w"), stderr=open(os.path.join(WORK, f"gateway{n}.err"), "w"))
    ports = json.loads(wait_for("the gateway", lambda: read(out).splitlines()[0] if read(out).strip() else None))
    return process, ports


def start_firefox(n, url):
    env = dict(os.environ, MOZ_HEADLESS="1", HOME=WORK)
    return start(["firefox-esr", "--headless", "--no-remote", "--profile", PROFILE, url],
                 env=env, stdout=open(os.path.join(WORK, f"firefox{n}.log"), "w"), stderr=subprocess.STDOUT)


def stop(process):
    process.terminate()
    try:
        process.wait(15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def pushes():
    return [r["push"] for r in reports if "push" in r]


def main():
    page = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=page.serve_forever, daemon=True).start()
    gateway, ports = start_gateway(1, 0)
    webpush_port = ports["webpush_port"]
    ca = ports["ca"]
    os.environ["REQUESTS_CA_BUNDLE"] = ca

    os.makedirs(PROFILE)
    subprocess.run(["certutil", "-N", "-d", f"sql:{PROFILE}", "--empty-password"], check=True)
    subprocess.run(["certutil", "-A", "-d", f"sql:{PROFILE}", "-t", "C,,", "-n", "herald", "-i", ca], check=True)
    prefs = {"dom.push.serverURL": f"wss://localhost:{webpush_port}/", "dom.push.enabled": True, "dom.push.connection.enabled": True,
             "dom.push.testing.ignorePermission": True, "permissions.default.desktop-notification": 1,
             "browser.shell.checkDefaultBrowser": False, "datareporting.policy.dataSubmissionEnabled": False,
             "toolkit.telemetry.reportingpolicy.firstRun": False, "network.proxy.type": 0,
             "browser.startup.homepage_override.mstone": "ignore", "app.update.enabled": False}
    with open(os.path.join(PROFILE, "user.js"), "w") as f:
        for name, value in prefs.items():
            f.write(f'user_pref("{name}", {json.dumps(value)});\n')

    vapid = Vapid02()
    vapid.generate_keys()
    key = base64.urlsafe_b64encode(vapid.public_key.public_bytes(
        serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)).rstrip(b"=").decode()
    url = f"http://localhost:{page.server_port}/?key={key}"
    claims = {"sub": "mailto:ops@example.com"}

    started = time.monotonic()
    firefox = start_firefox(1, url)
    subscription = wait_for("Firefox's subscription", lambda: next((r["subscription"] for r in reports if "subscription" in r), None), timeout=90)
    print(f"     (Firefox subscribed {time.monotonic() - started:.1f} s after it started)")
    check("Firefox subscribes through Herald: the endpoint is on the Web Push port",
          subscription["endpoint"].startswith(f"https://localhost:{webpush_port}/wpush/") and set(subscription["keys"]) == {"p256dh", "auth"},
          json.dumps(subscription))

    response = pywebpush.webpush(subscription, data="hello, Firefox", vapid_private_key=vapid, vapid_claims=dict(claims), ttl=120)
    check("pywebpush's push is accepted: 201", response.status_code == 201, str(response.status_code))
    got = wait_for("the push in the service worker", lambda: pushes() or None, timeout=30)
    check("the service worker gets the plaintext (decrypted by Firefox, never by Herald)", got == ["hello, Firefox"], json.dumps(got))

    # Firefox closed: the message waits in the store, through a SIGKILL of the gateway.
    stop(firefox)
    uaid = user_agent_id()
    response = pywebpush.webpush(subscription, data="while Firefox was closed", vapid_private_key=vapid, vapid_claims=dict(claims), ttl=3600)
    check("a push while Firefox is closed: 201", response.status_code == 201, str(response.status_code))
    os.kill(gateway.pid, signal.SIGKILL)
    gateway.wait()
    gateway, ports = start_gateway(2, webpush_port)

    firefox = start_firefox(2, url)
    got = wait_for("the stored push in the service worker", lambda: pushes() if len(pushes()) >= 2 else None, timeout=90)
    check("what was accepted before the SIGKILL reaches the service worker after both restarts",
          got == ["hello, Firefox", "while Firefox was closed"], json.dumps(got))

    response = pywebpush.webpush(subscription, data="and again", vapid_private_key=vapid, vapid_claims=dict(claims), ttl=120)
    got = wait_for("a live push after the restart", lambda: pushes() if len(pushes()) >= 3 else None, timeout=30)
    check("live pushes reach the restarted Firefox", got[-1] == "and again", json.dumps(got))
    stop(firefox)
    # Firefox keeps the uaid the push service gave it in its prefs, and drops it (with every
    # subscription) when a hello is answered with another one.
    check("Firefox kept its uaid across both restarts", uaid and user_agent_id() == uaid, f"{uaid} then {user_agent_id()}")


def user_agent_id():
    for line in read(os.path.join(PROFILE, "prefs.js")).splitlines():
        if '"dom.push.userAgentID"' in line:
            return line.split(",", 1)[1].strip().strip(");").strip('"')
    return None


def main_reporting():
    try:
        main()
    finally:
        # What the page and the service worker said, for a failed run's reader.
        print("     reports: " + json.dumps(reports)[:1500])


run("firefox web push", main_reporting)
