import Foundation
import HeraldCore

/// The JSON forms the runtime shares with the agent socket and its saved state: requests (the
/// plan format of `docs/device-plan.md`, both ways), categories, settings and delivered
/// notifications (`docs/device-agent.md`).
public enum RuntimeJSON {
    // MARK: requests

    /// A request in the form ``PlanFormat/request(_:)`` reads. A wall-clock fire date is written
    /// with `"timeZone":"UTC"`: its components follow the device's zone, whatever zone they were written in.
    public static func json(_ request: LocalRequest) -> JSONValue {
        var object: [String: JSONValue] = ["id": .string(request.id), "content": request.content]
        if let trigger = request.trigger { object["trigger"] = json(trigger) }
        return .object(object)
    }

    public static func json(_ trigger: NotificationTrigger) -> JSONValue {
        switch trigger {
        case .interval(let seconds, let repeats):
            return .object(["type": .string("interval"), "seconds": number(seconds), "repeats": .bool(repeats)])
        case .calendar(let match, let repeats):
            var components: [String: JSONValue] = [:]
            for (key, value) in [("year", match.year), ("month", match.month), ("day", match.day), ("weekday", match.weekday),
                                 ("hour", match.hour), ("minute", match.minute), ("second", match.second)] {
                if let value { components[key] = .int(Int64(value)) }
            }
            return .object(["type": .string("calendar"), "components": .object(components), "repeats": .bool(repeats)])
        case .date(let fireDate, let unit):
            var object: [String: JSONValue] = ["type": .string("date")]
            switch fireDate {
            case .absolute(let instant): object["date"] = .string(PlanFormat.utcString(instant))
            case .wallClock(let t):
                object["date"] = .string(String(format: "%04d-%02d-%02dT%02d:%02d:%02d", t.year, t.month, t.day, t.hour, t.minute, t.second))
                object["timeZone"] = .string("UTC")
            }
            if let unit { object["repeat"] = .string(unit.rawValue) }
            return .object(object)
        case .location(let region, let onEntry, let onExit, let repeats):
            return .object([
                "type": .string("location"), "latitude": .double(region.latitude), "longitude": .double(region.longitude),
                "radius": number(region.radius), "onEntry": .bool(onEntry), "onExit": .bool(onExit), "repeats": .bool(repeats),
            ])
        }
    }

    static func number(_ value: Double) -> JSONValue { value == value.rounded() && abs(value) < 1e15 ? .int(Int64(value)) : .double(value) }

    // MARK: categories

    private static let actionOptions: [(String, NotificationAction.Options)] = [
        ("authenticationRequired", .authenticationRequired), ("destructive", .destructive), ("foreground", .foreground),
    ]
    private static let categoryOptions: [(String, NotificationCategory.Options)] = [
        ("customDismissAction", .customDismissAction), ("allowInCarPlay", .allowInCarPlay),
        ("hiddenPreviewsShowTitle", .hiddenPreviewsShowTitle), ("hiddenPreviewsShowSubtitle", .hiddenPreviewsShowSubtitle),
        ("allowAnnouncement", .allowAnnouncement),
    ]

    public static func json(_ category: NotificationCategory) -> JSONValue {
        var object: [String: JSONValue] = [
            "id": .string(category.identifier), "actions": .array(category.actions.map(json)),
            "options": .array(categoryOptions.filter { category.options.contains($0.1) }.map { .string($0.0) }),
        ]
        if let minimal = category.minimalActions { object["minimalActions"] = .array(minimal.map(json)) }
        if let placeholder = category.hiddenPreviewsBodyPlaceholder { object["hiddenPreviewsBodyPlaceholder"] = .string(placeholder) }
        if let format = category.summaryFormat { object["summaryFormat"] = .string(format) }
        return .object(object)
    }

    public static func json(_ action: NotificationAction) -> JSONValue {
        var object: [String: JSONValue] = [
            "id": .string(action.identifier), "title": .string(action.title),
            "options": .array(actionOptions.filter { action.options.contains($0.1) }.map { .string($0.0) }),
        ]
        if let input = action.textInput {
            object["textInput"] = .object(["buttonTitle": .string(input.buttonTitle), "placeholder": .string(input.placeholder)])
        }
        return .object(object)
    }

