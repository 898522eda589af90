import Foundation
import HeraldCore
import HeraldDevice
import HeraldNotifications
import HeraldTesting
import Testing

/// The app library against a real device runtime and its agent socket (on a simulated clock):
/// every call goes over the socket as an app's would, and the runtime's answers and callbacks
/// are read through the generated types.
@Suite("HeraldNotifications: the app library", .timeLimit(.minutes(1)))
struct UserNotificationCenterTests {
    static let tokyo = TimeZone(identifier: "Asia/Tokyo")!

    struct AllowAll: UserSettingsSource {
        func answerPrompt(appID: String, requested: AuthorizationOptions) async -> AuthorizationOptions { requested }
    }

    /// A device with one app, listening on a socket of its own.
    struct Device {
        let clock = SimulatedAlarmClock(startMilliseconds: PlanFormat.parseDateTime("2026-06-10T12:00:00Z")!.instant!)
        let runtime: DeviceRuntime
        let agent: AgentSocket
        let violations = Locked<[String]>([])
        /// The ids of what the device delivered, as it delivers them (shown or not).
        let delivered: AsyncStream<String>

        init() async throws {
            let violations = self.violations
            let (delivered, sink) = AsyncStream.makeStream(of: String.self)
            self.delivered = delivered
            runtime = try DeviceRuntime(clock: clock, timeZone: UserNotificationCenterTests.tokyo, user: AllowAll()) { event in
                if case .contractViolation(_, let message) = event { violations.withLock { $0.append(message) } }
                if case .delivered(_, let notification) = event { sink.yield(notification.id) }
            }
            _ = try await runtime.install("com.example.app")
            agent = try await AgentSocket.start(path: NSTemporaryDirectory() + "herald-library-\(UUID().uuidString.prefix(8)).sock", runtime: runtime)
        }
    }

    /// A delegate that reports each call on a stream and answers as told.
    final class AppDelegate: UserNotificationCenterDelegate {
        enum Call: Sendable, Equatable { case willPresent(String), didReceive(String, String), silent(AgentJSON?) }
        let calls: AsyncStream<Call>
        private let sink: AsyncStream<Call>.Continuation
        let presentation: [PresentationOption]
        let stall: Bool

        init(presentation: [PresentationOption] = [.banner, .list, .sound], stall: Bool = false) {
            (calls, sink) = AsyncStream.makeStream(of: Call.self)
            self.presentation = presentation
            self.stall = stall
        }

        func willPresent(_ notification: HeraldNotifications.DeliveredNotification) async -> [PresentationOption] {
            sink.yield(.willPresent(notification.id))
            if stall { try? await Task.sleep(for: .seconds(600)) }
            return presentation
        }
        func didReceive(_ response: HeraldNotifications.NotificationResponse) async {
            sink.yield(.didReceive(response.notification.id, response.actionIdentifier))
        }
        func didReceiveRemoteNotification(_ payload: [String: AgentJSON]) async -> FetchResult {
            sink.yield(.silent(payload["news"]))
            return .newData
        }
    }

