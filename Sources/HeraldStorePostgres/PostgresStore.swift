import Crypto
import Foundation
import HeraldCore
import HeraldStore
import Logging
import NIOCore
import NIOPosix
import PostgresNIO

/// The clustered store: one PostgreSQL database that several gateway nodes share.
///
/// The same semantics as the embedded store (the store contract tests run against both), with
/// what a cluster needs besides: nodes and their leases, device presence and hints between
/// nodes (``ClusterStore``, `PostgresStore+Cluster.swift`).
///
/// Durability: `accept` writes a whole batch in one transaction (one multi-row insert), committed
/// with `synchronous_commit` on, so a 200 means the push is on the database's disk. Delivery
/// records (acks, sends, drops), presence and leases commit with `synchronous_commit = off`:
/// losing one of those in a database crash only causes a repeat.
///
/// Concurrency between nodes: accepting for a token locks its registration row (`FOR UPDATE`,
/// in token order), so store-and-forward replacement and unregistration are serialized per token
/// across nodes; everything else is one statement or one transaction.
public final class PostgresStore: GatewayStore, Sendable {
    /// The connection pools and the task running them. Replaced when they stop answering while
    /// the database answers (``recoverConnections()``).
    private struct Pool {
        /// Pushes, deliveries, registrations: everything but the cluster's own bookkeeping.
        var client: PostgresClient
        /// The node's lease, reaping and the health probe: a lane of their own (two
        /// connections on ``controlLoop``), so that a lease is never lost, nor a node reported
        /// down, because its data traffic fills the main pool or its event loops.
        var control: PostgresClient
        var runner: Task<Void, Never>
    }
    private let pool: Locked<Pool>
    /// The control lane's own event loop thread. On NIO's shared loops, the lease's answer
    /// waited behind everything else those loops had to do: in a broadcast to 100,000 devices on
    /// six nodes (`scripts/bench-scale.sh --nodes 6 100000`) two nodes' renewals went unanswered
    /// for 3.3 s while PostgreSQL ran them in under a second, and the nodes fenced themselves.
    private let controlLoop = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    /// The main pool's and the hint listener's own event loop threads, for the same reason: in
    /// the same runs an intake commit went past its 5 s bound (answered 503) while PostgreSQL
    /// logged no statement over 1 s, its answer read on a loop busy with a fan-out's writes.
    let dataLoops = MultiThreadedEventLoopGroup(numberOfThreads: 2)
    /// The pool queries go through now.
    var client: PostgresClient { pool.withLock { $0.client } }
    /// The pool of the cluster's bookkeeping and the health probe.
    var control: PostgresClient { pool.withLock { $0.control } }
    let logger: Logger
    private let clientConfiguration: PostgresClient.Configuration
    /// A recovery under way, and when the last one ended (one per 10 s at most).
    private let recovery = Locked<(running: Bool, endedAt: NIODeadline?)>((false, nil))
    /// Where the database is (without its password), for messages.
    public let url: PostgresURL
    let listenerConfiguration: PostgresConnection.Configuration

    /// Throws when TLS is asked for and no client context can be made (no system trust roots).
    private init(url: PostgresURL, logger: Logger) throws {
        self.url = url
        self.logger = logger
        let tls: PostgresClient.Configuration.TLS
        switch url.tls {
        case .disable: tls = .disable
        case .prefer: tls = .prefer(.makeClientConfiguration())
        case .require: tls = .require(.makeClientConfiguration())
        }
        let connectionTLS = try Self.connectionTLS(url)
        var configuration = PostgresClient.Configuration(
            host: url.host, port: url.port, username: url.user, password: url.password, database: url.database, tls: tls)
        configuration.options.maximumConnections = 16
        configuration.options.connectTimeout = .seconds(5)
        configuration.options.additionalStartupParameters = Self.sessionSettings
        clientConfiguration = configuration
        listenerConfiguration = Self.connectionConfiguration(url, tls: connectionTLS)
        let (started, signal) = AsyncStream<Void>.makeStream()
        pool = Locked(Self.makePool(configuration, controlLoop: controlLoop, dataLoops: dataLoops, logger: logger) { signal.finish() })
        self.started = started
    }