    /// `{"id", "actions":[…], "minimalActions"?, "options":[…], "hiddenPreviewsBodyPlaceholder"?, "summaryFormat"?}`.
    public static func category(_ value: JSONValue) throws(RuntimeError) -> NotificationCategory {
        guard case .object(let c) = value, case .string(let id)? = c["id"] else { throw RuntimeError("a category must be an object with an \"id\" string") }
        func actions(_ key: String) throws(RuntimeError) -> [NotificationAction]? {
            guard let raw = c[key] else { return nil }
            guard case .array(let items) = raw else { throw RuntimeError("category \"\(id)\": \"\(key)\" must be an array") }
            var result: [NotificationAction] = []
            for item in items { result.append(try action(item, in: id)) }
            return result
        }
        let options = try flags(c["options"], categoryOptions, what: "category \"\(id)\" option")
        do {
            return try NotificationCategory(
                identifier: id, actions: try actions("actions") ?? [], minimalActions: try actions("minimalActions"),
                options: options, hiddenPreviewsBodyPlaceholder: c["hiddenPreviewsBodyPlaceholder"]?.stringValue,
                summaryFormat: c["summaryFormat"]?.stringValue)
        } catch let error as CategoryError { throw RuntimeError(error.message) } catch { throw RuntimeError("\(error)") }
    }

    static func action(_ value: JSONValue, in category: String) throws(RuntimeError) -> NotificationAction {
        guard case .object(let a) = value, case .string(let id)? = a["id"] else {
            throw RuntimeError("category \"\(category)\": an action must be an object with an \"id\" string")
        }
        let options = try flags(a["options"], actionOptions, what: "action \"\(id)\" option")
        var input: NotificationAction.TextInput?
        if case .object(let t)? = a["textInput"] {
            input = .init(buttonTitle: t["buttonTitle"]?.stringValue ?? "Send", placeholder: t["placeholder"]?.stringValue ?? "")
        }
        do { return try NotificationAction(identifier: id, title: a["title"]?.stringValue ?? id, options: options, textInput: input) } catch {
            throw RuntimeError("category \"\(category)\": \(error.message)")
        }
    }

    static func flags<T: OptionSet>(_ value: JSONValue?, _ names: [(String, T)], what: String) throws(RuntimeError) -> T where T.Element == T {
        guard let value else { return [] }
        guard case .array(let items) = value else { throw RuntimeError("\(what)s must be an array of names") }
        var result: T = []
        for item in items {
            guard let name = item.stringValue, let flag = names.first(where: { $0.0 == name })?.1 else {
                throw RuntimeError("unknown \(what) \(item) (\(names.map(\.0).joined(separator: ", ")))")
            }
            result.insert(flag)
        }
        return result
    }

    // MARK: authorization and settings

    public static let authorizationNames: [(String, AuthorizationOptions)] = [
        ("badge", .badge), ("sound", .sound), ("alert", .alert), ("carPlay", .carPlay), ("criticalAlert", .criticalAlert),
        ("providesAppNotificationSettings", .providesAppNotificationSettings), ("provisional", .provisional),
        ("announcement", .announcement), ("timeSensitive", .timeSensitive),
    ]

    public static func authorizationOptions(_ value: JSONValue?) throws(RuntimeError) -> AuthorizationOptions {
        try flags(value, authorizationNames, what: "authorization option")
    }

    public static func names(_ options: AuthorizationOptions) -> JSONValue {
        .array(authorizationNames.filter { options.contains($0.1) }.map { .string($0.0) })
    }

    public static func json(_ settings: NotificationSettings) -> JSONValue {
        func name(_ s: NotificationSetting) -> JSONValue {
            switch s {
            case .notSupported: .string("notSupported")
            case .disabled: .string("disabled")
            case .enabled: .string("enabled")
            }
        }
        let status: String = switch settings.status {
        case .notDetermined: "notDetermined"
        case .denied: "denied"
        case .authorized: "authorized"
        case .provisional: "provisional"
        case .ephemeral: "ephemeral"
        }
        return .object([
            "status": .string(status), "alert": name(settings.alert), "sound": name(settings.sound), "badge": name(settings.badge),
            "criticalAlert": name(settings.criticalAlert), "timeSensitive": name(settings.timeSensitive), "carPlay": name(settings.carPlay),
        ])
    }

    public static let foregroundOptionNames: [(String, DeliveryByAppState.ForegroundOptions)] = [
        ("badge", .badge), ("sound", .sound), ("alert", .alert), ("list", .list), ("banner", .banner),
    ]

    // MARK: delivered notifications

