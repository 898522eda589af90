import Crypto
import Foundation
import HeraldCore
import Testing

@testable import HeraldDevice

/// The device runtime as a Web Push user agent, without sockets: subscriptions and their keys,
/// messages decrypted (RFC 8291) and handed to the app, declarative ones presented, messages
/// kept for an app that is away, everything saved across a restart, acks only once saved.
@Suite("Web Push on the device runtime")
struct WebPushRuntimeTests {
    static let app = "com.example.chat"
    static let token = DeviceToken(bytes: Array(repeating: 7, count: 32))!

    final class Journal: Sendable {
        let events = Locked<[RuntimeEvent]>([])
        var observer: @Sendable (RuntimeEvent) -> Void { { [events] e in events.withLock { $0.append(e) } } }
        var webPush: [WebPushEvent] { events.withLock { $0 }.compactMap { if case .webPush(_, let e) = $0 { e } else { nil } } }
        var delivered: [DeliveredNotification] { events.withLock { $0 }.compactMap { if case .delivered(_, let n) = $0 { n } else { nil } } }
        var navigations: [WebPushEvent] { webPush.filter { if case .navigated = $0 { true } else { false } } }
    }

    /// The app's side: what it was handed.
    final class App: AppNotificationDelegate {
        let messages = Locked<[WebPushMessageDelivery]>([])
        let subscriptions = Locked<[WebPushSubscription]>([])
        func didReceiveWebPush(_ message: WebPushMessageDelivery) async { messages.withLock { $0.append(message) } }
        func didSubscribeWebPush(_ subscription: WebPushSubscription) async { subscriptions.withLock { $0.append(subscription) } }
    }

    static func push(_ stored: WebPushStoredMessage, number: UInt8) throws -> DeviceNotification {
        DeviceNotification(
            apnsID: NotificationID(UUID(uuid: (number, 0, 0, 0, 0, 0, 0x40, 0, 0x80, 0, 0, 0, 0, 0, 0, number))), topic: app, pushType: .webpush,
            priority: .immediate, collapseID: nil, expiration: nil, payload: try JSONReader.parse(stored.encoded()), token: token)
    }

    static func encrypted(_ text: String, to subscription: WebPushSubscription, channel: String) throws -> WebPushStoredMessage {
        WebPushStoredMessage(
            channelID: channel, encoding: .aes128gcm, legacyHeaders: nil, body: try WebPushEncryption.encrypt(Array(text.utf8), to: subscription.keys))
    }

    /// A runtime with the app installed, its delegate set and notifications authorized.
    static func started(in directory: String, journal: Journal, app: App) async throws -> (DeviceRuntime, AppNotificationCenter) {
        let runtime = try DeviceRuntime(
            clock: SimulatedAlarmClock(), timeZone: TimeZone(identifier: "UTC")!, user: DeviceRuntimeTests.Allow(), storageDirectory: directory,
            observer: journal.observer)
        let center = try await runtime.install(Self.app)
        try await center.setDelegate(app)
        _ = try await center.requestAuthorization([.alert, .sound, .badge])
        return (runtime, center)
    }

