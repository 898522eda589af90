import Crypto
import Foundation
import HeraldCore

/// A device's registration with the provider: what the app posts at every launch and whenever
/// its language or time zone changes (the seeds' `sendProviderDeviceToken` and
/// `sendProviderCurrentLanguage`).
public struct Registration: Sendable, Hashable, Codable {
    /// The device token, lowercase hex.
    public var token: String
    public var topic: String
    /// BCP 47, e.g. `fr-CA`.
    public var language: String
    /// IANA, e.g. `Europe/Paris`.
    public var timeZone: String
    public var userID: String?
    public var tags: [String]
    /// The last time the app registered (milliseconds since 1970).
    public var registeredAt: Int64
    /// A Web Push subscription instead of an APNs device token: sends reach it through its push
    /// service, encrypted to its keys. Its `token` is then derived from the endpoint
    /// (``WebPushRecipient/token(endpoint:)``).
    public var webPush: WebPushRecipient?

    public init(
        token: String, topic: String, language: String, timeZone: String, userID: String? = nil, tags: [String] = [], registeredAt: Int64,
        webPush: WebPushRecipient? = nil
    ) {
        (self.token, self.topic, self.language, self.timeZone, self.userID, self.tags, self.registeredAt) =
            (token, topic, language, timeZone, userID, tags, registeredAt)
        self.webPush = webPush
    }
}

/// A registration's Web Push subscription (what a page's `PushSubscription.toJSON()` gives, and
/// the page Declarative Web Push notifications open).
public struct WebPushRecipient: Sendable, Hashable, Codable {
    public var endpoint: String
    /// The user agent's P-256 key and auth secret, base64url.
    public var p256dh: String
    public var auth: String
    /// The page a notification opens (Declarative Web Push `navigate`) unless the send names one.
    public var url: String?

    public init(endpoint: String, p256dh: String, auth: String, url: String? = nil) {
        (self.endpoint, self.p256dh, self.auth, self.url) = (endpoint, p256dh, auth, url)
    }

    /// A Web Push registration's token: the SHA-256 of its endpoint, in hex (an endpoint is the
    /// subscription's identity; the token keeps the registrations' one key).
    public static func token(endpoint: String) -> String {
        SHA256.hash(data: Array(endpoint.utf8)).map { String(format: "%02x", $0) }.joined()
    }
}

/// A message in several languages: `%@` / `%n$@` take the send's arguments.
public struct MessageTemplate: Sendable, Hashable, Codable {
    /// Any of a title, a subtitle and a body (at least one: APNs shows an alert with only a
    /// title, or only a subtitle).
    public struct Text: Sendable, Hashable, Codable {
        public var title: String?
        public var subtitle: String?
        public var body: String?
        public init(title: String? = nil, subtitle: String? = nil, body: String?) {
            (self.title, self.subtitle, self.body) = (title, subtitle, body)
        }
    }
    public var id: String
    /// By language tag (`en`, `fr`, `pt-BR`, …).
    public var translations: [String: Text]

    public init(id: String, translations: [String: Text]) {
        self.id = id
        self.translations = translations
    }

    /// The text for `language`: the language itself, then its base language (`fr-CA` → `fr`), then
    /// `fallback` (the service's default language), then any translation (alphabetically first).
    /// Returns the language used.
    public func text(for language: String, fallback: String) -> (language: String, text: Text)? {
        let byLowercase = Dictionary(translations.map { ($0.key.lowercased(), $0) }, uniquingKeysWith: { a, _ in a })
        var chain = [language.lowercased()]
        if let base = language.lowercased().split(whereSeparator: { $0 == "-" || $0 == "_" }).first.map(String.init), base != chain[0] {
            chain.append(base)
        }
        chain.append(fallback.lowercased())
        for candidate in chain { if let hit = byLowercase[candidate] { return (hit.key, hit.value) } }
        return translations.keys.sorted().first.map { ($0, translations[$0]!) }
    }

    /// How many arguments a send of this template must give: the most any of its texts takes.
    public var argumentCount: Int {
        translations.values.map { text in
            [text.title, text.subtitle, text.body].compactMap { $0 }.map(LocalizedFormat.argumentCount).max() ?? 0
        }.max() ?? 0
    }
}

/// Who a send goes to.
public enum SendTarget: Sendable, Hashable, Codable {
    case token(String)
    case user(String)
    /// Registrations of a topic, optionally with all of some tags and one of some languages (base-language match).
    case segment(topic: String?, tags: [String], languages: [String])
}