    /// TLS for a single connection (outside the pools) as the URL's `sslmode` asks. Throws when
    /// no client context can be made (no system trust roots).
    private static func connectionTLS(_ url: PostgresURL) throws -> PostgresConnection.Configuration.TLS {
        switch url.tls {
        case .disable: .disable
        case .prefer: try .prefer(.init(configuration: .makeClientConfiguration()))
        case .require: try .require(.init(configuration: .makeClientConfiguration()))
        }
    }

    /// A single connection's configuration (outside the pools), 5 s to connect.
    private static func connectionConfiguration(_ url: PostgresURL, tls: PostgresConnection.Configuration.TLS) -> PostgresConnection.Configuration {
        var configuration = PostgresConnection.Configuration(
            host: url.host, port: url.port, username: url.user, password: url.password, database: url.database, tls: tls)
        configuration.options.connectTimeout = .seconds(5)
        return configuration
    }

    /// The schema version a database is at, as `herald doctor` reports it.
    public struct SchemaVersion: Sendable, Equatable {
        /// The newest migration applied; nil when Herald never ran on this database.
        public var applied: Int?
        /// The newest migration this build of Herald knows.
        public var current: Int
    }

    /// Reads the schema version of the database at `url` over one connection of its own,
    /// changing nothing (``connect(_:logger:)`` migrates; this only looks). Throws when the
    /// database cannot be reached or refuses the login, in the server's words.
    public static func schemaVersion(_ url: PostgresURL, logger: Logger) async throws -> SchemaVersion {
        let tls: PostgresConnection.Configuration.TLS
        do { tls = try connectionTLS(url) } catch {
            throw PostgresStoreError("cannot make a TLS context for \(url): \(error)")
        }
        let current = migrations.last?.version ?? 0
        do {
            let connection = try await PostgresConnection.connect(
                on: MultiThreadedEventLoopGroup.singleton.any(), configuration: connectionConfiguration(url, tls: tls), id: 0, logger: logger
            ).get()
            defer { Task { try? await connection.close() } }
            var exists = false
            for found in try await Self.query(on: connection, 
                "SELECT to_regclass('herald_migrations') IS NOT NULL", logger: logger).decode(Bool.self) { exists = found }
            guard exists else { return SchemaVersion(applied: nil, current: current) }
            var applied: Int?
            for version in try await Self.query(on: connection, 
                "SELECT max(version) FROM herald_migrations", logger: logger).decode(Int?.self) { applied = version }
            return SchemaVersion(applied: applied, current: current)
        } catch {
            throw PostgresStoreError("cannot use the database \(url): \(explain(error))")
        }
    }

    /// What every session of Herald's sets at its start.
    ///
    /// - `synchronous_commit = on`: every commit waits for the disk unless a transaction says
    ///   otherwise (`relaxed`), even on a server configured with it off: a 200 means durable.
    /// - `idle_in_transaction_session_timeout`: a transaction whose client went silent (a node
    ///   frozen, partitioned or killed mid-transaction) is ended by the server after 15 s, so the
    ///   rows it locked (a registration, a node's lease) cannot block the other nodes for longer.
    /// - `lock_timeout`: no statement waits more than 10 s for a lock; it fails and is retried
    ///   (a push answered 503) instead of holding a pooled connection indefinitely.
    static let sessionSettings: [(String, String)] = [
        ("synchronous_commit", "on"),
        ("idle_in_transaction_session_timeout", "15000"),
        ("lock_timeout", "10000"),
    ]

