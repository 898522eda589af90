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

// MARK: reading requests

extension ProviderAPI {
    static let notJSON = ProviderError(.notJSON, "the body must be JSON (Content-Type: application/json)")

    /// A list's page size: `limit`, 1 to ``ProviderDatabase/maximumPage`` (default 100).
    static func limit(_ value: Int?) throws -> Int {
        guard let value else { return 100 }
        guard (1...ProviderStoreLimits.maximumPage).contains(value) else {
            throw ProviderError(.invalid, "limit must be a number from 1 to \(ProviderStoreLimits.maximumPage)")
        }
        return value
    }

    /// A string field no longer than `maximumBytes` of UTF-8.
    static func bounded(_ value: String?, _ name: String, maximumBytes: Int) throws -> String? {
        guard let value else { return nil }
        guard value.utf8.count <= maximumBytes else { throw ProviderError(.invalid, "\"\(name)\" is longer than \(maximumBytes) bytes") }
        return value
    }

    /// A required, non-empty string field.
    static func required(_ value: String, _ name: String, maximumBytes: Int) throws -> String {
        guard !value.isEmpty else { throw ProviderError(.invalid, "\"\(name)\" is required (a string)") }
        return try bounded(value, name, maximumBytes: maximumBytes) ?? value
    }

    static func strings(_ values: [String]?, _ name: String, maximumCount: Int, maximumBytes: Int) throws -> [String] {
        guard let values else { return [] }
        guard values.count <= maximumCount else { throw ProviderError(.invalid, "\"\(name)\" has more than \(maximumCount) items") }
        for value in values where value.utf8.count > maximumBytes {
            throw ProviderError(.invalid, "an item of \"\(name)\" is longer than \(maximumBytes) bytes")
        }
        return values
    }

    /// An alert's text: any of title, subtitle and body, at least one of them not empty (APNs
    /// accepts an alert with only a title or only a subtitle; one with no text shows nothing).
    static func text(_ text: Components.Schemas.Text, _ path: String) throws -> MessageTemplate.Text {
        let result = MessageTemplate.Text(
            title: try bounded(text.title, path + "title", maximumBytes: 4096), subtitle: try bounded(text.subtitle, path + "subtitle", maximumBytes: 4096),
            body: try bounded(text.body, path + "body", maximumBytes: 4096))
        guard [result.title, result.subtitle, result.body].contains(where: { $0?.isEmpty == false }) else {
            throw ProviderError(.invalid, "\"\(path.dropLast())\" needs a \"title\", \"subtitle\" or \"body\" that is not empty")
        }
        return result
    }

    /// Format arguments: strings, or numbers written as text (at most 100).
    static func arguments(_ values: [Components.Schemas.FormatArgument]?, _ name: String) throws -> [String] {
        guard let values else { return [] }
        guard values.count <= 100 else { throw ProviderError(.invalid, "\"\(name)\" has more than 100 items") }
        return try values.map { value in
            switch value {
            case .case1(let text): return try bounded(text, name, maximumBytes: 4096) ?? text
            case .case2(let number): return LocalizedFormat.argument(.double(number))
            }
        }
    }

