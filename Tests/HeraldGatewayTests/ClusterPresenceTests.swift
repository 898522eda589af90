import HeraldCore
@testable import HeraldGateway
import HeraldStore
import HeraldStorePostgres
import HeraldTesting
import Logging
import NIOCore
import NIOPosix
import Synchronization
import Testing

/// A node's presence claims against a real PostgreSQL, with the interleavings that lost pushes
/// forced: a claim that lands after its session closed (issue 63).
@Suite("Cluster presence", .enabled(if: PostgreSQLTestServer.url != nil || PostgreSQLTestServer.isRequired))
struct ClusterPresenceTests {
    let now: Int64 = 1_795_262_400_000
    let logger = Logger(label: "test")

    struct FixedClock: WallClock {
        let milliseconds: Int64
        func nowMilliseconds() -> Int64 { milliseconds }
    }

    /// A device's session as the registry sees it: it records what it is offered.
    final class RecordingSession: DeliverySession {
        var offered: [Int64] = []
        func offer(_ delivery: Delivery) { offered.append(delivery.seq) }
        func flushIfNeeded() {}
        func close(with code: DeviceErrorCode, _ message: String, reconnectWithinMilliseconds: Int64?) {}
    }

    /// A fresh store with device d1 and one push held for it; a node "a" on it.
    func setUp(
        hooks: ClusterTestHooks = .init(), configuration: ClusterConfiguration = ClusterConfiguration(nodeID: "a"), logger: Logger? = nil
    ) async throws -> (PostgresStore, ClusterNode, DeviceRegistry, held: Int64) {
        let logger = logger ?? self.logger
        let store = try await PostgresStore.connect(try PostgresURL(try PostgreSQLTestServer.freshDatabase()), logger: logger)
        _ = try await store.deviceConnected(id: "d1", publicKey: Array(repeating: 1, count: 64), atMilliseconds: now)
        let token = try await store.issueToken(
            TokenRegistration(token: .random(), scope: TokenScope(bundleID: "com.a"), environment: .development, deviceID: "d1", createdAtMilliseconds: now),
            maximumActivePerDevice: 10).token
        let stored = try await store.accept([
            StoredNotification(
                id: .random(), token: token, bundleID: "com.a", pushType: .alert, priority: .immediate,
                expiration: .unspecified, collapseID: nil, payload: Array("{}".utf8), receivedAtMilliseconds: now),
        ], policy: .default, environment: .development, nowMilliseconds: now)
        guard case .stored(let seq, _, _)? = stored.first else { throw TestFailure("not stored: \(stored)") }
        let registry = DeviceRegistry()
        let node = ClusterNode(
            configuration: configuration, store: store, registry: registry,
            recorder: DeliveryRecorder(store: store, logger: logger), limiter: TokenRateLimiter(configuration: nil),
            clock: FixedClock(milliseconds: now), health: GatewayHealth(), storeTimeout: .seconds(5), metrics: GatewayMetrics(),
            logger: logger, hooks: hooks)
        return (store, node, registry, seq)
    }

    struct TestFailure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    @Test("a claim that lands after the device moved to another node is withdrawn, and that node is handed what is held at once")
    func lateClaimHandsOverToTheOtherNode() async throws {
        let (store, node, _, held) = try await setUp()
        defer { Task { await store.close() } }
        let hinted = Mutex<[Int64]>([])
        let listening = AsyncStream<Void>.makeStream()
        let listener = Task {
            try await store.receiveHints(node: "b", onListening: { listening.continuation.yield() }) { seqs in
                hinted.withLock { $0 += seqs }
            }
        }
        defer { listener.cancel() }
        for await _ in listening.stream { break }
        // The interleaving forced: d1's session on a (connection 1) closed while its claim was
        // held by a partition; d1 connected to b (connection 7), whose claim landed first. The
        // push was stored while presence named a (its hint went to a, which had no session), and
        // its sequence number is older than b's next sweep window.
        _ = try await store.claimPresence(deviceID: "d1", node: "b", connection: 7, atMilliseconds: now)
        try await node.claim(deviceID: "d1", connection: 1)
        #expect(try await store.presence(deviceIDs: ["d1"]) == ["d1": "b"], "b holds the device again")
        // The barrier: the hint arrives (bounded: without the hand-over it never does).
        let deadline = ContinuousClock.now + .seconds(10)
        while hinted.withLock({ $0 }).isEmpty, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(hinted.withLock { $0 } == [held], "b is told of what was held for d1 while the late claim stood")
    }

