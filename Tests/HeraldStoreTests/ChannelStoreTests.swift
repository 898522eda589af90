import Foundation
import HeraldCore
import HeraldStore
import Testing

/// Broadcast channels and token scopes, the same from every store.
@Suite("Stores: channels and token scopes")
struct ChannelStoreTests {
    typealias Kind = StoreTests.Kind
    let now: Int64 = 1_795_262_400_000

    @Test("channels: created per app and environment, read, listed oldest first, deleted", arguments: Kind.available)
    func channels(kind: Kind) async throws {
        let store = try await kind.make()
        let first = BroadcastChannelID.random(), second = BroadcastChannelID.random(), other = BroadcastChannelID.random()
        try await store.createChannel(ChannelRecord(bundleID: "com.a", channelID: first, environment: .development, storagePolicy: 0, createdAtMilliseconds: now))
        try await store.createChannel(ChannelRecord(bundleID: "com.a", channelID: second, environment: .development, storagePolicy: 1, createdAtMilliseconds: now + 1))
        try await store.createChannel(ChannelRecord(bundleID: "com.a", channelID: other, environment: .production, storagePolicy: 1, createdAtMilliseconds: now))
        #expect(try await store.channels(bundleID: "com.a", environment: .development).map(\.channelID) == [first, second])
        #expect(try await store.channels(bundleID: "com.b", environment: .development).isEmpty)
        let read = try await store.channel(bundleID: "com.a", id: second, environment: .development)
        #expect(read?.storagePolicy == 1 && read?.createdAtMilliseconds == now + 1)
        #expect(try await store.channel(bundleID: "com.a", id: other, environment: .development) == nil, "environments do not share channels")
        #expect(try await store.deleteChannel(bundleID: "com.a", id: first, environment: .development, atMilliseconds: now))
        #expect(try await store.deleteChannel(bundleID: "com.a", id: first, environment: .development, atMilliseconds: now) == false)
        #expect(try await store.channels(bundleID: "com.a", environment: .development).map(\.channelID) == [second])
    }

    @Test("token scopes: a Live Activity token takes only liveactivity pushes of its app, an app token never; unregistering one leaves the app's feedback alone", arguments: Kind.available)
    func scopes(kind: Kind) async throws {
        let store = try await kind.make()
        let app = DeviceToken.random(), start = DeviceToken.random(), channel = DeviceToken.random()
        try await store.registerTokens([
            TokenRegistration(token: app, scope: TokenScope(bundleID: "com.a"), environment: .development, createdAtMilliseconds: now),
            TokenRegistration(token: start, scope: TokenScope(bundleID: "com.a", kind: .pushToStart), environment: .development, createdAtMilliseconds: now),
            TokenRegistration(token: channel, scope: TokenScope(bundleID: "com.a", kind: .channel("AAAAAAAAAAAAAAAAAAAAAA==")),
                              environment: .development, createdAtMilliseconds: now),
        ])
        func push(_ token: DeviceToken, _ type: PushType, bundle: String = "com.a") -> StoredNotification {
            StoredNotification(id: .random(), token: token, bundleID: bundle, pushType: type, priority: .immediate, expiration: .unspecified,
                               collapseID: nil, payload: Array("{}".utf8), receivedAtMilliseconds: now)
        }
        let outcomes = try await store.accept(
            [push(app, .alert), push(app, .liveactivity), push(start, .liveactivity), push(start, .alert), push(channel, .liveactivity),
             push(start, .liveactivity, bundle: "com.b")],
            policy: StorePolicy(), environment: .development, nowMilliseconds: now)
        let refused = outcomes.map { outcome -> String in
            if case .rejected(let r) = outcome { r.description } else { "ok" }
        }
        #expect(refused == ["ok", "token not for this app or push type", "ok", "token not for this app or push type", "ok", "token not for this app or push type"])
        #expect(try await store.unregisterToken(start, atMilliseconds: now))
        #expect(try await store.unregisterToken(app, atMilliseconds: now))
        #expect(try await store.pendingFeedback(bundleID: "com.a", environment: .development).map(\.token) == [app])
    }

    @Test("Web Push subscriptions: only webpush messages, every one kept until its TTL (Topic replaces), up to the per-subscription bound; APNs tokens refuse them", arguments: Kind.available)
    func webPushSubscriptions(kind: Kind) async throws {
        let store = try await kind.make()
        let app = DeviceToken.random(), subscription = DeviceToken.random()
        let key = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
        let scope = TokenScope(bundleID: "browser", kind: .webPush(channel: "0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0", applicationServerKey: key))
        try await store.registerTokens([
            TokenRegistration(token: app, scope: TokenScope(bundleID: "browser"), environment: .development, createdAtMilliseconds: now),
            TokenRegistration(token: subscription, scope: scope, environment: .development, createdAtMilliseconds: now),
        ])
        #expect(try #require(try await store.registration(of: subscription)).scope == scope, "the key comes back with the subscription")
        func push(_ token: DeviceToken, _ type: PushType, _ text: String = "{}", topic: String? = nil) -> StoredNotification {
            StoredNotification(id: .random(), token: token, bundleID: "browser", pushType: type, priority: .immediate, expiration: .unspecified,
                               collapseID: topic.flatMap(CollapseID.init), payload: Array(text.utf8), receivedAtMilliseconds: now)
        }
        let outcomes = try await store.accept(
            [push(app, .webpush), push(subscription, .alert), push(subscription, .liveactivity), push(subscription, .webpush)],
            policy: StorePolicy(), environment: .development, nowMilliseconds: now)
        let refused = outcomes.map { outcome -> String in
            if case .rejected(let r) = outcome { r.description } else { "ok" }
        }
        #expect(refused == ["token not for this app or push type", "token not for this app or push type", "token not for this app or push type", "ok"])

        // APNs keeps the newest per app (maximumPerApp 1); Web Push keeps each message, to its bound.
        let policy = StorePolicy(maximumPerApp: 1, maximumPerWebPushSubscription: 4)
        _ = try await store.accept(
            [push(subscription, .webpush, "a", topic: "t"), push(subscription, .webpush, "b"), push(subscription, .webpush, "c", topic: "t"),
             push(subscription, .webpush, "d"), push(subscription, .webpush, "e")],
            policy: policy, environment: .development, nowMilliseconds: now)
        let held = try await store.storedNotifications(for: subscription, policy: policy, nowMilliseconds: now)
        #expect(held.map { String(decoding: $0.payload, as: UTF8.self) } == ["b", "c", "d", "e"],
                "the Topic replaced a, the bound of 4 replaced the first message; the rest wait")

        // Unsubscribed: in its app's feedback list, as an app's token is.
        #expect(try await store.unregisterToken(subscription, atMilliseconds: now))
        #expect(try await store.pendingFeedback(bundleID: "browser", environment: .development).map(\.token) == [subscription])
    }
}
