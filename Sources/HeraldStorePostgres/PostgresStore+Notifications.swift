import HeraldCore
import HeraldStore
import Logging
import NIOCore
import PostgresNIO

// Accepting, holding and delivering notifications.
extension PostgresStore {
    static let notificationColumns = """
        n.seq, n.apns_id, n.token, n.bundle_id, n.push_type, n.priority, n.expiration, n.collapse_id, n.payload,
        n.received_at_ms, n.discard_at_ms, n.state, n.sent_at_ms, n.acked_at_ms, n.ended_at_ms
        """
    typealias NotificationRow = (
        Int64, String, ByteBuffer, String, String, Int16, Int64?, String?, ByteBuffer, Int64, Int64, Int16, Int64?, Int64?, Int64?
    )

    struct Record {
        var seq: Int64
        var notification: StoredNotification
        var discardAt: Int64
        var state: NotificationState
        var sentAt: Int64?
        var ackedAt: Int64?
        var endedAt: Int64?
    }

    static func record(_ row: NotificationRow) throws -> Record {
        guard let id = NotificationID(header: row.1), let priority = Priority(rawValue: Int(row.5)),
              let state = NotificationState(rawValue: Int(row.11)) else {
            throw StoreError(.corrupt, "notification \(row.0) has an invalid id, priority or state")
        }
        let notification = StoredNotification(
            id: id, token: try token(row.2), bundleID: row.3, pushType: PushType(rawValue: row.4), priority: priority,
            expiration: Expiration(storedSeconds: row.6), collapseID: row.7.flatMap(CollapseID.init), payload: bytes(row.8),
            receivedAtMilliseconds: row.9)
        return Record(seq: row.0, notification: notification, discardAt: row.10, state: state, sentAt: row.12, ackedAt: row.13, endedAt: row.14)
    }

    // MARK: accepting

    /// What waits for a token while a batch is decided: held rows read from the database, and
    /// the batch's own notifications decided so far.
    private enum Waiting {
        case stored(seq: Int64, apnsID: String, collapseID: String?, sent: Bool)
        case batch(index: Int)
    }

    public func accept(
        _ batch: [StoredNotification], policy: StorePolicy, environment: PushEnvironment, nowMilliseconds: Int64
    ) async throws -> [SubmissionOutcome] {
        guard !batch.isEmpty else { return [] }
        let logger = self.logger
        // Three round trips' worth of statements in two: the lock and the read behind it go out
        // together (with the BEGIN), the insert with the COMMIT.
        return try await transaction(pipelined: { c in
            let tokens = Array(Set(batch.map { Self.buffer($0.token.bytes) })).sorted {
                $0.readableBytesView.lexicographicallyPrecedes($1.readableBytesView)
            }
            let locked = Self.send(Self.lockingRegistrations(tokens), on: c, logger: logger)
            let held = Self.send(Self.heldRows(of: tokens), on: c, logger: logger)
            let (registrations, nodes) = try Self.registrations(try await locked.get())
            let outcomes = batch.map { n in
                Admission.decide(
                    registration: registrations[n.token], notification: n, environment: environment, nowMilliseconds: nowMilliseconds)
            }
            let waiting = try Self.waiting(try await held.get())
            let (states, replacedRows) = Self.storeAndForward(batch, outcomes, waiting: waiting, connected: nodes, policy: policy)
            // One statement for the batch: the rows it replaces ended, its own rows inserted in its order.
            let rows = batch.indices.filter { states[$0] != nil }
            guard !rows.isEmpty || !replacedRows.isEmpty else { return { [outcomes] in outcomes } }
            let inserted = Self.send(
                Self.insert(rows.map { (batch[$0], states[$0] ?? .held) }, replacing: replacedRows, policy: policy, nowMilliseconds: nowMilliseconds),
                on: c, logger: logger)
            return { [outcomes] in
                var outcomes = outcomes
                let seqs = try Self.sequenceNumbers(try await inserted.get(), expected: rows.count)
                for (index, seq) in zip(rows, seqs) {
                    if case .stored(_, let deviceID, _) = outcomes[index] {
                        outcomes[index] = .stored(
                            seq: seq, deviceID: deviceID, presence: nodes[batch[index].token].map(DevicePresence.node) ?? .nowhere)
                    }
                }
                return outcomes
            }
        })
    }