    @Test("subscribe asks the connection once per scope, the gateway's endpoint reaches the app, messages are decrypted, declarative ones shown")
    func subscribeAndReceive() async throws {
        let journal = Journal(), requests = LiveActivityTests.Requests(), app = App()
        let directory = NSTemporaryDirectory() + "herald-webpush-runtime-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (runtime, center) = try await Self.started(in: directory, journal: journal, app: app)
        try await runtime.userLeftApp(Self.app)
        await runtime.setRequester(requests.requester)

        let key = Array(P256.Signing.PrivateKey().publicKey.x963Representation)
        let subscription = try await runtime.subscribeWebPush(app: Self.app, applicationServerKey: key)
        #expect(subscription.endpoint == nil && subscription.scope == "default")
        guard case .webPush(Self.app, let id, key)? = requests.all.last?.0, requests.all.last?.1 == true else {
            Issue.record("the runtime did not ask the connection for the subscription: \(requests.all)")
            return
        }
        #expect(try await runtime.subscribeWebPush(app: Self.app, applicationServerKey: key) == subscription)
        #expect(requests.all.count == 1)
        await #expect(throws: RuntimeError.self) { try await runtime.subscribeWebPush(app: Self.app, applicationServerKey: nil) }
        await #expect(throws: RuntimeError.self) { try await runtime.subscribeWebPush(app: Self.app, scope: "", applicationServerKey: nil) }
        await #expect(throws: RuntimeError.self) { try await runtime.subscribeWebPush(app: Self.app, scope: "x", applicationServerKey: [4, 1, 2]) }

        let endpoint = "https://push.example.com/wpush/" + Self.token.hex
        await runtime.gatewayWebPushSubscribed(topic: Self.app, subscription: id, endpoint: endpoint, token: Self.token)
        await runtime.settle()
        #expect(app.subscriptions.withLock { $0.map(\.endpoint) } == [endpoint])

        let acks = Locked(0)
        await runtime.receive(try Self.push(try Self.encrypted("hello", to: subscription, channel: id), number: 1)) { acks.withLock { $0 += 1 } }
        let declarative = DeclarativeWebPushMessage(title: "New message", navigate: "https://chat.example.com/", body: "lunch?", appBadge: 2)
        await runtime.receive(try Self.push(try Self.encrypted(String(decoding: declarative.encoded(), as: UTF8.self), to: subscription, channel: id), number: 2)) {
            acks.withLock { $0 += 1 }
        }
        // A message for a subscription the device does not have, and one that does not decrypt.
        await runtime.receive(try Self.push(try Self.encrypted("lost", to: subscription, channel: UUID().uuidString.lowercased()), number: 3)) { acks.withLock { $0 += 1 } }
        var tampered = try Self.encrypted("tampered", to: subscription, channel: id)
        tampered.body[tampered.body.count - 1] ^= 1
        await runtime.receive(try Self.push(tampered, number: 4)) { acks.withLock { $0 += 1 } }
        // A repeat of one already handled is acked and dropped.
        await runtime.receive(try Self.push(try Self.encrypted("hello", to: subscription, channel: id), number: 1)) { acks.withLock { $0 += 1 } }
        await runtime.settle()

        // A declarative message that is not mutable is the user agent's alone: no push event.
        #expect(app.messages.withLock { $0.map { String(decoding: $0.data, as: UTF8.self) } } == ["hello"])
        #expect(app.messages.withLock { $0.map(\.declarative) } == [false])
        #expect(journal.delivered.map(\.content.title) == ["New message"])
        #expect(journal.delivered.first?.content.badge == 2)
        let dropped = journal.webPush.compactMap { if case .undecryptable(_, let reason) = $0 { reason } else { nil } }
        #expect(dropped.count == 2 && dropped[0].contains("no subscription") && dropped[1].contains("does not decrypt"))
        #expect(acks.withLock { $0 } == 5)

        // Away: kept (and saved) for the app; after a restart of the runtime, handed to it.
        try await center.setDelegate(nil)
        await runtime.receive(try Self.push(try Self.encrypted("while away", to: subscription, channel: id), number: 5)) {}
        let again = try DeviceRuntime(
            clock: SimulatedAlarmClock(), timeZone: TimeZone(identifier: "UTC")!, user: DeviceRuntimeTests.Allow(), storageDirectory: directory)
        let restored = try await again.install(Self.app)
        #expect(try await again.webPushSubscriptions(app: Self.app).map(\.endpoint) == [endpoint])
        let back = App()
        try await restored.setDelegate(back)
        await again.settle()
        #expect(back.messages.withLock { $0.map { String(decoding: $0.data, as: UTF8.self) } } == ["while away"])
        // The saved keys still decrypt.
        await again.receive(try Self.push(try Self.encrypted("after restart", to: subscription, channel: id), number: 6)) {}
        await again.settle()
        #expect(back.messages.withLock { $0.last.map { String(decoding: $0.data, as: UTF8.self) } } == "after restart")

        let requestsAgain = LiveActivityTests.Requests()
        await again.setRequester(requestsAgain.requester)
        #expect(requestsAgain.all.count == 1)
        #expect(try await again.unsubscribeWebPush(app: Self.app))
        #expect(requestsAgain.all.last?.1 == false)
        #expect(try await again.webPushSubscriptions(app: Self.app).isEmpty)
    }