/// What a send says.
public enum SendMessage: Sendable, Hashable, Codable {
    /// A template localized on the provider for each registration's language.
    case template(id: String, arguments: [String])
    /// The same alert for everyone.
    case alert(title: String?, subtitle: String?, body: String?)
    /// `loc-key`/`loc-args` passed through for the device to localize.
    case deviceLocalized(key: String?, arguments: [String], titleKey: String?, titleArguments: [String])
    /// No alert (badge, sound or silent data only).
    case none
}

public struct SendRequest: Sendable, Hashable, Codable {
    public var target: SendTarget
    public var message: SendMessage
    /// The topic for token and user targets that match several apps; defaults to each registration's.
    /// Sets each recipient's badge count to this and sends it.
    public var badge: Int?
    /// Adds this to each recipient's badge count (``Registration/badgeKey``, counted once per
    /// key) and sends each its new count; not with ``badge``.
    public var badgeIncrement: Int?
    public var sound: String?
    public var contentAvailable: Bool
    public var category: String?
    public var threadID: String?
    public var data: [String: JSONValue]
    public var pushType: String?
    public var priority: Int?
    public var expiration: Int64?
    public var collapseID: String?
    public var idempotencyKey: String?
    /// A Live Activity push (push type `liveactivity`, topic `<bundle id>.push-type.liveactivity`):
    /// the `aps` keys of ActivityKit, beside the alert the message makes.
    public var liveActivity: LiveActivitySend?
    /// Web Push recipients: the page the notification opens (Declarative Web Push `navigate`);
    /// `nil`: each registration's own `url`.
    public var url: String?

    public init(target: SendTarget, message: SendMessage, badge: Int? = nil, sound: String? = nil, contentAvailable: Bool = false,
                category: String? = nil, threadID: String? = nil, data: [String: JSONValue] = [:], pushType: String? = nil,
                priority: Int? = nil, expiration: Int64? = nil, collapseID: String? = nil, idempotencyKey: String? = nil,
                liveActivity: LiveActivitySend? = nil, url: String? = nil, badgeIncrement: Int? = nil) {
        self.url = url
        self.badgeIncrement = badgeIncrement
        (self.target, self.message, self.badge, self.sound, self.contentAvailable, self.category, self.threadID, self.data,
         self.pushType, self.priority, self.expiration, self.collapseID, self.idempotencyKey) =
            (target, message, badge, sound, contentAvailable, category, threadID, data, pushType, priority, expiration, collapseID, idempotencyKey)
        self.liveActivity = liveActivity
    }
}

/// The Live Activity part of a send (reference §4's Live Activity `aps` keys). Stored and read
/// as one flat object: `event`, `timestamp`, the ``LiveActivityContent`` keys, `inputPushToken`,
/// `inputPushChannel`.
@dynamicMemberLookup
public struct LiveActivitySend: Sendable, Hashable, Codable {
    public var event: String
    /// UNIX seconds; `nil`: when the send is planned.
    public var timestamp: Int64?
    /// The content state, dates, relevance and attributes (read as `send.contentState`).
    public var content: LiveActivityContent
    public var inputPushToken: Bool
    public var inputPushChannel: String?

    public init(
        event: String, timestamp: Int64? = nil, contentState: [String: JSONValue]? = nil, staleDate: Int64? = nil, dismissalDate: Int64? = nil,
        relevanceScore: Double? = nil, attributesType: String? = nil, attributes: [String: JSONValue]? = nil,
        inputPushToken: Bool = false, inputPushChannel: String? = nil
    ) {
        (self.event, self.timestamp, self.inputPushToken, self.inputPushChannel) = (event, timestamp, inputPushToken, inputPushChannel)
        self.content = LiveActivityContent(
            contentState: contentState, staleDate: staleDate, dismissalDate: dismissalDate, relevanceScore: relevanceScore,
            attributesType: attributesType, attributes: attributes)
    }

    public subscript<Value>(dynamicMember part: WritableKeyPath<LiveActivityContent, Value>) -> Value {
        get { content[keyPath: part] }
        set { content[keyPath: part] = newValue }
    }

    private enum CodingKeys: String, CodingKey { case event, timestamp, inputPushToken, inputPushChannel }

