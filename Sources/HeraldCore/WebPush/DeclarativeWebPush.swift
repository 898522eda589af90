import Foundation

/// A Declarative Web Push message (WebKit's, shipped in Safari 18.4, and the Push API draft): a
/// push message's plaintext that describes a notification, so that the user agent shows it
/// itself without running the page's code.
///
/// ```json
/// {"web_push": 8030,
///  "notification": {"title": "…", "navigate": "https://…", "body": "…", "lang": "en-US", "dir": "ltr",
///                   "tag": "…", "silent": false, "app_badge": 3, "data": {…}},
///  "mutable": false}
/// ```
///
/// Read strictly: a member of the wrong type makes the message not declarative (the user agent
/// then hands the plaintext to the app as an ordinary push message).
public struct DeclarativeWebPushMessage: Sendable, Hashable {
    public static let magic: Int64 = 8030

    public var title: String
    /// The page a tap opens: an absolute http(s) URL.
    public var navigate: String
    public var body: String?
    public var lang: String?
    public var dir: Direction
    public var tag: String?
    /// `true`: no sound and no vibration.
    public var silent: Bool
    /// The app's badge after this message (0 clears it); `nil` leaves it as it is.
    public var appBadge: Int64?
    /// The page's own data, as sent.
    public var data: JSONValue?
    /// `true`: the app's code may change the notification before it is shown (WebKit's
    /// `pushnotification` event); the message itself is the fallback.
    public var mutable: Bool

    public enum Direction: String, Sendable, Hashable { case auto, ltr, rtl }

    public init(title: String, navigate: String, body: String? = nil, lang: String? = nil, dir: Direction = .auto, tag: String? = nil,
                silent: Bool = false, appBadge: Int64? = nil, data: JSONValue? = nil, mutable: Bool = false) {
        (self.title, self.navigate, self.body, self.lang, self.dir, self.tag) = (title, navigate, body, lang, dir, tag)
        (self.silent, self.appBadge, self.data, self.mutable) = (silent, appBadge, data, mutable)
    }

    /// The message as a sender writes it (sorted keys; defaults left out).
    public func encoded() -> [UInt8] {
        var notification: [String: JSONValue] = ["title": .string(title), "navigate": .string(navigate)]
        notification["body"] = body.map(JSONValue.string)
        notification["lang"] = lang.map(JSONValue.string)
        notification["tag"] = tag.map(JSONValue.string)
        if dir != .auto { notification["dir"] = .string(dir.rawValue) }
        if silent { notification["silent"] = .bool(true) }
        notification["app_badge"] = appBadge.map(JSONValue.int)
        notification["data"] = data
        var root: [String: JSONValue] = ["web_push": .int(Self.magic), "notification": .object(notification)]
        if mutable { root["mutable"] = .bool(true) }
        return JSONValue.object(root).compactBytes
    }

    public struct NotDeclarative: Error, Hashable, Sendable, CustomStringConvertible {
        public var description: String
        init(_ description: String) { self.description = description }
    }

    /// Reads a decrypted message. Throws when it is not a declarative message, saying why (a
    /// message that is not JSON, or has no `web_push: 8030`, is simply an ordinary one).
    public init(plaintext: [UInt8]) throws(NotDeclarative) {
        let root: [String: JSONValue]
        do { root = try JSONReader.parseObject(plaintext, limits: JSONLimits(maximumBytes: WebPushEncryption.maximumPlaintext, maximumDepth: 16)) } catch {
            throw NotDeclarative("not a JSON object")
        }
        guard root["web_push"]?.integer(Int64.self) == Self.magic else { throw NotDeclarative("no \"web_push\": 8030") }
        guard case .object(let n)? = root["notification"] else { throw NotDeclarative("\"notification\" must be an object") }
        func string(_ key: String, in object: [String: JSONValue]) throws(NotDeclarative) -> String? {
            guard let value = object[key], value != .null else { return nil }
            guard let text = value.stringValue else { throw NotDeclarative("\"\(key)\" must be a string") }
            return text
        }
        guard let title = try string("title", in: n) else { throw NotDeclarative("\"notification\" needs a \"title\"") }
        guard let navigate = try string("navigate", in: n), let url = URLComponents(string: navigate),
              let scheme = url.scheme?.lowercased(), scheme == "https" || scheme == "http", url.host?.isEmpty == false else {
            throw NotDeclarative("\"navigate\" must be an absolute http(s) URL")
        }
        self.title = title
        self.navigate = navigate
        body = try string("body", in: n)
        lang = try string("lang", in: n)
        tag = try string("tag", in: n)
        if let text = try string("dir", in: n) {
            guard let dir = Direction(rawValue: text) else { throw NotDeclarative("\"dir\" must be auto, ltr or rtl") }
            self.dir = dir
        } else {
            dir = .auto
        }
        silent = try Self.flag("silent", n["silent"])
        mutable = try Self.flag("mutable", root["mutable"])
        // WebKit's examples put app_badge in the notification; the Push API draft beside it.
        if let inNotification = try Self.badge(n["app_badge"]) { appBadge = inNotification } else { appBadge = try Self.badge(root["app_badge"]) }
        data = n["data"].flatMap { $0 == .null ? nil : $0 }
    }

    private static func flag(_ key: String, _ value: JSONValue?) throws(NotDeclarative) -> Bool {
        switch value {
        case nil, .null?: return false
        case .bool(let flag)?: return flag
        default: throw NotDeclarative("\"\(key)\" must be true or false")
        }
    }

    /// An integer from 0, or the same as a string of digits (WebKit's own example sends `"1"`).
    private static func badge(_ value: JSONValue?) throws(NotDeclarative) -> Int64? {
        switch value {
        case nil, .null?: return nil
        case .string(let text)?:
            guard !text.isEmpty, text.utf8.count <= 19, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let n = Int64(text) else {
                throw NotDeclarative("\"app_badge\" must be a whole number from 0")
            }
            return n
        case let other?:
            guard let n = other.integer(Int64.self), n >= 0 else { throw NotDeclarative("\"app_badge\" must be a whole number from 0") }
            return n
        }
    }
}
