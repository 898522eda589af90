import Crypto
import Foundation
import GRDB
import HeraldCore
import HeraldStore
import Synchronization

extension SQLiteStore {
    // MARK: delivery

    public func pendingDeliveries(forDevice deviceID: String, nowMilliseconds: Int64) async throws -> [Delivery] {
        let held = self.held
        return try await pool.read { db in
            let tokens = try Data.fetchAll(
                db.cachedStatement(sql: "SELECT token FROM device_tokens WHERE device_id = ? AND unregistered_at_ms IS NULL"), arguments: [deviceID])
            var deliveries: [Delivery] = []
            for tokenData in tokens {
                guard let token = DeviceToken(bytes: Array(tokenData)) else {
                    throw StoreError(.corrupt, "device \(deviceID) has an invalid token")
                }
                for row in try Self.heldRows(of: token, held: held, nowMilliseconds: nowMilliseconds, in: db) {
                    deliveries.append(Delivery(seq: row["seq"], deviceID: deviceID, notification: try Self.notification(from: row, token: token)))
                }
            }
            return deliveries.sorted { $0.seq < $1.seq }
                + (try Self.pendingBroadcasts(forDevice: deviceID, nowMilliseconds: nowMilliseconds, in: db))
        }
    }

    /// Records delivery events. These commits do not wait for the disk even with
    /// ``Durability/full``: the WAL is synced by the next full commit, and a crash that loses an
    /// ack only means the notification is sent again (the device drops it by apns-id). So acks
    /// do not double the fsyncs that accepted pushes pay for.
    public func record(_ events: [DeliveryEvent]) async throws {
        guard !events.isEmpty else { return }
        let relaxed = durability == .full
        let held = self.held
        try await pool.writeWithoutTransaction { db in
            if relaxed { try db.execute(sql: "PRAGMA synchronous = NORMAL") }
            defer { if relaxed { try? db.execute(sql: "PRAGMA synchronous = FULL") } }
            var ended: [(seq: Int64, token: Data)] = []
            try db.inTransaction {
                ended = try Self.apply(events, in: db)
                return .commit
            }
            // Only after the commit: a rollback keeps these held, so the index must too.
            for (seq, token) in ended { held.remove(seq, tokenBytes: token) }
        }
    }

    /// Applies delivery events; returns the notifications they ended (no longer held).
    static func apply(_ events: [DeliveryEvent], in db: Database) throws -> [(seq: Int64, token: Data)] {
        let ack = try db.cachedStatement(sql: """
            UPDATE notifications SET state = ?, sent_at_ms = coalesce(sent_at_ms, ?), acked_at_ms = ?, ended_at_ms = ?
            WHERE seq = ? AND state <> 2 RETURNING token
            """)
        let sent = try db.cachedStatement(sql: "UPDATE notifications SET sent_at_ms = ? WHERE seq = ? AND sent_at_ms IS NULL")
        let end = try db.cachedStatement(sql: "UPDATE notifications SET state = ?, ended_at_ms = ? WHERE seq = ? AND state = 0 RETURNING token")
        var ended: [(seq: Int64, token: Data)] = []
        for event in events {
            switch event {
            case .acked(let seq, let sentAt, let ackedAt):
                if let token = try Data.fetchOne(ack, arguments: [NotificationState.acked.rawValue, sentAt, ackedAt, ackedAt, seq]) {
                    ended.append((seq, token))
                }
            case .sent(let seq, let at):
                try sent.execute(arguments: [at, seq])
            case .replaced(let seq, let at):
                if let token = try Data.fetchOne(end, arguments: [NotificationState.replaced.rawValue, at, seq]) { ended.append((seq, token)) }
            case .dropped(let seq, let at):
                if let token = try Data.fetchOne(end, arguments: [NotificationState.dropped.rawValue, at, seq]) { ended.append((seq, token)) }
            case .broadcastAcked(let seq, let subscription, let at):
                try recordBroadcastAck(seq: seq, subscription: subscription, at: at, in: db)
            }
        }
        return ended
    }

    public func sweep(nowMilliseconds: Int64, retainFinishedUntil: Int64) async throws -> Int {
        let held = self.held
        return try await writeKeepingIndex { db in
            let dropped = try Row.fetchAll(
                db,
                sql: "UPDATE notifications SET state = ?, ended_at_ms = ? WHERE state = 0 AND discard_at_ms <= ? AND expiration = 0 RETURNING seq, token",
                arguments: [NotificationState.dropped.rawValue, nowMilliseconds, nowMilliseconds])
            let expired = try Row.fetchAll(
                db,
                sql: "UPDATE notifications SET state = ?, ended_at_ms = ? WHERE state = 0 AND discard_at_ms <= ? RETURNING seq, token",
                arguments: [NotificationState.expired.rawValue, nowMilliseconds, nowMilliseconds])
            try db.execute(
                sql: "DELETE FROM notifications WHERE state <> 0 AND ended_at_ms < ?", arguments: [retainFinishedUntil])
            try Self.sweepBroadcasts(nowMilliseconds: nowMilliseconds, retainFinishedUntil: retainFinishedUntil, in: db)
            for row in dropped + expired { held.remove(row[0], tokenBytes: row[1]) }
            return expired.count
        }
    }
}