    /// What the control pool's sessions set: the same, but their commits do not wait for the
    /// disk. That pool carries leases only (and the health probe's `SELECT 1`), which a database
    /// crash may lose without harm: a renewal is made again at the next heartbeat, and an ended
    /// lease runs out by itself. A lease renewal is then one statement, not a transaction.
    static let controlSessionSettings: [(String, String)] = sessionSettings.map {
        $0.0 == "synchronous_commit" ? ($0.0, "off") : $0
    }

    /// Two pools on one configuration, each on its own event loops, and the task running both
    /// (`started` runs first).
    private static func makePool(
        _ configuration: PostgresClient.Configuration, controlLoop: any EventLoopGroup, dataLoops: any EventLoopGroup, logger: Logger,
        started: @escaping @Sendable () -> Void = {}
    ) -> Pool {
        var controlConfiguration = configuration
        controlConfiguration.options.maximumConnections = 2
        controlConfiguration.options.additionalStartupParameters = controlSessionSettings
        let client = PostgresClient(configuration: configuration, eventLoopGroup: dataLoops, backgroundLogger: logger)
        let control = PostgresClient(configuration: controlConfiguration, eventLoopGroup: controlLoop, backgroundLogger: logger)
        let runner = Task { [client, control] in
            started()
            await withDiscardingTaskGroup { group in
                group.addTask { await client.run() }
                group.addTask { await control.run() }
            }
        }
        return Pool(client: client, control: control, runner: runner)
    }

    /// Finishes when the client's run loop has started (a query before it only logs a warning).
    private let started: AsyncStream<Void>

    /// Connects to the database at `url` and brings its schema up to date. Several nodes may
    /// start together: the migrations run under an advisory lock, once.
    public static func connect(_ url: PostgresURL, logger: Logger) async throws -> PostgresStore {
        let store = try PostgresStore(url: url, logger: logger)
        for await _ in store.started {}
        // One direct connection first: an unreachable server or a refused login is reported at
        // once and plainly, where the pool would retry for a minute before giving up.
        do {
            try await store.probeDirectly(query: false)
        } catch {
            await store.close()
            throw PostgresStoreError("cannot use the database \(url): \(Self.explain(error))")
        }
        do {
            try await store.migrate()
        } catch {
            await store.close()
            throw PostgresStoreError("cannot use the database \(url): \(Self.explain(error))")
        }
        return store
    }

    /// What went wrong, in the server's words where it gave some (PSQLError hides them from
    /// `description` so that they do not leak into logs by accident; an operator needs them here).
    static func explain(_ error: any Error) -> String {
        if let error = error as? PSQLError {
            if let message = error.serverInfo?[.message] {
                return message + (error.serverInfo?[.sqlState].map { " (SQLSTATE \($0))" } ?? "")
            }
            if let underlying = error.underlying { return "\(underlying)" }
            return "\(error.code)"
        }
        if let error = error as? PostgresTransactionError {
            return (error.closureError ?? error.commitError ?? error.beginError ?? error.rollbackError).map(explain) ?? "\(error)"
        }
        return "\(error)"
    }

    /// Closes the store's connections.
    public func close() async {
        let runner = pool.withLock { $0.runner }
        runner.cancel()
        await runner.value
        try? await controlLoop.shutdownGracefully()
        try? await dataLoops.shutdownGracefully()
    }

    /// Opens a connection of its own (outside the pool, 5 s to connect), optionally runs
    /// `SELECT 1` on it, and closes it: whether the database itself answers.
    private func probeDirectly(query: Bool) async throws {
        var configuration = listenerConfiguration
        configuration.options.connectTimeout = .seconds(5)
        let connection = try await PostgresConnection.connect(
            on: MultiThreadedEventLoopGroup.singleton.any(), configuration: configuration, id: 0, logger: logger
        ).get()
        defer { Task { try? await connection.close() } }
        if query { for _ in try await Self.query(on: connection, "SELECT 1", logger: logger) {} }
    }

