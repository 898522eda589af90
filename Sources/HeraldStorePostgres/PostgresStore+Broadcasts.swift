import HeraldCore
import HeraldStore
import PostgresNIO

/// Broadcasts stored once (``StoredBroadcast``): one row in `broadcasts` per broadcast, numbered
/// from the notifications' sequence (so the cluster's sweep window, by sequence number, covers
/// both), and in each subscription's `device_tokens` row the newest broadcast its device acked.
extension PostgresStore {
    static let broadcastsSchema = [
        """
        CREATE TABLE broadcasts (
            seq BIGINT PRIMARY KEY, scope TEXT NOT NULL, environment TEXT NOT NULL, bundle_id TEXT NOT NULL,
            channel_id TEXT NOT NULL, apns_id TEXT NOT NULL, priority SMALLINT NOT NULL, expiration BIGINT,
            payload BYTEA NOT NULL, received_at_ms BIGINT NOT NULL, discard_at_ms BIGINT NOT NULL)
        """,
        "CREATE INDEX broadcasts_by_channel ON broadcasts (scope, environment, seq)",
        "CREATE INDEX broadcasts_by_apns_id ON broadcasts (apns_id)",
        "ALTER TABLE device_tokens ADD COLUMN broadcast_acked_seq BIGINT NOT NULL DEFAULT 0",
        "ALTER TABLE device_tokens ADD COLUMN broadcast_acked_at_ms BIGINT",
    ]

    /// Migration 4: no index on the acked sequence (the first version of migration 3 made one).
    /// An ack then updates no indexed column, so PostgreSQL can update the subscription's row in
    /// place (a HOT update: no new index entries), and pages keep room for it. The full sweep
    /// finds the unacked subscriptions through the node's presence instead.
    static let broadcastAcksInPlace = [
        "DROP INDEX IF EXISTS device_tokens_by_acked_broadcast",
        "ALTER TABLE device_tokens SET (fillfactor = 90)",
    ]

    static let broadcastColumns = """
        b.seq, b.bundle_id, b.channel_id, b.environment, b.apns_id, b.priority, b.expiration, b.payload, b.received_at_ms, b.discard_at_ms
        """
    /// The condition that the broadcast `b` is still its channel's newest.
    static let isChannelsNewest =
        "NOT EXISTS (SELECT 1 FROM broadcasts n WHERE n.scope = b.scope AND n.environment = b.environment AND n.seq > b.seq)"
    typealias BroadcastRow = (Int64, String, String, String, String, Int16, Int64?, ByteBuffer, Int64, Int64)

    static func broadcast(_ row: BroadcastRow) throws -> StoredBroadcast {
        guard let id = NotificationID(header: row.4), let priority = Priority(rawValue: Int(row.5)), let channel = BroadcastChannelID(row.2) else {
            throw StoreError(.corrupt, "broadcast \(row.0) has an invalid id, priority or channel")
        }
        return StoredBroadcast(
            seq: row.0, bundleID: row.1, channel: channel, environment: try environment(row.3), id: id, priority: priority,
            expiration: Expiration(storedSeconds: row.6), payload: Array(row.7.readableBytesView), receivedAtMilliseconds: row.8)
    }

    public func storeBroadcast(_ broadcast: StoredBroadcast, policy: StorePolicy) async throws -> StoredBroadcast {
        // One statement, committed synchronously (the 200 waits for it).
        let rows = try await query(on: client, """
            INSERT INTO broadcasts
                (seq, scope, environment, bundle_id, channel_id, apns_id, priority, expiration, payload, received_at_ms, discard_at_ms)
            VALUES (nextval(pg_get_serial_sequence('notifications', 'seq')), \(broadcast.subscriptionScope),
                    \(broadcast.environment.rawValue), \(broadcast.bundleID), \(broadcast.channel.value), \(broadcast.id.description),
                    \(Int16(broadcast.priority.rawValue)), \(broadcast.expiration.storedSeconds), \(Self.buffer(broadcast.payload)),
                    \(broadcast.receivedAtMilliseconds), \(broadcast.discardAtMilliseconds(policy: policy)))
            RETURNING seq
            """, logger: logger)
        var stored = broadcast
        for seq in try rows.decode(Int64.self) { stored.seq = seq }
        guard stored.seq > 0 else { throw StoreError(.corrupt, "the database numbered no broadcast") }
        return stored
    }

