import HeraldCore

/// What a device learns about its network's keep-alive: the longest ping interval its idle
/// connections to the gateway survive (docs/device-protocol.md, "Keep-alive").
///
/// A fleet's idle cost is its keepalive, so the gateway pings rarely by default (every 25
/// minutes, as mobile push services do). Some networks drop an idle mapping sooner — a carrier's
/// NAT after a few minutes — and then neither end hears of it: the gateway's next ping goes
/// nowhere and the device's connection simply falls silent. The device notices that silence by
/// itself (nothing at all for twice the ping interval and two seconds) and learns from it, as
/// Android's heartbeat and Firefox's push client do:
///
/// - a connection that went **silent** after its welcome halves the interval the next hello asks
///   for (`keepalive`), down to ``minimumSeconds``;
/// - a connection that lived ``intervalsBeforeLonger`` of its intervals and ended some other way
///   (the gateway stopping, the device going offline) doubles it again, up to the gateway's own,
///   when the device asks for that ("keepalive" left out).
///
/// A frozen gateway node also looks like silence; it costs one halving, which the next long-lived
/// connection undoes. What the gateway grants is what counts: its `welcome` says the interval,
/// clamped to its bounds. Pure: the connection tells it what happened, at no clock of its own.
public struct KeepaliveLearner: Sendable, Hashable {
    /// The shortest interval a device asks for (the gateway has its own floor too).
    public static let minimumSeconds = 15
    /// How many of its intervals a connection must last before the next asks for a longer one.
    public static let intervalsBeforeLonger = 8

    /// What the next hello asks for; `nil`: the gateway's own interval.
    public private(set) var requestedSeconds: Int?
    /// The interval of the connection under way, as its welcome said.
    public private(set) var grantedSeconds: Int?
    /// The gateway's own interval, as a welcome said when the device asked for none or more.
    public private(set) var gatewaySeconds: Int?

    public init(requestedSeconds: Int? = nil) {
        self.requestedSeconds = requestedSeconds.map { max(Self.minimumSeconds, $0) }
    }

    /// A welcome granted `pingIntervalSeconds` (an interval outside the protocol's range is
    /// ignored: the connection keeps what it had).
    public mutating func welcomed(pingIntervalSeconds: Int) {
        guard DeviceProtocol.keepaliveSeconds.contains(pingIntervalSeconds) else { return }
        grantedSeconds = pingIntervalSeconds
        if requestedSeconds.map({ pingIntervalSeconds < $0 }) ?? true { gatewaySeconds = pingIntervalSeconds }
    }

    /// The connection ended. `silent`: it was closed because nothing arrived for its silence
    /// bound after the welcome; `livedSeconds`: from its welcome to its end.
    public mutating func ended(silent: Bool, livedSeconds: Int64) {
        guard let granted = grantedSeconds else { return }
        grantedSeconds = nil
        if silent {
            requestedSeconds = max(Self.minimumSeconds, granted / 2)
            return
        }
        guard let requested = requestedSeconds, livedSeconds >= Int64(Self.intervalsBeforeLonger) * Int64(granted) else { return }
        let longer = max(requested, granted) * 2
        if let gateway = gatewaySeconds, longer >= gateway {
            requestedSeconds = nil
        } else {
            requestedSeconds = min(longer, DeviceProtocol.keepaliveSeconds.upperBound)
        }
    }
}
