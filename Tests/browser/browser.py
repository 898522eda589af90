#!/usr/bin/env python3
"""Herald's pages in a real headless browser (Debian's chromium through chromedriver and selenium).

Usage: browser.py HERALD_BINARY [ARTIFACTS_DIR]   (screenshots of every page go to ARTIFACTS_DIR)

Against a running gateway and provider (started here, ports from the OS):
  - the browser device (the device port's page) enrolls with a WebCrypto key, registers an app,
    shows a push sent by `herald push send` as a browser notification and in its notification
    center with the category's actions; the tapped action reaches the page's app, and the
    gateway's receipt says acked; the key survives a reload (same device id);
  - every gateway dashboard page renders the gateway's real data (devices, tokens, held,
    receipts with their timeline, feedback, teams, the live feed, the graphs);
  - the provider dashboard: login with the API token (a wrong one refused), registrations by
    language and zone, a template's preview per language with the fallback, the send form's
    recipient count, a send whose report appears with its receipts, a schedule's timeline.
"""
import json, os, ssl, subprocess, sys, tempfile, time, urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from harness import check, read, run, start, wait_for  # noqa: E402

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait, Select

HERALD = os.path.abspath(sys.argv[1])
ARTIFACTS = os.path.abspath(sys.argv[2]) if len(sys.argv) > 2 else None
TOPIC = "com.example.browser"
TEAM = "BROWSER001"


def get_json(url, headers=None):
    request = urllib.request.Request(url, headers=headers or {})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def shot(driver, name):
    if ARTIFACTS:
        os.makedirs(ARTIFACTS, exist_ok=True)
        driver.save_screenshot(os.path.join(ARTIFACTS, name + ".png"))


def main():
    work = tempfile.mkdtemp(prefix="herald-browser-")
    data = os.path.join(work, "gw")
    gateway_out = os.path.join(work, "gateway.json")
    start([HERALD, "gateway", "--data-dir", data, "--provider-port", "0", "--device-port", "0", "--admin-port", "0", "--webpush-port", "0"],
          stdout=open(gateway_out, "w"), stderr=open(os.path.join(work, "gateway.err"), "w"))
    ports = json.loads(wait_for("the gateway", lambda: read(gateway_out).splitlines()[0] if read(gateway_out).strip() else None))
    admin = f"http://127.0.0.1:{ports['admin_port']}"
    ca = ports["ca"]
    key = os.path.join(work, "key.p8")
    key_id = subprocess.run([HERALD, "keys", "create", "--data-dir", data, "--team", TEAM, "--topic", TOPIC, "--out", key],
                            check=True, capture_output=True, text=True).stdout.strip()

    def push(token, *extra):
        result = subprocess.run([HERALD, "push", "send", "--gateway", f"https://localhost:{ports['provider_port']}", "--ca", ca, "--key", key,
                                 "--key-id", key_id, "--team", TEAM, "--topic", TOPIC, "--token", token, *extra],
                                capture_output=True, text=True)
        return result.stdout.strip()

    options = Options()
    for argument in ["--headless=new", "--no-sandbox", "--disable-gpu", "--ignore-certificate-errors", "--window-size=1280,900",
                     "--disable-dev-shm-usage"]:
        options.add_argument(argument)
    options.add_experimental_option("prefs", {"profile.default_content_setting_values.notifications": 1})
    options.binary_location = "/usr/bin/chromium"
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    try:
        browser_device(driver, ports, admin, push)
        gateway_pages(driver, admin, push, data)
        provider_pages(driver, work, ports, ca, key, key_id)
    finally:
        driver.quit()


