import Foundation
import HeraldCore
import NIOCore

/// One connection to the agent socket. Messages are handled in order; answers carry the
/// request's `id`. After `hello` the connection is the app: the runtime's callbacks for it are
/// written here, and those that need an answer carry a `callback` number that the app answers
/// with `{"op":"complete","callback":N,…}`.
final class AgentSession: Sendable {
    let runtime: DeviceRuntime
    let channel: Channel
    private let bound = Locked<(app: String?, delegate: AgentAppDelegate?)>((nil, nil))

    init(runtime: DeviceRuntime, channel: Channel) {
        self.runtime = runtime
        self.channel = channel
    }

    func run(_ lines: AsyncStream<String>, backpressure: LineBackpressure) async {
        for await line in lines {
            backpressure.taken()
            if line.trimmingCharacters(in: .whitespaces).isEmpty { continue }
            var id: JSONValue = .null
            do {
                let message: [String: JSONValue]
                do { message = try JSONReader.parseObject(line.utf8) } catch {
                    throw RuntimeError("not a JSON object (\(error)): each line must be one JSON object")
                }
                id = message["id"] ?? .null
                var reply = try await handle(message)
                reply["ok"] = .bool(true)
                reply["id"] = id
                send(.object(reply))
            } catch {
                send(.object(["id": id, "ok": .bool(false), "error": .string("\(error)")]))
            }
        }
        // The app closed its side (fully, or only for writing): once every answer written so far
        // has gone out (writes complete in order, so an empty one completes last), close ours.
        try? await channel.writeAndFlush(channel.allocator.buffer(capacity: 0)).get()
        try? await channel.close()
        // The app's process went away: its callbacks have nobody to answer them.
        // A newer connection of the same app may have said hello already: only this one's own
        // binding ends (DeviceRuntime.appProcessEnded).
        let (app, delegate) = bound.withLock { $0 }
        if let app, let delegate {
            delegate.disconnected()
            _ = try? await runtime.appProcessEnded(app, delegate: delegate)
        }
    }