    @Test("declarative messages: shown with the app not running and no push event (a mutable one too: no app to change it); a tag replaces; buttons open their pages")
    func declarativeMessages() async throws {
        let journal = Journal(), requests = LiveActivityTests.Requests(), app = App()
        let directory = NSTemporaryDirectory() + "herald-webpush-declarative-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (runtime, center) = try await Self.started(in: directory, journal: journal, app: app)
        await runtime.setRequester(requests.requester)
        let subscription = try await runtime.subscribeWebPush(app: Self.app, applicationServerKey: nil)
        let id = try #require(requests.all.last.flatMap { if case .webPush(_, let channel, _) = $0.0 { channel } else { nil } })
        try await center.setDelegate(nil)
        try await runtime.userLeftApp(Self.app)
        func send(_ text: String, _ number: UInt8) async throws {
            await runtime.receive(try Self.push(try Self.encrypted(text, to: subscription, channel: id), number: number)) {}
            await runtime.settle()
        }

        // No agent connection: shown all the same, and nothing kept for the app.
        try await send(#"{"web_push":8030,"notification":{"title":"first","navigate":"https://chat.example/1","tag":"room"},"app_badge":1}"#, 1)
        try await send(#"{"web_push":8030,"notification":{"title":"second","navigate":"https://chat.example/2","tag":"room","#
            + #""actions":[{"action":"reply","title":"Reply","navigate":"https://chat.example/2/reply"},{"action":"mute","title":"Mute"}]}}"#, 2)
        let listed = try await center.deliveredNotifications()
        #expect(listed.map(\.content.title) == ["second" as String?], "the same tag replaces: \(listed.map(\.content.title))")
        let shown = try #require(listed.first)
        #expect(shown.actions.map(\.identifier) == ["reply", "mute"] && shown.actions.allSatisfy { $0.options.contains(.foreground) })
        #expect(shown.content.userInfo["actions"]?.arrayValue?.first?["navigate"] == .string("https://chat.example/2/reply"))
        #expect(journal.delivered.first?.content.badge == 1)

        // Mutable, the app not running: nobody can change it, so it is shown as it came and
        // not kept for the app.
        try await send(#"{"web_push":8030,"notification":{"title":"third","navigate":"https://chat.example/3"},"mutable":true}"#, 3)
        let back = App()
        try await center.setDelegate(back)
        await runtime.settle()
        #expect(back.messages.withLock { $0 }.isEmpty, "no push event for a message shown while the app was away")
        #expect(try await center.deliveredNotifications().compactMap(\.content.title).sorted() == ["second", "third"])

        // A button of the message: the app comes forward with the action's identifier.
        try await runtime.userChoseAction(app: Self.app, notification: shown.id, action: "reply")
        #expect(try await center.deliveredNotifications().compactMap(\.content.title) == ["third"])
        await #expect(throws: RuntimeError.self) { try await runtime.userChoseAction(app: Self.app, notification: "nothing", action: "reply") }
        // The pages opened: the action's own, then (a tap) the message's.
        let third = try #require(try await center.deliveredNotifications().first)
        try await runtime.userTapped(app: Self.app, notification: third.id)
        #expect(journal.navigations == [
            .navigated(id: shown.id, action: "reply", url: "https://chat.example/2/reply"), .navigated(id: third.id, action: nil, url: "https://chat.example/3"),
        ])
    }

    /// An app that answers mutable messages with a replacement, or never.
    final class Rewriter: AppNotificationDelegate {
        let answers: Bool
        let proposed = Locked<[String]>([])
        init(answers: Bool) { self.answers = answers }
        func didReceiveMutableWebPush(
            _ message: WebPushMessageDelivery, proposed: DeclarativeWebPushMessage, completion: CallbackHandler<DeclarativeWebPushMessage?>
        ) async {
            self.proposed.withLock { $0.append(proposed.title) }
            guard answers else { return }
            completion(DeclarativeWebPushMessage(title: "2 new messages", navigate: "https://chat.example/inbox"))
        }
    }

    @Test("mutable, the app running: it gets the proposed notification first; its replacement is shown, or the proposed one after 30 s without an answer")
    func mutableMessages() async throws {
        for answers in [true, false] {
            let journal = Journal(), requests = LiveActivityTests.Requests(), app = Rewriter(answers: answers)
            let clock = SimulatedAlarmClock()
            let runtime = try DeviceRuntime(clock: clock, timeZone: TimeZone(identifier: "UTC")!, user: DeviceRuntimeTests.Allow(), observer: journal.observer)
            let center = try await runtime.install(Self.app)
            try await center.setDelegate(app)
            _ = try await center.requestAuthorization([.alert, .sound, .badge])
            try await runtime.userLeftApp(Self.app)
            await runtime.setRequester(requests.requester)
            let subscription = try await runtime.subscribeWebPush(app: Self.app, applicationServerKey: nil)
            let channel = try #require(requests.all.last.flatMap { if case .webPush(_, let channel, _) = $0.0 { channel } else { nil } })
            let text = #"{"web_push":8030,"notification":{"title":"Ada: hi","navigate":"https://chat.example/1"},"mutable":true}"#
            let acked = Locked(false)
            await runtime.receive(try Self.push(try Self.encrypted(text, to: subscription, channel: channel), number: 9)) { acked.withLock { $0 = true } }
            await runtime.settle()
            #expect(app.proposed.withLock { $0 } == ["Ada: hi"])
            if !answers {
                #expect(journal.delivered.isEmpty && !acked.withLock { $0 }, "nothing shown, nothing acked, while the app may still answer")
                clock.advance(to: clock.nowMilliseconds() + DeviceRuntime.mutableWebPushTimeLimitMilliseconds)
                await runtime.settle()
            }
            #expect(journal.delivered.map(\.content.title) == [answers ? "2 new messages" : "Ada: hi"])
            #expect(acked.withLock { $0 }, "acked once shown and saved")
        }
    }
}