def browser_device(driver, ports, admin, push):
    wait = WebDriverWait(driver, 20)
    driver.get(f"https://localhost:{ports['device_port']}/")
    wait.until(lambda d: d.find_element(By.ID, "connection-state").get_attribute("data-state") == "connected")
    device_id = driver.find_element(By.ID, "device-id").text
    check("the browser device enrolls (WebCrypto key, signed challenge)", len(device_id) == 32, device_id)
    check("browser notifications are allowed", driver.find_element(By.ID, "permission").text == "granted",
          driver.find_element(By.ID, "permission").text)
    driver.find_element(By.ID, "register").click()
    token_cell = wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, f"tr[data-topic='{TOPIC}'] td.token")))
    token = token_cell.text
    check("the browser device registers an app and shows its token", len(token) == 64, token)
    devices = get_json(admin + "/v1/devices?connected=true")["items"]
    check("the gateway sees the browser device connected", any(d["id"] == device_id for d in devices), json.dumps(devices)[:300])

    apns_id = push(token, "--title", "Team meeting", "--alert", "Tomorrow at 10", "--category", "MEETING_INVITATION")
    check("herald push send to the browser device is accepted", len(apns_id) == 36, apns_id)
    banner = wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, f".banner[data-apns-id='{apns_id}']")))
    check("the push is in the in-page notification center", "Team meeting" in banner.text and "Tomorrow at 10" in banner.text, banner.text)
    presented = driver.execute_script("return window.heraldPresented")
    check("the push is presented as a browser notification", any(p["apnsId"] == apns_id for p in presented), json.dumps(presented))
    buttons = banner.find_elements(By.CSS_SELECTOR, "button[data-action]")
    check("the category's action buttons are shown", [b.get_attribute("data-action") for b in buttons] == ["accept", "decline"],
          [b.get_attribute("data-action") for b in buttons])
    shot(driver, "browser-device")
    buttons[0].click()
    response = wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, f".banner[data-apns-id='{apns_id}'] .response")))
    check("the tapped action reaches the app", response.get_attribute("data-response") == "accept", response.text)

    def acked():
        receipt = get_json(admin + f"/v1/receipts/{apns_id}")
        return receipt if receipt["deliveries"][0]["status"] == "acked" else None
    receipt = wait_for("the ack", acked)
    check("the gateway's receipt says acked", receipt["deliveries"][0]["status"] == "acked", json.dumps(receipt))
    shot(driver, "browser-device-response")

    # The key lives in IndexedDB: after a reload the same device connects again.
    driver.refresh()
    wait.until(lambda d: d.find_element(By.ID, "connection-state").get_attribute("data-state") == "connected")
    check("the device key survives a reload", driver.find_element(By.ID, "device-id").text == device_id)
    # A repeat of the same apns-id is acked and dropped (the page saved what it had).
    again = push(token, "--title", "Team meeting", "--alert", "Tomorrow at 10", "--apns-id", apns_id)
    check("a repeated apns-id is accepted by the gateway", again == apns_id, again)
    # The barrier: the repeat was stored again and acked again (the page acks what it drops).
    wait_for("the repeat's ack", lambda: sum(1 for d in get_json(admin + f"/v1/receipts/{apns_id}")["deliveries"]
                                             for e in d["events"] if e["status"] == "acked") >= 2)
    banners = driver.find_elements(By.CSS_SELECTOR, f".banner[data-apns-id='{apns_id}']")
    check("the repeat is not shown twice", len(banners) == 1, len(banners))
    browser_device_focus(driver, wait, push, token)
    browser_device_webpush(driver, ports, wait)
    # Unregister from the page: the token joins the feedback list.
    driver.find_element(By.CSS_SELECTOR, f"tr[data-topic='{TOPIC}'] button").click()
    wait.until(lambda d: not d.find_elements(By.CSS_SELECTOR, f"tr[data-topic='{TOPIC}']"))
    check("unregistering from the page removes the app", True)
    globals()["BROWSER_TOKEN"] = token
    globals()["BROWSER_APNS_ID"] = apns_id
    globals()["BROWSER_DEVICE_ID"] = device_id


