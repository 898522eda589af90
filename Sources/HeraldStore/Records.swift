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
        let cap = receivedAtMilliseconds + policy.maximumStorageMilliseconds
        switch expiration {
        case .unspecified: return cap
        // Delivered only to a device connected at the moment it is accepted: never waits.
        case .immediately: return receivedAtMilliseconds
        case .at(let seconds): return min(cap, seconds * 1000)
        }
    }
}

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

/// Where a device was connected when a push for it was stored, as the store saw it.
public enum DevicePresence: Sendable, Hashable {
    /// The store does not track presence (SQLite, in memory: one node).
    case unknown
    /// Connected to no node.
    case nowhere
    /// Connected to this node.
    case node(String)
}

/// What the store decided about one accepted request.
public enum SubmissionOutcome: Sendable, Hashable {
    /// Stored durably under `seq` until its device acks it (or it expires or is replaced).
    /// `deviceID` is the device holding the token (`nil` for a token registered by hand).
    /// With `apns-expiration: 0` the record exists for the receipt only: the notification is
    /// handed to the device if it is connected now, and never sent later. `presence`: where the
    /// device was connected when the batch was stored, read in the same statement by a store that
    /// knows (PostgreSQL), so that routing across nodes needs no query of its own.
    case stored(seq: Int64, deviceID: String?, presence: DevicePresence = .unknown)
    /// Accepted but already expired (`apns-expiration` in the past): recorded as expired, never sent.
    case discarded
    /// Refused because of the token's registration.
    case rejected(APNsRejection)

    public var isRejected: Bool {
        if case .rejected = self { return true }
        return false
    }

    public var isStored: Bool {
        if case .stored = self { return true }
        return false
    }
}

/// The states of a stored notification, as the stores record them.
public enum NotificationState: Int, Sendable, Hashable {
    /// Waiting for its device (possibly sent already, not yet acked).
    case held = 0
    case acked = 2
    case expired = 3
    case replaced = 4
    case dropped = 5
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
        // A token's stored bundle id is its scope: an app, or a Live Activity token of an app.
        let admitted: Bool = if registration.bundleID == notification.bundleID {
            notification.pushType != .liveactivity && notification.pushType != .webpush && notification.pushType != .widgets
        } else if notification.pushType == .webpush {
            // The Web Push port's hot path: the scope is `<app>.push-type.webpush/…` (no parse).
            TokenScope.isWebPush(stored: registration.bundleID, of: notification.bundleID)
        } else {
            TokenScope(stored: registration.bundleID).accepts(bundleID: notification.bundleID, pushType: notification.pushType)
        }
        guard admitted else {
            return .rejected(APNsRejection(.deviceTokenNotForTopic))
        }
        if let at = registration.unregisteredAtMilliseconds {
            return .rejected(APNsRejection(.unregistered, timestampMilliseconds: at))
        }
        if let at = registration.expiredAtMilliseconds {
            return .rejected(APNsRejection(.expiredToken, timestampMilliseconds: at))
        }
        if case .at = notification.expiration, !notification.expiration.isLive(atMilliseconds: nowMilliseconds) {
            return .discarded
        }
        return .stored(seq: 0, deviceID: registration.deviceID)
    }
}

/// A device enrolled on the device port: its id is derived from its P-256 public key.
public struct DeviceRecord: Sendable, Hashable {
    public var id: String
    /// The raw P-256 public key (64 bytes, x ‖ y).
    public var publicKey: [UInt8]
    public var enrolledAtMilliseconds: Int64
    /// When the device last opened an authenticated connection.
    public var lastSeenAtMilliseconds: Int64

    public init(id: String, publicKey: [UInt8], enrolledAtMilliseconds: Int64, lastSeenAtMilliseconds: Int64) {
        self.id = id
        self.publicKey = publicKey
        self.enrolledAtMilliseconds = enrolledAtMilliseconds
        self.lastSeenAtMilliseconds = lastSeenAtMilliseconds
    }
}

