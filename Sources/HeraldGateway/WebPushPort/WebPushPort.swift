import HeraldCore
import HeraldStore
import Logging
import NIOCore

/// What every request and browser session on the Web Push port shares: the same core as the
/// APNs port (the intake, the store, the registry of connected sessions, the recorder, the live
/// feed, the cluster) and the port's own bounds.
struct WebPushPort: Sendable {
    var environment: APNsEnvironment
    var clock: any WallClock
    var store: any GatewayStore
    var intake: NotificationIntake
    var registry: DeviceRegistry
    var recorder: DeliveryRecorder
    var subscriptions: WebPushSubscriptions
    /// The per-endpoint rate limit (429); `nil` turns it off.
    var limiter: TokenRateLimiter?
    /// The origin endpoints are issued under and VAPID's `aud` must name
    /// (`https://push.example.com`); `nil`: the `Host` the peer connected to.
    var publicOrigin: String?
    var pingInterval: TimeAmount
    var idleTimeout: TimeAmount
    var metrics: GatewayMetrics
    var logger: Logger
    var limits: GatewayLimits
    var connectionsPerAddress: ConnectionsPerAddress
    var feed: DeliveryFeed
    var cluster: ClusterNode?

    /// The app every browser's subscriptions belong to (a browser's protocol names none).
    static let browserApp = "browser"

    /// A browser's user agent id as the core's device id: never a Herald device's (hex only).
    static func deviceID(uaid: String) -> String { "ua-" + uaid }

    /// The origin a peer reached the port at: the configured one, else `https://` and the
    /// request's `Host` (checked: a host name or address and an optional port, nothing else).
    func origin(host: String?) -> String? {
        if let publicOrigin { return publicOrigin }
        guard let host, !host.isEmpty, host.utf8.count <= 255,
              host.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: "@") && $0 != UInt8(ascii: "?") && $0 != UInt8(ascii: "#") }) else {
            return nil
        }
        return VAPIDSigner.origin(of: "https://" + host + "/")
    }
}

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

    func lookup(_ token: DeviceToken) async throws -> Lookup {
        if let cached = known.withLock({ $0[token] }) { return cached }
        let store = self.store
        guard let registration = try await withDeadline(storeTimeout, { try await store.registration(of: token) }) else { return .unknown }
        let scope = TokenScope(stored: registration.bundleID)
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
}
