import Foundation
import Logging
import NIOConcurrencyHelpers

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
/// The bus is spoken through `gdbus` (GLib's command-line D-Bus client, Debian `libglib2.0-bin`):
/// no Swift D-Bus library is available here. Every string from a payload reaches `gdbus` as one
/// argument (no shell), quoted as a GVariant text literal; action keys sent to the bus are
/// Herald's own (`a0`, `a1`…), so no app-chosen identifier is ever parsed back from the bus.
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

    private struct State {
        var shown: [UInt32: Shown] = [:]
        var byNotification: [String: UInt32] = [:]
        var monitor: Process?
    }

    private let gdbus: String
    private let player: String?
    private let bodyMarkup: Bool
    private let respond: @Sendable (UserResponse) async -> Void
    private let logger: Logger
    private let state = NIOLockedValueBox(State())
    /// Desktop notifications remembered for responses, at most (the oldest are forgotten).
    static let rememberedLimit = 1_000

    /// Connects to the session bus's notification server (fails with a message that says what is
    /// missing), and starts listening for its signals.
    public init(respond: @escaping @Sendable (UserResponse) async -> Void, logger: Logger) throws {
        guard let gdbus = Self.executable("gdbus") else {
            throw Unavailable(description: "--desktop needs gdbus on the PATH (Debian: apt-get install libglib2.0-bin)")
        }
        guard ProcessInfo.processInfo.environment["DBUS_SESSION_BUS_ADDRESS"] != nil || FileManager.default.fileExists(atPath: "/run/user/\(getuid())/bus") else {
            throw Unavailable(description: "--desktop needs a D-Bus session bus (DBUS_SESSION_BUS_ADDRESS is not set): run it in a desktop session or under dbus-run-session")
        }
        self.gdbus = gdbus
        self.player = ["pw-play", "paplay", "aplay"].lazy.compactMap(Self.executable).first
        self.respond = respond
        self.logger = logger
        let capabilities = try Self.run(gdbus, Self.call("GetCapabilities"))
        guard capabilities.status == 0 else {
            throw Unavailable(description: "no notification server answers on the session bus (org.freedesktop.Notifications): \(capabilities.error.trimmingCharacters(in: .whitespacesAndNewlines))")
        }
        bodyMarkup = capabilities.output.contains("'body-markup'")
        try startMonitor()
    }

    /// Closes the signal monitor.
    public func close() {
        let monitor = state.withLockedValue { state -> Process? in
            defer { state.monitor = nil }
            return state.monitor
        }
        if let monitor, monitor.isRunning { monitor.terminate() }
    }

    /// What the runtime reported: a banner shown, an entry gone.
    public func handle(_ event: RuntimeEvent) {
        switch event {
        case .delivered(let app, let notification) where notification.presentation.banner:
            Task.detached { [self] in await show(app: app, notification) }
        case .dismissed(_, let id):
            guard let number = state.withLockedValue({ $0.byNotification[id] }) else { return }
            Task.detached { [self] in
                _ = try? Self.run(gdbus, Self.call("CloseNotification", "uint32 \(number)"))
            }
        default: break
        }
    }

    private func show(app: String, _ notification: DeliveredNotification) async {
        let content = notification.content
        let summary = content.title.flatMap { $0.isEmpty ? nil : $0 } ?? app
        let body = [content.subtitle, content.body].compactMap { $0 }.filter { !$0.isEmpty }.joined(separator: "\n")
        var actions = ["default", "Open"]
        var keys: [String: String] = [:]
        for (index, action) in notification.actions.enumerated() {
            let key = "a\(index)"
            keys[key] = action.identifier
            actions += [key, action.title]
        }
        var hints = ["'urgency': <byte \(content.interruptionLevel == .timeSensitive || content.interruptionLevel == .critical ? 2 : 1)>",
                     "'desktop-entry': <'herald'>"]
        if let sound = notification.playedSound {
            if let player, sound != "default" {
                play(sound, with: player)
            } else if sound == "default" {
                hints.append("'sound-name': <'message-new-instant'>")
            } else {
                hints.append("'sound-file': <\(Self.literal(sound))>")
            }
        }
        let arguments = Self.call(
            "Notify", Self.literal("Herald: \(app)"), "uint32 0", "''", Self.literal(summary),
            Self.literal(bodyMarkup ? Self.escapeMarkup(body) : body),
            "[" + actions.map(Self.literal).joined(separator: ", ") + "]", "{" + hints.joined(separator: ", ") + "}", "int32 -1")
        do {
            let result = try Self.run(gdbus, arguments)
            guard result.status == 0, let number = Self.notificationNumber(result.output) else {
                return logger.warning("the desktop did not show a notification", metadata: ["id": "\(notification.id)", "error": "\(result.error)"])
            }
            state.withLockedValue { state in
                state.shown[number] = Shown(app: app, notification: notification.id, actions: keys)
                state.byNotification[notification.id] = number
                if state.shown.count > Self.rememberedLimit, let oldest = state.shown.keys.min(), let gone = state.shown.removeValue(forKey: oldest) {
                    state.byNotification[gone.notification] = nil
                }
            }
            logger.debug("shown on the desktop", metadata: ["id": "\(notification.id)", "desktop_id": "\(number)"])
        } catch {
            logger.warning("could not run gdbus", metadata: ["error": "\(error)"])
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

    private func startMonitor() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: gdbus)
        process.arguments = ["monitor", "--session", "--dest", "org.freedesktop.Notifications", "--object-path", "/org/freedesktop/Notifications"]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        state.withLockedValue { $0.monitor = process }
        let handle = pipe.fileHandleForReading
        let thread = Thread { [weak self] in
            var pending = Data()
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { return }
                pending.append(chunk)
                // A line longer than 64 KiB is not a signal of ours: dropped.
                if pending.count > 65_536, !pending.contains(UInt8(ascii: "\n")) { pending.removeAll() }
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                    pending.removeSubrange(pending.startIndex...newline)
                    guard let self else { return }
                    self.signal(line)
                }
            }
        }
        thread.name = "herald-desktop-signals"
        thread.start()
    }

    /// One line of `gdbus monitor`: `…ActionInvoked (uint32 7, 'a0')` or `…NotificationClosed (uint32 7, uint32 2)`.
    func signal(_ line: String) {
        if let range = line.range(of: ".ActionInvoked (uint32 ") {
            let rest = line[range.upperBound...]
            guard let comma = rest.firstIndex(of: ","), let number = UInt32(rest[..<comma]) else { return }
            let key = rest[comma...].dropFirst().trimmingCharacters(in: CharacterSet(charactersIn: " ')"))
            guard let shown = state.withLockedValue({ $0.shown[number] }) else { return }
            let response: UserResponse
            if key == "default" {
                response = .tapped(app: shown.app, notification: shown.notification)
            } else if let action = shown.actions[key] {
                response = .chose(app: shown.app, notification: shown.notification, action: action)
            } else {
                return
            }
            forget(number)
            Task.detached { [respond] in await respond(response) }
        } else if let range = line.range(of: ".NotificationClosed (uint32 ") {
            let parts = line[range.upperBound...].split(separator: ",")
            guard parts.count == 2, let number = UInt32(parts[0]), let reason = Self.notificationNumber(String(parts[1])) else { return }
            guard let shown = forget(number) else { return }
            // 2: dismissed by the user. 1 (expired), 3 (closed by CloseNotification): nothing the user did.
            if reason == 2 { Task.detached { [respond] in await respond(.dismissed(app: shown.app, notification: shown.notification)) } }
        }
    }

    @discardableResult
    private func forget(_ number: UInt32) -> Shown? {
        state.withLockedValue { state in
            guard let shown = state.shown.removeValue(forKey: number) else { return nil }
            state.byNotification[shown.notification] = nil
            return shown
        }
    }

    // MARK: gdbus

    static func call(_ method: String, _ arguments: String...) -> [String] {
        ["call", "--session", "--dest", "org.freedesktop.Notifications", "--object-path", "/org/freedesktop/Notifications",
         "--method", "org.freedesktop.Notifications.\(method)"] + arguments
    }

    /// A GVariant text string literal: single-quoted, with `\`, `'` and control characters escaped.
    static func literal(_ text: String) -> String {
        var out = "'"
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": out += "\\\\"
            case "'": out += "\\'"
            case "\n": out += "\\n"
            case _ where scalar.value < 0x20 || scalar.value == 0x7f:
                out += "\\u" + String(format: "%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "'"
    }

    /// Text for a server that reads markup in bodies: `&`, `<`, `>` as entities.
    static func escapeMarkup(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
    }

    /// `(uint32 7,)` → 7.
    static func notificationNumber(_ output: String) -> UInt32? {
        guard let range = output.range(of: "uint32 ") else { return nil }
        return UInt32(output[range.upperBound...].prefix { $0.isNumber })
    }

    static func executable(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        return path.split(separator: ":").map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    static func run(_ executable: String, _ arguments: [String]) throws -> (status: Int32, output: String, error: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let output = Pipe(), error = Pipe()
        process.standardOutput = output
        process.standardError = error
        try process.run()
        // gdbus answers in a few lines; read before waiting so a full pipe cannot block it.
        let out = output.fileHandleForReading.readDataToEndOfFile()
        let err = error.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: out, as: UTF8.self), String(decoding: err, as: UTF8.self))
    }
}
