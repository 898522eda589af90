import Crypto
import Foundation
import HTTPTypes
import HeraldCore
import HeraldDashboard
import HeraldHTTP
import HeraldProvider
import Hummingbird
import NIOCore

/// The provider's dashboard (`/dashboard/…`): registrations by language, zone and topic;
/// templates with a preview per language (with the fallback); a send form that counts the
/// recipients before it sends; schedules with each zone's next occurrences on a timeline; send
/// reports with the gateway's receipts.
///
/// Authentication is the REST API's token: the login page takes it (compared in constant time)
/// and starts a session (a random id in an `HttpOnly`, `SameSite=Strict` cookie, kept in memory
/// for 12 hours; at most ``DashboardSessions/maximumSessions``); a request with the API's
/// `Authorization: Bearer` header is let in too. Every form that changes something carries the
/// session's CSRF token, and a POST from another origin is refused.
struct ProviderDashboard: Sendable {
    let service: ProviderService
    let apiToken: String
    let sessions: DashboardSessions
    let renderer = ProviderPages.renderer()
    static let cookie = "herald_session"

    init(service: ProviderService, apiToken: String) {
        self.service = service
        self.apiToken = apiToken
        self.sessions = DashboardSessions(now: { service.nowMilliseconds() })
    }

    func register(on router: Router<BasicRequestContext>) {
        router.get("/") { _, _ in WebResponse.redirect("/dashboard") }
        WebResponse.registerAssets(on: router)
        let pages = router.group("dashboard")
        pages.get("login") { _, _ in login(nil) }
        pages.post("login") { request, _ in try await signIn(request) }
        pages.post("logout") { request, _ in
            if let id = request.cookies[Self.cookie]?.value { sessions.end(id) }
            var response = WebResponse.redirect("/dashboard/login")
            response.setCookie(Cookie(name: Self.cookie, value: "", maxAge: 0, path: "/dashboard", httpOnly: true, sameSite: .strict))
            return response
        }
        pages.get { request, _ in try await page(request, "/dashboard") { _ in try await registrations() } }
        pages.get("templates") { request, _ in try await page(request, "/dashboard/templates") { _ in try await templates(request) } }
        pages.get("send") { request, _ in try await page(request, "/dashboard/send") { session in try await sendForm(request, session: session) } }
        pages.post("send") { request, _ in try await page(request, "/dashboard/send", changes: true) { session in try await send(request, session: session) } }
        pages.get("schedules") { request, _ in try await page(request, "/dashboard/schedules") { _ in try await schedules() } }
        pages.get("reports") { request, _ in try await page(request, "/dashboard/reports") { _ in try await reports() } }
        pages.get("reports/:id") { request, context in
            let id = context.parameters.get("id") ?? ""
            return try await page(request, "/dashboard/reports") { _ in try await report(id) }
        }
    }

    // MARK: sessions and pages

    /// Runs `render` for a signed-in request; else the login page. A page that changes something
    /// (`changes`) needs the session's CSRF token and a same-origin request.
    private func page(
        _ request: Request, _ section: String, changes: Bool = false, render: (DashboardSessions.Session) async throws -> Response
    ) async throws -> Response {
        guard let session = signedIn(request) else { return WebResponse.redirect("/dashboard/login") }
        if changes {
            if let origin = request.headers[.origin], let host = request.head.authority, origin != "http://\(host)", origin != "https://\(host)" {
                return WebResponse.page(.forbidden, renderer.renderMessage(title: "Refused", message: "a form from another site (\(origin)) cannot change this provider", section: section))
            }
        }
        do {
            return try await render(session)
        } catch let error as ProviderError {
            return WebResponse.page(.init(code: error.kind.httpStatus), renderer.renderMessage(title: "Cannot do this", message: error.message, section: section))
        }
    }

    private func signedIn(_ request: Request) -> DashboardSessions.Session? {
        if let header = request.headers[.authorization], header.count > 7, header.prefix(7).lowercased() == "bearer ",
           SecretComparison.equal(header.dropFirst(7).trimmingCharacters(in: .whitespaces), apiToken) {
            return DashboardSessions.Session(id: "", csrf: "", expiresAt: .max)
        }
        guard let id = request.cookies[Self.cookie]?.value else { return nil }
        return sessions.session(id)
    }

