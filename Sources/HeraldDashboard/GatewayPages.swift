/// The gateway's dashboard (admin port, `/dashboard/…`): what the inspection views answer, as
/// pages. Every page reads the same fields as its JSON view (`docs/inspection.md`).
public enum GatewayPages {
    public static let navigation: [DashboardRenderer.NavigationItem] = [
        .init("Overview", "/dashboard"),
        .init("Devices", "/dashboard/devices"),
        .init("Tokens", "/dashboard/tokens"),
        .init("Held", "/dashboard/held"),
        .init("Receipts", "/dashboard/receipts"),
        .init("Feedback", "/dashboard/feedback"),
        .init("Teams", "/dashboard/teams"),
        .init("Live", "/dashboard/live"),
    ]

    public static func renderer() -> DashboardRenderer {
        DashboardRenderer(product: "Herald gateway", navigation: navigation, templates: templates)
    }

    static let templates: [String: String] = [
        "overview": overview, "devices": devices, "tokens": tokens, "held": held, "receipts": receipts,
        "feedback": feedback, "teams": teams, "live": live,
    ]

    static let overview = """
        <div class="cards">
        <div class="card"><div class="value" id="node">{{node}}</div><div class="label">node</div></div>
        <div class="card"><div class="value">{{environment}}</div><div class="label">environment</div></div>
        <div class="card"><div class="value" id="connected-count">{{connected}}</div><div class="label">devices connected</div></div>
        <div class="card"><div class="value" id="held-count">{{held}}</div><div class="label">notifications held</div></div>
        <div class="card"><div class="value">{{teams}}</div><div class="label">teams</div></div>
        </div>
        {{#devicePage}}<p>A device in this browser: <a href="{{devicePage}}" id="device-page">{{devicePage}}</a> (the device port's page).</p>{{/devicePage}}
        <h2>Throughput</h2>
        <div class="graphs">
        <div><canvas class="graph" id="throughput" data-series="herald_pushes_accepted_total,herald_device_deliveries_total,herald_device_acks_total" data-labels="accepted/s,sent to devices/s,acked/s"></canvas>
        <div class="legend" id="throughput-legend"></div></div>
        <div><canvas class="graph" id="latency" data-histograms="herald_intake_commit_seconds,herald_intake_answer_seconds,herald_device_ack_seconds" data-labels="commit p50,commit p99,answer p50,answer p99,device ack p50,device ack p99"></canvas>
        <div class="legend" id="latency-legend"></div></div>
        </div>
        <p class="muted">From this gateway's <a href="/metrics">/metrics</a>, read every 2 s by this page; latency in milliseconds (a store commit of one batch; a notification written to its device until its ack).</p>

        """

    static let devices = """
        <form class="filters" method="get">
        <label>show<select name="connected"><option value="">all enrolled devices</option><option value="true"{{#connectedOnly}} selected{{/connectedOnly}}>connected now</option></select></label>
        <button>Show</button>
        </form>
        <table id="devices">
        <thead><tr><th>device</th><th>connected</th><th>apps (active tokens)</th><th>enrolled</th><th>last seen</th></tr></thead>
        <tbody>
        {{#items}}<tr><td class="mono">{{id}}</td><td>{{#connected}}<strong class="state-active">connected</strong>{{/connected}}{{^connected}}<span class="muted">no</span>{{/connected}}</td>
        <td>{{#apps}}<a href="/dashboard/tokens?topic={{.}}">{{.}}</a> {{/apps}}{{^apps}}<span class="muted">none</span>{{/apps}}</td>
        <td><time data-ms="{{enrolledAt}}">{{enrolledAtText}}</time></td><td><time data-ms="{{lastSeenAt}}">{{lastSeenAtText}}</time></td></tr>
        {{/items}}
        {{^items}}<tr><td colspan="5" class="muted">no devices</td></tr>{{/items}}
        </tbody></table>
        {{#next}}<p class="pager"><a href="?{{query}}after={{next}}">next page</a></p>{{/next}}

        """

    static let tokens = """
        <form class="filters" method="get">
        <label>topic<input name="topic" value="{{topic}}" placeholder="com.example.app"></label>
        <label>device<input name="device" value="{{device}}" placeholder="device id"></label>
        <label>state<select name="active"><option value="">all</option><option value="true"{{#activeOnly}} selected{{/activeOnly}}>active only</option></select></label>
        <button>Show</button>
        </form>
        {{#hasSummary}}<h2>On this page, by topic</h2>
        <table id="token-summary"><thead><tr><th>topic</th><th>active</th><th>unregistered</th><th>expired</th></tr></thead><tbody>
        {{#summary}}<tr><td>{{topic}}</td><td class="state-active">{{active}}</td><td class="state-unregistered">{{unregistered}}</td><td class="state-expired">{{expired}}</td></tr>
        {{/summary}}</tbody></table><h2>Tokens</h2>{{/hasSummary}}
        <table id="tokens">
        <thead><tr><th>token</th><th>topic</th><th>environment</th><th>device</th><th>state</th><th>issued</th><th>unregistered</th></tr></thead>
        <tbody>
        {{#items}}<tr><td class="mono">{{token}}</td><td>{{topic}}</td><td>{{environment}}</td><td class="mono">{{device}}</td><td class="state-{{state}}">{{state}}</td>
        <td><time data-ms="{{createdAt}}">{{createdAtText}}</time></td><td>{{#unregisteredAt}}<time data-ms="{{unregisteredAt}}">{{unregisteredAtText}}</time>{{/unregisteredAt}}</td></tr>
        {{/items}}
        {{^items}}<tr><td colspan="7" class="muted">no tokens</td></tr>{{/items}}
        </tbody></table>
        {{#next}}<p class="pager"><a href="?{{query}}after={{next}}">next page</a></p>{{/next}}

        """

