import Crypto
import Foundation
import HeraldCore
import HeraldStore
@testable import HeraldStorePostgres
import HeraldTesting
import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import Synchronization
import Testing

/// What only the clustered store does: migrations shared by nodes starting together, leases,
/// presence, hints between nodes and the sweep's query. Against a real PostgreSQL.
@Suite("PostgreSQL cluster store", .enabled(if: PostgreSQLTestServer.url != nil || PostgreSQLTestServer.isRequired))
struct PostgresClusterStoreTests {
    let now: Int64 = 1_795_262_400_000
    let logger = Logger(label: "test")

    func database() throws -> PostgresURL { try PostgresURL(try PostgreSQLTestServer.freshDatabase()) }

    /// A fresh store with device d1 enrolled and its token for com.a.
    func storeWithDevice() async throws -> (PostgresStore, DeviceToken) {
        let store = try await PostgresStore.connect(try database(), logger: logger)
        _ = try await store.deviceConnected(id: "d1", publicKey: Array(repeating: 1, count: 64), atMilliseconds: now)
        let token = try await store.issueToken(
            TokenRegistration(token: .random(), scope: TokenScope(bundleID: "com.a"), environment: .development, deviceID: "d1", createdAtMilliseconds: now),
            maximumActivePerDevice: 10).token
        return (store, token)
    }

    @Test("a hint's payload: only sequence numbers (negative: a broadcast's key) are read from it; anything else is skipped, never a trap")
    func hostileHintPayloads() {
        #expect(PostgresStore.seqs(inPayload: "1,2,x,99999999999999999999,-5,,0,3, 4,+7") == [1, 2, -5, 3, 7])
        #expect(PostgresStore.seqs(inPayload: "-9223372036854775808,9223372036854775807") == [Int64.max], "no key whose negation overflows")
        #expect(PostgresStore.seqs(inPayload: "").isEmpty)
        #expect(PostgresStore.seqs(inPayload: String(repeating: ",", count: 10_000)).isEmpty)
        let chunks = PostgresStore.payloads((1...5_000).map { Int64.max - $0 })
        #expect(chunks.allSatisfy { $0.utf8.count <= PostgresStore.hintPayloadLimit } && chunks.count > 1)
        #expect(chunks.flatMap(PostgresStore.seqs(inPayload:)) == (1...5_000).map { Int64.max - $0 })
    }

    @Test("nodes starting together migrate once")
    func concurrentMigrations() async throws {
        let url = try database()
        let stores = try await withThrowingTaskGroup(of: PostgresStore.self) { group in
            for _ in 0..<4 { group.addTask { try await PostgresStore.connect(url, logger: logger) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(stores.count == 4)
        try await stores[0].registerKey(
            ProviderKey(keyID: "KEY0000001", teamID: "T1", publicKey: P256.Signing.PrivateKey().publicKey), topics: ["com.a"], atMilliseconds: now)
        #expect(try await stores[3].topics(ofTeam: "T1") == ["com.a"])
        for store in stores { await store.close() }
    }

    @Test("leases: live nodes, expired ones reaped with their devices' presence")
    func leases() async throws {
        let store = try await PostgresStore.connect(try database(), logger: logger)
        defer { Task { await store.close() } }
        #expect(try await store.renewLease(node: "a", startedAtMilliseconds: now, untilMilliseconds: now + 10_000, nowMilliseconds: now)
            == LeaseRenewal(continued: false, reaped: [], liveNodes: 1))
        #expect(try await store.renewLease(node: "b", startedAtMilliseconds: now, untilMilliseconds: now + 1_000, nowMilliseconds: now)
            == LeaseRenewal(continued: false, reaped: [], liveNodes: 2))
        _ = try await store.claimPresence(deviceID: "d1", node: "b", connection: 1, atMilliseconds: now)
        _ = try await store.claimPresence(deviceID: "d2", node: "a", connection: 2, atMilliseconds: now)
        #expect(try await store.liveNodes(nowMilliseconds: now + 500).map(\.nodeID) == ["a", "b"])
        #expect(try await store.liveNodes(nowMilliseconds: now + 2_000).map(\.nodeID) == ["a"])
        // a's heartbeat at now + 2 s reaps b, and counts itself alone.
        #expect(try await store.renewLease(node: "a", startedAtMilliseconds: now, untilMilliseconds: now + 12_000, nowMilliseconds: now + 2_000)
            == LeaseRenewal(continued: true, reaped: ["b"], liveNodes: 1))
        #expect(try await store.presence(deviceIDs: ["d1", "d2"]) == ["d2": "a"], "a dead node's devices are not present anywhere")
        try await store.endLease(node: "a")
        #expect(try await store.liveNodes(nowMilliseconds: now).isEmpty)
    }

