import Foundation
import HeraldCore
import HeraldStore
import HeraldStorePostgres
import HeraldStoreSQLite
import Logging
import HeraldTesting
import Crypto
import Testing

/// The same semantics from every store.
@Suite("Stores")
struct StoreTests {
    enum Kind: String, CaseIterable, CustomTestStringConvertible {
        case memory, sqlite, postgres
        var testDescription: String { rawValue }
        /// The stores this run can test: PostgreSQL when `HERALD_TEST_POSTGRES_URL` names a server
        /// (scripts/test.sh starts one; see `PostgreSQLTestServer`).
        static var available: [Kind] { PostgreSQLTestServer.url == nil ? [.memory, .sqlite] : allCases }
        func make() async throws -> any GatewayStore {
            switch self {
            case .memory: return InMemoryStore()
            case .sqlite:
                let dir = try TemporaryDirectory.make(prefix: "herald-store")
                return try SQLiteStore(path: dir + "/herald.sqlite")
            case .postgres:
                return try await PostgresStore.connect(PostgresURL(try PostgreSQLTestServer.freshDatabase()), logger: Logger(label: "test"))
            }
        }
    }

    let now: Int64 = 1_795_262_400_000

    func notification(_ token: DeviceToken, _ text: String, collapse: String? = nil, expiration: Expiration = .unspecified, bundle: String = "com.a") -> StoredNotification {
        StoredNotification(
            id: .random(), token: token, bundleID: bundle, pushType: .alert, priority: .immediate,
            expiration: expiration, collapseID: collapse.flatMap(CollapseID.init), payload: Array(text.utf8),
            receivedAtMilliseconds: now)
    }

    func registered(_ store: any GatewayStore, environment: PushEnvironment = .development) async throws -> DeviceToken {
        let token = DeviceToken.random()
        try await store.registerToken(TokenRegistration(token: token, scope: TokenScope(bundleID: "com.a"), environment: environment, createdAtMilliseconds: now))
        return token
    }

