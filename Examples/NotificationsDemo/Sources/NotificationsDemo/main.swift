import Foundation
import HeraldNotifications
import Synchronization

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The demo's options: `--name value` pairs.
struct Options {
    var socket = UserNotificationCenter.defaultSocketPath ?? "agent.sock"
    var app = "com.example.app"
    var provider: String?
    var providerToken: String?
    var language = Locale.preferredLanguages.first ?? "en"
    var timeZone = TimeZone.current.identifier
    var taps = 1

    init(_ arguments: [String]) throws {
        var rest = arguments[...]
        while let name = rest.popFirst() {
            guard let value = rest.popFirst() else { throw DemoError("\(name) needs a value") }
            switch name {
            case "--socket": socket = value
            case "--app": app = value
            case "--provider": provider = value
            case "--provider-token": providerToken = value
            case "--language": language = value
            case "--time-zone": timeZone = value
            case "--taps":
                guard let count = Int(value), count >= 0 else { throw DemoError("--taps takes a count") }
                taps = count
            default: throw DemoError("unknown option \(name)")
            }
        }
    }
}

struct DemoError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// One JSON line on standard output for each thing that happens.
func report(_ fields: [String: String]) {
    guard var line = try? JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys]) else { return }
    line.append(UInt8(ascii: "\n"))
    FileHandle.standardOutput.write(line)
}

/// The app's delegate: shows what arrives in the foreground, and handles a tap by the state the
/// app was in when the user tapped (as `application.applicationState` tells an iOS app).
final class Delegate: UserNotificationCenterDelegate {
    let state: AppStateBox
    let taps: AsyncStream<String>.Continuation

    init(state: AppStateBox, taps: AsyncStream<String>.Continuation) {
        self.state = state
        self.taps = taps
    }

    func willPresent(_ notification: DeliveredNotification) async -> [PresentationOption] {
        report(["event": "presented", "id": notification.id, "origin": notification.origin.rawValue, "title": notification.content.title ?? ""])
        return [.banner, .list, .sound]
    }

    func didReceive(_ response: NotificationResponse) async {
        // Tapped while in the background (or not running): the app comes to the foreground and
        // opens what the notification is about; in the foreground: it is already on screen.
        let wasIn = state.current
        let opens = response.notification.content.userInfo?["conversation"]?.stringValue ?? response.notification.id
        report(["event": "tapped", "id": response.notification.id, "action": response.actionIdentifier,
                "state": wasIn.rawValue, "opens": wasIn == .foreground ? "already on screen" : opens])
        state.current = .foreground
        taps.yield(response.notification.id)
    }
}

/// The app's state, as the delegate reads it.
final class AppStateBox: Sendable {
    private let value = Mutex<AppState>(.foreground)
    var current: AppState {
        get { value.withLock { $0 } }
        set { value.withLock { $0 = newValue } }
    }
}

/// Gives the provider the device token with the user's language and time zone
/// (`POST /v1/registrations`, docs/provider-api.md).
func register(token: String, options: Options) async throws {
    guard let provider = options.provider, let url = URL(string: provider + "/v1/registrations") else { return }
    var request = URLRequest(url: url)
    request.httpMethod = "POST"
    request.setValue("application/json", forHTTPHeaderField: "Content-Type")
    if let bearer = options.providerToken { request.setValue("Bearer \(bearer)", forHTTPHeaderField: "Authorization") }
    request.httpBody = try JSONSerialization.data(withJSONObject: [
        "token": token, "topic": options.app, "language": options.language, "timeZone": options.timeZone,
    ])
    let (_, response) = try await URLSession.shared.data(for: request)
    let status = (response as? HTTPURLResponse)?.statusCode ?? 0
    guard status == 200 else { throw DemoError("the provider answered \(status) to the registration") }
    report(["event": "provider", "status": String(status), "language": options.language])
}

func run() async throws {
    let options = try Options(Array(CommandLine.arguments.dropFirst()))
    let state = AppStateBox()
    let (taps, tapSink) = AsyncStream.makeStream(of: String.self)
    let center = try await UserNotificationCenter.connect(
        app: options.app, socket: options.socket, state: .foreground, delegate: Delegate(state: state, taps: tapSink))
    guard try await center.requestAuthorization(options: [.alert, .sound, .badge]) else {
        report(["event": "denied"])
        return
    }
    try await center.setNotificationCategories([
        NotificationCategory(id: "message", actions: [NotificationAction(id: "reply", title: "Reply", options: [.foreground])]),
    ])

    // Register for remote notifications, and give the provider the token with the language.
    let token = try await center.registerForRemoteNotifications()
    try await register(token: token, options: options)
    // Said once the provider has it: whoever reads this line may ask the provider at once.
    report(["event": "registered", "token": token])

    // A morning reminder at 08:30 every day, written in the user's zone (it follows the device
    // when it travels), and a welcome shown a second from now.
    guard let zone = TimeZone(identifier: options.timeZone) else { throw DemoError("\(options.timeZone) is not a time zone") }
    var calendar = Calendar(identifier: .gregorian)
    calendar.timeZone = zone
    let tomorrow = calendar.dateComponents([.year, .month, .day], from: Date().addingTimeInterval(86_400))
    try await center.add(NotificationRequest(
        id: "morning", content: NotificationContent(title: "Good morning", body: "Your day at a glance", sound: "default"),
        trigger: .date(wallClock: .init(year: tomorrow.year, month: tomorrow.month, day: tomorrow.day, hour: 8, minute: 30), timeZone: zone, repeat: .day)))
    try await center.add(NotificationRequest(
        id: "welcome", content: NotificationContent(title: "Welcome", body: "Notifications are on", userInfo: ["conversation": "welcome"]),
        trigger: .timeInterval(1)))
    let pending = try await center.pendingNotificationRequests()
    report(["event": "scheduled", "ids": pending.map(\.id).joined(separator: ","), "morning": pending.first { $0.id == "morning" }?.nextFire ?? ""])

    // The user leaves the app: what arrives now is shown by the device, and a tap brings the app back.
    var tapped = 0
    var iterator = taps.makeAsyncIterator()
    while tapped < options.taps {
        if tapped == 0 {
            // Wait until the welcome has been shown in the foreground, then leave.
            for await event in center.events {
                if case .willPresent(let callback) = event, callback.notification.id == "welcome" { break }
            }
            try await center.setApplicationState(.background)
            state.current = .background
            report(["event": "background"])
        }
        guard await iterator.next() != nil else { break }
        tapped += 1
        if tapped < options.taps {
            try await center.setApplicationState(.background)
            state.current = .background
        }
    }
    center.close()
}

do {
    try await run()
} catch {
    FileHandle.standardError.write(Data("NotificationsDemo: \(error)\n".utf8))
    exit(1)
}
