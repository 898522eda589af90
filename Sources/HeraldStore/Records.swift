import HeraldCore

/// A device token as the gateway registered it: which app (bundle id) on which device, in which
/// environment, and whether it is still active.
public struct TokenRegistration: Sendable, Hashable {
    public var token: DeviceToken
    /// The app's bundle id (the topic without any push-type suffix).
    public var bundleID: String
    public var environment: APNsEnvironment
    /// The device that holds the token; `nil` for a token registered by hand (`herald tokens create`).
    public var deviceID: String?
    public var createdAtMilliseconds: Int64
    /// When the app was removed; the provider API then answers 410 `Unregistered` with this time.
    public var unregisteredAtMilliseconds: Int64?
    /// When the token expired; the provider API then answers 410 `ExpiredToken` with this time.
    public var expiredAtMilliseconds: Int64?

    public init(
        token: DeviceToken, bundleID: String, environment: APNsEnvironment, deviceID: String? = nil,
        createdAtMilliseconds: Int64, unregisteredAtMilliseconds: Int64? = nil, expiredAtMilliseconds: Int64? = nil
    ) {
        self.token = token
        self.bundleID = bundleID
        self.environment = environment
        self.deviceID = deviceID
        self.createdAtMilliseconds = createdAtMilliseconds
        self.unregisteredAtMilliseconds = unregisteredAtMilliseconds
        self.expiredAtMilliseconds = expiredAtMilliseconds
    }
}

/// A notification the gateway accepted, as it is stored for an offline device.
public struct StoredNotification: Sendable, Hashable {
    public var apnsID: APNsID
    public var token: DeviceToken
    public var bundleID: String
    public var pushType: PushType
    public var priority: Priority
    public var expiration: Expiration
    public var collapseID: CollapseID?
    /// The payload exactly as the provider sent it.
    public var payload: [UInt8]
    public var receivedAtMilliseconds: Int64

    public init(
        apnsID: APNsID, token: DeviceToken, bundleID: String, pushType: PushType, priority: Priority,
        expiration: Expiration, collapseID: CollapseID?, payload: [UInt8], receivedAtMilliseconds: Int64
    ) {
        self.apnsID = apnsID
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
        let cap = receivedAtMilliseconds + policy.maximumStorageMilliseconds
        if case .at(let seconds) = expiration { return min(cap, seconds * 1000) }
        return cap
    }
}

/// The store-and-forward policy for offline devices (reference §5).
public struct StorePolicy: Sendable, Hashable {
    /// How many notifications are kept per device and app: 1 (Apple's policy, the newest) by default.
    public var maximumPerApp: Int
    /// How long a notification is kept at most: 30 days by default.
    public var maximumStorageMilliseconds: Int64

    public init(maximumPerApp: Int = 1, maximumStorageMilliseconds: Int64 = 30 * 24 * 3600 * 1000) {
        precondition(maximumPerApp >= 1)
        self.maximumPerApp = maximumPerApp
        self.maximumStorageMilliseconds = maximumStorageMilliseconds
    }

    public static let `default` = StorePolicy()
}

/// What the store decided about one accepted request.
public enum SubmissionOutcome: Sendable, Hashable {
    /// Stored durably for the (offline) device.
    case stored
    /// Accepted but not kept: `apns-expiration` was 0 or already past and the device is offline.
    case discarded
    /// Refused because of the token's registration.
    case rejected(APNsRejection)
}

/// The rules that decide, from a token's registration, whether a notification is admitted.
/// Every store applies them the same way, inside the transaction that stores the notification.
public enum Admission {
    public static func decide(
        registration: TokenRegistration?, notification: StoredNotification,
        environment: APNsEnvironment, nowMilliseconds: Int64
    ) -> SubmissionOutcome {
        guard let registration, registration.environment == environment else {
            return .rejected(APNsRejection(.badDeviceToken))
        }
        guard registration.bundleID == notification.bundleID else {
            return .rejected(APNsRejection(.deviceTokenNotForTopic))
        }
        if let at = registration.unregisteredAtMilliseconds {
            return .rejected(APNsRejection(.unregistered, timestampMilliseconds: at))
        }
        if let at = registration.expiredAtMilliseconds {
            return .rejected(APNsRejection(.expiredToken, timestampMilliseconds: at))
        }
        guard notification.expiration.isLive(atMilliseconds: nowMilliseconds) else { return .discarded }
        return .stored
    }
}
