import Foundation
import GRDB
import HeraldCore
import HeraldStore

/// Broadcasts stored once (``StoredBroadcast``): one row in `broadcasts` per broadcast, and in
/// each subscription's `device_tokens` row the newest broadcast its device acked.
extension SQLiteStore {
    static let broadcastsSchema = """
        CREATE TABLE broadcasts (
            seq INTEGER PRIMARY KEY,
            scope TEXT NOT NULL,
            environment TEXT NOT NULL,
            bundle_id TEXT NOT NULL,
            channel_id TEXT NOT NULL,
            apns_id TEXT NOT NULL,
            priority INTEGER NOT NULL,
            expiration INTEGER,
            payload BLOB NOT NULL,
            received_at_ms INTEGER NOT NULL,
            discard_at_ms INTEGER NOT NULL
        );
        CREATE INDEX broadcasts_by_channel ON broadcasts(scope, environment, seq);
        CREATE INDEX broadcasts_by_apns_id ON broadcasts(apns_id);
        ALTER TABLE device_tokens ADD COLUMN broadcast_acked_seq INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE device_tokens ADD COLUMN broadcast_acked_at_ms INTEGER;
        """

    public func storeBroadcast(_ broadcast: StoredBroadcast, policy: StorePolicy) async throws -> StoredBroadcast {
        try await pool.write { db in
            try db.cachedStatement(sql: """
                INSERT INTO broadcasts
                    (scope, environment, bundle_id, channel_id, apns_id, priority, expiration, payload, received_at_ms, discard_at_ms)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """).execute(arguments: [
                    broadcast.subscriptionScope, broadcast.environment.rawValue, broadcast.bundleID, broadcast.channel.value,
                    broadcast.id.description, broadcast.priority.rawValue, broadcast.expiration.storedSeconds, Data(broadcast.payload),
                    broadcast.receivedAtMilliseconds, broadcast.discardAtMilliseconds(policy: policy),
                ])
            var stored = broadcast
            stored.seq = db.lastInsertedRowID
            return stored
        }
    }

    public func broadcast(seq: Int64) async throws -> StoredBroadcast? {
        try await pool.read { db in
            try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM broadcasts WHERE seq = ?"), arguments: [seq]).map(Self.broadcast(from:))
        }
    }

    static func broadcast(from row: Row) throws -> StoredBroadcast {
        let id: String = row["apns_id"]
        let environmentName: String = row["environment"]
        let channelText: String = row["channel_id"]
        let priority: Int = row["priority"]
        let payload: Data = row["payload"]
        guard let notificationID = NotificationID(header: id), let prio = Priority(rawValue: priority),
              let environment = PushEnvironment(rawValue: environmentName), let channel = BroadcastChannelID(channelText) else {
            throw StoreError(.corrupt, "broadcast \(id) has an invalid id, priority, environment or channel")
        }
        return StoredBroadcast(
            seq: row["seq"], bundleID: row["bundle_id"], channel: channel, environment: environment, id: notificationID,
            priority: prio, expiration: Expiration(storedSeconds: row["expiration"]), payload: Array(payload),
            receivedAtMilliseconds: row["received_at_ms"])
    }

    public func channelSubscriptions(ofDevice deviceID: String) async throws -> [TokenRegistration] {
        try await pool.read { db in
            let rows = try Row.fetchAll(db.cachedStatement(sql: """
                SELECT bundle_id, environment, device_id, created_at_ms, unregistered_at_ms, expired_at_ms, token
                FROM device_tokens WHERE device_id = ? AND unregistered_at_ms IS NULL AND instr(bundle_id, ?) > 0
                ORDER BY created_at_ms
                """), arguments: [deviceID, TokenScope.channelSubscriptionMarker])
            return try rows.map { row in
                let data: Data = row[6]
                guard let token = DeviceToken(bytes: Array(data)) else { throw StoreError(.corrupt, "device \(deviceID) has an invalid token") }
                return try Self.registration(of: token, from: row)
            }
        }
    }

