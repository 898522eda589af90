/// The layout every page is rendered inside, and the pages both products share.
enum LayoutTemplates {
    static let all: [String: String] = [
        "layout": layout,
        "message": message,
    ]

    /// Scripts are modules served from `/assets/` (the pages' Content-Security-Policy allows no
    /// inline script); `times.js` turns every `<time data-ms>` into the reader's local time.
    static let layout = """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>{{title}} · {{product}}</title>
        <link rel="stylesheet" href="/assets/dashboard.css">
        <link rel="icon" href="/assets/favicon.svg" type="image/svg+xml">
        <script type="module" src="/assets/times.js"></script>
        {{#scripts}}<script type="module" src="/assets/{{.}}"></script>
        {{/scripts}}
        </head>
        <body>
        <header>
        <span class="product">{{product}}</span>
        <nav>{{#nav}}<a href="{{path}}"{{#current}} aria-current="page"{{/current}}>{{title}}</a>{{/nav}}</nav>
        {{#signedIn}}<form method="post" action="/dashboard/logout" class="logout"><button>Sign out</button></form>{{/signedIn}}
        </header>
        <main>
        <h1>{{title}}</h1>
        {{{body}}}
        </main>
        </body>
        </html>

        """

    static let message = """
        <p class="message" id="message">{{message}}</p>

        """
}

/// The static files pages load: one stylesheet and small JavaScript modules, no build step.
public enum DashboardAssets {
    public struct Asset: Sendable {
        public var body: String
        public var contentType: String
    }

    /// The asset named `name` (the part of the path after `/assets/`), or `nil`.
    public static func asset(named name: String) -> Asset? {
        switch name {
        case "dashboard.css": return Asset(body: stylesheet, contentType: "text/css; charset=utf-8")
        case "favicon.svg": return Asset(body: favicon, contentType: "image/svg+xml")
        default:
            guard let script = DashboardScripts.all[name] else { return nil }
            return Asset(body: script, contentType: "text/javascript; charset=utf-8")
        }
    }

    /// Headers every page and asset carries: no framing, no sniffing, scripts and connections
    /// only from where the page came from (and the device port's WebSocket for the browser device).
    public static let securityHeaders: [(String, String)] = [
        ("content-security-policy",
         "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self' wss: ws:; frame-ancestors 'none'; form-action 'self'; base-uri 'none'"),
        ("x-content-type-options", "nosniff"),
        ("x-frame-options", "DENY"),
        ("referrer-policy", "same-origin"),
        ("cache-control", "no-store"),
    ]

    /// A bell: the product's icon (SVG, no bytes to encode).
    static let favicon = """
        <svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="7" fill="#0a64c8"/>        <path d="M16 6a7 7 0 0 0-7 7v5l-2 3v1h18v-1l-2-3v-5a7 7 0 0 0-7-7zm-3 17a3 3 0 0 0 6 0z" fill="#fff"/></svg>
        """