def browser_device_focus(driver, wait, push, token):
    """A Focus set on the page: another app's alert is silenced; time-sensitive breaks through; passive never shows."""
    driver.find_element(By.ID, "focus-on").click()
    allowed = driver.find_element(By.ID, "focus-allowed")
    allowed.clear()
    allowed.send_keys("com.example.other")
    driver.find_element(By.ID, "save-focus").click()
    wait.until(lambda d: d.find_element(By.ID, "focus-state").get_attribute("data-active") == "Work")
    quiet = push(token, "--alert", "Lunch menu")
    urgent = push(token, "--alert", "Your ride is here", "--interruption-level", "time-sensitive")
    banner = wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, f".banner[data-apns-id='{urgent}']")))
    silenced = driver.find_element(By.CSS_SELECTOR, f".banner[data-apns-id='{quiet}']")
    presented = [p["apnsId"] for p in driver.execute_script("return window.heraldPresented")]
    check("Focus on: an app it does not allow is listed silently, no browser notification",
          silenced.get_attribute("data-silenced") == "true" and "silenced by Work" in silenced.text and quiet not in presented, silenced.text)
    check("Focus on: a time-sensitive push breaks through and is presented",
          banner.get_attribute("data-through") == "time-sensitive" and urgent in presented, banner.text)
    shot(driver, "browser-device-focus")
    driver.find_element(By.ID, "focus-on").click()
    driver.find_element(By.ID, "save-focus").click()
    wait.until(lambda d: d.find_element(By.ID, "focus-state").get_attribute("data-active") == "")
    passive = push(token, "--alert", "Weekly digest", "--interruption-level", "passive")
    banner = wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, f".banner[data-apns-id='{passive}']")))
    presented = [p["apnsId"] for p in driver.execute_script("return window.heraldPresented")]
    check("passive: listed, never presented", banner.get_attribute("data-level") == "passive" and passive not in presented, banner.text)


def browser_device_webpush(driver, ports, wait):
    """The browser device as a Web Push user agent: a subscription made in the page (WebCrypto
    ECDH key, auth secret), pywebpush as the application server, the page decrypting."""
    import pywebpush
    os.environ["REQUESTS_CA_BUNDLE"] = ports["ca"]
    driver.find_element(By.CSS_SELECTOR, f"tr[data-topic='{TOPIC}'] button.webpush-subscribe").click()
    code = wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, f"tr[data-topic='{TOPIC}'] code.webpush-subscription")))
    subscription = json.loads(code.text)
    check("the browser device takes a Web Push subscription with an endpoint on the Web Push port and its own keys",
          subscription["endpoint"].startswith(f"https://localhost:{ports['webpush_port']}/wpush/")
          and len(subscription["keys"]["auth"]) == 22 and len(subscription["keys"]["p256dh"]) == 87, code.text)
    response = pywebpush.webpush(subscription, data="hello, browser device", ttl=600)
    check("pywebpush pushes to it (201)", response.status_code == 201, str(response.status_code))
    got = wait_for("the decrypted message", lambda: driver.execute_script(
        "return window.heraldWebPush.find((m) => m.text === 'hello, browser device')"))
    check("the page decrypts it with WebCrypto (RFC 8291) and hands it to the app, not presented", got["declarative"] is False, json.dumps(got))
    declarative = json.dumps({"web_push": 8030, "notification": {"title": "Web Push title", "body": "declared", "navigate": "https://example.com/"}})
    pywebpush.webpush(subscription, data=declarative, ttl=600)
    shown = wait_for("the declarative message", lambda: driver.execute_script("return window.heraldWebPush.find((m) => m.declarative)"))
    banner = wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, f".banner[data-apns-id='{shown['apnsId']}']")))
    presented = driver.execute_script("return window.heraldPresented")
    check("a Declarative Web Push message is presented by the page", "Web Push title" in banner.text and
          any(p["apnsId"] == shown["apnsId"] for p in presented), banner.text)
    shot(driver, "browser-device-webpush")