    private func login(_ message: String?, status: HTTPResponse.Status = .ok) -> Response {
        var context: [String: Any] = [:]
        if let message { context["message"] = message }
        return WebResponse.page(status, renderer.render("login", title: "Sign in", section: "", context: context))
    }

    private struct LoginForm: Decodable { var token: String? }

    private func signIn(_ request: Request) async throws -> Response {
        let form = try? URLEncodedFormDecoder().decode(LoginForm.self, from: String(buffer: try await request.body.collect(upTo: 4096)))
        guard let token = form?.token, SecretComparison.equal(token.trimmingCharacters(in: .whitespacesAndNewlines), apiToken) else {
            return login("That is not this provider's API token (it is in DIR/api-token).", status: .unauthorized)
        }
        let session = sessions.start()
        var response = WebResponse.redirect("/dashboard")
        response.setCookie(Cookie(name: Self.cookie, value: session.id, maxAge: DashboardSessions.lifetimeSeconds, path: "/dashboard", httpOnly: true, sameSite: .strict))
        return response
    }

    func render(_ name: String, _ title: String, _ section: String, _ context: [String: Any], scripts: [String] = []) -> Response {
        var context = context
        context["signedIn"] = true
        if !scripts.isEmpty { context["scripts"] = scripts }
        return WebResponse.page(.ok, renderer.render(name, title: title, section: section, context: context))
    }

    // MARK: registrations

    private func registrations() async throws -> Response {
        let counts = try await service.registrationCounts()
        func table(_ id: String, _ title: String, _ rows: [(String, Int)]) -> [String: Any] {
            ["id": id, "title": title, "rows": rows.map { ["value": $0.0, "count": $0.1, "total": max(counts.total, 1)] }]
        }
        return render("registrations", "Registrations", "/dashboard", [
            "total": counts.total, "languageCount": counts.byLanguage.count, "zoneCount": counts.byZone.count, "topicCount": counts.byTopic.count,
            "byLanguage": table("by-language", "language", counts.byLanguage),
            "byZone": table("by-zone", "time zone", counts.byZone),
            "byTopic": table("by-topic", "topic", counts.byTopic),
        ])
    }

    // MARK: templates

    private struct PreviewForm: Decodable { var args: String? }

    private func templates(_ request: Request) async throws -> Response {
        let form = (try? URLEncodedFormDecoder().decode(PreviewForm.self, from: request.uri.query ?? "")) ?? PreviewForm()
        let arguments = Self.lines(form.args)
        let all = try await service.templates(after: nil, limit: 500)
        let counts = try await service.registrationCounts()
        let registered = Dictionary(counts.byLanguage, uniquingKeysWith: +)
        let fallback = await service.defaultLanguage
        let items = all.map { template -> [String: Any] in
            let placeholders = (0..<template.argumentCount).map { index in index < arguments.count ? arguments[index] : "‹\(index + 1)›" }
            var languages = Set(template.translations.keys).union(registered.keys)
            languages.insert(fallback)
            let previews = languages.sorted().compactMap { language -> [String: Any]? in
                guard let (used, text) = template.text(for: language, fallback: fallback) else { return nil }
                var preview: [String: Any] = [
                    "language": language, "used": used, "fallback": used.lowercased() != language.lowercased(),
                ]
                if let body = text.body { preview["body"] = LocalizedFormat.format(body, placeholders) }
                if let title = text.title { preview["title"] = LocalizedFormat.format(title, placeholders) }
                if let subtitle = text.subtitle { preview["subtitle"] = LocalizedFormat.format(subtitle, placeholders) }
                if let count = registered[language] { preview["registrationsText"] = Self.count(count, "registration") }
                return preview
            }
            return ["id": template.id, "argumentsText": Self.count(template.argumentCount, "argument"), "previews": previews]
        }
        return render("templates", "Templates", "/dashboard/templates", ["items": items, "fallback": fallback, "args": form.args ?? ""])
    }

    // MARK: reports