    func send(_ value: JSONValue) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard var data = try? encoder.encode(value) else { return }
        data.append(UInt8(ascii: "\n"))
        channel.writeAndFlush(channel.allocator.buffer(bytes: data), promise: nil)
    }

    private func app() throws -> (String, AgentAppDelegate) {
        let (app, delegate) = bound.withLock { $0 }
        guard let app, let delegate else { throw RuntimeError("say hello first: {\"op\":\"hello\",\"app\":\"<bundle id>\"}") }
        return (app, delegate)
    }

    private func center() async throws -> AppNotificationCenter {
        let (app, _) = try app()
        guard let center = await runtime.center(for: app) else { throw RuntimeError("\(app) is no longer installed") }
        return center
    }

    // MARK: messages

    private func handle(_ m: [String: JSONValue]) async throws -> [String: JSONValue] {
        guard case .string(let op)? = m["op"] else { throw RuntimeError("a message needs \"op\" (see docs/device-agent.md)") }
        switch op {
        case "hello":
            return try await hello(m)
        case "state":
            let (app, _) = try app()
            try await setState(app, m["state"]?.stringValue ?? "")
            return [:]
        case "requestAuthorization":
            let result = try await center().requestAuthorization(try RuntimeJSON.authorizationOptions(m["options"]))
            return ["granted": .bool(result.granted), "prompted": .bool(result.prompted), "settings": RuntimeJSON.json(result.settings)]
        case "settings":
            return ["settings": RuntimeJSON.json(try await center().settings())]
        case "setCategories":
            guard case .array(let items)? = m["categories"] else { throw RuntimeError("setCategories needs \"categories\": an array") }
            var categories: [NotificationCategory] = []
            for item in items { categories.append(try RuntimeJSON.category(item)) }
            let ignored = try await center().setCategories(categories)
            return ["ignored": .array(ignored.map { .string($0.identifier) })]
        case "categories":
            return ["categories": .array(try await center().categories().map(RuntimeJSON.json))]
        case "add", "presentNow":
            guard let raw = m["request"] else { throw RuntimeError("\(op) needs \"request\": {\"id\", \"content\", \"trigger\"}") }
            let request = try PlanFormat.request(raw)
            if op == "presentNow" {
                try await center().presentNow(request)
                return [:]
            }
            return ["dropped": .array(try await center().add(request).map(JSONValue.string))]
        case "pending":
            let pending = try await center().pendingRequests()
            return ["requests": .array(pending.map { entry in
                guard case .object(var object) = RuntimeJSON.json(entry.request) else { return .null }
                object["nextFire"] = entry.nextFire.map { .string(PlanFormat.utcString($0)) } ?? .null
                return .object(object)
            })]
        case "removePending": try await center().removePendingRequests(try ids(m)); return [:]
        case "removeAllPending": try await center().removeAllPendingRequests(); return [:]
        case "cancel": try await center().cancelLocalNotifications(try ids(m)); return [:]
        case "cancelAll": try await center().cancelAllLocalNotifications(); return [:]
        case "delivered":
            let zone = await runtime.timeZone
            return ["notifications": .array(try await center().deliveredNotifications().map { RuntimeJSON.json($0, in: zone) })]
        case "removeDelivered": try await center().removeDeliveredNotifications(try ids(m)); return [:]
        case "removeAllDelivered": try await center().removeAllDeliveredNotifications(); return [:]
        case "badge": return ["badge": .int(Int64(try await center().badge()))]
        case "setBadge":
            guard let badge = m["badge"]?.integer(in: NotificationContent.badgeRange) else {
                throw RuntimeError("setBadge needs \"badge\": an integer from 0 to \(NotificationContent.badgeRange.upperBound)")
            }
            try await center().setBadge(badge)
            return [:]
        case "registerForRemote": try await center().registerForRemoteNotifications(); return [:]
        case "complete":
            let (_, delegate) = try app()
            guard let number = m["callback"]?.integer(Int.self) else { throw RuntimeError("complete needs \"callback\": the number of the callback answered") }
            try delegate.complete(number, m)
            return [:]
        case "webPushSubscribe":
            return try await webPushSubscribe(m)
        case "webPushSubscriptions":
            let (app, _) = try app()
            return ["subscriptions": .array(try await runtime.webPushSubscriptions(app: app).map(\.json))]
        case "webPushUnsubscribe":
            let (app, _) = try app()
            return ["unsubscribed": .bool(try await runtime.unsubscribeWebPush(app: app, scope: try scope(m)))]
        case "configureWidgetPushes":
            let (app, _) = try app()
            guard case .bool(let enabled)? = m["enabled"] ?? .bool(true) else { throw RuntimeError("configureWidgetPushes takes \"enabled\": true or false") }
            try await runtime.configureWidgetPushes(app: app, enabled: enabled)
            return [:]
        case "pushToStartToken":
            let (app, _) = try app()
            try await runtime.requestPushToStartToken(app: app)
            return [:]
        case "activities":
            let (app, _) = try app()
            return ["activities": .array(try await runtime.liveActivities(app: app).map(RuntimeJSON.json))]
        case "startActivity":
            return try await startActivity(m)
        case "endActivity":
            return try await endActivity(m)
        case "user": return try await user(m)
        case "device": return try await device(m)
        case let op where Self.pushKitOps.contains(op):
            let (app, _) = try app()
            return try await pushKit(op, m, app: app)
        default:
            throw RuntimeError("unknown op \"\(op)\" (see docs/device-agent.md)")
        }
    }

    /// `hello`: binds this connection to an installed app, its delegate and its state.
    private func hello(_ m: [String: JSONValue]) async throws -> [String: JSONValue] {
        guard case .string(let app)? = m["app"] else { throw RuntimeError("hello needs \"app\": the app's bundle id") }
        guard let center = await runtime.center(for: app) else {
            throw RuntimeError("\(app) is not installed on this device: start herald device run with --app \(app)")
        }
        if bound.withLock({ $0.app }) != nil { throw RuntimeError("this connection is already an app") }
        let delegate = AgentAppDelegate(session: self, zone: await runtime.timeZone)
        bound.withLock { $0 = (app, delegate) }
        try await center.setDelegate(delegate)
        if case .bool(true)? = m["serviceExtension"] { try await center.setServiceExtension(delegate) }
        let state = m["state"]?.stringValue ?? "foreground"
        try await setState(app, state)
        return ["app": .string(app), "settings": RuntimeJSON.json(try await center.settings())]
    }

    /// `webPushSubscribe`: a Web Push subscription of the app (with an application server key or none).
    private func webPushSubscribe(_ m: [String: JSONValue]) async throws -> [String: JSONValue] {
        let (app, _) = try app()
        var key: [UInt8]?
        switch m["applicationServerKey"] {
        case nil, .null?: break
        case .string(let text)?:
            guard text.utf8.count <= 256, let bytes = Base64URL.decode(text[...]) else {
                throw RuntimeError("\"applicationServerKey\" must be base64url (the application server's P-256 public key)")
            }
            key = bytes
        default: throw RuntimeError("\"applicationServerKey\" must be a base64url string or null")
        }
        let subscription = try await runtime.subscribeWebPush(app: app, scope: try scope(m), applicationServerKey: key)
        return ["subscription": subscription.json]
    }

    /// `startActivity`: a Live Activity the app starts, with how it is updated.
    private func startActivity(_ m: [String: JSONValue]) async throws -> [String: JSONValue] {
        let (app, _) = try app()
        guard case .string(let type)? = m["attributesType"], !type.isEmpty else { throw RuntimeError("startActivity needs \"attributesType\": a string") }
        guard case .object(let attributes)? = m["attributes"] else { throw RuntimeError("startActivity needs \"attributes\": an object") }
        guard case .object(let state)? = m["contentState"] else { throw RuntimeError("startActivity needs \"contentState\": an object") }
        let mode: LiveActivity.PushMode
        switch m["pushType"] {
        case nil, .null?: mode = .none
        case .string("token")?: mode = .token
        case .object(let o)? where o["channel"]?.stringValue != nil: mode = .channel(o["channel"]?.stringValue ?? "")
        default: throw RuntimeError("\"pushType\" is null, \"token\" or {\"channel\": \"<channel id>\"}")
        }
        let stale = try m["staleDate"].map { value throws(RuntimeError) -> Int64 in
            guard let seconds = value.integer(Int64.self) else { throw RuntimeError("\"staleDate\" must be UNIX seconds") }
            return seconds
        }
        let activity = try await runtime.startActivity(
            app: app, attributesType: type, attributes: attributes, contentState: state, staleDate: stale, pushMode: mode)
        return ["activity": RuntimeJSON.json(activity)]
    }

    /// `endActivity`: ends one of the app's activities.
    private func endActivity(_ m: [String: JSONValue]) async throws -> [String: JSONValue] {
        let (app, _) = try app()
        // "activity", not "id": a request's "id" is the one its answer echoes.
        guard case .string(let id)? = m["activity"] else { throw RuntimeError("endActivity needs \"activity\": the activity's id") }
        var state: [String: JSONValue]?
        switch m["contentState"] {
        case nil, .null?: break
        case .object(let o)?: state = o
        default: throw RuntimeError("\"contentState\" must be an object")
        }
        let dismissal = try m["dismissalDate"].map { value throws(RuntimeError) -> Int64 in
            guard let seconds = value.integer(Int64.self) else { throw RuntimeError("\"dismissalDate\" must be UNIX seconds") }
            return seconds
        }
        try await runtime.endActivity(app: app, id: id, contentState: state, dismissalDate: dismissal)
        return [:]
    }

    private func scope(_ m: [String: JSONValue]) throws -> String {
        switch m["scope"] {
        case nil, .null?: return "default"
        case .string(let scope)?: return scope
        default: throw RuntimeError("\"scope\" must be a string (the subscription's name; \"default\" when absent)")
        }
    }

    private func ids(_ m: [String: JSONValue]) throws -> [String] {
        guard case .array(let items)? = m["ids"] else { throw RuntimeError("\"ids\" must be an array of request identifiers") }
        return items.compactMap(\.stringValue)
    }

    private func setState(_ app: String, _ state: String) async throws {
        switch state {
        case "foreground": try await runtime.userLaunched(app: app)
        case "background": try await runtime.userLeftApp(app)
        case "suspended": try await runtime.systemSuspended(app)
        default: throw RuntimeError("\"state\" must be foreground, background or suspended, not \"\(state)\"")
        }
    }

    /// What the person holding the device does (for tools that test apps end to end).
    private func user(_ m: [String: JSONValue]) async throws -> [String: JSONValue] {
        guard case .string(let action)? = m["action"] else {
            throw RuntimeError("user needs \"action\": tap, action, dismiss, launch, leave, forceQuit, setting, status, answerCall, declineCall, lock, unlock")
        }
        let app = m["app"]?.stringValue ?? bound.withLock { $0.app } ?? ""
        func notification() throws -> String {
            guard let id = m["notification"]?.stringValue else { throw RuntimeError("user \(action) needs \"notification\": its id") }
            return id
        }
        switch action {
        case "tap": try await runtime.userTapped(app: app, notification: try notification())
        case "action":
            guard let actionID = m["actionId"]?.stringValue else { throw RuntimeError("user action needs \"actionId\"") }
            try await runtime.userChoseAction(app: app, notification: try notification(), action: actionID, text: m["text"]?.stringValue)
        case "dismiss": try await runtime.userDismissed(app: app, notification: try notification())
        case "launch": try await runtime.userLaunched(app: app)
        case "leave": try await runtime.userLeftApp(app)
        case "forceQuit": try await runtime.userForceQuit(app)
        case "setting":
            let options = try RuntimeJSON.authorizationOptions(m["options"])
            let setting: NotificationSetting = switch m["setting"]?.stringValue {
            case "enabled": .enabled
            case "disabled": .disabled
            default: throw RuntimeError("user setting needs \"setting\": enabled or disabled")
            }
            try await runtime.userChangedSetting(app: app, options, to: setting)
        case "status":
            let status: AuthorizationStatus = switch m["status"]?.stringValue {
            case "authorized": .authorized
            case "denied": .denied
            case "provisional": .provisional
            default: throw RuntimeError("user status needs \"status\": authorized, denied or provisional")
            }
            try await runtime.userChangedStatus(app: app, to: status)
        case "answerCall", "declineCall":
            guard let call = m["call"]?.stringValue else { throw RuntimeError("user \(action) needs \"call\": the call's UUID") }
            try await runtime.userAnsweredCall(app: app, uuid: call, answer: action == "answerCall")
        case "lock": await runtime.setLocked(true)
        case "unlock": await runtime.setLocked(false)
        default: throw RuntimeError("unknown user action \"\(action)\"")
        }
        return [:]
    }

    /// What happens to the device: a new zone, a position, location services, languages.
    private func device(_ m: [String: JSONValue]) async throws -> [String: JSONValue] {
        if case .string(let zone)? = m["timeZone"] { await runtime.setTimeZone(try PlanFormat.timeZone(zone)) }
        if case .bool(let on)? = m["locationServices"] { await runtime.setLocationServices(enabled: on) }
        if case .object(let l)? = m["location"] {
            guard let lat = l["latitude"]?.finiteDouble, let lon = l["longitude"]?.finiteDouble else {
                throw RuntimeError("a location needs \"latitude\" and \"longitude\"")
            }
            await runtime.setLocation(latitude: lat, longitude: lon)
        }
        if case .object(let a)? = m["locationAuthorization"], let app = a["app"]?.stringValue, case .bool(let ok)? = a["authorized"] {
            try await runtime.setLocationAuthorization(app: app, authorized: ok)
        }
        if case .array(let languages)? = m["languages"] { await runtime.setPreferredLanguages(languages.compactMap(\.stringValue)) }
        if let focus = m["focus"] { try await runtime.setFocus(try FocusSettings(json: focus)) }
        if let muted = m["muted"] {
            guard case .bool(let on) = muted else { throw RuntimeError("\"muted\" must be true or false") }
            await runtime.setMuted(on)
        }
        return [
            "timeZone": .string(await runtime.timeZone.identifier), "languages": .array(await runtime.preferredLanguages.map(JSONValue.string)),
            "focus": await runtime.focus.json, "activeFocus": await runtime.activeFocus().map { .string($0.name) } ?? .null,
            "muted": .bool(await runtime.isMuted),
        ]
    }
}

