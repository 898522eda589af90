import HeraldCore
import HeraldStore
import Logging
import NIOCore
import NIOPosix
import PostgresNIO

// Nodes, presence and hints (`ClusterStore`). Leases and presence commit without waiting for the
// disk: losing one in a database crash only delays a delivery until the next sweep or reconnect.
extension PostgresStore: ClusterStore {
    @discardableResult
    public func renewLease(
        node: String, startedAtMilliseconds: Int64, untilMilliseconds: Int64, nowMilliseconds: Int64
    ) async throws -> LeaseRenewal {
        // One statement, so one round trip and one answer to wake for, on the control pool
        // (whose sessions commit without waiting for the disk: a renewal lost in a database crash
        // is made again at the next beat). The update locks the node's row, or finds it gone
        // (the insert beside it then registers the node again): reaping deletes a node and its
        // presence in one transaction, so a row found means presence intact. The reap leaves this
        // node's own row alone (two changes to one row in one statement are undefined) and locks
        // what it removes with SKIP LOCKED, so it never waits: not for a node renewing itself
        // (alive), not for another node reaping the same one. Only a renewal can wait (for a reap
        // of its own row), and nothing waits for a reap, so heartbeats never deadlock — not even
        // every node's at once after a database failover, each seeing the others lapsed. Every
        // part reads the snapshot the statement started with: the count of live nodes is of the
        // others, whose leases reaping does not touch, and this one.
        let rows = try await query(on: control, """
            WITH renewed AS (
                UPDATE nodes SET started_at_ms = \(startedAtMilliseconds), lease_until_ms = \(untilMilliseconds)
                WHERE node_id = \(node) RETURNING 1
            ), registered AS (
                INSERT INTO nodes (node_id, started_at_ms, lease_until_ms)
                SELECT \(node), \(startedAtMilliseconds), \(untilMilliseconds) WHERE NOT EXISTS (SELECT 1 FROM renewed)
                ON CONFLICT (node_id) DO NOTHING
            ), reaped AS (
                DELETE FROM nodes WHERE node_id IN (
                    SELECT node_id FROM nodes WHERE lease_until_ms < \(nowMilliseconds) AND node_id <> \(node)
                    FOR UPDATE SKIP LOCKED)
                RETURNING node_id
            ), gone AS (
                DELETE FROM presence WHERE node_id IN (SELECT node_id FROM reaped)
            )
            SELECT EXISTS (SELECT 1 FROM renewed), ARRAY(SELECT node_id FROM reaped),
                (SELECT count(*) FROM nodes WHERE lease_until_ms >= \(nowMilliseconds) AND node_id <> \(node))
            """, logger: self.logger)
        // One row; read to the end. (Leaving a row sequence early would also be safe: PostgresNIO
        // drains a cancelled query's rest and keeps the connection, `queryCancelled` being no
        // reason to close it.)
        var renewal: LeaseRenewal?
        for (continued, reaped, others) in try rows.decode((Bool, [String], Int64).self) {
            renewal = LeaseRenewal(continued: continued, reaped: reaped.sorted(), liveNodes: Int(clamping: others) + 1)
        }
        guard let renewal else { throw PostgresStoreError("the lease renewal returned no row") }
        return renewal
    }

    public func reclaimPresence(node: String, devices: [PresenceClaim], atMilliseconds: Int64) async throws -> Set<String> {
        guard !devices.isEmpty else { return [] }
        let ids = devices.map(\.deviceID)
        let connections = devices.map(\.connection)
        let logger = self.logger
        return try await transaction(relaxed: true, pipelined: { c in
            let claimed = Self.send("""
                INSERT INTO presence (device_id, node_id, connection_id, since_ms)
                SELECT d, \(node), k, \(atMilliseconds) FROM unnest(\(ids)::text[], \(connections)::int8[]) AS u(d, k)
                ON CONFLICT (device_id) DO UPDATE SET connection_id = excluded.connection_id, since_ms = excluded.since_ms
                WHERE presence.node_id = excluded.node_id AND presence.connection_id <> excluded.connection_id
                """, on: c, logger: logger)
            let elsewhere = Self.send(
                "SELECT device_id FROM presence WHERE device_id = ANY(\(ids)) AND node_id <> \(node)", on: c, logger: logger)
            return {
                _ = try await claimed.get()
                return Set(try await elsewhere.get().map { try $0.decode(String.self) })
            }
        })
    }

