import HeraldCore
import HeraldStore
import Logging
import NIOCore

/// What every request and browser session on the Web Push port shares: the same core as the
/// device port (``SessionCore``: the store, the registry of connected sessions, the recorder, the
/// live feed, the cluster), the intake the APNs port also takes pushes into, and the port's own
/// settings.
struct WebPushPort: SessionPort {
    var core: SessionCore
    var intake: NotificationIntake
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
    var connectionsPerAddress: ConnectionsPerAddress

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