/// A notification waiting for its device: the store's sequence number (its order, and the
/// handle by which deliveries and acks are recorded) and the notification.
public struct Delivery: Sendable, Hashable {
    public var seq: Int64
    public var deviceID: String
    public var notification: StoredNotification
    /// Where the device was connected when the push was stored (``SubmissionOutcome/stored(seq:deviceID:presence:)``).
    public var presence: DevicePresence

    public init(seq: Int64, deviceID: String, notification: StoredNotification, presence: DevicePresence = .unknown) {
        self.seq = seq
        self.deviceID = deviceID
        self.notification = notification
        self.presence = presence
    }
}

/// Something that happened to a stored notification after it was accepted, recorded in batches.
public enum DeliveryEvent: Sendable, Hashable {
    /// Sent on the device's connection at `sentAt` and acknowledged by the device at `ackedAt`.
    case acked(seq: Int64, sentAtMilliseconds: Int64, ackedAtMilliseconds: Int64)
    /// Sent on the device's connection, not (yet) acknowledged; it stays held and is sent again.
    case sent(seq: Int64, atMilliseconds: Int64)
    /// Replaced before delivery by a newer one (background throttling keeps only the newest).
    case replaced(seq: Int64, atMilliseconds: Int64)
    /// Given up without delivery (`apns-expiration: 0` and the device was not connected).
    case dropped(seq: Int64, atMilliseconds: Int64)
}

/// The life of a notification, as a receipt reports it.
public enum ReceiptStatus: String, Sendable, Hashable, Codable, CaseIterable {
    case accepted, stored, delivered, acked, expired, replaced, dropped
}

/// One notification's history (one per device token it was sent to).
public struct Receipt: Sendable, Hashable {
    public struct Event: Sendable, Hashable {
        public var status: ReceiptStatus
        public var atMilliseconds: Int64
        public init(status: ReceiptStatus, atMilliseconds: Int64) {
            self.status = status
            self.atMilliseconds = atMilliseconds
        }
    }

    public var apnsID: NotificationID
    public var token: DeviceToken
    public var bundleID: String
    public var events: [Event]

    public init(apnsID: NotificationID, token: DeviceToken, bundleID: String, events: [Event]) {
        self.apnsID = apnsID
        self.token = token
        self.bundleID = bundleID
        self.events = events
    }
}

/// A dead token in the feedback list: the app was removed, or its device has not connected for
/// the inactivity period. `timestamp` is when the gateway learned it (legacy feedback semantics).
public struct FeedbackEntry: Sendable, Hashable {
    public var token: DeviceToken
    public var atMilliseconds: Int64
    public init(token: DeviceToken, atMilliseconds: Int64) {
        self.token = token
        self.atMilliseconds = atMilliseconds
    }
}

extension Receipt {
    /// The events of a stored notification's record, in the order they happened. Every store
    /// builds receipts with this, from the same recorded facts.
    public static func events(
        notification: StoredNotification, discardAtMilliseconds: Int64, state: NotificationState,
        sentAtMilliseconds: Int64?, ackedAtMilliseconds: Int64?, endedAtMilliseconds: Int64?
    ) -> [Event] {
        let received = notification.receivedAtMilliseconds
        var events = [Event(status: .accepted, atMilliseconds: received)]
        // `apns-expiration: 0` is never stored, nor is a notification expired on arrival.
        if notification.expiration != .immediately && discardAtMilliseconds > received {
            events.append(Event(status: .stored, atMilliseconds: received))
        }
        if let sent = sentAtMilliseconds { events.append(Event(status: .delivered, atMilliseconds: sent)) }
        switch state {
        case .held: break
        case .acked:
            events.append(Event(status: .acked, atMilliseconds: ackedAtMilliseconds ?? endedAtMilliseconds ?? received))
        case .expired, .replaced, .dropped:
            let status: ReceiptStatus = state == .expired ? .expired : state == .replaced ? .replaced : .dropped
            events.append(Event(status: status, atMilliseconds: endedAtMilliseconds ?? received))
        }
        return events
    }
}
