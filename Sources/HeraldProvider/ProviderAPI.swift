import Foundation
import HeraldCore
import HeraldProviderAPI
import OpenAPIRuntime

/// The REST API's operations: what the routing generated from `openapi.yaml` calls, mapping its
/// types to the service's and back. A request the service refuses throws ``ProviderError``; the
/// server answers it as `{"error": …}` with its status.
public struct ProviderAPI: APIProtocol {
    public let service: ProviderService

    public init(service: ProviderService) { self.service = service }

    /// How the API writes and reads instants: RFC 3339 (`2026-11-22T09:00:00Z`), with or without
    /// fractional seconds on input.
    public static let dates = InstantTranscoder()

    // MARK: registrations

    public func listRegistrations(_ input: Operations.ListRegistrations.Input) async throws -> Operations.ListRegistrations.Output {
        let q = input.query
        let filter = RegistrationFilter(topic: q.topic, user: q.user, tag: q.tag, language: q.language, zone: q.zone)
        let limit = try Self.limit(q.limit)
        let page = try await service.registrations(filter, after: q.after, limit: limit)
        let badges = try await service.badges(of: page)
        return .ok(.init(body: .json(.init(
            items: page.map { Self.registration($0, badge: badges[$0.token]) }, next: page.count == limit ? page.last?.token : nil))))
    }

    public func register(_ input: Operations.Register.Input) async throws -> Operations.Register.Output {
        guard case .json(let r) = input.body else { throw Self.notJSON }
        let webPush = try r.webPush.map { w in
            WebPushRecipient(
                endpoint: try Self.required(w.endpoint, "webPush.endpoint", maximumBytes: 1_000),
                p256dh: try Self.required(w.keys.p256dh, "webPush.keys.p256dh", maximumBytes: 200),
                auth: try Self.required(w.keys.auth, "webPush.keys.auth", maximumBytes: 64), url: try Self.bounded(w.url, "webPush.url", maximumBytes: 2_048))
        }
        if webPush != nil, r.token != nil {
            throw ProviderError(.invalid, "give \"token\" (an APNs device token) or \"webPush\" (a Web Push subscription), not both")
        }
        let registration = try await service.register(
            token: try Self.bounded(r.token, "token", maximumBytes: 200), topic: try Self.required(r.topic, "topic", maximumBytes: 255),
            language: try Self.required(r.language, "language", maximumBytes: 64), timeZone: try Self.required(r.timeZone, "timeZone", maximumBytes: 64),
            userID: try Self.bounded(r.userId, "userId", maximumBytes: 256), tags: try Self.strings(r.tags, "tags", maximumCount: 64, maximumBytes: 64),
            webPush: webPush)
        return .ok(.init(body: .json(Self.registration(registration, badge: try await service.badges(of: [registration])[registration.token]))))
    }

    public func getRegistration(_ input: Operations.GetRegistration.Input) async throws -> Operations.GetRegistration.Output {
        let registration = try await service.registration(token: input.path.token)
        return .ok(.init(body: .json(Self.registration(registration, badge: try await service.badges(of: [registration])[registration.token]))))
    }

    public func setBadge(_ input: Operations.SetBadge.Input) async throws -> Operations.SetBadge.Output {
        var value = 0
        if case .json(let body)? = input.body, let badge = body.badge {
            guard (0...BadgeCount.maximum).contains(badge) else { throw ProviderError(.invalid, "\"badge\" must be from 0 to \(BadgeCount.maximum)") }
            value = badge
        }
        let registration = try await service.setBadge(token: input.path.token, to: value)
        return .ok(.init(body: .json(Self.registration(registration, badge: value))))
    }

    public func deleteRegistration(_ input: Operations.DeleteRegistration.Input) async throws -> Operations.DeleteRegistration.Output {
        try await service.unregister(token: input.path.token)
        return .noContent(.init())
    }

    // MARK: templates

    public func listTemplates(_ input: Operations.ListTemplates.Input) async throws -> Operations.ListTemplates.Output {
        let limit = try Self.limit(input.query.limit)
        let page = try await service.templates(after: input.query.after, limit: limit)
        return .ok(.init(body: .json(.init(items: page.map(Self.template), next: page.count == limit ? page.last?.id : nil))))
    }

    public func getTemplate(_ input: Operations.GetTemplate.Input) async throws -> Operations.GetTemplate.Output {
        .ok(.init(body: .json(Self.template(try await service.template(input.path.id)))))
    }

