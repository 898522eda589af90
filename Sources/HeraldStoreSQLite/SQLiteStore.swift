import Crypto
import Foundation
import GRDB
import HeraldCore
import HeraldStore
import Synchronization

/// The embedded store: one SQLite database (WAL) in the gateway's data directory.
///
/// `accept` runs a whole batch in one write transaction, so durability costs one commit per
/// batch rather than one per push. With ``Durability/full`` (the default) every commit is synced
/// to disk before the gateway answers 200, which survives a power loss; ``Durability/normal``
/// survives a crash of the process (kill -9) but not of the machine.
public final class SQLiteStore: GatewayStore {
    public enum Durability: String, Sendable, CaseIterable {
        case full
        case normal
    }

    let pool: DatabasePool
    /// Registrations read by `accept`, so that a push does not pay a query for its token. Only
    /// touched inside write transactions (GRDB serializes them); emptied whenever another
    /// process has committed (`PRAGMA data_version` changed), e.g. `herald tokens revoke`.
    let registrations = RegistrationCache()
    /// The held notifications of each token (see ``HeldIndex``).
    let held = HeldIndex()
    /// The writer connection's `PRAGMA data_version` when the caches above were last known to be
    /// current: it changes only when another process commits.
    private let seenDataVersion = Mutex<Int?>(nil)
    /// The database file.
    public let path: String

    /// WAL pages after which a commit checkpoints by itself (when no checkpointer keeps up).
    static let fallbackCheckpointPages = 10_000

    /// Opens (creating if needed) the database at `path` and runs its migrations.
    let durability: Durability

    public init(path: String, durability: Durability = .full) throws {
        try Self.checkIsHerald(path: path)
        self.path = path
        self.durability = durability
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
        try pool.write { db in try noticeOtherProcesses(db) }
    }

    /// Brings the caches up to date with what other processes committed (e.g. `herald tokens
    /// revoke`): run first in every write transaction that relies on them. Opening the store, and
    /// every commit by another process, costs one pass over the held notifications.
    func noticeOtherProcesses(_ db: Database) throws {
        let version = try Int.fetchOne(db.cachedStatement(sql: "PRAGMA data_version")) ?? 0
        guard seenDataVersion.withLock({ $0 }) != version else { return }
        registrations.removeAll()
        try held.rebuild(db)
        seenDataVersion.withLock { $0 = version }
    }