    /// Runs `body` (within 2 s) while every loop of NIO's shared group is held, as by a
    /// fan-out's writes and the acks after it; its result, or what stopped it.
    func withSharedLoopsHeld<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async -> Result<T, any Error> {
        let loops = Array(MultiThreadedEventLoopGroup.singleton.makeIterator())
        let release = DispatchSemaphore(value: 0)
        let held = DispatchGroup()
        for loop in loops {
            held.enter()
            loop.execute {
                held.leave()
                release.wait()
            }
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in held.notify(queue: .global()) { continuation.resume() } }
        let result: Result<T, any Error>
        do { result = .success(try await withDeadline(.seconds(2), body)) } catch { result = .failure(error) }
        for _ in loops { release.signal() }
        return result
    }

    @Test("the lease lane has an event loop of its own: a renewal is answered while every loop of NIO's shared group is busy (a broadcast's fan-out)")
    func leaseLaneOwnLoop() async throws {
        let store = try await PostgresStore.connect(try database(), logger: logger)
        defer { Task { await store.close() } }
        // The lane's connection is made first: what is measured is an answer, not a connect.
        _ = try await store.renewLease(node: "a", startedAtMilliseconds: now, untilMilliseconds: now + 10_000, nowMilliseconds: now)
        let now = self.now
        let renewal = await withSharedLoopsHeld {
            try await store.renewLease(node: "a", startedAtMilliseconds: now, untilMilliseconds: now + 11_000, nowMilliseconds: now + 1_000)
        }
        #expect(try renewal.get() == LeaseRenewal(continued: true, reaped: [], liveNodes: 1))
    }

    @Test("the main pool has event loops of its own too: a push is committed while every loop of NIO's shared group is busy")
    func mainPoolOwnLoops() async throws {
        let (store, token) = try await storeWithDevice()
        defer { Task { await store.close() } }
        let now = self.now
        let push = { @Sendable (id: NotificationID) in
            StoredNotification(
                id: id, token: token, bundleID: "com.a", pushType: .alert, priority: .immediate, expiration: .unspecified,
                collapseID: nil, payload: Array("{}".utf8), receivedAtMilliseconds: now)
        }
        // The pool's connection is made first.
        _ = try await store.accept([push(.random())], policy: .default, environment: .development, nowMilliseconds: now)
        let accepted = await withSharedLoopsHeld {
            try await store.accept([push(.random())], policy: .default, environment: .development, nowMilliseconds: now + 1)
        }
        let outcome = try accepted.get().first
        guard case .stored? = outcome else {
            Issue.record("not stored: \(String(describing: outcome))")
            return
        }
    }

    @Test("every node's heartbeat at once, each seeing the others lapsed (after a failover): none fails or waits on another; a reaped node comes back")
    func simultaneousHeartbeats() async throws {
        let store = try await PostgresStore.connect(try database(), logger: logger)
        defer { Task { await store.close() } }
        let nodes = ["h1", "h2", "h3", "h4"]
        for round in 0..<5 {
            let base = now + Int64(round) * 100_000
            for node in nodes {
                try await store.renewLease(node: node, startedAtMilliseconds: now, untilMilliseconds: base + 1_000, nowMilliseconds: base)
                _ = try await store.claimPresence(deviceID: "d-\(node)", node: node, connection: 1, atMilliseconds: base)
            }
            let renewals = try await withThrowingTaskGroup(of: (String, LeaseRenewal).self) { group in
                for node in nodes {
                    group.addTask {
                        (node, try await store.renewLease(
                            node: node, startedAtMilliseconds: now, untilMilliseconds: base + 60_000, nowMilliseconds: base + 5_000))
                    }
                }
                return try await group.reduce(into: [String: LeaseRenewal]()) { $0[$1.0] = $1.1 }
            }
            let reaped = renewals.values.flatMap(\.reaped)
            #expect(Set(reaped).count == reaped.count, "a node is reaped once")
            for node in nodes {
                #expect(renewals[node]!.continued == !reaped.contains(node), "\(node): continued unless reaped")
                let present = try await store.presence(deviceIDs: ["d-\(node)"])
                #expect(present.isEmpty == reaped.contains(node), "\(node): its presence went with its record")
            }
            #expect(try await store.liveNodes(nowMilliseconds: base + 5_000).map(\.nodeID) == nodes)
        }
        for node in nodes { try await store.endLease(node: node) }
    }