    /// Replaces the connection pool when it has stopped answering while the database answers a
    /// connection of its own: seen after outages behind a proxy that accepts connections and
    /// drops them at once (connections being made never finish and fill the pool). A pool that
    /// answers within 5 s, or a database that does not, is left alone.
    public func recoverConnections() async {
        let mayRun = recovery.withLock { state -> Bool in
            if state.running { return false }
            if let ended = state.endedAt, NIODeadline.now() - ended < .seconds(10) { return false }
            state.running = true
            return true
        }
        guard mayRun else { return }
        defer { recovery.withLock { $0 = (false, .now()) } }
        let (client, control) = pool.withLock { ($0.client, $0.control) }, logger = self.logger
        do {
            try await withDeadline(.seconds(5)) {
                for _ in try await self.query(on: client, "SELECT 1", logger: logger) {}
                for _ in try await self.query(on: control, "SELECT 1", logger: logger) {}
            }
            logger.notice("the connection pools answer: left as they are")
            return
        } catch {}
        do {
            try await withDeadline(.seconds(10)) { try await self.probeDirectly(query: true) }
        } catch {
            // The database itself does not answer: the pool reconnects when it does.
            logger.notice("the database does not answer a connection of its own either", metadata: ["error": "\(Self.explain(error))"])
            return
        }
        let fresh = Self.makePool(clientConfiguration, controlLoop: controlLoop, dataLoops: dataLoops, logger: logger)
        let old = pool.withLock { pool in
            defer { pool = fresh }
            return pool
        }
        // What waits on the old pool fails now, and is retried by its caller on the new one.
        old.runner.cancel()
        logger.warning("the database answers but a connection pool did not for 5 s: the pools were replaced", metadata: ["database": "\(url)"])
    }

    // MARK: schema

    /// The schema's versions, in order; each runs once, in its own transaction.
    static let migrations: [(version: Int, name: String, sql: [String])] = [
        (1, "keys, topics, tokens, devices, notifications, feedback, nodes, presence", [
            "CREATE TABLE topics (topic TEXT PRIMARY KEY, team_id TEXT NOT NULL)",
            "CREATE INDEX topics_by_team ON topics (team_id)",
            """
            CREATE TABLE provider_keys (
                key_id TEXT PRIMARY KEY, team_id TEXT NOT NULL, public_key BYTEA NOT NULL, environment TEXT,
                created_at_ms BIGINT NOT NULL, revoked_at_ms BIGINT)
            """,
            """
            CREATE TABLE device_tokens (
                token BYTEA PRIMARY KEY, bundle_id TEXT NOT NULL, environment TEXT NOT NULL, device_id TEXT,
                created_at_ms BIGINT NOT NULL, unregistered_at_ms BIGINT, expired_at_ms BIGINT,
                inactivity_reported BOOLEAN NOT NULL DEFAULT false)
            """,
            "CREATE INDEX device_tokens_by_device ON device_tokens (device_id, bundle_id) WHERE device_id IS NOT NULL",
            "CREATE INDEX device_tokens_by_app ON device_tokens (bundle_id, environment)",
            """
            CREATE TABLE notifications (
                seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, apns_id TEXT NOT NULL, token BYTEA NOT NULL,
                bundle_id TEXT NOT NULL, push_type TEXT NOT NULL, priority SMALLINT NOT NULL, expiration BIGINT,
                collapse_id TEXT, payload BYTEA NOT NULL, received_at_ms BIGINT NOT NULL, discard_at_ms BIGINT NOT NULL,
                state SMALLINT NOT NULL DEFAULT 0, sent_at_ms BIGINT, acked_at_ms BIGINT, ended_at_ms BIGINT)
            """,
            "CREATE INDEX held_notifications_by_token ON notifications (token, seq) WHERE state = 0",
            "CREATE INDEX held_notifications_by_discard ON notifications (discard_at_ms) WHERE state = 0",
            "CREATE INDEX finished_notifications ON notifications (ended_at_ms) WHERE state <> 0",
            "CREATE INDEX notifications_by_apns_id ON notifications (apns_id)",
            """
            CREATE TABLE devices (
                device_id TEXT PRIMARY KEY, public_key BYTEA NOT NULL, enrolled_at_ms BIGINT NOT NULL,
                last_seen_at_ms BIGINT NOT NULL)
            """,
            """
            CREATE TABLE feedback (
                id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, bundle_id TEXT NOT NULL, environment TEXT NOT NULL,
                token BYTEA NOT NULL, at_ms BIGINT NOT NULL)
            """,
            "CREATE INDEX feedback_by_app ON feedback (bundle_id, environment, id)",
            "CREATE TABLE nodes (node_id TEXT PRIMARY KEY, started_at_ms BIGINT NOT NULL, lease_until_ms BIGINT NOT NULL)",
            """
            CREATE TABLE presence (
                device_id TEXT PRIMARY KEY, node_id TEXT NOT NULL, connection_id BIGINT NOT NULL, since_ms BIGINT NOT NULL)
            """,
            "CREATE INDEX presence_by_node ON presence (node_id)",
        ]),
        (2, "broadcast channels", [
            """
            CREATE TABLE channels (
                bundle_id TEXT NOT NULL, environment TEXT NOT NULL, channel_id TEXT NOT NULL,
                storage_policy SMALLINT NOT NULL, created_at_ms BIGINT NOT NULL,
                PRIMARY KEY (bundle_id, environment, channel_id))
            """,
        ]),
        // One row per broadcast (issue 66); copies stored per subscription by earlier versions
        // stay notifications, delivered as before.
        (3, "broadcasts stored once", PostgresStore.broadcastsSchema),
        (4, "acks of broadcasts updated in place", PostgresStore.broadcastAcksInPlace),
    ]