    /// Runs a write transaction that changes the held index; if it fails, the index (which may
    /// have forgotten notifications that the rollback keeps) is rebuilt before the error is thrown.
    func writeKeepingIndex<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        do {
            return try await pool.write(body)
        } catch {
            try? await pool.write { db in try self.held.rebuild(db) }
            throw error
        }
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
        migrator.registerMigration("v2: devices, delivery states, receipts, feedback") { db in
            // Notifications are no longer deleted when delivered: a record stays (for its receipt)
            // with a state, and only held ones (state 0) are indexed by token.
            try db.execute(sql: """
                ALTER TABLE notifications ADD COLUMN state INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE notifications ADD COLUMN sent_at_ms INTEGER;
                ALTER TABLE notifications ADD COLUMN acked_at_ms INTEGER;
                ALTER TABLE notifications ADD COLUMN ended_at_ms INTEGER;
                DROP INDEX notifications_by_token;
                CREATE INDEX held_notifications_by_token ON notifications(token, seq) WHERE state = 0;
                CREATE INDEX held_notifications_by_discard ON notifications(discard_at_ms) WHERE state = 0;
                CREATE INDEX finished_notifications ON notifications(ended_at_ms) WHERE state <> 0;
                CREATE INDEX notifications_by_apns_id ON notifications(apns_id);
                CREATE TABLE devices (
                    device_id TEXT PRIMARY KEY NOT NULL,
                    public_key BLOB NOT NULL,
                    enrolled_at_ms INTEGER NOT NULL,
                    last_seen_at_ms INTEGER NOT NULL
                ) WITHOUT ROWID;
                ALTER TABLE device_tokens ADD COLUMN inactivity_reported INTEGER NOT NULL DEFAULT 0;
                CREATE INDEX device_tokens_by_device ON device_tokens(device_id, bundle_id) WHERE device_id IS NOT NULL;
                CREATE INDEX device_tokens_by_app ON device_tokens(bundle_id, environment);
                CREATE TABLE feedback (
                    id INTEGER PRIMARY KEY,
                    bundle_id TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    token BLOB NOT NULL,
                    at_ms INTEGER NOT NULL
                );
                CREATE INDEX feedback_by_app ON feedback(bundle_id, environment, id);
                """)
        }
        migrator.registerMigration("v3: held notifications indexed in memory") { db in
            // Replaced by `HeldIndex`: a random leaf of this index was one page write per push.
            try db.execute(sql: "DROP INDEX held_notifications_by_token")
        }
        migrator.registerMigration("v4: revoked provider keys") { db in
            try db.execute(sql: "ALTER TABLE provider_keys ADD COLUMN revoked_at_ms INTEGER")
        }
        migrator.registerMigration("v5: broadcast channels") { db in
            try db.execute(sql: """
                CREATE TABLE channels (
                    bundle_id TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    channel_id TEXT NOT NULL,
                    storage_policy INTEGER NOT NULL,
                    created_at_ms INTEGER NOT NULL,
                    PRIMARY KEY (bundle_id, environment, channel_id)
                ) WITHOUT ROWID;
                """)
        }
        migrator.registerMigration("v6: broadcasts stored once") { db in
            // One row per broadcast (issue 66); a subscription keeps the newest it acked. Copies
            // stored per subscription by earlier versions stay notifications, delivered as before.
            try db.execute(sql: SQLiteStore.broadcastsSchema)
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
            guard let row = try Row.fetchOne(
                db, sql: "SELECT * FROM provider_keys WHERE key_id = ? AND revoked_at_ms IS NULL", arguments: [id]) else {
                return nil
            }
            let raw: Data = row["public_key"]
            guard let publicKey = try? P256.Signing.PublicKey(x963Representation: raw) else {
                throw StoreError(.corrupt, "the public key of \(id) in the database is not a P-256 key")
            }
            let environment: String? = row["environment"]
            return ProviderKey(
                keyID: row["key_id"], teamID: row["team_id"], publicKey: publicKey,
                environment: environment.flatMap(PushEnvironment.init(rawValue:)))
        }
    }

    public func topics(ofTeam teamID: String) async throws -> Set<String> {
        try await pool.read { db in
            Set(try String.fetchAll(db, sql: "SELECT topic FROM topics WHERE team_id = ?", arguments: [teamID]))
        }
    }

    // MARK: notifications

    public func accept(
        _ batch: [StoredNotification], policy: StorePolicy, environment: PushEnvironment, nowMilliseconds: Int64
    ) async throws -> [SubmissionOutcome] {
        let cache = registrations
        let held = self.held
        return try await writeKeepingIndex { db in
            try self.noticeOtherProcesses(db)
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
                switch outcome {
                case .rejected:
                    outcomes.append(outcome)
                case .discarded:
                    try Self.insert(notification, policy: policy, state: .expired, now: nowMilliseconds, in: db)
                    outcomes.append(outcome)
                case .stored(_, let deviceID, _):
                    if notification.expiration != .immediately {
                        try Self.makeRoom(for: notification, policy: policy, now: nowMilliseconds, held: held, in: db)
                    }
                    let seq = try Self.insert(notification, policy: policy, state: .held, now: nowMilliseconds, in: db)
                    held.add(seq, for: notification.token)
                    outcomes.append(.stored(seq: seq, deviceID: deviceID))
                }
            }
            return outcomes
        }
    }

    /// Store-and-forward replacement (see `InMemoryStore.makeRoom`): among what still waits for
    /// the token and is not known to have been sent, the same apns-id and the same collapse id are
    /// replaced, and only the newest `policy.maximumWaiting(for:)` stay. What waits is found through the held
    /// index and read by primary key; seqs the index had that are no longer held are pruned.
    private static func makeRoom(
        for n: StoredNotification, policy: StorePolicy, now: Int64, held: HeldIndex, in db: Database
    ) throws {
        let candidates = held.candidates(for: n.token)
        guard !candidates.isEmpty else { return }
        // A Web Push message's id is made by the port, never one that waits: without a Topic
        // only the bound replaces, and only once what may wait (the candidates, at least) reaches it.
        if n.pushType == .webpush && n.collapseID == nil && candidates.count < policy.maximumWaiting(for: .webpush) { return }
        let token = Data(n.token.bytes)
        if policy.maximumWaiting(for: n.pushType) == 1 { return try replaceEveryUnsent(candidates, of: n, token: token, now: now, held: held, in: db) }
        let read = try db.cachedStatement(sql: """
            SELECT token, apns_id, collapse_id, sent_at_ms IS NOT NULL FROM notifications WHERE seq = ? AND state = 0
            """)
        let apnsID = n.id.description
        var gone: [Int64] = []
        var waiting: [Int64] = []
        var replaced: [Int64] = []
        for seq in candidates {
            guard let row = try Row.fetchOne(read, arguments: [seq]) else {
                gone.append(seq)
                continue
            }
            guard (row[0] as Data) == token, !(row[3] as Bool) else { continue }
            let waitingID: String = row[1]
            let collapseID: String? = row[2]
            if waitingID == apnsID || (n.collapseID != nil && collapseID == n.collapseID?.value) {
                replaced.append(seq)
            } else {
                waiting.append(seq)
            }
        }
        // Keep the newest `maximumWaiting - 1` of what waits; the new one makes `maximumWaiting`.
        replaced += waiting.dropLast(policy.maximumWaiting(for: n.pushType) - 1)
        // OR FAIL: a statement that cannot abort half-way needs no statement journal (a copy of
        // every page it touches); any failure rolls the whole batch back anyway.
        let end = try db.cachedStatement(sql: "UPDATE OR FAIL notifications SET state = ?, ended_at_ms = ? WHERE seq = ?")
        for seq in replaced {
            try end.execute(arguments: [NotificationState.replaced.rawValue, now, seq])
        }
        held.remove(gone + replaced, for: n.token)
    }

    /// Apple's policy, one waiting per app: every candidate of the token that waits and was not
    /// sent is replaced, whatever its apns-id or collapse id, so one conditional `UPDATE` by
    /// primary key both decides and ends it (no read first: the replacement was 8.8 % of the
    /// provider port's profile). A candidate it did not end is another token's that shares the
    /// index key, one sent and waiting for its ack (both stay), or one no longer held (pruned).
    private static func replaceEveryUnsent(
        _ candidates: [Int64], of n: StoredNotification, token: Data, now: Int64, held: HeldIndex, in db: Database
    ) throws {
        let end = try db.cachedStatement(sql: """
            UPDATE OR FAIL notifications SET state = ?, ended_at_ms = ?
            WHERE seq = ? AND state = 0 AND token = ? AND sent_at_ms IS NULL
            """)
        var ended: [Int64] = []
        var kept: [Int64] = []
        for seq in candidates {
            try end.execute(arguments: [NotificationState.replaced.rawValue, now, seq, token])
            if db.changesCount > 0 { ended.append(seq) } else { kept.append(seq) }
        }
        if !kept.isEmpty {
            let stillHeld = try db.cachedStatement(sql: "SELECT 1 FROM notifications WHERE seq = ? AND state = 0")
            for seq in kept where try Row.fetchOne(stillHeld, arguments: [seq]) == nil { ended.append(seq) }
        }
        held.remove(ended, for: n.token)
    }

    @discardableResult
    private static func insert(
        _ n: StoredNotification, policy: StorePolicy, state: NotificationState, now: Int64, in db: Database
    ) throws -> Int64 {
        try db.cachedStatement(sql: """
            INSERT INTO notifications
                (apns_id, token, bundle_id, push_type, priority, expiration, collapse_id, payload, received_at_ms,
                 discard_at_ms, state, ended_at_ms)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """).execute(arguments: [
                n.id.description, Data(n.token.bytes), n.bundleID, n.pushType.rawValue, n.priority.rawValue,
                n.expiration.storedSeconds, n.collapseID?.value, Data(n.payload), n.receivedAtMilliseconds,
                n.discardAtMilliseconds(policy: policy), state.rawValue, state == .held ? nil : now,
            ])
        return db.lastInsertedRowID
    }

    static func notification(from row: Row, token: DeviceToken) throws -> StoredNotification {
        let id: String = row["apns_id"]
        let type: String = row["push_type"]
        let priority: Int = row["priority"]
        let collapse: String? = row["collapse_id"]
        let payload: Data = row["payload"]
        guard let notificationID = NotificationID(header: id), let prio = Priority(rawValue: priority) else {
            throw StoreError(.corrupt, "notification \(id) has an invalid id or priority")
        }
        return StoredNotification(
            id: notificationID, token: token, bundleID: row["bundle_id"], pushType: PushType(rawValue: type),
            priority: prio, expiration: Expiration(storedSeconds: row["expiration"]),
            collapseID: collapse.flatMap(CollapseID.init), payload: Array(payload),
            receivedAtMilliseconds: row["received_at_ms"])
    }

    public func storedNotifications(for token: DeviceToken, policy: StorePolicy, nowMilliseconds: Int64) async throws -> [StoredNotification] {
        let held = self.held
        return try await pool.read { db in
            try Self.heldRows(of: token, held: held, nowMilliseconds: nowMilliseconds, in: db).map {
                try Self.notification(from: $0, token: token)
            }
        }
    }

    /// The rows of `token`'s held notifications not yet discarded, in seq order.
    static func heldRows(of token: DeviceToken, held: HeldIndex, nowMilliseconds: Int64, in db: Database) throws -> [Row] {
        let statement = try db.cachedStatement(sql: """
            SELECT * FROM notifications WHERE seq = ? AND token = ? AND state = 0 AND discard_at_ms > ?
            """)
        let key = Data(token.bytes)
        return try held.candidates(for: token).compactMap { seq in
            try Row.fetchOne(statement, arguments: [seq, key, nowMilliseconds])
        }
    }

    public func checkReachable() async throws {
        _ = try await pool.read { db in try Int.fetchOne(db, sql: "SELECT 1") }
    }

    public func storedNotificationCount() async throws -> Int {
        try await pool.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM notifications WHERE state = 0") ?? 0 }
    }

}

/// The registration cache of ``SQLiteStore``.
final class RegistrationCache: Sendable {
    /// Beyond this many entries the cache starts over, bounding its memory (~150 bytes an entry).
    static let capacity = 500_000
    private let entries = Mutex<[DeviceToken: TokenRegistration]>([:])

    func removeAll() { entries.withLock { $0.removeAll(keepingCapacity: true) } }

    func lookup(_ token: DeviceToken) -> TokenRegistration? { entries.withLock { $0[token] } }

    func insert(_ registration: TokenRegistration) {
        entries.withLock { entries in
            if entries.count >= Self.capacity { entries.removeAll(keepingCapacity: true) }
            entries[registration.token] = registration
        }
    }

    func remove(_ token: DeviceToken) { _ = entries.withLock { $0.removeValue(forKey: token) } }
}
