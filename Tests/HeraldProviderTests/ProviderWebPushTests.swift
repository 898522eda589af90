import Crypto
import Foundation
import HeraldClient
import HeraldCore
@testable import HeraldProvider
import Testing

/// Registrations that are Web Push subscriptions, on a simulated clock with a sender that records
/// what it was given: templates localized per subscription, Declarative Web Push messages or the
/// payload's JSON, TTL/Urgency/Topic from the send, a schedule at 09:00 in each subscription's
/// zone, and pruning on 404 and 410. (Tests/webpush/provider.py sends for real, through a
/// gateway's Web Push port to a device that decrypts.)
@Suite("Provider: Web Push registrations")
struct ProviderWebPushTests {
    final class RecordingWebPushSender: WebPushSending {
        let clock: SimulatedAlarmClock
        let sent = Locked<[(endpoint: String, at: Int64, plaintext: String, options: WebPushOptions)]>([])
        /// Endpoints answered with this status instead of 201.
        let answers = Locked<[String: Int]>([:])
        init(clock: SimulatedAlarmClock) { self.clock = clock }
        func send(_ payload: [UInt8]?, to subscription: WebPushSubscription, keys: WebPushSubscriptionKeys, options: WebPushOptions) async throws -> WebPushResult {
            sent.withLock { $0.append((subscription.endpoint, clock.nowMilliseconds(), String(decoding: payload ?? [], as: UTF8.self), options)) }
            let status = answers.withLock { $0[subscription.endpoint] } ?? 201
            return WebPushResult(
                status: status, location: status == 201 ? subscription.endpoint + "/m/1" : nil,
                reason: status == 201 ? "" : #"{"code":\#(status),"error":"Gone","message":"the subscription was unsubscribed"}"#)
        }
    }

    static func recipient(_ n: Int, url: String? = nil) -> WebPushRecipient {
        let keys = WebPushUserAgentKeys.generate().subscriptionKeys
        return WebPushRecipient(
            endpoint: "https://push.example.com/wpush/\(n)", p256dh: Base64URL.encode(keys.p256dh), auth: Base64URL.encode(keys.auth), url: url)
    }

    @Test("a template reaches each subscription in its language, as a Declarative Web Push message; TTL, Urgency and Topic come from the send; 404 and 410 prune")
    func sends() async throws {
        let clock = SimulatedAlarmClock(startMilliseconds: ProviderServiceTests.instant("2027-01-04T08:00:00Z"))
        let webPush = RecordingWebPushSender(clock: clock)
        let service = ProviderService(
            store: InMemoryProviderStore(), sender: ProviderScheduleTests.RecordingSender(clock: clock), webPushSender: webPush, clock: clock)
        let french = try await service.register(
            token: nil, topic: "com.example.web", language: "fr-CA", timeZone: "Europe/Paris", userID: "ana", tags: [],
            webPush: Self.recipient(1, url: "https://app.example.com/"))
        #expect(french.token == WebPushRecipient.token(endpoint: "https://push.example.com/wpush/1") && french.token.count == 64)
        _ = try await service.register(token: nil, topic: "com.example.web", language: "en", timeZone: "Asia/Tokyo", userID: "bo", tags: [],
                                       webPush: Self.recipient(2))
        _ = try await service.register(token: nil, topic: "com.example.web", language: "de", timeZone: "UTC", userID: "cy", tags: [],
                                       webPush: Self.recipient(3, url: "https://app.example.com/"))
        try await service.putTemplate(MessageTemplate(id: "hello", translations: [
            "en": .init(title: "Hello", body: "%@ wrote"), "fr": .init(title: "Bonjour", body: "%@ a écrit"),
        ]))
        webPush.answers.withLock { $0["https://push.example.com/wpush/3"] = 410 }

        var request = SendRequest(target: .segment(topic: "com.example.web", tags: [], languages: []), message: .template(id: "hello", arguments: ["Zoé"]))
        request.badge = 2
        request.priority = 5
        request.expiration = clock.nowMilliseconds() / 1000 + 600
        request.collapseID = "inbox"
        let (report, _) = try await service.send(request)
        let sent = webPush.sent.withLock { $0 }.sorted { $0.endpoint < $1.endpoint }
        #expect(sent.count == 3)
        let first = try DeclarativeWebPushMessage(plaintext: Array(sent[0].plaintext.utf8))
        #expect(first.title == "Bonjour" && first.body == "Zoé a écrit" && first.navigate == "https://app.example.com/" && first.appBadge == 2)
        #expect(sent[0].options.ttl == 600 && sent[0].options.urgency == .low && sent[0].options.topic == "inbox")
        // No page to open: the APNs payload's JSON, which the page's service worker reads.
        let second = try JSONReader.parseObject(Array(sent[1].plaintext.utf8))
        #expect(second["aps"] != nil && (try? DeclarativeWebPushMessage(plaintext: Array(sent[1].plaintext.utf8))) == nil)
        #expect(report.counts["accepted"] == 2)
        #expect(report.pruned == [WebPushRecipient.token(endpoint: "https://push.example.com/wpush/3")])
        let gone = report.deliveries.first { $0.status == 410 }
        #expect(gone?.reason == "the subscription was unsubscribed")
        #expect(report.deliveries.first { $0.token == french.token }?.location == "https://push.example.com/wpush/1/m/1")

        // A collapse id that is not a Topic becomes one (the same id, the same topic).
        #expect(ProviderService.webPushTopic("order #42 shipped") == ProviderService.webPushTopic("order #42 shipped"))
        #expect(ProviderService.webPushTopic("order #42 shipped").count == 32)
        // A Live Activity push never goes to a subscription.
        var live = SendRequest(target: .user("ana"), message: .alert(title: nil, subtitle: nil, body: "x"))
        live.liveActivity = LiveActivitySend(event: "update", contentState: ["s": .int(1)])
        let refused = try await service.send(live).report
        #expect(refused.deliveries.first?.status == 0 && refused.deliveries.first?.error?.contains("APNs tokens only") == true)
    }

