import Foundation
import HeraldClient
import HeraldCore

/// Sends one notification and says what became of it; `APNsClient` is the real one. A Herald
/// gateway also answers the feedback list and receipts; other senders throw for them.
public protocol PushSending: Sendable {
    func send(_ notification: APNsNotification) async throws -> APNsResult
    /// Reads and clears a topic's list of dead tokens.
    func feedback(topic: String) async throws -> [APNsFeedbackItem]
    /// A notification's delivery receipt, `nil` when the gateway has none.
    func receipt(apnsID: String) async throws -> APNsReceipt?
}

extension PushSending {
    public func feedback(topic: String) async throws -> [APNsFeedbackItem] { throw ProviderError(501, "this sender cannot read feedback lists") }
    public func receipt(apnsID: String) async throws -> APNsReceipt? { throw ProviderError(501, "this sender cannot read receipts") }
}

extension APNsClient: PushSending {}

/// The provider service: the app's own server. Keeps registrations, localizes, sends to a
/// token, a user or a segment through an APNs client, prunes tokens the gateway reports
/// unregistered, and remembers every send (its report, by id and by idempotency key).
public actor ProviderService {
    public let database: ProviderDatabase
    public let defaultLanguage: String
    /// How late a schedule's occurrence may still be sent when the service starts after it was due
    /// (milliseconds); older ones are recorded as missed.
    public let missedSendWindow: Int64
    let sender: PushSending
    let clock: AlarmClock
    private var inFlight: [String: Task<SendReport, Error>] = [:]
    /// The schedules' plan (see ProviderScheduling.swift).
    var plan = SchedulePlan()
    let work = WorkTracker()
    /// Pushes of one send started at once (each waits in the client for a stream when more are
    /// started than it lets through).
    public var sendConcurrency = 2_000
    private var feedbackAlarm: ClockAlarm?

    /// - Parameters:
    ///   - clock: the time of registrations and reports, and the alarms schedules wake on.
    ///   - missedSendWindow: see ``missedSendWindow``.
    public init(database: ProviderDatabase, sender: PushSending, clock: AlarmClock = SystemAlarmClock(), defaultLanguage: String = "en",
                missedSendWindow: Int64 = 3_600_000) {
        self.database = database
        self.sender = sender
        self.clock = clock
        self.defaultLanguage = defaultLanguage
        self.missedSendWindow = missedSendWindow
    }

    // MARK: registrations

    /// Registers (or registers again) a device: at every launch, and when its language or zone changes.
    @discardableResult
    public func register(token: String, topic: String, language: String, timeZone: String, userID: String?, tags: [String]) throws(ProviderError) -> Registration {
        let token = token.lowercased()
        guard token.count >= 2, token.count % 2 == 0, token.allSatisfy(\.isHexDigit) else {
            throw ProviderError(400, "\"token\" must be the device token in hex, not \"\(token)\"")
        }
        guard DeviceProtocol.isValidTopic(topic) else { throw ProviderError(400, "\"topic\" must be the app's bundle id, not \"\(topic)\"") }
        guard Self.isLanguageTag(language) else {
            throw ProviderError(400, "\"language\" must be a BCP 47 tag such as en, fr-CA or zh-Hant-TW, not \"\(language)\"")
        }
        guard TimeZone(identifier: timeZone) != nil else {
            throw ProviderError(400, "\"timeZone\" must be an IANA time zone such as Europe/Paris, not \"\(timeZone)\"")
        }
        let registration = Registration(token: token, topic: topic, language: language, timeZone: timeZone, userID: userID, tags: tags,
                                        registeredAt: clock.nowMilliseconds())
        do { try database.upsert(registration) } catch { throw ProviderError(500, "could not store the registration: \(error)") }
        zoneSeen(timeZone)
        return registration
    }

    static func isLanguageTag(_ tag: String) -> Bool {
        let parts = tag.split(separator: "-", omittingEmptySubsequences: false)
        guard let first = parts.first, (2...3).contains(first.count), first.allSatisfy({ $0.isASCII && $0.isLetter }) else { return false }
        return parts.dropFirst().allSatisfy { (1...8).contains($0.count) && $0.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) } }
    }

    public func unregister(token: String) throws(ProviderError) {
        do {
            guard try database.deleteRegistration(token.lowercased()) else { throw ProviderError(404, "no registration for token \(token)") }
        } catch let error as ProviderError { throw error } catch { throw ProviderError(500, "\(error)") }
    }

    public func putTemplate(_ template: MessageTemplate) throws(ProviderError) {
        guard !template.id.isEmpty, !template.translations.isEmpty else {
            throw ProviderError(400, "a template needs an id and at least one translation")
        }
        for language in template.translations.keys where !Self.isLanguageTag(language) {
            throw ProviderError(400, "translation key \"\(language)\" is not a BCP 47 language tag")
        }
        do { try database.put(template) } catch { throw ProviderError(500, "\(error)") }
    }

    // MARK: sending

    /// Sends, or — for an idempotency key already used — returns the first send's report without
    /// sending again (`replayed` true). Two requests with the same key at once send once.
    public func send(_ request: SendRequest) async throws(ProviderError) -> (report: SendReport, replayed: Bool) {
        do {
            if let key = request.idempotencyKey {
                if let done = try database.send(idempotencyKey: key) { return (done, true) }
                if let running = inFlight[key] { return (try await running.value, true) }
            }
            let task = Task { try await self.perform(request) }
            if let key = request.idempotencyKey { inFlight[key] = task }
            defer { if let key = request.idempotencyKey { inFlight[key] = nil } }
            return (try await task.value, false)
        } catch let error as ProviderError { throw error } catch { throw ProviderError(500, "\(error)") }
    }

    private func perform(_ request: SendRequest) async throws -> SendReport {
        let report = try await deliver(request, to: try resolve(request.target))
        try database.save(report, idempotencyKey: request.idempotencyKey)
        return report
    }

    /// Sends `request` to `targets` and prunes the tokens answered 410; the report is not stored.
    func deliver(_ request: SendRequest, to targets: [Registration]) async throws -> SendReport {
        var template: MessageTemplate?
        if case .template(let id, _) = request.message {
            guard let found = try database.template(id) else { throw ProviderError(404, "no template \"\(id)\": PUT /v1/templates/\(id) first") }
            template = found
        }
        let plans = try targets.map { registration in try plan(request, for: registration, template: template) }
        // The client bounds the wire; this bounds the tasks waiting for it.
        let sender = self.sender
        let results = try await concurrentMap(plans.map(\.notification), limit: sendConcurrency) { try await sender.send($0) }
        var report = SendReport(id: UUID().uuidString.lowercased(), createdAt: clock.nowMilliseconds(), deliveries: [], pruned: [])
        for (plan, result) in zip(plans, results) {
            report.deliveries.append(.init(
                token: plan.registration.token, language: plan.language, status: result.status, reason: result.reason?.rawValue,
                apnsID: result.apnsID, attempts: result.attempts))
            if result.status == 410 {
                let at = result.timestamp ?? clock.nowMilliseconds()
                if try database.prune(plan.registration.token, unregisteredAt: at) { report.pruned.append(plan.registration.token) }
            }
        }
        return report
    }

    /// The registrations a target names, only those in `zone` when given.
    func resolve(_ target: SendTarget, zone: String? = nil) throws -> [Registration] {
        switch target {
        case .token(let token):
            guard let registration = try database.registration(token: token.lowercased()) else {
                throw ProviderError(404, "no registration for token \(token)")
            }
            return zone == nil || registration.timeZone == zone ? [registration] : []
        case .user(let user):
            return try database.registrations(user: user, zone: zone)
        case .segment(let topic, let tags, let languages):
            let wanted = Set(languages.map { $0.lowercased() })
            return try database.registrations(topic: topic, zone: zone).filter { r in
                let language = r.language.lowercased()
                let base = language.split(separator: "-").first.map(String.init) ?? language
                return Set(tags).isSubset(of: Set(r.tags)) && (wanted.isEmpty || wanted.contains(language) || wanted.contains(base))
            }
        }
    }

    struct Plan: Sendable {
        var registration: Registration
        var language: String?
        var notification: APNsNotification
    }

    private func plan(_ request: SendRequest, for registration: Registration, template: MessageTemplate?) throws -> Plan {
        var aps: [String: JSONValue] = [:]
        var language: String?
        switch request.message {
        case .template(let id, let arguments):
            guard let (used, text) = template?.text(for: registration.language, fallback: defaultLanguage) else {
                throw ProviderError(500, "template \(id) has no translations")
            }
            language = used
            aps["alert"] = Self.alert(
                title: text.title.map { LocalizedFormat.format($0, arguments) },
                subtitle: text.subtitle.map { LocalizedFormat.format($0, arguments) },
                body: LocalizedFormat.format(text.body, arguments))
        case .alert(let title, let subtitle, let body):
            aps["alert"] = Self.alert(title: title, subtitle: subtitle, body: body)
        case .deviceLocalized(let key, let arguments, let titleKey, let titleArguments):
            var alert: [String: JSONValue] = ["loc-key": .string(key), "loc-args": .array(arguments.map(JSONValue.string))]
            if let titleKey {
                alert["title-loc-key"] = .string(titleKey)
                alert["title-loc-args"] = .array(titleArguments.map(JSONValue.string))
            }
            aps["alert"] = .object(alert)
        case .none: break
        }
        aps["badge"] = request.badge.map { .int(Int64($0)) }
        aps["sound"] = request.sound.map(JSONValue.string)
        aps["category"] = request.category.map(JSONValue.string)
        aps["thread-id"] = request.threadID.map(JSONValue.string)
        if request.contentAvailable { aps["content-available"] = .int(1) }
        var root = request.data
        root["aps"] = .object(aps)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let payload = Array(try encoder.encode(JSONValue.object(root)))
        let silent = request.contentAvailable && aps["alert"] == nil && aps["badge"] == nil && aps["sound"] == nil
        return Plan(registration: registration, language: language, notification: APNsNotification(
            token: registration.token, topic: registration.topic, pushType: request.pushType ?? (silent ? "background" : "alert"),
            priority: request.priority ?? (silent ? 5 : nil), expiration: request.expiration, collapseID: request.collapseID,
            payload: payload))
    }

    static func alert(title: String?, subtitle: String?, body: String) -> JSONValue {
        guard title != nil || subtitle != nil else { return .string(body) }
        var object: [String: JSONValue] = ["body": .string(body)]
        object["title"] = title.map(JSONValue.string)
        object["subtitle"] = subtitle.map(JSONValue.string)
        return .object(object)
    }

    // MARK: feedback and receipts

    /// What one reading of the gateway's feedback lists did.
    public struct FeedbackPoll: Sendable, Hashable {
        /// Dead tokens the gateway listed.
        public var read = 0
        /// Registrations removed (listed and not registered again after the listed time).
        public var pruned: [String] = []
        /// Topics whose list could not be read, with why.
        public var errors: [String: String] = [:]
    }

    /// Reads (and so clears) the feedback list of every topic with registrations, and prunes the
    /// tokens it names unless their app registered them again after the listed time.
    public func pollFeedback() async throws(ProviderError) -> FeedbackPoll {
        var poll = FeedbackPoll()
        let topics: [String]
        do { topics = try database.topics() } catch { throw ProviderError(500, "\(error)") }
        for topic in topics {
            do {
                let items = try await sender.feedback(topic: topic)
                poll.read += items.count
                for item in items where try database.prune(item.token.lowercased(), unregisteredAt: item.timestamp) {
                    poll.pruned.append(item.token.lowercased())
                }
            } catch {
                poll.errors[topic] = "\(error)"
            }
        }
        return poll
    }

    /// Polls the feedback lists every `interval` milliseconds on the service's clock, from now on.
    public func startFeedbackPolling(every interval: Int64, log: @escaping @Sendable (FeedbackPoll) -> Void = { _ in }) {
        feedbackAlarm?.cancel()
        guard interval > 0 else { return }
        feedbackAlarm = clock.setAlarm(at: clock.nowMilliseconds() + interval) { [work] in
            work.spawn {
                if let poll = try? await self.pollFeedback() { log(poll) }
                await self.startFeedbackPolling(every: interval, log: log)
            }
        }
    }

    public func stopFeedbackPolling() {
        feedbackAlarm?.cancel()
        feedbackAlarm = nil
    }

    /// The gateway's receipts for the accepted deliveries of sends: the latest status per token
    /// (`delivered`, `stored`, `acked`, `expired`, …; `unknown` when the gateway has no receipt).
    public func receipts(sendIDs: [String]) async throws(ProviderError) -> [String: String] {
        var apnsIDs: [(token: String, apnsID: String)] = []
        for id in sendIDs {
            for delivery in try report(id: id).deliveries where delivery.status == 200 {
                if let apnsID = delivery.apnsID { apnsIDs.append((delivery.token, apnsID)) }
            }
        }
        do {
            let sender = self.sender
            let statuses = try await concurrentMap(apnsIDs, limit: 64) { token, apnsID in
                (token, try await sender.receipt(apnsID: apnsID)?.deliveries.first { $0.token.lowercased() == token }?.status ?? "unknown")
            }
            return Dictionary(statuses, uniquingKeysWith: { _, last in last })
        } catch let error as ProviderError { throw error } catch { throw ProviderError(502, "the gateway's receipts could not be read: \(error)") }
    }

    public func report(id: String) throws(ProviderError) -> SendReport {
        do {
            guard let report = try database.send(id: id) else { throw ProviderError(404, "no send \(id)") }
            return report
        } catch let error as ProviderError { throw error } catch { throw ProviderError(500, "\(error)") }
    }
}
