import Foundation

/// Which Live Activity token a device asks for (device protocol version 2): an app's
/// push-to-start token, or the update token of one of its activities.
public enum LiveActivityToken: Sendable, Hashable, CustomStringConvertible {
    case pushToStart
    case activity(String)

    /// `start`, or the activity id.
    public var wireValue: String {
        switch self {
        case .pushToStart: "start"
        case .activity(let id): id
        }
    }

    /// Reads `start` or an activity id: 1 to 128 letters, digits, `-`, `_` or `.`.
    public init?(wireValue: String) {
        if wireValue == "start" { self = .pushToStart; return }
        guard Self.isValidActivityID(wireValue) else { return nil }
        self = .activity(wireValue)
    }

    public static func isValidActivityID(_ id: String) -> Bool {
        !id.isEmpty && id.utf8.count <= DeviceProtocol.maximumIdentifierBytes && id != "start"
            && id.utf8.allSatisfy { isalnum(Int32($0)) != 0 && $0 < 128 || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: ".") }
    }

    public var description: String { wireValue }
}

/// What a device token stands for, as the store keeps it in a registration's bundle id: an app
/// (`com.example.app`), the app's Live Activity push-to-start token
/// (`com.example.app.push-type.liveactivity`), one activity's update token
/// (`com.example.app.push-type.liveactivity/<activity id>`), or the device's subscription to a
/// broadcast channel (`com.example.app.push-type.liveactivity#<channel id>`), or a Web Push
/// subscription of a user agent (`<app>.push-type.webpush/<channel id>[/<application server key>]`:
/// the key, when the subscription was made with one, is part of the scope, so a subscription and
/// the key every push to it must be signed with are stored in one write). Device topics can never
/// take the latter forms (``DeviceProtocol/isValidTopic(_:)`` refuses them), so they never mix.
public struct TokenScope: Sendable, Hashable {
    public enum Kind: Sendable, Hashable {
        case app
        case pushToStart
        case activity(String)
        case channel(String)
        /// A Web Push subscription: the user agent's channel id and, when the subscription was
        /// made with one, the application server's public key (base64url, unpadded).
        case webPush(channel: String, applicationServerKey: String?)
        /// The app's widget push token (iOS 26): `widgets` pushes, and only they.
        case widgets
    }

    /// The app's bundle id.
    public var bundleID: String
    public var kind: Kind

    public init(bundleID: String, kind: Kind = .app) {
        self.bundleID = bundleID
        self.kind = kind
    }

    public init(bundleID: String, activity: LiveActivityToken) {
        switch activity {
        case .pushToStart: self.init(bundleID: bundleID, kind: .pushToStart)
        case .activity(let id): self.init(bundleID: bundleID, kind: .activity(id))
        }
    }

    /// The stored form.
    public var stored: String {
        let marker = PushType.liveactivity.topicSuffix
        return switch kind {
        case .app: bundleID
        case .pushToStart: bundleID + marker
        case .activity(let id): bundleID + marker + "/" + id
        case .channel(let id): bundleID + marker + "#" + id
        case .webPush(let channel, let key): bundleID + Self.webPushMarker + channel + (key.map { "/" + $0 } ?? "")
        case .widgets: bundleID + PushType.widgets.topicSuffix
        }
    }

    /// What separates the app from the channel in a Web Push subscription's stored form.
    static let webPushMarker = ".push-type.webpush/"

    /// Whether `stored` is a Web Push subscription's scope of the app `bundleID` (what
    /// `TokenScope(stored:)` would read as `.webPush` of that app, without reading it whole).
    public static func isWebPush(stored: String, of bundleID: String) -> Bool {
        let scope = stored.utf8, app = bundleID.utf8, marker = webPushMarker.utf8
        guard scope.count > app.count + marker.count, scope.starts(with: app) else { return false }
        guard scope.dropFirst(app.count).starts(with: marker) else { return false }
        // The first marker must be this one (as `init(stored:)` reads it).
        return !bundleID.contains(webPushMarker)
    }

