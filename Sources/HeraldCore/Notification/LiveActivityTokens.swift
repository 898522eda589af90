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

/// What a Live Activity push asks for (reference §4: `event`, `timestamp`, `content-state`,
/// `stale-date`, `dismissal-date`, `attributes-type`, `attributes`, `alert`, `input-push-token`,
/// `input-push-channel`), checked the way ActivityKit checks it. The gateway forwards what
/// APNs forwards; the device runtime and `herald push send` use this to refuse what ActivityKit
/// would drop, with the reason.
@dynamicMemberLookup
public struct LiveActivityUpdate: Sendable, Hashable {
    public enum Event: String, Sendable, Hashable, CaseIterable { case start, update, end }

    public var event: Event
    /// `timestamp`, UNIX seconds: updates older than the last one applied are ignored.
    public var timestamp: Int64
    /// The content state, dates, relevance and attributes (read as `update.contentState`).
    public var content: LiveActivityContent
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
        self.content = LiveActivityContent(
            contentState: contentState, staleDate: staleDate, dismissalDate: dismissalDate, relevanceScore: relevanceScore,
            attributesType: attributesType, attributes: attributes)
        self.alert = alert
        self.sound = sound
        self.wantsPushToken = wantsPushToken
        self.channel = channel
    }

    public subscript<Value>(dynamicMember part: WritableKeyPath<LiveActivityContent, Value>) -> Value {
        get { content[keyPath: part] }
        set { content[keyPath: part] = newValue }
    }

    /// Writes its `aps` keys other than `alert` and `sound` (which the caller writes with the rest
    /// of the notification): what `herald push send` and `herald provider` put in a payload.
    public func write(into aps: inout APS) {
        aps.event = event.rawValue
        aps.timestamp = timestamp
        content.write(into: &aps)
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
        self.content = LiveActivityContent(aps: aps)
        self.alert = aps.alert
        self.sound = aps.sound
        self.wantsPushToken = aps.inputPushToken == 1
        self.channel = aps.inputPushChannel
        switch event {
        case .start:
            guard let type = content.attributesType, !type.isEmpty else { throw Invalid("a start needs aps.attributes-type") }
            guard content.attributes != nil else { throw Invalid("a start needs aps.attributes (an object)") }
            guard content.contentState != nil else { throw Invalid("a start needs aps.content-state (an object)") }
            guard alert != nil else { throw Invalid("a start needs aps.alert") }
            _ = type
        case .update:
            guard content.contentState != nil else { throw Invalid("an update needs aps.content-state (an object)") }
        case .end:
            break
        }
        if let channel, BroadcastChannelID(channel) == nil { throw Invalid("aps.input-push-channel \"\(channel)\" is not a channel id") }
        if let contentState = content.contentState {
            let size = (try? JSONEncoder().encode(contentState).count) ?? 0
            guard size <= Self.maximumContentStateBytes else {
                throw Invalid("aps.content-state is \(size) bytes; ActivityKit takes at most \(Self.maximumContentStateBytes)")
            }
        }
    }
}
