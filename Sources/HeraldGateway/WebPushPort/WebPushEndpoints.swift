import HeraldCore
import HeraldStore
import Logging
import NIOCore

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
