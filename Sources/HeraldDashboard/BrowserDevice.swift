/// A Herald device in a browser: the page the device port serves at `/`, and its script.
///
/// The page is a device as `docs/device-protocol.md` describes one: a P-256 key made with
/// WebCrypto (the private key not extractable) and kept in IndexedDB, the protocol over a
/// WebSocket to `/device/v1` on the same host and port, app topics registered, pushes shown as
/// browser notifications (the Notifications API) and in an in-page notification center with the
/// category's action buttons, acks sent only once the notification is saved in IndexedDB
/// (repeats are dropped by apns-id and acked again), reconnection with exponential backoff and
/// jitter (the n-th failure waits between half and all of min(30 s, 0.5 s × 2ⁿ)).
///
/// It is a Web Push user agent too (device protocol version 3): an app takes a subscription
/// whose ECDH key (WebCrypto, not extractable) and auth secret stay in IndexedDB; messages are
/// decrypted in the page (RFC 8291 with WebCrypto's ECDH, HKDF and AES-GCM), presented when they
/// are Declarative Web Push messages, and listed for the app otherwise.
public enum BrowserDevice {
    /// The page, complete (it reads nothing from the server but its assets).
    public static func page() -> String {
        DashboardRenderer(product: "Herald device", navigation: [], templates: ["device": template])
            .render("device", title: "A device in this browser", section: "", context: ["scripts": ["device.js"]])
    }

    static let template = """
        <div class="cards">
        <div class="card"><div class="value" id="connection-state" data-state="starting">starting</div><div class="label">connection</div></div>
        <div class="card"><div class="value mono" id="device-id">–</div><div class="label">device id</div></div>
        <div class="card"><div class="value" id="environment">–</div><div class="label">environment</div></div>
        <div class="card"><div class="value" id="permission">–</div><div class="label">browser notifications</div></div>
        </div>
        <p><button type="button" id="ask-permission" class="secondary">Allow browser notifications</button>
        <button type="button" id="forget" class="secondary">Forget this device</button></p>
        <h2>Apps</h2>
        <form class="filters" id="register-form">
        <label>topic (bundle id)<input id="topic" required value="com.example.browser" size="30"></label>
        <label>enrollment secret (only if the gateway asks)<input id="enrollment-secret" type="password" autocomplete="off"></label>
        <button type="submit" id="register">Register</button>
        </form>
        <table id="apps"><thead><tr><th>topic</th><th>device token</th><th>badge</th><th>Web Push subscription</th><th></th></tr></thead><tbody id="app-rows"></tbody></table>
        <h2>Categories</h2>
        <p class="muted">The actions shown for a notification whose <span class="mono">aps.category</span> names a category (as an app registers them with its notification center). JSON: category → actions.</p>
        <textarea id="categories" rows="4" cols="80" spellcheck="false"></textarea>
        <p><button type="button" id="save-categories" class="secondary">Save categories</button> <span id="categories-state" class="muted"></span></p>
        <h2>Focus</h2>
        <p class="muted">While a Focus is on, notifications of apps it does not allow are listed here silently: no browser notification. Time-sensitive notifications break through when it allows them, critical ones always; passive ones are never presented.</p>
        <form class="filters" id="focus-form">
        <label><input type="checkbox" id="focus-on"> Focus on</label>
        <label>name<input id="focus-name" value="Work" size="12"></label>
        <label>allowed apps (topics, comma-separated)<input id="focus-allowed" size="40"></label>
        <label><input type="checkbox" id="focus-time-sensitive" checked> time-sensitive notifications break through</label>
        <button type="submit" id="save-focus" class="secondary">Save Focus</button> <span id="focus-state" class="muted" data-active=""></span>
        </form>
        <h2>Notification center</h2>
        <div class="center" id="center"></div>
        <p class="muted" id="log"></p>

        """
}