    /// What `POST /v1/sends` (and a schedule's send) asks for.
    static func sendRequest(_ body: Components.Schemas.SendInput) throws -> SendRequest {
        let to = body.to
        let target: SendTarget
        if let token = to.token {
            target = .token(try required(token, "to.token", maximumBytes: 200))
        } else if let user = to.user {
            target = .user(try required(user, "to.user", maximumBytes: 256))
        } else if let segment = to.segment {
            target = .segment(
                topic: try bounded(segment.topic, "to.segment.topic", maximumBytes: 255),
                tags: try strings(segment.tags, "to.segment.tags", maximumCount: 64, maximumBytes: 64),
                languages: try strings(segment.languages, "to.segment.languages", maximumCount: 64, maximumBytes: 64))
        } else {
            throw ProviderError(.invalid, "\"to\" needs \"token\", \"user\" or \"segment\"")
        }
        let message: SendMessage
        if let t = body.template {
            message = .template(id: try required(t.id, "template.id", maximumBytes: 256), arguments: try arguments(t.args, "template.args"))
        } else if let a = body.alert {
            let text = try text(a, "alert.")
            message = .alert(title: text.title, subtitle: text.subtitle, body: text.body)
        } else if let l = body.locKey {
            let key = try bounded(l.key, "locKey.key", maximumBytes: 256), titleKey = try bounded(l.titleKey, "locKey.titleKey", maximumBytes: 256)
            guard key?.isEmpty == false || titleKey?.isEmpty == false else {
                throw ProviderError(.invalid, "\"locKey\" needs a \"key\" (the body's) or a \"titleKey\" that is not empty")
            }
            message = .deviceLocalized(
                key: key, arguments: try arguments(l.args, "locKey.args"),
                titleKey: titleKey, titleArguments: try arguments(l.titleArgs, "locKey.titleArgs"))
        } else {
            message = .none
        }
        var data: [String: JSONValue] = [:]
        if let custom = body.data {
            guard custom.additionalProperties.value[NotificationPayload.apsKey] == nil else {
                throw ProviderError(.invalid, "\"data\" may not hold \"aps\" (use the send's fields)")
            }
            data = try JSONReader.parseObject(Array(JSONEncoder().encode(custom)))
        }
        if let badge = body.badge, !(0...BadgeCount.maximum).contains(badge) {
            throw ProviderError(.invalid, "\"badge\" must be from 0 to \(BadgeCount.maximum)")
        }
        if let increment = body.badgeIncrement {
            guard (1...BadgeCount.maximumIncrement).contains(increment) else {
                throw ProviderError(.invalid, "\"badgeIncrement\" must be from 1 to \(BadgeCount.maximumIncrement) (to lower a count, set it: \"badge\", or POST /v1/registrations/{token}/badge)")
            }
            guard body.badge == nil else { throw ProviderError(.invalid, "give \"badge\" (set the count) or \"badgeIncrement\" (add to it), not both") }
        }
        if let priority = body.priority, !(1...10).contains(priority) { throw ProviderError(.invalid, "\"priority\" must be from 1 to 10") }
        if let expiration = body.expiration, !(0...Int64(UInt32.max)).contains(expiration) {
            throw ProviderError(.invalid, "\"expiration\" must be from 0 to \(UInt32.max) (seconds since 1970)")
        }
        let contentAvailable = body.contentAvailable ?? false
        let sound = try bounded(body.sound, "sound", maximumBytes: 256)
        var liveActivity: LiveActivitySend?
        if let live = body.liveActivity {
            func object(_ container: OpenAPIObjectContainer?, _ name: String) throws -> [String: JSONValue]? {
                guard let container else { return nil }
                return try JSONReader.parseObject(Array(JSONEncoder().encode(container)))
            }
            if let channel = live.inputPushChannel, BroadcastChannelID(channel) == nil {
                throw ProviderError(.invalid, "\"liveActivity.inputPushChannel\" must be a channel id (base64 of 16 bytes)")
            }
            liveActivity = LiveActivitySend(
                event: live.event.rawValue, timestamp: live.timestamp, contentState: try object(live.contentState?.additionalProperties, "contentState"),
                staleDate: live.staleDate, dismissalDate: live.dismissalDate,
                relevanceScore: try live.relevanceScore.map { score in
                    guard score.isFinite else { throw ProviderError(.invalid, "\"liveActivity.relevanceScore\" must be a finite number") }
                    return score
                },
                attributesType: try bounded(live.attributesType, "liveActivity.attributesType", maximumBytes: 256),
                attributes: try object(live.attributes?.additionalProperties, "attributes"),
                inputPushToken: live.inputPushToken ?? false, inputPushChannel: live.inputPushChannel)
        }
        if case .none = message, body.badge == nil, body.badgeIncrement == nil, sound == nil, !contentAvailable, liveActivity == nil {
            throw ProviderError(.invalid, "say something: \"template\", \"alert\", \"locKey\", \"badge\", \"badgeIncrement\", \"sound\", \"contentAvailable\": true or \"liveActivity\"")
        }
        return SendRequest(
            target: target, message: message, badge: body.badge, sound: sound, contentAvailable: contentAvailable,
            category: try bounded(body.category, "category", maximumBytes: 256), threadID: try bounded(body.threadId, "threadId", maximumBytes: 256),
            data: data, pushType: try bounded(body.pushType, "pushType", maximumBytes: 64), priority: body.priority,
            expiration: body.expiration, collapseID: try bounded(body.collapseId, "collapseId", maximumBytes: 64),
            idempotencyKey: try bounded(body.idempotencyKey, "idempotencyKey", maximumBytes: 256), liveActivity: liveActivity,
            url: try body.url.map { page throws in
                try ProviderService.checkPage(page, "url")
                return page
            }, badgeIncrement: body.badgeIncrement)
    }

