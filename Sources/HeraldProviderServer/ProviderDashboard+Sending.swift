import Crypto
import Foundation
import HTTPTypes
import HeraldCore
import HeraldDashboard
import HeraldHTTP
import HeraldProvider
import Hummingbird
import NIOCore

extension ProviderDashboard {
    // MARK: sending

    /// The send form's fields, as a browser sends them (GET to count, POST to send).
    struct SendForm: Decodable {
        var target: String?
        var topic: String?
        var tags: String?
        var languages: String?
        var recipient: String?
        var template: String?
        var args: String?
        var title: String?
        var body: String?
        var badge: String?
        var sound: String?
        var category: String?
        var csrf: String?
        var idempotency: String?
        /// What the count was of: a digest of the target it counted, and how many it found.
        var countedTarget: String?
        var counted: String?
    }

    /// A digest of the send's target as the REST API reads it: what a count is bound to.
    static func targetDigest(_ target: SendTarget) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return Hex.encode(SHA256.hash(data: (try? encoder.encode(target)) ?? Data()))
    }

    /// The form as the REST API's `POST /v1/sends` body, so it goes through the same checks (the
    /// spec, the generated decoding) and gets the same errors.
    static func sendBody(_ form: SendForm, idempotencyKey: String?) -> [UInt8] {
        var body: [String: JSONValue] = [:]
        func list(_ text: String?) -> JSONValue {
            .array((text ?? "").split(separator: ",").map { .string($0.trimmingCharacters(in: .whitespaces)) }.filter { $0 != .string("") })
        }
        switch form.target ?? "segment" {
        case "user": body["to"] = .object(["user": .string(form.recipient ?? "")])
        case "token": body["to"] = .object(["token": .string(form.recipient ?? "")])
        default:
            var segment: [String: JSONValue] = ["tags": list(form.tags), "languages": list(form.languages)]
            if let topic = form.topic, !topic.isEmpty { segment["topic"] = .string(topic) }
            body["to"] = .object(["segment": .object(segment)])
        }
        if let template = form.template, !template.isEmpty {
            body["template"] = .object(["id": .string(template), "args": .array(lines(form.args).map(JSONValue.string))])
        } else if form.body?.isEmpty == false || form.title?.isEmpty == false {
            var alert: [String: JSONValue] = [:]
            if let text = form.body, !text.isEmpty { alert["body"] = .string(text) }
            if let title = form.title, !title.isEmpty { alert["title"] = .string(title) }
            body["alert"] = .object(alert)
        }
        if let badge = form.badge, !badge.isEmpty { body["badge"] = Int64(badge).map(JSONValue.int) ?? .string(badge) }
        if let sound = form.sound, !sound.isEmpty { body["sound"] = .string(sound) }
        if let category = form.category, !category.isEmpty { body["category"] = .string(category) }
        if let idempotencyKey { body["idempotencyKey"] = .string(idempotencyKey) }
        return Array((try? JSONEncoder().encode(JSONValue.object(body))) ?? Data())
    }

    func sendForm(_ request: Request, session: DashboardSessions.Session) async throws -> Response {
        let query = request.uri.query ?? ""
        let form = (try? URLEncodedFormDecoder().decode(SendForm.self, from: query)) ?? SendForm()
        var context = try await formContext(form, session: session)
        guard !query.isEmpty, form.target != nil else { return render("send", "Send", "/dashboard/send", context, scripts: ["send-form.js"]) }
        do {
            let request = try ProviderRequestBodies.send(Self.sendBody(form, idempotencyKey: nil))
            let recipients = try await service.recipientCount(request.target)
            context["recipients"] = recipients
            context["recipientsText"] = Self.count(recipients, "registration")
            context["sendable"] = recipients > 0
            context["countedTarget"] = Self.targetDigest(request.target)
            context["counted"] = true
            context["idempotency"] = DashboardSessions.randomHex(bytes: 16)
        } catch let error as ProviderError {
            context["message"] = error.message
        }
        return render("send", "Send", "/dashboard/send", context, scripts: ["send-form.js"])
    }

    func formContext(_ form: SendForm, session: DashboardSessions.Session) async throws -> [String: Any] {
        let ids = try await service.templates(after: nil, limit: 500).map(\.id)
        let fields: [String: String] = [
            "topic": form.topic ?? "", "tags": form.tags ?? "", "languages": form.languages ?? "", "recipient": form.recipient ?? "",
            "args": form.args ?? "", "title": form.title ?? "", "body": form.body ?? "", "badge": form.badge ?? "", "sound": form.sound ?? "",
            "category": form.category ?? "",
        ]
        return [
            "form": fields, "csrf": session.csrf, (form.target ?? "segment"): true,
            "templateIds": ids.map { ["id": $0, "selected": $0 == form.template] },
        ]
    }

    func send(_ request: Request, session: DashboardSessions.Session) async throws -> Response {
        let text = String(buffer: try await request.body.collect(upTo: ProviderHTTP.maximumBody))
        let form = (try? URLEncodedFormDecoder().decode(SendForm.self, from: text)) ?? SendForm()
        guard session.id.isEmpty || SecretComparison.equal(form.csrf ?? "", session.csrf) else {
            throw ProviderError(.forbidden, "this form is stale or not from this dashboard: open the send page again")
        }
        // The count page's key: submitting the same form twice sends once.
        let key = form.idempotency.flatMap { $0.count == 32 && $0.allSatisfy { $0.isASCII && $0.isHexDigit } ? "dashboard-\($0)" : nil }
        // What is sent is what was counted: a form changed after its count (another target), or
        // registrations that changed meanwhile, are counted again instead of sent.
        func again(_ message: String) async throws -> Response {
            var context = try await formContext(form, session: session)
            context["message"] = message
            return render("send", "Send", "/dashboard/send", context, scripts: ["send-form.js"])
        }
        let sendRequest: SendRequest
        do { sendRequest = try ProviderRequestBodies.send(Self.sendBody(form, idempotencyKey: key)) } catch let error as ProviderError {
            return try await again(error.message)
        }
        guard let counted = form.counted.flatMap(Int.init), form.countedTarget == Self.targetDigest(sendRequest.target) else {
            return try await again("The recipients changed since they were counted: count them again before sending.")
        }
        let now = try await service.recipientCount(sendRequest.target)
        guard now == counted else {
            return try await again("This send now reaches \(Self.count(now, "registration")), not the \(counted) counted: count again before sending.")
        }
        guard now > 0 else { return try await again("No registration matches: there is nobody to send to.") }
        let report: SendReport
        do { (report, _) = try await service.send(sendRequest) } catch {
            return try await again(error.message)
        }
        return WebResponse.redirect("/dashboard/reports/\(report.id)")
    }
}
