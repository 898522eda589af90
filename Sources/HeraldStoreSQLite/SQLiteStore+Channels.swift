import Foundation
import GRDB
import HeraldCore
import HeraldStore

extension SQLiteStore {
    public func createChannel(_ channel: ChannelRecord) async throws {
        try await pool.write { db in
            let count = try Int.fetchOne(
                db, sql: "SELECT COUNT(*) FROM channels WHERE bundle_id = ? AND environment = ?",
                arguments: [channel.bundleID, channel.environment.rawValue]) ?? 0
            guard count < ChannelRecord.maximumPerApp else {
                throw StoreError(.tooManyChannels, "\(channel.bundleID) has \(count) channels in \(channel.environment), the most an app may have")
            }
            try db.execute(
                sql: "INSERT INTO channels (bundle_id, environment, channel_id, storage_policy, created_at_ms) VALUES (?, ?, ?, ?, ?)",
                arguments: [channel.bundleID, channel.environment.rawValue, channel.channelID.value, channel.storagePolicy, channel.createdAtMilliseconds])
        }
    }

    public func channels(bundleID: String, environment: PushEnvironment) async throws -> [ChannelRecord] {
        try await pool.read { db in
            try Row.fetchAll(
                db, sql: """
                    SELECT bundle_id, environment, channel_id, storage_policy, created_at_ms FROM channels
                    WHERE bundle_id = ? AND environment = ? ORDER BY created_at_ms, channel_id
                    """,
                arguments: [bundleID, environment.rawValue]).map(Self.channelRecord(from:))
        }
    }

    public func channel(bundleID: String, id: BroadcastChannelID, environment: PushEnvironment) async throws -> ChannelRecord? {
        try await pool.read { db in
            try Row.fetchOne(
                db.cachedStatement(sql: """
                    SELECT bundle_id, environment, channel_id, storage_policy, created_at_ms FROM channels
                    WHERE bundle_id = ? AND environment = ? AND channel_id = ?
                    """),
                arguments: [bundleID, environment.rawValue, id.value]).map(Self.channelRecord(from:))
        }
    }

    public func deleteChannel(bundleID: String, id: BroadcastChannelID, environment: PushEnvironment, atMilliseconds: Int64) async throws -> Bool {
        try await pool.write { db in
            try db.execute(
                sql: "DELETE FROM channels WHERE bundle_id = ? AND environment = ? AND channel_id = ?",
                arguments: [bundleID, environment.rawValue, id.value])
            return db.changesCount > 0
        }
    }

    private static func channelRecord(from row: Row) throws -> ChannelRecord {
        let environmentName: String = row[1]
        let idText: String = row[2]
        guard let environment = PushEnvironment(rawValue: environmentName), let id = BroadcastChannelID(idText) else {
            throw StoreError(.corrupt, "a channel row is unreadable (\(environmentName), \(idText))")
        }
        return ChannelRecord(bundleID: row[0], channelID: id, environment: environment, storagePolicy: row[3], createdAtMilliseconds: row[4])
    }
}
