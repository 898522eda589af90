import Foundation
import GRDB
import HeraldCore
import HeraldStore
@testable import HeraldStoreSQLite
import HeraldTesting
import Testing

/// Broadcasts stored once (issue 66), the same from every store: one record per broadcast, an
/// acked sequence per subscription, the newest unacked broadcast waiting for each subscriber.
@Suite("Stores: broadcasts stored once")
struct BroadcastStoreTests {
    typealias Kind = StoreTests.Kind
    let now: Int64 = 1_795_262_400_000
    let channel = BroadcastChannelID("AAAAAAAAAAAAAAAAAAAAAA==")!
    let otherChannel = BroadcastChannelID("AQEBAQEBAQEBAQEBAQEBAQ==")!

    func subscription(_ store: any GatewayStore, device: String, channel: BroadcastChannelID, at: Int64) async throws -> DeviceToken {
        let token = DeviceToken.random()
        try await store.registerToken(TokenRegistration(
            token: token, scope: TokenScope(bundleID: "com.a", kind: .channel(channel.value)), environment: .development,
            deviceID: device, createdAtMilliseconds: at))
        return token
    }

    func broadcast(_ text: String, at: Int64, on channel: BroadcastChannelID? = nil, expiration: Expiration = .unspecified) -> StoredBroadcast {
        StoredBroadcast(
            bundleID: "com.a", channel: channel ?? self.channel, environment: .development, id: .random(), priority: .immediate,
            expiration: expiration, payload: Array(#"{"aps":{"event":"update","content-state":{"n":"\#(text)"},"timestamp":1}}"#.utf8),
            receivedAtMilliseconds: at)
    }

    func pending(_ store: any GatewayStore, _ device: String, at: Int64) async throws -> [Delivery] {
        try await store.pendingDeliveries(forDevice: device, nowMilliseconds: at)
    }

    @Test("one record per broadcast; each subscriber waits for the newest it has not acked; acks only move up", arguments: Kind.available)
    func storedOnce(kind: Kind) async throws {
        let store = try await kind.make()
        let s1 = try await subscription(store, device: "d1", channel: channel, at: now - 10)
        let s2 = try await subscription(store, device: "d2", channel: channel, at: now - 10)
        let other = try await subscription(store, device: "d1", channel: otherChannel, at: now - 10)
        let app = DeviceToken.random()
        try await store.registerToken(TokenRegistration(token: app, scope: TokenScope(bundleID: "com.a"), environment: .development, deviceID: "d1", createdAtMilliseconds: now))
        #expect(Set(try await store.channelSubscriptions(ofDevice: "d1").map(\.token)) == [s1, other], "channel subscriptions only, never the app's token")

        let b1 = try await store.storeBroadcast(broadcast("1", at: now), policy: StorePolicy())
        #expect(b1.seq > 0)
        #expect(try await store.broadcast(seq: b1.seq) == b1)
        #expect(try await store.storedNotificationCount() == 0, "no copy per subscriber")
        let late = try await subscription(store, device: "d3", channel: channel, at: now + 5)
        let first = try await pending(store, "d1", at: now + 1)
        #expect(first.map(\.broadcastSeq) == [b1.seq])
        #expect(first.first?.notification.token == s1)
        #expect(first.first?.notification.payload == b1.payload)
        #expect(first.first?.notification.pushType == .liveactivity)
        #expect(try await pending(store, "d3", at: now + 6).isEmpty, "a subscription made after a broadcast does not get it")

        try await store.record([.broadcastAcked(seq: b1.seq, subscription: s1, ackedAtMilliseconds: now + 2)])
        #expect(try await pending(store, "d1", at: now + 3).isEmpty)
        #expect(try await pending(store, "d2", at: now + 3).map(\.broadcastSeq) == [b1.seq])

        let b2 = try await store.storeBroadcast(broadcast("2", at: now + 10), policy: StorePolicy())
        #expect(b2.seq > b1.seq)
        for device in ["d1", "d2", "d3"] {
            #expect(try await pending(store, device, at: now + 11).map(\.broadcastSeq) == [b2.seq], "\(device): only the newest waits")
        }
        try await store.record([
            .broadcastAcked(seq: b2.seq, subscription: s2, ackedAtMilliseconds: now + 12),
            .broadcastAcked(seq: b1.seq, subscription: s2, ackedAtMilliseconds: now + 13),
        ])
        #expect(try await pending(store, "d2", at: now + 14).isEmpty, "an older ack recorded later does not move the subscription back")

        let r1 = try await store.broadcastReceipts(of: b1.id, nowMilliseconds: now + 14)
        #expect(Set(r1.map(\.token)) == [s1, s2], "the subscriptions the channel had when it was accepted")
        #expect(r1.first { $0.token == s1 }?.events.last?.status == .acked)
        #expect(r1.first { $0.token == s2 }?.events.last?.status == .acked, "acked a newer one: passed")
        let r2 = try await store.broadcastReceipts(of: b2.id, nowMilliseconds: now + 14)
        #expect(Set(r2.map(\.token)) == [s1, s2, late])
        #expect(r2.first { $0.token == s1 }?.events.last?.status == .stored)
        #expect(r2.first { $0.token == s2 }?.events.last?.status == .acked)

        // Unsubscribed: nothing waits for it any more.
        #expect(try await store.unregisterToken(late, atMilliseconds: now + 15))
        #expect(try await pending(store, "d3", at: now + 16).isEmpty)
    }

    @Test("policy 0 (apns-expiration 0) waits for nobody; expired ones neither; the sweep forgets what nobody can get", arguments: Kind.available)
    func expiryAndSweep(kind: Kind) async throws {
        let store = try await kind.make()
        let s1 = try await subscription(store, device: "d1", channel: channel, at: now - 10)
        let b1 = try await store.storeBroadcast(broadcast("1", at: now), policy: StorePolicy())
        let b2 = try await store.storeBroadcast(broadcast("2", at: now + 1, expiration: .immediately), policy: StorePolicy())
        #expect(try await pending(store, "d1", at: now + 1).isEmpty, "the newest was for the subscribers connected then; the older one is replaced")
        let r1 = try await store.broadcastReceipts(of: b1.id, nowMilliseconds: now + 2)
        #expect(r1.map(\.token) == [s1])
        #expect(r1.first?.events.last?.status == .replaced)
        #expect(try await store.broadcastReceipts(of: b2.id, nowMilliseconds: now + 2).first?.events.last?.status == .dropped)

        let timed = try await store.storeBroadcast(broadcast("3", at: now + 2, on: otherChannel, expiration: .at(secondsSince1970: (now + 5_000) / 1000)), policy: StorePolicy())
        let s2 = try await subscription(store, device: "d2", channel: otherChannel, at: now)
        #expect(try await pending(store, "d2", at: now + 3).map(\.broadcastSeq) == [timed.seq])
        #expect(try await pending(store, "d2", at: now + 6_000).isEmpty, "past its apns-expiration")
        #expect(try await store.broadcastReceipts(of: timed.id, nowMilliseconds: now + 6_000).first?.events.last?.status == .expired)
        _ = s2

        // Kept for receipts until the retention time, then forgotten: b1 (replaced), b2 and
        // `timed` (past their time). A channel's newest that can still be delivered stays.
        let b4 = try await store.storeBroadcast(broadcast("4", at: now + 3), policy: StorePolicy())
        try await store.sweep(nowMilliseconds: now + 6_000, retainFinishedUntil: now)
        #expect(try await store.broadcast(seq: b1.seq) != nil, "accepted at the retention bound: kept")
        try await store.sweep(nowMilliseconds: now + 6_000, retainFinishedUntil: now + 6_000)
        for gone in [b1, b2, timed] { #expect(try await store.broadcast(seq: gone.seq) == nil) }
        #expect(try await store.broadcast(seq: b4.seq) == b4)
        #expect(try await pending(store, "d1", at: now + 6_000).map(\.broadcastSeq) == [b4.seq])
    }
}

/// A store an earlier Herald wrote, whose broadcasts were one copy per subscription (schema v5).
@Suite("SQLite store: broadcasts an earlier version stored")
struct BroadcastUpgradeTests {
    let now: Int64 = 1_795_262_400_000

    @Test("copies a v5 store held per subscription survive the migration and are delivered; new broadcasts are stored once beside them")
    func v5CopiesKept() async throws {
        let path = try TemporaryDirectory.make(prefix: "herald-upgrade") + "/herald.sqlite"
        let subscription = DeviceToken.random()
        let scope = TokenScope.channelSubscriptions(bundleID: "com.a", channel: "AAAAAAAAAAAAAAAAAAAAAA==")
        do {
            // The schema as v5 left it, and what v5's broadcaster wrote: the subscription's token
            // and one held notification for it.
            let pool = try DatabasePool(path: path)
            try SQLiteStore.migrator.migrate(pool, upTo: "v5: broadcast channels")
            try await pool.write { db in
                try db.execute(sql: """
                    INSERT INTO device_tokens (token, bundle_id, environment, device_id, created_at_ms) VALUES (?, ?, 'development', 'd1', ?)
                    """, arguments: [Data(subscription.bytes), scope, self.now - 10])
                try db.execute(sql: """
                    INSERT INTO notifications (apns_id, token, bundle_id, push_type, priority, expiration, collapse_id, payload,
                        received_at_ms, discard_at_ms, state)
                    VALUES ('0193a8f4-0000-7000-8000-000000000001', ?, 'com.a', 'liveactivity', 10, NULL, NULL, ?, ?, ?, 0)
                    """, arguments: [Data(subscription.bytes), Data(#"{"aps":{"event":"update","timestamp":1}}"#.utf8), self.now, self.now + 86_400_000])
            }
        }
        let store = try SQLiteStore(path: path)
        let kept = try await store.pendingDeliveries(forDevice: "d1", nowMilliseconds: now + 1)
        #expect(kept.map(\.notification.id.description) == ["0193a8f4-0000-7000-8000-000000000001"])
        #expect(kept.first?.broadcastSeq == nil && kept.first?.notification.token == subscription, "a held notification, as before")
        let broadcast = try await store.storeBroadcast(StoredBroadcast(
            bundleID: "com.a", channel: BroadcastChannelID("AAAAAAAAAAAAAAAAAAAAAA==")!, environment: .development, id: .random(),
            priority: .immediate, expiration: .unspecified, payload: Array("{}".utf8), receivedAtMilliseconds: now + 2), policy: StorePolicy())
        let both = try await store.pendingDeliveries(forDevice: "d1", nowMilliseconds: now + 3)
        #expect(both.map(\.broadcastSeq) == [nil, broadcast.seq], "the old copy, then the new broadcast (stored once)")
        try await store.record([.acked(seq: kept[0].seq, sentAtMilliseconds: now + 4, ackedAtMilliseconds: now + 4),
                                .broadcastAcked(seq: broadcast.seq, subscription: subscription, ackedAtMilliseconds: now + 4)])
        #expect(try await store.pendingDeliveries(forDevice: "d1", nowMilliseconds: now + 5).isEmpty)
    }
}