    @Test("a renewal says whether the node's record survived; a reclaim after a reap never steals a device that moved")
    func healing() async throws {
        let store = try await PostgresStore.connect(try database(), logger: logger)
        defer { Task { await store.close() } }
        #expect(try await store.renewLease(node: "a", startedAtMilliseconds: now, untilMilliseconds: now + 1_000, nowMilliseconds: now)
            .continued == false, "first renewal")
        #expect(try await store.renewLease(node: "a", startedAtMilliseconds: now, untilMilliseconds: now + 1_000, nowMilliseconds: now)
            .continued == true)
        _ = try await store.claimPresence(deviceID: "d1", node: "a", connection: 1, atMilliseconds: now)
        _ = try await store.claimPresence(deviceID: "d2", node: "a", connection: 2, atMilliseconds: now)
        // a stalls past its lease; b's heartbeat reaps it with its presence; d2 reconnects to b meanwhile.
        #expect(try await store.renewLease(node: "b", startedAtMilliseconds: now, untilMilliseconds: now + 12_000, nowMilliseconds: now + 2_000)
            == LeaseRenewal(continued: false, reaped: ["a"], liveNodes: 1))
        _ = try await store.claimPresence(deviceID: "d2", node: "b", connection: 9, atMilliseconds: now + 2_100)
        #expect(try await store.renewLease(node: "a", startedAtMilliseconds: now, untilMilliseconds: now + 12_000, nowMilliseconds: now + 2_200)
            == LeaseRenewal(continued: false, reaped: [], liveNodes: 2), "reaped")
        // a still has both connections (its d2 one is stale): d1 is claimed again, d2 stays on b.
        let elsewhere = try await store.reclaimPresence(
            node: "a", devices: [.init(deviceID: "d1", connection: 1), .init(deviceID: "d2", connection: 2)], atMilliseconds: now + 2_200)
        #expect(elsewhere == ["d2"])
        #expect(try await store.presence(deviceIDs: ["d1", "d2"]) == ["d1": "a", "d2": "b"])
        // A reclaim on the node that holds the row takes the newer connection.
        #expect(try await store.reclaimPresence(node: "a", devices: [.init(deviceID: "d1", connection: 5)], atMilliseconds: now + 2_300).isEmpty)
        try await store.releasePresence(deviceID: "d1", node: "a", connection: 1)
        #expect(try await store.presence(deviceIDs: ["d1"]) == ["d1": "a"], "the old connection's release leaves the new one")
        #expect(try await store.reclaimPresence(node: "a", devices: [], atMilliseconds: now).isEmpty)
    }

    @Test("presence: the newer connection wins; an old connection's release does not remove the new one")
    func presence() async throws {
        let store = try await PostgresStore.connect(try database(), logger: logger)
        defer { Task { await store.close() } }
        #expect(try await store.claimPresence(deviceID: "d1", node: "a", connection: 1, atMilliseconds: now) == nil)
        #expect(try await store.claimPresence(deviceID: "d1", node: "b", connection: 2, atMilliseconds: now + 1) == .init(node: "a", connection: 1))
        try await store.releasePresence(deviceID: "d1", node: "a", connection: 1)
        #expect(try await store.presence(deviceIDs: ["d1", "d2"]) == ["d1": "b"])
        try await store.releasePresence(deviceID: "d1", node: "b", connection: 2)
        #expect(try await store.presence(deviceIDs: ["d1"]).isEmpty)
    }

    @Test("presence: a claim that landed after its session closed is withdrawn, and the holder it replaced is back (issue 63, suspicion 3)")
    func lateClaimWithdrawn() async throws {
        let store = try await PostgresStore.connect(try database(), logger: logger)
        defer { Task { await store.close() } }
        // The interleaving forced: d1's session on a (connection 1) closed while its claim waited
        // behind a recovering pool; d1 connected to b (connection 7), whose claim landed first.
        #expect(try await store.claimPresence(deviceID: "d1", node: "b", connection: 7, atMilliseconds: now) == nil)
        let replaced = try await store.claimPresence(deviceID: "d1", node: "a", connection: 1, atMilliseconds: now - 500)
        #expect(replaced == .init(node: "b", connection: 7))
        #expect(try await store.presence(deviceIDs: ["d1"]) == ["d1": "a"], "the late claim overwrote b's: pushes would go to a")
        // a sees its session gone when the claim returns, and withdraws it.
        try await store.withdrawClaim(deviceID: "d1", node: "a", connection: 1, restoring: replaced)
        #expect(try await store.presence(deviceIDs: ["d1"]) == ["d1": "b"], "b holds the device again")
        // A withdrawal never touches a newer claim.
        _ = try await store.claimPresence(deviceID: "d2", node: "a", connection: 2, atMilliseconds: now)
        _ = try await store.claimPresence(deviceID: "d2", node: "a", connection: 3, atMilliseconds: now + 1)
        try await store.withdrawClaim(deviceID: "d2", node: "a", connection: 2, restoring: nil)
        #expect(try await store.presence(deviceIDs: ["d2"]) == ["d2": "a"])
        // A connection of this node's that still holds the device is restored too (the node
        // decides: its registry knows); one with nothing to restore goes away.
        try await store.withdrawClaim(deviceID: "d2", node: "a", connection: 3, restoring: .init(node: "a", connection: 2))
        #expect(try await store.presence(deviceIDs: ["d2"]) == ["d2": "a"])
        try await store.withdrawClaim(deviceID: "d2", node: "a", connection: 2, restoring: nil)
        #expect(try await store.presence(deviceIDs: ["d2"]).isEmpty)
    }

    @Test("accept reads where each device is in the statement that stores its pushes (routing needs no presence query)")
    func presenceAtAcceptance() async throws {
        let (store, token) = try await storeWithDevice()
        defer { Task { await store.close() } }
        func push() -> StoredNotification {
            StoredNotification(
                id: .random(), token: token, bundleID: "com.a", pushType: .alert, priority: .immediate,
                expiration: .unspecified, collapseID: nil, payload: Array("{}".utf8), receivedAtMilliseconds: now)
        }
        let nowhere = try await store.accept([push()], policy: .default, environment: .development, nowMilliseconds: now)
        guard case .stored(_, "d1", .nowhere)? = nowhere.first else { Issue.record("expected nowhere, got \(nowhere)"); return }
        #expect(try await store.claimPresence(deviceID: "d1", node: "b", connection: 1, atMilliseconds: now) == nil)
        let onB = try await store.accept([push()], policy: .default, environment: .development, nowMilliseconds: now)
        guard case .stored(_, "d1", .node("b"))? = onB.first else { Issue.record("expected node b, got \(onB)"); return }
    }

    @Test("hints reach the node they name, and the sweep finds what is held for a node's devices")
    func hintsAndSweep() async throws {
        let (store, token) = try await storeWithDevice()
        defer { Task { await store.close() } }
        let stored = try await store.accept(
            (0..<3).map { i in
                StoredNotification(
                    id: .random(), token: token, bundleID: "com.a", pushType: .alert, priority: .immediate,
                    expiration: .unspecified, collapseID: nil, payload: Array("\(i)".utf8), receivedAtMilliseconds: now)
            },
            policy: StorePolicy(maximumPerApp: 5), environment: .development, nowMilliseconds: now)
        let seqs = stored.compactMap { outcome -> Int64? in if case .stored(let seq, _, _) = outcome { seq } else { nil } }
        #expect(seqs.count == 3)
        #expect(try await store.heldDeliveries(seqs: seqs).map(\.seq) == seqs)

        // Hints: a listener on node "a" receives what is sent to "a" and nothing sent to "b".
        let received = Mutex<[[Int64]]>([])
        let listening = AsyncStream<Void>.makeStream()
        let listener = Task {
            try await store.receiveHints(node: "a", onListening: { listening.continuation.yield() }) { seqs in
                received.withLock { $0.append(seqs) }
            }
        }
        for await _ in listening.stream { break }
        let many = (1...3_000).map { Int64($0) * 1_000_000_007 }
        try await store.sendHints(["b": [1], "a": seqs])
        try await store.sendHints(["a": many])
        // The barrier: the last payload of the second send has arrived.
        while received.withLock({ $0.flatMap { $0 }.last }) != many.last { try await Task.sleep(for: .milliseconds(10)) }
        listener.cancel()
        let all = received.withLock { $0 }
        #expect(all.first == seqs)
        #expect(Array(all.dropFirst().joined()) == many, "a long hint arrives whole, in chunks under NOTIFY's limit")

        // The sweep: nothing while the device is not present; then its held notifications.
        #expect(try await store.heldDeliveries(onNode: "a", seqAbove: 0, seqAtMost: .max, nowMilliseconds: now, limit: 100).isEmpty)
        _ = try await store.claimPresence(deviceID: "d1", node: "a", connection: 7, atMilliseconds: now)
        #expect(try await store.newestSeq() == seqs.max())
        #expect(try await store.heldDeliveries(onNode: "a", seqAbove: 0, seqAtMost: .max, nowMilliseconds: now, limit: 100).map(\.seq) == seqs)
        #expect(try await store.heldDeliveries(onNode: "a", seqAbove: 0, seqAtMost: seqs[0], nowMilliseconds: now, limit: 100).map(\.seq) == [seqs[0]],
                "the sweep leaves what was stored since its previous look to the hint")
        #expect(try await store.heldDeliveries(onNode: "a", seqAbove: seqs[0], seqAtMost: .max, nowMilliseconds: now, limit: 100).map(\.seq)
                == Array(seqs.dropFirst()), "a windowed sweep reads only the sequence numbers above its floor")
        try await store.record(seqs.map { .acked(seq: $0, sentAtMilliseconds: now, ackedAtMilliseconds: now + 1) })
        #expect(try await store.heldDeliveries(onNode: "a", seqAbove: 0, seqAtMost: .max, nowMilliseconds: now, limit: 100).isEmpty)
    }

    @Test("store-and-forward replaces what waits for an offline device, never what goes to a connected one")
    func connectedDevicesKeepEveryPush() async throws {
        let (store, token) = try await storeWithDevice()
        defer { Task { await store.close() } }
        func push(_ text: String) -> StoredNotification {
            StoredNotification(
                id: .random(), token: token, bundleID: "com.a", pushType: .alert, priority: .immediate,
                expiration: .unspecified, collapseID: nil, payload: Array(text.utf8), receivedAtMilliseconds: now)
        }
        _ = try await store.accept([push("1"), push("2")], policy: .default, environment: .development, nowMilliseconds: now)
        #expect(try await store.storedNotifications(for: token, policy: .default, nowMilliseconds: now).map { String(decoding: $0.payload, as: UTF8.self) } == ["2"])
        // Connected to node b: the next pushes are hinted there and none replaces another.
        _ = try await store.claimPresence(deviceID: "d1", node: "b", connection: 1, atMilliseconds: now)
        _ = try await store.accept([push("3")], policy: .default, environment: .development, nowMilliseconds: now)
        _ = try await store.accept([push("4")], policy: .default, environment: .development, nowMilliseconds: now)
        #expect(try await store.storedNotifications(for: token, policy: .default, nowMilliseconds: now).map { String(decoding: $0.payload, as: UTF8.self) } == ["2", "3", "4"])
    }

    @Test("a pipelined transaction: statements queued back to back commit together; a failing one rolls back those before it and the connection goes on")
    func pipelinedTransactions() async throws {
        let store = try await PostgresStore.connect(try database(), logger: logger)
        defer { Task { await store.close() } }
        let logger = self.logger
        try await store.transaction { c in try await c.query("CREATE TABLE pipelined (v int PRIMARY KEY)", logger: logger) }
        func count() async throws -> Int64 {
            try await store.transaction { c in
                var n: Int64 = -1
                for try await value in try await c.query("SELECT count(*) FROM pipelined", logger: logger).decode(Int64.self) { n = value }
                return n
            }
        }
        for _ in 0..<8 {  // more than the pool's connections: each is reused after its rollback
            await #expect(throws: (any Error).self, "the duplicate key fails, and with it the transaction") {
                try await store.transaction(pipelined: { c in
                    let sent = ["INSERT INTO pipelined VALUES (1)", "INSERT INTO pipelined VALUES (2)", "INSERT INTO pipelined VALUES (1)"]
                        .map { PostgresStore.send(PostgresQuery(unsafeSQL: $0), on: c, logger: logger) }
                    return { for statement in sent { _ = try await statement.get() } }
                })
            }
        }
        #expect(try await count() == 0, "nothing before the failing statement was committed")
        await #expect(throws: (any Error).self, "an error thrown while statements are queued rolls them back") {
            let _: Int = try await store.transaction(pipelined: { c in
                _ = PostgresStore.send("INSERT INTO pipelined VALUES (3)", on: c, logger: logger)
                throw StoreError(.corrupt, "thrown by the body")
            })
        }
        #expect(try await count() == 0)
        for v in 0..<8 {
            try await store.transaction(relaxed: v % 2 == 0, pipelined: { c in
                let sent = [PostgresStore.send("INSERT INTO pipelined VALUES (\(2 * v))", on: c, logger: logger),
                            PostgresStore.send("INSERT INTO pipelined VALUES (\(2 * v + 1))", on: c, logger: logger)]
                return { for statement in sent { _ = try await statement.get() } }
            })
        }
        #expect(try await count() == 16, "every connection of the pool commits after its rollbacks")
    }

    @Test("a URL that is not a database's is refused with what is wrong")
    func urls() throws {
        #expect(throws: PostgresURLError.self) { try PostgresURL("postgres://localhost/db") }
        #expect(throws: PostgresURLError.self) { try PostgresURL("postgres://u@localhost") }
        #expect(throws: PostgresURLError.self) { try PostgresURL("postgres://u@localhost/db?sslmode=maybe") }
        let url = try PostgresURL("postgres://u:secret@db.example:6543/herald?sslmode=require")
        #expect(url.port == 6543 && url.database == "herald" && url.tls == .require)
        #expect(!url.description.contains("secret"))
    }

    @Test("PostgreSQL is there when the run requires it")
    func required() {
        #expect(!PostgreSQLTestServer.isRequired || PostgreSQLTestServer.url != nil, "HERALD_REQUIRE_POSTGRES=1 but HERALD_TEST_POSTGRES_URL is not set")
    }
}