    public func broadcast(seq: Int64) async throws -> StoredBroadcast? {
        for row in try await query(on: client, "SELECT \(unescaped: Self.broadcastColumns) FROM broadcasts b WHERE b.seq = \(seq)", logger: logger)
            .decode(BroadcastRow.self) {
            return try Self.broadcast(row)
        }
        return nil
    }

    public func channelSubscriptions(ofDevice deviceID: String) async throws -> [TokenRegistration] {
        var registrations: [TokenRegistration] = []
        for row in try await query(on: client, """
            SELECT \(unescaped: Self.registrationColumns) FROM device_tokens
            WHERE device_id = \(deviceID) AND unregistered_at_ms IS NULL AND strpos(bundle_id, \(TokenScope.channelSubscriptionMarker)) > 0
            ORDER BY created_at_ms
            """, logger: logger).decode(RegistrationRow.self) {
            registrations.append(try Self.registration(row))
        }
        return registrations
    }

    /// What of its channels' newest broadcasts the device has not acked and should still get.
    func pendingBroadcasts(forDevice deviceID: String, nowMilliseconds: Int64) async throws -> [Delivery] {
        try await broadcastDeliveries("""
            SELECT t.token, t.device_id, \(unescaped: Self.broadcastColumns) FROM device_tokens t
            CROSS JOIN LATERAL (
                SELECT * FROM broadcasts WHERE scope = t.bundle_id AND environment = t.environment ORDER BY seq DESC LIMIT 1) b
            WHERE t.device_id = \(deviceID) AND t.unregistered_at_ms IS NULL AND strpos(t.bundle_id, \(TokenScope.channelSubscriptionMarker)) > 0
              AND b.seq > t.broadcast_acked_seq AND b.received_at_ms >= t.created_at_ms AND b.discard_at_ms > \(nowMilliseconds)
            ORDER BY b.seq
            """)
    }

    /// The full sweep's share of broadcasts: those numbered in the window, still their
    /// channel's newest, for the subscriptions of devices connected to `node` that have not
    /// acked them, read from the node's presence (as the sweep's notifications are) and each
    /// subscription by its device. No index on the acked sequence: an ack stays an in-place
    /// update (``broadcastAcksInPlace``). The window sweeps between read the broadcasts only
    /// (``broadcasts(seqAbove:seqAtMost:nowMilliseconds:)``).
    func pendingBroadcasts(
        onNode node: String, seqAbove: Int64, seqAtMost: Int64, nowMilliseconds: Int64, limit: Int
    ) async throws -> [Delivery] {
        try await broadcastDeliveries("""
            SELECT t.token, t.device_id, \(unescaped: Self.broadcastColumns) FROM presence p
            JOIN device_tokens t ON t.device_id = p.device_id AND t.unregistered_at_ms IS NULL
            JOIN broadcasts b ON b.scope = t.bundle_id AND b.environment = t.environment
            WHERE p.node_id = \(node) AND b.seq > \(seqAbove) AND b.seq <= \(seqAtMost) AND b.discard_at_ms > \(nowMilliseconds)
              AND \(unescaped: Self.isChannelsNewest)
              AND b.seq > t.broadcast_acked_seq AND b.received_at_ms >= t.created_at_ms
            ORDER BY b.seq LIMIT \(Int64(max(0, limit)))
            """)
    }

    public func broadcasts(seqAbove: Int64, seqAtMost: Int64, nowMilliseconds: Int64) async throws -> [StoredBroadcast] {
        var broadcasts: [StoredBroadcast] = []
        for row in try await query(on: client, """
            SELECT \(unescaped: Self.broadcastColumns) FROM broadcasts b
            WHERE b.seq > \(seqAbove) AND b.seq <= \(seqAtMost) AND b.discard_at_ms > \(nowMilliseconds)
              AND \(unescaped: Self.isChannelsNewest)
            ORDER BY b.seq
            """, logger: logger).decode(BroadcastRow.self) {
            broadcasts.append(try Self.broadcast(row))
        }
        return broadcasts
    }

