import HeraldCore

/// Why a store operation was refused.
public struct StoreError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable { case topicOwnedByAnotherTeam, keyExists, tokenExists, unknownToken, corrupt }
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
public protocol HeraldStore: Sendable {
    /// Registers a provider key and gives its team the topics (bundle ids). A topic already owned
    /// by another team is refused with ``StoreError/Code/topicOwnedByAnotherTeam``.
    func registerKey(_ key: ProviderKey, topics: [String], atMilliseconds: Int64) async throws
    func key(id: String) async throws -> ProviderKey?
    /// The topics (bundle ids) the team owns.
    func topics(ofTeam teamID: String) async throws -> Set<String>

    /// Registers tokens in one atomic unit. Registering an existing token again is refused
    /// (and then none of the batch is registered).
    func registerTokens(_ registrations: [TokenRegistration]) async throws
    /// Marks a token unregistered (the app was removed). Returns `false` for an unknown token;
    /// an already unregistered token keeps its first timestamp.
    func unregisterToken(_ token: DeviceToken, atMilliseconds: Int64) async throws -> Bool
    func registration(of token: DeviceToken) async throws -> TokenRegistration?

    /// Admits a batch of accepted requests in one atomic unit: decides each by ``Admission`` and
    /// stores the admitted ones by `policy` (collapse id and per-app depth replace older ones).
    /// When this returns, every `.stored` outcome is durable.
    func accept(
        _ batch: [StoredNotification], policy: StorePolicy, environment: APNsEnvironment, nowMilliseconds: Int64
    ) async throws -> [SubmissionOutcome]

    /// The notifications held for a token, oldest first (expired ones excluded).
    func storedNotifications(for token: DeviceToken, policy: StorePolicy, nowMilliseconds: Int64) async throws -> [StoredNotification]
    /// How many notifications are held in all.
    func storedNotificationCount() async throws -> Int
}

extension HeraldStore {
    /// Registers one token.
    public func registerToken(_ registration: TokenRegistration) async throws {
        try await registerTokens([registration])
    }
}