    @Test("the seeds' flow through the library: authorization, categories, a wall-clock fire date with its zone and repeat, a foreground presentation answered by the delegate, a tap, the device token, a silent push")
    func appFlow() async throws {
        let device = try await Device()
        let delegate = AppDelegate()
        let center = try await UserNotificationCenter.connect(app: "com.example.app", socket: device.agent.path, delegate: delegate)
        var calls = delegate.calls.makeAsyncIterator()
        #expect(center.settingsAtLaunch.status == .notDetermined)
        #expect(try await center.requestAuthorization(options: [.alert, .sound, .badge]))
        #expect(try await center.notificationSettings().alert == .enabled)

        let reply = NotificationAction(id: "reply", title: "Reply", options: [.foreground], textInput: .init(buttonTitle: "Send", placeholder: "Message"))
        let ignored = try await center.setNotificationCategories([
            NotificationCategory(id: "chat", actions: [reply], options: [.customDismissAction]), NotificationCategory(id: "chat"),
        ])
        #expect(ignored == ["chat"])
        #expect(try await center.notificationCategories().first?.actions?.first?.textInput?.buttonTitle == "Send")

        // UILocalNotification's fireDate, timeZone and repeatInterval: 09:00 every day, as written in Paris.
        try await center.add(NotificationRequest(
            id: "wake", content: NotificationContent(title: "Wake up", sound: "default"),
            trigger: .date(wallClock: .init(year: 2026, month: 6, day: 11, hour: 9, minute: 0), timeZone: TimeZone(identifier: "Europe/Paris")!, repeat: .day)))
        try await center.add(NotificationRequest(id: "standup", content: NotificationContent(body: "Stand-up"), trigger: .calendar(matching: .init(hour: 9, minute: 55), repeats: true)))
        let pending = try await center.pendingNotificationRequests()
        // The device is in Tokyo: the wall-clock time follows it (09:00 JST is 00:00 UTC).
        #expect(pending.map(\.id) == ["wake", "standup"] && pending.first?.nextFire == "2026-06-11T00:00:00Z", "\(pending)")
        try await center.removePendingNotificationRequests(withIdentifiers: ["standup"])
        #expect(try await center.pendingNotificationRequests().map(\.id) == ["wake"])

        // In the foreground, the delegate decides what is shown.
        try await center.present(NotificationRequest(id: "hello", content: NotificationContent(title: "Hi", sound: "default", category: "chat")))
        #expect(await calls.next() == .willPresent("hello"))
        var deliveries = device.delivered.makeAsyncIterator()
        #expect(await deliveries.next() == "hello")
        let delivered = try #require(try await center.deliveredNotifications().first { $0.id == "hello" })
        #expect(delivered.presented.contains(.banner) && delivered.presented.contains(.sound) && delivered.actions == ["reply"])

        // The user taps it: didReceive with the default action.
        try await center.send(AgentRequest.User(action: .tap, notification: "hello"))
        #expect(await calls.next() == .didReceive("hello", HeraldNotifications.NotificationResponse.defaultActionIdentifier))

        // Registration: the token the gateway issued comes back as the call's value.
        let token = try #require(DeviceToken(bytes: [UInt8](repeating: 0xAB, count: 32)))
        await device.runtime.gatewayIssued(token: token, topic: "com.example.app")
        #expect(try await center.registerForRemoteNotifications() == token.description)

        // A silent push wakes the app; its fetch result is the delegate's return value.
        await device.runtime.receive(DeviceNotification(
            apnsID: NotificationID(UUID()), topic: "com.example.app", pushType: .background, priority: .conservePower, collapseID: nil, expiration: nil,
            payload: try JSONDecoder().decode(JSONValue.self, from: Data(#"{"aps":{"content-available":1},"news":"fresh"}"#.utf8))))
        #expect(await calls.next() == .silent("fresh"))

        try await center.setBadgeCount(4)
        #expect(try await center.badgeCount() == 4)
        await #expect(throws: AgentError.self) { try await center.setBadgeCount(-1) }
        #expect(device.violations.withLock { $0 }.isEmpty)
        center.close()
        await device.agent.close()
    }

    @Test("the library keeps the 30-second contract: a delegate that does not return is answered for, before the device's limit, and counted")
    func deadlineKept() async throws {
        let device = try await Device()
        let delegate = AppDelegate(stall: true)
        let center = try await UserNotificationCenter.connect(app: "com.example.app", socket: device.agent.path, delegate: delegate, answerDeadline: .milliseconds(100))
        _ = try await center.requestAuthorization(options: [.alert])
        var calls = delegate.calls.makeAsyncIterator()
        try await center.present(NotificationRequest(id: "stuck", content: NotificationContent(title: "Hi")))
        #expect(await calls.next() == .willPresent("stuck"))
        // The library's answer (`[]`: nothing shown, nothing listed) completes the delivery on the device.
        var deliveries = device.delivered.makeAsyncIterator()
        #expect(await deliveries.next() == "stuck")
        #expect(try await center.deliveredNotifications().isEmpty)
        #expect(center.missedDeadlines == 1)
        #expect(device.violations.withLock { $0 }.isEmpty, "the device saw no contract violation")
        center.close()
        await device.agent.close()
    }

    @Test("errors say what happened: no agent at the path, a refused op with the agent's reason, a closed connection")
    func errors() async throws {
        await #expect(throws: AgentError.self) {
            _ = try await UserNotificationCenter.connect(app: "com.example.app", socket: NSTemporaryDirectory() + "no-such-agent.sock")
        }
        let device = try await Device()
        do {
            _ = try await UserNotificationCenter.connect(app: "com.example.other", socket: device.agent.path)
            Issue.record("an app that is not installed was accepted")
        } catch let AgentError.refused(op, reason) {
            #expect(op == "hello" && reason.contains("not installed"), "\(reason)")
        }
        let center = try await UserNotificationCenter.connect(app: "com.example.app", socket: device.agent.path)
        await device.agent.close()
        center.close()
        await #expect(throws: AgentError.closed) { try await center.badgeCount() }
    }

    /// An app's PushKit side: reports a call for each VoIP push, and tells what CallKit said.
    final class CallApp: PushRegistryDelegate {
        let registry = Locked<PushRegistry?>(nil)
        let actions: AsyncStream<String>
        private let sink: AsyncStream<String>.Continuation
        init() { (actions, sink) = AsyncStream.makeStream(of: String.self) }

        func didReceiveIncomingPush(_ push: HeraldNotifications.PushKitPush) async -> PushCompletion {
            if push.kind == .voip, push.mustReport == true, let registry = registry.withLock({ $0 }), let uuid = UUID(uuidString: push.apnsID) {
                try? await registry.reportIncomingCall(uuid, handle: "+15551230000", caller: "Ada")
            }
            sink.yield("push \(push.kind.rawValue)")
            return .done
        }
        func perform(_ action: CallActionType, call: String) async { sink.yield("\(action.rawValue) \(call)") }
    }

    @Test("PushRegistry through the socket: the VoIP token is its own, a VoIP push is reported as a call, and the user's answer comes back as CallKit's")
    func pushRegistry() async throws {
        let device = try await Device()
        let app = CallApp()
        let center = try await UserNotificationCenter.connect(app: "com.example.app", socket: device.agent.path, state: .background, pushDelegate: app)
        let registry = PushRegistry(center: center)
        app.registry.withLock { $0 = registry }
        let issued = try #require(DeviceToken(bytes: [UInt8](repeating: 0x56, count: 32)))
        async let token = registry.token(for: .voip) { try await registry.setDesiredPushTypes([.voip]) }
        // The gateway's answer comes once the registry asked (a token known at once is returned too).
        while try await center.send(AgentRequest.PushRegistry(types: [.voip])).tokens.isEmpty {
            await device.runtime.gatewayIssued(pushKitToken: issued, kind: .voip, topic: "com.example.app")
        }
        #expect(try await token == issued.description)
        let id = UUID()
        await device.runtime.receive(DeviceNotification(
            apnsID: NotificationID(id), topic: "com.example.app", pushType: .voip, priority: .immediate, collapseID: nil, expiration: nil,
            payload: .object(["caller": .string("Ada")])))
        var actions = app.actions.makeAsyncIterator()
        #expect(await actions.next() == "push voip")
        try await center.send(AgentRequest.User(action: .answerCall, call: id.uuidString))
        #expect(await actions.next() == "answer \(id.uuidString)")
        #expect(device.violations.withLock { $0 }.isEmpty, "reported in time: no violation")
        center.close()
        await device.agent.close()
    }
}