    private func broadcastDeliveries(_ sql: PostgresQuery) async throws -> [Delivery] {
        var deliveries: [Delivery] = []
        typealias Row = (ByteBuffer, String, Int64, String, String, String, String, Int16, Int64?, ByteBuffer, Int64, Int64)
        for row in try await query(on: client, sql, logger: logger).decode(Row.self) {
            let broadcast = try Self.broadcast((row.2, row.3, row.4, row.5, row.6, row.7, row.8, row.9, row.10, row.11))
            deliveries.append(broadcast.delivery(to: try Self.token(row.0), deviceID: row.1))
        }
        return deliveries
    }

    /// Moves subscriptions' acked broadcasts up (never down), the newest ack per subscription.
    static func broadcastAcks(_ acks: [(seq: Int64, subscription: DeviceToken, at: Int64)]) -> PostgresQuery? {
        var newest: [DeviceToken: (seq: Int64, at: Int64)] = [:]
        for ack in acks where (newest[ack.subscription]?.seq ?? 0) < ack.seq { newest[ack.subscription] = (ack.seq, ack.at) }
        guard !newest.isEmpty else { return nil }
        let tokens = newest.keys.map { Self.buffer($0.bytes) }
        let seqs = newest.values.map(\.seq), ats = newest.values.map(\.at)
        return """
            UPDATE device_tokens t SET broadcast_acked_seq = u.seq, broadcast_acked_at_ms = u.at
            FROM unnest(\(tokens)::bytea[], \(seqs)::int8[], \(ats)::int8[]) AS u(token, seq, at)
            WHERE t.token = u.token AND t.broadcast_acked_seq < u.seq
            """
    }

    /// Deletes broadcasts accepted before `retainFinishedUntil` that no subscriber can get any
    /// more: past their time, or no longer their channel's newest.
    static func sweepBroadcasts(nowMilliseconds: Int64, retainFinishedUntil: Int64) -> PostgresQuery {
        """
        DELETE FROM broadcasts b WHERE b.received_at_ms < \(retainFinishedUntil) AND (b.discard_at_ms <= \(nowMilliseconds) OR EXISTS (
            SELECT 1 FROM broadcasts n WHERE n.scope = b.scope AND n.environment = b.environment AND n.seq > b.seq))
        """
    }

    public func broadcastReceipts(of id: NotificationID, nowMilliseconds: Int64) async throws -> [Receipt] {
        var receipts: [Receipt] = []
        for row in try await query(on: client, """
            SELECT \(unescaped: Self.broadcastColumns) FROM broadcasts b WHERE b.apns_id = \(id.description) ORDER BY b.seq
            """, logger: logger).decode(BroadcastRow.self) {
            let b = try Self.broadcast(row)
            var newest = (seq: b.seq, receivedAtMilliseconds: b.receivedAtMilliseconds)
            for n in try await query(on: client, """
                SELECT seq, received_at_ms FROM broadcasts WHERE scope = \(b.subscriptionScope) AND environment = \(b.environment.rawValue)
                ORDER BY seq DESC LIMIT 1
                """, logger: logger).decode((Int64, Int64).self) { newest = n }
            for s in try await query(on: client, """
                SELECT token, broadcast_acked_seq, broadcast_acked_at_ms FROM device_tokens
                WHERE bundle_id = \(b.subscriptionScope) AND environment = \(b.environment.rawValue)
                  AND created_at_ms <= \(b.receivedAtMilliseconds)
                  AND (unregistered_at_ms IS NULL OR unregistered_at_ms >= \(b.receivedAtMilliseconds))
                ORDER BY token
                """, logger: logger).decode((ByteBuffer, Int64, Int64?).self) {
                receipts.append(b.receipt(
                    subscription: try Self.token(s.0), ackedSeq: s.1, ackedAtMilliseconds: s.2, newest: newest,
                    discardAtMilliseconds: row.9, nowMilliseconds: nowMilliseconds))
            }
        }
        return receipts
    }
}
