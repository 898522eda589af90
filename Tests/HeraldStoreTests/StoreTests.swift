import Foundation
import HeraldCore
import HeraldStore
import HeraldStoreSQLite
import HeraldTesting
import Crypto
import Testing

/// The same semantics from every store.
@Suite("Stores")
struct StoreTests {
    enum Kind: String, CaseIterable, CustomTestStringConvertible {
        case memory, sqlite
        var testDescription: String { rawValue }
        func make() throws -> any HeraldStore {
            switch self {
            case .memory: return InMemoryStore()
            case .sqlite:
                let dir = try TemporaryDirectory.make(prefix: "herald-store")
                return try SQLiteStore(path: dir + "/herald.sqlite")
            }
        }
    }

    let now: Int64 = 1_795_262_400_000

    func notification(_ token: DeviceToken, _ text: String, collapse: String? = nil, expiration: Expiration = .unspecified, bundle: String = "com.a") -> StoredNotification {
        StoredNotification(
            apnsID: .random(), token: token, bundleID: bundle, pushType: .alert, priority: .immediate,
            expiration: expiration, collapseID: collapse.flatMap(CollapseID.init), payload: Array(text.utf8),
            receivedAtMilliseconds: now)
    }

    func registered(_ store: any HeraldStore, environment: APNsEnvironment = .development) async throws -> DeviceToken {
        let token = DeviceToken.random()
        try await store.registerToken(TokenRegistration(token: token, bundleID: "com.a", environment: environment, createdAtMilliseconds: now))
        return token
    }

    @Test("keys and team topics; a topic belongs to one team", arguments: Kind.allCases)
    func keysAndTopics(kind: Kind) async throws {
        let store = try kind.make()
        let key = P256.Signing.PrivateKey().publicKey
        try await store.registerKey(ProviderKey(keyID: "KEY0000001", teamID: "TEAM000001", publicKey: key, environment: .production), topics: ["com.a", "com.b"], atMilliseconds: now)
        let loaded = try await store.key(id: "KEY0000001")
        #expect(loaded?.teamID == "TEAM000001" && loaded?.environment == .production)
        #expect(loaded?.publicKey.rawRepresentation == key.rawRepresentation)
        #expect(try await store.key(id: "NOPE") == nil)
        #expect(try await store.topics(ofTeam: "TEAM000001") == ["com.a", "com.b"])
        await #expect(throws: StoreError.self) {
            try await store.registerKey(ProviderKey(keyID: "KEY0000002", teamID: "TEAM000002", publicKey: key), topics: ["com.a"], atMilliseconds: now)
        }
        #expect(try await store.key(id: "KEY0000002") == nil, "a refused registration leaves nothing behind")
    }

    @Test("admission: unknown, other environment, other topic, unregistered, expired", arguments: Kind.allCases)
    func admission(kind: Kind) async throws {
        let store = try kind.make()
        let token = try await registered(store)
        let production = try await registered(store, environment: .production)
        let outcomes = try await store.accept([
            notification(DeviceToken.random(), "unknown"),
            notification(production, "prod"),
            notification(token, "other", bundle: "com.b"),
            notification(token, "zero", expiration: .immediately),
            notification(token, "ok"),
        ], policy: .default, environment: .development, nowMilliseconds: now)
        #expect(outcomes == [
            .rejected(APNsRejection(.badDeviceToken)), .rejected(APNsRejection(.badDeviceToken)),
            .rejected(APNsRejection(.deviceTokenNotForTopic)), .discarded, .stored,
        ])
        #expect(try await store.unregisterToken(token, atMilliseconds: now + 5))
        #expect(try await store.unregisterToken(token, atMilliseconds: now + 9), "unregistering twice is harmless")
        #expect(try await store.storedNotificationCount() == 0, "an unregistered token's notifications are dropped")
        let gone = try await store.accept([notification(token, "late")], policy: .default, environment: .development, nowMilliseconds: now)
        #expect(gone == [.rejected(APNsRejection(.unregistered, timestampMilliseconds: now + 5))])
        #expect(try await store.unregisterToken(DeviceToken.random(), atMilliseconds: now) == false)
        await #expect(throws: StoreError.self) {
            try await store.registerToken(TokenRegistration(token: production, bundleID: "com.a", environment: .production, createdAtMilliseconds: now))
        }
    }

    @Test("store-and-forward: newest per app, deeper queues, collapse ids, expiry", arguments: Kind.allCases)
    func storeAndForward(kind: Kind) async throws {
        let store = try kind.make()
        let token = try await registered(store)
        _ = try await store.accept([notification(token, "1"), notification(token, "2"), notification(token, "3")], policy: .default, environment: .development, nowMilliseconds: now)
        var held = try await store.storedNotifications(for: token, policy: .default, nowMilliseconds: now)
        #expect(held.map { String(decoding: $0.payload, as: UTF8.self) } == ["3"])

        let deep = StorePolicy(maximumPerApp: 3)
        let other = try await registered(store)
        _ = try await store.accept(
            [notification(other, "a", collapse: "x"), notification(other, "b"), notification(other, "c", collapse: "x"),
             notification(other, "d"), notification(other, "e", expiration: .at(secondsSince1970: now / 1000 + 10))],
            policy: deep, environment: .development, nowMilliseconds: now)
        held = try await store.storedNotifications(for: other, policy: deep, nowMilliseconds: now)
        #expect(held.map { String(decoding: $0.payload, as: UTF8.self) } == ["c", "d", "e"])
        held = try await store.storedNotifications(for: other, policy: deep, nowMilliseconds: now + 10_000)
        #expect(held.map { String(decoding: $0.payload, as: UTF8.self) } == ["c", "d"], "expired notifications are never handed out")
        held = try await store.storedNotifications(for: other, policy: deep, nowMilliseconds: now + deep.maximumStorageMilliseconds)
        #expect(held.isEmpty, "nothing is kept beyond 30 days")
    }

    @Test("the SQLite store keeps everything across reopening")
    func sqliteReopens() async throws {
        let dir = try TemporaryDirectory.make(prefix: "herald-store")
        let path = dir + "/herald.sqlite"
        let token: DeviceToken
        do {
            let store = try SQLiteStore(path: path)
            token = try await registered(store)
            _ = try await store.accept([notification(token, "kept")], policy: .default, environment: .development, nowMilliseconds: now)
        }
        let reopened = try SQLiteStore(path: path)
        #expect(try await reopened.registration(of: token)?.bundleID == "com.a")
        #expect(try await reopened.storedNotifications(for: token, policy: .default, nowMilliseconds: now).count == 1)
    }
}