def gateway_pages(driver, admin, push, data):
    wait = WebDriverWait(driver, 20)
    # Something held: a token with no device behind it.
    offline = subprocess.run([HERALD, "tokens", "create", "--data-dir", data, "--topic", TOPIC], capture_output=True, text=True).stdout.strip()
    held_id = push(offline, "--alert", "Waiting for you")

    globals()["HELD_REPLACED"] = held_id
    driver.get(admin + "/dashboard/live")
    wait.until(lambda d: d.find_element(By.ID, "live-state").get_attribute("data-state") == "open")
    live_id = push(offline, "--alert", "Seen live")
    globals()["LIVE_ID"] = live_id
    row = wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, f"#event-rows tr[data-apns-id='{live_id}']")))
    check("the live page shows a push as it is accepted", "accepted" in row.text, row.text)
    shot(driver, "gateway-live")

    driver.get(admin + "/dashboard")
    wait.until(lambda d: int(d.find_element(By.TAG_NAME, "body").get_attribute("data-samples") or 0) >= 2)
    check("overview: node and held count", driver.find_element(By.ID, "node").text == "single node"
          and int(driver.find_element(By.ID, "held-count").text) == 1, driver.find_element(By.ID, "held-count").text)
    legend = driver.find_elements(By.CSS_SELECTOR, "#throughput-legend span")
    check("overview: the throughput graph reads /metrics", len(legend) == 3, len(legend))
    shot(driver, "gateway-overview")

    driver.get(admin + "/dashboard/devices")
    text = driver.find_element(By.ID, "devices").text
    check("devices page lists the browser device and its state", BROWSER_DEVICE_ID in text and "connected" in text, text[:300])
    shot(driver, "gateway-devices")

    driver.get(admin + f"/dashboard/tokens?topic={TOPIC}")
    text = driver.find_element(By.ID, "tokens").text
    check("tokens page shows tokens of the topic and their state", BROWSER_TOKEN in text and "unregistered" in text and offline in text, text[:400])
    check("tokens page counts by topic and state", "token-summary" in driver.page_source)
    shot(driver, "gateway-tokens")

    driver.get(admin + "/dashboard/held")
    text = driver.find_element(By.ID, "held").text
    live_id, held_id = LIVE_ID, HELD_REPLACED
    # Store-and-forward keeps the newest per device and app: the later push replaced the first.
    check("held page shows what waits for an offline token", live_id in text and "Seen live" in text and held_id not in text, text[:400])
    shot(driver, "gateway-held")

    driver.get(admin + "/dashboard/receipts")
    driver.find_element(By.NAME, "apns-id").send_keys(BROWSER_APNS_ID)
    driver.find_element(By.CSS_SELECTOR, "form.filters button").click()
    status = wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "#receipt [data-status]")))
    steps = [li.text for li in driver.find_elements(By.CSS_SELECTOR, ".timeline li")]
    check("receipt page shows the timeline to acked", status.get_attribute("data-status") == "acked"
          and any(s.startswith("accepted") for s in steps) and any(s.startswith("acked") for s in steps), steps)
    shot(driver, "gateway-receipt")

    driver.get(admin + f"/dashboard/feedback?topic={TOPIC}")
    text = driver.find_element(By.ID, "feedback").text
    check("feedback page lists the unregistered token", BROWSER_TOKEN in text, text[:300])
    shot(driver, "gateway-feedback")

    driver.get(admin + "/dashboard/teams")
    text = driver.find_element(By.ID, "teams").text
    check("teams page shows the team, its topic and key", TEAM in text and TOPIC in text, text[:300])
    shot(driver, "gateway-teams")

    driver.get(admin + "/dashboard/receipts?apns-id=not-a-uuid")
    check("a bad apns-id is refused on the page with what to fix", "is not an apns-id" in driver.find_element(By.ID, "message").text)


