import Foundation

/// A notification's JSON payload: Apple's keys in ``aps``, the app's own keys beside it.
///
/// Decoding keeps every custom key and its value (``custom``); encoding writes them back unchanged.
/// The gateway itself never re-encodes a payload: it stores and forwards the provider's bytes.
public struct NotificationPayload: Hashable, Sendable, Codable {
    /// The top-level key of Apple's dictionary: the one place it is spelled.
    public static let apsKey = "aps"

    public var aps: APS
    /// Every top-level key other than `aps`.
    public var custom: [String: JSONValue]

    public init(aps: APS = APS(), custom: [String: JSONValue] = [:]) {
        self.aps = aps
        self.custom = custom
    }

    private struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: AnyKey.self)
        aps = try c.decodeIfPresent(APS.self, forKey: AnyKey(stringValue: Self.apsKey)) ?? APS()
        var custom: [String: JSONValue] = [:]
        for key in c.allKeys where key.stringValue != Self.apsKey {
            custom[key.stringValue] = try c.decode(JSONValue.self, forKey: key)
        }
        self.custom = custom
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: AnyKey.self)
        try c.encode(aps, forKey: AnyKey(stringValue: Self.apsKey))
        for (key, value) in custom { try c.encode(value, forKey: AnyKey(stringValue: key)) }
    }

    /// Decodes a payload; throws when the bytes are not a strict JSON object within
    /// ``JSONLimits/payload`` or a field has the wrong type or range.
    public static func decode(_ bytes: some Collection<UInt8>) throws -> NotificationPayload {
        try JSONReader.decode(NotificationPayload.self, from: bytes, limits: .payload)
    }

    /// Reads a payload already parsed (the device receives its pushes as ``JSONValue``), with the
    /// same rules as ``decode(_:)``.
    public init(json: JSONValue) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        self = try Self.decode(Array(try encoder.encode(json)))
    }

    /// Encodes with sorted keys (stable output for tests and files).
    public func encoded() throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array(try encoder.encode(self))
    }

    /// A background (silent) notification: `content-available` 1 with no alert, badge or sound.
    public var isSilent: Bool { aps.isSilent }
}

/// The `aps` dictionary, every key of reference §4.
public struct APS: Hashable, Sendable, Codable {
    public var alert: Alert?
    public var badge: Int?
    public var sound: Sound?
    public var threadID: String?
    public var category: String?
    public var contentAvailable: Int?
    public var mutableContent: Int?
    public var targetContentID: String?
    public var interruptionLevel: InterruptionLevel?
    public var relevanceScore: Double?
    public var filterCriteria: String?
    // Live Activities.
    public var staleDate: Int64?
    public var timestamp: Int64?
    public var dismissalDate: Int64?
    public var event: String?
    public var contentState: [String: JSONValue]?
    public var attributesType: String?
    public var attributes: [String: JSONValue]?
    public var inputPushToken: Int?
    public var inputPushChannel: String?
    /// A `widgets` push: `true` when the app's widget content changed (WidgetKit reloads them).
    public var contentChanged: Bool?

    public init(
        alert: Alert? = nil, badge: Int? = nil, sound: Sound? = nil, threadID: String? = nil,
        category: String? = nil, contentAvailable: Int? = nil, mutableContent: Int? = nil,
        targetContentID: String? = nil, interruptionLevel: InterruptionLevel? = nil,
        relevanceScore: Double? = nil, filterCriteria: String? = nil
    ) {
        self.alert = alert
        self.badge = badge
        self.sound = sound
        self.threadID = threadID
        self.category = category
        self.contentAvailable = contentAvailable
        self.mutableContent = mutableContent
        self.targetContentID = targetContentID
        self.interruptionLevel = interruptionLevel
        self.relevanceScore = relevanceScore
        self.filterCriteria = filterCriteria
    }

    /// A background (silent) notification: `content-available` 1 with no alert, badge or sound
    /// (the one definition: the provider service, the CLI and the device all ask this).
    public var isSilent: Bool {
        contentAvailable == 1 && alert == nil && badge == nil && sound == nil
    }

    enum CodingKeys: String, CodingKey {
        case alert, badge, sound, category, event, timestamp, attributes
        case threadID = "thread-id"
        case contentAvailable = "content-available"
        case mutableContent = "mutable-content"
        case targetContentID = "target-content-id"
        case interruptionLevel = "interruption-level"
        case relevanceScore = "relevance-score"
        case filterCriteria = "filter-criteria"
        case staleDate = "stale-date"
        case dismissalDate = "dismissal-date"
        case contentState = "content-state"
        case attributesType = "attributes-type"
        case inputPushToken = "input-push-token"
        case inputPushChannel = "input-push-channel"
        case contentChanged = "content-changed"
    }

