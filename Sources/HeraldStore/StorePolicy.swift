import HeraldCore

/// The store-and-forward policy for offline devices (reference §5).
public struct StorePolicy: Sendable, Hashable {
    /// How many notifications are kept per device and app: 1 (Apple's policy, the newest) by default.
    public var maximumPerApp: Int
    /// How many Web Push messages wait per subscription: RFC 8030 keeps every message until its
    /// TTL (replacing only by `Topic`), so the bound is a backstop, autopush's 100 by default.
    /// The oldest beyond it is replaced.
    public var maximumPerWebPushSubscription: Int
    /// How long a notification is kept at most: 30 days by default.
    public var maximumStorageMilliseconds: Int64

    public init(maximumPerApp: Int = 1, maximumPerWebPushSubscription: Int = 100, maximumStorageMilliseconds: Int64 = 30 * 24 * 3600 * 1000) {
        precondition(maximumPerApp >= 1 && maximumPerWebPushSubscription >= 1)
        self.maximumPerApp = maximumPerApp
        self.maximumPerWebPushSubscription = maximumPerWebPushSubscription
        self.maximumStorageMilliseconds = maximumStorageMilliseconds
    }

    /// How many notifications of this kind wait per token, the new one included: Apple's policy
    /// for APNs pushes, RFC 8030's for Web Push messages.
    public func maximumWaiting(for pushType: PushType) -> Int {
        pushType == .webpush ? maximumPerWebPushSubscription : maximumPerApp
    }

    public static let `default` = StorePolicy()
}