    /// Registers a recording session for d1 with `connection`, on an event loop as a real one is.
    func register(connection: Int64, in registry: DeviceRegistry) async throws -> (EventLoop, NIOLoopBound<RecordingSession>) {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        // What the session was offered is read on its loop.
        let session = try await loop.submit { NIOLoopBound(RecordingSession(), eventLoop: loop) }.get()
        let entry = try await loop.submit {
            DeviceRegistry.Session(
                id: ObjectIdentifier(session.value), connection: connection,
                handler: NIOLoopBound<any DeliverySession>(session.value, eventLoop: loop))
        }.get()
        registry.register(deviceID: "d1", session: entry)
        return (loop, session)
    }

    @Test("a session's release waits for its claim: a claim that committed over the newer connection's row and was released before it returned no longer leaves the device without presence")
    func releaseWaitsForTheClaim() async throws {
        let committed = AsyncStream<Void>.makeStream()
        let gate = AsyncStream<Void>.makeStream()
        let (store, node, registry, held) = try await setUp(hooks: ClusterTestHooks(claimCommitted: {
            committed.continuation.yield()
            for await _ in gate.stream { break }
        }))
        defer { Task { await store.close() } }
        // d1 reconnected here (connection 2, claimed); its older connection's claim (1) was
        // queued behind a lock and commits now, over connection 2's row, and the older session
        // has closed: its release comes while the claim has not returned.
        let (loop, session) = try await register(connection: 2, in: registry)
        _ = try await store.claimPresence(deviceID: "d1", node: "a", connection: 2, atMilliseconds: now)
        let claim = Task { try await node.claim(deviceID: "d1", connection: 1) }
        for await _ in committed.stream { break }
        #expect(try await store.presence(deviceIDs: ["d1"]) == ["d1": "a"])
        let released = Locked(false)
        let release = Task {
            await node.releaseNow(deviceID: "d1", connection: 1)
            released.withLock { $0 = true }
        }
        // The barrier: the release waits for the claim (or, without the wait, has run).
        let key = ClaimsInFlight.Key(deviceID: "d1", connection: 1)
        let deadline = ContinuousClock.now + .seconds(10)
        while node.claims.waiters(for: key) == 0, !released.withLock({ $0 }), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        gate.continuation.yield()
        try await claim.value
        await release.value
        #expect(try await store.presence(deviceIDs: ["d1"]) == ["d1": "a"], "connection 2 keeps the device's presence")
        #expect(try await loop.submit { session.value.offered }.get() == [held])
    }

    @Test("a late claim of an older connection restores this node's newer one, which is offered what is held")
    func lateClaimRestoresTheNewerConnectionHere() async throws {
        let (store, node, registry, held) = try await setUp()
        defer { Task { await store.close() } }
        let (loop, session) = try await register(connection: 3, in: registry)
        // d1 reconnected to a (connection 3), whose claim landed before the older connection's (2).
        _ = try await store.claimPresence(deviceID: "d1", node: "a", connection: 3, atMilliseconds: now)
        try await node.claim(deviceID: "d1", connection: 2)
        #expect(try await store.presence(deviceIDs: ["d1"]) == ["d1": "a"],
                "the device keeps its presence (it was once released, and its pushes had no route)")
        // The registry hands deliveries over with one task on the loop: this one runs after it.
        #expect(try await loop.submit { session.value.offered }.get() == [held])
    }

    @Test("a node stopped while it renews its lease logs no error: the renewal cut short is the stop, not a failure")
    func stopDuringRenewalIsQuiet() async throws {
        let renewing = AsyncStream<Void>.makeStream()
        var configuration = ClusterConfiguration(nodeID: "a")
        configuration.heartbeatMilliseconds = 20
        let (logger, capture) = LogCapture.logger(level: .warning)
        let (store, node, _, _) = try await setUp(
            hooks: ClusterTestHooks(renewalStarted: {
                renewing.continuation.yield()
                // The renewal does not finish: the stop has to cut it short.
                try? await Task.sleep(for: .seconds(60))
            }),
            configuration: configuration, logger: logger)
        defer { Task { await store.close() } }
        let running = Task { await node.run() }
        for await _ in renewing.stream { break }
        running.cancel()
        await running.value
        #expect(capture.logged.filter { $0.level >= .error }.isEmpty, "\(capture.logged)")
    }
}
