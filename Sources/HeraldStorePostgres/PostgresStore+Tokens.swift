import Crypto
import Foundation
import HeraldCore
import HeraldStore
import Logging
import NIOCore
import NIOPosix
import PostgresNIO

extension PostgresStore {
    // MARK: tokens

    public func registerTokens(_ registrations: [TokenRegistration]) async throws {
        guard !registrations.isEmpty else { return }
        do {
            try await transaction { c in
                for registration in registrations { try await Self.insert(registration, in: c, logger: logger) }
            }
        } catch let error as PSQLError where error.serverInfo?[.sqlState] == "23505" {
            throw StoreError(.tokenExists, "a token of this batch is already registered")
        }
    }

    static func insert(_ r: TokenRegistration, in c: PostgresConnection, logger: Logger) async throws {
        try await Self.query(on: c, """
            INSERT INTO device_tokens (token, bundle_id, environment, device_id, created_at_ms, unregistered_at_ms, expired_at_ms)
            VALUES (\(buffer(r.token.bytes)), \(r.scope.stored), \(r.environment.rawValue), \(r.deviceID), \(r.createdAtMilliseconds),
                    \(r.unregisteredAtMilliseconds), \(r.expiredAtMilliseconds))
            """, logger: logger)
    }

    public func unregisterToken(_ token: DeviceToken, atMilliseconds: Int64) async throws -> Bool {
        let key = Self.buffer(token.bytes)
        return try await transaction { c in
            var known = false
            for _ in try await Self.query(on: c, "SELECT 1 FROM device_tokens WHERE token = \(key) FOR UPDATE", logger: logger) { known = true }
            guard known else { return false }
            try await Self.query(on: c, """
                WITH removed AS (
                    UPDATE device_tokens SET unregistered_at_ms = \(atMilliseconds)
                    WHERE token = \(key) AND unregistered_at_ms IS NULL
                    RETURNING bundle_id, environment, token, unregistered_at_ms)
                INSERT INTO feedback (bundle_id, environment, token, at_ms)
                SELECT CASE WHEN strpos(bundle_id, '.push-type.webpush/') > 0
                            THEN substr(bundle_id, 1, strpos(bundle_id, '.push-type.webpush/') - 1) ELSE bundle_id END,
                       environment, token, unregistered_at_ms
                FROM removed WHERE strpos(bundle_id, '.push-type.liveactivity') = 0
                """, logger: logger)
            try await Self.query(on: c, """
                UPDATE notifications SET state = \(Int16(NotificationState.dropped.rawValue)), ended_at_ms = \(atMilliseconds)
                WHERE token = \(key) AND state = 0
                """, logger: logger)
            return true
        }
    }

    static let registrationColumns = "token, bundle_id, environment, device_id, created_at_ms, unregistered_at_ms, expired_at_ms"
    typealias RegistrationRow = (ByteBuffer, String, String, String?, Int64, Int64?, Int64?)

    static func registration(_ row: RegistrationRow) throws -> TokenRegistration {
        TokenRegistration(
            token: try token(row.0), scope: TokenScope(stored: row.1), environment: try environment(row.2), deviceID: row.3,
            createdAtMilliseconds: row.4, unregisteredAtMilliseconds: row.5, expiredAtMilliseconds: row.6)
    }

    public func registration(of token: DeviceToken) async throws -> TokenRegistration? {
        let rows = try await query(on: client, 
            "SELECT \(unescaped: Self.registrationColumns) FROM device_tokens WHERE token = \(Self.buffer(token.bytes))", logger: logger)
        for row in try rows.decode(RegistrationRow.self) { return try Self.registration(row) }
        return nil
    }
}