/// The cluster sweep's share of broadcasts (issue 66), against a real PostgreSQL.
@Suite("PostgreSQL cluster store: broadcasts in the sweep", .enabled(if: PostgreSQLTestServer.url != nil || PostgreSQLTestServer.isRequired))
struct PostgresBroadcastSweepTests {
    let now: Int64 = 1_795_262_400_000

    @Test("a window sweep reads the broadcasts only (still their channel's newest); a full sweep, the node's subscribers that have not acked its newest")
    func sweepShare() async throws {
        let store = try await PostgresStore.connect(try PostgresURL(try PostgreSQLTestServer.freshDatabase()), logger: Logger(label: "test"))
        let channel = BroadcastChannelID("AAAAAAAAAAAAAAAAAAAAAA==")!
        var subscriptions: [String: DeviceToken] = [:]
        for device in ["d1", "d2", "d3"] {
            let token = DeviceToken.random()
            subscriptions[device] = token
            try await store.registerToken(TokenRegistration(
                token: token, scope: TokenScope(bundleID: "com.a", kind: .channel(channel.value)), environment: .development,
                deviceID: device, createdAtMilliseconds: now - 1))
        }
        _ = try await store.claimPresence(deviceID: "d1", node: "a", connection: 1, atMilliseconds: now)
        _ = try await store.claimPresence(deviceID: "d2", node: "a", connection: 2, atMilliseconds: now)
        _ = try await store.claimPresence(deviceID: "d3", node: "b", connection: 3, atMilliseconds: now)
        func broadcast(_ at: Int64) -> StoredBroadcast {
            StoredBroadcast(bundleID: "com.a", channel: channel, environment: .development, id: .random(), priority: .immediate,
                            expiration: .unspecified, payload: Array("{}".utf8), receivedAtMilliseconds: at)
        }
        let first = try await store.storeBroadcast(broadcast(now), policy: StorePolicy())
        let second = try await store.storeBroadcast(broadcast(now + 1), policy: StorePolicy())
        #expect(try await store.newestSeq() == second.seq, "the sweep's window covers broadcasts")
        #expect(try await store.broadcasts(seqAbove: 0, seqAtMost: second.seq, nowMilliseconds: now + 2).map(\.seq) == [second.seq],
                "only the channel's newest")
        #expect(try await store.broadcasts(seqAbove: second.seq, seqAtMost: second.seq + 10, nowMilliseconds: now + 2).isEmpty)
        _ = first

        try await store.record([.broadcastAcked(seq: second.seq, subscription: subscriptions["d2"]!, ackedAtMilliseconds: now + 3)])
        let full = try await store.heldDeliveries(onNode: "a", seqAbove: 0, seqAtMost: second.seq, nowMilliseconds: now + 4, limit: 100)
        #expect(full.map(\.deviceID) == ["d1"] && full.first?.broadcastSeq == second.seq,
                "node a's subscriber that has not acked; not d2 (acked), not d3 (on node b)")
        #expect(try await store.heldDeliveries(onNode: "a", seqAbove: first.seq, seqAtMost: second.seq, nowMilliseconds: now + 4, limit: 100).isEmpty,
                "a window sweep's broadcasts come from broadcasts(seqAbove:…), handed out by the node")
    }
}