    /// `alert`: a string (the body) or a dictionary.
    public enum Alert: Hashable, Sendable, Codable {
        case body(String)
        case fields(AlertFields)

        public init(from decoder: Decoder) throws {
            let c = try decoder.singleValueContainer()
            if let s = try? c.decode(String.self) { self = .body(s) } else { self = .fields(try c.decode(AlertFields.self)) }
        }

        public func encode(to encoder: Encoder) throws {
            switch self {
            case .body(let s): var c = encoder.singleValueContainer(); try c.encode(s)
            case .fields(let f): try f.encode(to: encoder)
            }
        }
    }

    /// The dictionary form of `alert`.
    public struct AlertFields: Hashable, Sendable, Codable {
        public var title: String?
        public var subtitle: String?
        public var body: String?
        public var launchImage: String?
        public var titleLocKey: String?
        public var titleLocArgs: [String]?
        public var subtitleLocKey: String?
        public var subtitleLocArgs: [String]?
        public var locKey: String?
        public var locArgs: [String]?

        public init(title: String? = nil, subtitle: String? = nil, body: String? = nil) {
            self.title = title
            self.subtitle = subtitle
            self.body = body
        }

        enum CodingKeys: String, CodingKey {
            case title, subtitle, body
            case launchImage = "launch-image"
            case titleLocKey = "title-loc-key"
            case titleLocArgs = "title-loc-args"
            case subtitleLocKey = "subtitle-loc-key"
            case subtitleLocArgs = "subtitle-loc-args"
            case locKey = "loc-key"
            case locArgs = "loc-args"
        }
    }

    /// `sound`: a file name (or `"default"`), or the critical-alert dictionary.
    public enum Sound: Hashable, Sendable, Codable {
        case named(String)
        case critical(name: String, volume: Double?, critical: Int?)

        public init(from decoder: Decoder) throws {
            let c = try decoder.singleValueContainer()
            if let s = try? c.decode(String.self) { self = .named(s); return }
            let d = try c.decode(SoundFields.self)
            self = .critical(name: d.name ?? "default", volume: d.volume, critical: d.critical)
        }

        public func encode(to encoder: Encoder) throws {
            switch self {
            case .named(let s): var c = encoder.singleValueContainer(); try c.encode(s)
            case .critical(let name, let volume, let critical):
                try SoundFields(critical: critical, name: name, volume: volume).encode(to: encoder)
            }
        }

        private struct SoundFields: Codable { var critical: Int?; var name: String?; var volume: Double? }
    }

    /// `interruption-level`. Any string decodes (APNs forwards what it does not know); the device
    /// reads an unknown level as ``active`` (``init(known:)``).
    public struct InterruptionLevel: RawRepresentable, Hashable, Sendable, Codable, CaseIterable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        /// One of Apple's four levels, or `nil`.
        public init?(known rawValue: String) {
            guard let level = Self.allCases.first(where: { $0.rawValue == rawValue }) else { return nil }
            self = level
        }
        public static var allCases: [InterruptionLevel] { [.passive, .active, .timeSensitive, .critical] }
        /// Time-sensitive and critical break through Focus; critical also through mute.
        public var breaksThroughFocus: Bool { self == .timeSensitive || self == .critical }
        /// Passive: listed only, silently (no banner, no sound, no wake).
        public var isSilent: Bool { self == .passive }
        public static let passive = InterruptionLevel(rawValue: "passive")
        public static let active = InterruptionLevel(rawValue: "active")
        public static let timeSensitive = InterruptionLevel(rawValue: "time-sensitive")
        public static let critical = InterruptionLevel(rawValue: "critical")
    }
}

extension APS.Alert {
    /// The alert with text: the string form when there is only a body, the dictionary form when
    /// there is a title or subtitle; `nil` when there is no text at all.
    public static func text(title: String? = nil, subtitle: String? = nil, body: String?) -> APS.Alert? {
        if title == nil && subtitle == nil { return body.map(APS.Alert.body) }
        return .fields(APS.AlertFields(title: title, subtitle: subtitle, body: body))
    }

    /// An alert the device localizes (`loc-key`/`loc-args`, `title-loc-key`/`title-loc-args`;
    /// either may be absent, as APNs allows).
    public static func localized(key: String?, arguments: [String], titleKey: String? = nil, titleArguments: [String] = []) -> APS.Alert {
        var fields = APS.AlertFields()
        if let key {
            fields.locKey = key
            fields.locArgs = arguments
        }
        if let titleKey {
            fields.titleLocKey = titleKey
            fields.titleLocArgs = titleArguments
        }
        return .fields(fields)
    }
}