    /// Locks the batch's registrations in token order (accepting for a token, replacing what
    /// waits for it and unregistering it are serialized across nodes) and reads, with each, the
    /// node its device is connected to now (its presence), if any: what replacement needs, and
    /// what routing across nodes needs after the commit.
    private static func lockingRegistrations(_ sortedTokens: [ByteBuffer]) -> PostgresQuery {
        """
        SELECT \(unescaped: registrationColumns),
               (SELECT p.node_id FROM presence p WHERE p.device_id = device_tokens.device_id)
        FROM device_tokens WHERE token = ANY(\(sortedTokens)) ORDER BY token FOR UPDATE
        """
    }

    private static func registrations(
        _ result: PostgresQueryResult
    ) throws -> (registrations: [DeviceToken: TokenRegistration], nodes: [DeviceToken: String]) {
        var registrations: [DeviceToken: TokenRegistration] = [:]
        var nodes: [DeviceToken: String] = [:]
        for row in result {
            let row = try row.decode(PresentRegistrationRow.self)
            let found = try Self.registration((row.0, row.1, row.2, row.3, row.4, row.5, row.6))
            registrations[found.token] = found
            if let node = row.7 { nodes[found.token] = node }
        }
        return (registrations, nodes)
    }

    /// The held notifications of these tokens, oldest first (read for every token of the batch;
    /// only the admitted pushes consult them).
    ///
    /// One index lookup per token (`OFFSET 0` keeps the planner from flattening the lateral
    /// subquery into a scan of every held row). During a burst the table's statistics lag its
    /// contents, and the plan chosen from them for `token = ANY(…) AND state = 0` scanned every
    /// entry of the discard index, dead ones included: 6.4 ms for 200 tokens against 0.8.
    private static func heldRows(of tokens: [ByteBuffer]) -> PostgresQuery {
        """
        SELECT n.seq, u.token, n.apns_id, n.collapse_id, n.sent
        FROM unnest(\(tokens)::bytea[]) AS u(token)
        CROSS JOIN LATERAL (
            SELECT seq, apns_id, collapse_id, sent_at_ms IS NOT NULL AS sent FROM notifications
            WHERE token = u.token AND state = 0 OFFSET 0) n
        ORDER BY n.seq
        """
    }

    private static func waiting(_ result: PostgresQueryResult) throws -> [DeviceToken: [Waiting]] {
        var waiting: [DeviceToken: [Waiting]] = [:]
        for row in result {
            let (seq, token, apnsID, collapseID, sent) = try row.decode((Int64, ByteBuffer, String, String?, Bool).self)
            waiting[try Self.token(token), default: []].append(.stored(seq: seq, apnsID: apnsID, collapseID: collapseID, sent: sent))
        }
        return waiting
    }