    public func putTemplate(_ input: Operations.PutTemplate.Input) async throws -> Operations.PutTemplate.Output {
        guard case .json(let body) = input.body else { throw Self.notJSON }
        let texts = body.translations.additionalProperties
        guard !texts.isEmpty, texts.count <= 500 else {
            throw ProviderError(.invalid, "a template needs \"translations\": {\"en\": {\"body\": …}, …} (1 to 500 languages)")
        }
        var translations: [String: MessageTemplate.Text] = [:]
        for (language, text) in texts {
            guard language.utf8.count <= 64 else { throw ProviderError(.invalid, "a language tag in \"translations\" is longer than 64 bytes") }
            translations[language] = try Self.text(text, "translations.\(language).")
        }
        let id = input.path.id
        try await service.putTemplate(MessageTemplate(id: id, translations: translations))
        return .ok(.init(body: .json(.init(id: id, languages: translations.keys.sorted()))))
    }

    public func deleteTemplate(_ input: Operations.DeleteTemplate.Input) async throws -> Operations.DeleteTemplate.Output {
        try await service.deleteTemplate(input.path.id)
        return .noContent(.init())
    }

    // MARK: sends

    public func listSends(_ input: Operations.ListSends.Input) async throws -> Operations.ListSends.Output {
        let q = input.query
        let limit = try Self.limit(q.limit)
        let page = try await service.sends(after: q.after, scheduleID: q.scheduleId, limit: limit)
        let items = page.map { s in
            Components.Schemas.SendSummary(
                id: s.id, createdAt: s.createdAt, state: .init(rawValue: s.state.rawValue) ?? .done,
                counts: .init(additionalProperties: s.counts), scheduleId: s.scheduleID)
        }
        return .ok(.init(body: .json(.init(items: items, next: page.count == limit ? page.last?.id : nil))))
    }

    public func send(_ input: Operations.Send.Input) async throws -> Operations.Send.Output {
        guard case .json(let body) = input.body else { throw Self.notJSON }
        var request = try Self.sendRequest(body)
        if let key = input.headers.idempotencyKey { request.idempotencyKey = try Self.bounded(key, "Idempotency-Key", maximumBytes: 256) }
        let (report, replayed) = try await service.send(request)
        return .ok(.init(headers: .init(idempotentReplayed: replayed ? ._true : nil), body: .json(Self.report(report, replayed: replayed))))
    }

    public func getSend(_ input: Operations.GetSend.Input) async throws -> Operations.GetSend.Output {
        .ok(.init(body: .json(Self.report(try await service.report(id: input.path.id), replayed: false))))
    }

    public func sendReceipts(_ input: Operations.SendReceipts.Input) async throws -> Operations.SendReceipts.Output {
        .ok(.init(body: .json(Self.receipts(try await service.receipts(sendIDs: [input.path.id])))))
    }

    // MARK: schedules

    public func listSchedules(_ input: Operations.ListSchedules.Input) async throws -> Operations.ListSchedules.Output {
        let state = input.query.state.flatMap { Schedule.State(rawValue: $0.rawValue) }
        var items: [Components.Schemas.Schedule] = []
        for schedule in try await service.schedules(state: state) {
            items.append(try Self.schedule(try await service.scheduleStatus(schedule.id), runs: false))
        }
        return .ok(.init(body: .json(.init(schedules: items))))
    }

    public func createSchedule(_ input: Operations.CreateSchedule.Input) async throws -> Operations.CreateSchedule.Output {
        guard case .json(let body) = input.body else { throw Self.notJSON }
        let send = try Self.sendRequest(body.value1)
        let timing = try Self.timing(body.value2)
        let id = try Self.bounded(body.value3.id ?? input.headers.idempotencyKey, "id", maximumBytes: 256)
        let (schedule, replayed) = try await service.schedule(timing, send: send, id: id)
        let shown = try Self.schedule(try await service.scheduleStatus(schedule.id))
        return replayed ? .ok(.init(body: .json(shown))) : .created(.init(body: .json(shown)))
    }

    public func getSchedule(_ input: Operations.GetSchedule.Input) async throws -> Operations.GetSchedule.Output {
        .ok(.init(body: .json(try Self.schedule(try await service.scheduleStatus(input.path.id)))))
    }

    public func cancelSchedule(_ input: Operations.CancelSchedule.Input) async throws -> Operations.CancelSchedule.Output {
        _ = try await service.cancelSchedule(input.path.id)
        return .ok(.init(body: .json(try Self.schedule(try await service.scheduleStatus(input.path.id)))))
    }

    public func planSchedule(_ input: Operations.PlanSchedule.Input) async throws -> Operations.PlanSchedule.Output {
        let hours = input.query.hours ?? 24
        guard hours.isFinite, hours > 0, hours <= 24 * 366 else {
            throw ProviderError(.invalid, "hours must be a number of hours ahead, more than 0 and at most a year")
        }
        let runs = try await service.planAhead(input.path.id, span: Int64(hours * 3_600_000))
        return .ok(.init(body: .json(.init(runs: runs.map { run in
            .init(zone: run.zone, localDate: run.localDate?.description, dueAt: Self.date(run.dueAt), recipients: run.recipients)
        }))))
    }

