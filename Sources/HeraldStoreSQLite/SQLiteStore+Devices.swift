import Crypto
import Foundation
import GRDB
import HeraldCore
import HeraldStore
import Synchronization

extension SQLiteStore {
    // MARK: devices

    public func deviceConnected(id: String, publicKey: [UInt8], atMilliseconds: Int64) async throws -> Bool {
        try await pool.write { db in
            if let known = try Data.fetchOne(db.cachedStatement(sql: "SELECT public_key FROM devices WHERE device_id = ?"), arguments: [id]) {
                guard Array(known) == publicKey else {
                    throw StoreError(.deviceKeyMismatch, "device \(id) is enrolled with another public key")
                }
                try db.cachedStatement(sql: "UPDATE devices SET last_seen_at_ms = ? WHERE device_id = ?").execute(arguments: [atMilliseconds, id])
                try db.cachedStatement(sql: "UPDATE device_tokens SET inactivity_reported = 0 WHERE device_id = ? AND inactivity_reported <> 0")
                    .execute(arguments: [id])
                return false
            }
            try db.cachedStatement(sql: "INSERT INTO devices (device_id, public_key, enrolled_at_ms, last_seen_at_ms) VALUES (?, ?, ?, ?)")
                .execute(arguments: [id, Data(publicKey), atMilliseconds, atMilliseconds])
            return true
        }
    }

    public func device(id: String) async throws -> DeviceRecord? {
        try await pool.read { db in
            guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM devices WHERE device_id = ?"), arguments: [id]) else { return nil }
            let key: Data = row["public_key"]
            return DeviceRecord(
                id: id, publicKey: Array(key), enrolledAtMilliseconds: row["enrolled_at_ms"],
                lastSeenAtMilliseconds: row["last_seen_at_ms"])
        }
    }

    public func issueToken(_ candidate: TokenRegistration, maximumActivePerDevice: Int) async throws -> TokenRegistration {
        let cache = registrations
        return try await pool.write { db in
            if let deviceID = candidate.deviceID {
                if let existing = try Self.activeToken(deviceID: deviceID, scope: candidate.scope, environment: candidate.environment, in: db) {
                    return existing
                }
                let active = try Int.fetchOne(
                    db.cachedStatement(sql: "SELECT COUNT(*) FROM device_tokens WHERE device_id = ? AND unregistered_at_ms IS NULL"),
                    arguments: [deviceID]) ?? 0
                guard active < maximumActivePerDevice else {
                    throw StoreError(.tooManyTokens, "device \(deviceID) has \(active) active tokens, the most it may have")
                }
            }
            cache.remove(candidate.token)
            try Self.insert(candidate, in: db)
            return candidate
        }
    }

    public func activeToken(deviceID: String, scope: TokenScope, environment: PushEnvironment) async throws -> TokenRegistration? {
        try await pool.read { db in
            try Self.activeToken(deviceID: deviceID, scope: scope, environment: environment, in: db)
        }
    }

    static func activeToken(
        deviceID: String, scope: TokenScope, environment: PushEnvironment, in db: Database
    ) throws -> TokenRegistration? {
        guard let data = try Data.fetchOne(
            db.cachedStatement(sql: """
                SELECT token FROM device_tokens
                WHERE device_id = ? AND bundle_id = ? AND environment = ? AND unregistered_at_ms IS NULL
                """),
            arguments: [deviceID, scope.stored, environment.rawValue]),
            let token = DeviceToken(bytes: Array(data))
        else { return nil }
        return try registration(of: token, in: db)
    }
}
