/// A Declarative Web Push message (the Push API's "declarative push message", w3c/push-api PR
/// #385; WebKit since Safari 18.4): a push message's plaintext that describes a notification,
/// so that the user agent shows it itself without running the app's code.
///
/// ```json
/// {"web_push": 8030,
///  "notification": {"title": "…", "navigate": "https://…", "body": "…", "lang": "en-US", "dir": "ltr",
///                   "tag": "…", "icon": "https://…", "silent": false, "requireInteraction": false,
///                   "data": {…}, "actions": [{"action": "reply", "title": "Reply", "navigate": "https://…"}]},
///  "mutable": false, "app_badge": 3}
/// ```
///
/// Read as the Push API's parser reads it (``init(plaintext:baseURL:)``): only four things make a
/// message not declarative (not a JSON map; `web_push` not 8030; `notification` not a map; `title`
/// or `navigate` missing or unusable). Every other member of the wrong type is ignored.
public struct DeclarativeWebPushMessage: Sendable, Hashable {
    public static let magic: Int64 = 8030

    public var title: String
    /// The page a tap opens, as the URL Standard serializes it (`navigate` parsed by its parser).
    public var navigate: String
    public var body: String?
    public var lang: String?
    public var dir: Direction
    /// A second notification with the same tag replaces the first (the Notifications Standard).
    public var tag: String?
    /// An image for the notification, as a URL (ignored when it does not parse).
    public var icon: String?
    /// `true`: no sound and no vibration; `nil`: the device's default (the Notifications Standard's null).
    public var silent: Bool?
    /// `true`: stays on screen until the user acts on it.
    public var requireInteraction: Bool
    /// The app's badge after this message (0 clears it); `nil` leaves it as it is. Read only at
    /// the top level and only as an integer from 0 to 2^63 - 1 (else ignored).
    public var appBadge: Int64?
    /// The page's own data, as sent.
    public var data: JSONValue?
    /// The buttons, in order (the device shows up to its maximum).
    public var actions: [Action]
    /// `true`: the app's code may change the notification before it is shown (a `push` event
    /// carrying it); the message itself is the fallback.
    public var mutable: Bool

    public enum Direction: String, Sendable, Hashable { case auto, ltr, rtl }

    /// A button: its identifier, its label, and the page it opens (the message's `navigate` when it has none).
    public struct Action: Sendable, Hashable {
        public var action: String
        public var title: String
        public var navigate: String?
        public var icon: String?

        /// As the message carries it (`navigate` and `icon` when present).
        public var json: JSONValue {
            var object: [String: JSONValue] = ["action": .string(action), "title": .string(title)]
            object["navigate"] = navigate.map(JSONValue.string)
            object["icon"] = icon.map(JSONValue.string)
            return .object(object)
        }

        public init(action: String, title: String, navigate: String? = nil, icon: String? = nil) {
            (self.action, self.title, self.navigate, self.icon) = (action, title, navigate, icon)
        }
    }

    public init(title: String, navigate: String, body: String? = nil, lang: String? = nil, dir: Direction = .auto, tag: String? = nil,
                icon: String? = nil, silent: Bool? = nil, requireInteraction: Bool = false, appBadge: Int64? = nil, data: JSONValue? = nil,
                actions: [Action] = [], mutable: Bool = false) {
        (self.title, self.navigate, self.body, self.lang, self.dir, self.tag, self.icon) = (title, navigate, body, lang, dir, tag, icon)
        (self.silent, self.requireInteraction, self.appBadge, self.data, self.actions, self.mutable) = (silent, requireInteraction, appBadge, data, actions, mutable)
    }

    /// The actions a device shows: the first `maximum`, a repeated identifier keeping the first.
    public func shownActions(maximum: Int) -> [Action] {
        var seen = Set<String>()
        return Array(actions.filter { seen.insert($0.action).inserted }.prefix(maximum))
    }