    /// Store-and-forward, in the batch's order (the same rules as the other stores): the state
    /// each notification of the batch is stored in (`nil`: not stored), and the rows it replaces.
    private static func storeAndForward(
        _ batch: [StoredNotification], _ outcomes: [SubmissionOutcome], waiting: [DeviceToken: [Waiting]],
        connected nodes: [DeviceToken: String], policy: StorePolicy
    ) -> (states: [NotificationState?], replacedRows: [Int64]) {
        var waiting = waiting
        var states = [NotificationState?](repeating: nil, count: batch.count)
        var replacedRows: [Int64] = []
        for (index, n) in batch.enumerated() {
            switch outcomes[index] {
            case .rejected: continue
            case .discarded: states[index] = .expired
            case .stored:
                states[index] = .held
                // Replacement is for devices that are offline. One connected to a node gets
                // every push, as on a single gateway (where its session has each in memory
                // before a later one could replace it); here the next push may be committed
                // before the hint of this one reaches the node holding the device.
                guard n.expiration != .immediately, nodes[n.token] == nil else { continue }
                var kept: [Waiting] = []
                var unsent: [Waiting] = []
                for entry in waiting[n.token] ?? [] {
                    let (apnsID, collapseID, sent): (String, String?, Bool)
                    switch entry {
                    case .stored(_, let id, let collapse, let wasSent): (apnsID, collapseID, sent) = (id, collapse, wasSent)
                    case .batch(let i):
                        guard states[i] == .held else { continue }
                        (apnsID, collapseID, sent) = (batch[i].id.description, batch[i].collapseID?.value, false)
                    }
                    if sent {
                        kept.append(entry)
                    } else if apnsID == n.id.description || (n.collapseID != nil && collapseID == n.collapseID?.value) {
                        replace(entry, &replacedRows, &states)
                    } else {
                        unsent.append(entry)
                    }
                }
                // Keep the newest `maximumWaiting - 1` of what waits unsent; the new one makes `maximumWaiting`.
                for entry in unsent.dropLast(policy.maximumWaiting(for: n.pushType) - 1) { replace(entry, &replacedRows, &states) }
                let survivors = unsent.suffix(policy.maximumWaiting(for: n.pushType) - 1)
                waiting[n.token] = kept + survivors + [.batch(index: index)]
            }
        }
        return (states, replacedRows)
    }

    /// Ends the replaced rows (one primary-key lookup each, whatever the statistics say) and
    /// inserts the new ones in one statement, the new rows in their order, returning their
    /// sequence numbers (``sequenceNumbers(_:expected:)``).
    private static func insert(
        _ rows: [(StoredNotification, NotificationState)], replacing replacedRows: [Int64], policy: StorePolicy, nowMilliseconds: Int64
    ) -> PostgresQuery {
        var apnsIDs: [String] = [], tokenBytes: [ByteBuffer] = [], bundles: [String] = [], types: [String] = []
        var priorities: [Int64] = [], expirations: [Int64] = [], collapses: [String] = [], payloads: [ByteBuffer] = []
        var received: [Int64] = [], discards: [Int64] = [], rowStates: [Int64] = [], ended: [Int64] = []
        for (n, state) in rows {
            apnsIDs.append(n.id.description)
            tokenBytes.append(buffer(n.token.bytes))
            bundles.append(n.bundleID)
            types.append(n.pushType.rawValue)
            priorities.append(Int64(n.priority.rawValue))
            expirations.append(n.expiration.storedSeconds ?? absent)
            collapses.append(n.collapseID?.value ?? "")
            payloads.append(buffer(n.payload))
            received.append(n.receivedAtMilliseconds)
            discards.append(n.discardAtMilliseconds(policy: policy))
            rowStates.append(Int64(state.rawValue))
            ended.append(state == .held ? absent : nowMilliseconds)
        }
        return """
            WITH replaced AS (
                UPDATE notifications n SET state = \(Int16(NotificationState.replaced.rawValue)), ended_at_ms = \(nowMilliseconds)
                FROM unnest(\(replacedRows)::int8[]) AS r(seq)
                WHERE n.seq = r.seq AND n.state = 0)
            INSERT INTO notifications
                (apns_id, token, bundle_id, push_type, priority, expiration, collapse_id, payload, received_at_ms,
                 discard_at_ms, state, ended_at_ms)
            SELECT a, t, b, p, pr, nullif(e, \(absent)), nullif(c, ''), pl, r, d, s, nullif(en, \(absent))
            FROM unnest(\(apnsIDs)::text[], \(tokenBytes)::bytea[], \(bundles)::text[], \(types)::text[],
                        \(priorities)::int8[], \(expirations)::int8[], \(collapses)::text[], \(payloads)::bytea[],
                        \(received)::int8[], \(discards)::int8[], \(rowStates)::int8[], \(ended)::int8[])
                WITH ORDINALITY AS u(a, t, b, p, pr, e, c, pl, r, d, s, en, ord)
            ORDER BY ord
            RETURNING seq
            """
    }