    public func scheduleReceipts(_ input: Operations.ScheduleReceipts.Input) async throws -> Operations.ScheduleReceipts.Output {
        let runs = try await service.scheduleStatus(input.path.id).runs
        return .ok(.init(body: .json(Self.receipts(try await service.receipts(sendIDs: runs.compactMap(\.sendID))))))
    }

    public func pollFeedback(_ input: Operations.PollFeedback.Input) async throws -> Operations.PollFeedback.Output {
        let poll = try await service.pollFeedback()
        return .ok(.init(body: .json(.init(read: poll.read, pruned: poll.pruned, errors: .init(additionalProperties: poll.errors)))))
    }
}

/// Instants as RFC 3339: written `2026-11-22T09:00:00Z`; read with an offset, with or without
/// fractional seconds.
public struct InstantTranscoder: DateTranscoder {
    public func encode(_ date: Date) throws -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: date)
    }

    public func decode(_ text: String) throws -> Date {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime]
        if let date = formatter.date(from: text) { return date }
        throw DecodingError.dataCorrupted(.init(
            codingPath: [], debugDescription: "\"\(text.prefix(64))\" is not an ISO 8601 instant with its offset, such as 2026-11-22T09:00:00Z or 2026-11-22T09:00:00+01:00"))
    }
}

/// What the REST API makes of a request body, without a server: the same checks against the spec
/// (``ProviderSpec``), the same decoding (the types generated from it) and the same checks as `POST /v1/sends` and `POST /v1/schedules`
/// (for fuzzing and tools). Throws ``ProviderError`` (400) for what the API answers 400.
public enum ProviderRequestBodies {
    static func decode<T: Decodable>(_ type: T.Type, _ body: [UInt8]) throws -> T {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            try ProviderAPI.dates.decode(try decoder.singleValueContainer().decode(String.self))
        }
        do { return try decoder.decode(type, from: Data(body)) } catch let error as DecodingError {
            throw ProviderError(.invalid, ProviderAPIErrors.describe(error))
        }
    }

    public static func send(_ body: [UInt8]) throws -> SendRequest {
        try ProviderSpec.current.checkBody("send", body)
        return try ProviderAPI.sendRequest(try decode(Components.Schemas.SendInput.self, body))
    }

    public static func schedule(_ body: [UInt8]) throws -> (SendRequest, ScheduleTiming) {
        try ProviderSpec.current.checkBody("createSchedule", body)
        let input = try decode(Components.Schemas.ScheduleInput.self, body)
        return (try ProviderAPI.sendRequest(input.value1), try ProviderAPI.timing(input.value2))
    }
}

/// Error messages for what the generated decoding refuses.
public enum ProviderAPIErrors {
    /// "\"to.segment.tags[2]\": expected a string" rather than Swift's description of a coding path.
    public static func describe(_ error: DecodingError) -> String {
        func path(_ codingPath: [any CodingKey]) -> String {
            var text = ""
            for key in codingPath {
                if let index = key.intValue { text += "[\(index)]" } else { text += text.isEmpty ? key.stringValue : ".\(key.stringValue)" }
            }
            return text
        }
        switch error {
        case .keyNotFound(let key, let context):
            let full = path(context.codingPath + [key])
            return "\"\(full)\" is required"
        case .typeMismatch(let type, let context):
            return "\(where: path(context.codingPath))expected \(describe(type))"
        case .valueNotFound(let type, let context):
            return "\(where: path(context.codingPath))expected \(describe(type)), found null"
        case .dataCorrupted(let context):
            let field = path(context.codingPath)
            if field.isEmpty {
                let detail = context.underlyingError.map { " (\(String(describing: $0).prefix(300)))" } ?? ""
                return "the body is not valid JSON (RFC 8259)\(detail)"
            }
            // An enum's value: "Cannot initialize RepeatPayload from invalid String value yearly".
            if let range = context.debugDescription.range(of: "from invalid String value ") {
                return "\"\(field)\": \"\(context.debugDescription[range.upperBound...].prefix(64))\" is not one of the values it takes (see /openapi.yaml)"
            }
            return "\"\(field)\": \(context.debugDescription.prefix(300))"
        @unknown default:
            return "\(error)"
        }
    }

    static func describe(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: return "a string"
        case is Int.Type, is Int64.Type, is Int32.Type: return "an integer"
        case is Double.Type: return "a number"
        case is Bool.Type: return "true or false"
        default:
            let name = "\(type)"
            if name.contains("FormatArgument") { return "a string or a number" }
            if name.hasPrefix("Array") { return "an array" }
            if name.hasPrefix("Dictionary") { return "an object" }
            return "an object"
        }
    }
}

extension DefaultStringInterpolation {
    /// `"\"path\": "` for a field, nothing for the whole body.
    fileprivate mutating func appendInterpolation(where path: String) {
        if !path.isEmpty { appendLiteral("\"\(path)\": ") }
    }
}
