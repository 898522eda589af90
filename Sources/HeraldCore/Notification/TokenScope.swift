/// What a device token stands for (a registration's scope), and its stored form: an app
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
        /// A PushKit-style token (VoIP, Push to Talk, location, complication, File Provider):
        /// pushes of that type, and only they.
        case pushKit(PushKitKind)
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
        case .channel(let id): bundleID + Self.channelSubscriptionMarker + id
        case .webPush(let channel, let key): bundleID + Self.webPushMarker + channel + (key.map { "/" + $0 } ?? "")
        case .widgets: bundleID + PushType.widgets.topicSuffix
        case .pushKit(let kind): bundleID + Self.pushKitMarker + kind.rawValue
        }
    }

    /// What separates the app from the kind in a PushKit token's stored form (a `/` is never in
    /// a bundle id, so no app's scope reads as one).
    static let pushKitMarker = ".pushkit/"

    /// What separates the app from the channel in a Web Push subscription's stored form.
    static let webPushMarker = ".push-type.webpush/"

    /// What every channel subscription's stored form holds between the app and the channel id
    /// (the stores find a device's subscriptions by it).
    public static let channelSubscriptionMarker = PushType.liveactivity.topicSuffix + "#"

    /// The stored form of every subscription to a channel (the tokens a broadcast goes to).
    public static func channelSubscriptions(bundleID: String, channel: String) -> String {
        TokenScope(bundleID: bundleID, kind: .channel(channel)).stored
    }

    /// Reads the stored form. Read for every registration a store loads (each push to a token
    /// not in the store's cache, every delivery loaded), so it scans the UTF-8 bytes for the
    /// (ASCII) markers itself: Foundation's search is locale-aware, and the standard library's
    /// generic `firstRange(of:)` looked up generic metadata on every call (6 % of the gateway's
    /// CPU in a profile of pushes to 10,000 devices). Bounds found between ASCII bytes are valid
    /// indices of the string.
    public init(stored: String) {
        if let range = Self.firstRange(of: Self.webPushMarker, in: stored) {
            let parts = stored[range.upperBound...].split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
            let bundle = String(stored[..<range.lowerBound])
            self.init(bundleID: bundle, kind: .webPush(channel: String(parts[0]), applicationServerKey: parts.count > 1 ? String(parts[1]) : nil))
            return
        }
        if let range = Self.firstRange(of: Self.pushKitMarker, in: stored),
           let kind = PushKitKind(rawValue: String(stored[range.upperBound...])) {
            self.init(bundleID: String(stored[..<range.lowerBound]), kind: .pushKit(kind))
            return
        }
        let marker = PushType.liveactivity.topicSuffix
        let live = Self.firstRange(of: marker, in: stored)
        let widgets = PushType.widgets.topicSuffix
        if live == nil, stored.hasSuffix(widgets) {
            self.init(bundleID: String(stored.dropLast(widgets.count)), kind: .widgets)
            return
        }
        guard let range = live else {
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

    /// Where the ASCII `marker` first occurs in `text`, by a plain scan of the UTF-8 bytes.
    static func firstRange(of marker: String, in text: String) -> Range<String.Index>? {
        var marker = marker, contiguous = text
        let offset: Int? = marker.withUTF8 { needle in
            contiguous.withUTF8 { haystack in
                guard let first = needle.first, haystack.count >= needle.count else { return nil }
                var i = 0
                while i <= haystack.count - needle.count {
                    if haystack[i] == first {
                        var j = 1
                        while j < needle.count, haystack[i + j] == needle[j] { j += 1 }
                        if j == needle.count { return i }
                    }
                    i += 1
                }
                return nil
            }
        }
        guard let offset else { return nil }
        let lower = text.utf8.index(text.utf8.startIndex, offsetBy: offset)
        return lower..<text.utf8.index(lower, offsetBy: marker.utf8.count)
    }

    /// Whether a push of `pushType` for `bundleID` may go to a token of this scope: Live Activity
    /// pushes only to Live Activity tokens, Web Push messages only to Web Push subscriptions,
    /// widget pushes only to widget tokens, each ``PushKitKind``'s pushes only to that kind's
    /// tokens, every other push type only to app tokens.
    public func accepts(bundleID: String, pushType: PushType) -> Bool {
        guard bundleID == self.bundleID else { return false }
        switch kind {
        case .app: return pushType != .liveactivity && pushType != .webpush && pushType != .widgets && PushKitKind(pushType: pushType) == nil
        case .webPush: return pushType == .webpush
        case .widgets: return pushType == .widgets
        case .pushKit(let kind): return pushType == kind.pushType
        case .pushToStart, .activity, .channel: return pushType == .liveactivity
        }
    }
}