    public static func json(_ n: DeliveredNotification, in zone: TimeZone) -> JSONValue {
        var presented: [JSONValue] = []
        if n.presentation.banner { presented.append(.string("banner")) }
        if n.presentation.listed { presented.append(.string("list")) }
        if n.presentation.sound { presented.append(.string("sound")) }
        if n.presentation.badge != nil { presented.append(.string("badge")) }
        var object: [String: JSONValue] = [
            "id": .string(n.id), "content": n.content.json,
            "delivered": .string(PlanFormat.utcString(n.deliveredAt)), "due": .string(PlanFormat.utcString(n.dueAt)),
            "local": .string(PlanFormat.localString(n.deliveredAt, in: zone)),
            "presented": .array(presented), "actions": .array(n.actions.map { .string($0.identifier) }),
            "sound": n.playedSound.map(JSONValue.string) ?? .null,
        ]
        object["attention"] = json(n.attention, screenLit: n.presentation.banner || n.presentation.sound)
        object.merge(identity(id: n.id, origin: n.origin)) { $1 }
        return .object(object)
    }

    /// How every event names a notification: `id` (the request identifier, or a push's apns-id),
    /// `origin` (`local` with its `trigger`, or `remote` with its `apns-id`).
    public static func identity(id: String, origin: DeliveredNotification.Origin) -> [String: JSONValue] {
        switch origin {
        case .local(let trigger): ["id": .string(id), "origin": .string("local"), "trigger": .string(trigger)]
        case .remote(let apnsID): ["id": .string(id), "origin": .string("remote"), "apns-id": .string(apnsID)]
        }
    }
}

extension RuntimeJSON {
    /// `{"level", "focus", "through", "silenced", "summary", "critical-volume", "screen"}`: the
    /// level applied, the Focus on at arrival, what let it through, whether the Focus silenced it,
    /// the summary that delivered it, a critical sound's volume, and whether the screen lit up.
    static func json(_ a: DeliveredNotification.Attention, screenLit: Bool) -> JSONValue {
        var object: [String: JSONValue] = ["level": .string(a.level.rawValue), "silenced": .bool(a.silenced), "screen": .bool(screenLit)]
        object["focus"] = a.focus.map(JSONValue.string)
        object["through"] = a.through.map { .string($0.rawValue) }
        object["summary"] = a.summaryAt.map { .string(PlanFormat.utcString($0)) }
        object["critical-volume"] = a.criticalVolume.map(JSONValue.double)
        return .object(object)
    }
}

// MARK: Live Activities

extension RuntimeJSON {
    /// An activity as the agent socket and `herald device run` show it (dates in UNIX seconds,
    /// as the `aps` keys carry them).
    public static func json(_ activity: LiveActivity) -> JSONValue {
        var object: [String: JSONValue] = [
            "id": .string(activity.id), "attributes-type": .string(activity.attributesType),
            "attributes": .object(activity.attributes), "content-state": .object(activity.contentState),
            "state": .string(activity.state.rawValue), "timestamp": .int(activity.timestamp),
            "stale-date": activity.staleDate.map(JSONValue.int) ?? .null,
            "dismissal-date": activity.dismissalDate.map(JSONValue.int) ?? .null,
            "update-token": activity.updateToken.map { .string($0.description) } ?? .null,
        ]
        switch activity.pushMode {
        case .none: object["push-type"] = .null
        case .token: object["push-type"] = .string("token")
        case .channel(let channel): object["push-type"] = .string("channel"); object["channel"] = .string(channel)
        }
        if let score = activity.relevanceScore { object["relevance-score"] = .double(score) }
        return .object(object)
    }

    /// A Live Activity event: `{"event":"activity-…", …}`.
    public static func json(_ event: LiveActivityEvent) -> [String: JSONValue] {
        func alert(_ text: String?) -> JSONValue { text.map(JSONValue.string) ?? .null }
        switch event {
        case .pushToStartToken(let token):
            return ["event": .string("activity-push-to-start-token"), "token": .string(token.description)]
        case .started(let activity, let apnsID, let text):
            return ["event": .string("activity-started"), "activity": json(activity), "apns-id": apnsID.map(JSONValue.string) ?? .null, "alert": alert(text)]
        case .updateToken(let id, let token):
            return ["event": .string("activity-update-token"), "id": .string(id), "token": .string(token.description)]
        case .updated(let activity, let apnsID, let text, let throttled):
            return ["event": .string("activity-updated"), "activity": json(activity), "apns-id": .string(apnsID), "alert": alert(text), "throttled": .bool(throttled)]
        case .stale(let activity):
            return ["event": .string("activity-stale"), "activity": json(activity)]
        case .ended(let activity, let apnsID, let text):
            return ["event": .string("activity-ended"), "activity": json(activity), "apns-id": apnsID.map(JSONValue.string) ?? .null, "alert": alert(text)]
        case .dismissed(let activity):
            return ["event": .string("activity-dismissed"), "activity": json(activity)]
        case .ignored(let apnsID, let reason):
            return ["event": .string("activity-ignored"), "apns-id": .string(apnsID), "reason": .string(reason)]
        }
    }

