import NIOCore

/// How often the gateway pings a device's quiet connection, and when it drops a silent one
/// (docs/device-protocol.md, "Keep-alive"; the trade in docs/cluster.md).
///
/// A fleet's idle cost is its keepalive: every ping is a timer, a TLS record written and a pong
/// read. At 30 s a node spent 4–5 % of a core per 10,000 idle devices (docs/benchmarks.md, issue
/// 33); mobile push pings every half hour or so (Android's heartbeat, Firefox's
/// `dom.push.pingInterval`), and so does Herald by default: every 25 minutes. A device whose
/// network drops idle connections sooner learns it (``KeepaliveLearner`` on the device) and asks
/// for a shorter interval in its hello; the gateway grants it down to `minimum`. The same interval
/// bounds how long a device takes to notice a node that froze (twice it, and two seconds), so an
/// operator who needs that sooner sets a shorter `interval`, and pays for it in pings.
///
/// A connection is dropped when nothing was heard from it for `idleTimeout` scaled to its own
/// interval (`idleTimeout × granted ÷ interval`): with the defaults, a little over twice the
/// interval, so one lost pong is not enough.
public struct DeviceKeepalive: Sendable, Hashable {
    public static let defaultIntervalSeconds: Int64 = 1_500
    public static let defaultMinimumSeconds: Int64 = 15
    public static let defaultIdleTimeoutSeconds: Int64 = 2 * defaultIntervalSeconds + 60

    /// The longest ping interval, and that of devices that ask for none.
    var interval: TimeAmount
    /// The shortest a device may ask for (taken as `interval` when longer).
    var minimum: TimeAmount
    /// Silence after which a connection at `interval` is dropped.
    var idleTimeout: TimeAmount

    /// One connection's keepalive: how often it is pinged when quiet, and the silence that drops it.
    struct Grant: Sendable, Hashable {
        var pingInterval: TimeAmount
        var idleTimeout: TimeAmount
        var pingIntervalSeconds: Int { Int(pingInterval.nanoseconds / 1_000_000_000) }
    }

    /// What a device that asked for `requestedSeconds` (`nil`: nothing) gets.
    func grant(requestedSeconds: Int?) -> Grant {
        guard let requestedSeconds else { return Grant(pingInterval: interval, idleTimeout: idleTimeout) }
        let floor = min(minimum, interval)
        let ping = min(max(TimeAmount.seconds(Int64(requestedSeconds)), floor), interval)
        // idleTimeout × ping ÷ interval in milliseconds, at full width: never more than
        // idleTimeout, since ping ≤ interval.
        let idle = max(0, idleTimeout.nanoseconds / 1_000_000), every = max(1, interval.nanoseconds / 1_000_000)
        let scaled = every.dividingFullWidth(idle.multipliedFullWidth(by: ping.nanoseconds / 1_000_000)).quotient
        return Grant(pingInterval: ping, idleTimeout: .milliseconds(scaled))
    }
}
