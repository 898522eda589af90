import HeraldCore
import HeraldStore
import Logging

/// What every long-lived session shares, whichever port it came in on (a Herald device's on the
/// device port, a browser's on the Web Push port): the core's parts a session delivers through.
/// Each port adds its own settings beside it and reads these through it (`port.store`).
struct SessionCore: Sendable {
    var environment: PushEnvironment
    var clock: any WallClock
    var store: any GatewayStore
    /// The connected sessions, by device id: where a push for a device finds its session.
    var registry: DeviceRegistry
    /// Sends and acks, written to the store in batches.
    var recorder: DeliveryRecorder
    var metrics: GatewayMetrics
    var logger: Logger
    /// Deadlines and bounds on connections.
    var limits: GatewayLimits
    /// Sends and acks, for watchers of the live feed.
    var feed: DeliveryFeed
    /// This node's part in a cluster; `nil` for a single gateway.
    var cluster: ClusterNode?
}

/// A port's settings beside the ``SessionCore`` it shares: the core's parts read as the port's own.
@dynamicMemberLookup
protocol SessionPort: Sendable {
    var core: SessionCore { get }
}

extension SessionPort {
    subscript<Value>(dynamicMember part: KeyPath<SessionCore, Value>) -> Value { core[keyPath: part] }
}

extension SessionCore {
    /// A delivery was sent to its session after waiting `waited` ms held for it (``DeviceSession/waited(_:nowMilliseconds:)``):
    /// past ``GatewayLimits/lateOfferBound``, the gateway's invariant is broken, and it says so.
    func offered(_ delivery: Delivery, waited: Int64?) {
        guard let waited, waited > limits.lateOfferBound.nanoseconds / 1_000_000 else { return }
        metrics.recordLateOffer(waitedMilliseconds: waited)
        logger.warning("an alert held for a device connected here was offered late", metadata: [
            "apns_id": "\(delivery.notification.id)", "device": "\(delivery.deviceID)", "waited_ms": "\(waited)",
            "bound_ms": "\(limits.lateOfferBound.nanoseconds / 1_000_000)",
        ])
    }
}