/// The app behind an agent connection, as the runtime's delegate (and service extension).
final class AgentAppDelegate: AppNotificationDelegate, NotificationServiceExtension {
    enum Waiting {
        case presentation(CallbackHandler<DeliveryByAppState.ForegroundOptions>)
        case action(CallbackHandler<Void>)
        case fetch(CallbackHandler<SilentPushes.FetchResult>)
        case content(CallbackHandler<ExtensionContent>)
        case pushKit(CallbackHandler<PushKitAnswer>)
        case mutableWebPush(CallbackHandler<DeclarativeWebPushMessage?>, proposed: DeclarativeWebPushMessage)
    }
    let session: AgentSession
    private let zone: TimeZone
    private let waiting = Locked<(next: Int, handlers: [Int: Waiting])>((1, [:]))

    init(session: AgentSession, zone: TimeZone) {
        self.session = session
        self.zone = zone
    }

    func call(_ event: String, _ fields: [String: JSONValue], waiting handler: Waiting?) {
        var object = fields
        object["event"] = .string(event)
        if let handler {
            let number = waiting.withLock { w -> Int in
                defer { w.next += 1 }
                w.handlers[w.next] = handler
                return w.next
            }
            object["callback"] = .int(Int64(number))
        }
        session.send(.object(object))
    }

