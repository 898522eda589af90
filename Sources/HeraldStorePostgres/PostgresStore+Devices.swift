import Crypto
import Foundation
import HeraldCore
import HeraldStore
import Logging
import NIOCore
import NIOPosix
import PostgresNIO

extension PostgresStore {
    // MARK: devices

    public func deviceConnected(id: String, publicKey: [UInt8], atMilliseconds: Int64) async throws -> Bool {
        let logger = self.logger
        // All four statements go out at once: a new device's row is inserted (the two updates then
        // change nothing); a known device's key is compared before the COMMIT is queued, and a
        // mismatch rolls the updates back.
        return try await transaction(relaxed: true, pipelined: { c in
            let inserted = Self.send("""
                INSERT INTO devices (device_id, public_key, enrolled_at_ms, last_seen_at_ms)
                VALUES (\(id), \(Self.buffer(publicKey)), \(atMilliseconds), \(atMilliseconds))
                ON CONFLICT (device_id) DO NOTHING RETURNING 1
                """, on: c, logger: logger)
            let known = Self.send("SELECT public_key FROM devices WHERE device_id = \(id) FOR UPDATE", on: c, logger: logger)
            let updates = [
                Self.send(
                    "UPDATE devices SET last_seen_at_ms = greatest(last_seen_at_ms, \(atMilliseconds)) WHERE device_id = \(id)",
                    on: c, logger: logger),
                Self.send(
                    "UPDATE device_tokens SET inactivity_reported = false WHERE device_id = \(id) AND inactivity_reported",
                    on: c, logger: logger),
            ]
            let enrolled = !(try await inserted.get()).isEmpty
            let key = try await known.get().first.map { try $0.decode(ByteBuffer.self) }
            guard enrolled || key.map(Self.bytes) == publicKey else {
                throw StoreError(.deviceKeyMismatch, "device \(id) is enrolled with another public key")
            }
            return { for update in updates { _ = try await update.get() }; return enrolled }
        })
    }

    public func device(id: String) async throws -> DeviceRecord? {
        let rows = try await query(on: client, 
            "SELECT public_key, enrolled_at_ms, last_seen_at_ms FROM devices WHERE device_id = \(id)", logger: logger)
        for (key, enrolled, seen) in try rows.decode((ByteBuffer, Int64, Int64).self) {
            return DeviceRecord(id: id, publicKey: Self.bytes(key), enrolledAtMilliseconds: enrolled, lastSeenAtMilliseconds: seen)
        }
        return nil
    }

    public func issueToken(_ candidate: TokenRegistration, maximumActivePerDevice: Int) async throws -> TokenRegistration {
        try await transaction { c in
            if let deviceID = candidate.deviceID {
                // The device's row serializes its registrations, on every node.
                try await Self.query(on: c, "SELECT 1 FROM devices WHERE device_id = \(deviceID) FOR UPDATE", logger: logger)
                if let existing = try await Self.activeToken(
                    deviceID: deviceID, scope: candidate.scope, environment: candidate.environment, in: c, logger: logger) {
                    return existing
                }
                var active = 0
                for count in try await Self.query(on: c, 
                    "SELECT count(*) FROM device_tokens WHERE device_id = \(deviceID) AND unregistered_at_ms IS NULL",
                    logger: logger).decode(Int64.self) {
                    active = Int(clamping: count)
                }
                guard active < maximumActivePerDevice else {
                    throw StoreError(.tooManyTokens, "device \(deviceID) has \(active) active tokens, the most it may have")
                }
            }
            try await Self.insert(candidate, in: c, logger: logger)
            return candidate
        }
    }

    public func activeToken(deviceID: String, scope: TokenScope, environment: PushEnvironment) async throws -> TokenRegistration? {
        try await client.withConnection { c in
            try await Self.activeToken(deviceID: deviceID, scope: scope, environment: environment, in: c, logger: logger)
        }
    }

    static func activeToken(
        deviceID: String, scope: TokenScope, environment: PushEnvironment, in c: PostgresConnection, logger: Logger
    ) async throws -> TokenRegistration? {
        let rows = try await Self.query(on: c, """
            SELECT \(unescaped: registrationColumns) FROM device_tokens
            WHERE device_id = \(deviceID) AND bundle_id = \(scope.stored) AND environment = \(environment.rawValue)
              AND unregistered_at_ms IS NULL
            ORDER BY created_at_ms LIMIT 1
            """, logger: logger)
        for row in try rows.decode(RegistrationRow.self) { return try registration(row) }
        return nil
    }
}