    /// A decrypted Web Push message as the agent hands it to the app: `data` (base64url of the
    /// plaintext), `text` when the plaintext is UTF-8, and whether it was declarative (shown).
    static func json(_ message: WebPushMessageDelivery) -> [String: JSONValue] {
        var object: [String: JSONValue] = [
            "scope": .string(message.scope), "id": .string(message.id), "data": .string(Base64URL.encode(message.data)),
            "declarative": .bool(message.declarative),
        ]
        if let text = String(validating: message.data, as: UTF8.self) { object["text"] = .string(text) }
        return object
    }

    public static func json(_ event: WebPushEvent) -> [String: JSONValue] {
        switch event {
        case .subscribed(let subscription): ["event": .string("webpush-subscribed"), "subscription": subscription.json]
        case .unsubscribed(let scope): ["event": .string("webpush-unsubscribed"), "scope": .string(scope)]
        case .received(let scope, let id, let bytes, let declarative, let handed):
            [
                "event": .string("webpush-received"), "scope": .string(scope), "id": .string(id), "bytes": .int(Int64(bytes)),
                "declarative": .bool(declarative), "handedToApp": .bool(handed),
            ]
        case .undecryptable(let id, let reason): ["event": .string("webpush-dropped"), "id": .string(id), "reason": .string(reason)]
        case .navigated(let id, let action, let url):
            ["event": .string("webpush-navigate"), "id": .string(id), "action": action.map(JSONValue.string) ?? .null, "url": .string(url)]
        }
    }

    /// A PushKit push as the app and the event stream see it.
    public static func json(_ push: PushKitPush) -> JSONValue {
        var object: [String: JSONValue] = [
            "kind": .string(push.kind.rawValue), "apns-id": .string(push.apnsID), "payload": push.payload,
            "arrivedAt": .string(PlanFormat.utcString(push.arrivedAt)),
        ]
        if let mustReport = push.mustReport { object["mustReport"] = .bool(mustReport) }
        if let channel = push.channel { object["channel"] = .string(channel) }
        if push.kind == .location {
            object["location"] = push.location.map { .object(["latitude": .double($0.latitude), "longitude": .double($0.longitude)]) } ?? .null
        }
        return .object(object)
    }

    static func json(_ call: IncomingCall) -> JSONValue {
        .object(["call": .string(call.uuid), "handle": .string(call.handle), "caller": call.caller.map(JSONValue.string) ?? .null, "video": .bool(call.video)])
    }

    /// A PushKit event of `herald device run --json`.
    public static func json(_ event: PushKitEvent) -> [String: JSONValue] {
        switch event {
        case .token(let kind, let token): ["event": .string("pushkit-token"), "kind": .string(kind.rawValue), "token": .string(token.description)]
        case .tokenInvalidated(let kind): ["event": .string("pushkit-token-invalidated"), "kind": .string(kind.rawValue)]
        case .held(let kind, let id): ["event": .string("pushkit-held"), "kind": .string(kind.rawValue), "apns-id": .string(id)]
        case .handed(let push): ["event": .string("pushkit-push"), "push": json(push)]
        case .notDelivered(let kind, let id, let reason):
            ["event": .string("pushkit-not-delivered"), "kind": .string(kind.rawValue), "apns-id": .string(id), "reason": .string(reason)]
        case .completed(let kind, let id, let result):
            ["event": .string("pushkit-completed"), "kind": .string(kind.rawValue), "apns-id": .string(id), "result": .string(result)]
        case .callReported(let call): ["event": .string("call-reported"), "call": json(call)]
        case .callEnded(let uuid, let reason): ["event": .string("call-ended"), "call": .string(uuid), "reason": .string(reason)]
        case .terminated(let reason): ["event": .string("app-terminated"), "reason": .string(reason)]
        case .voipStopped(let failures): ["event": .string("voip-stopped"), "failures": .int(Int64(failures))]
        case .channelJoined(let channel): ["event": .string("ptt-channel-joined"), "channel": .string(channel)]
        case .channelLeft(let channel): ["event": .string("ptt-channel-left"), "channel": .string(channel)]
        }
    }
}
