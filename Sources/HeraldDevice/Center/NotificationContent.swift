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
    /// The critical sound's volume, 0…1 (`sound.volume`; nil: the device's alert volume).
    public var criticalVolume: Double?
    /// `filter-criteria`: what the app's Focus filter matches.
    public var filterCriteria: String?
    /// A communication notification: a message from a person (see ``CommunicationContext``).
    public var communication: CommunicationContext?
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
        if case .bool(true)? = c["critical"] { content.criticalSound = true }
        content.criticalVolume = c["volume"]?.finiteDouble.map { min(1, max(0, $0)) }
        content.filterCriteria = c["filterCriteria"]?.stringValue
        content.communication = c["communication"].flatMap(CommunicationContext.init(json:))
        return content
    }

    /// A push's payload, its alert localized from the app's tables for `languages`.
    public static func remote(_ payload: JSONValue, localization: AlertLocalization, languages: [String]) -> NotificationContent {
        remote(NotificationPayload(lenient: payload), localization: localization, languages: languages)
    }

    /// The same, for a payload already read (as the device reads it: leniently).
    public static func remote(_ read: NotificationPayload, localization: AlertLocalization, languages: [String]) -> NotificationContent {
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
        if case .critical(_, let volume?, _)? = aps.sound { content.criticalVolume = min(1, max(0, volume)) }
        content.filterCriteria = aps.filterCriteria
        content.category = aps.category
        content.thread = aps.threadID
        content.interruptionLevel = aps.effectiveInterruptionLevel
        content.relevance = aps.effectiveRelevance
        return content
    }

    /// A Declarative Web Push message, as a user agent shows it without the app's code: its
    /// title and body, the default sound unless it is silent, its badge (in the badge range, else
    /// left as it is), its tag as the thread, and what the activation needs in `userInfo`:
    /// `navigate` (the page a tap opens), `actions` (each with the page it opens: its own
    /// `navigate`, else the message's), `data`, `lang`, `dir`, `icon`, `tag`.
    public static func declarative(_ message: DeclarativeWebPushMessage) -> NotificationContent {
        var content = NotificationContent(title: message.title, body: message.body, sound: message.silent == true ? nil : "default", thread: message.tag)
        if let badge = message.appBadge, let value = Int(exactly: badge), Self.badgeRange.contains(value) { content.badge = value }
        var info: [String: JSONValue] = ["navigate": .string(message.navigate)]
        info["data"] = message.data
        info["lang"] = message.lang.map(JSONValue.string)
        info["tag"] = message.tag.map(JSONValue.string)
        info["icon"] = message.icon.map(JSONValue.string)
        if message.dir != .auto { info["dir"] = .string(message.dir.rawValue) }
        if message.requireInteraction { info["requireInteraction"] = .bool(true) }
        let shownActions = message.shownActions(maximum: Self.maximumDeclarativeActions)
        if !shownActions.isEmpty {
            info["actions"] = .array(shownActions.map { action in
                DeclarativeWebPushMessage.Action(action: action.action, title: action.title, navigate: message.page(forAction: action.action)).json
            })
        }
        content.userInfo = .object(info)
        return content
    }

    /// The most buttons a declarative notification shows (the Notifications Standard leaves the
    /// maximum to the device; Herald's is the expanded notification's, as for categories).
    public static let maximumDeclarativeActions = NotificationCategory.maximumDefaultActions

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
        if criticalSound { object["critical"] = .bool(true) }
        object["volume"] = criticalVolume.map(JSONValue.double)
        object["filterCriteria"] = filterCriteria.map(JSONValue.string)
        object["communication"] = communication?.json
        return .object(object)
    }
}

/// What makes a notification a communication notification (iOS 15, `INSendMessageIntent` given
/// to `UNNotificationContent.updating(from:)`): the person it is from and the conversation. The
/// device shows the sender's name and avatar, and a Focus that allows that person lets it through.
public struct CommunicationContext: Sendable, Hashable {
    public var senderName: String
    /// How the person is known to the app and to Focus: a phone number, an e-mail, an id.
    public var senderHandle: String
    public var avatar: String?
    public var conversation: String?

    public init(senderName: String, senderHandle: String, avatar: String? = nil, conversation: String? = nil) {
        (self.senderName, self.senderHandle, self.avatar, self.conversation) = (senderName, senderHandle, avatar, conversation)
    }

    /// Bound on each field (a name, a handle, an avatar's file name or URL, a conversation id).
    public static let maximumFieldBytes = 1_024

    /// `{"sender": {"name": …, "handle": …, "avatar": …}, "conversation": …}`; nil when the sender
    /// has no name and handle of 1…1,024 bytes (a device ignores what it cannot use).
    public init?(json: JSONValue) {
        guard case .object(let o) = json, case .object(let sender)? = o["sender"],
              let name = sender["name"]?.stringValue, let handle = sender["handle"]?.stringValue else { return nil }
        func fits(_ s: String?) -> Bool { s.map { !$0.isEmpty && $0.utf8.count <= Self.maximumFieldBytes } ?? true }
        let avatar = sender["avatar"]?.stringValue, conversation = o["conversation"]?.stringValue
        guard fits(name), fits(handle), fits(avatar), fits(conversation) else { return nil }
        self.init(senderName: name, senderHandle: handle, avatar: avatar, conversation: conversation)
    }

    public var json: JSONValue {
        var sender: [String: JSONValue] = ["name": .string(senderName), "handle": .string(senderHandle)]
        sender["avatar"] = avatar.map(JSONValue.string)
        var object: [String: JSONValue] = ["sender": .object(sender)]
        object["conversation"] = conversation.map(JSONValue.string)
        return .object(object)
    }
}
