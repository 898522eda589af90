import HeraldCore

/// Why a store operation was refused.
public struct StoreError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable { case topicOwnedByAnotherTeam, keyExists, tokenExists, unknownToken, deviceKeyMismatch, tooManyTokens, tooManyChannels, corrupt }
    public var code: Code
    public var message: String
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }
    public var description: String { message }
}

/// Herald's storage: teams and their topics, provider keys, device tokens, and the notifications
/// held for offline devices.
///
/// Implementations: ``InMemoryStore`` (tests), `SQLiteStore` (one node), and later a PostgreSQL
/// store (several nodes). Nothing here assumes a particular database: every method is async and
/// each is one atomic unit of work.
public protocol GatewayStore: ChannelStore, BroadcastStore {
    /// Registers a provider key and gives its team the topics (bundle ids). A topic already owned
    /// by another team is refused with ``StoreError/Code/topicOwnedByAnotherTeam``.
    func registerKey(_ key: ProviderKey, topics: [String], atMilliseconds: Int64) async throws
    func key(id: String) async throws -> ProviderKey?
    /// The topics (bundle ids) the team owns.
    func topics(ofTeam teamID: String) async throws -> Set<String>

    /// Registers tokens in one atomic unit. Registering an existing token again is refused
    /// (and then none of the batch is registered).
    func registerTokens(_ registrations: [TokenRegistration]) async throws
    /// Marks a token unregistered (the app was removed): its held notifications are dropped and
    /// it joins its app's feedback list. Returns `false` for an unknown token; an already
    /// unregistered token keeps its first timestamp.
    func unregisterToken(_ token: DeviceToken, atMilliseconds: Int64) async throws -> Bool
    func registration(of token: DeviceToken) async throws -> TokenRegistration?

    /// Admits a batch of accepted requests in one atomic unit: decides each by ``Admission`` and
    /// stores the admitted ones by `policy` (collapse id and per-app depth replace older ones that
    /// are still waiting). When this returns, every `.stored` outcome is durable.
    func accept(
        _ batch: [StoredNotification], policy: StorePolicy, environment: PushEnvironment, nowMilliseconds: Int64
    ) async throws -> [SubmissionOutcome]

    /// The notifications held for a token, oldest first (expired ones excluded).
    func storedNotifications(for token: DeviceToken, policy: StorePolicy, nowMilliseconds: Int64) async throws -> [StoredNotification]
    /// How many notifications are held (waiting for their device) in all.
    func storedNotificationCount() async throws -> Int
    /// Returns once the store answers a trivial query; throws what stops it (`/health`).
    func checkReachable() async throws
    /// Called when the store did not answer within a bound: a store with a connection pool
    /// checks whether the database answers a connection of its own while the pool does not, and
    /// if so replaces the pool (its waiting requests fail; new ones get new connections).
    func recoverConnections() async

    // MARK: devices

    /// Enrolls a device (its id derives from its public key), or finds it enrolled already; then
    /// records it as seen at `atMilliseconds` and clears any inactivity report of its tokens.
    /// A known id with a different key is refused (``StoreError/Code/deviceKeyMismatch``).
    /// Returns whether the device was enrolled by this call.
    func deviceConnected(id: String, publicKey: [UInt8], atMilliseconds: Int64) async throws -> Bool
    func device(id: String) async throws -> DeviceRecord?
    /// The device's active token for an app, issuing `candidate` when it has none. Registering
    /// the same app again returns the same token; after an unregistration a new one is issued.
    /// A device that already has `maximumActivePerDevice` active tokens gets no new one
    /// (``StoreError/Code/tooManyTokens``): the bound holds across connections and nodes.
    func issueToken(_ candidate: TokenRegistration, maximumActivePerDevice: Int) async throws -> TokenRegistration
    /// The device's active (not unregistered) token of a scope in an environment.
    func activeToken(deviceID: String, scope: TokenScope, environment: PushEnvironment) async throws -> TokenRegistration?

    // MARK: delivery

    /// What waits for a device, in the order it was accepted: held notifications of its active
    /// tokens that are neither expired nor past their storage time.
    func pendingDeliveries(forDevice deviceID: String, nowMilliseconds: Int64) async throws -> [Delivery]
    /// Records deliveries, acks, replacements and drops in one atomic unit.
    func record(_ events: [DeliveryEvent]) async throws
    /// Marks held notifications past their time expired (or dropped, for `apns-expiration: 0`),
    /// and deletes finished records older than `retainFinishedUntil`. Returns how many expired.
    @discardableResult
    func sweep(nowMilliseconds: Int64, retainFinishedUntil: Int64) async throws -> Int

    // MARK: feedback and receipts

    /// Reads and clears the feedback list of an app: tokens unregistered since the last read,
    /// and active tokens of devices not seen since `inactiveBefore` (reported once, until the
    /// device connects again; their timestamp is when the inactivity period ended).
    func takeFeedback(
        bundleID: String, environment: PushEnvironment, inactiveBefore: Int64, inactivityMilliseconds: Int64
    ) async throws -> [FeedbackEntry]
    /// The history of every notification accepted with this id (one per token it went to).
    func receipts(of id: NotificationID) async throws -> [Receipt]

    // MARK: inspection (Inspection.swift)

    /// Every team that owns a topic or a key, by team id, with its topics and keys (revoked
    /// ones included, marked).
    func teams() async throws -> [TeamRecord]
    /// Revokes a provider key: from now on ``key(id:)`` does not return it, so tokens it signed
    /// are refused (`InvalidProviderToken`). Returns the key as revoked (the first revocation's
    /// time is kept), or `nil` when no such key exists.
    func revokeKey(id: String, atMilliseconds: Int64) async throws -> KeyRecord?
    /// Enrolled devices in id order, after the cursor `after`, at most `limit`.
    func devices(after: String?, limit: Int) async throws -> [DeviceSummary]
    /// Tokens in byte order, after the cursor `after`, at most `limit`.
    func tokens(_ filter: TokenFilter, after: DeviceToken?, limit: Int) async throws -> [TokenRegistration]
    /// Held notifications in order of acceptance, after sequence number `after`, at most `limit`.
    func heldNotifications(_ filter: HeldFilter, after: Int64?, limit: Int) async throws -> [HeldNotification]
    /// The unregistered tokens of an app's feedback list not yet read, without clearing them
    /// (``takeFeedback(bundleID:environment:inactiveBefore:inactivityMilliseconds:)`` reads and clears).
    func pendingFeedback(bundleID: String, environment: PushEnvironment) async throws -> [FeedbackEntry]
}

extension GatewayStore {
    /// A store in this process's memory is always reachable.
    public func checkReachable() async throws {}

    /// A store without a connection pool has nothing to recover.
    public func recoverConnections() async {}

    /// Registers one token.
    public func registerToken(_ registration: TokenRegistration) async throws {
        try await registerTokens([registration])
    }
}