    /// The page an activation opens: the action's own `navigate`, else the message's (`nil`: the
    /// notification itself was activated).
    public func page(forAction action: String?) -> String {
        guard let action else { return navigate }
        return actions.first { $0.action == action }?.navigate ?? navigate
    }

    /// The message as a sender writes it (sorted keys; defaults left out; `app_badge` and
    /// `mutable` at the top level, where the Push API puts them).
    public func encoded() -> [UInt8] {
        var notification: [String: JSONValue] = ["title": .string(title), "navigate": .string(navigate)]
        notification["body"] = body.map(JSONValue.string)
        notification["lang"] = lang.map(JSONValue.string)
        notification["tag"] = tag.map(JSONValue.string)
        notification["icon"] = icon.map(JSONValue.string)
        if dir != .auto { notification["dir"] = .string(dir.rawValue) }
        notification["silent"] = silent.map(JSONValue.bool)
        if requireInteraction { notification["requireInteraction"] = .bool(true) }
        notification["data"] = data
        if !actions.isEmpty {
            notification["actions"] = .array(actions.map(\.json))
        }
        var root: [String: JSONValue] = ["web_push": .int(Self.magic), "notification": .object(notification)]
        if mutable { root["mutable"] = .bool(true) }
        root["app_badge"] = appBadge.map(JSONValue.int)
        return JSONValue.object(root).compactBytes
    }

    /// Why a message is not declarative, with the parse step that said so.
    public struct NotDeclarative: Error, Hashable, Sendable, CustomStringConvertible {
        /// The step of ``DeclarativeWebPushMessage/init(plaintext:baseURL:)`` that returned failure.
        public var step: Int
        public var description: String
        init(step: Int, _ description: String) { (self.step, self.description) = (step, description) }
    }

    /// The Push API's declarative push message parser, step by step (the numbers are the ones
    /// `NotDeclarative.step` reports and the tests name):
    ///
    /// 1. The bytes parsed as JSON; not JSON: failure.
    /// 2. Not a map: failure.
    /// 3. No `web_push`: failure.
    /// 4. `web_push` not the number 8030: failure.
    /// 5. No `notification`: failure.
    /// 6. `notification` not a map: failure.
    /// 7. No `title`: failure.
    /// 8. `title` not a string: failure.
    /// 9. `mutable`: a boolean at the top level; anything else is false. (WebKit also reads it in
    ///    `notification`, as Firefox does: Herald does too, when the top level has none.)
    /// 10. The notification's options, each member read on its own: `body`, `lang`, `tag`
    ///    strings; `dir` one of auto, ltr, rtl; `silent`, `requireInteraction` booleans; `icon` a
    ///    URL; `data` anything; `actions` a list of maps with string `action` and `title` (and an
    ///    optional `navigate` that parses). A member of the wrong type, or an action that is not
    ///    whole, is ignored: never a failure.
    /// 11. `navigate` parsed by the URL Standard's parser against `baseURL`; missing, not a
    ///    string, or refused by the parser: failure.
    /// 12. `app_badge`: at the top level, an integer from 0 to 9223372036854775807; anything else
    ///    (a string, a fraction, out of range, inside `notification`) is ignored.
    public init(plaintext: [UInt8], baseURL: StandardURL? = nil) throws(NotDeclarative) {
        let parsed: JSONValue
        do { parsed = try JSONReader.parse(plaintext, limits: JSONLimits(maximumBytes: WebPushEncryption.maximumPlaintext, maximumDepth: 32)) } catch {
            throw NotDeclarative(step: 1, "not JSON (\(error))")
        }
        guard case .object(let message) = parsed else { throw NotDeclarative(step: 2, "not a JSON object") }
        guard let magic = message["web_push"] else { throw NotDeclarative(step: 3, "no \"web_push\"") }
        guard magic.integer(Int64.self) == Self.magic else { throw NotDeclarative(step: 4, "\"web_push\" is not 8030") }
        guard let input = message["notification"] else { throw NotDeclarative(step: 5, "no \"notification\"") }
        guard case .object(let n) = input else { throw NotDeclarative(step: 6, "\"notification\" is not an object") }
        guard let titleValue = n["title"] else { throw NotDeclarative(step: 7, "\"notification\" has no \"title\"") }
        guard case .string(let title) = titleValue else { throw NotDeclarative(step: 8, "\"title\" is not a string") }
        self.title = title

        if case .bool(let flag)? = message["mutable"] { mutable = flag } else if case .bool(let flag)? = n["mutable"] { mutable = flag } else { mutable = false }

        func string(_ key: String) -> String? { n[key]?.stringValue }
        func flag(_ key: String) -> Bool? { if case .bool(let value)? = n[key] { value } else { nil } }
        func url(_ value: JSONValue?) -> String? {
            value?.stringValue.flatMap { try? StandardURL(parsing: $0, base: baseURL) }?.href
        }
        body = string("body")
        lang = string("lang")
        tag = string("tag")
        dir = string("dir").flatMap(Direction.init(rawValue:)) ?? .auto
        silent = flag("silent")
        requireInteraction = flag("requireInteraction") ?? false
        icon = url(n["icon"])
        data = n["data"]
        var actions: [Action] = []
        if case .array(let entries)? = n["actions"] {
            for case .object(let entry) in entries {
                guard let action = entry["action"]?.stringValue, let label = entry["title"]?.stringValue else { continue }
                if entry["navigate"] != nil && url(entry["navigate"]) == nil { continue }  // a navigate that does not parse: not a usable action
                actions.append(Action(action: action, title: label, navigate: url(entry["navigate"]), icon: url(entry["icon"])))
            }
        }
        self.actions = actions

        guard let navigateValue = n["navigate"] else { throw NotDeclarative(step: 11, "\"notification\" has no \"navigate\"") }
        guard case .string(let navigateText) = navigateValue else { throw NotDeclarative(step: 11, "\"navigate\" is not a string") }
        do { navigate = try StandardURL(parsing: navigateText, base: baseURL).href } catch {
            throw NotDeclarative(step: 11, "\"navigate\" is not a URL: \(error)")
        }

        appBadge = message["app_badge"]?.integer(Int64.self).flatMap { $0 >= 0 ? $0 : nil }
    }

