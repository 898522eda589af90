/// The provider's dashboard (`herald provider`, `/dashboard/…`): registrations, templates with
/// their previews, the send form, schedules on a timeline, send reports with receipts. Behind a
/// login with the REST API's token.
public enum ProviderPages {
    public static let navigation: [DashboardRenderer.NavigationItem] = [
        .init("Registrations", "/dashboard"),
        .init("Templates", "/dashboard/templates"),
        .init("Send", "/dashboard/send"),
        .init("Schedules", "/dashboard/schedules"),
        .init("Reports", "/dashboard/reports"),
    ]

    public static func renderer() -> DashboardRenderer {
        DashboardRenderer(product: "Herald provider", navigation: navigation, templates: templates)
    }

    static let templates: [String: String] = [
        "login": login, "registrations": registrations, "templates": templatesPage, "send": send, "schedules": schedules,
        "reports": reports, "report": report,
    ]

    static let login = """
        {{#message}}<p class="message" id="message">{{message}}</p>{{/message}}
        <form method="post" action="/dashboard/login" class="center" id="login">
        <label>API token (the provider's <span class="mono">DIR/api-token</span>)<input type="password" name="token" id="token" autocomplete="current-password" required autofocus></label>
        <button type="submit">Sign in</button>
        </form>

        """

    static let counts = """
        <table id="{{id}}"><thead><tr><th>{{title}}</th><th>registrations</th><th></th></tr></thead><tbody>
        {{#rows}}<tr data-value="{{value}}" data-count="{{count}}"><td>{{value}}</td><td>{{count}}</td><td><progress max="{{total}}" value="{{count}}"></progress></td></tr>{{/rows}}
        {{^rows}}<tr><td colspan="3" class="muted">none</td></tr>{{/rows}}
        </tbody></table>

        """

    static let registrations = """
        <div class="cards">
        <div class="card"><div class="value" id="total">{{total}}</div><div class="label">registrations</div></div>
        <div class="card"><div class="value">{{languageCount}}</div><div class="label">languages</div></div>
        <div class="card"><div class="value">{{zoneCount}}</div><div class="label">time zones</div></div>
        <div class="card"><div class="value">{{topicCount}}</div><div class="label">topics</div></div>
        </div>
        <div class="graphs">
        <div><h2>By language</h2>{{#byLanguage}}\(counts){{/byLanguage}}</div>
        <div><h2>By time zone</h2>{{#byZone}}\(counts){{/byZone}}</div>
        <div><h2>By topic</h2>{{#byTopic}}\(counts){{/byTopic}}</div>
        </div>

        """

    static let templatesPage = """
        <form class="filters" method="get">
        <label>arguments for the preview, one a line<textarea name="args" rows="2" cols="30">{{args}}</textarea></label>
        <button>Preview</button>
        </form>
        <p class="muted">Each language a registration has, and each translation: the text a device in that language gets, with the fallback ({{fallback}}, the provider's default language) where the template has no translation.</p>
        {{#items}}<section class="template" data-template="{{id}}">
        <h2>{{id}} <span class="muted">({{argumentsText}})</span></h2>
        <div class="preview">
        {{#previews}}<div class="banner" data-language="{{language}}" data-used="{{used}}">
        <div class="app">{{language}}{{#fallback}} → <span class="fallback">falls back to {{used}}</span>{{/fallback}}{{#registrationsText}} · {{registrationsText}}{{/registrationsText}}</div>
        {{#title}}<div class="title">{{title}}</div>{{/title}}{{#subtitle}}<div class="subtitle">{{subtitle}}</div>{{/subtitle}}<div class="body">{{body}}</div>
        </div>{{/previews}}
        </div></section>{{/items}}
        {{^items}}<p class="muted" id="no-templates">No templates yet: PUT /v1/templates/{id} (docs/provider-service.md).</p>{{/items}}

        """