    private func json(_ n: DeliveredNotification) -> JSONValue { RuntimeJSON.json(n, in: zone) }

    /// Answers callback `number`. An answer that cannot be read is refused and the callback keeps
    /// waiting (the app may answer again within its time limit).
    func complete(_ number: Int, _ m: [String: JSONValue]) throws {
        guard let handler = waiting.withLock({ $0.handlers[number] }) else {
            throw RuntimeError("no callback \(number) is waiting (answered already, or its time ran out)")
        }
        let answer: () -> Void
        switch handler {
        case .presentation(let h):
            let options = try RuntimeJSON.flags(m["options"], RuntimeJSON.foregroundOptionNames, what: "presentation option")
            answer = { h(options) }
        case .action(let h): answer = { h() }
        case .fetch(let h):
            let result: SilentPushes.FetchResult = switch m["result"]?.stringValue {
            case "newData": .newData
            case "noData": .noData
            case "failed": .failed
            default: throw RuntimeError("complete a silent push with \"result\": newData, noData or failed")
            }
            answer = { h(result) }
        case .content(let h):
            var communication: CommunicationContext?
            if let value = m["communication"], value != .null {
                guard let context = CommunicationContext(json: value) else {
                    throw RuntimeError("\"communication\" must be {\"sender\": {\"name\", \"handle\", \"avatar\"?}, \"conversation\"?}, each a string of 1 to \(CommunicationContext.maximumFieldBytes) bytes")
                }
                communication = context
            }
            let content = ExtensionContent(payload: m["content"] ?? .null, communication: communication)
            answer = { h(content) }
        case .pushKit(let h):
            let result = try AgentAnswerReaders.pushKitAnswer(m)
            answer = { h(result) }
        case .mutableWebPush(let h, let proposed):
            let replacement = try AgentAnswerReaders.replacement(m["notification"], of: proposed)
            answer = { h(replacement) }
        }
        guard waiting.withLock({ $0.handlers.removeValue(forKey: number) }) != nil else {
            throw RuntimeError("no callback \(number) is waiting (answered already, or its time ran out)")
        }
        answer()
    }

