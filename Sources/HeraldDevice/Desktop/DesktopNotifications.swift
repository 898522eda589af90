import HeraldCore
import Foundation
import Logging

/// Shows what the notification center presents on a Linux desktop, through the freedesktop
/// Notifications D-Bus interface (`org.freedesktop.Notifications` on the session bus, spoken by
/// GNOME Shell, KDE Plasma, dunst, mako, xfce4-notifyd…): `herald device run --desktop`.
///
/// - A delivered notification shown as a banner becomes a `Notify` call: summary = title (or
///   the app), body = subtitle and body, the category's actions (minimal context) as actions,
///   `default` for a click on the notification itself.
/// - `ActionInvoked` reaches the runtime as the user's choice — the same path as the agent
///   socket's `user` messages: `default` is a tap, another key the action. `NotificationClosed`
///   with reason 2 (dismissed by the user) is a dismissal.
/// - An entry that leaves Notification Center (tapped in the agent, cancelled, cleared) is closed
///   on the desktop (`CloseNotification`).
/// - A sound the runtime played (a file of the app's) is played with the first of `pw-play`,
///   `paplay`, `aplay` found on the PATH; otherwise the server is asked to play it (`sound-file`,
///   or `sound-name` `message-new-instant` for the default sound).
///
/// The bus is spoken by ``SessionBus`` (no Swift D-Bus library is available here): one
/// connection sends the notifications and hears their signals. Action keys sent to the bus are
/// Herald's own (`a0`, `a1`…), mapped back to the app's identifiers, so nothing an app or a
/// payload chose is ever parsed back from the bus.
public final class DesktopNotifications: Sendable {
    /// What the user did to a desktop notification.
    public enum UserResponse: Sendable, Hashable {
        case tapped(app: String, notification: String)
        case chose(app: String, notification: String, action: String)
        case dismissed(app: String, notification: String)
    }

    /// Why the desktop cannot show notifications.
    public struct Unavailable: Error, CustomStringConvertible {
        public var description: String
    }

    private struct Shown {
        var app: String
        var notification: String
        /// Bus action key → the app's action identifier.
        var actions: [String: String]
    }

    private let bus: SessionBus
    private let player: String?
    private let bodyMarkup: Bool
    private let respond: @Sendable (UserResponse) async -> Void
    private let logger: Logger
    private let shown = Locked((byNumber: [UInt32: Shown](), byNotification: [String: UInt32]()))
    /// Desktop notifications remembered for responses, at most (the oldest are forgotten).
    static let rememberedLimit = 1_000
    static let service = "org.freedesktop.Notifications"
    static let path = "/org/freedesktop/Notifications"

    private init(bus: SessionBus, bodyMarkup: Bool, respond: @escaping @Sendable (UserResponse) async -> Void, logger: Logger) {
        self.bus = bus
        self.bodyMarkup = bodyMarkup
        self.player = ["pw-play", "paplay", "aplay"].lazy.compactMap(Self.executable).first
        self.respond = respond
        self.logger = logger
    }

    /// Connects to the session bus's notification server (fails with a message that says what is
    /// missing) and listens for its signals.
    public static func connect(respond: @escaping @Sendable (UserResponse) async -> Void, logger: Logger) async throws -> DesktopNotifications {
        let receiver = Locked<DesktopNotifications?>(nil)
        let bus: SessionBus
        do {
            bus = try SessionBus(onSignal: { message in receiver.withLock { $0 }?.signal(message) })
        } catch {
            throw Unavailable(description: "--desktop needs a D-Bus session bus (run it in a desktop session or under dbus-run-session): \(error)")
        }
        let bodyMarkup: Bool
        do {
            try await bus.start(match: "type='signal',sender='\(service)',interface='\(service)',path='\(path)'")
            let capabilities = try await bus.call(destination: service, path: path, interface: service, member: "GetCapabilities")
            guard case .array(_, let names)? = capabilities.body.first else { throw DBusError("GetCapabilities answered \(capabilities.body)") }
            bodyMarkup = names.contains(.string("body-markup"))
        } catch {
            bus.close()
            throw Unavailable(description: "no notification server answers on the session bus (\(service)): \(error)")
        }
        let notifications = DesktopNotifications(bus: bus, bodyMarkup: bodyMarkup, respond: respond, logger: logger)
        receiver.withLock { $0 = notifications }
        return notifications
    }

    /// Closes the bus connection.
    public func close() { bus.close() }

    /// What the runtime reported: a banner shown, an entry gone.
    public func handle(_ event: RuntimeEvent) {
        switch event {
        case .delivered(let app, let notification) where notification.presentation.banner:
            Task.detached { [self] in await show(app: app, notification) }
        case .pushKit(let app, .callReported(let call)):
            // CallKit's incoming call: Answer and Decline, answered as the call's actions.
            let hints: [DBusValue: DBusValue] = [
                .string("urgency"): .variant(.byte(2)), .string("desktop-entry"): .variant(.string("herald")),
                .string("sound-name"): .variant(.string("phone-incoming-call")), .string("category"): .variant(.string("call.incoming")),
            ]
            let text = (call.video ? "Video call from " : "Call from ") + call.handle
            Task.detached { [self] in
                await notify(app: app, id: call.shownID, summary: call.caller ?? call.handle, text: text,
                             actions: [(CallAction.answer.rawValue, "Answer"), (CallAction.end.rawValue, "Decline")], hints: hints)
            }
        case .pushKit(_, .callEnded(let uuid, _)):
            close(IncomingCall.shownPrefix + uuid)
        case .dismissed(_, let id):
            close(id)
        default: break
        }
    }