    /// The content's keys sit beside the others, as sends stored before it was a part of its own.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        event = try container.decode(String.self, forKey: .event)
        timestamp = try container.decodeIfPresent(Int64.self, forKey: .timestamp)
        inputPushToken = try container.decode(Bool.self, forKey: .inputPushToken)
        inputPushChannel = try container.decodeIfPresent(String.self, forKey: .inputPushChannel)
        content = try LiveActivityContent(from: decoder)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(event, forKey: .event)
        try container.encodeIfPresent(timestamp, forKey: .timestamp)
        try container.encode(inputPushToken, forKey: .inputPushToken)
        try container.encodeIfPresent(inputPushChannel, forKey: .inputPushChannel)
        try content.encode(to: encoder)
    }

    /// Writes its `aps` keys (an event the spec does not name is written as given; the check of
    /// the whole payload refuses it). `nowSeconds` is the timestamp when the send names none.
    func write(into aps: inout APS, nowSeconds: Int64) {
        aps.event = event
        aps.timestamp = timestamp ?? nowSeconds
        content.write(into: &aps)
        aps.inputPushToken = inputPushToken ? 1 : nil
        aps.inputPushChannel = inputPushChannel
    }
}

/// What a send did, per registration and in counts.
public struct SendReport: Sendable, Hashable, Codable {
    public struct Delivery: Sendable, Hashable, Codable {
        public var token: String
        public var language: String?
        public var status: Int
        public var reason: String?
        public var apnsID: String?
        public var attempts: Int
        /// Why there is no answer (the transport's error, status 0), or what failed after one
        /// (a 410 whose registration could not be pruned).
        public var error: String? = nil
        /// Web Push: the message's URL the push service answered (its `Location`).
        public var location: String? = nil
    }
    public var id: String
    public var createdAt: Int64
    public var deliveries: [Delivery]
    /// Tokens removed because the gateway said they were unregistered after their last registration.
    public var pruned: [String]
    /// The schedule this send was a run of.
    public var scheduleID: String? = nil

    /// Counts by outcome: `accepted`, `"410 Unregistered"`, `"no-answer"`, …
    public var counts: [String: Int] {
        var counts: [String: Int] = [:]
        for d in deliveries {
            // 200 from APNs, 201 (or 202 with a receipt) from a Web Push service.
            let key = (200...202).contains(d.status) ? "accepted" : d.status == 0 ? "no-answer" : "\(d.status) \(d.reason ?? "")"
            counts[key, default: 0] += 1
        }
        return counts
    }
}

/// Where a send stands. A send is recorded as `started` before its first push, so that a
/// restart can tell what it interrupted (`interrupted`: some pushes may have gone out) and never
/// repeats it under the same idempotency key.
public enum SendState: String, Sendable, Hashable, Codable {
    case started, done, interrupted
}

/// A send as listed: without its deliveries.
public struct SendSummary: Sendable, Hashable {
    public var id: String
    public var createdAt: Int64
    public var state: SendState
    public var counts: [String: Int]
    public var scheduleID: String?
}

/// Which registrations a list shows; `nil` fields do not filter.
public struct RegistrationFilter: Sendable, Hashable {
    public var topic: String?
    public var user: String?
    /// Registrations carrying this tag.
    public var tag: String?
    /// A language, or its base language: `fr` matches `fr` and `fr-CA`.
    public var language: String?
    public var zone: String?
    public init(topic: String? = nil, user: String? = nil, tag: String? = nil, language: String? = nil, zone: String? = nil) {
        (self.topic, self.user, self.tag, self.language, self.zone) = (topic, user, tag, language, zone)
    }
}

/// A request the service refuses, with the HTTP status to answer and what to fix.
public struct ProviderError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of failure, in the service's own terms. The HTTP server maps each to a status
    /// (`HeraldProviderServer`), the one place that knows about HTTP.
    public enum Kind: Sendable, Hashable, CaseIterable {
        /// The request is not valid: a field, a parameter, a target, a body.
        case invalid
        /// No credentials, or not the right ones.
        case unauthenticated
        /// Understood and refused (a form from elsewhere).
        case forbidden
        /// What it names does not exist.
        case notFound
        /// It conflicts with the current state: a schedule uses the template, a send is under way
        /// or was interrupted.
        case conflict
        /// The body is not JSON.
        case notJSON
        /// An idempotency key reused for a different request.
        case keyReused
        /// The configured sender cannot do this (feedback or receipts from a non-Herald gateway).
        case notSupported
        /// The gateway's answer could not be used.
        case gatewayFailed
        /// The service's own failure (its storage).
        case internalFailure
    }

    public var kind: Kind
    public var message: String
    public init(_ kind: Kind, _ message: String) { (self.kind, self.message) = (kind, message) }
    public var description: String { message }
}