    /// An arbitrary constant: the advisory lock every node takes to migrate.
    private static let migrationLock: Int64 = 0x4845_5241_4C44  // "HERALD"

    private func migrate() async throws {
        try await transaction { connection in
            // Another node may be migrating (a long index build): wait for it however long.
            try await Self.query(on: connection, "SET LOCAL lock_timeout = 0", logger: logger)
            try await Self.query(on: connection, "SELECT pg_advisory_xact_lock(\(Self.migrationLock))", logger: logger)
            try await Self.query(on: connection, """
                CREATE TABLE IF NOT EXISTS herald_migrations (
                    version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())
                """, logger: logger)
            var applied = Set<Int>()
            for version in try await Self.query(on: connection, "SELECT version FROM herald_migrations", logger: logger).decode(Int.self) {
                applied.insert(version)
            }
            if let newest = applied.max(), newest > Self.migrations.last?.version ?? 0 {
                throw PostgresStoreError("the database's schema is version \(newest), newer than this herald knows (\(Self.migrations.last?.version ?? 0)): upgrade herald")
            }
            for migration in Self.migrations where !applied.contains(migration.version) {
                for statement in migration.sql {
                    try await Self.query(on: connection, PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await Self.query(on: connection, 
                    "INSERT INTO herald_migrations (version, name) VALUES (\(migration.version), \(migration.name))", logger: logger)
                logger.info("database migrated", metadata: ["version": "\(migration.version)", "name": "\(migration.name)"])
            }
        }
    }

    // MARK: helpers

    static func bytes(_ buffer: ByteBuffer) -> [UInt8] { Array(buffer.readableBytesView) }
    static func buffer(_ bytes: some Collection<UInt8>) -> ByteBuffer { ByteBuffer(bytes: bytes) }

    static func token(_ buffer: ByteBuffer) throws -> DeviceToken {
        guard let token = DeviceToken(bytes: bytes(buffer)) else { throw StoreError(.corrupt, "an invalid token is stored") }
        return token
    }

    static func environment(_ name: String) throws -> PushEnvironment {
        guard let environment = PushEnvironment(rawValue: name) else { throw StoreError(.corrupt, "an unknown environment \(name) is stored") }
        return environment
    }
}

public struct PostgresStoreError: Error, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}