    static let held = """
        <form class="filters" method="get">
        <label>topic<input name="topic" value="{{topic}}" placeholder="com.example.app"></label>
        <label>device<input name="device" value="{{device}}" placeholder="device id"></label>
        <label>token<input name="token" value="{{token}}" placeholder="hex"></label>
        <button>Show</button>
        </form>
        <table id="held">
        <thead><tr><th>seq</th><th>apns-id</th><th>topic</th><th>type</th><th>priority</th><th>collapse id</th><th>received</th><th>discarded at</th><th>sent</th><th>payload</th></tr></thead>
        <tbody>
        {{#items}}<tr><td>{{seq}}</td><td class="mono"><a href="/dashboard/receipts?apns-id={{apnsId}}">{{apnsId}}</a></td><td>{{topic}}</td><td>{{pushType}}</td><td>{{priority}}</td><td>{{collapseId}}</td>
        <td><time data-ms="{{receivedAt}}">{{receivedAtText}}</time></td><td><time data-ms="{{discardAt}}">{{discardAtText}}</time></td>
        <td>{{#sentAt}}<time data-ms="{{sentAt}}">{{sentAtText}}</time>{{/sentAt}}{{^sentAt}}<span class="muted">not yet</span>{{/sentAt}}</td><td class="mono">{{payload}}</td></tr>
        {{/items}}
        {{^items}}<tr><td colspan="10" class="muted">nothing held</td></tr>{{/items}}
        </tbody></table>
        {{#next}}<p class="pager"><a href="?{{query}}after={{next}}">next page</a></p>{{/next}}

        """

    static let receipts = """
        <form class="filters" method="get">
        <label>apns-id<input name="apns-id" value="{{apnsId}}" size="40" placeholder="123e4567-e89b-12d3-a456-426614174000"></label>
        <button>Look up</button>
        </form>
        {{#refusal}}<p class="message" id="message">{{refusal}}</p>{{/refusal}}
        {{#receipt}}<div id="receipt">
        {{#deliveries}}<h2>To <span class="mono">{{token}}</span> ({{topic}}): <span class="status-{{status}}" data-status="{{status}}">{{status}}</span></h2>
        <ol class="timeline">{{#events}}<li><span class="status-{{status}}">{{status}}</span> at <time data-ms="{{timestamp}}">{{timestampText}}</time></li>{{/events}}</ol>
        {{/deliveries}}</div>{{/receipt}}

        """

    static let feedback = """
        <form class="filters" method="get">
        <label>topic<input name="topic" value="{{topic}}" placeholder="com.example.app" required></label>
        <label>environment<select name="environment"><option value="">this gateway's</option><option{{#development}} selected{{/development}}>development</option><option{{#production}} selected{{/production}}>production</option></select></label>
        <button>Show</button>
        </form>
        {{#refusal}}<p class="message" id="message">{{refusal}}</p>{{/refusal}}
        {{#list}}<p class="muted">Pending feedback for {{topic}} ({{environment}}): read here without clearing it; the legacy feedback service clears what it reads.</p>
        <table id="feedback"><thead><tr><th>token</th><th>unregistered</th></tr></thead><tbody>
        {{#items}}<tr><td class="mono">{{token}}</td><td><time data-ms="{{timestamp}}">{{timestampText}}</time></td></tr>{{/items}}
        {{^items}}<tr><td colspan="2" class="muted">no feedback</td></tr>{{/items}}
        </tbody></table>{{/list}}

        """

    static let teams = """
        <table id="teams">
        <thead><tr><th>team</th><th>topics</th><th>keys</th></tr></thead>
        <tbody>
        {{#teams}}<tr><td class="mono">{{teamId}}</td><td>{{#topics}}{{.}}<br>{{/topics}}</td>
        <td>{{#keys}}<div><span class="mono">{{keyId}}</span> {{#environment}}({{environment}}){{/environment}} added <time data-ms="{{createdAt}}">{{createdAtText}}</time>{{#revokedAt}} — <span class="state-unregistered">revoked <time data-ms="{{revokedAt}}">{{revokedAtText}}</time></span>{{/revokedAt}}</div>{{/keys}}</td></tr>
        {{/teams}}
        {{^teams}}<tr><td colspan="3" class="muted">no teams: add a key with herald keys add</td></tr>{{/teams}}
        </tbody></table>

        """

    static let live = """
        <form class="filters" id="live-filter">
        <label>topic<input name="topic" id="live-topic" placeholder="all topics"></label>
        <button type="submit">Watch</button>
        <span id="live-state" class="muted">connecting…</span>
        </form>
        <table id="events"><thead><tr><th>time</th><th>event</th><th>apns-id</th><th>topic</th><th>device</th><th>outcome / status</th></tr></thead>
        <tbody id="event-rows"></tbody></table>
        <p class="muted">Server-sent events from <span class="mono">/v1/events</span>; newest first, the last 500 kept.</p>

        """
}
