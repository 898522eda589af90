/// What kind of notification this is (alert, background, Live Activity…): it decides how the
/// device presents it and whether the background budget applies. The APNs port reads it from
/// the `apns-push-type` header, whose values these are.
///
/// A closed set as a struct, so it can grow without breaking callers; a value a peer sends that
/// Herald does not know decodes with ``isKnown`` false.
public struct PushType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }

    public static let alert = PushType(rawValue: "alert")
    public static let background = PushType(rawValue: "background")
    public static let location = PushType(rawValue: "location")
    public static let voip = PushType(rawValue: "voip")
    public static let complication = PushType(rawValue: "complication")
    public static let fileprovider = PushType(rawValue: "fileprovider")
    public static let mdm = PushType(rawValue: "mdm")
    public static let liveactivity = PushType(rawValue: "liveactivity")
    public static let pushtotalk = PushType(rawValue: "pushtotalk")
    public static let widgets = PushType(rawValue: "widgets")
    public static let controls = PushType(rawValue: "controls")
    /// A Web Push message (RFC 8030) accepted on the Web Push port: its payload is a
    /// ``WebPushStoredMessage`` (the ciphertext and its encoding headers). Herald's own kind, not
    /// in ``allKnown``: never read from `apns-push-type`, never accepted on the APNs port.
    public static let webpush = PushType(rawValue: "webpush")

    /// Every push type of the reference, in its order.
    public static let allKnown: [PushType] = [
        .alert, .background, .location, .voip, .complication, .fileprovider, .mdm,
        .liveactivity, .pushtotalk, .widgets, .controls,
    ]

    /// Parses a header value; `nil` when the value is not a push type Herald knows.
    public init?(header: String) {
        guard let known = Self.allKnown.first(where: { $0.rawValue == header }) else { return nil }
        self = known
    }

    public var isKnown: Bool { Self.allKnown.contains(self) }

    /// The suffix that `apns-topic` carries after the bundle id for this push type (empty for
    /// `alert` and `background`; `mdm` topics are the UID of the MDM certificate, with no suffix).
    public var topicSuffix: String {
        switch self {
        case .location: return ".location-query"
        case .voip: return ".voip"
        case .complication: return ".complication"
        case .fileprovider: return ".pushkit.fileprovider"
        case .liveactivity: return ".push-type.liveactivity"
        case .pushtotalk: return ".voip-ptt"
        case .widgets: return ".push-type.widgets"
        case .controls: return ".push-type.controls"
        default: return ""
        }
    }

    /// The largest payload, in bytes, that a notification of this type may carry.
    public var maximumPayloadSize: Int { self == .voip ? 5120 : 4096 }

    /// The push type a topic implies when the request has no `apns-push-type` header: the type
    /// whose suffix the topic ends with, else `alert`.
    public static func implied(byTopic topic: String) -> PushType {
        // Longest suffix first, so ".voip-ptt" is not read as ".voip".
        let candidates = allKnown.filter { !$0.topicSuffix.isEmpty }
            .sorted { $0.topicSuffix.count > $1.topicSuffix.count }
        for type in candidates where topic.hasSuffix(type.topicSuffix) && topic.count > type.topicSuffix.count {
            return type
        }
        return .alert
    }

    /// The app's bundle id named by `topic` for this push type, or `nil` when the topic lacks the
    /// suffix this push type requires.
    public func bundleID(fromTopic topic: String) -> String? {
        let suffix = topicSuffix
        if suffix.isEmpty { return topic }
        guard topic.hasSuffix(suffix), topic.count > suffix.count else { return nil }
        return String(topic.dropLast(suffix.count))
    }

    public var description: String { rawValue }
}