    private func close(_ id: String) {
        guard let number = shown.withLock({ $0.byNotification[id] }) else { return }
        Task.detached { [bus] in
            _ = try? await bus.call(destination: Self.service, path: Self.path, interface: Self.service, member: "CloseNotification", [.uint32(number)])
        }
    }

    private func show(app: String, _ notification: DeliveredNotification) async {
        let content = notification.content
        // A message from a person shows the person (a communication notification).
        let summary = content.communication?.senderName ?? content.title.flatMap { $0.isEmpty ? nil : $0 } ?? app
        let text = [content.subtitle, content.body].compactMap { $0 }.filter { !$0.isEmpty }.joined(separator: "\n")
        var hints: [DBusValue: DBusValue] = [
            // The level the device applied (time-sensitive and critical only with their entitlements).
            .string("urgency"): .variant(.byte(notification.attention.level.breaksThroughFocus ? 2 : 1)),
            .string("desktop-entry"): .variant(.string("herald")),
        ]
        if let sound = notification.playedSound {
            if let player, sound != "default" {
                play(sound, with: player)
            } else if sound == "default" {
                hints[.string("sound-name")] = .variant(.string("message-new-instant"))
            } else {
                hints[.string("sound-file")] = .variant(.string(sound))
            }
        }
        await notify(app: app, id: notification.id, summary: summary, text: text, actions: notification.actions.map { ($0.identifier, $0.title) }, hints: hints)
    }

    /// Shows one desktop notification whose responses come back under `id`; `actions` are the
    /// app's (identifier, title) pairs, sent to the bus under Herald's own keys.
    private func notify(app: String, id: String, summary: String, text: String, actions appActions: [(String, String)], hints: [DBusValue: DBusValue]) async {
        var actions = ["default", "Open"]
        var keys: [String: String] = [:]
        for (index, action) in appActions.enumerated() {
            let key = "a\(index)"
            keys[key] = action.0
            actions += [key, action.1]
        }
        let body: [DBusValue] = [
            .string("Herald: \(app)"), .uint32(0), .string(""), .string(summary), .string(bodyMarkup ? Self.escapeMarkup(text) : text),
            .array(element: "s", actions.map(DBusValue.string)), .dictionary(key: "s", value: "v", hints), .int32(-1),
        ]
        do {
            let answer = try await bus.call(destination: Self.service, path: Self.path, interface: Self.service, member: "Notify", body)
            guard let number = answer.body.first?.uint32Value else { throw DBusError("Notify answered \(answer.body)") }
            shown.withLock { shown in
                shown.byNumber[number] = Shown(app: app, notification: id, actions: keys)
                shown.byNotification[id] = number
                if shown.byNumber.count > Self.rememberedLimit, let oldest = shown.byNumber.keys.min(),
                   let gone = shown.byNumber.removeValue(forKey: oldest) {
                    shown.byNotification[gone.notification] = nil
                }
            }
            logger.debug("shown on the desktop", metadata: ["id": "\(id)", "desktop_id": "\(number)"])
        } catch {
            logger.warning("the desktop did not show a notification", metadata: ["id": "\(id)", "error": "\(error)"])
        }
    }

    private func play(_ file: String, with player: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: player)
        process.arguments = [file]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try? process.run()
    }

    // MARK: signals

    /// `ActionInvoked (u id, s key)` or `NotificationClosed (u id, u reason)` from the server.
    func signal(_ message: DBusMessage) {
        switch message.member {
        case "ActionInvoked":
            guard message.body.count == 2, let number = message.body[0].uint32Value, let key = message.body[1].stringValue,
                  let entry = shown.withLock({ $0.byNumber[number] }) else { return }
            let response: UserResponse
            if key == "default" {
                response = .tapped(app: entry.app, notification: entry.notification)
            } else if let action = entry.actions[key] {
                response = .chose(app: entry.app, notification: entry.notification, action: action)
            } else {
                return
            }
            forget(number)
            Task.detached { [respond] in await respond(response) }
        case "NotificationClosed":
            guard message.body.count == 2, let number = message.body[0].uint32Value, let reason = message.body[1].uint32Value,
                  let entry = forget(number) else { return }
            // 2: dismissed by the user. 1 (expired), 3 (closed by CloseNotification): nothing the user did.
            if reason == 2 { Task.detached { [respond] in await respond(.dismissed(app: entry.app, notification: entry.notification)) } }
        default: break
        }
    }

    @discardableResult
    private func forget(_ number: UInt32) -> Shown? {
        shown.withLock { shown in
            guard let entry = shown.byNumber.removeValue(forKey: number) else { return nil }
            shown.byNotification[entry.notification] = nil
            return entry
        }
    }

    // MARK: helpers

    /// Text for a server that reads markup in bodies: `&`, `<`, `>` as entities.
    static func escapeMarkup(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
    }

    static func executable(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        return path.split(separator: ":").map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}