    /// The stored form of every subscription to a channel (the tokens a broadcast goes to).
    public static func channelSubscriptions(bundleID: String, channel: String) -> String {
        TokenScope(bundleID: bundleID, kind: .channel(channel)).stored
    }

    /// Reads the stored form.
    public init(stored: String) {
        if let range = stored.range(of: Self.webPushMarker) {
            let parts = stored[range.upperBound...].split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
            let bundle = String(stored[..<range.lowerBound])
            self.init(bundleID: bundle, kind: .webPush(channel: String(parts[0]), applicationServerKey: parts.count > 1 ? String(parts[1]) : nil))
            return
        }
        if stored.hasSuffix(PushType.widgets.topicSuffix), !stored.contains(PushType.liveactivity.topicSuffix) {
            self.init(bundleID: String(stored.dropLast(PushType.widgets.topicSuffix.count)), kind: .widgets)
            return
        }
        let marker = PushType.liveactivity.topicSuffix
        guard let range = stored.range(of: marker) else {
            self.init(bundleID: stored)
            return
        }
        let bundle = String(stored[..<range.lowerBound])
        let rest = stored[range.upperBound...]
        if rest.isEmpty {
            self.init(bundleID: bundle, kind: .pushToStart)
        } else if rest.hasPrefix("/") {
            self.init(bundleID: bundle, kind: .activity(String(rest.dropFirst())))
        } else if rest.hasPrefix("#") {
            self.init(bundleID: bundle, kind: .channel(String(rest.dropFirst())))
        } else {
            self.init(bundleID: stored)
        }
    }

    /// Whether a push of `pushType` for `bundleID` may go to a token of this scope: Live Activity
    /// pushes only to Live Activity tokens, Web Push messages only to Web Push subscriptions,
    /// widget pushes only to widget tokens, every other push type only to app tokens.
    public func accepts(bundleID: String, pushType: PushType) -> Bool {
        guard bundleID == self.bundleID else { return false }
        switch kind {
        case .app: return pushType != .liveactivity && pushType != .webpush && pushType != .widgets
        case .webPush: return pushType == .webpush
        case .widgets: return pushType == .widgets
        case .pushToStart, .activity, .channel: return pushType == .liveactivity
        }
    }
}

/// A broadcast channel's id: base64 of 16 random bytes, as APNs's channel ids are.
public struct BroadcastChannelID: Sendable, Hashable, CustomStringConvertible {
    public let value: String

    public init?(_ value: String) {
        guard value.utf8.count == 24, let bytes = Data(base64Encoded: value), bytes.count == 16 else { return nil }
        self.value = value
    }

    /// A fresh random channel id.
    public static func random() -> BroadcastChannelID {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
        return BroadcastChannelID(Data(bytes).base64EncodedString())!
    }

    public var description: String { value }
}

/// What a Live Activity push asks for (reference §4: `event`, `timestamp`, `content-state`,
/// `stale-date`, `dismissal-date`, `attributes-type`, `attributes`, `alert`, `input-push-token`,
/// `input-push-channel`), checked the way ActivityKit checks it. The gateway forwards what
/// APNs forwards; the device runtime and `herald push send` use this to refuse what ActivityKit
/// would drop, with the reason.
public struct LiveActivityUpdate: Sendable, Hashable {
    public enum Event: String, Sendable, Hashable, CaseIterable { case start, update, end }

    public var event: Event
    /// `timestamp`, UNIX seconds: updates older than the last one applied are ignored.
    public var timestamp: Int64
    public var contentState: [String: JSONValue]?
    public var staleDate: Int64?
    public var dismissalDate: Int64?
    public var relevanceScore: Double?
    public var attributesType: String?
    public var attributes: [String: JSONValue]?
    public var alert: APS.Alert?
    public var sound: APS.Sound?
    /// `input-push-token: 1` on a start: issue the new activity an update token.
    public var wantsPushToken: Bool
    /// `input-push-channel` on a start: the broadcast channel that updates the new activity.
    public var channel: String?

