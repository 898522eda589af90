import HeraldCore

/// A store that keeps everything in memory: for tests and for trying things out. Same semantics
/// as the durable stores, minus the durability.
public actor InMemoryStore: HeraldStore {
    private var keys: [String: ProviderKey] = [:]
    private var topicOwners: [String: String] = [:]
    private var tokens: [DeviceToken: TokenRegistration] = [:]
    /// Per token, oldest first.
    private var notifications: [DeviceToken: [StoredNotification]] = [:]

    public init() {}

    public func registerKey(_ key: ProviderKey, topics: [String], atMilliseconds: Int64) throws {
        guard keys[key.keyID] == nil else { throw StoreError(.keyExists, "key \(key.keyID) is already registered") }
        for topic in topics {
            if let owner = topicOwners[topic], owner != key.teamID {
                throw StoreError(.topicOwnedByAnotherTeam, "topic \(topic) belongs to team \(owner), not \(key.teamID)")
            }
        }
        keys[key.keyID] = key
        for topic in topics { topicOwners[topic] = key.teamID }
    }

    public func key(id: String) -> ProviderKey? { keys[id] }

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
        }
        notifications[token] = nil
        return true
    }

    public func registration(of token: DeviceToken) -> TokenRegistration? { tokens[token] }

    public func accept(
        _ batch: [StoredNotification], policy: StorePolicy, environment: APNsEnvironment, nowMilliseconds: Int64
    ) -> [SubmissionOutcome] {
        batch.map { notification in
            let outcome = Admission.decide(
                registration: tokens[notification.token], notification: notification,
                environment: environment, nowMilliseconds: nowMilliseconds)
            guard outcome == .stored else { return outcome }
            var held = notifications[notification.token, default: []]
            held.removeAll { $0.apnsID == notification.apnsID }
            if let collapse = notification.collapseID { held.removeAll { $0.collapseID == collapse } }
            held.append(notification)
            if held.count > policy.maximumPerApp { held.removeFirst(held.count - policy.maximumPerApp) }
            notifications[notification.token] = held
            return outcome
        }
    }

    public func storedNotifications(for token: DeviceToken, policy: StorePolicy, nowMilliseconds: Int64) -> [StoredNotification] {
        (notifications[token] ?? []).filter { $0.discardAtMilliseconds(policy: policy) > nowMilliseconds }
    }

    public func storedNotificationCount() -> Int { notifications.values.reduce(0) { $0 + $1.count } }
}
