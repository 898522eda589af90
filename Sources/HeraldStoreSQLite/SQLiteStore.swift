import Crypto
import Foundation
import GRDB
import HeraldCore
import HeraldStore

/// The embedded store: one SQLite database (WAL) in the gateway's data directory.
///
/// `accept` runs a whole batch in one write transaction, so durability costs one commit per
/// batch rather than one per push. With ``Durability/full`` (the default) every commit is synced
/// to disk before the gateway answers 200, which survives a power loss; ``Durability/normal``
/// survives a crash of the process (kill -9) but not of the machine.
public final class SQLiteStore: HeraldStore {
    public enum Durability: String, Sendable, CaseIterable {
        case full
        case normal
    }

    private let pool: DatabasePool
    /// Registrations read by `accept`, so that a push does not pay a query for its token. Only
    /// touched inside write transactions (GRDB serializes them); emptied whenever another
    /// process has committed (`PRAGMA data_version` changed), e.g. `herald tokens revoke`.
    private let registrations = RegistrationCache()
    /// The database file.
    public let path: String

    /// WAL pages after which a commit checkpoints by itself (when no checkpointer keeps up).
    static let fallbackCheckpointPages = 10_000

    /// Opens (creating if needed) the database at `path` and runs its migrations.
    public init(path: String, durability: Durability = .full) throws {
        self.path = path
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = \(durability == .full ? "FULL" : "NORMAL")")
            // The writer checkpoints only as a fallback, when the log reaches ~40 MiB; normally a
            // `SQLiteCheckpointer` copies it into the database from its own connection, so that
            // commits (and the 200s waiting on them) never pay for a checkpoint.
            try db.execute(sql: "PRAGMA wal_autocheckpoint = \(Self.fallbackCheckpointPages)")
        }
        pool = try DatabasePool(path: path, configuration: configuration)
        try Self.migrator.migrate(pool)
    }

    /// The schema's versions, in order. Each runs once, at start-up.
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: keys, topics, tokens, notifications") { db in
            try db.execute(sql: """
                CREATE TABLE topics (
                    topic TEXT PRIMARY KEY NOT NULL,
                    team_id TEXT NOT NULL
                ) WITHOUT ROWID;
                CREATE INDEX topics_by_team ON topics(team_id);
                CREATE TABLE provider_keys (
                    key_id TEXT PRIMARY KEY NOT NULL,
                    team_id TEXT NOT NULL,
                    public_key BLOB NOT NULL,
                    environment TEXT,
                    created_at_ms INTEGER NOT NULL
                ) WITHOUT ROWID;
                CREATE TABLE device_tokens (
                    token BLOB PRIMARY KEY NOT NULL,
                    bundle_id TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    device_id TEXT,
                    created_at_ms INTEGER NOT NULL,
                    unregistered_at_ms INTEGER,
                    expired_at_ms INTEGER
                ) WITHOUT ROWID;
                CREATE TABLE notifications (
                    seq INTEGER PRIMARY KEY,
                    apns_id TEXT NOT NULL,
                    token BLOB NOT NULL,
                    bundle_id TEXT NOT NULL,
                    push_type TEXT NOT NULL,
                    priority INTEGER NOT NULL,
                    expiration INTEGER,
                    collapse_id TEXT,
                    payload BLOB NOT NULL,
                    received_at_ms INTEGER NOT NULL,
                    discard_at_ms INTEGER NOT NULL
                );
                CREATE UNIQUE INDEX notifications_by_token ON notifications(token, seq);
                """)
        }
        return migrator
    }

    // MARK: keys and topics

    public func registerKey(_ key: ProviderKey, topics: [String], atMilliseconds: Int64) async throws {
        try await pool.write { db in
            if try Bool.fetchOne(db, sql: "SELECT 1 FROM provider_keys WHERE key_id = ?", arguments: [key.keyID]) == true {
                throw StoreError(.keyExists, "key \(key.keyID) is already registered")
            }
            for topic in topics {
                if let owner = try String.fetchOne(db, sql: "SELECT team_id FROM topics WHERE topic = ?", arguments: [topic]),
                   owner != key.teamID {
                    throw StoreError(.topicOwnedByAnotherTeam, "topic \(topic) belongs to team \(owner), not \(key.teamID)")
                }
            }
            try db.execute(
                sql: "INSERT INTO provider_keys (key_id, team_id, public_key, environment, created_at_ms) VALUES (?, ?, ?, ?, ?)",
                arguments: [key.keyID, key.teamID, key.publicKey.x963Representation, key.environment?.rawValue, atMilliseconds])
            for topic in topics {
                try db.execute(sql: "INSERT OR IGNORE INTO topics (topic, team_id) VALUES (?, ?)", arguments: [topic, key.teamID])
            }
        }
    }

    public func key(id: String) async throws -> ProviderKey? {
        try await pool.read { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT * FROM provider_keys WHERE key_id = ?", arguments: [id]) else {
                return nil
            }
            let raw: Data = row["public_key"]
            guard let publicKey = try? P256.Signing.PublicKey(x963Representation: raw) else {
                throw StoreError(.corrupt, "the public key of \(id) in the database is not a P-256 key")
            }
            let environment: String? = row["environment"]
            return ProviderKey(
                keyID: row["key_id"], teamID: row["team_id"], publicKey: publicKey,
                environment: environment.flatMap(APNsEnvironment.init(rawValue:)))
        }
    }

    public func topics(ofTeam teamID: String) async throws -> Set<String> {
        try await pool.read { db in
            Set(try String.fetchAll(db, sql: "SELECT topic FROM topics WHERE team_id = ?", arguments: [teamID]))
        }
    }

    // MARK: tokens

    public func registerTokens(_ registrations: [TokenRegistration]) async throws {
        let cache = self.registrations
        try await pool.write { db in
            for registration in registrations { cache.remove(registration.token) }
            for registration in registrations {
                if try Bool.fetchOne(db, sql: "SELECT 1 FROM device_tokens WHERE token = ?", arguments: [Data(registration.token.bytes)]) == true {
                    throw StoreError(.tokenExists, "token \(registration.token) is already registered")
                }
                try db.cachedStatement(sql: """
                    INSERT INTO device_tokens (token, bundle_id, environment, device_id, created_at_ms, unregistered_at_ms, expired_at_ms)
                    VALUES (?, ?, ?, ?, ?, ?, ?)
                    """).execute(arguments: [
                        Data(registration.token.bytes), registration.bundleID, registration.environment.rawValue,
                        registration.deviceID, registration.createdAtMilliseconds,
                        registration.unregisteredAtMilliseconds, registration.expiredAtMilliseconds,
                    ])
            }
        }
    }

    public func unregisterToken(_ token: DeviceToken, atMilliseconds: Int64) async throws -> Bool {
        let cache = registrations
        return try await pool.write { db in
            cache.remove(token)
            let key = Data(token.bytes)
            guard try Bool.fetchOne(db, sql: "SELECT 1 FROM device_tokens WHERE token = ?", arguments: [key]) == true else {
                return false
            }
            try db.execute(
                sql: "UPDATE device_tokens SET unregistered_at_ms = ? WHERE token = ? AND unregistered_at_ms IS NULL",
                arguments: [atMilliseconds, key])
            try db.execute(sql: "DELETE FROM notifications WHERE token = ?", arguments: [key])
            return true
        }
    }

    public func registration(of token: DeviceToken) async throws -> TokenRegistration? {
        try await pool.read { db in try Self.registration(of: token, in: db) }
    }

    private static func registration(of token: DeviceToken, in db: Database) throws -> TokenRegistration? {
        let statement = try db.cachedStatement(sql: """
            SELECT bundle_id, environment, device_id, created_at_ms, unregistered_at_ms, expired_at_ms
            FROM device_tokens WHERE token = ?
            """)
        guard let row = try Row.fetchOne(statement, arguments: [Data(token.bytes)]) else { return nil }
        let environmentName: String = row[1]
        guard let environment = APNsEnvironment(rawValue: environmentName) else {
            throw StoreError(.corrupt, "token \(token) has an unknown environment \(environmentName)")
        }
        return TokenRegistration(
            token: token, bundleID: row[0], environment: environment, deviceID: row[2],
            createdAtMilliseconds: row[3], unregisteredAtMilliseconds: row[4], expiredAtMilliseconds: row[5])
    }

    // MARK: notifications

    public func accept(
        _ batch: [StoredNotification], policy: StorePolicy, environment: APNsEnvironment, nowMilliseconds: Int64
    ) async throws -> [SubmissionOutcome] {
        let cache = registrations
        return try await pool.write { db in
            let version = try Int.fetchOne(db.cachedStatement(sql: "PRAGMA data_version")) ?? 0
            cache.invalidate(ifVersionChangedTo: version)
            var outcomes = [SubmissionOutcome]()
            outcomes.reserveCapacity(batch.count)
            for notification in batch {
                var registration = cache.lookup(notification.token)
                if registration == nil {
                    registration = try Self.registration(of: notification.token, in: db)
                    if let registration { cache.insert(registration) }
                }
                let outcome = Admission.decide(
                    registration: registration, notification: notification,
                    environment: environment, nowMilliseconds: nowMilliseconds)
                if outcome == .stored { try Self.store(notification, policy: policy, in: db) }
                outcomes.append(outcome)
            }
            return outcomes
        }
    }

    private static func store(_ n: StoredNotification, policy: StorePolicy, in db: Database) throws {
        let token = Data(n.token.bytes)
        let apnsID = n.apnsID.description
        if policy.maximumPerApp == 1 {
            // Only the newest is kept: whatever the token held goes (same apns-id and collapse id included).
            try db.cachedStatement(sql: "DELETE FROM notifications WHERE token = ?").execute(arguments: [token])
        } else {
            // The same apns-id sent again to the same token (a provider's retry) replaces the first.
            try db.cachedStatement(sql: "DELETE FROM notifications WHERE token = ? AND apns_id = ?")
                .execute(arguments: [token, apnsID])
            if let collapse = n.collapseID {
                try db.cachedStatement(sql: "DELETE FROM notifications WHERE token = ? AND collapse_id = ?")
                    .execute(arguments: [token, collapse.value])
            }
        }
        try db.cachedStatement(sql: """
            INSERT INTO notifications
                (apns_id, token, bundle_id, push_type, priority, expiration, collapse_id, payload, received_at_ms, discard_at_ms)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """).execute(arguments: [
                apnsID, token, n.bundleID, n.pushType.rawValue, n.priority.rawValue, n.expiration.storedSeconds,
                n.collapseID?.value, Data(n.payload), n.receivedAtMilliseconds, n.discardAtMilliseconds(policy: policy),
            ])
        if policy.maximumPerApp > 1 {
            // Keep the newest `maximumPerApp`.
            try db.cachedStatement(sql: """
                DELETE FROM notifications WHERE token = ?1 AND seq <= (
                    SELECT seq FROM notifications WHERE token = ?1 ORDER BY seq DESC LIMIT 1 OFFSET ?2)
                """).execute(arguments: [token, policy.maximumPerApp])
        }
    }

    public func storedNotifications(for token: DeviceToken, policy: StorePolicy, nowMilliseconds: Int64) async throws -> [StoredNotification] {
        try await pool.read { db in
            let rows = try Row.fetchAll(
                db, sql: "SELECT * FROM notifications WHERE token = ? AND discard_at_ms > ? ORDER BY seq",
                arguments: [Data(token.bytes), nowMilliseconds])
            return try rows.map { row in
                let id: String = row["apns_id"]
                let type: String = row["push_type"]
                let priority: Int = row["priority"]
                let collapse: String? = row["collapse_id"]
                let payload: Data = row["payload"]
                guard let apnsID = APNsID(header: id), let prio = Priority(rawValue: priority) else {
                    throw StoreError(.corrupt, "notification \(id) has an invalid id or priority")
                }
                return StoredNotification(
                    apnsID: apnsID, token: token, bundleID: row["bundle_id"], pushType: PushType(rawValue: type),
                    priority: prio, expiration: Expiration(storedSeconds: row["expiration"]),
                    collapseID: collapse.flatMap(CollapseID.init), payload: Array(payload),
                    receivedAtMilliseconds: row["received_at_ms"])
            }
        }
    }

    public func storedNotificationCount() async throws -> Int {
        try await pool.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM notifications") ?? 0 }
    }
}

/// The registration cache of ``SQLiteStore``.
private final class RegistrationCache: @unchecked Sendable {
    /// Beyond this many entries the cache starts over, bounding its memory (~150 bytes an entry).
    static let capacity = 500_000
    private let lock = NSLock()
    private var entries: [DeviceToken: TokenRegistration] = [:]
    private var dataVersion: Int?

    func invalidate(ifVersionChangedTo version: Int) {
        lock.withLock {
            if dataVersion != version { entries.removeAll(keepingCapacity: true) }
            dataVersion = version
        }
    }

    func lookup(_ token: DeviceToken) -> TokenRegistration? { lock.withLock { entries[token] } }

    func insert(_ registration: TokenRegistration) {
        lock.withLock {
            if entries.count >= Self.capacity { entries.removeAll(keepingCapacity: true) }
            entries[registration.token] = registration
        }
    }

    func remove(_ token: DeviceToken) { _ = lock.withLock { entries.removeValue(forKey: token) } }
}
