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