    /// The app went away: nothing will answer; the runtime's time limits take over.
    func disconnected() { waiting.withLock { $0.handlers.removeAll() } }

    func willPresent(_ n: DeliveredNotification, completion: CallbackHandler<DeliveryByAppState.ForegroundOptions>) async {
        call("willPresent", ["notification": json(n)], waiting: .presentation(completion))
    }
    func didReceive(_ response: NotificationResponse, for n: DeliveredNotification, completion: CallbackHandler<Void>) async {
        call("didReceive", [
            "notification": json(n), "actionId": .string(response.actionIdentifier),
            "text": response.userText.map(JSONValue.string) ?? .null, "requiredUnlock": .bool(response.requiredUnlock),
        ], waiting: .action(completion))
    }
    func didReceiveLegacy(_ n: DeliveredNotification, state: DeliveryByAppState.LegacyState) async {
        call("didReceiveNotification", ["notification": json(n), "state": .string(state == .active ? "active" : "inactive")], waiting: nil)
    }
    func didLaunch(with n: DeliveredNotification?) async {
        call("launched", ["notification": n.map(json) ?? .null], waiting: nil)
    }
    func didDeliverWithoutPresentation(_ n: DeliveredNotification) async {
        call("deliveredWithoutPresentation", ["notification": json(n)], waiting: nil)
    }
    func didReceiveSilentPush(_ payload: JSONValue, completion: CallbackHandler<SilentPushes.FetchResult>) async {
        call("silentPush", ["payload": payload], waiting: .fetch(completion))
    }
    func didRegisterForRemoteNotifications(token: DeviceToken) async {
        call("registered", ["token": .string(token.description)], waiting: nil)
    }
    func preferredLanguagesDidChange(_ languages: [String]) async {
        call("languagesChanged", ["languages": .array(languages.map(JSONValue.string))], waiting: nil)
    }
    func didReceive(_ payload: JSONValue, contentHandler: CallbackHandler<ExtensionContent>) async {
        call("serviceExtension", ["payload": payload], waiting: .content(contentHandler))
    }
    func timeWillExpire() async { call("serviceExtensionTimeWillExpire", [:], waiting: nil) }
}