    public func endLease(node: String) async throws {
        try await transaction(on: control, statements: [
            "DELETE FROM presence WHERE node_id = \(node)", "DELETE FROM nodes WHERE node_id = \(node)",
        ])
    }

    public func liveNodes(nowMilliseconds: Int64) async throws -> [NodeRecord] {
        var nodes: [NodeRecord] = []
        for (id, started, until) in try await query(on: control, 
            "SELECT node_id, started_at_ms, lease_until_ms FROM nodes WHERE lease_until_ms >= \(nowMilliseconds) ORDER BY node_id",
            logger: logger).decode((String, Int64, Int64).self) {
            nodes.append(NodeRecord(nodeID: id, startedAtMilliseconds: started, leaseUntilMilliseconds: until))
        }
        return nodes
    }

    public func claimPresence(deviceID: String, node: String, connection: Int64, atMilliseconds: Int64) async throws -> PresenceHolder? {
        let logger = self.logger
        // The previous holder is read (and locked) by the statement before the claim, in the same
        // round trip.
        return try await transaction(relaxed: true, pipelined: { c in
            let before = Self.send(
                "SELECT node_id, connection_id FROM presence WHERE device_id = \(deviceID) FOR UPDATE", on: c, logger: logger)
            let claimed = Self.send("""
                INSERT INTO presence (device_id, node_id, connection_id, since_ms) VALUES (\(deviceID), \(node), \(connection), \(atMilliseconds))
                ON CONFLICT (device_id) DO UPDATE
                SET node_id = excluded.node_id, connection_id = excluded.connection_id, since_ms = excluded.since_ms
                """, on: c, logger: logger)
            return {
                let previous = try await before.get().decode((String, Int64).self).first
                _ = try await claimed.get()
                return previous.map { PresenceHolder(node: $0.0, connection: $0.1) }
            }
        })
    }

    public func withdrawClaim(deviceID: String, node: String, connection: Int64, restoring previous: PresenceHolder?) async throws {
        guard let previous else {
            try await releasePresence(deviceID: deviceID, node: node, connection: connection)
            return
        }
        try await transaction(relaxed: true, statements: ["""
            UPDATE presence SET node_id = \(previous.node), connection_id = \(previous.connection)
            WHERE device_id = \(deviceID) AND node_id = \(node) AND connection_id = \(connection)
            """])
    }

    public func releasePresence(deviceID: String, node: String, connection: Int64) async throws {
        try await transaction(relaxed: true, statements: [
            "DELETE FROM presence WHERE device_id = \(deviceID) AND node_id = \(node) AND connection_id = \(connection)",
        ])
    }

    public func presence(deviceIDs: [String]) async throws -> [String: String] {
        guard !deviceIDs.isEmpty else { return [:] }
        var nodes: [String: String] = [:]
        for (device, node) in try await query(on: client, 
            "SELECT device_id, node_id FROM presence WHERE device_id = ANY(\(deviceIDs))", logger: logger).decode((String, String).self) {
            nodes[device] = node
        }
        return nodes
    }

    public func heldDeliveries(seqs: [Int64]) async throws -> [Delivery] {
        guard !seqs.isEmpty else { return [] }
        // No discard filter: a hint follows its commit by milliseconds, and `apns-expiration: 0`
        // is for a device connected at that moment, which this is.
        // One primary-key lookup per hinted row, whatever the statistics say (see `waiting(for:)`).
        return try await deliveries("""
            SELECT \(unescaped: Self.notificationColumns), t.device_id
            FROM unnest(\(seqs)::int8[]) AS u(seq)
            CROSS JOIN LATERAL (SELECT * FROM notifications WHERE seq = u.seq AND state = 0 OFFSET 0) n
            JOIN device_tokens t ON t.token = n.token
            WHERE t.device_id IS NOT NULL AND t.unregistered_at_ms IS NULL
            ORDER BY n.seq
            """)
    }