    /// The common sender mistakes in a message meant to be declarative, in words (empty when
    /// there are none): what `herald push` and the provider's API say before sending. A message
    /// with one of these is still sent: the user agent shows it (or hands it to the app) as the
    /// parser above decides.
    public static func lint(_ plaintext: [UInt8]) -> [String] {
        guard case .object(let message)? = try? JSONReader.parse(plaintext, limits: .payload) else { return [] }
        let notification = message["notification"]?.objectValue
        guard message["web_push"] != nil || notification?["navigate"] != nil else { return [] }
        var problems: [String] = []
        if message["web_push"]?.integer(Int64.self) != Self.magic {
            problems.append("\"web_push\" must be the number 8030 (it is \(message["web_push"].map { String(decoding: $0.compactBytes, as: UTF8.self) } ?? "missing")): the message is not declarative")
        }
        if notification == nil { problems.append("\"notification\" must be an object: the message is not declarative") }
        if let notification {
            if notification["title"]?.stringValue == nil { problems.append("\"notification\" needs a string \"title\": the message is not declarative") }
            if notification["navigate"] == nil {
                problems.append("\"notification\" needs \"navigate\", the page a tap opens: the message is not declarative")
            } else if let text = notification["navigate"]?.stringValue, (try? StandardURL(parsing: text)) == nil {
                problems.append("\"navigate\" is not a URL (\(text)): the message is not declarative")
            }
            if notification["app_badge"] != nil { problems.append("\"app_badge\" belongs at the top level, beside \"notification\": inside it, it is ignored") }
        }
        if let badge = message["app_badge"], badge.integer(Int64.self).map({ $0 >= 0 }) != true {
            problems.append("\"app_badge\" must be a whole number from 0 (it is \(String(decoding: badge.compactBytes, as: UTF8.self))): it is ignored")
        }
        return problems
    }
}
