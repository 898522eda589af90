import HeraldCore
import HeraldStore
import PostgresNIO

extension PostgresStore {
    public func createChannel(_ channel: ChannelRecord) async throws {
        try await transaction { c in
            // One app's creations are serialized, so two nodes cannot both pass the limit.
            try await Self.query(on: c, "SELECT pg_advisory_xact_lock(hashtext(\(channel.bundleID + "/" + channel.environment.rawValue)))", logger: logger)
            var count: Int64 = 0
            for n in try await Self.query(on: c, 
                "SELECT count(*) FROM channels WHERE bundle_id = \(channel.bundleID) AND environment = \(channel.environment.rawValue)",
                logger: logger).decode(Int64.self) { count = n }
            guard count < ChannelRecord.maximumPerApp else {
                throw StoreError(.tooManyChannels, "\(channel.bundleID) has \(count) channels in \(channel.environment), the most an app may have")
            }
            try await Self.query(on: c, """
                INSERT INTO channels (bundle_id, environment, channel_id, storage_policy, created_at_ms)
                VALUES (\(channel.bundleID), \(channel.environment.rawValue), \(channel.channelID.value), \(Int16(clamping: channel.storagePolicy)), \(channel.createdAtMilliseconds))
                """, logger: logger)
        }
    }

    public func channels(bundleID: String, environment: PushEnvironment) async throws -> [ChannelRecord] {
        var channels: [ChannelRecord] = []
        for row in try await query(on: client, """
            SELECT bundle_id, environment, channel_id, storage_policy, created_at_ms FROM channels
            WHERE bundle_id = \(bundleID) AND environment = \(environment.rawValue) ORDER BY created_at_ms, channel_id
            """, logger: logger).decode((String, String, String, Int16, Int64).self) {
            channels.append(try Self.channelRecord(row))
        }
        return channels
    }

    public func channel(bundleID: String, id: BroadcastChannelID, environment: PushEnvironment) async throws -> ChannelRecord? {
        for row in try await query(on: client, """
            SELECT bundle_id, environment, channel_id, storage_policy, created_at_ms FROM channels
            WHERE bundle_id = \(bundleID) AND environment = \(environment.rawValue) AND channel_id = \(id.value)
            """, logger: logger).decode((String, String, String, Int16, Int64).self) {
            return try Self.channelRecord(row)
        }
        return nil
    }

    public func deleteChannel(bundleID: String, id: BroadcastChannelID, environment: PushEnvironment, atMilliseconds: Int64) async throws -> Bool {
        var deleted = false
        for _ in try await query(on: client, """
            DELETE FROM channels WHERE bundle_id = \(bundleID) AND environment = \(environment.rawValue) AND channel_id = \(id.value)
            RETURNING 1
            """, logger: logger) { deleted = true }
        return deleted
    }

    private static func channelRecord(_ row: (String, String, String, Int16, Int64)) throws -> ChannelRecord {
        guard let id = BroadcastChannelID(row.2) else { throw StoreError(.corrupt, "a channel id \(row.2) is unreadable") }
        return ChannelRecord(
            bundleID: row.0, channelID: id, environment: try environment(row.1), storagePolicy: Int(row.3), createdAtMilliseconds: row.4)
    }
}
