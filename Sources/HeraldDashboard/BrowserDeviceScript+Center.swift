extension BrowserDeviceScript {
    /// Notifications, Focus and interruption levels, the notification center and the page.
    static let center = """
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
