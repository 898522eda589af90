import Crypto
import Foundation
import GRDB
import HeraldCore
import HeraldStore
import Synchronization

extension SQLiteStore {
    // MARK: feedback and receipts

    public func takeFeedback(
        bundleID: String, environment: PushEnvironment, inactiveBefore: Int64, inactivityMilliseconds: Int64
    ) async throws -> [FeedbackEntry] {
        try await pool.write { db in
            var entries: [FeedbackEntry] = []
            let removed = try Row.fetchAll(
                db, sql: "SELECT token, at_ms FROM feedback WHERE bundle_id = ? AND environment = ? ORDER BY id",
                arguments: [bundleID, environment.rawValue])
            for row in removed {
                let data: Data = row[0]
                if let token = DeviceToken(bytes: Array(data)) { entries.append(FeedbackEntry(token: token, atMilliseconds: row[1])) }
            }
            try db.execute(
                sql: "DELETE FROM feedback WHERE bundle_id = ? AND environment = ?", arguments: [bundleID, environment.rawValue])
            let inactive = try Row.fetchAll(
                db,
                sql: """
                    SELECT t.token, d.last_seen_at_ms FROM device_tokens t JOIN devices d ON d.device_id = t.device_id
                    WHERE t.bundle_id = ? AND t.environment = ? AND t.unregistered_at_ms IS NULL
                      AND t.inactivity_reported = 0 AND d.last_seen_at_ms < ?
                    ORDER BY t.created_at_ms
                    """,
                arguments: [bundleID, environment.rawValue, inactiveBefore])
            for row in inactive {
                let data: Data = row[0]
                let lastSeen: Int64 = row[1]
                guard let token = DeviceToken(bytes: Array(data)) else { continue }
                entries.append(FeedbackEntry(token: token, atMilliseconds: lastSeen + inactivityMilliseconds))
                try db.execute(sql: "UPDATE device_tokens SET inactivity_reported = 1 WHERE token = ?", arguments: [data])
            }
            return entries
        }
    }

    public func receipts(of id: NotificationID) async throws -> [Receipt] {
        try await pool.read { db in
            let rows = try Row.fetchAll(
                db, sql: "SELECT * FROM notifications WHERE apns_id = ? ORDER BY seq", arguments: [id.description])
            return try rows.map { row in
                let tokenData: Data = row["token"]
                guard let token = DeviceToken(bytes: Array(tokenData)),
                      let state = NotificationState(rawValue: row["state"]) else {
                    throw StoreError(.corrupt, "notification \(id) has an invalid token or state")
                }
                return Receipt(
                    of: try Self.notification(from: row, token: token), discardAtMilliseconds: row["discard_at_ms"], state: state,
                    sentAtMilliseconds: row["sent_at_ms"], ackedAtMilliseconds: row["acked_at_ms"], endedAtMilliseconds: row["ended_at_ms"])
            }
        }
    }
}
