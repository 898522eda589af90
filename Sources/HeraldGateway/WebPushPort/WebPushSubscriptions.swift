import HeraldCore
import HeraldStore
import Logging
import NIOCore

/// The subscriptions pushes are addressed to, by endpoint id: what the port must know before it
/// answers (whether the endpoint exists, and the application server key it must be signed
/// with). A subscription's scope never changes, so known ones are kept in memory (bounded); an
/// unsubscription is still seen, by the store's admission, in the batch that stores the push.
final class WebPushSubscriptions: Sendable {
    enum Lookup: Sendable {
        case subscription(bundleID: String, channel: String, applicationServerKey: [UInt8]?)
        /// Unsubscribed at this instant: 410.
        case gone(atMilliseconds: Int64)
        case unknown
    }

    private let store: any GatewayStore
    private let storeTimeout: TimeAmount
    private let known = Locked([DeviceToken: Lookup]())
    /// Subscriptions kept in memory at most (the table starts again when full).
    static let maximumCached = 100_000

    init(store: any GatewayStore, storeTimeout: TimeAmount) {
        self.store = store
        self.storeTimeout = storeTimeout
    }

    /// What is known of the subscription without asking the store (the hot path: no task).
    func cached(_ token: DeviceToken) -> Lookup? { known.withLock { $0[token] } }

    func lookup(_ token: DeviceToken) async throws -> Lookup {
        if let cached = cached(token) { return cached }
        let store = self.store
        guard let registration = try await withDeadline(storeTimeout, { try await store.registration(of: token) }) else { return .unknown }
        let scope = registration.scope
        guard case .webPush(let channel, let keyText) = scope.kind else { return .unknown }
        if let at = registration.unregisteredAtMilliseconds ?? registration.expiredAtMilliseconds { return .gone(atMilliseconds: at) }
        let key = keyText.flatMap { Base64URL.decode($0[...]) }
        let found = Lookup.subscription(bundleID: scope.bundleID, channel: channel, applicationServerKey: key)
        known.withLock { table in
            if table.count >= Self.maximumCached { table.removeAll(keepingCapacity: true) }
            table[token] = found
        }
        return found
    }

    /// Forgets a subscription (unsubscribed through this node).
    func forget(_ token: DeviceToken) { _ = known.withLock { $0.removeValue(forKey: token) } }

    /// Unsubscribes a user agent's subscription `channel` of `bundleID` (whatever key it was
    /// made with): its endpoint answers 410 from now on. Returns whether there was one.
    func unsubscribe(deviceID: String, bundleID: String, channel: String, atMilliseconds now: Int64, limit: Int) async throws -> Bool {
        let tokens = try await store.tokens(TokenFilter(deviceID: deviceID, activeOnly: true), after: nil, limit: limit)
        var found = false
        for registration in tokens {
            let scope = registration.scope
            guard scope.bundleID == bundleID, case .webPush(let id, _) = scope.kind, id == channel else { continue }
            _ = try await store.unregisterToken(registration.token, atMilliseconds: now)
            forget(registration.token)
            found = true
        }
        return found
    }
}