    /// The largest encoded content state (ActivityKit's 4 KB).
    public static let maximumContentStateBytes = 4_096

    /// Why a payload is not a Live Activity push ActivityKit would take, in words.
    public struct Invalid: Error, Sendable, Hashable, CustomStringConvertible {
        public var description: String
        init(_ description: String) { self.description = description }
    }

    public init(
        event: Event, timestamp: Int64, contentState: [String: JSONValue]? = nil, staleDate: Int64? = nil,
        dismissalDate: Int64? = nil, relevanceScore: Double? = nil, attributesType: String? = nil,
        attributes: [String: JSONValue]? = nil, alert: APS.Alert? = nil, sound: APS.Sound? = nil,
        wantsPushToken: Bool = false, channel: String? = nil
    ) {
        self.event = event
        self.timestamp = timestamp
        self.contentState = contentState
        self.staleDate = staleDate
        self.dismissalDate = dismissalDate
        self.relevanceScore = relevanceScore
        self.attributesType = attributesType
        self.attributes = attributes
        self.alert = alert
        self.sound = sound
        self.wantsPushToken = wantsPushToken
        self.channel = channel
    }

    /// Writes its `aps` keys other than `alert` and `sound` (which the caller writes with the rest
    /// of the notification): what `herald push send` and `herald provider` put in a payload.
    public func write(into aps: inout APS) {
        aps.event = event.rawValue
        aps.timestamp = timestamp
        aps.contentState = contentState
        aps.staleDate = staleDate
        aps.dismissalDate = dismissalDate
        aps.relevanceScore = relevanceScore
        aps.attributesType = attributesType
        aps.attributes = attributes
        aps.inputPushToken = wantsPushToken ? 1 : nil
        aps.inputPushChannel = channel
    }

    /// The alert's text for people: its body, else its title.
    public var alertText: String? {
        switch alert {
        case .body(let text)?: text
        case .fields(let fields)?: fields.body ?? fields.title ?? fields.locKey ?? fields.titleLocKey
        case nil: nil
        }
    }

    /// Reads and checks a payload's `aps` for a Live Activity push.
    public init(payload: NotificationPayload) throws(Invalid) {
        let aps = payload.aps
        guard let raw = aps.event else { throw Invalid("aps.event is missing (start, update or end)") }
        guard let event = Event(rawValue: raw) else { throw Invalid("aps.event \"\(raw)\" is not start, update or end") }
        guard let timestamp = aps.timestamp else { throw Invalid("aps.timestamp (UNIX seconds) is missing") }
        self.event = event
        self.timestamp = timestamp
        self.contentState = aps.contentState
        self.staleDate = aps.staleDate
        self.dismissalDate = aps.dismissalDate
        self.relevanceScore = aps.relevanceScore
        self.attributesType = aps.attributesType
        self.attributes = aps.attributes
        self.alert = aps.alert
        self.sound = aps.sound
        self.wantsPushToken = aps.inputPushToken == 1
        self.channel = aps.inputPushChannel
        switch event {
        case .start:
            guard let type = attributesType, !type.isEmpty else { throw Invalid("a start needs aps.attributes-type") }
            guard attributes != nil else { throw Invalid("a start needs aps.attributes (an object)") }
            guard contentState != nil else { throw Invalid("a start needs aps.content-state (an object)") }
            guard alert != nil else { throw Invalid("a start needs aps.alert") }
            _ = type
        case .update:
            guard contentState != nil else { throw Invalid("an update needs aps.content-state (an object)") }
        case .end:
            break
        }
        if let channel, BroadcastChannelID(channel) == nil { throw Invalid("aps.input-push-channel \"\(channel)\" is not a channel id") }
        if let contentState {
            let size = (try? JSONEncoder().encode(contentState).count) ?? 0
            guard size <= Self.maximumContentStateBytes else {
                throw Invalid("aps.content-state is \(size) bytes; ActivityKit takes at most \(Self.maximumContentStateBytes)")
            }
        }
    }
}