    @Test("registrations are checked: an https endpoint, P-256 keys, an http(s) url as the URL Standard reads it; without a VAPID key, refused")
    func checks() async throws {
        let clock = SimulatedAlarmClock(startMilliseconds: 0)
        let service = ProviderService(
            store: InMemoryProviderStore(), sender: ProviderScheduleTests.RecordingSender(clock: clock),
            webPushSender: RecordingWebPushSender(clock: clock), clock: clock)
        var bad = Self.recipient(1)
        bad.endpoint = "http://push.example.com/x"
        var badKey = Self.recipient(1)
        badKey.p256dh = "AAAA"
        var badURL = Self.recipient(1)
        badURL.url = "javascript:alert(1)"
        // Pages a user agent's URL parser refuses (Foundation's accepts the port).
        var badPort = Self.recipient(1)
        badPort.url = "https://app.example.com:99999/"
        var spaced = Self.recipient(1)
        spaced.url = "https://app example.com/"
        for recipient in [bad, badKey, badURL, badPort, spaced] {
            await #expect(throws: ProviderError.self) {
                try await service.register(token: nil, topic: "com.example.web", language: "en", timeZone: "UTC", userID: nil, tags: [], webPush: recipient)
            }
        }
        let without = ProviderService(store: InMemoryProviderStore(), sender: ProviderScheduleTests.RecordingSender(clock: clock), clock: clock)
        await #expect(throws: ProviderError.self) {
            try await without.register(token: nil, topic: "com.example.web", language: "en", timeZone: "UTC", userID: nil, tags: [], webPush: Self.recipient(1))
        }
    }

    @Test("a schedule at 09:00 local reaches each subscription at 09:00 in its own zone")
    func schedules() async throws {
        let clock = SimulatedAlarmClock(startMilliseconds: ProviderServiceTests.instant("2027-01-04T00:00:00Z"))
        let webPush = RecordingWebPushSender(clock: clock)
        let service = ProviderService(
            store: InMemoryProviderStore(), sender: ProviderScheduleTests.RecordingSender(clock: clock), webPushSender: webPush, clock: clock)
        try await service.startSchedules()
        _ = try await service.register(token: nil, topic: "com.example.web", language: "en", timeZone: "Asia/Tokyo", userID: nil, tags: [],
                                       webPush: Self.recipient(1, url: "https://app.example.com/"))
        _ = try await service.register(token: nil, topic: "com.example.web", language: "en", timeZone: "America/New_York", userID: nil, tags: [],
                                       webPush: Self.recipient(2, url: "https://app.example.com/"))
        let send = SendRequest(target: .segment(topic: "com.example.web", tags: [], languages: []), message: .alert(title: "Good morning", subtitle: nil, body: "news"))
        _ = try await service.schedule(.wallClock(WallClockRule(hour: 9, minute: 0, repeats: .once)), send: send)
        await service.advance(clock, to: ProviderServiceTests.instant("2027-01-05T00:00:00Z"))
        let sent = webPush.sent.withLock { $0 }.map { ($0.endpoint, $0.at) }
        #expect(sent.count == 2)
        #expect(sent.contains { $0 == ("https://push.example.com/wpush/1", ProviderServiceTests.instant("2027-01-04T00:00:00Z")) })  // 09:00 JST
        #expect(sent.contains { $0 == ("https://push.example.com/wpush/2", ProviderServiceTests.instant("2027-01-04T14:00:00Z")) })  // 09:00 EST
    }
}