def provider_pages(driver, work, ports, ca, key, key_id):
    wait = WebDriverWait(driver, 20)
    data = os.path.join(work, "gw")
    provider_dir = os.path.join(work, "provider")
    provider_out = os.path.join(work, "provider.json")
    start([HERALD, "provider", "--data-dir", provider_dir, "--port", "0", "--gateway", f"https://localhost:{ports['provider_port']}",
           "--ca", ca, "--key", key, "--key-id", key_id, "--team", TEAM],
          stdout=open(provider_out, "w"), stderr=open(os.path.join(work, "provider.err"), "w"))
    started = json.loads(wait_for("the provider", lambda: read(provider_out).splitlines()[0] if read(provider_out).strip() else None))
    base = f"http://127.0.0.1:{started['port']}"
    api_token = read(os.path.join(provider_dir, "api-token")).strip()
    auth = {"Authorization": f"Bearer {api_token}", "Content-Type": "application/json"}

    def api(method, path, body):
        request = urllib.request.Request(base + path, method=method, data=None if body is None else json.dumps(body).encode(), headers=auth)
        with urllib.request.urlopen(request, timeout=20) as response:
            return json.loads(response.read() or b"null")

    people = [("en", "America/New_York"), ("fr", "Europe/Paris"), ("de", "Asia/Tokyo")]
    tokens = []
    for language, zone in people:
        token = subprocess.run([HERALD, "tokens", "create", "--data-dir", data, "--topic", TOPIC], capture_output=True, text=True).stdout.strip()
        api("POST", "/v1/registrations", {"token": token, "topic": TOPIC, "language": language, "timeZone": zone})
        tokens.append(token)
    api("PUT", "/v1/templates/welcome", {"translations": {"en": {"title": "Welcome", "body": "Hello %@"},
                                                         "fr": {"title": "Bienvenue", "body": "Bonjour %@"}}})
    api("POST", "/v1/schedules", {"to": {"segment": {"topic": TOPIC}}, "template": {"id": "welcome", "args": ["friend"]},
                                  "time": "09:00", "repeat": "daily"})

    driver.get(base + "/dashboard")
    wait.until(EC.presence_of_element_located((By.ID, "login")))
    check("the provider dashboard asks to sign in", driver.current_url.endswith("/dashboard/login"), driver.current_url)
    shot(driver, "provider-login")
    driver.find_element(By.ID, "token").send_keys("not-the-token")
    driver.find_element(By.CSS_SELECTOR, "#login button").click()
    message = wait.until(EC.presence_of_element_located((By.ID, "message"))).text
    check("a wrong token is refused", "not this provider's API token" in message, message)
    driver.find_element(By.ID, "token").send_keys(api_token)
    driver.find_element(By.CSS_SELECTOR, "#login button").click()
    total = wait.until(EC.presence_of_element_located((By.ID, "total"))).text
    check("signed in: registrations counted", total == "3", total)
    languages = {row.get_attribute("data-value"): row.get_attribute("data-count") for row in driver.find_elements(By.CSS_SELECTOR, "#by-language tr[data-value]")}
    zones = {row.get_attribute("data-value"): row.get_attribute("data-count") for row in driver.find_elements(By.CSS_SELECTOR, "#by-zone tr[data-value]")}
    check("registrations by language", languages == {"en": "1", "fr": "1", "de": "1"}, languages)
    check("registrations by zone", zones == {"America/New_York": "1", "Europe/Paris": "1", "Asia/Tokyo": "1"}, zones)
    shot(driver, "provider-registrations")

    driver.get(base + "/dashboard/templates?args=Ada")
    previews = {b.get_attribute("data-language"): b for b in driver.find_elements(By.CSS_SELECTOR, "[data-template='welcome'] .banner")}
    check("template preview per language", "Bonjour Ada" in previews["fr"].text and "Hello Ada" in previews["en"].text,
          {k: v.text for k, v in previews.items()})
    check("template preview shows the fallback", previews["de"].get_attribute("data-used") == "en" and "falls back to en" in previews["de"].text,
          previews["de"].text)
    shot(driver, "provider-templates")

    driver.get(base + "/dashboard/send")
    driver.find_element(By.NAME, "topic").send_keys(TOPIC)
    Select(driver.find_element(By.NAME, "template")).select_by_visible_text("welcome")
    driver.find_element(By.NAME, "args").send_keys("Grace")
    driver.find_element(By.ID, "count").click()
    count = wait.until(EC.presence_of_element_located((By.ID, "recipient-count")))
    check("the send form counts the recipients before sending", count.get_attribute("data-count") == "3", count.text)
    shot(driver, "provider-send")
    driver.find_element(By.ID, "send").click()
    try:
        rows = wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#deliveries tr[data-token]"))
    except Exception:
        raise AssertionError("no report after sending; the page says: " + driver.find_element(By.TAG_NAME, "body").text[:500])
    statuses = {r.get_attribute("data-token"): r.find_element(By.CSS_SELECTOR, "td.receipt").get_attribute("data-receipt") for r in rows}
    check("the send's report appears with every recipient", set(statuses) == set(tokens), statuses)
    check("the report shows the gateway's receipts", all(v == "stored" for v in statuses.values()), statuses)
    languages = sorted(r.find_elements(By.TAG_NAME, "td")[1].text for r in rows)
    check("the report shows the language each recipient got (de fell back to en)", languages == ["en", "en", "fr"], languages)
    shot(driver, "provider-report")
    report_url = driver.current_url
    driver.back()  # the count page again: sending the same form twice sends once (its idempotency key)
    wait.until(EC.presence_of_element_located((By.ID, "send"))).click()
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#deliveries tr[data-token]"))
    check("submitting the same form twice sends once", driver.current_url == report_url, (driver.current_url, report_url))

    # A count is bound to what it counted: a form changed after it is counted again, not sent.
    driver.get(base + "/dashboard/send")
    driver.find_element(By.NAME, "topic").send_keys(TOPIC)
    driver.find_element(By.NAME, "body").send_keys("Hello")
    driver.find_element(By.ID, "count").click()
    wait.until(EC.presence_of_element_located((By.ID, "recipient-count")))
    driver.find_element(By.NAME, "languages").send_keys("fr")
    check("changing the form after the count disables its send button", not driver.find_element(By.ID, "send").is_enabled())
    sends_before = len(api("GET", "/v1/sends", None)["items"])
    driver.execute_script("document.getElementById('send').disabled = false")
    driver.find_element(By.ID, "send").click()
    message = wait.until(EC.presence_of_element_located((By.ID, "message")))
    check("a form changed after its count is not sent: the page asks to count again, with the form and the sign-out",
          "count them again" in message.text and driver.find_elements(By.ID, "send-form") and driver.find_elements(By.CSS_SELECTOR, "form.logout")
          and len(api("GET", "/v1/sends", None)["items"]) == sends_before, message.text)
    # A count of 0: nothing to send.
    topic = driver.find_element(By.NAME, "topic")
    topic.clear()
    topic.send_keys("com.example.nobody")
    driver.find_element(By.ID, "count").click()
    count = wait.until(EC.presence_of_element_located((By.ID, "recipient-count")))
    check("a count of 0 says so and leaves the send button disabled", count.get_attribute("data-count") == "0" and "nobody" in count.text
          and not driver.find_element(By.ID, "send").is_enabled(), count.text)
    Select(driver.find_element(By.NAME, "target")).select_by_value("user")
    hidden = [label.get_attribute("data-for") for label in driver.find_elements(By.CSS_SELECTOR, "label[data-for]") if not label.is_displayed()]
    check("sending to a user hides the segment's fields", hidden == ["segment"] * 3, hidden)
    shot(driver, "provider-send-user")

    icons = []
    for url in [base + "/favicon.ico", f"http://127.0.0.1:{ports['admin_port']}/favicon.ico", f"https://localhost:{ports['device_port']}/favicon.ico"]:
        context = ssl.create_default_context(cafile=ca) if url.startswith("https") else None
        with urllib.request.urlopen(url, timeout=10, context=context) as response:
            icons.append((response.status, response.headers.get("content-type")))
    check("/favicon.ico is an icon on the provider, admin and device ports", icons == [(200, "image/svg+xml")] * 3, icons)

    driver.get(base + "/dashboard/reports")
    check("reports page lists the send", report_url.rsplit("/", 1)[1] in driver.find_element(By.ID, "reports").text)

    driver.get(base + "/dashboard/schedules")
    rows = driver.find_elements(By.CSS_SELECTOR, ".schedule .zone-row")
    ticks = driver.find_elements(By.CSS_SELECTOR, ".schedule .zone-track .tick")
    check("schedules: each zone's next occurrences on a timeline", {r.get_attribute("data-zone") for r in rows} ==
          {"America/New_York", "Europe/Paris", "Asia/Tokyo"} and len(ticks) >= 18 and all(t.value_of_css_property("left") != "auto" for t in ticks),
          (len(rows), len(ticks)))
    shot(driver, "provider-schedules")

    # A form posted from another site is refused, even signed in.
    status = driver.execute_script("""
        return fetch('/dashboard/send', {method: 'POST', headers: {'Content-Type': 'application/x-www-form-urlencoded'},
                     body: 'target=segment&topic=x&body=hi'}).then(r => r.status);""")
    check("a POST without the session's CSRF token is refused", status == 403, status)


run("browser", main)