    /// The sequence numbers an ``insert(_:replacing:policy:nowMilliseconds:)`` returned, in the
    /// order of its rows (identity values are drawn in the order the rows are inserted).
    private static func sequenceNumbers(_ result: PostgresQueryResult, expected: Int) throws -> [Int64] {
        let seqs = try result.map { try $0.decode(Int64.self) }
        guard seqs.count == expected else {
            throw StoreError(.corrupt, "inserting \(expected) notifications returned \(seqs.count) sequence numbers")
        }
        return seqs.sorted()
    }

    typealias PresentRegistrationRow = (ByteBuffer, String, String, String?, Int64, Int64?, Int64?, String?)

    /// Stands for NULL in the integer arrays of the batch insert.
    static var absent: Int64 { Int64.min }

    private static func replace(_ entry: Waiting, _ rows: inout [Int64], _ states: inout [NotificationState?]) {
        switch entry {
        case .stored(let seq, _, _, _): rows.append(seq)
        case .batch(let index): states[index] = .replaced
        }
    }

    // MARK: reading what is held

    public func storedNotifications(for token: DeviceToken, policy: StorePolicy, nowMilliseconds: Int64) async throws -> [StoredNotification] {
        let rows = try await query(on: client, """
            SELECT \(unescaped: Self.notificationColumns) FROM notifications n
            WHERE n.token = \(Self.buffer(token.bytes)) AND n.state = 0 AND n.discard_at_ms > \(nowMilliseconds) ORDER BY n.seq
            """, logger: logger)
        var notifications: [StoredNotification] = []
        for row in try rows.decode(NotificationRow.self) { notifications.append(try Self.record(row).notification) }
        return notifications
    }

    public func checkReachable() async throws {
        for _ in try await query(on: control, "SELECT 1", logger: logger) {}
    }

    public func storedNotificationCount() async throws -> Int {
        for count in try await query(on: client, "SELECT count(*) FROM notifications WHERE state = 0", logger: logger).decode(Int64.self) {
            return Int(clamping: count)
        }
        return 0
    }

    /// Deliveries from rows of `notificationColumns` followed by the device id.
    func deliveries(_ query: PostgresQuery) async throws -> [Delivery] {
        var deliveries: [Delivery] = []
        for row in try await self.query(on: client, query, logger: logger).decode(DeliveryRow.self) {
            let record = try Self.record((row.0, row.1, row.2, row.3, row.4, row.5, row.6, row.7, row.8, row.9, row.10, row.11, row.12, row.13, row.14))
            deliveries.append(Delivery(seq: record.seq, deviceID: row.15, notification: record.notification))
        }
        return deliveries
    }

    typealias DeliveryRow = (
        Int64, String, ByteBuffer, String, String, Int16, Int64?, String?, ByteBuffer, Int64, Int64, Int16, Int64?, Int64?, Int64?, String
    )

    public func pendingDeliveries(forDevice deviceID: String, nowMilliseconds: Int64) async throws -> [Delivery] {
        try await heldDeliveries(forDevice: deviceID, nowMilliseconds: nowMilliseconds)
            + pendingBroadcasts(forDevice: deviceID, nowMilliseconds: nowMilliseconds)
    }

    private func heldDeliveries(forDevice deviceID: String, nowMilliseconds: Int64) async throws -> [Delivery] {
        try await deliveries("""
            SELECT \(unescaped: Self.notificationColumns), t.device_id FROM notifications n JOIN device_tokens t ON t.token = n.token
            WHERE t.device_id = \(deviceID) AND t.unregistered_at_ms IS NULL AND n.state = 0 AND n.discard_at_ms > \(nowMilliseconds)
            ORDER BY n.seq
            """)
    }

    // MARK: recording

