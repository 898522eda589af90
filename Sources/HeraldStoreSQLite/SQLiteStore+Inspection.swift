import Foundation
import GRDB
import HeraldCore
import HeraldStore

// The operators' read-only views (HeraldStore/Inspection.swift), and key revocation. Reads run
// on the pool's readers, so they never wait for the gateway's commits, nor delay them.
extension SQLiteStore {
    public func teams() async throws -> [TeamRecord] {
        try await pool.read { db in
            var topics: [String: [String]] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT team_id, topic FROM topics ORDER BY topic") {
                topics[row[0], default: []].append(row[1])
            }
            var keys: [String: [KeyRecord]] = [:]
            for row in try Row.fetchAll(
                db, sql: "SELECT key_id, team_id, environment, created_at_ms, revoked_at_ms FROM provider_keys ORDER BY key_id") {
                let record = try Self.keyRecord(from: row)
                keys[record.teamID, default: []].append(record)
            }
            return Set(topics.keys).union(keys.keys).sorted().map { team in
                TeamRecord(teamID: team, topics: topics[team] ?? [], keys: keys[team] ?? [])
            }
        }
    }

    public func revokeKey(id: String, atMilliseconds: Int64) async throws -> KeyRecord? {
        try await pool.write { db in
            try db.execute(
                sql: "UPDATE provider_keys SET revoked_at_ms = ? WHERE key_id = ? AND revoked_at_ms IS NULL",
                arguments: [atMilliseconds, id])
            return try Row.fetchOne(
                db, sql: "SELECT key_id, team_id, environment, created_at_ms, revoked_at_ms FROM provider_keys WHERE key_id = ?",
                arguments: [id]).map(Self.keyRecord(from:))
        }
    }

    private static func keyRecord(from row: Row) throws -> KeyRecord {
        let environment: String? = row[2]
        return KeyRecord(
            keyID: row[0], teamID: row[1], environment: try environment.map { name in
                guard let known = PushEnvironment(rawValue: name) else { throw StoreError(.corrupt, "a key has an unknown environment \(name)") }
                return known
            },
            createdAtMilliseconds: row[3], revokedAtMilliseconds: row[4])
    }

    public func devices(after: String?, limit: Int) async throws -> [DeviceSummary] {
        try await pool.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT d.device_id, d.enrolled_at_ms, d.last_seen_at_ms,
                           (SELECT count(*) FROM device_tokens t WHERE t.device_id = d.device_id AND t.unregistered_at_ms IS NULL)
                    FROM devices d WHERE d.device_id > ? ORDER BY d.device_id LIMIT ?
                    """,
                arguments: [after ?? "", Self.pageSize(limit)]
            ).map { row in
                DeviceSummary(id: row[0], enrolledAtMilliseconds: row[1], lastSeenAtMilliseconds: row[2], activeTokens: row[3])
            }
        }
    }

    public func tokens(_ filter: TokenFilter, after: DeviceToken?, limit: Int) async throws -> [TokenRegistration] {
        var conditions = ["token > ?"]
        var arguments: StatementArguments = [Data(after?.bytes ?? [])]
        if let bundleID = filter.bundleID {
            conditions.append("bundle_id = ?")
            _ = arguments.append(contentsOf: [bundleID])
        }
        if let deviceID = filter.deviceID {
            conditions.append("device_id = ?")
            _ = arguments.append(contentsOf: [deviceID])
        }
        if filter.activeOnly { conditions.append("unregistered_at_ms IS NULL") }
        _ = arguments.append(contentsOf: [Self.pageSize(limit)])
        let sql = """
            SELECT bundle_id, environment, device_id, created_at_ms, unregistered_at_ms, expired_at_ms, token
            FROM device_tokens WHERE \(conditions.joined(separator: " AND ")) ORDER BY token LIMIT ?
            """
        return try await pool.read { [arguments] db in
            try Row.fetchAll(db, sql: sql, arguments: arguments).map { row in
                let bytes: Data = row[6]
                guard let token = DeviceToken(bytes: Array(bytes)) else { throw StoreError(.corrupt, "an invalid token is registered") }
                return try Self.registration(of: token, from: row)
            }
        }
    }

    public func heldNotifications(_ filter: HeldFilter, after: Int64?, limit: Int) async throws -> [HeldNotification] {
        // Held rows are read through the partial index of held rows (state = 0), so the scan is
        // over what is held, not over every finished notification kept for its receipt.
        var conditions = ["n.state = 0", "n.seq > ?"]
        var arguments: StatementArguments = [after ?? 0]
        if let token = filter.token {
            conditions.append("n.token = ?")
            _ = arguments.append(contentsOf: [Data(token.bytes)])
        }
        if let bundleID = filter.bundleID {
            conditions.append("n.bundle_id = ?")
            _ = arguments.append(contentsOf: [bundleID])
        }
        if let deviceID = filter.deviceID {
            conditions.append("n.token IN (SELECT token FROM device_tokens WHERE device_id = ?)")
            _ = arguments.append(contentsOf: [deviceID])
        }
        _ = arguments.append(contentsOf: [Self.pageSize(limit)])
        let sql = "SELECT n.* FROM notifications n INDEXED BY held_notifications_by_discard WHERE \(conditions.joined(separator: " AND ")) ORDER BY n.seq LIMIT ?"
        return try await pool.read { [arguments] db in
            try Row.fetchAll(db, sql: sql, arguments: arguments).map { row in
                let bytes: Data = row["token"]
                guard let token = DeviceToken(bytes: Array(bytes)) else { throw StoreError(.corrupt, "a held notification has an invalid token") }
                return HeldNotification(
                    seq: row["seq"], notification: try Self.notification(from: row, token: token),
                    discardAtMilliseconds: row["discard_at_ms"], sentAtMilliseconds: row["sent_at_ms"])
            }
        }
    }

    public func pendingFeedback(bundleID: String, environment: PushEnvironment) async throws -> [FeedbackEntry] {
        try await pool.read { db in
            try Row.fetchAll(
                db, sql: "SELECT token, at_ms FROM feedback WHERE bundle_id = ? AND environment = ? ORDER BY id",
                arguments: [bundleID, environment.rawValue]
            ).compactMap { row in
                let bytes: Data = row[0]
                return DeviceToken(bytes: Array(bytes)).map { FeedbackEntry(token: $0, atMilliseconds: row[1]) }
            }
        }
    }

    private static func pageSize(_ limit: Int) -> Int { min(max(0, limit), maximumInspectionPage) }
}
