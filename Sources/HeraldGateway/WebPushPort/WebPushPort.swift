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
    var vapid = VAPIDVerifier()
    /// Message ids: unguessable, for their URL is the capability to read the receipt.
    var ids = Locked(NotificationID.BufferedSecureGenerator())
    /// The per-endpoint rate limit (429); `nil` turns it off.
    var limiter: TokenRateLimiter
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
        guard let host else { return nil }
        return origins.origin(host: host)
    }
    /// Shared with the device port's `WebPushEndpoints`: one table of the names the gateway is reached under.
    let origins = Origins()

    /// `Host` values read into origins, remembered (a port is reached under a few names).
    final class Origins: Sendable {
        private let known = Locked([String: String]())

        func origin(host: String) -> String? {
            if let hit = known.withLock({ $0[host] }) { return hit }
            guard !host.isEmpty, host.utf8.count <= 255,
                  host.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: "@") && $0 != UInt8(ascii: "?") && $0 != UInt8(ascii: "#") }),
                  let origin = VAPIDSigner.origin(of: "https://" + host + "/") else {
                return nil
            }
            known.withLock { table in
                if table.count >= 64 { table.removeAll() }
                table[host] = origin
            }
            return origin
        }
    }
}

/// Where endpoints of subscriptions made over the device port point: the Web Push port's public
/// origin when one is configured, else `https://`, the host name the device connected to and the
/// Web Push port (known once it is bound).
final class WebPushEndpoints: Sendable {
    let publicOrigin: String?
    let subscriptions: WebPushSubscriptions
    private let boundPort = Locked<Int?>(nil)
    private let origins: WebPushPort.Origins

    init(publicOrigin: String?, subscriptions: WebPushSubscriptions, origins: WebPushPort.Origins) {
        self.publicOrigin = publicOrigin
        self.subscriptions = subscriptions
        self.origins = origins
    }

    /// The Web Push port is listening on `port`.
    func bound(port: Int) { boundPort.withLock { $0 = port } }

    /// The origin for a device that connected with this `Host` header (its own port dropped).
    func origin(deviceHost: String?) -> String? {
        if let publicOrigin { return publicOrigin }
        guard let port = boundPort.withLock({ $0 }), let deviceHost else { return nil }
        let name: Substring
        if deviceHost.hasPrefix("["), let close = deviceHost.firstIndex(of: "]") {
            name = deviceHost[...close]
        } else {
            name = deviceHost.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        }
        return origins.origin(host: name + ":" + String(port))
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

    /// What is known of the subscription without asking the store (the hot path: no task).
    func cached(_ token: DeviceToken) -> Lookup? { known.withLock { $0[token] } }

    func lookup(_ token: DeviceToken) async throws -> Lookup {
        if let cached = cached(token) { return cached }
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

    /// Unsubscribes a user agent's subscription `channel` of `bundleID` (whatever key it was
    /// made with): its endpoint answers 410 from now on. Returns whether there was one.
    func unsubscribe(deviceID: String, bundleID: String, channel: String, atMilliseconds now: Int64, limit: Int) async throws -> Bool {
        let tokens = try await store.tokens(TokenFilter(deviceID: deviceID, activeOnly: true), after: nil, limit: limit)
        var found = false
        for registration in tokens {
            let scope = TokenScope(stored: registration.bundleID)
            guard scope.bundleID == bundleID, case .webPush(let id, _) = scope.kind, id == channel else { continue }
            _ = try await store.unregisterToken(registration.token, atMilliseconds: now)
            forget(registration.token)
            found = true
        }
        return found
    }
}

/// VAPID checks with a memory: a token verified once (signature, `aud`, `exp`, `sub`) is not
/// verified again until it expires, as the APNs port keeps a provider token it verified. An
/// application server that reuses its token (as RFC 8292 §2 allows, for up to 24 h) then costs
/// a table look-up per push instead of an ECDSA verification. The subscription's key is
/// checked on every push.
final class VAPIDVerifier: Sendable {
    private struct Verified {
        var publicKey: [UInt8]
        var audience: String
        var expiresAt: Int64
    }

    private let verified = Locked([String: Verified]())
    /// Tokens remembered at most (the table starts again when full).
    static let maximumCached = 10_000

    func verify(
        authorization: String?, cryptoKey: String?, audience: String, nowSeconds: Int64, subscriptionKey: [UInt8]?
    ) throws(VAPIDAuthorization.Failure) {
        let cacheKey = cryptoKey.map { (authorization ?? "") + "\n" + $0 } ?? authorization ?? ""
        if let hit = verified.withLock({ $0[cacheKey] }), hit.audience == audience, hit.expiresAt > nowSeconds {
            if let subscriptionKey, subscriptionKey != hit.publicKey { throw .wrongKey }
            return
        }
        let vapid = try VAPIDAuthorization(authorization: authorization, cryptoKey: cryptoKey)
        try vapid.verify(audience: audience, nowSeconds: nowSeconds, subscriptionKey: subscriptionKey)
        guard let expiresAt = vapid.token.claims["exp"].flatMap(ES256JWT.seconds) else { return }
        let entry = Verified(publicKey: vapid.publicKey, audience: audience, expiresAt: expiresAt)
        verified.withLock { table in
            if table.count >= Self.maximumCached { table.removeAll(keepingCapacity: true) }
            table[cacheKey] = entry
        }
    }
}
