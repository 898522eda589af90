import HeraldCore

/// A broadcast on a channel as the store keeps it: **one record per broadcast**, whatever the
/// number of subscribers (issue 66). Each subscription (a token of scope
/// ``TokenScope/Kind/channel(_:)``) keeps the sequence number of the newest broadcast its device
/// acked; what a subscriber has not acked is found by comparing the two, so nothing is copied per
/// subscriber. A device that connects gets the channel's most recent broadcast if it has not
/// acked it, was subscribed when it was accepted, and it is not past its time — which is APNs's
/// `message-storage-policy` 1; a channel with policy 0 stores its broadcasts with
/// `apns-expiration: 0`, so only the subscribers connected at that moment get them.
public struct StoredBroadcast: Sendable, Hashable {
    /// The store's sequence number: increasing, so within a channel the newest is the largest.
    /// `0` before the store numbered it.
    public var seq: Int64
    public var bundleID: String
    public var channel: BroadcastChannelID
    public var environment: PushEnvironment
    /// The broadcast's apns-request-id: the id its deliveries carry and its receipt is read by.
    public var id: NotificationID
    public var priority: Priority
    public var expiration: Expiration
    /// The Live Activity payload exactly as the provider sent it, shared by every delivery.
    public var payload: [UInt8]
    public var receivedAtMilliseconds: Int64

    public init(
        seq: Int64 = 0, bundleID: String, channel: BroadcastChannelID, environment: PushEnvironment, id: NotificationID,
        priority: Priority, expiration: Expiration, payload: [UInt8], receivedAtMilliseconds: Int64
    ) {
        self.seq = seq
        self.bundleID = bundleID
        self.channel = channel
        self.environment = environment
        self.id = id
        self.priority = priority
        self.expiration = expiration
        self.payload = payload
        self.receivedAtMilliseconds = receivedAtMilliseconds
    }

    /// The stored scope of the channel's subscriptions (what their tokens' registrations say).
    public var subscriptionScope: String { TokenScope.channelSubscriptions(bundleID: bundleID, channel: channel.value) }

    /// The broadcast as one subscription's notification: the token tells the device which
    /// channel, and so which activities, it is for.
    public func notification(to subscription: DeviceToken) -> StoredNotification {
        StoredNotification(
            id: id, token: subscription, bundleID: bundleID, pushType: .liveactivity, priority: priority,
            expiration: expiration, collapseID: nil, payload: payload, receivedAtMilliseconds: receivedAtMilliseconds)
    }

    /// The broadcast's delivery to one subscriber, keyed by ``Delivery/key(ofBroadcast:)``.
    public func delivery(to subscription: DeviceToken, deviceID: String) -> Delivery {
        Delivery(seq: Delivery.key(ofBroadcast: seq), deviceID: deviceID, notification: notification(to: subscription))
    }

    /// The instant after which no subscriber gets it any more (as a stored notification's).
    public func discardAtMilliseconds(policy: StorePolicy) -> Int64 {
        StoredNotification.discardAtMilliseconds(receivedAtMilliseconds: receivedAtMilliseconds, expiration: expiration, policy: policy)
    }

    /// Whether a subscription should still get this broadcast, from the facts the store keeps:
    /// it is the channel's newest, the subscription existed when it was accepted and has not
    /// acked it (or a newer one), and it is not past its time.
    public static func isPending(
        seq: Int64, isNewest: Bool, receivedAtMilliseconds: Int64, discardAtMilliseconds: Int64,
        subscribedAtMilliseconds: Int64, ackedSeq: Int64, nowMilliseconds: Int64
    ) -> Bool {
        isNewest && seq > ackedSeq && receivedAtMilliseconds >= subscribedAtMilliseconds && discardAtMilliseconds > nowMilliseconds
    }

    /// One subscription's receipt of this broadcast, from what its subscription records: acked
    /// once its device acked this broadcast or a newer one of the channel (`ackedAtMilliseconds`:
    /// when it acked the newest it acked); otherwise stored while it waits, replaced once a newer
    /// broadcast took its place (`newest`: the channel's newest broadcast), expired once past
    /// its time.
    public func receipt(
        subscription: DeviceToken, ackedSeq: Int64, ackedAtMilliseconds: Int64?,
        newest: (seq: Int64, receivedAtMilliseconds: Int64), discardAtMilliseconds: Int64, nowMilliseconds: Int64
    ) -> Receipt {
        let state: NotificationState
        var ended: Int64?
        if ackedSeq >= seq {
            state = .acked
            ended = ackedAtMilliseconds ?? receivedAtMilliseconds
        } else if discardAtMilliseconds <= nowMilliseconds {
            state = expiration == .immediately ? .dropped : .expired
            ended = discardAtMilliseconds
        } else if newest.seq > seq {
            state = .replaced
            ended = newest.receivedAtMilliseconds
        } else {
            state = .held
        }
        let notification = notification(to: subscription)
        return Receipt(
            of: notification, discardAtMilliseconds: discardAtMilliseconds, state: state,
            sentAtMilliseconds: state == .acked ? ended : nil, ackedAtMilliseconds: state == .acked ? ended : nil,
            endedAtMilliseconds: ended)
    }
}

extension Delivery {
    /// The key a broadcast's deliveries go by in a session (in flight, acked, a cluster hint):
    /// its sequence number negated, so that it never meets a held notification's (positive) one.
    public static func key(ofBroadcast seq: Int64) -> Int64 { -seq }

    /// The broadcast's sequence number when this delivery is a broadcast's, else `nil`.
    public var broadcastSeq: Int64? { seq < 0 && seq != .min ? -seq : nil }
}

/// Broadcasts stored once (see ``StoredBroadcast``).
public protocol BroadcastStore: Sendable {
    /// Stores a broadcast and numbers it; when this returns it is durable (the 200).
    func storeBroadcast(_ broadcast: StoredBroadcast, policy: StorePolicy) async throws -> StoredBroadcast
    /// A stored broadcast by its sequence number (a cluster hint's content), `nil` when gone.
    func broadcast(seq: Int64) async throws -> StoredBroadcast?
    /// The device's active channel subscriptions: what a node indexes its session under, so that
    /// a broadcast finds its connected subscribers without the store.
    func channelSubscriptions(ofDevice deviceID: String) async throws -> [TokenRegistration]
    /// The receipts of the broadcasts accepted with this id: one per subscription the channel
    /// had when each was accepted, judged at `nowMilliseconds`.
    func broadcastReceipts(of id: NotificationID, nowMilliseconds: Int64) async throws -> [Receipt]
}
