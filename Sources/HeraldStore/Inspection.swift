import HeraldCore

// Read-only views of the store for operators: `herald keys list`, `herald tokens list`,
// `herald devices list`, `herald held list`, `herald feedback list` and the admin port's JSON.
// Each is one consistent read; lists are paged by a cursor (the last item's key) and a limit.

/// A provider key as the store keeps it (the public key itself is not shown).
public struct KeyRecord: Sendable, Hashable {
    public var keyID: String
    public var teamID: String
    /// `nil`: the key works in both environments.
    public var environment: PushEnvironment?
    public var createdAtMilliseconds: Int64
    /// When `herald keys revoke` revoked it; a revoked key authenticates nothing.
    public var revokedAtMilliseconds: Int64?

    public init(keyID: String, teamID: String, environment: PushEnvironment?, createdAtMilliseconds: Int64, revokedAtMilliseconds: Int64?) {
        self.keyID = keyID
        self.teamID = teamID
        self.environment = environment
        self.createdAtMilliseconds = createdAtMilliseconds
        self.revokedAtMilliseconds = revokedAtMilliseconds
    }
}

/// A team: the topics it owns and its keys.
public struct TeamRecord: Sendable, Hashable {
    public var teamID: String
    public var topics: [String]
    public var keys: [KeyRecord]

    public init(teamID: String, topics: [String], keys: [KeyRecord]) {
        self.teamID = teamID
        self.topics = topics
        self.keys = keys
    }
}

/// An enrolled device, with how many app tokens it has active.
public struct DeviceSummary: Sendable, Hashable {
    public var id: String
    public var enrolledAtMilliseconds: Int64
    public var lastSeenAtMilliseconds: Int64
    public var activeTokens: Int

    public init(id: String, enrolledAtMilliseconds: Int64, lastSeenAtMilliseconds: Int64, activeTokens: Int) {
        self.id = id
        self.enrolledAtMilliseconds = enrolledAtMilliseconds
        self.lastSeenAtMilliseconds = lastSeenAtMilliseconds
        self.activeTokens = activeTokens
    }
}

/// Which tokens a token list shows (every field that is set must match).
public struct TokenFilter: Sendable, Hashable {
    public var bundleID: String?
    public var deviceID: String?
    /// Only tokens that are not unregistered.
    public var activeOnly: Bool

    public init(bundleID: String? = nil, deviceID: String? = nil, activeOnly: Bool = false) {
        self.bundleID = bundleID
        self.deviceID = deviceID
        self.activeOnly = activeOnly
    }
}

/// Which held notifications a list shows (every field that is set must match).
public struct HeldFilter: Sendable, Hashable {
    public var token: DeviceToken?
    public var deviceID: String?
    public var bundleID: String?

    public init(token: DeviceToken? = nil, deviceID: String? = nil, bundleID: String? = nil) {
        self.token = token
        self.deviceID = deviceID
        self.bundleID = bundleID
    }
}

/// A notification still waiting for its device.
public struct HeldNotification: Sendable, Hashable {
    /// The store's sequence number: the order of acceptance, and the list's cursor.
    public var seq: Int64
    public var notification: StoredNotification
    /// When it is given up if not delivered (its expiration, or the storage limit).
    public var discardAtMilliseconds: Int64
    /// When it was last sent on a connection without an ack (it goes again on the next).
    public var sentAtMilliseconds: Int64?

    public init(seq: Int64, notification: StoredNotification, discardAtMilliseconds: Int64, sentAtMilliseconds: Int64?) {
        self.seq = seq
        self.notification = notification
        self.discardAtMilliseconds = discardAtMilliseconds
        self.sentAtMilliseconds = sentAtMilliseconds
    }
}

/// The most items one inspection call returns.
public let maximumInspectionPage = 10_000
