import Crypto
import Foundation
import GRDB
import HeraldCore
import HeraldStore
import Synchronization

extension SQLiteStore {
    // MARK: tokens

    public func registerTokens(_ registrations: [TokenRegistration]) async throws {
        let cache = self.registrations
        try await pool.write { db in
            for registration in registrations { cache.remove(registration.token) }
            for registration in registrations {
                if try Bool.fetchOne(db, sql: "SELECT 1 FROM device_tokens WHERE token = ?", arguments: [Data(registration.token.bytes)]) == true {
                    throw StoreError(.tokenExists, "token \(registration.token) is already registered")
                }
                try Self.insert(registration, in: db)
            }
        }
    }

    static func insert(_ registration: TokenRegistration, in db: Database) throws {
        try db.cachedStatement(sql: """
            INSERT INTO device_tokens (token, bundle_id, environment, device_id, created_at_ms, unregistered_at_ms, expired_at_ms)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            """).execute(arguments: [
                Data(registration.token.bytes), registration.scope.stored, registration.environment.rawValue,
                registration.deviceID, registration.createdAtMilliseconds,
                registration.unregisteredAtMilliseconds, registration.expiredAtMilliseconds,
            ])
    }

    public func unregisterToken(_ token: DeviceToken, atMilliseconds: Int64) async throws -> Bool {
        let cache = registrations
        return try await writeKeepingIndex { db in
            try self.noticeOtherProcesses(db)
            cache.remove(token)
            let key = Data(token.bytes)
            guard try Bool.fetchOne(db, sql: "SELECT 1 FROM device_tokens WHERE token = ?", arguments: [key]) == true else {
                return false
            }
            try db.execute(
                sql: "UPDATE device_tokens SET unregistered_at_ms = ? WHERE token = ? AND unregistered_at_ms IS NULL",
                arguments: [atMilliseconds, key])
            if db.changesCount > 0 {
                // An app's token, or a Web Push subscription (in its app's list); never a Live
                // Activity's or a channel's.
                try db.execute(
                    sql: """
                        INSERT INTO feedback (bundle_id, environment, token, at_ms)
                        SELECT CASE WHEN instr(bundle_id, '.push-type.webpush/') > 0
                                    THEN substr(bundle_id, 1, instr(bundle_id, '.push-type.webpush/') - 1) ELSE bundle_id END,
                               environment, token, unregistered_at_ms FROM device_tokens
                        WHERE token = ? AND instr(bundle_id, '.push-type.liveactivity') = 0
                        """,
                    arguments: [key])
            }
            var dropped: [Int64] = []
            let drop = try db.cachedStatement(sql: """
                UPDATE OR FAIL notifications SET state = ?, ended_at_ms = ? WHERE seq = ? AND token = ? AND state = 0
                """)
            for seq in self.held.candidates(for: token) {
                try drop.execute(arguments: [NotificationState.dropped.rawValue, atMilliseconds, seq, key])
                if db.changesCount > 0 { dropped.append(seq) }
            }
            self.held.remove(dropped, for: token)
            return true
        }
    }

    public func registration(of token: DeviceToken) async throws -> TokenRegistration? {
        try await pool.read { db in try Self.registration(of: token, in: db) }
    }

    static func registration(of token: DeviceToken, in db: Database) throws -> TokenRegistration? {
        let statement = try db.cachedStatement(sql: """
            SELECT bundle_id, environment, device_id, created_at_ms, unregistered_at_ms, expired_at_ms
            FROM device_tokens WHERE token = ?
            """)
        guard let row = try Row.fetchOne(statement, arguments: [Data(token.bytes)]) else { return nil }
        return try registration(of: token, from: row)
    }

    /// A token's registration from the columns bundle_id, environment, device_id, created_at_ms,
    /// unregistered_at_ms, expired_at_ms (in this order).
    static func registration(of token: DeviceToken, from row: Row) throws -> TokenRegistration {
        let environmentName: String = row[1]
        guard let environment = PushEnvironment(rawValue: environmentName) else {
            throw StoreError(.corrupt, "token \(token) has an unknown environment \(environmentName)")
        }
        return TokenRegistration(
            token: token, scope: TokenScope(stored: row[0]), environment: environment, deviceID: row[2],
            createdAtMilliseconds: row[3], unregisteredAtMilliseconds: row[4], expiredAtMilliseconds: row[5])
    }
}