/// The browser device's script (served as `/assets/device.js`).
enum BrowserDeviceScript {
    static let source = """
        // The challenge is version 1 for every device; the hello names the version spoken (3: Web Push).
        const challengeVersion = 1;
        const protocolVersion = 3;
        const seenLimit = 4096;
        const centerLimit = 200;
        const defaultCategories = {
          MEETING_INVITATION: [
            { id: 'accept', title: 'Accept' },
            { id: 'decline', title: 'Decline', destructive: true },
          ],
        };
        const $ = (id) => document.getElementById(id);
        const encoder = new TextEncoder();

        // ---- IndexedDB: the key, the apps, the apns-ids seen, the notification center --------------
        function openDatabase() {
          return new Promise((resolve, reject) => {
            const request = indexedDB.open('herald-device', 2);
            request.onupgradeneeded = (event) => {
              const db = request.result;
              if (event.oldVersion < 1) {
                db.createObjectStore('identity');
                db.createObjectStore('apps', { keyPath: 'topic' });
                db.createObjectStore('seen', { keyPath: 'apnsId' }).createIndex('at', 'at');
                db.createObjectStore('center', { keyPath: 'apnsId' }).createIndex('at', 'at');
                db.createObjectStore('settings');
              }
              // Version 2: each app's Web Push subscription, its keys kept as CryptoKey objects.
              if (event.oldVersion < 2) db.createObjectStore('webpush', { keyPath: 'topic' });
            };
            request.onsuccess = () => resolve(request.result);
            request.onerror = () => reject(request.error);
          });
        }

        function transaction(stores, mode, work) {
          return new Promise((resolve, reject) => {
            const tx = db.transaction(stores, mode);
            let result;
            tx.oncomplete = () => resolve(result);
            tx.onerror = () => reject(tx.error);
            tx.onabort = () => reject(tx.error ?? new Error('transaction aborted'));
            result = work(tx);
          });
        }

        function request(r) {
          return new Promise((resolve, reject) => { r.onsuccess = () => resolve(r.result); r.onerror = () => reject(r.error); });
        }

        let db;

        // ---- the key ----------------------------------------------------------------------------
        async function identity() {
          const stored = await transaction(['identity'], 'readonly', (tx) => request(tx.objectStore('identity').get('key')));
          if (stored) return stored;
          // The private key cannot be exported; IndexedDB keeps the CryptoKey object itself.
          const pair = await crypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, false, ['sign', 'verify']);
          const raw = new Uint8Array(await crypto.subtle.exportKey('raw', pair.publicKey));
          const made = { privateKey: pair.privateKey, publicKey: base64(raw.slice(1)) };
          await transaction(['identity'], 'readwrite', (tx) => tx.objectStore('identity').put(made, 'key'));
          return made;
        }

        function base64(bytes) {
          let text = '';
          for (const byte of bytes) text += String.fromCharCode(byte);
          return btoa(text);
        }

        function base64url(bytes) { return base64(bytes).replace(/\\+/g, '-').replace(/\\//g, '_').replace(/=+$/, ''); }

        function fromBase64url(text) {
          if (typeof text !== 'string' || !/^[A-Za-z0-9_-]*={0,2}$/.test(text)) throw new Error('not base64url');
          const binary = atob(text.replace(/-/g, '+').replace(/_/g, '/').replace(/=+$/, '') + '==='.slice((text.length + 3) % 4));
          return Uint8Array.from(binary, (c) => c.charCodeAt(0));
        }

        // ---- the connection ---------------------------------------------------------------------
        let socket = null;
        let failures = 0;
        let authenticated = false;
        let key = null;

        function setState(state, text) {
          const element = $('connection-state');
          element.dataset.state = state;
          element.textContent = text ?? state;
        }

        function log(text) { $('log').textContent = text; }

        let spread = null;  // milliseconds, from a shutdown frame's reconnect-within

        function backoff() {
          const ceiling = Math.min(30, 0.5 * 2 ** failures);
          return (ceiling / 2 + Math.random() * ceiling / 2) * 1000;
        }

        function connect() {
          const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
          socket = new WebSocket(`${scheme}//${location.host}/device/v1`);
          authenticated = false;
          setState('connecting', 'connecting');
          socket.onmessage = (message) => receive(message.data).catch((error) => log('error: ' + error));
          socket.onclose = (event) => {
            socket = null;
            authenticated = false;
            failures += 1;
            // A gateway stopping gracefully says within how long to come back (reconnect-within).
            const wait = spread !== null ? Math.random() * spread : backoff();
            spread = null;
            setState('disconnected', `disconnected; again in ${(wait / 1000).toFixed(1)} s`);
            setTimeout(connect, wait);
          };
        }

        function send(frame) {
          if (socket && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(frame));
        }

        async function receive(text) {
          if (typeof text !== 'string' || text.length > 65536) return;
          let frame;
          try { frame = JSON.parse(text); } catch { return log('a frame that is not JSON'); }
          if (!frame || typeof frame !== 'object') return;
          switch (frame.type) {
            case 'challenge': return answer(frame);
            case 'welcome': return welcome(frame);
            case 'registered': return registered(frame);
            case 'unregistered': return unregistered(frame);
            case 'notification': return frame['push-type'] === 'webpush' ? webPushNotification(frame) : notification(frame);
            case 'webpush-subscribed': return webPushSubscribed(frame);
            case 'webpush-unsubscribed': return webPushUnsubscribed(frame);
            case 'error':
              if (frame.code === 'shutdown' && Number.isInteger(frame['reconnect-within'])) {
                spread = Math.min(Math.max(frame['reconnect-within'], 0), 3600000);
              }
              return log(`gateway: ${frame.code}: ${frame.message}`);
          }
        }

        async function answer(challenge) {
          if (challenge.version !== challengeVersion || typeof challenge.nonce !== 'string') return socket.close();
          const signed = encoder.encode('herald-device-challenge:v1:' + challenge.nonce);
          const signature = new Uint8Array(await crypto.subtle.sign({ name: 'ECDSA', hash: 'SHA-256' }, key.privateKey, signed));
          const hello = { type: 'hello', version: protocolVersion, 'public-key': key.publicKey, signature: base64(signature) };
          const secret = $('enrollment-secret').value;
          if (secret) hello['enrollment-secret'] = secret;
          send(hello);
        }

        async function welcome(frame) {
          authenticated = true;
          failures = 0;
          $('device-id').textContent = frame.device;
          $('environment').textContent = frame.environment;
          setState('connected', 'connected');
          const apps = await transaction(['apps'], 'readonly', (tx) => request(tx.objectStore('apps').getAll()));
          for (const app of apps) send({ type: 'register', topic: app.topic });
          const subscriptions = await transaction(['webpush'], 'readonly', (tx) => request(tx.objectStore('webpush').getAll()));
          for (const s of subscriptions) send({ type: 'webpush-subscribe', topic: s.topic, subscription: s.subscription });
        }

        async function registered(frame) {
          const existing = await transaction(['apps'], 'readonly', (tx) => request(tx.objectStore('apps').get(frame.topic)));
          const app = { topic: frame.topic, token: frame.token, badge: existing?.badge ?? 0 };
          await transaction(['apps'], 'readwrite', (tx) => tx.objectStore('apps').put(app));
          await showApps();
        }

        async function unregistered(frame) {
          await transaction(['apps'], 'readwrite', (tx) => tx.objectStore('apps').delete(frame.topic));
          await showApps();
        }

        // ---- Web Push: subscriptions and messages (RFC 8291 with WebCrypto) -----------------------
        window.heraldWebPush = [];

        async function webPushSubscribe(topic) {
          const known = await transaction(['webpush'], 'readonly', (tx) => request(tx.objectStore('webpush').get(topic)));
          if (known) return send({ type: 'webpush-subscribe', topic, subscription: known.subscription });
          // The private key is not extractable: ECDH runs inside WebCrypto.
          const pair = await crypto.subtle.generateKey({ name: 'ECDH', namedCurve: 'P-256' }, false, ['deriveBits']);
          const publicKey = new Uint8Array(await crypto.subtle.exportKey('raw', pair.publicKey));
          const made = {
            topic, subscription: crypto.randomUUID(), privateKey: pair.privateKey, p256dh: base64url(publicKey),
            auth: base64url(crypto.getRandomValues(new Uint8Array(16))), endpoint: null,
          };
          await transaction(['webpush'], 'readwrite', (tx) => tx.objectStore('webpush').put(made));
          send({ type: 'webpush-subscribe', topic, subscription: made.subscription });
        }

        async function webPushSubscribed(frame) {
          const known = await transaction(['webpush'], 'readonly', (tx) => request(tx.objectStore('webpush').get(frame.topic)));
          if (!known || known.subscription !== frame.subscription || typeof frame.endpoint !== 'string') return;
          known.endpoint = frame.endpoint;
          await transaction(['webpush'], 'readwrite', (tx) => tx.objectStore('webpush').put(known));
          await showApps();
        }

        async function webPushUnsubscribed(frame) {
          await transaction(['webpush'], 'readwrite', (tx) => tx.objectStore('webpush').delete(frame.topic));
          await showApps();
        }

        async function hkdf(salt, ikm, info, bytes) {
          const key = await crypto.subtle.importKey('raw', ikm, 'HKDF', false, ['deriveBits']);
          return new Uint8Array(await crypto.subtle.deriveBits({ name: 'HKDF', hash: 'SHA-256', salt, info }, key, bytes * 8));
        }

        function concat(...parts) {
          const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
          let at = 0;
          for (const p of parts) { out.set(p, at); at += p.length; }
          return out;
        }

        // RFC 8291 §3.4 and RFC 8188: one aes128gcm record, keyed by ECDH with the sender's key and the auth secret.
        async function decryptWebPush(body, subscription) {
          if (body.length < 86 + 17 || body.length > 4096) throw new Error('not an aes128gcm body of Web Push size');
          const salt = body.slice(0, 16);
          const idLength = body[20];
          if (idLength !== 65) throw new Error('the key id is not a P-256 public key');
          const senderKey = body.slice(21, 86);
          const sender = await crypto.subtle.importKey('raw', senderKey, { name: 'ECDH', namedCurve: 'P-256' }, false, []);
          const shared = new Uint8Array(await crypto.subtle.deriveBits({ name: 'ECDH', public: sender }, subscription.privateKey, 256));
          const ikm = await hkdf(fromBase64url(subscription.auth), shared,
            concat(encoder.encode('WebPush: info\\0'), fromBase64url(subscription.p256dh), senderKey), 32);
          const cek = await hkdf(salt, ikm, encoder.encode('Content-Encoding: aes128gcm\\0'), 16);
          const nonce = await hkdf(salt, ikm, encoder.encode('Content-Encoding: nonce\\0'), 12);
          const key = await crypto.subtle.importKey('raw', cek, 'AES-GCM', false, ['decrypt']);
          const record = new Uint8Array(await crypto.subtle.decrypt({ name: 'AES-GCM', iv: nonce }, key, body.slice(86)));
          let end = record.length - 1;
          while (end >= 0 && record[end] === 0) end -= 1;
          if (end < 0 || record[end] !== 2) throw new Error('the record does not end as the last record of a message');
          return record.slice(0, end);
        }

        // A Declarative Web Push message (Safari 18.4): shown by the user agent without app code.
        function declarative(text) {
          let message;
          try { message = JSON.parse(text); } catch { return null; }
          const n = message?.notification;
          if (message?.web_push !== 8030 || !n || typeof n !== 'object' || typeof n.title !== 'string') return null;
          if (typeof n.navigate !== 'string' || !/^https?:\\/\\/[^/]/.test(n.navigate)) return null;
          return { title: n.title, subtitle: '', body: typeof n.body === 'string' ? n.body : '',
                   badge: Number.isInteger(n.app_badge) ? n.app_badge : null, navigate: n.navigate };
        }

        async function webPushNotification(frame) {
          const apnsId = frame['apns-id'];
          if (typeof apnsId !== 'string') return;
          const subscription = await transaction(['webpush'], 'readonly', (tx) => request(tx.objectStore('webpush').get(frame.topic)));
          const payload = frame.payload && typeof frame.payload === 'object' ? frame.payload : {};
          let text = '', shown = null, problem = null;
          try {
            if (!subscription || payload.channel !== subscription.subscription) throw new Error('no such subscription in this browser');
            if (typeof payload.data === 'string') {
              if (payload.encoding !== 'aes128gcm') throw new Error(`encrypted as ${payload.encoding}; the browser device reads aes128gcm`);
              text = new TextDecoder().decode(await decryptWebPush(fromBase64url(payload.data), subscription));
            }
            shown = declarative(text);
          } catch (error) { problem = String(error.message ?? error); }
          const entry = await keepOnce({
            apnsId, topic: frame.topic, at: Date.now(), pushType: 'webpush', priority: frame.priority, alert: shown, category: null,
            badge: shown?.badge ?? null, sound: null, silent: !shown, response: null, webPush: problem ? null : text, problem,
          });
          if (!entry) return;
          window.heraldWebPush.push({ apnsId, topic: frame.topic, text: entry.webPush, declarative: !!shown, problem });
          await trimStores();
          if (shown) present(entry);
          await showCenter();
          await showApps();
        }

        // ---- notifications ----------------------------------------------------------------------
        function alertText(aps) {
          const alert = aps?.alert;
          if (typeof alert === 'string') return { title: '', subtitle: '', body: alert };
          if (!alert || typeof alert !== 'object') return null;
          const localized = (text, key, args) => text ?? (key ? key + (Array.isArray(args) && args.length ? ' ' + args.join(', ') : '') : '');
          return {
            title: localized(alert.title, alert['title-loc-key'], alert['title-loc-args']),
            subtitle: localized(alert.subtitle, alert['subtitle-loc-key'], alert['subtitle-loc-args']),
            body: localized(alert.body, alert['loc-key'], alert['loc-args']),
          };
        }

        async function notification(frame) {
          const apnsId = frame['apns-id'];
          if (typeof apnsId !== 'string') return;
          const payload = frame.payload && typeof frame.payload === 'object' ? frame.payload : {};
          const aps = payload.aps && typeof payload.aps === 'object' ? payload.aps : {};
          const text = alertText(aps);
          const entry = await keepOnce({
            apnsId, topic: frame.topic, at: Date.now(), pushType: frame['push-type'], priority: frame.priority,
            alert: text, category: typeof aps.category === 'string' ? aps.category : null,
            badge: Number.isInteger(aps.badge) ? aps.badge : null, sound: aps.sound ?? null,
            silent: !text, response: null, attention: attention(frame.topic, aps),
          });
          if (!entry) return;
          await trimStores();
          if (!entry.silent && entry.attention.presented) present(entry);
          await showCenter();
          await showApps();
        }

        // ---- Focus and interruption levels (docs/device-runtime.md) -------------------------------
        // A page holds no entitlements: time-sensitive is honoured as asked; critical cannot play
        // through the system's mute from a browser, and breaks through the Focus like time-sensitive.
        const levels = ['passive', 'active', 'time-sensitive', 'critical'];
        function focusSettings() {
          try { return JSON.parse(localStorage.getItem('herald-focus') ?? 'null') ?? { on: false, name: 'Work', allowed: [], timeSensitive: true }; }
          catch { return { on: false, name: 'Work', allowed: [], timeSensitive: true }; }
        }
        function attention(topic, aps) {
          const level = levels.includes(aps['interruption-level']) ? aps['interruption-level'] : 'active';
          const focus = focusSettings();
          const result = { level, focus: focus.on ? focus.name : null, through: null, silenced: false, presented: level !== 'passive' };
          if (!focus.on) return result;
          if (level === 'critical') result.through = 'critical';
          else if (level === 'time-sensitive' && focus.timeSensitive) result.through = 'time-sensitive';
          else if (focus.allowed.includes(topic)) result.through = 'allowed-app';
          else { result.silenced = true; result.presented = false; }
          return result;
        }
        function showFocus() {
          const focus = focusSettings();
          $('focus-on').checked = focus.on;
          $('focus-name').value = focus.name;
          $('focus-allowed').value = focus.allowed.join(', ');
          $('focus-time-sensitive').checked = focus.timeSensitive;
          $('focus-state').dataset.active = focus.on ? focus.name : '';
          $('focus-state').textContent = focus.on ? `${focus.name} is on` : 'no Focus';
        }
        function saveFocus(event) {
          event.preventDefault();
          const name = $('focus-name').value.trim().slice(0, 64) || 'Focus';
          const allowed = $('focus-allowed').value.split(',').map((t) => t.trim()).filter(Boolean).slice(0, 1000);
          localStorage.setItem('herald-focus', JSON.stringify({ on: $('focus-on').checked, name, allowed, timeSensitive: $('focus-time-sensitive').checked }));
          showFocus();
        }

        // Save first, ack after: the notification survives a closed tab; a repeat (an apns-id
        // seen before) is acked and dropped. Returns the entry, or false for a repeat.
        async function keepOnce(entry) {
          const fresh = await transaction(['seen', 'center', 'apps'], 'readwrite', (tx) => {
            const seen = tx.objectStore('seen');
            return request(seen.get(entry.apnsId)).then((known) => {
              if (known) return false;
              seen.put({ apnsId: entry.apnsId, at: entry.at });
              tx.objectStore('center').put(entry);
              if (entry.badge !== null) {
                const apps = tx.objectStore('apps');
                request(apps.get(entry.topic)).then((app) => { if (app) { app.badge = entry.badge; apps.put(app); } });
              }
              return entry;
            });
          });
          const kept = await fresh;
          send({ type: 'ack', ids: [entry.apnsId] });
          return kept;
        }

        async function trimStores() {
          for (const [store, limit] of [['seen', seenLimit], ['center', centerLimit]]) {
            await transaction([store], 'readwrite', (tx) => {
              const objects = tx.objectStore(store);
              request(objects.count()).then((count) => {
                let extra = count - limit;
                if (extra <= 0) return;
                objects.index('at').openCursor().onsuccess = (event) => {
                  const cursor = event.target.result;
                  if (!cursor || extra <= 0) return;
                  cursor.delete();
                  extra -= 1;
                  cursor.continue();
                };
              });
            });
          }
        }

        function categories() {
          try { return JSON.parse(localStorage.getItem('herald-categories') ?? 'null') ?? defaultCategories; } catch { return defaultCategories; }
        }

        window.heraldPresented = [];

        function present(entry) {
          window.heraldPresented.push({ apnsId: entry.apnsId, title: entry.alert.title, body: entry.alert.body });
          if (!('Notification' in window) || Notification.permission !== 'granted') return;
          const title = entry.alert.title || entry.topic;
          const body = [entry.alert.subtitle, entry.alert.body].filter(Boolean).join('\\n');
          const shown = new Notification(title, { body, tag: entry.apnsId, data: { apnsId: entry.apnsId } });
          shown.onshow = () => { document.body.dataset.lastShown = entry.apnsId; };
          shown.onclick = () => { window.focus(); respond(entry.apnsId, 'com.apple.UNNotificationDefaultActionIdentifier'); };
        }

        async function respond(apnsId, action) {
          await transaction(['center'], 'readwrite', (tx) => {
            const center = tx.objectStore('center');
            request(center.get(apnsId)).then((entry) => { if (entry) { entry.response = action; center.put(entry); } });
          });
          log(`the app received the response ${action} for ${apnsId}`);
          await showCenter();
        }

        // ---- the page ---------------------------------------------------------------------------
        async function showApps() {
          const apps = await transaction(['apps'], 'readonly', (tx) => request(tx.objectStore('apps').getAll()));
          const rows = $('app-rows');
          rows.replaceChildren();
          if (!apps.length) {
            const cell = rows.insertRow().insertCell();
            cell.colSpan = 5;
            cell.className = 'muted';
            cell.textContent = 'No app yet: give a topic (bundle id) above and Register; its token appears here.';
          }
          for (const app of apps) {
            const row = rows.insertRow();
            row.dataset.topic = app.topic;
            row.insertCell().textContent = app.topic;
            const token = row.insertCell();
            token.className = 'mono token';
            token.textContent = app.token;
            row.insertCell().textContent = String(app.badge ?? 0);
            const webPush = row.insertCell();
            const subscription = await transaction(['webpush'], 'readonly', (tx) => request(tx.objectStore('webpush').get(app.topic)));
            if (subscription?.endpoint) {
              // What the app hands its application server (PushSubscription.toJSON()).
              const code = document.createElement('code');
              code.className = 'mono webpush-subscription';
              code.textContent = JSON.stringify({ endpoint: subscription.endpoint, keys: { p256dh: subscription.p256dh, auth: subscription.auth } });
              webPush.append(code);
            } else {
              const subscribe = document.createElement('button');
              subscribe.className = 'secondary webpush-subscribe';
              subscribe.textContent = subscription ? 'Subscribing…' : 'Subscribe';
              subscribe.onclick = () => webPushSubscribe(app.topic).catch((error) => log('Web Push: ' + error));
              webPush.append(subscribe);
            }
            const button = document.createElement('button');
            button.className = 'secondary';
            button.textContent = 'Unregister';
            button.onclick = () => send({ type: 'unregister', topic: app.topic });
            row.insertCell().append(button);
          }
        }

        async function showCenter() {
          const entries = await transaction(['center'], 'readonly', (tx) => request(tx.objectStore('center').getAll()));
          entries.sort((a, b) => b.at - a.at);
          const known = categories();
          const center = $('center');
          center.replaceChildren();
          if (!entries.length) {
            const empty = document.createElement('p');
            empty.className = 'muted';
            empty.textContent = 'Nothing yet: notifications sent to the apps of this device appear here.';
            center.append(empty);
          }
          for (const entry of entries) {
            const banner = document.createElement('div');
            banner.className = 'banner';
            banner.dataset.apnsId = entry.apnsId;
            const app = document.createElement('div');
            app.className = 'app';
            const a = entry.attention;
            const how = !a ? '' : a.silenced ? ` · silenced by ${a.focus}` : a.through ? ` · ${a.level}, through ${a.focus} (${a.through})`
              : a.level !== 'active' ? ` · ${a.level}` : '';
            app.textContent = `${entry.topic} · ${new Date(entry.at).toLocaleTimeString()}${entry.silent ? ' · background (not shown)' : ''}${how}`;
            banner.append(app);
            if (a) {
              banner.dataset.level = a.level;
              banner.dataset.silenced = String(a.silenced);
              if (a.through) banner.dataset.through = a.through;
            }
            if (entry.pushType === 'webpush' && !entry.alert) {
              const line = document.createElement('div');
              line.className = 'body webpush-message';
              line.textContent = entry.problem ? `Web Push message not readable: ${entry.problem}` : `Web Push message for the app: ${entry.webPush}`;
              banner.append(line);
            }
            if (entry.alert) {
              for (const [part, text] of [['title', entry.alert.title], ['subtitle', entry.alert.subtitle], ['body', entry.alert.body]]) {
                if (!text) continue;
                const line = document.createElement('div');
                line.className = part;
                line.textContent = text;
                banner.append(line);
              }
            }
            const actions = entry.category && Array.isArray(known[entry.category]) ? known[entry.category] : [];
            if (actions.length) {
              const bar = document.createElement('div');
              bar.className = 'actions';
              for (const action of actions) {
                const button = document.createElement('button');
                button.type = 'button';
                button.className = action.destructive ? 'secondary destructive' : 'secondary';
                button.dataset.action = String(action.id);
                button.textContent = String(action.title ?? action.id);
                button.onclick = () => respond(entry.apnsId, String(action.id));
                bar.append(button);
              }
              banner.append(bar);
            }
            if (entry.response) {
              const response = document.createElement('div');
              response.className = 'response';
              response.dataset.response = entry.response;
              response.textContent = `chose ${entry.response}`;
              banner.append(response);
            }
            center.append(banner);
          }
        }

        function showPermission() {
          const wording = { default: 'not asked yet', granted: 'granted', denied: 'denied (allow them in the site settings)' };
          $('permission').textContent = 'Notification' in window ? (wording[Notification.permission] ?? Notification.permission) : 'not supported';
        }

        async function start() {
          db = await openDatabase();
          key = await identity();
          $('categories').value = JSON.stringify(categories(), null, 2);
          $('save-categories').onclick = async () => {
            try {
              const parsed = JSON.parse($('categories').value);
              if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('an object of category → actions');
              localStorage.setItem('herald-categories', JSON.stringify(parsed));
              $('categories-state').textContent = 'saved';
              await showCenter();
            } catch (error) { $('categories-state').textContent = 'not saved: ' + error.message; }
          };
          $('register-form').addEventListener('submit', (event) => {
            event.preventDefault();
            const topic = $('topic').value.trim();
            if (topic) send({ type: 'register', topic });
          });
          showFocus();
          $('focus-form').addEventListener('submit', saveFocus);
          $('ask-permission').onclick = async () => { if ('Notification' in window) await Notification.requestPermission(); showPermission(); };
          $('forget').onclick = async () => {
            db.close();
            await request(indexedDB.deleteDatabase('herald-device'));
            location.reload();
          };
          showPermission();
          await showApps();
          await showCenter();
          connect();
        }

        start().catch((error) => { setState('failed', 'failed'); log('this browser cannot be a device: ' + error); });

        """
}