    public func newestSeq() async throws -> Int64 {
        for seq in try await query(on: client, "SELECT greatest((SELECT coalesce(max(seq), 0) FROM notifications), (SELECT coalesce(max(seq), 0) FROM broadcasts))", logger: logger).decode(Int64.self) {
            return seq
        }
        return 0
    }

    public func heldDeliveries(
        onNode node: String, seqAbove: Int64, seqAtMost: Int64, nowMilliseconds: Int64, limit: Int
    ) async throws -> [Delivery] {
        // A window of sequence numbers is read through the primary key (its rows, then their
        // tokens and presence by key); from 0, through the node's presence (every connected
        // device's held rows by token). The planner picks by the window's size. A full sweep
        // (from 0) adds the broadcasts the node's subscribers have not acked; a window's
        // broadcasts are the node's to hand out from its own index (`broadcasts(seqAbove:…)`).
        try await deliveries("""
            SELECT \(unescaped: Self.notificationColumns), t.device_id
            FROM presence p
            JOIN device_tokens t ON t.device_id = p.device_id AND t.unregistered_at_ms IS NULL
            JOIN notifications n ON n.token = t.token AND n.state = 0
            WHERE p.node_id = \(node) AND n.seq > \(seqAbove) AND n.seq <= \(seqAtMost) AND n.discard_at_ms > \(nowMilliseconds)
            ORDER BY n.seq LIMIT \(Int64(max(0, limit)))
            """) + (seqAbove > 0 ? [] : pendingBroadcasts(onNode: node, seqAbove: seqAbove, seqAtMost: seqAtMost, nowMilliseconds: nowMilliseconds, limit: limit))
    }

    /// The notification channel of a node (node ids are checked by ``NodeID``).
    static func channel(_ node: String) -> String { "herald_node_" + node }

    /// A NOTIFY payload must stay under 8,000 bytes: sequence numbers go in chunks.
    static let hintPayloadLimit = 7_900

    static func payloads(_ seqs: [Int64]) -> [String] {
        var payloads: [String] = []
        var current = ""
        for seq in seqs {
            let text = String(seq)
            if !current.isEmpty, current.utf8.count + 1 + text.utf8.count > hintPayloadLimit {
                payloads.append(current)
                current = ""
            }
            current += current.isEmpty ? text : "," + text
        }
        if !current.isEmpty { payloads.append(current) }
        return payloads
    }

    /// The sequence numbers of a hint's payload: a held notification's (positive) or a
    /// broadcast's key (negative, ``Delivery/key(ofBroadcast:)``); anything else is skipped.
    static func seqs(inPayload payload: String) -> [Int64] {
        payload.split(separator: ",", omittingEmptySubsequences: true).compactMap { Int64($0) }.filter { $0 != 0 && $0 != .min }
    }

    public func sendHints(_ hints: [String: [Int64]]) async throws {
        var channels: [String] = []
        var payloads: [String] = []
        for (node, seqs) in hints where NodeID.problem(node) == nil {
            for payload in Self.payloads(seqs) {
                channels.append(Self.channel(node))
                payloads.append(payload)
            }
        }
        guard !channels.isEmpty else { return }
        // One statement, its own short transaction: never the one that stored the pushes.
        try await query(on: client, 
            "SELECT pg_notify(c, p) FROM unnest(\(channels)::text[], \(payloads)::text[]) AS u(c, p)", logger: logger)
    }

    public func receiveHints(
        node: String, onListening: @escaping @Sendable () -> Void, _ handle: @escaping @Sendable ([Int64]) -> Void
    ) async throws {
        let connection = try await PostgresConnection.connect(
            on: dataLoops.any(), configuration: listenerConfiguration, id: 0, logger: logger
        ).get()
        try await withTaskCancellationHandler {
            do {
                try await connection.listen(on: Self.channel(node)) { notifications in
                    onListening()
                    for try await notification in notifications {
                        handle(Self.seqs(inPayload: notification.payload))
                    }
                }
            } catch {
                try? await connection.close()
                throw error
            }
            try? await connection.close()
        } onCancel: {
            let _: EventLoopFuture<Void> = connection.close()
        }
    }
}
