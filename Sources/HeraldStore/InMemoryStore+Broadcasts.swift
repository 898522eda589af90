import HeraldCore

/// Broadcasts stored once (``StoredBroadcast``), as the durable stores keep them: one record
/// per broadcast and an acked sequence number per subscription.
extension InMemoryStore {
    public func storeBroadcast(_ broadcast: StoredBroadcast, policy: StorePolicy) async -> StoredBroadcast {
        await waitWhileCommitsHeld()
        var stored = broadcast
        stored.seq = takeSeq()
        broadcastRecords[stored.seq] = (stored, stored.discardAtMilliseconds(policy: policy))
        return stored
    }

    public func broadcast(seq: Int64) -> StoredBroadcast? { broadcastRecords[seq]?.broadcast }

    public func channelSubscriptions(ofDevice deviceID: String) -> [TokenRegistration] {
        registrations.filter { registration in
            guard registration.deviceID == deviceID, registration.unregisteredAtMilliseconds == nil,
                  case .channel = registration.scope.kind else { return false }
            return true
        }.sorted { $0.createdAtMilliseconds < $1.createdAtMilliseconds }
    }

    /// The newest broadcast of a channel (by its subscriptions' scope) in an environment.
    private func newestBroadcast(scope: String, environment: PushEnvironment) -> (broadcast: StoredBroadcast, discardAt: Int64)? {
        broadcastRecords.values
            .filter { $0.broadcast.subscriptionScope == scope && $0.broadcast.environment == environment }
            .max { $0.broadcast.seq < $1.broadcast.seq }
    }

    func pendingBroadcasts(forDevice deviceID: String, nowMilliseconds: Int64) -> [Delivery] {
        channelSubscriptions(ofDevice: deviceID).compactMap { subscription in
            guard let newest = newestBroadcast(scope: subscription.scope.stored, environment: subscription.environment),
                  StoredBroadcast.isPending(
                    seq: newest.broadcast.seq, isNewest: true, receivedAtMilliseconds: newest.broadcast.receivedAtMilliseconds,
                    discardAtMilliseconds: newest.discardAt, subscribedAtMilliseconds: subscription.createdAtMilliseconds,
                    ackedSeq: subscriptionAcks[subscription.token]?.seq ?? 0, nowMilliseconds: nowMilliseconds) else { return nil }
            return newest.broadcast.delivery(to: subscription.token, deviceID: deviceID)
        }
    }

    /// Forgets broadcasts accepted before `retainFinishedUntil` that no subscriber can get any
    /// more: past their time, or no longer their channel's newest.
    func sweepBroadcasts(nowMilliseconds: Int64, retainFinishedUntil: Int64) {
        broadcastRecords = broadcastRecords.filter { _, record in
            let b = record.broadcast
            guard b.receivedAtMilliseconds < retainFinishedUntil else { return true }
            let newest = newestBroadcast(scope: b.subscriptionScope, environment: b.environment)?.broadcast.seq ?? b.seq
            return record.discardAt > nowMilliseconds && newest == b.seq
        }
    }

    public func broadcastReceipts(of id: NotificationID, nowMilliseconds: Int64) -> [Receipt] {
        broadcastRecords.values.filter { $0.broadcast.id == id }.sorted { $0.broadcast.seq < $1.broadcast.seq }.flatMap { record in
            let b = record.broadcast
            let newest = newestBroadcast(scope: b.subscriptionScope, environment: b.environment)?.broadcast ?? b
            return registrations
                .filter { subscribed($0, to: b) }
                .sorted { $0.token.bytes.lexicographicallyPrecedes($1.token.bytes) }
                .map { subscription in
                    let ack = subscriptionAcks[subscription.token]
                    return b.receipt(
                        subscription: subscription.token, ackedSeq: ack?.seq ?? 0, ackedAtMilliseconds: ack?.at,
                        newest: (newest.seq, newest.receivedAtMilliseconds), discardAtMilliseconds: record.discardAt,
                        nowMilliseconds: nowMilliseconds)
                }
        }
    }

    /// Whether `registration` was a subscription of the broadcast's channel when it was accepted.
    private func subscribed(_ registration: TokenRegistration, to b: StoredBroadcast) -> Bool {
        registration.scope.stored == b.subscriptionScope && registration.environment == b.environment
            && registration.createdAtMilliseconds <= b.receivedAtMilliseconds
            && (registration.unregisteredAtMilliseconds ?? .max) >= b.receivedAtMilliseconds
    }
}