    static let send = """
        {{#message}}<p class="message" id="message">{{message}}</p>{{/message}}
        <form method="get" action="/dashboard/send" id="send-form">
        <h2>To</h2>
        <div class="filters">
        <label>who<select name="target"><option value="segment"{{#segment}} selected{{/segment}}>a topic's registrations (segment)</option><option value="user"{{#user}} selected{{/user}}>a user's devices</option><option value="token"{{#token}} selected{{/token}}>one token</option></select></label>
        <label data-for="segment"{{^segment}} hidden{{/segment}}>topic (segment)<input name="topic" value="{{form.topic}}" placeholder="com.example.app"></label>
        <label data-for="segment"{{^segment}} hidden{{/segment}}>tags, all of (comma-separated)<input name="tags" value="{{form.tags}}"></label>
        <label data-for="segment"{{^segment}} hidden{{/segment}}>languages, one of (comma-separated)<input name="languages" value="{{form.languages}}" placeholder="fr, de"></label>
        <label data-for="user token"{{#segment}} hidden{{/segment}}>user id or token<input name="recipient" value="{{form.recipient}}"></label>
        </div>
        <h2>Message</h2>
        <div class="filters">
        <label>template<select name="template"><option value="">— an alert written here —</option>{{#templateIds}}<option{{#selected}} selected{{/selected}}>{{id}}</option>{{/templateIds}}</select></label>
        <label>template arguments, one a line<textarea name="args" rows="2" cols="24">{{form.args}}</textarea></label>
        <label>title<input name="title" value="{{form.title}}"></label>
        <label>body<input name="body" value="{{form.body}}" size="40"></label>
        <label>badge<input name="badge" value="{{form.badge}}" size="4" inputmode="numeric"></label>
        <label>sound<input name="sound" value="{{form.sound}}" size="10"></label>
        <label>category<input name="category" value="{{form.category}}" size="16"></label>
        </div>
        <p><button type="submit" name="step" value="count" id="count">Count recipients</button></p>
        {{#counted}}<input type="hidden" name="csrf" value="{{csrf}}"><input type="hidden" name="idempotency" value="{{idempotency}}">
        <input type="hidden" name="countedTarget" value="{{countedTarget}}"><input type="hidden" name="counted" value="{{recipients}}">
        <p class="notice" id="recipient-count" data-count="{{recipients}}">{{#sendable}}This send reaches <strong>{{recipientsText}}</strong>.{{/sendable}}{{^sendable}}No registration matches: there is nobody to send to.{{/sendable}}</p>
        <p><button type="submit" formmethod="post" formaction="/dashboard/send" id="send"{{^sendable}} disabled{{/sendable}}>Send to {{recipientsText}}</button></p>{{/counted}}
        </form>

        """

    static let schedules = """
        {{#hasItems}}<p class="muted">The next occurrences over the coming {{days}} days in every zone each schedule runs in (as registered now), on one time axis from <time data-ms="{{from}}">{{fromText}}</time> to <time data-ms="{{to}}">{{toText}}</time>.</p>{{/hasItems}}
        {{#items}}<section class="schedule" data-schedule="{{id}}">
        <h2><span class="mono">{{id}}</span> <span class="muted">{{state}} · {{timing}} · {{summary}}</span></h2>
        <div class="zones" data-timeline data-from="{{from}}" data-to="{{to}}">
        {{#zones}}<div class="zone-row" data-zone="{{zone}}"><div>{{zone}} <span class="muted">({{recipients}})</span></div><div class="zone-track">{{#runs}}<span class="tick" data-ms="{{dueAt}}" title="{{dueAtText}}"></span>{{/runs}}</div></div>{{/zones}}
        {{^zones}}<p class="muted">nothing due in the coming {{days}} days</p>{{/zones}}
        </div>
        <div class="axis"><time data-ms="{{from}}">{{fromText}}</time><time data-ms="{{to}}">{{toText}}</time></div>
        <ul class="runs">{{#next}}<li>{{zone}}: <time data-ms="{{dueAt}}">{{dueAtText}}</time> ({{local}} local), {{recipientsText}}</li>{{/next}}</ul>
        </section>{{/items}}
        {{^items}}<p class="muted" id="no-schedules">No schedules: POST /v1/schedules (docs/provider-service.md).</p>{{/items}}

        """

    static let reports = """
        <table id="reports"><thead><tr><th>send</th><th>started</th><th>state</th><th>outcomes</th><th>schedule</th></tr></thead><tbody>
        {{#items}}<tr data-send="{{id}}"><td class="mono"><a href="/dashboard/reports/{{id}}">{{id}}</a></td><td><time data-ms="{{createdAt}}">{{createdAtText}}</time></td><td>{{state}}</td>
        <td class="counts">{{#counts}}<span class="status-{{key}}{{#failure}} failure{{/failure}}">{{key}}: {{count}}</span>{{/counts}}</td><td class="mono">{{scheduleId}}</td></tr>{{/items}}
        {{^items}}<tr><td colspan="5" class="muted">no sends yet</td></tr>{{/items}}
        </tbody></table>

        """

    static let report = """
        <p>Started <time data-ms="{{createdAt}}">{{createdAtText}}</time>{{#scheduleId}}, a run of schedule <span class="mono">{{scheduleId}}</span>{{/scheduleId}}.
        <span class="counts">{{#counts}}<span class="status-{{key}}{{#failure}} failure{{/failure}}">{{key}}: {{count}}</span>{{/counts}}</span></p>
        {{#receiptError}}<p class="message">{{receiptError}}</p>{{/receiptError}}
        <table id="deliveries"><thead><tr><th>token</th><th>language</th><th>status</th><th>apns-id</th><th>attempts</th><th>receipt now</th></tr></thead><tbody>
        {{#deliveries}}<tr data-token="{{token}}"><td class="mono">{{token}}</td><td>{{language}}</td><td class="status-{{status}}{{#failure}} status-failure{{/failure}}">{{status}} {{reason}}{{error}}</td><td class="mono">{{apnsId}}</td><td>{{attempts}}</td><td class="receipt status-{{receipt}}" data-receipt="{{receipt}}">{{receipt}}</td></tr>{{/deliveries}}
        </tbody></table>
        {{#hasPruned}}<p>Pruned (410 Unregistered): {{#pruned}}<span class="mono">{{.}}</span> {{/pruned}}</p>{{/hasPruned}}

        """
}
