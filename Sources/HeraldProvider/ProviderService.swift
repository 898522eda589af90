import Crypto
import Foundation
import HeraldClient
import HeraldCore

/// Sends one notification and says what became of it; `APNsClient` is the real one. A Herald
/// gateway also answers the feedback list and receipts; other senders throw for them.
public protocol PushSending: Sendable {
    func send(_ notification: APNsNotification) async throws -> APNsResult
    /// Reads and clears a topic's list of dead tokens.
    func feedback(topic: String) async throws -> [FeedbackListItem]
    /// A notification's delivery receipt, `nil` when the gateway has none.
    func receipt(apnsID: String) async throws -> NotificationReceipt?
}

extension PushSending {
    public func feedback(topic: String) async throws -> [FeedbackListItem] { throw ProviderError(.notSupported, "this sender cannot read feedback lists") }
    public func receipt(apnsID: String) async throws -> NotificationReceipt? { throw ProviderError(.notSupported, "this sender cannot read receipts") }
}

extension APNsClient: PushSending {}

/// The provider service: the app's own server. Keeps registrations, localizes, sends to a
/// token, a user or a segment through an APNs client, prunes tokens the gateway reports
/// unregistered, and remembers every send (its report, by id and by idempotency key).
public actor ProviderService {
    /// Where registrations, templates, sends and schedules are kept.
    public let store: any ProviderStore
    public let defaultLanguage: String
    /// How late a schedule's occurrence may still be sent when the service starts after it was due
    /// (milliseconds); older ones are recorded as missed.
    public let missedSendWindow: Int64
    let sender: PushSending
    let clock: AlarmClock
    /// Sends, pushes by outcome, scheduled runs and their lag, registrations (`GET /metrics`).
    public nonisolated let metrics: ProviderMetrics

    /// The Prometheus text exposition of ``metrics``, with the registration count read now.
    public nonisolated func metricsExposition() async throws(ProviderError) -> [UInt8] {
        metrics.registrations.set(Double(try await Self.reading { try await store.registrationCount() }))
        return metrics.exposition()
    }

    // MARK: reads (the REST API's lists and the dashboard): off the actor, failures as ProviderError

    /// One page of registrations in token order, after the token `after`.
    public nonisolated func registrations(_ filter: RegistrationFilter, after: String?, limit: Int) async throws(ProviderError) -> [Registration] {
        try await Self.reading { try await store.registrations(filter, after: after?.lowercased(), limit: limit) }
    }

    /// A token's registration.
    public nonisolated func registration(token: String) async throws(ProviderError) -> Registration {
        guard let found = try await Self.reading({ try await store.registration(token: token.lowercased()) }) else {
            throw ProviderError(.notFound, "no registration for token \(token)")
        }
        return found
    }

    /// How many registrations there are by language, time zone and topic.
    public nonisolated func registrationCounts() async throws(ProviderError) -> RegistrationCounts {
        try await Self.reading { try await store.registrationCounts() }
    }

    /// One page of templates in id order, after the id `after`.
    public nonisolated func templates(after: String?, limit: Int) async throws(ProviderError) -> [MessageTemplate] {
        try await Self.reading { try await store.templates(after: after, limit: limit) }
    }

    /// One page of sends, newest first, after the send `after` (which must exist); only a
    /// schedule's when given.
    public nonisolated func sends(after: String?, scheduleID: String?, limit: Int) async throws(ProviderError) -> [SendSummary] {
        if let after, try await !Self.reading({ try await store.sendExists(id: after) }) {
            throw ProviderError(.invalid, "after must be the id of a send (the previous page's next)")
        }
        return try await Self.reading { try await store.sends(after: after, scheduleID: scheduleID, limit: limit) }
    }

    /// Runs a read, reporting a storage failure as the service's own.
    private static func reading<T>(_ read: () async throws -> T) async throws(ProviderError) -> T {
        do { return try await read() } catch { throw ProviderError(.internalFailure, "could not read the provider database: \(error)") }
    }
    /// Sends under way by idempotency key, with their request's fingerprint.
    private var inFlight: [String: (fingerprint: String, task: Task<(report: SendReport, replayed: Bool), Error>)] = [:]
    /// The schedules' plan (see SchedulePlan.swift).
    var plan = SchedulePlan()
    /// Held while the schedules and their plan change together (see ``lockSchedules()``).
    var scheduleLock = ScheduleLock()
    let work = WorkTracker()
    /// Pushes of one send started at once (each waits in the client for a stream when more are
    /// started than it lets through).
    public var sendConcurrency = 2_000
    private var feedbackAlarm: ClockAlarm?

    /// - Parameters:
    ///   - clock: the time of registrations and reports, and the alarms schedules wake on.
    ///   - missedSendWindow: see ``missedSendWindow``.
    public init(store: any ProviderStore, sender: PushSending, clock: AlarmClock = SystemAlarmClock(), defaultLanguage: String = "en",
                missedSendWindow: Int64 = 3_600_000, metrics: ProviderMetrics = ProviderMetrics()) {
        self.metrics = metrics
        self.store = store
        self.sender = sender
        self.clock = clock
        self.defaultLanguage = defaultLanguage
        self.missedSendWindow = missedSendWindow
    }

    // MARK: registrations

    /// Registers (or registers again) a device: at every launch, and when its language or zone changes.
    @discardableResult
    public func register(token: String, topic: String, language: String, timeZone: String, userID: String?, tags: [String]) async throws(ProviderError) -> Registration {
        // The one token parser: ASCII hex of either case, an even count, at most Apple's length.
        guard let parsed = DeviceToken(hex: token) else {
            throw ProviderError(.invalid, "\"token\" must be the device token in hex, not \"\(token)\"")
        }
        let token = parsed.hex
        guard DeviceProtocol.isValidTopic(topic) else { throw ProviderError(.invalid, "\"topic\" must be the app's bundle id, not \"\(topic)\"") }
        guard Self.isLanguageTag(language) else {
            throw ProviderError(.invalid, "\"language\" must be a BCP 47 tag such as en, fr-CA or zh-Hant-TW, not \"\(language)\"")
        }
        guard TimeZone(identifier: timeZone) != nil else {
            throw ProviderError(.invalid, "\"timeZone\" must be an IANA time zone such as Europe/Paris, not \"\(timeZone)\"")
        }
        let registration = Registration(token: token, topic: topic, language: language, timeZone: timeZone, userID: userID, tags: tags,
                                        registeredAt: clock.nowMilliseconds())
        do { try await store.upsert(registration) } catch { throw ProviderError(.internalFailure, "could not store the registration: \(error)") }
        zoneSeen(timeZone)
        return registration
    }

    static func isLanguageTag(_ tag: String) -> Bool {
        let parts = tag.split(separator: "-", omittingEmptySubsequences: false)
        guard let first = parts.first, (2...3).contains(first.count), first.allSatisfy({ $0.isASCII && $0.isLetter }) else { return false }
        return parts.dropFirst().allSatisfy { (1...8).contains($0.count) && $0.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) } }
    }

    public func unregister(token: String) async throws(ProviderError) {
        do {
            guard try await store.deleteRegistration(token.lowercased()) else { throw ProviderError(.notFound, "no registration for token \(token)") }
        } catch let error as ProviderError { throw error } catch { throw ProviderError(.internalFailure, "\(error)") }
    }

    /// The most arguments a send gives a template (`args`), so the most a template may take.
    public static let maximumArguments = 100

    public func putTemplate(_ template: MessageTemplate) async throws(ProviderError) {
        guard !template.id.isEmpty, !template.translations.isEmpty else {
            throw ProviderError(.invalid, "a template needs an id and at least one translation")
        }
        for language in template.translations.keys where !Self.isLanguageTag(language) {
            throw ProviderError(.invalid, "translation key \"\(language)\" is not a BCP 47 language tag")
        }
        guard template.argumentCount <= Self.maximumArguments else {
            throw ProviderError(.invalid, "template \"\(template.id)\" takes \(template.argumentCount) arguments; a send gives at most \(Self.maximumArguments)")
        }
        do { try await store.put(template) } catch { throw ProviderError(.internalFailure, "\(error)") }
    }

    public func template(_ id: String) async throws(ProviderError) -> MessageTemplate {
        do {
            guard let template = try await store.template(id) else { throw ProviderError(.notFound, "no template \"\(id)\"") }
            return template
        } catch let error as ProviderError { throw error } catch { throw ProviderError(.internalFailure, "\(error)") }
    }

    /// Deletes a template no active schedule uses (409 names the schedule otherwise).
    public func deleteTemplate(_ id: String) async throws(ProviderError) {
        // Under the schedule lock: no schedule can start using the template while it is checked.
        await lockSchedules()
        defer { unlockSchedules() }
        do {
            for schedule in try await store.schedules(state: .active) {
                if case .template(id, _) = schedule.send.message {
                    throw ProviderError(.conflict, "template \"\(id)\" is used by active schedule \"\(schedule.id)\"; cancel it first (DELETE /v1/schedules/\(schedule.id))")
                }
            }
            guard try await store.deleteTemplate(id) else { throw ProviderError(.notFound, "no template \"\(id)\"") }
        } catch let error as ProviderError { throw error } catch { throw ProviderError(.internalFailure, "\(error)") }
    }

    /// The template a send names, checked: it exists and the send gives exactly the arguments it takes.
    func checkedTemplate(_ message: SendMessage) async throws -> MessageTemplate? {
        guard case .template(let id, let arguments) = message else { return nil }
        guard let template = try await store.template(id) else { throw ProviderError(.notFound, "no template \"\(id)\": PUT /v1/templates/\(id) first") }
        guard arguments.count == template.argumentCount else {
            throw ProviderError(.invalid, "template \"\(id)\" takes \(template.argumentCount) argument\(template.argumentCount == 1 ? "" : "s") (\"args\"), this send gives \(arguments.count)")
        }
        return template
    }

    // MARK: sending

    /// Sends, or — for an idempotency key already used by the same request — returns the first
    /// send's report without sending again (`replayed` true). Two requests with the same key at
    /// once send once. The same key with another request is refused (422); a key whose send a
    /// restart interrupted is refused (409), since some of its pushes may have gone out.
    public func send(_ request: SendRequest) async throws(ProviderError) -> (report: SendReport, replayed: Bool) {
        do {
            guard let key = request.idempotencyKey else { return (try await perform(request, fingerprint: nil), false) }
            let fingerprint = Self.fingerprint(request)
            if let running = inFlight[key] {
                guard running.fingerprint == fingerprint else { throw Self.keyReused(key) }
                metrics.recordJoinedSend()
                return (try await running.task.value.report, true)
            }
            // Registered before the first suspension: a second request with the key waits for this one.
            let task = Task { () async throws -> (report: SendReport, replayed: Bool) in
                if let replay = try await self.replay(key, fingerprint) { return (replay, true) }
                return (try await self.perform(request, fingerprint: fingerprint), false)
            }
            inFlight[key] = (fingerprint, task)
            defer { inFlight[key] = nil }
            return try await task.value
        } catch let error as ProviderError { throw error } catch { throw ProviderError(.internalFailure, "\(error)") }
    }

    /// The report of the finished send that holds `key`, `nil` when none does.
    private func replay(_ key: String, _ fingerprint: String) async throws -> SendReport? {
        guard let record = try await store.sendRecord(idempotencyKey: key) else { return nil }
        guard record.fingerprint == nil || record.fingerprint == fingerprint else { throw Self.keyReused(key) }
        switch record.state {
        case .done: return record.report
        case .started, .interrupted:
            throw ProviderError(.conflict, """
                send \(record.report.id) with Idempotency-Key "\(key)" was interrupted (the service stopped while sending it) and some of \
                its pushes may have gone out; it is not sent again. See GET /v1/sends/\(record.report.id), and send with a new key if needed
                """)
        }
    }

    private static func keyReused(_ key: String) -> ProviderError {
        ProviderError(.keyReused, "Idempotency-Key \"\(key)\" was used for a different request; use a new key for a new send")
    }

    /// SHA-256 of the request's JSON without its idempotency key: what a retry must repeat.
    static func fingerprint(_ request: SendRequest) -> String {
        var request = request
        request.idempotencyKey = nil
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let bytes = (try? encoder.encode(request)) ?? Data()
        return SHA256.hash(data: bytes).map { byte in (byte < 16 ? "0" : "") + String(byte, radix: 16) }.joined()
    }

    private func perform(_ request: SendRequest, fingerprint: String?) async throws -> SendReport {
        let targets = try await resolve(request.target)
        guard !targets.isEmpty else { throw ProviderError(.notFound, "no registration matches \(Self.describe(request.target)); nothing was sent") }
        let template = try await checkedTemplate(request.message)
        let id = UUID().uuidString.lowercased()
        let createdAt = clock.nowMilliseconds()
        guard try await store.beginSend(id: id, idempotencyKey: request.idempotencyKey, fingerprint: fingerprint, createdAt: createdAt) else {
            // Another process took the key between the check and now.
            if let key = request.idempotencyKey, let fingerprint, let replay = try await replay(key, fingerprint) { return replay }
            throw ProviderError(.conflict, "a send with this Idempotency-Key is under way; retry in a moment")
        }
        metrics.recordSend(origin: "api")
        let report = try await deliver(request, to: targets, template: template, id: id, createdAt: createdAt)
        do { try await store.finishSend(report) } catch {
            throw ProviderError(.internalFailure, "send \(id) went out but its report could not be saved (\(error)); it stays marked started and is not repeated")
        }
        return report
    }

    /// A target as the API spells it, for messages.
    static func describe(_ target: SendTarget) -> String {
        switch target {
        case .token(let token): return "token \(token)"
        case .user(let user): return "user \"\(user)\""
        case .segment(let topic, let tags, let languages):
            var parts: [String] = []
            if let topic { parts.append("topic \(topic)") }
            if !tags.isEmpty { parts.append("tags \(tags.joined(separator: ", "))") }
            if !languages.isEmpty { parts.append("languages \(languages.joined(separator: ", "))") }
            return "the segment" + (parts.isEmpty ? " of everyone" : " with " + parts.joined(separator: "; "))
        }
    }

    /// Sends `request` to `targets` and prunes the tokens answered 410; the report is not stored.
    /// A token that could not be pruned is noted in its delivery, never lost with the report.
    /// `createdAt` is when the send started (the time it is listed by): `now` when not given.
    func deliver(_ request: SendRequest, to targets: [Registration], template: MessageTemplate?, id: String = UUID().uuidString.lowercased(),
                 createdAt: Int64? = nil) async throws -> SendReport {
        let createdAt = createdAt ?? clock.nowMilliseconds()
        let plans = try targets.map { registration in try plan(request, for: registration, template: template) }
        // The client bounds the wire; this bounds the tasks waiting for it.
        let sender = self.sender
        let results = try await concurrentMap(plans.map(\.notification), limit: sendConcurrency) { try await sender.send($0) }
        var report = SendReport(id: id, createdAt: createdAt, deliveries: [], pruned: [])
        for (plan, result) in zip(plans, results) {
            metrics.recordPush(result)
            var delivery = SendReport.Delivery(
                token: plan.registration.token, language: plan.language, status: result.status, reason: result.reason?.rawValue,
                apnsID: result.apnsID, attempts: result.attempts, error: result.transportError ?? result.reason?.providerTokenAdvice)
            if result.status == 410 {
                let at = result.timestamp ?? clock.nowMilliseconds()
                do {
                    if try await store.prune(plan.registration.token, unregisteredAt: at) { report.pruned.append(plan.registration.token) }
                } catch {
                    delivery.error = "unregistered, but the registration could not be pruned: \(error)"
                }
            }
            report.deliveries.append(delivery)
        }
        return report
    }

    /// The registrations a target names, only those in `zone` when given; a token with no
    /// registration is a 404.
    /// How many registrations a send to `target` would reach now (the dashboard's count before sending).
    public func recipientCount(_ target: SendTarget) async throws(ProviderError) -> Int {
        do {
            return try await resolve(target).count
        } catch let error as ProviderError { throw error } catch { throw ProviderError(.internalFailure, "\(error)") }
    }

    /// Now, on the service's clock (milliseconds since 1970).
    public nonisolated func nowMilliseconds() -> Int64 { clock.nowMilliseconds() }

    func resolve(_ target: SendTarget, zone: String? = nil) async throws -> [Registration] {
        guard let found = try await store.registrations(for: target, zone: zone) else {
            throw ProviderError(.notFound, "no registration for \(Self.describe(target))")
        }
        return found
    }

    struct Plan: Sendable {
        var registration: Registration
        var language: String?
        var notification: APNsNotification
    }

    private func plan(_ request: SendRequest, for registration: Registration, template: MessageTemplate?) throws -> Plan {
        var aps = APS()
        var language: String?
        switch request.message {
        case .template(let id, let arguments):
            guard let (used, text) = template?.text(for: registration.language, fallback: defaultLanguage) else {
                throw ProviderError(.internalFailure, "template \(id) has no translations")
            }
            language = used
            aps.alert = APS.Alert.text(
                title: text.title.map { LocalizedFormat.format($0, arguments) },
                subtitle: text.subtitle.map { LocalizedFormat.format($0, arguments) },
                body: LocalizedFormat.format(text.body, arguments))
        case .alert(let title, let subtitle, let body):
            aps.alert = APS.Alert.text(title: title, subtitle: subtitle, body: body)
        case .deviceLocalized(let key, let arguments, let titleKey, let titleArguments):
            aps.alert = APS.Alert.localized(key: key, arguments: arguments, titleKey: titleKey, titleArguments: titleArguments)
        case .none: break
        }
        aps.badge = request.badge
        aps.sound = request.sound.map(APS.Sound.named)
        aps.category = request.category
        aps.threadID = request.threadID
        if request.contentAvailable { aps.contentAvailable = 1 }
        request.liveActivity?.write(into: &aps, nowSeconds: nowMilliseconds() / 1000)
        let notification = NotificationPayload(aps: aps, custom: request.data)
        let payload = try notification.encoded()
        if request.liveActivity != nil {
            // Checked as the device checks it: what ActivityKit would drop is refused here, with why.
            do { _ = try LiveActivityUpdate(payload: notification) } catch {
                throw ProviderError(.invalid, "this Live Activity push would be ignored by the device: \(error)")
            }
            let suffix = PushType.liveactivity.topicSuffix
            let topic = registration.topic.hasSuffix(suffix) ? registration.topic : registration.topic + suffix
            return Plan(registration: registration, language: language, notification: APNsNotification(
                token: registration.token, topic: topic, pushType: PushType.liveactivity.rawValue, priority: request.priority,
                expiration: request.expiration, collapseID: request.collapseID, payload: payload))
        }
        let silent = notification.isSilent
        return Plan(registration: registration, language: language, notification: APNsNotification(
            token: registration.token, topic: registration.topic, pushType: request.pushType ?? (silent ? "background" : "alert"),
            priority: request.priority ?? (silent ? 5 : nil), expiration: request.expiration, collapseID: request.collapseID,
            payload: payload))
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
        do { topics = try await store.topics() } catch { throw ProviderError(.internalFailure, "\(error)") }
        for topic in topics {
            do {
                let items = try await sender.feedback(topic: topic)
                poll.read += items.count
                for item in items where try await store.prune(item.token.lowercased(), unregisteredAt: item.timestamp) {
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
            for delivery in try await report(id: id).deliveries where delivery.status == 200 {
                if let apnsID = delivery.apnsID { apnsIDs.append((delivery.token, apnsID)) }
            }
        }
        do {
            let sender = self.sender
            let statuses = try await concurrentMap(apnsIDs, limit: 64) { token, apnsID in
                (token, try await sender.receipt(apnsID: apnsID)?.deliveries.first { $0.token.lowercased() == token }?.status ?? "unknown")
            }
            return Dictionary(statuses, uniquingKeysWith: { _, last in last })
        } catch let error as ProviderError { throw error } catch { throw ProviderError(.gatewayFailed, "the gateway's receipts could not be read: \(error)") }
    }

    public func report(id: String) async throws(ProviderError) -> SendReport {
        do {
            guard let report = try await store.send(id: id) else { throw ProviderError(.notFound, "no send \(id)") }
            return report
        } catch let error as ProviderError { throw error } catch { throw ProviderError(.internalFailure, "\(error)") }
    }
}