    private func reports() async throws -> Response {
        let sends = try await service.sends(after: nil, scheduleID: nil, limit: 100)
        let items = sends.map { send -> [String: Any] in
            var item: [String: Any] = [
                "id": send.id, "createdAt": send.createdAt, "createdAtText": DashboardValue.timeText(milliseconds: send.createdAt),
                "state": send.state.rawValue, "counts": Self.outcomes(send.counts),
            ]
            if let schedule = send.scheduleID { item["scheduleId"] = schedule }
            return item
        }
        return render("reports", "Send reports", "/dashboard/reports", ["items": items])
    }

    private func report(_ id: String) async throws -> Response {
        let report = try await service.report(id: id)
        var context: [String: Any] = [
            "createdAt": report.createdAt, "createdAtText": DashboardValue.timeText(milliseconds: report.createdAt),
            "counts": Self.outcomes(report.counts),
            "pruned": report.pruned, "hasPruned": !report.pruned.isEmpty,
        ]
        if let schedule = report.scheduleID { context["scheduleId"] = schedule }
        var receipts: [String: String] = [:]
        do { receipts = try await service.receipts(sendIDs: [id]) } catch { context["receiptError"] = error.message }
        context["deliveries"] = report.deliveries.map { d -> [String: Any] in
            var row: [String: Any] = [
                "token": d.token, "status": d.status, "attempts": d.attempts, "receipt": receipts[d.token] ?? "—",
                "failure": !(200..<300).contains(d.status),
            ]
            if let language = d.language { row["language"] = language }
            if let reason = d.reason { row["reason"] = reason }
            if let apnsID = d.apnsID { row["apnsId"] = apnsID }
            if let error = d.error { row["error"] = error }
            return row
        }
        return render("report", "Send \(id)", "/dashboard/reports", context)
    }

    // MARK: helpers

    /// "1 registration", "2 registrations".
    static func count(_ n: Int, _ noun: String) -> String { "\(n) \(noun)\(n == 1 ? "" : "s")" }

    /// A report's outcome counts, failures marked ("accepted" is the only success).
    static func outcomes(_ counts: [String: Int]) -> [[String: Any]] {
        counts.sorted { $0.key < $1.key }.map { ["key": $0.key, "count": $0.value, "failure": $0.key != "accepted"] }
    }

    /// Non-empty lines of a text area (template arguments), at most 64.
    static func lines(_ text: String?) -> [String] {
        (text ?? "").split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }.prefix(64).map { $0 }
    }

}

/// The dashboard's signed-in sessions, in memory (a restart signs everybody out).
final class DashboardSessions: Sendable {
    struct Session: Sendable {
        var id: String
        /// Carried by every form that changes something.
        var csrf: String
        /// Milliseconds since 1970, on the service's clock.
        var expiresAt: Int64
    }

    static let lifetimeSeconds = 12 * 3600
    /// Sessions kept at most: past it, the oldest is ended.
    static let maximumSessions = 1_000
    private let sessions = Locked([String: Session]())
    private let now: @Sendable () -> Int64

    init(now: @escaping @Sendable () -> Int64) { self.now = now }

    func start() -> Session {
        let now = now()
        let session = Session(id: Self.randomHex(bytes: 32), csrf: Self.randomHex(bytes: 32), expiresAt: now + Int64(Self.lifetimeSeconds) * 1000)
        sessions.withLock { sessions in
            sessions = sessions.filter { $0.value.expiresAt > now }
            if sessions.count >= Self.maximumSessions, let oldest = sessions.min(by: { $0.value.expiresAt < $1.value.expiresAt }) {
                sessions[oldest.key] = nil
            }
            sessions[session.id] = session
        }
        return session
    }

    func session(_ id: String) -> Session? {
        guard id.count == 64 else { return nil }
        let now = now()
        return sessions.withLock { sessions in
            guard let session = sessions[id], session.expiresAt > now else { return nil }
            return session
        }
    }

    func end(_ id: String) { sessions.withLock { $0[id] = nil } }

    /// Random bytes from the system's generator (a CSPRNG), in hex.
    static func randomHex(bytes: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<bytes).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }
}
