import HeraldCore

/// A store that keeps everything in memory: for tests and for trying things out. Same semantics
/// as the durable stores, minus the durability.
public actor InMemoryStore: GatewayStore {
    private struct Record {
        var seq: Int64
        var notification: StoredNotification
        var discardAt: Int64
        var state: NotificationState = .held
        var sentAt: Int64?
        var ackedAt: Int64?
        var endedAt: Int64?
    }

    private var keys: [String: ProviderKey] = [:]
    /// When each key was registered and, if it was, revoked.
    private var keyTimes: [String: (created: Int64, revoked: Int64?)] = [:]
    private var topicOwners: [String: String] = [:]
    /// Channels by app and environment, oldest first.
    private var channelRecords: [String: [ChannelRecord]] = [:]
    private var tokens: [DeviceToken: TokenRegistration] = [:]
    private var devices: [String: DeviceRecord] = [:]
    /// Tokens reported in feedback for their device's inactivity (until it connects again).
    private var inactivityReported: Set<DeviceToken> = []
    private var feedback: [(bundleID: String, environment: PushEnvironment, entry: FeedbackEntry)] = []
    /// Every notification record, by sequence number (ascending = order of acceptance).
    private var records: [Int64: Record] = [:]
    private var nextSeq: Int64 = 1
    /// Broadcasts, stored once each (``StoredBroadcast``), by sequence number, with their discard time.
    var broadcastRecords: [Int64: (broadcast: StoredBroadcast, discardAt: Int64)] = [:]
    /// Each channel subscription's newest acked broadcast and when it was acked.
    var subscriptionAcks: [DeviceToken: (seq: Int64, at: Int64)] = [:]

    /// While set, commits and reachability checks wait (``holdCommits()``).
    private var commitsHeld = false
    private var waitingForRelease: [CheckedContinuation<Void, Never>] = []

    public init() {}

    /// Makes commits (`accept`) and ``checkReachable()`` wait until ``releaseCommits()``: a
    /// store that stopped answering, for tests of the gateway's bounded waits.
    public func holdCommits() { commitsHeld = true }

    /// Lets waiting and future commits go on.
    public func releaseCommits() {
        commitsHeld = false
        let waiting = waitingForRelease
        waitingForRelease = []
        for continuation in waiting { continuation.resume() }
    }

    func waitWhileCommitsHeld() async {
        while commitsHeld { await withCheckedContinuation { waitingForRelease.append($0) } }
    }

    public func checkReachable() async { await waitWhileCommitsHeld() }

    public func registerKey(_ key: ProviderKey, topics: [String], atMilliseconds: Int64) throws {
        guard keys[key.keyID] == nil else { throw StoreError(.keyExists, "key \(key.keyID) is already registered") }
        for topic in topics {
            if let owner = topicOwners[topic], owner != key.teamID {
                throw StoreError(.topicOwnedByAnotherTeam, "topic \(topic) belongs to team \(owner), not \(key.teamID)")
            }
        }
        keys[key.keyID] = key
        keyTimes[key.keyID] = (atMilliseconds, nil)
        for topic in topics { topicOwners[topic] = key.teamID }
    }

    public func key(id: String) -> ProviderKey? { keyTimes[id]?.revoked == nil ? keys[id] : nil }

    public func topics(ofTeam teamID: String) -> Set<String> {
        Set(topicOwners.filter { $0.value == teamID }.map(\.key))
    }

    public func registerTokens(_ registrations: [TokenRegistration]) throws {
        for registration in registrations where tokens[registration.token] != nil {
            throw StoreError(.tokenExists, "token \(registration.token) is already registered")
        }
        for registration in registrations { tokens[registration.token] = registration }
    }

    public func unregisterToken(_ token: DeviceToken, atMilliseconds: Int64) -> Bool {
        guard var registration = tokens[token] else { return false }
        if registration.unregisteredAtMilliseconds == nil {
            registration.unregisteredAtMilliseconds = atMilliseconds
            tokens[token] = registration
            // An app's token, or a Web Push subscription (in its app's list); never a Live
            // Activity's or a channel's.
            let scope = registration.scope
            switch scope.kind {
            case .app, .webPush:
                feedback.append((scope.bundleID, registration.environment, FeedbackEntry(token: token, atMilliseconds: atMilliseconds)))
            case .pushToStart, .activity, .channel, .widgets, .pushKit:
                break
            }
        }
        for (seq, record) in records where record.notification.token == token && record.state == .held {
            end(seq, .dropped, at: atMilliseconds)
        }
        return true
    }

    public func registration(of token: DeviceToken) -> TokenRegistration? { tokens[token] }

    public func accept(
        _ batch: [StoredNotification], policy: StorePolicy, environment: PushEnvironment, nowMilliseconds: Int64
    ) async -> [SubmissionOutcome] {
        await waitWhileCommitsHeld()
        return batch.map { notification in
            let outcome = Admission.decide(
                registration: tokens[notification.token], notification: notification,
                environment: environment, nowMilliseconds: nowMilliseconds)
            switch outcome {
            case .rejected: return outcome
            case .discarded:
                insert(notification, policy: policy, state: .expired, now: nowMilliseconds)
                return outcome
            case .stored(_, let deviceID, _):
                if notification.expiration != .immediately { makeRoom(for: notification, policy: policy, now: nowMilliseconds) }
                let seq = insert(notification, policy: policy, state: .held, now: nowMilliseconds)
                return .stored(seq: seq, deviceID: deviceID)
            }
        }
    }

    /// Store-and-forward replacement: among what still waits for the token (not yet sent), the
    /// same apns-id and the same collapse id are replaced, and only the newest `policy.maximumWaiting(for:)` stay.
    private func makeRoom(for notification: StoredNotification, policy: StorePolicy, now: Int64) {
        let waiting = records.values
            .filter { $0.notification.token == notification.token && $0.state == .held && $0.sentAt == nil }
            .sorted { $0.seq < $1.seq }
        var kept: [Int64] = []
        for record in waiting {
            if record.notification.id == notification.id
                || (notification.collapseID != nil && record.notification.collapseID == notification.collapseID) {
                end(record.seq, .replaced, at: now)
            } else {
                kept.append(record.seq)
            }
        }
        for seq in kept.dropLast(policy.maximumWaiting(for: notification.pushType) - 1) { end(seq, .replaced, at: now) }
    }

    @discardableResult
    private func insert(_ notification: StoredNotification, policy: StorePolicy, state: NotificationState, now: Int64) -> Int64 {
        let seq = takeSeq()
        var record = Record(seq: seq, notification: notification, discardAt: notification.discardAtMilliseconds(policy: policy))
        record.state = state
        if state != .held { record.endedAt = now }
        records[seq] = record
        return seq
    }

    private func end(_ seq: Int64, _ state: NotificationState, at time: Int64) {
        guard var record = records[seq], record.state == .held else { return }
        record.state = state
        record.endedAt = time
        records[seq] = record
    }

    public func storedNotifications(for token: DeviceToken, policy: StorePolicy, nowMilliseconds: Int64) -> [StoredNotification] {
        records.values
            .filter { $0.notification.token == token && $0.state == .held && $0.discardAt > nowMilliseconds }
            .sorted { $0.seq < $1.seq }
            .map(\.notification)
    }

    public func storedNotificationCount() -> Int { records.values.filter { $0.state == .held }.count }

    // MARK: devices

    public func deviceConnected(id: String, publicKey: [UInt8], atMilliseconds: Int64) throws -> Bool {
        if var device = devices[id] {
            guard device.publicKey == publicKey else {
                throw StoreError(.deviceKeyMismatch, "device \(id) is enrolled with another public key")
            }
            device.lastSeenAtMilliseconds = atMilliseconds
            devices[id] = device
            inactivityReported.subtract(tokens.values.filter { $0.deviceID == id }.map(\.token))
            return false
        }
        devices[id] = DeviceRecord(id: id, publicKey: publicKey, enrolledAtMilliseconds: atMilliseconds, lastSeenAtMilliseconds: atMilliseconds)
        return true
    }

    public func device(id: String) -> DeviceRecord? { devices[id] }

    public func issueToken(_ candidate: TokenRegistration, maximumActivePerDevice: Int) throws -> TokenRegistration {
        if let deviceID = candidate.deviceID {
            if let existing = activeToken(deviceID: deviceID, scope: candidate.scope, environment: candidate.environment) {
                return existing
            }
            let active = tokens.values.count { $0.deviceID == deviceID && $0.unregisteredAtMilliseconds == nil }
            guard active < maximumActivePerDevice else {
                throw StoreError(.tooManyTokens, "device \(deviceID) has \(active) active tokens, the most it may have")
            }
        }
        try registerTokens([candidate])
        return candidate
    }

    public func activeToken(deviceID: String, scope: TokenScope, environment: PushEnvironment) -> TokenRegistration? {
        tokens.values.first {
            $0.deviceID == deviceID && $0.scope == scope && $0.environment == environment && $0.unregisteredAtMilliseconds == nil
        }
    }

    // MARK: delivery

    public func pendingDeliveries(forDevice deviceID: String, nowMilliseconds: Int64) -> [Delivery] {
        heldDeliveries(forDevice: deviceID, nowMilliseconds: nowMilliseconds)
            + pendingBroadcasts(forDevice: deviceID, nowMilliseconds: nowMilliseconds)
    }

    private func heldDeliveries(forDevice deviceID: String, nowMilliseconds: Int64) -> [Delivery] {
        records.values
            .filter { record in
                guard record.state == .held, record.discardAt > nowMilliseconds,
                      let registration = tokens[record.notification.token] else { return false }
                return registration.deviceID == deviceID && registration.unregisteredAtMilliseconds == nil
            }
            .sorted { $0.seq < $1.seq }
            .map { Delivery(seq: $0.seq, deviceID: deviceID, notification: $0.notification) }
    }

    public func record(_ events: [DeliveryEvent]) {
        for event in events {
            switch event {
            case .sent(let seq, let at):
                if records[seq]?.sentAt == nil { records[seq]?.sentAt = at }
            case .acked(let seq, let sentAt, let ackedAt):
                guard var record = records[seq], record.state != .acked else { continue }
                record.sentAt = record.sentAt ?? sentAt
                record.ackedAt = ackedAt
                record.state = .acked
                record.endedAt = ackedAt
                records[seq] = record
            case .replaced(let seq, let at): end(seq, .replaced, at: at)
            case .dropped(let seq, let at): end(seq, .dropped, at: at)
            case .broadcastAcked(let seq, let subscription, let at):
                if (subscriptionAcks[subscription]?.seq ?? 0) < seq { subscriptionAcks[subscription] = (seq, at) }
            }
        }
    }

    public func sweep(nowMilliseconds: Int64, retainFinishedUntil: Int64) -> Int {
        var expired = 0
        for (seq, record) in records where record.state == .held && record.discardAt <= nowMilliseconds {
            if record.notification.expiration == .immediately {
                end(seq, .dropped, at: nowMilliseconds)
            } else {
                end(seq, .expired, at: nowMilliseconds)
                expired += 1
            }
        }
        records = records.filter { $0.value.state == .held || ($0.value.endedAt ?? 0) >= retainFinishedUntil }
        sweepBroadcasts(nowMilliseconds: nowMilliseconds, retainFinishedUntil: retainFinishedUntil)
        return expired
    }

    // MARK: feedback and receipts

    public func takeFeedback(
        bundleID: String, environment: PushEnvironment, inactiveBefore: Int64, inactivityMilliseconds: Int64
    ) -> [FeedbackEntry] {
        var entries: [FeedbackEntry] = []
        feedback.removeAll { item in
            guard item.bundleID == bundleID, item.environment == environment else { return false }
            entries.append(item.entry)
            return true
        }
        for registration in tokens.values.sorted(by: { $0.createdAtMilliseconds < $1.createdAtMilliseconds })
        where registration.scope == TokenScope(bundleID: bundleID) && registration.environment == environment
            && registration.unregisteredAtMilliseconds == nil && !inactivityReported.contains(registration.token) {
            guard let deviceID = registration.deviceID, let device = devices[deviceID],
                  device.lastSeenAtMilliseconds < inactiveBefore else { continue }
            inactivityReported.insert(registration.token)
            entries.append(FeedbackEntry(token: registration.token, atMilliseconds: device.lastSeenAtMilliseconds + inactivityMilliseconds))
        }
        return entries
    }

    public func receipts(of id: NotificationID) -> [Receipt] {
        records.values.filter { $0.notification.id == id }.sorted { $0.seq < $1.seq }.map { record in
            Receipt(
                of: record.notification, discardAtMilliseconds: record.discardAt, state: record.state,
                sentAtMilliseconds: record.sentAt, ackedAtMilliseconds: record.ackedAt, endedAtMilliseconds: record.endedAt)
        }
    }

    /// The next sequence number (notifications and broadcasts share them).
    func takeSeq() -> Int64 {
        defer { nextSeq += 1 }
        return nextSeq
    }

    /// Every token registration (for the broadcast extension).
    var registrations: Dictionary<DeviceToken, TokenRegistration>.Values { tokens.values }

    // MARK: inspection

    private func record(ofKey key: ProviderKey) -> KeyRecord {
        let times = keyTimes[key.keyID] ?? (0, nil)
        return KeyRecord(
            keyID: key.keyID, teamID: key.teamID, environment: key.environment,
            createdAtMilliseconds: times.created, revokedAtMilliseconds: times.revoked)
    }

    public func teams() -> [TeamRecord] {
        let teamIDs = Set(topicOwners.values).union(keys.values.map(\.teamID))
        return teamIDs.sorted().map { team in
            TeamRecord(
                teamID: team, topics: topicOwners.filter { $0.value == team }.map(\.key).sorted(),
                keys: keys.values.filter { $0.teamID == team }.map(record(ofKey:)).sorted { $0.keyID < $1.keyID })
        }
    }

    public func revokeKey(id: String, atMilliseconds: Int64) -> KeyRecord? {
        guard let key = keys[id] else { return nil }
        if keyTimes[id]?.revoked == nil { keyTimes[id]?.revoked = atMilliseconds }
        return record(ofKey: key)
    }

    public func devices(after: String?, limit: Int) -> [DeviceSummary] {
        devices.values.filter { device in after.map { device.id > $0 } ?? true }.sorted { $0.id < $1.id }.prefix(max(0, limit)).map { device in
            DeviceSummary(
                id: device.id, enrolledAtMilliseconds: device.enrolledAtMilliseconds, lastSeenAtMilliseconds: device.lastSeenAtMilliseconds,
                activeTokens: tokens.values.count { $0.deviceID == device.id && $0.unregisteredAtMilliseconds == nil })
        }
    }

    public func tokens(_ filter: TokenFilter, after: DeviceToken?, limit: Int) -> [TokenRegistration] {
        let matching = tokens.values.filter { registration in
            (filter.bundleID.map { $0 == registration.scope.stored } ?? true)
                && (filter.deviceID.map { $0 == registration.deviceID } ?? true)
                && (!filter.activeOnly || registration.unregisteredAtMilliseconds == nil)
                && (after.map { $0.bytes.lexicographicallyPrecedes(registration.token.bytes) } ?? true)
        }
        return Array(matching.sorted { $0.token.bytes.lexicographicallyPrecedes($1.token.bytes) }.prefix(max(0, limit)))
    }

    public func heldNotifications(_ filter: HeldFilter, after: Int64?, limit: Int) -> [HeldNotification] {
        let matching = records.values.filter { record in
            guard record.state == .held, record.seq > (after ?? 0) else { return false }
            let n = record.notification
            if let token = filter.token, n.token != token { return false }
            if let bundleID = filter.bundleID, n.bundleID != bundleID { return false }
            if let deviceID = filter.deviceID, tokens[n.token]?.deviceID != deviceID { return false }
            return true
        }
        return matching.sorted { $0.seq < $1.seq }.prefix(max(0, limit)).map {
            HeldNotification(seq: $0.seq, notification: $0.notification, discardAtMilliseconds: $0.discardAt, sentAtMilliseconds: $0.sentAt)
        }
    }

    public func pendingFeedback(bundleID: String, environment: PushEnvironment) -> [FeedbackEntry] {
        feedback.filter { $0.bundleID == bundleID && $0.environment == environment }.map(\.entry)
    }
}

