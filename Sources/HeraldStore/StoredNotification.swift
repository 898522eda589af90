import HeraldCore

/// A notification the gateway accepted, as the core keeps it: what the intake commits, the store
/// holds for an offline device, routing hands to a session and receipts describe. It names no
/// protocol: a provider-facing port (the APNs port today) is an adapter that turns a request into
/// one, and the payload's bytes are carried untouched.
public struct StoredNotification: Sendable, Hashable {
    public var id: NotificationID
    /// The device token it was sent to (an app's, a Live Activity's or a channel subscription's).
    public var token: DeviceToken
    /// The app it is for.
    public var bundleID: String
    public var pushType: PushType
    public var priority: Priority
    public var expiration: Expiration
    /// Replaces an undelivered notification of the same app with the same key.
    public var collapseID: CollapseID?
    /// The payload exactly as the provider sent it.
    public var payload: [UInt8]
    public var receivedAtMilliseconds: Int64
    /// The trace of the request that brought it (``Traces``), while tracing is on: kept in memory
    /// with the notification so that its delivery joins that trace; never stored (one loaded from
    /// the store after a restart, or on another node, is delivered without a span).
    public var trace: Traces.Carrier?

    public init(
        id: NotificationID, token: DeviceToken, bundleID: String, pushType: PushType, priority: Priority,
        expiration: Expiration, collapseID: CollapseID?, payload: [UInt8], receivedAtMilliseconds: Int64,
        trace: Traces.Carrier? = nil
    ) {
        self.trace = trace
        self.id = id
        self.token = token
        self.bundleID = bundleID
        self.pushType = pushType
        self.priority = priority
        self.expiration = expiration
        self.collapseID = collapseID
        self.payload = payload
        self.receivedAtMilliseconds = receivedAtMilliseconds
    }

    /// The instant after which the notification is discarded: its `apns-expiration`, capped by
    /// the policy's longest storage time.
    public func discardAtMilliseconds(policy: StorePolicy) -> Int64 {
        Self.discardAtMilliseconds(receivedAtMilliseconds: receivedAtMilliseconds, expiration: expiration, policy: policy)
    }

    /// The instant after which something accepted at `receivedAtMilliseconds` with `expiration`
    /// is discarded (a notification, a broadcast).
    public static func discardAtMilliseconds(receivedAtMilliseconds: Int64, expiration: Expiration, policy: StorePolicy) -> Int64 {
        let cap = receivedAtMilliseconds + policy.maximumStorageMilliseconds
        switch expiration {
        case .unspecified: return cap
        // Delivered only to a device connected at the moment it is accepted: never waits.
        case .immediately: return receivedAtMilliseconds
        case .at(let seconds): return min(cap, seconds * 1000)
        }
    }
}
