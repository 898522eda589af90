import Crypto
import Foundation
import HeraldClient
import HeraldCore
import Logging
import Tracing

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

/// Sends one Web Push message to one subscription (encrypting it to the subscription's keys and
/// signing it with VAPID); `WebPushClient` is the real one.
public protocol WebPushSending: Sendable {
    func send(_ payload: [UInt8]?, to subscription: WebPushSubscription, keys: WebPushSubscriptionKeys, options: WebPushOptions) async throws -> WebPushResult
}

extension WebPushClient: WebPushSending {}

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
    /// `nil`: Web Push registrations are refused (the service has no VAPID key to sign with).
    let webPushSender: WebPushSending?
    let clock: AlarmClock
    /// Sends, pushes by outcome, scheduled runs and their lag, registrations (`GET /metrics`).
    public nonisolated let metrics: ProviderMetrics

    /// The Prometheus text exposition of ``metrics``, with the registration count read now.
    public nonisolated func metricsExposition() async throws(ProviderError) -> [UInt8] {
        metrics.registrations.set(Double(try await Self.reading { try await store.registrationCount() }))
        return metrics.exposition()
    }

    /// Sends under way by idempotency key, with their request's fingerprint.
    var inFlight: [String: (fingerprint: String, task: Task<(report: SendReport, replayed: Bool), Error>)] = [:]
    /// The schedules' plan (see SchedulePlan.swift).
    var plan = SchedulePlan()
    /// Held while the schedules and their plan change together (see ``lockSchedules()``).
    var scheduleLock = ScheduleLock()
    let work = WorkTracker()
    /// Pushes of one send started at once (each waits in the client for a stream when more are
    /// started than it lets through).
    public var sendConcurrency = 2_000
    var feedbackAlarm: ClockAlarm?

    /// - Parameters:
    ///   - clock: the time of registrations and reports, and the alarms schedules wake on.
    ///   - missedSendWindow: see ``missedSendWindow``.
    ///   - webPushSender: sends to registrations that are Web Push subscriptions; `nil` refuses them.
    public init(store: any ProviderStore, sender: PushSending, webPushSender: WebPushSending? = nil, clock: AlarmClock = SystemAlarmClock(),
                defaultLanguage: String = "en", missedSendWindow: Int64 = 3_600_000, metrics: ProviderMetrics = ProviderMetrics()) {
        self.webPushSender = webPushSender
        self.metrics = metrics
        self.store = store
        self.sender = sender
        self.clock = clock
        self.defaultLanguage = defaultLanguage
        self.missedSendWindow = missedSendWindow
    }

    // MARK: sending

    /// Sends, or — for an idempotency key already used by the same request — returns the first
    /// send's report without sending again (`replayed` true). Two requests with the same key at
    /// once send once. The same key with another request is refused (422); a key whose send a
    /// restart interrupted is refused (409), since some of its pushes may have gone out.
    ///
    /// With tracing on (``Traces``), the send is a span (`provider.send`) in the trace of the
    /// request that asked for it, and each push it makes a child of it.
    public func send(_ request: SendRequest) async throws(ProviderError) -> (report: SendReport, replayed: Bool) {
        guard Traces.isEnabled else { return Self.logged(try await answer(request)) }
        do {
            return try await withSpan("provider.send") { span in
                span.attributes["herald.target"] = Self.describe(request.target)
                let answer = try await self.answer(request)
                span.attributes["herald.send.id"] = answer.report.id
                span.attributes["herald.send.deliveries"] = answer.report.deliveries.count
                span.attributes["herald.send.replayed"] = answer.replayed
                return Self.logged(answer)
            }
        } catch let error as ProviderError { throw error } catch { throw ProviderError(.internalFailure, "\(error)") }
    }

    /// One log line per send (with its trace's ids while tracing is on).
    private static let sendLogger = Logger(label: "herald.provider.send")

    private static func logged(_ answer: (report: SendReport, replayed: Bool)) -> (report: SendReport, replayed: Bool) {
        let accepted = answer.report.deliveries.filter { (200..<300).contains($0.status) }.count
        sendLogger.info("send finished", metadata: [
            "send": "\(answer.report.id)", "deliveries": "\(answer.report.deliveries.count)", "accepted": "\(accepted)",
            "pruned": "\(answer.report.pruned.count)", "replayed": "\(answer.replayed)",
        ])
        return answer
    }

    private func answer(_ request: SendRequest) async throws(ProviderError) -> (report: SendReport, replayed: Bool) {
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
        return Hex.encode(SHA256.hash(data: bytes))
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
        // Badge counts: set, or counted once per key (a user's devices share one), before planning.
        var counts: [String: Int] = [:]
        if let badge = request.badge {
            try await store.setBadges(keys: targets.map(\.badgeKey), to: badge)
        } else if let increment = request.badgeIncrement {
            counts = try await store.incrementBadges(keys: targets.map(\.badgeKey), by: increment)
        }
        let plans = try targets.map { registration in
            try plan(request, for: registration, template: template, badge: request.badge ?? counts[registration.badgeKey])
        }
        // The client bounds the wire; this bounds the tasks waiting for it.
        let (sender, webPushSender) = (self.sender, self.webPushSender)
        let results = try await concurrentMap(plans.map(\.notification), limit: sendConcurrency) { outgoing -> Outcome in
            switch outgoing {
            case .apns(let notification): return .apns(try await sender.send(notification))
            case .webPush(let payload, let subscription, let keys, let options):
                guard let webPushSender else { return .webPush(nil, error: "this provider service sends no Web Push (--vapid-key)") }
                do { return .webPush(try await webPushSender.send(payload, to: subscription, keys: keys, options: options), error: nil) } catch {
                    return .webPush(nil, error: "\(error)")
                }
            case .refused(let why): return .refused(why)
            }
        }
        var report = SendReport(id: id, createdAt: createdAt, deliveries: [], pruned: [])
        for (plan, outcome) in zip(plans, results) {
            var delivery: SendReport.Delivery
            var goneAt: Int64?
            switch outcome {
            case .apns(let result):
                metrics.recordPush(result)
                delivery = SendReport.Delivery(
                    token: plan.registration.token, language: plan.language, status: result.status, reason: result.reason?.rawValue,
                    apnsID: result.apnsID, attempts: result.attempts, error: result.transportError ?? result.reason?.providerTokenAdvice)
                if result.status == 410 { goneAt = result.timestamp ?? clock.nowMilliseconds() }
            case .webPush(let result?, _):
                metrics.recordWebPush(status: result.status)
                delivery = SendReport.Delivery(
                    token: plan.registration.token, language: plan.language, status: result.status,
                    reason: result.isAccepted ? nil : Self.webPushReason(result), apnsID: nil, attempts: result.attempts,
                    error: result.isGone ? "the subscription is gone (its push service answered \(result.status)): the registration is pruned" : nil,
                    location: result.location)
                // RFC 8030 §6.2 and §7.3: a subscription that is no more (410), or never was (404).
                // Pruned whenever it registered: the endpoint is the subscription, and it is dead.
                if result.isGone { goneAt = .max }
            case .webPush(nil, let error):
                metrics.recordWebPush(status: 0)
                delivery = SendReport.Delivery(token: plan.registration.token, language: plan.language, status: 0, attempts: 1, error: error)
            case .refused(let why):
                delivery = SendReport.Delivery(token: plan.registration.token, language: plan.language, status: 0, attempts: 0, error: why)
            }
            if let goneAt {
                let at = goneAt
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
        var notification: Outgoing
    }

    /// What goes out for one registration.
    enum Outgoing: Sendable {
        case apns(APNsNotification)
        /// The plaintext (encrypted by the sender to the subscription) and the request's headers.
        case webPush(payload: [UInt8]?, WebPushSubscription, WebPushSubscriptionKeys, WebPushOptions)
        /// Nothing can go to this registration (why, for its delivery in the report).
        case refused(String)
    }

    /// What became of it.
    enum Outcome: Sendable {
        case apns(APNsResult)
        case webPush(WebPushResult?, error: String?)
        case refused(String)
    }

    /// A push service's refusal in words: its `reason`/`message` when it sent autopush's JSON.
    static func webPushReason(_ result: WebPushResult) -> String {
        if let object = try? JSONReader.parseObject(Array(result.reason.utf8), limits: .payload),
           let message = object["message"]?.stringValue ?? object["error"]?.stringValue {
            return String(message.prefix(256))
        }
        return String(result.reason.prefix(256))
    }

    /// `badge`: the absolute number this registration gets (the request's, or its counted one).
    private func plan(_ request: SendRequest, for registration: Registration, template: MessageTemplate?, badge: Int?) throws -> Plan {
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
                body: text.body.map { LocalizedFormat.format($0, arguments) })
        case .alert(let title, let subtitle, let body):
            aps.alert = APS.Alert.text(title: title, subtitle: subtitle, body: body)
        case .deviceLocalized(let key, let arguments, let titleKey, let titleArguments):
            aps.alert = APS.Alert.localized(key: key, arguments: arguments, titleKey: titleKey, titleArguments: titleArguments)
        case .none: break
        }
        aps.badge = badge
        aps.sound = request.sound.map(APS.Sound.named)
        aps.category = request.category
        aps.threadID = request.threadID
        if request.contentAvailable { aps.contentAvailable = 1 }
        request.liveActivity?.write(into: &aps, nowSeconds: nowMilliseconds() / 1000)
        let notification = NotificationPayload(aps: aps, custom: request.data)
        let payload = try notification.encoded()
        if let webPush = registration.webPush {
            return Plan(registration: registration, language: language, notification: webPushPlan(request, to: webPush, alert: aps.alert, badge: badge, payload: payload))
        }
        if request.liveActivity != nil {
            // Checked as the device checks it: what ActivityKit would drop is refused here, with why.
            do { _ = try LiveActivityUpdate(payload: notification) } catch {
                throw ProviderError(.invalid, "this Live Activity push would be ignored by the device: \(error)")
            }
            let suffix = PushType.liveactivity.topicSuffix
            let topic = registration.topic.hasSuffix(suffix) ? registration.topic : registration.topic + suffix
            return Plan(registration: registration, language: language, notification: .apns(APNsNotification(
                token: registration.token, topic: topic, pushType: PushType.liveactivity.rawValue, priority: request.priority,
                expiration: request.expiration, collapseID: request.collapseID, payload: payload)))
        }
        let silent = notification.isSilent
        return Plan(registration: registration, language: language, notification: .apns(APNsNotification(
            token: registration.token, topic: registration.topic, pushType: request.pushType ?? (silent ? "background" : "alert"),
            priority: request.priority ?? (silent ? 5 : nil), expiration: request.expiration, collapseID: request.collapseID,
            payload: payload)))
    }


    /// A send to a Web Push subscription: a Declarative Web Push message when the send has an
    /// alert and a page to open (the send's `url`, else the registration's), the same JSON as an
    /// APNs payload otherwise (the page's service worker reads it). `TTL` from `expiration`,
    /// `Urgency` from `priority` (10 normal, 5 low, 1 very-low), `Topic` from `collapseId`.
    private func webPushPlan(_ request: SendRequest, to recipient: WebPushRecipient, alert: APS.Alert?, badge: Int?, payload: [UInt8]) -> Outgoing {
        guard request.liveActivity == nil else { return .refused("a Live Activity push goes to APNs tokens only, not to a Web Push subscription") }
        guard let keys = WebPushSubscriptionKeys(p256dh: recipient.p256dh, auth: recipient.auth) else {
            return .refused("the registration's Web Push keys are not a P-256 key and auth secret")
        }
        var plaintext = payload
        if let (title, subtitle, body) = Self.plainText(alert), let page = request.url ?? recipient.url {
            let lines = [subtitle, body].compactMap { $0 }.filter { !$0.isEmpty }
            let message = DeclarativeWebPushMessage(
                title: title ?? lines.first ?? "", navigate: page, body: title == nil ? lines.dropFirst().first : (lines.isEmpty ? nil : lines.joined(separator: "\n")),
                tag: request.threadID, silent: request.sound == nil, appBadge: badge.map(Int64.init),
                data: request.data.isEmpty ? nil : .object(request.data))
            plaintext = message.encoded()
        }
        let now = clock.nowMilliseconds() / 1000
        let ttl: Int64 = switch request.expiration {
        case nil: 86_400
        case 0?: 0
        case let at?: min(max(0, at - now), 28 * 86_400)
        }
        let urgency: WebPushOptions.Urgency = switch request.priority {
        case 1?: .veryLow
        case 5?: .low
        default: .normal
        }
        let options = WebPushOptions(ttl: ttl, urgency: urgency, topic: request.collapseID.map(Self.webPushTopic))
        let subscription = WebPushSubscription(endpoint: recipient.endpoint, keys: keys)
        return .webPush(payload: plaintext, subscription, keys, options)
    }

    /// An alert's text when the provider wrote it (not keys the device localizes).
    static func plainText(_ alert: APS.Alert?) -> (title: String?, subtitle: String?, body: String?)? {
        switch alert {
        case .body(let body)?: return (nil, nil, body)
        case .fields(let f)? where f.locKey == nil && f.titleLocKey == nil && f.subtitleLocKey == nil:
            guard f.title != nil || f.subtitle != nil || f.body != nil else { return nil }
            return (f.title, f.subtitle, f.body)
        default: return nil
        }
    }

    /// A collapse id as a Web Push `Topic` (1–32 characters of base64url): itself when it is one,
    /// else the first 32 characters of its SHA-256 in base64url (the same id, the same topic).
    static func webPushTopic(_ collapseID: String) -> String {
        let bytes = Array(collapseID.utf8)
        let isTopic = (1...32).contains(bytes.count) && bytes.allSatisfy { $0.isBase64URL }
        return isTopic ? collapseID : String(Base64URL.encode(Array(SHA256.hash(data: bytes))).prefix(32))
    }

}

extension UInt8 {
    fileprivate var isBase64URL: Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(self) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(self)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self) || self == UInt8(ascii: "-") || self == UInt8(ascii: "_")
    }
}