    static let weekdayNames = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]

    /// `"at"` (an instant) or `"time"` (HH:MM) with `"timeZone"` (absent: each registration's
    /// own), `"repeat"`, `"weekdays"`, `"day"`, `"from"` and `"until"` (local dates, inclusive).
    static func timing(_ t: Components.Schemas.Timing) throws -> ScheduleTiming {
        if let at = t.at {
            guard t.time == nil else { throw ProviderError(.invalid, "give \"at\" (an instant) or \"time\" (a wall-clock time), not both") }
            guard at.timeIntervalSince1970.magnitude < 1e13 else { throw ProviderError(.invalid, "\"at\" is out of range") }
            return .instant(Int64((at.timeIntervalSince1970 * 1000).rounded()))
        }
        guard let time = t.time else {
            throw ProviderError(.invalid, "a schedule needs \"at\" (an instant) or \"time\" (HH:MM, in each registration's zone or in \"timeZone\")")
        }
        let hm = time.split(separator: ":", omittingEmptySubsequences: false)
        guard hm.count == 2, hm[0].count == 2, hm[1].count == 2, let hour = Int(hm[0]), let minute = Int(hm[1]),
              (0...23).contains(hour), (0...59).contains(minute) else {
            throw ProviderError(.invalid, "\"time\" must be HH:MM from 00:00 to 23:59, such as 09:00, not \"\(time.prefix(64))\"")
        }
        func date(_ text: String?, _ key: String) throws -> LocalDate? {
            guard let text else { return nil }
            guard let date = LocalDate(text) else { throw ProviderError(.invalid, "\"\(key)\" must be a date YYYY-MM-DD") }
            return date
        }
        let repeats: WallClockRule.Repeat
        switch t._repeat ?? .once {
        case .once: repeats = .once
        case .daily: repeats = .daily
        case .weekly:
            let days = Set((t.weekdays ?? []).compactMap { weekdayNames.firstIndex(of: $0.rawValue).map { $0 + 1 } }).sorted()
            guard !days.isEmpty else { throw ProviderError(.invalid, "a weekly schedule needs \"weekdays\", such as [\"mon\", \"wed\", \"fri\"]") }
            repeats = .weekly(weekdays: days)
        case .monthly:
            guard let day = t.day, (1...31).contains(day) else { throw ProviderError(.invalid, "a monthly schedule needs \"day\" (1…31)") }
            repeats = .monthly(day: day)
        }
        return .wallClock(WallClockRule(
            hour: hour, minute: minute, timeZone: try bounded(t.timeZone, "timeZone", maximumBytes: 64), repeats: repeats,
            from: try date(t.from, "from"), until: try date(t.until, "until")))
    }
}

// MARK: writing responses

extension ProviderAPI {
    static func date(_ milliseconds: Int64) -> Date { Date(timeIntervalSince1970: TimeInterval(milliseconds) / 1000) }

    static func registration(_ r: Registration, badge: Int?) -> Components.Schemas.Registration {
        .init(
            token: r.token, topic: r.topic, language: r.language, timeZone: r.timeZone, userId: r.userID, tags: r.tags, registeredAt: r.registeredAt,
            badge: badge ?? 0, webPush: r.webPush.map { .init(endpoint: $0.endpoint, url: $0.url) })
    }

    static func template(_ t: MessageTemplate) -> Components.Schemas.Template {
        .init(id: t.id, arguments: t.argumentCount, translations: .init(additionalProperties: t.translations.mapValues { text in
            .init(title: text.title, subtitle: text.subtitle, body: text.body)
        }))
    }

    static func report(_ report: SendReport, replayed: Bool) -> Components.Schemas.SendReport {
        .init(
            id: report.id, createdAt: report.createdAt, replayed: replayed, counts: .init(additionalProperties: report.counts),
            pruned: report.pruned, scheduleId: report.scheduleID,
            deliveries: report.deliveries.map { d in
                .init(
                    token: d.token, language: d.language, status: d.status, reason: d.reason, apnsId: d.apnsID, location: d.location,
                    attempts: d.attempts, error: d.error)
            })
    }

    /// `{"counts": {"delivered": 3, …}, "tokens": {"<token>": "delivered", …}}`.
    static func receipts(_ statuses: [String: String]) -> Components.Schemas.Receipts {
        var counts: [String: Int] = [:]
        for status in statuses.values { counts[status, default: 0] += 1 }
        return .init(counts: .init(additionalProperties: counts), tokens: .init(additionalProperties: statuses))
    }

    static func timing(_ timing: ScheduleTiming) -> Components.Schemas.Timing {
        switch timing {
        case .instant(let at): return .init(at: date(at))
        case .wallClock(let rule):
            func pad(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
            var t = Components.Schemas.Timing(
                time: "\(pad(rule.hour)):\(pad(rule.minute))", timeZone: rule.timeZone, from: rule.from?.description, until: rule.until?.description)
            switch rule.repeats {
            case .once: t._repeat = .once
            case .daily: t._repeat = .daily
            case .weekly(let days):
                t._repeat = .weekly
                t.weekdays = days.compactMap { .init(rawValue: weekdayNames[$0 - 1]) }
            case .monthly(let day):
                t._repeat = .monthly
                t.day = day
            }
            return t
        }
    }

    static func schedule(_ status: ScheduleStatus, runs: Bool = true) throws -> Components.Schemas.Schedule {
        let s = status.schedule
        let send = try JSONDecoder().decode(Components.Schemas.Schedule.SendPayload.self, from: JSONEncoder().encode(s.send))
        return .init(
            id: s.id, state: .init(rawValue: s.state.rawValue) ?? .active, createdAt: date(s.createdAt), timing: timing(s.timing),
            send: send, next: .init(additionalProperties: status.next.mapValues(date)),
            counts: .init(additionalProperties: status.counts), runCount: status.runs.count,
            runs: runs ? status.runs.map { run in
                .init(zone: run.zone, localDate: run.localDate?.description, dueAt: date(run.dueAt), startedAt: run.startedAt,
                      finishedAt: run.finishedAt, outcome: .init(rawValue: run.outcome.rawValue) ?? .sent, sendId: run.sendID,
                      counts: .init(additionalProperties: run.counts), error: run.error)
            } : nil)
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