    static let stylesheet = """
        :root { --fg: #1d1d1f; --muted: #6e6e73; --line: #d2d2d7; --accent: #0a64c8; --bg: #f5f5f7; --ok: #1a7f37; --bad: #c62828; --warn: #a15c00; }
        * { box-sizing: border-box; }
        body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); }
        header { display: flex; align-items: center; gap: 1.5em; padding: .6em 1.2em; background: #fff; border-bottom: 1px solid var(--line); flex-wrap: wrap; }
        header .product { font-weight: 600; }
        nav a { margin-right: 1em; color: var(--accent); text-decoration: none; }
        nav a[aria-current=page] { color: var(--fg); font-weight: 600; border-bottom: 2px solid var(--accent); }
        .logout { margin-left: auto; }
        main { padding: 1em 1.2em 3em; max-width: 1200px; }
        h1 { font-size: 1.4em; margin: .3em 0 .8em; }
        h2 { font-size: 1.1em; margin: 1.4em 0 .5em; }
        table { border-collapse: collapse; width: 100%; background: #fff; border: 1px solid var(--line); }
        th, td { text-align: left; padding: .35em .6em; border-bottom: 1px solid var(--line); vertical-align: top; }
        th { background: #fafafa; font-weight: 600; }
        td.mono, .mono { font-family: ui-monospace, "SF Mono", Menlo, monospace; font-size: 12px; word-break: break-all; }
        .cards { display: flex; gap: 1em; flex-wrap: wrap; margin-bottom: 1em; }
        .card { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: .8em 1.1em; min-width: 11em; }
        .card .value { font-size: 1.6em; font-weight: 600; }
        .card .label { color: var(--muted); }
        .state-active, .status-acked, .status-200 { color: var(--ok); }
        .state-unregistered, .state-expired, .status-dropped, .status-expired, .status-failed { color: var(--bad); }
        .status-stored, .status-replaced, .status-sent, .status-pending { color: var(--warn); }
        form.filters, div.filters { display: flex; gap: .6em; align-items: end; flex-wrap: wrap; margin-bottom: 1em; }
        div.filters label { flex: 0 1 auto; }
        .counts span { display: inline-block; margin-right: 1.2em; }
        .status-failure, .counts .failure { color: var(--bad); }
        h2 .muted { font-size: .8em; font-weight: normal; }
        .axis { display: flex; justify-content: space-between; color: var(--muted); font-size: 12px; }
        [hidden] { display: none !important; }
        label { display: flex; flex-direction: column; gap: .2em; color: var(--muted); font-size: 12px; }
        input, select, textarea, button { font: inherit; padding: .35em .5em; border: 1px solid var(--line); border-radius: 6px; background: #fff; color: var(--fg); }
        button { background: var(--accent); color: #fff; border-color: var(--accent); cursor: pointer; }
        button.secondary { background: #fff; color: var(--accent); }
        .message { padding: .8em 1em; background: #fff; border: 1px solid var(--line); border-left: 4px solid var(--bad); }
        .notice { padding: .8em 1em; background: #fff; border: 1px solid var(--line); border-left: 4px solid var(--ok); }
        .muted { color: var(--muted); }
        .timeline { list-style: none; padding: 0; margin: 0; border-left: 2px solid var(--line); }
        .timeline li { margin: 0 0 .4em; padding-left: .8em; position: relative; }
        .timeline li::before { content: ""; position: absolute; left: -6px; top: .45em; width: 10px; height: 10px; border-radius: 50%; background: var(--accent); }
        canvas.graph { width: 100%; height: 160px; background: #fff; border: 1px solid var(--line); border-radius: 8px; }
        .graphs { display: grid; grid-template-columns: repeat(auto-fit, minmax(340px, 1fr)); gap: 1em; }
        .legend span { margin-right: 1em; }
        .legend i { display: inline-block; width: 10px; height: 10px; margin-right: .3em; border-radius: 2px; }
        #events { max-height: 60vh; overflow: auto; }
        .center { display: flex; flex-direction: column; gap: .6em; max-width: 640px; }
        .banner { background: #fff; border: 1px solid var(--line); border-radius: 12px; padding: .7em 1em; box-shadow: 0 1px 3px rgba(0,0,0,.08); }
        .banner .app { color: var(--muted); font-size: 12px; }
        .banner .title { font-weight: 600; }
        .banner .actions { margin-top: .5em; display: flex; gap: .5em; }
        .banner .response { margin-top: .4em; color: var(--ok); font-size: 12px; }
        .zone-row { display: grid; grid-template-columns: 14em 1fr; align-items: center; gap: .5em; margin: .3em 0; }
        .zone-track { position: relative; height: 22px; background: #fff; border: 1px solid var(--line); border-radius: 4px; }
        .zone-track .tick { position: absolute; top: 2px; width: 3px; height: 16px; background: var(--accent); }
        .preview { display: grid; grid-template-columns: repeat(auto-fill, minmax(260px, 1fr)); gap: .8em; }
        .pager { margin-top: .8em; }

        """
}
