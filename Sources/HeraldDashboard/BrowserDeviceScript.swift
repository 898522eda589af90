/// The browser device's script (served as `/assets/device.js`), in two parts: the device (its
/// key, the connection, Web Push) and the notification center the page shows.
enum BrowserDeviceScript {
    static let source = connection + center

    /// IndexedDB, the key, the connection and its frames, Web Push subscriptions and messages.
    static let connection = """
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

        // A Declarative Web Push message (the Push API's parser, as HeraldCore's reads it): shown
        // by the user agent without app code. navigate by the URL Standard (the browser's URL);
        // members of the wrong type ignored; app_badge only at the top level, a whole number.
        function declarative(text) {
          let message;
          try { message = JSON.parse(text); } catch { return null; }
          if (!message || typeof message !== 'object' || Array.isArray(message) || message.web_push !== 8030) return null;
          const n = message.notification;
          if (!n || typeof n !== 'object' || Array.isArray(n) || typeof n.title !== 'string' || typeof n.navigate !== 'string') return null;
          let navigate;
          try { navigate = new URL(n.navigate).href; } catch { return null; }
          const badge = message.app_badge;
          return { title: n.title, subtitle: '', body: typeof n.body === 'string' ? n.body : '',
                   badge: Number.isSafeInteger(badge) && badge >= 0 ? badge : null, navigate };
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

        """
}
