/// A Herald device in a browser: the page the device port serves at `/`, and its script.
///
/// The page is a device as `docs/device-protocol.md` describes one: a P-256 key made with
/// WebCrypto (the private key not extractable) and kept in IndexedDB, the protocol over a
/// WebSocket to `/device/v1` on the same host and port, app topics registered, pushes shown as
/// browser notifications (the Notifications API) and in an in-page notification center with the
/// category's action buttons, acks sent only once the notification is saved in IndexedDB
/// (repeats are dropped by apns-id and acked again), reconnection with exponential backoff and
/// jitter (the n-th failure waits between half and all of min(30 s, 0.5 s × 2ⁿ)).
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
        <table id="apps"><thead><tr><th>topic</th><th>device token</th><th>badge</th><th></th></tr></thead><tbody id="app-rows"></tbody></table>
        <h2>Categories</h2>
        <p class="muted">The actions shown for a notification whose <span class="mono">aps.category</span> names a category (as an app registers them with its notification center). JSON: category → actions.</p>
        <textarea id="categories" rows="4" cols="80" spellcheck="false"></textarea>
        <p><button type="button" id="save-categories" class="secondary">Save categories</button> <span id="categories-state" class="muted"></span></p>
        <h2>Notification center</h2>
        <div class="center" id="center"></div>
        <p class="muted" id="log"></p>

        """
}

/// The browser device's script (served as `/assets/device.js`).
enum BrowserDeviceScript {
    static let source = """
        const protocolVersion = 1;
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
            const request = indexedDB.open('herald-device', 1);
            request.onupgradeneeded = () => {
              const db = request.result;
              db.createObjectStore('identity');
              db.createObjectStore('apps', { keyPath: 'topic' });
              db.createObjectStore('seen', { keyPath: 'apnsId' }).createIndex('at', 'at');
              db.createObjectStore('center', { keyPath: 'apnsId' }).createIndex('at', 'at');
              db.createObjectStore('settings');
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
            const wait = backoff();
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
            case 'notification': return notification(frame);
            case 'error': return log(`gateway: ${frame.code}: ${frame.message}`);
          }
        }

        async function answer(challenge) {
          if (challenge.version !== protocolVersion || typeof challenge.nonce !== 'string') return socket.close();
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
          const now = Date.now();
          // Save first, ack after: the notification survives a closed tab; a repeat is acked and dropped.
          const fresh = await transaction(['seen', 'center', 'apps'], 'readwrite', (tx) => {
            const seen = tx.objectStore('seen');
            return request(seen.get(apnsId)).then((known) => {
              if (known) return false;
              seen.put({ apnsId, at: now });
              const text = alertText(aps);
              const entry = {
                apnsId, topic: frame.topic, at: now, pushType: frame['push-type'], priority: frame.priority,
                alert: text, category: typeof aps.category === 'string' ? aps.category : null,
                badge: Number.isInteger(aps.badge) ? aps.badge : null, sound: aps.sound ?? null,
                silent: !text, response: null,
              };
              tx.objectStore('center').put(entry);
              if (entry.badge !== null) {
                const apps = tx.objectStore('apps');
                request(apps.get(frame.topic)).then((app) => { if (app) { app.badge = entry.badge; apps.put(app); } });
              }
              return entry;
            });
          });
          const entry = await fresh;
          send({ type: 'ack', ids: [apnsId] });
          if (!entry) return;
          await trimStores();
          if (!entry.silent) present(entry);
          await showCenter();
          await showApps();
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
          for (const app of apps) {
            const row = rows.insertRow();
            row.dataset.topic = app.topic;
            row.insertCell().textContent = app.topic;
            const token = row.insertCell();
            token.className = 'mono token';
            token.textContent = app.token;
            row.insertCell().textContent = String(app.badge ?? 0);
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
          for (const entry of entries) {
            const banner = document.createElement('div');
            banner.className = 'banner';
            banner.dataset.apnsId = entry.apnsId;
            const app = document.createElement('div');
            app.className = 'app';
            app.textContent = `${entry.topic} · ${new Date(entry.at).toLocaleTimeString()}${entry.silent ? ' · background (not shown)' : ''}`;
            banner.append(app);
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
          $('permission').textContent = 'Notification' in window ? Notification.permission : 'not supported';
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