    /// The newest broadcast of each of the device's channel subscriptions that the subscription
    /// should still get (``StoredBroadcast/isPending(seq:isNewest:receivedAtMilliseconds:discardAtMilliseconds:subscribedAtMilliseconds:ackedSeq:nowMilliseconds:)``).
    static func pendingBroadcasts(forDevice deviceID: String, nowMilliseconds: Int64, in db: Database) throws -> [Delivery] {
        let rows = try Row.fetchAll(db.cachedStatement(sql: """
            SELECT t.token AS subscription, b.* FROM device_tokens t
            JOIN broadcasts b ON b.seq = (
                SELECT max(seq) FROM broadcasts WHERE scope = t.bundle_id AND environment = t.environment)
            WHERE t.device_id = ? AND t.unregistered_at_ms IS NULL AND instr(t.bundle_id, ?) > 0
              AND b.seq > t.broadcast_acked_seq AND b.received_at_ms >= t.created_at_ms AND b.discard_at_ms > ?
            ORDER BY b.seq
            """), arguments: [deviceID, TokenScope.channelSubscriptionMarker, nowMilliseconds])
        return try rows.map { row in
            let data: Data = row["subscription"]
            guard let token = DeviceToken(bytes: Array(data)) else { throw StoreError(.corrupt, "device \(deviceID) has an invalid token") }
            return try broadcast(from: row).delivery(to: token, deviceID: deviceID)
        }
    }

    /// Moves a subscription's acked broadcast up (never down: acks may be recorded out of order).
    static func recordBroadcastAck(seq: Int64, subscription: DeviceToken, at: Int64, in db: Database) throws {
        try db.cachedStatement(sql: """
            UPDATE device_tokens SET broadcast_acked_seq = ?, broadcast_acked_at_ms = ? WHERE token = ? AND broadcast_acked_seq < ?
            """).execute(arguments: [seq, at, Data(subscription.bytes), seq])
    }

    /// Deletes broadcasts accepted before `retainFinishedUntil` that no subscriber can get any
    /// more: past their time, or no longer their channel's newest.
    static func sweepBroadcasts(nowMilliseconds: Int64, retainFinishedUntil: Int64, in db: Database) throws {
        try db.execute(sql: """
            DELETE FROM broadcasts WHERE received_at_ms < ? AND (discard_at_ms <= ? OR EXISTS (
                SELECT 1 FROM broadcasts n WHERE n.scope = broadcasts.scope AND n.environment = broadcasts.environment AND n.seq > broadcasts.seq))
            """, arguments: [retainFinishedUntil, nowMilliseconds])
    }

    public func broadcastReceipts(of id: NotificationID, nowMilliseconds: Int64) async throws -> [Receipt] {
        try await pool.read { db in
            let broadcasts = try Row.fetchAll(
                db, sql: "SELECT * FROM broadcasts WHERE apns_id = ? ORDER BY seq", arguments: [id.description])
            var receipts: [Receipt] = []
            for row in broadcasts {
                let b = try Self.broadcast(from: row)
                let discardAt: Int64 = row["discard_at_ms"]
                let newest = try Row.fetchOne(
                    db, sql: "SELECT seq, received_at_ms FROM broadcasts WHERE scope = ? AND environment = ? ORDER BY seq DESC LIMIT 1",
                    arguments: [b.subscriptionScope, b.environment.rawValue])
                let subscriptions = try Row.fetchAll(db, sql: """
                    SELECT token, broadcast_acked_seq, broadcast_acked_at_ms FROM device_tokens
                    WHERE bundle_id = ? AND environment = ? AND created_at_ms <= ?
                      AND (unregistered_at_ms IS NULL OR unregistered_at_ms >= ?)
                    ORDER BY token
                    """, arguments: [b.subscriptionScope, b.environment.rawValue, b.receivedAtMilliseconds, b.receivedAtMilliseconds])
                for subscription in subscriptions {
                    let data: Data = subscription[0]
                    guard let token = DeviceToken(bytes: Array(data)) else { continue }
                    receipts.append(b.receipt(
                        subscription: token, ackedSeq: subscription[1], ackedAtMilliseconds: subscription[2],
                        newest: (newest?[0] ?? b.seq, newest?[1] ?? b.receivedAtMilliseconds), discardAtMilliseconds: discardAt,
                        nowMilliseconds: nowMilliseconds))
                }
            }
            return receipts
        }
    }
}
