import HeraldCore
import HeraldStore
import NIOCore
import PostgresNIO

// The operators' read-only views (HeraldStore/Inspection.swift), and key revocation.
extension PostgresStore {
    private typealias KeyRow = (String, String, String?, Int64, Int64?)

    private static func keyRecord(_ row: KeyRow) throws -> KeyRecord {
        KeyRecord(
            keyID: row.0, teamID: row.1, environment: try row.2.map(environment),
            createdAtMilliseconds: row.3, revokedAtMilliseconds: row.4)
    }

    public func teams() async throws -> [TeamRecord] {
        var topics: [String: [String]] = [:]
        for (team, topic) in try await query(on: client, 
            "SELECT team_id, topic FROM topics ORDER BY topic", logger: logger).decode((String, String).self) {
            topics[team, default: []].append(topic)
        }
        var keys: [String: [KeyRecord]] = [:]
        for row in try await query(on: client, 
            "SELECT key_id, team_id, environment, created_at_ms, revoked_at_ms FROM provider_keys ORDER BY key_id",
            logger: logger).decode(KeyRow.self) {
            let record = try Self.keyRecord(row)
            keys[record.teamID, default: []].append(record)
        }
        return Set(topics.keys).union(keys.keys).sorted().map { team in
            TeamRecord(teamID: team, topics: topics[team] ?? [], keys: keys[team] ?? [])
        }
    }

    public func revokeKey(id: String, atMilliseconds: Int64) async throws -> KeyRecord? {
        try await query(on: client, 
            "UPDATE provider_keys SET revoked_at_ms = \(atMilliseconds) WHERE key_id = \(id) AND revoked_at_ms IS NULL", logger: logger)
        for row in try await query(on: client, 
            "SELECT key_id, team_id, environment, created_at_ms, revoked_at_ms FROM provider_keys WHERE key_id = \(id)",
            logger: logger).decode(KeyRow.self) {
            return try Self.keyRecord(row)
        }
        return nil
    }

    public func devices(after: String?, limit: Int) async throws -> [DeviceSummary] {
        var devices: [DeviceSummary] = []
        for (id, enrolled, seen, active) in try await query(on: client, """
            SELECT d.device_id, d.enrolled_at_ms, d.last_seen_at_ms,
                   (SELECT count(*) FROM device_tokens t WHERE t.device_id = d.device_id AND t.unregistered_at_ms IS NULL)
            FROM devices d WHERE d.device_id > \(after ?? "") ORDER BY d.device_id LIMIT \(Self.pageSize(limit))
            """, logger: logger).decode((String, Int64, Int64, Int64).self) {
            devices.append(DeviceSummary(id: id, enrolledAtMilliseconds: enrolled, lastSeenAtMilliseconds: seen, activeTokens: Int(clamping: active)))
        }
        return devices
    }

    public func tokens(_ filter: TokenFilter, after: DeviceToken?, limit: Int) async throws -> [TokenRegistration] {
        // NULL parameters switch a condition off; the plan stays one statement.
        let rows = try await query(on: client, """
            SELECT \(unescaped: Self.registrationColumns) FROM device_tokens
            WHERE token > \(Self.buffer(after?.bytes ?? []))
              AND (\(filter.bundleID)::text IS NULL OR bundle_id = \(filter.bundleID))
              AND (\(filter.deviceID)::text IS NULL OR device_id = \(filter.deviceID))
              AND (NOT \(filter.activeOnly) OR unregistered_at_ms IS NULL)
            ORDER BY token LIMIT \(Self.pageSize(limit))
            """, logger: logger)
        var registrations: [TokenRegistration] = []
        for row in try rows.decode(RegistrationRow.self) { registrations.append(try Self.registration(row)) }
        return registrations
    }

    public func heldNotifications(_ filter: HeldFilter, after: Int64?, limit: Int) async throws -> [HeldNotification] {
        let token = filter.token.map { Self.buffer($0.bytes) }
        let rows = try await query(on: client, """
            SELECT \(unescaped: Self.notificationColumns) FROM notifications n
            WHERE n.state = 0 AND n.seq > \(after ?? 0)
              AND (\(token)::bytea IS NULL OR n.token = \(token))
              AND (\(filter.bundleID)::text IS NULL OR n.bundle_id = \(filter.bundleID))
              AND (\(filter.deviceID)::text IS NULL OR n.token IN (SELECT token FROM device_tokens WHERE device_id = \(filter.deviceID)))
            ORDER BY n.seq LIMIT \(Self.pageSize(limit))
            """, logger: logger)
        var held: [HeldNotification] = []
        for row in try rows.decode(NotificationRow.self) {
            let record = try Self.record(row)
            held.append(HeldNotification(
                seq: record.seq, notification: record.notification, discardAtMilliseconds: record.discardAt, sentAtMilliseconds: record.sentAt))
        }
        return held
    }

    public func pendingFeedback(bundleID: String, environment: PushEnvironment) async throws -> [FeedbackEntry] {
        var entries: [FeedbackEntry] = []
        for (token, at) in try await query(on: client, """
            SELECT token, at_ms FROM feedback WHERE bundle_id = \(bundleID) AND environment = \(environment.rawValue) ORDER BY id
            """, logger: logger).decode((ByteBuffer, Int64).self) {
            if let token = DeviceToken(bytes: Self.bytes(token)) { entries.append(FeedbackEntry(token: token, atMilliseconds: at)) }
        }
        return entries
    }

    private static func pageSize(_ limit: Int) -> Int64 { Int64(min(max(0, limit), maximumInspectionPage)) }
}
