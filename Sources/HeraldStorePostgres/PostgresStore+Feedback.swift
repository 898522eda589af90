import Crypto
import Foundation
import HeraldCore
import HeraldStore
import Logging
import NIOCore
import NIOPosix
import PostgresNIO

extension PostgresStore {
    // MARK: feedback and receipts

    public func takeFeedback(
        bundleID: String, environment: PushEnvironment, inactiveBefore: Int64, inactivityMilliseconds: Int64
    ) async throws -> [FeedbackEntry] {
        try await transaction { c in
            var removed: [(Int64, FeedbackEntry)] = []
            for (id, token, at) in try await Self.query(on: c, """
                DELETE FROM feedback WHERE bundle_id = \(bundleID) AND environment = \(environment.rawValue)
                RETURNING id, token, at_ms
                """, logger: logger).decode((Int64, ByteBuffer, Int64).self) {
                if let token = DeviceToken(bytes: Self.bytes(token)) { removed.append((id, FeedbackEntry(token: token, atMilliseconds: at))) }
            }
            var inactive: [(Int64, FeedbackEntry)] = []
            for (token, lastSeen, created) in try await Self.query(on: c, """
                UPDATE device_tokens t SET inactivity_reported = true FROM devices d
                WHERE d.device_id = t.device_id AND t.bundle_id = \(bundleID) AND t.environment = \(environment.rawValue)
                  AND t.unregistered_at_ms IS NULL AND NOT t.inactivity_reported AND d.last_seen_at_ms < \(inactiveBefore)
                RETURNING t.token, d.last_seen_at_ms, t.created_at_ms
                """, logger: logger).decode((ByteBuffer, Int64, Int64).self) {
                if let token = DeviceToken(bytes: Self.bytes(token)) {
                    inactive.append((created, FeedbackEntry(token: token, atMilliseconds: lastSeen &+ inactivityMilliseconds)))
                }
            }
            return removed.sorted { $0.0 < $1.0 }.map(\.1) + inactive.sorted { $0.0 < $1.0 }.map(\.1)
        }
    }

    public func receipts(of id: NotificationID) async throws -> [Receipt] {
        let rows = try await query(on: client, 
            "SELECT \(unescaped: Self.notificationColumns) FROM notifications n WHERE n.apns_id = \(id.description) ORDER BY n.seq",
            logger: logger)
        var receipts: [Receipt] = []
        for row in try rows.decode(NotificationRow.self) {
            let record = try Self.record(row)
            receipts.append(Receipt(
                of: record.notification, discardAtMilliseconds: record.discardAt, state: record.state,
                sentAtMilliseconds: record.sentAt, ackedAtMilliseconds: record.ackedAt, endedAtMilliseconds: record.endedAt))
        }
        return receipts
    }
}
