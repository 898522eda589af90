import HeraldCore

/// What a notification shows, the same for local requests and remote pushes: a local request's
/// `content` object (`title`, `subtitle`, `body`, `badge`, `sound`, `category`, `thread`,
/// `userInfo`, `interruptionLevel`, `relevance`) or a push's `aps` dictionary, with its alert
/// already localized for the device's languages.
public struct NotificationContent: Sendable, Hashable {
    public var title: String?
    public var subtitle: String?
    public var body: String?
    /// Absolute: `nil` leaves the badge as it is, 0 removes it.
    public var badge: Int?
    /// A file name, or `"default"`; `nil` is silent.
    public var sound: String?
    /// A critical sound (bypasses mute and Do Not Disturb; needs the critical-alert entitlement).
    public var criticalSound = false
    public var category: String?
    public var thread: String?
    public var interruptionLevel: NotificationGrouping.InterruptionLevel = .active
    /// 0…1; the highest of a thread is featured in its summary.
    public var relevance: Double = 0
    /// The app's own keys (a push's keys beside `aps`; a request's `userInfo`).
    public var userInfo: JSONValue = .object([:])

    public init(title: String? = nil, subtitle: String? = nil, body: String? = nil, badge: Int? = nil, sound: String? = nil,
                category: String? = nil, thread: String? = nil) {
        (self.title, self.subtitle, self.body, self.badge, self.sound, self.category, self.thread) =
            (title, subtitle, body, badge, sound, category, thread)
    }

    /// What it asks to present.
    public var kinds: PresentationKinds {
        var kinds: PresentationKinds = []
        if [title, subtitle, body].contains(where: { !($0 ?? "").isEmpty }) { kinds.insert(.alert) }
        if sound != nil { kinds.insert(.sound) }
        if badge != nil { kinds.insert(.badge) }
        return kinds
    }

    /// The badge numbers a notification may set (anything else in `badge` is ignored).
    public static let badgeRange = 0...Int(Int32.max)

    /// A local request's content object.
    public static func local(_ json: JSONValue) -> NotificationContent {
        guard case .object(let c) = json else { return NotificationContent() }
        var content = NotificationContent(
            title: c["title"]?.stringValue, subtitle: c["subtitle"]?.stringValue, body: c["body"]?.stringValue,
            badge: c["badge"]?.integer(in: Self.badgeRange), sound: c["sound"]?.stringValue,
            category: c["category"]?.stringValue, thread: c["thread"]?.stringValue)
        if let level = c["interruptionLevel"]?.stringValue.flatMap(NotificationGrouping.InterruptionLevel.init(known:)) {
            content.interruptionLevel = level
        }
        content.relevance = min(1, max(0, c["relevance"]?.finiteDouble ?? 0))
        content.userInfo = c["userInfo"] ?? .object([:])
        return content
    }

    /// A push's payload, its alert localized from the app's tables for `languages`.
    public static func remote(_ payload: JSONValue, localization: AlertLocalization, languages: [String]) -> NotificationContent {
        let read = NotificationPayload(lenient: payload)
        let aps = read.aps
        var content = NotificationContent()
        content.userInfo = .object(read.custom)
        switch aps.alert {
        case .body(let body)?: content.body = body
        case .fields(let alert)?:
            func text(_ plain: String?, _ key: String?, _ arguments: [String]?) -> String? {
                guard let key else { return plain }
                return localization.text(key: key, arguments: arguments ?? [], preferredLanguages: languages)
            }
            content.title = text(alert.title, alert.titleLocKey, alert.titleLocArgs)
            content.subtitle = text(alert.subtitle, alert.subtitleLocKey, alert.subtitleLocArgs)
            content.body = text(alert.body, alert.locKey, alert.locArgs)
        case nil: break
        }
        // A badge that is not an integer in range is ignored, as a field of the wrong type is.
        content.badge = aps.badge.flatMap { Self.badgeRange.contains($0) ? $0 : nil }
        content.sound = aps.sound?.name
        content.criticalSound = aps.sound?.isCritical ?? false
        content.category = aps.category
        content.thread = aps.threadID
        content.interruptionLevel = aps.effectiveInterruptionLevel
        content.relevance = aps.effectiveRelevance
        return content
    }

    /// A Declarative Web Push message, as a user agent shows it without the app's code: its
    /// title and body, the default sound unless it is silent, its badge (in the badge range, else
    /// left as it is), its tag as the thread, and what a tap needs (`navigate`, `data`, `lang`) in
    /// `userInfo`.
    public static func declarative(_ message: DeclarativeWebPushMessage) -> NotificationContent {
        var content = NotificationContent(title: message.title, body: message.body, sound: message.silent ? nil : "default", thread: message.tag)
        if let badge = message.appBadge, let value = Int(exactly: badge), Self.badgeRange.contains(value) { content.badge = value }
        var info: [String: JSONValue] = ["navigate": .string(message.navigate)]
        info["data"] = message.data
        info["lang"] = message.lang.map(JSONValue.string)
        content.userInfo = .object(info)
        return content
    }

    /// As JSON, in the local request's content shape (what the agent and `--json` print).
    public var json: JSONValue {
        var object: [String: JSONValue] = ["userInfo": userInfo]
        object["title"] = title.map(JSONValue.string)
        object["subtitle"] = subtitle.map(JSONValue.string)
        object["body"] = body.map(JSONValue.string)
        object["badge"] = badge.map { .int(Int64($0)) }
        object["sound"] = sound.map(JSONValue.string)
        object["category"] = category.map(JSONValue.string)
        object["thread"] = thread.map(JSONValue.string)
        if interruptionLevel != .active { object["interruptionLevel"] = .string(interruptionLevel.rawValue) }
        if relevance != 0 { object["relevance"] = .double(relevance) }
        return .object(object)
    }
}
