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