extension InMemoryStore {
    private static func channelKey(_ bundleID: String, _ environment: PushEnvironment) -> String { bundleID + "\u{0}" + environment.rawValue }

    public func createChannel(_ channel: ChannelRecord) throws {
        let key = Self.channelKey(channel.bundleID, channel.environment)
        let count = channelRecords[key]?.count ?? 0
        guard count < ChannelRecord.maximumPerApp else {
            throw StoreError(.tooManyChannels, "\(channel.bundleID) has \(count) channels in \(channel.environment), the most an app may have")
        }
        channelRecords[key, default: []].append(channel)
    }

    public func channels(bundleID: String, environment: PushEnvironment) -> [ChannelRecord] {
        channelRecords[Self.channelKey(bundleID, environment)] ?? []
    }

    public func channel(bundleID: String, id: BroadcastChannelID, environment: PushEnvironment) -> ChannelRecord? {
        channelRecords[Self.channelKey(bundleID, environment)]?.first { $0.channelID == id }
    }

    public func deleteChannel(bundleID: String, id: BroadcastChannelID, environment: PushEnvironment, atMilliseconds: Int64) -> Bool {
        let key = Self.channelKey(bundleID, environment)
        let before = channelRecords[key]?.count ?? 0
        channelRecords[key]?.removeAll { $0.channelID == id }
        return (channelRecords[key]?.count ?? 0) < before
    }
}