    @Test("keys and team topics; a topic belongs to one team", arguments: Kind.available)
    func keysAndTopics(kind: Kind) async throws {
        let store = try await kind.make()
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

    @Test("admission: unknown, other environment, other topic, unregistered, expired", arguments: Kind.available)
    func admission(kind: Kind) async throws {
        let store = try await kind.make()
        let token = try await registered(store)
        let production = try await registered(store, environment: .production)
        let outcomes = try await store.accept([
            notification(DeviceToken.random(), "unknown"),
            notification(production, "prod"),
            notification(token, "other", bundle: "com.b"),
            notification(token, "zero", expiration: .immediately),
            notification(token, "ok"),
        ], policy: .default, environment: .development, nowMilliseconds: now)
        #expect(outcomes.prefix(3) == [
            .rejected(.unknownToken), .rejected(.unknownToken),
            .rejected(.notForThisScope),
        ])
        #expect(outcomes[3].isStored && outcomes[4].isStored, "apns-expiration 0 is recorded (for the receipt) and handed to a connected device")
        let past = try await store.accept(
            [notification(token, "past", expiration: .at(secondsSince1970: now / 1000 - 1))],
            policy: .default, environment: .development, nowMilliseconds: now)
        #expect(past == [.discarded])
        #expect(try await store.unregisterToken(token, atMilliseconds: now + 5))
        #expect(try await store.unregisterToken(token, atMilliseconds: now + 9), "unregistering twice is harmless")
        #expect(try await store.storedNotificationCount() == 0, "an unregistered token's notifications are dropped")
        let gone = try await store.accept([notification(token, "late")], policy: .default, environment: .development, nowMilliseconds: now)
        #expect(gone == [.rejected(.unregistered(atMilliseconds: now + 5))])
        #expect(try await store.unregisterToken(DeviceToken.random(), atMilliseconds: now) == false)
        await #expect(throws: StoreError.self) {
            try await store.registerToken(TokenRegistration(token: production, scope: TokenScope(bundleID: "com.a"), environment: .production, createdAtMilliseconds: now))
        }
    }

    @Test("store-and-forward: newest per app, deeper queues, collapse ids, expiry", arguments: Kind.available)
    func storeAndForward(kind: Kind) async throws {
        let store = try await kind.make()
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
        #expect(try await reopened.registration(of: token)?.scope == TokenScope(bundleID: "com.a"))
        #expect(try await reopened.storedNotifications(for: token, policy: .default, nowMilliseconds: now).count == 1)
    }

    @Test("the SQLite store follows another process's commits: its held index and registration cache")
    func sqliteSeesOtherProcesses() async throws {
        let dir = try TemporaryDirectory.make(prefix: "herald-store")
        let path = dir + "/herald.sqlite"
        let gateway = try SQLiteStore(path: path)
        let token = try await registered(gateway)
        let cli = try SQLiteStore(path: path)  // opened before the push: its index knows nothing held
        let first = notification(token, "first")
        let outcomes = try await gateway.accept([first], policy: .default, environment: .development, nowMilliseconds: now)
        guard case .stored = outcomes.first else {
            Issue.record("not stored: \(outcomes)")
            return
        }
        #expect(try await cli.unregisterToken(token, atMilliseconds: now + 1))
        #expect(try await gateway.receipts(of: first.id).first?.events.map(\.status) == [.accepted, .stored, .dropped])
        #expect(try await gateway.storedNotifications(for: token, policy: .default, nowMilliseconds: now + 2).isEmpty)
        let late = try await gateway.accept([notification(token, "late")], policy: .default, environment: .development, nowMilliseconds: now + 2)
        guard case .rejected(let refusal) = late.first else {
            Issue.record("a push to the revoked token was not rejected: \(late)")
            return
        }
        #expect(refusal.isGone)
    }

    // MARK: devices, delivery, feedback, receipts

    @Test("devices enroll by key; tokens per device and app; reinstall gives a new token", arguments: Kind.available)
    func deviceTokens(kind: Kind) async throws {
        let store = try await kind.make()
        let key = Array(P256.Signing.PrivateKey().publicKey.rawRepresentation)
        #expect(try await store.deviceConnected(id: "dev1", publicKey: key, atMilliseconds: now))
        #expect(try await store.deviceConnected(id: "dev1", publicKey: key, atMilliseconds: now + 1) == false)
        await #expect(throws: StoreError.self) {
            _ = try await store.deviceConnected(id: "dev1", publicKey: Array(repeating: 7, count: 64), atMilliseconds: now + 5)
        }
        #expect(try await store.device(id: "dev1")?.lastSeenAtMilliseconds == now + 1, "another key's connect changes nothing")
        func issue(_ bundle: String) async throws -> DeviceToken {
            try await store.issueToken(TokenRegistration(
                token: .random(), scope: TokenScope(stored: bundle), environment: .development, deviceID: "dev1", createdAtMilliseconds: now), maximumActivePerDevice: 2).token
        }
        let first = try await issue("com.a")
        #expect(try await issue("com.a") == first, "registering again returns the same token")
        let other = try await issue("com.b")
        #expect(other != first)
        #expect(try await store.unregisterToken(first, atMilliseconds: now + 10))
        let second = try await issue("com.a")
        #expect(second != first, "after unregistering, a new token (a reinstall)")
        #expect(try await store.activeToken(deviceID: "dev1", scope: TokenScope(bundleID: "com.a"), environment: .development)?.token == second)
        // Two active tokens (com.a, com.b) is the most this device may have: a third app is refused,
        // the ones it has still answer, and unregistering one makes room.
        await #expect { _ = try await issue("com.c") } throws: { ($0 as? StoreError)?.code == .tooManyTokens }
        #expect(try await issue("com.b") == other)
        #expect(try await store.unregisterToken(other, atMilliseconds: now + 20))
        #expect(try await issue("com.c") != other)
    }

    func deviceToken(_ store: any GatewayStore, device: String = "dev1", bundle: String = "com.a", token: DeviceToken = .random()) async throws -> DeviceToken {
        _ = try await store.deviceConnected(id: device, publicKey: Array(repeating: 1, count: 64), atMilliseconds: now)
        return try await store.issueToken(TokenRegistration(
            token: token, scope: TokenScope(stored: bundle), environment: .development, deviceID: device, createdAtMilliseconds: now), maximumActivePerDevice: 256).token
    }

    @Test("delivery: pending in order, acks, receipts with every status", arguments: Kind.available)
    func deliveryAndReceipts(kind: Kind) async throws {
        let store = try await kind.make()
        let a = try await deviceToken(store, bundle: "com.a")
        let b = try await deviceToken(store, bundle: "com.b")
        let deep = StorePolicy(maximumPerApp: 2)
        let n1 = notification(a, "1"), n2 = notification(b, "2", bundle: "com.b"), n3 = notification(a, "3"), n4 = notification(a, "4")
        let zero = notification(b, "zero", expiration: .immediately, bundle: "com.b")
        let outcomes = try await store.accept([n1, n2, n3, n4, zero], policy: deep, environment: .development, nowMilliseconds: now)
        guard case .stored(let seq1, let device?, _) = outcomes[0], case .stored(let seq2, _, _) = outcomes[1] else {
            Issue.record("not stored: \(outcomes)")
            return
        }
        #expect(device == "dev1")
        var pending = try await store.pendingDeliveries(forDevice: "dev1", nowMilliseconds: now + 1)
        #expect(pending.map(\.notification.id) == [n2.id, n3.id, n4.id], "n1 replaced (two per app); zero never waits")
        #expect(try await store.receipts(of: n1.id).first?.events.map(\.status) == [.accepted, .stored, .replaced])

        try await store.record([.acked(seq: seq2, sentAtMilliseconds: now + 2, ackedAtMilliseconds: now + 3)])
        pending = try await store.pendingDeliveries(forDevice: "dev1", nowMilliseconds: now + 4)
        #expect(pending.map(\.notification.id) == [n3.id, n4.id])
        let receipt = try #require(try await store.receipts(of: n2.id).first)
        #expect(receipt.events == [
            .init(status: .accepted, atMilliseconds: now), .init(status: .stored, atMilliseconds: now),
            .init(status: .delivered, atMilliseconds: now + 2), .init(status: .acked, atMilliseconds: now + 3),
        ])
        #expect(receipt.token == b && receipt.bundleID == "com.b")

        // Sent but not acked: still pending, and not replaced by newer ones.
        try await store.record([.sent(seq: pending[0].seq, atMilliseconds: now + 5)])
        _ = try await store.accept([notification(a, "5"), notification(a, "6")], policy: deep, environment: .development, nowMilliseconds: now + 6)
        pending = try await store.pendingDeliveries(forDevice: "dev1", nowMilliseconds: now + 7)
        #expect(pending.map { String(decoding: $0.notification.payload, as: UTF8.self) } == ["3", "5", "6"])

        // The sweep: apns-expiration 0 left undelivered is dropped; past storage time is expired.
        #expect(try await store.sweep(nowMilliseconds: now + 8, retainFinishedUntil: 0) == 0)
        #expect(try await store.receipts(of: zero.id).first?.events.map(\.status) == [.accepted, .dropped])
        let expired = try await store.sweep(nowMilliseconds: now + deep.maximumStorageMilliseconds + 10, retainFinishedUntil: 0)
        #expect(expired == 3)
        #expect(try await store.receipts(of: n3.id).first?.events.map(\.status) == [.accepted, .stored, .delivered, .expired])
        #expect(try await store.storedNotificationCount() == 0)
        // Finished records are deleted after the retention time.
        _ = try await store.sweep(nowMilliseconds: now + deep.maximumStorageMilliseconds + 20, retainFinishedUntil: now + deep.maximumStorageMilliseconds + 11)
        #expect(try await store.receipts(of: n2.id).isEmpty)
        _ = seq1
    }

    @Test("Apple's policy (one waits per app): the newest replaces what waits unsent, not what was sent, nor a token sharing its first bytes", arguments: Kind.available)
    func oneWaitsPerApp(kind: Kind) async throws {
        let store = try await kind.make()
        // Two tokens alike in their first eight bytes (SQLite's held index shares one list for them).
        let prefix = Array(DeviceToken.random().bytes.prefix(8))
        let a = try await deviceToken(store, device: "dev1", token: try #require(DeviceToken(bytes: prefix + Array(repeating: 1, count: 24))))
        let b = try await deviceToken(store, device: "dev2", token: try #require(DeviceToken(bytes: prefix + Array(repeating: 2, count: 24))))
        let n1 = notification(a, "1"), n2 = notification(b, "2")
        _ = try await store.accept([n1, n2], policy: .default, environment: .development, nowMilliseconds: now)
        _ = try await store.accept([notification(a, "3")], policy: .default, environment: .development, nowMilliseconds: now + 1)
        func waiting(_ device: String, at time: Int64) async throws -> [String] {
            try await store.pendingDeliveries(forDevice: device, nowMilliseconds: time).map { String(decoding: $0.notification.payload, as: UTF8.self) }
        }
        #expect(try await waiting("dev1", at: now + 2) == ["3"])
        #expect(try await waiting("dev2", at: now + 2) == ["2"], "the other token's notification is not replaced")
        #expect(try await store.receipts(of: n1.id).first?.events.map(\.status) == [.accepted, .stored, .replaced])
        // Sent, not acked: it stays (at least once), and the newest waits beside it.
        let sent = try #require(try await store.pendingDeliveries(forDevice: "dev1", nowMilliseconds: now + 3).first)
        try await store.record([.sent(seq: sent.seq, atMilliseconds: now + 3)])
        _ = try await store.accept([notification(a, "4")], policy: .default, environment: .development, nowMilliseconds: now + 4)
        #expect(try await waiting("dev1", at: now + 5) == ["3", "4"])
        // Acked: gone from the index's view; the next one replaces only "4".
        try await store.record([.acked(seq: sent.seq, sentAtMilliseconds: now + 3, ackedAtMilliseconds: now + 6)])
        _ = try await store.accept([notification(a, "5"), notification(b, "6")], policy: .default, environment: .development, nowMilliseconds: now + 7)
        #expect(try await waiting("dev1", at: now + 8) == ["5"])
        #expect(try await waiting("dev2", at: now + 8) == ["6"])
    }

    @Test("feedback: unregistered tokens and inactive devices, read and cleared", arguments: Kind.available)
    func feedback(kind: Kind) async throws {
        let store = try await kind.make()
        let gone = try await deviceToken(store, device: "dev1")
        let idle = try await deviceToken(store, device: "dev2")
        let day: Int64 = 86_400_000
        let other = try await deviceToken(store, device: "dev3", bundle: "com.b")
        _ = try await store.deviceConnected(id: "dev1", publicKey: Array(repeating: 1, count: 64), atMilliseconds: now + 40 * day)
        #expect(try await store.unregisterToken(gone, atMilliseconds: now + 40 * day))
        let first = try await store.takeFeedback(bundleID: "com.a", environment: .development, inactiveBefore: now + 10 * day, inactivityMilliseconds: 30 * day)
        #expect(first == [FeedbackEntry(token: gone, atMilliseconds: now + 40 * day), FeedbackEntry(token: idle, atMilliseconds: now + 30 * day)])
        let second = try await store.takeFeedback(bundleID: "com.a", environment: .development, inactiveBefore: now + 10 * day, inactivityMilliseconds: 30 * day)
        #expect(second.isEmpty, "read and cleared")
        // The idle device comes back, then goes idle again: reported again.
        _ = try await store.deviceConnected(id: "dev2", publicKey: Array(repeating: 1, count: 64), atMilliseconds: now + 50 * day)
        let third = try await store.takeFeedback(bundleID: "com.a", environment: .development, inactiveBefore: now + 90 * day, inactivityMilliseconds: 30 * day)
        #expect(third == [FeedbackEntry(token: idle, atMilliseconds: now + 80 * day)])
        #expect(try await store.takeFeedback(bundleID: "com.b", environment: .production, inactiveBefore: now + 90 * day, inactivityMilliseconds: 30 * day).isEmpty)
        _ = other
    }

    @Test("inspection: teams with keys, revocation, devices, tokens and held notifications paged, feedback read without clearing", arguments: Kind.available)
    func inspection(kind: Kind) async throws {
        let store = try await kind.make()
        let key = P256.Signing.PrivateKey().publicKey
        try await store.registerKey(ProviderKey(keyID: "KEY0000001", teamID: "TEAM000001", publicKey: key), topics: ["com.b", "com.a"], atMilliseconds: now)
        try await store.registerKey(ProviderKey(keyID: "KEY0000002", teamID: "TEAM000002", publicKey: key, environment: .production), topics: [], atMilliseconds: now + 1)
        #expect(try await store.teams() == [
            TeamRecord(teamID: "TEAM000001", topics: ["com.a", "com.b"], keys: [
                KeyRecord(keyID: "KEY0000001", teamID: "TEAM000001", environment: nil, createdAtMilliseconds: now, revokedAtMilliseconds: nil)]),
            TeamRecord(teamID: "TEAM000002", topics: [], keys: [
                KeyRecord(keyID: "KEY0000002", teamID: "TEAM000002", environment: .production, createdAtMilliseconds: now + 1, revokedAtMilliseconds: nil)]),
        ])

        // Revocation: the key is no longer found; revoking again keeps the first time.
        #expect(try await store.revokeKey(id: "KEY0000001", atMilliseconds: now + 5)?.revokedAtMilliseconds == now + 5)
        #expect(try await store.revokeKey(id: "KEY0000001", atMilliseconds: now + 9)?.revokedAtMilliseconds == now + 5)
        #expect(try await store.revokeKey(id: "NOSUCHKEY0", atMilliseconds: now) == nil)
        #expect(try await store.key(id: "KEY0000001") == nil)
        #expect(try await store.key(id: "KEY0000002") != nil)
        #expect(try await store.teams().first?.keys.first?.revokedAtMilliseconds == now + 5)
        await #expect(throws: StoreError.self, "a revoked key's id is not reused") {
            try await store.registerKey(ProviderKey(keyID: "KEY0000001", teamID: "TEAM000001", publicKey: key), topics: [], atMilliseconds: now)
        }

        // Devices and their tokens.
        for device in ["dev-b", "dev-a", "dev-c"] {
            _ = try await store.deviceConnected(id: device, publicKey: Array(repeating: 1, count: 64), atMilliseconds: now)
        }
        _ = try await store.deviceConnected(id: "dev-a", publicKey: Array(repeating: 1, count: 64), atMilliseconds: now + 7)
        var issued: [DeviceToken] = []
        for bundle in ["com.a", "com.b"] {
            let t = try await store.issueToken(
                TokenRegistration(token: .random(), scope: TokenScope(stored: bundle), environment: .development, deviceID: "dev-a", createdAtMilliseconds: now),
                maximumActivePerDevice: 10)
            issued.append(t.token)
        }
        let loose = try await registered(store)
        #expect(try await store.unregisterToken(issued[1], atMilliseconds: now + 3))
        let firstPage = try await store.devices(after: nil, limit: 2)
        #expect(firstPage.map(\.id) == ["dev-a", "dev-b"])
        #expect(firstPage[0] == DeviceSummary(id: "dev-a", enrolledAtMilliseconds: now, lastSeenAtMilliseconds: now + 7, activeTokens: 1))
        #expect(try await store.devices(after: "dev-b", limit: 2).map(\.id) == ["dev-c"])

        let all = try await store.tokens(TokenFilter(), after: nil, limit: 10)
        #expect(Set(all.map(\.token)) == Set(issued + [loose]))
        #expect(all.map(\.token.bytes) == all.map(\.token.bytes).sorted { $0.lexicographicallyPrecedes($1) }, "in byte order")
        let paged = try await store.tokens(TokenFilter(), after: nil, limit: 1) + store.tokens(TokenFilter(), after: all[0].token, limit: 5)
        #expect(paged.map(\.token) == all.map(\.token))
        #expect(try await store.tokens(TokenFilter(deviceID: "dev-a", activeOnly: true), after: nil, limit: 10).map(\.token) == [issued[0]])
        #expect(Set(try await store.tokens(TokenFilter(bundleID: "com.a"), after: nil, limit: 10).map(\.token)) == [issued[0], loose])
        #expect(try await store.tokens(TokenFilter(bundleID: "com.b"), after: nil, limit: 10).first?.unregisteredAtMilliseconds == now + 3)

        // Held notifications: by token, device and topic, in order, paged; delivered ones are not held.
        let policy = StorePolicy(maximumPerApp: 100, maximumStorageMilliseconds: 86_400_000)
        let outcomes = try await store.accept(
            [notification(issued[0], "one"), notification(loose, "two"), notification(issued[0], "three")],
            policy: policy, environment: .development, nowMilliseconds: now)
        let seqs = outcomes.compactMap { outcome -> Int64? in if case .stored(let seq, _, _) = outcome { seq } else { nil } }
        #expect(seqs.count == 3)
        let held = try await store.heldNotifications(HeldFilter(), after: nil, limit: 10)
        #expect(held.map { String(decoding: $0.notification.payload, as: UTF8.self) } == ["one", "two", "three"])
        #expect(held.first?.discardAtMilliseconds == now + 86_400_000)
        #expect(try await store.heldNotifications(HeldFilter(deviceID: "dev-a"), after: nil, limit: 10).map(\.seq) == [seqs[0], seqs[2]])
        #expect(try await store.heldNotifications(HeldFilter(token: loose), after: nil, limit: 10).map(\.seq) == [seqs[1]])
        #expect(try await store.heldNotifications(HeldFilter(bundleID: "com.b"), after: nil, limit: 10).isEmpty)
        #expect(try await store.heldNotifications(HeldFilter(), after: seqs[0], limit: 1).map(\.seq) == [seqs[1]])
        try await store.record([.acked(seq: seqs[0], sentAtMilliseconds: now + 1, ackedAtMilliseconds: now + 2), .sent(seq: seqs[2], atMilliseconds: now + 4)])
        let after = try await store.heldNotifications(HeldFilter(deviceID: "dev-a"), after: nil, limit: 10)
        #expect(after.map(\.seq) == [seqs[2]] && after.first?.sentAtMilliseconds == now + 4)

        // Feedback: shown as often as asked, until read.
        let pending = try await store.pendingFeedback(bundleID: "com.b", environment: .development)
        #expect(pending == [FeedbackEntry(token: issued[1], atMilliseconds: now + 3)])
        #expect(try await store.pendingFeedback(bundleID: "com.b", environment: .development) == pending)
        #expect(try await store.pendingFeedback(bundleID: "com.b", environment: .production).isEmpty)
        _ = try await store.takeFeedback(bundleID: "com.b", environment: .development, inactiveBefore: 0, inactivityMilliseconds: 0)
        #expect(try await store.pendingFeedback(bundleID: "com.b", environment: .development).isEmpty)
    }
}