    /// Records delivery events in one transaction that does not wait for the disk: losing an ack
    /// in a database crash means the notification is sent again (the device drops it by apns-id).
    public func record(_ events: [DeliveryEvent]) async throws {
        guard !events.isEmpty else { return }
        var ackSeqs: [Int64] = [], ackSent: [Int64] = [], ackAt: [Int64] = []
        var sentSeqs: [Int64] = [], sentAt: [Int64] = []
        var endSeqs: [Int64] = [], endStates: [Int64] = [], endAt: [Int64] = []
        var broadcastAcks: [(seq: Int64, subscription: DeviceToken, at: Int64)] = []
        for event in events {
            switch event {
            case .acked(let seq, let sent, let acked):
                ackSeqs.append(seq); ackSent.append(sent); ackAt.append(acked)
            case .sent(let seq, let at):
                sentSeqs.append(seq); sentAt.append(at)
            case .replaced(let seq, let at):
                endSeqs.append(seq); endStates.append(Int64(NotificationState.replaced.rawValue)); endAt.append(at)
            case .dropped(let seq, let at):
                endSeqs.append(seq); endStates.append(Int64(NotificationState.dropped.rawValue)); endAt.append(at)
            case .broadcastAcked(let seq, let subscription, let at):
                broadcastAcks.append((seq, subscription, at))
            }
        }
        var updates: [PostgresQuery] = []
        if let acks = Self.broadcastAcks(broadcastAcks) { updates.append(acks) }
        if !ackSeqs.isEmpty {
            updates.append("""
                UPDATE notifications n SET state = \(Int16(NotificationState.acked.rawValue)),
                    sent_at_ms = coalesce(n.sent_at_ms, u.sent), acked_at_ms = u.acked, ended_at_ms = u.acked
                FROM unnest(\(ackSeqs)::int8[], \(ackSent)::int8[], \(ackAt)::int8[]) AS u(seq, sent, acked)
                WHERE n.seq = u.seq AND n.state <> \(Int16(NotificationState.acked.rawValue))
                """)
        }
        if !sentSeqs.isEmpty {
            updates.append("""
                UPDATE notifications n SET sent_at_ms = u.at
                FROM unnest(\(sentSeqs)::int8[], \(sentAt)::int8[]) AS u(seq, at)
                WHERE n.seq = u.seq AND n.sent_at_ms IS NULL
                """)
        }
        if !endSeqs.isEmpty {
            updates.append("""
                UPDATE notifications n SET state = u.state, ended_at_ms = u.at
                FROM unnest(\(endSeqs)::int8[], \(endStates)::int8[], \(endAt)::int8[]) AS u(seq, state, at)
                WHERE n.seq = u.seq AND n.state = 0
                """)
        }
        // The updates do not depend on one another: all of them go out at once, with the BEGIN and the COMMIT.
        try await transaction(relaxed: true, statements: updates)
    }

    public func sweep(nowMilliseconds: Int64, retainFinishedUntil: Int64) async throws -> Int {
        let logger = self.logger
        // Four statements, none needing another's answer: one round trip with the BEGIN and the COMMIT.
        return try await transaction(relaxed: true, pipelined: { c in
            let dropped = Self.send("""
                UPDATE notifications SET state = \(Int16(NotificationState.dropped.rawValue)), ended_at_ms = \(nowMilliseconds)
                WHERE state = 0 AND discard_at_ms <= \(nowMilliseconds) AND expiration = 0
                """, on: c, logger: logger)
            let expired = Self.send("""
                WITH expired AS (
                    UPDATE notifications SET state = \(Int16(NotificationState.expired.rawValue)), ended_at_ms = \(nowMilliseconds)
                    WHERE state = 0 AND discard_at_ms <= \(nowMilliseconds) RETURNING 1)
                SELECT count(*) FROM expired
                """, on: c, logger: logger)
            let deleted = Self.send(
                "DELETE FROM notifications WHERE state <> 0 AND ended_at_ms < \(retainFinishedUntil)", on: c, logger: logger)
            let broadcasts = Self.send(
                Self.sweepBroadcasts(nowMilliseconds: nowMilliseconds, retainFinishedUntil: retainFinishedUntil), on: c, logger: logger)
            return {
                _ = try await dropped.get()
                let count = try await expired.get().first.map { try $0.decode(Int64.self) } ?? 0
                _ = try await deleted.get()
                _ = try await broadcasts.get()
                return Int(clamping: count)
            }
        })
    }
}
